#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The cluster changes while it trains (issue 16): `ddpnet reload` applies
# the changed file live.
#  1. a, b and c up; iperf3 a -> b runs for RELOAD_IPERF_S seconds, with a
#     report every second;
#  2. meanwhile the file changes -- node-d added, node-c removed, node-b's
#     keepalive set -- and `ddpnet reload` runs on a and b: each prints its
#     changes (and b, whose own keepalive is not its to change, the same);
#  3. d comes up with the new file: d reaches a and b within RELOAD_JOIN_S
#     of its `up` (or, where node-c's own join at the start of this run,
#     the baseline, took more than half of that, within twice the
#     baseline);
#  4. iperf3 a -> b: no second from the reload on below half its median
#     (the reload touched nothing of a <-> b);
#  5. c can no longer reach a or b; it is gone from their hosts blocks and
#     `status`; a's status shows the new file's checksum, and c (which
#     still runs the old file) another;
#  6. a broken file is refused with FILE:LINE, a change of a's own address
#     is refused with what to run instead, and neither changes anything; a
#     reload of the unchanged file says "no changes";
#  7. SIGHUP: node-b's daemon reads its (world-readable) file itself, as
#     the unprivileged user it runs as, and applies it;
#  8. node-d rebuilt with a new key: a's reload says "changed node-d: key",
#     the old key's peer is gone and the new one starts with no handshake
#     (no session carried over), node-d with the new key is reached.
# In 2 and 8, a's peers that the reload does not replace keep their
# session: the same latest handshake before and after.
#
#                    namespace "hub": bridge br0
#      +--------------+--------------+--------------+
#    node-a .1      node-b .2      node-c .3      node-d .4     192.168.241.0/24
#    10.77.0.1      10.77.0.2      10.77.0.3      10.77.0.4     (ddp0)
#                                  (removed)      (added)
# Environment: RELOAD_IPERF_S (10), RELOAD_JOIN_S (3), and lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init reload ping iperf3 ss getent

RELOAD_IPERF_S=${RELOAD_IPERF_S:-10}
RELOAD_JOIN_S=${RELOAD_JOIN_S:-3}
declare -A ADDR=([node-a]=10.77.0.1 [node-b]=10.77.0.2 [node-c]=10.77.0.3 [node-d]=10.77.0.4)

step "namespaces, keys, the first file (a, b, c)"
e2e_hub
for i in 1 2 3 4; do
    n=node-$(printf "\\x$(printf %x $((96 + i)))")
    e2e_node "$n" "$i" -
    e2e_key "$n"
done
node_lines() {   # node_lines FILE NAME: its section, endpoint on the hub
    local i=${ADDR[$2]##*.}
    cluster_node "$1" "$2" "$(pub "$2")" "${ADDR[$2]}" "$E2E_V4NET.$i:$E2E_PORT"
}
C=$T/cluster.conf
cluster_begin "$C"
for n in node-a node-b node-c; do node_lines "$C" "$n"; done
# Each node is started with its own copy, as on real machines; reload
# re-reads the copy the node was started with.
for n in node-a node-b node-c node-d; do cp "$C" "$T/$n/cluster.conf"; done
for n in node-a node-b; do ddp_up "$n" "$T/$n/cluster.conf"; done
# The baseline for node-d's join after the reload (step 3): node-c's, in
# this run, from its up to reaching a and b.
t0=$(date +%s%N)
ddp_up node-c "$T/node-c/cluster.conf"
for n in node-a node-b; do
    wait_for 30 nx node-c ping -n -c 1 -W 1 "${ADDR[$n]}" ||
        fail "node-c does not reach $n within 30 s of its up"
done
JOIN_BASE_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
say "node-c reached a and b $JOIN_BASE_MS ms after its up began (the baseline of a join)"
for n in node-b node-c; do ping_ok node-a "${ADDR[$n]}"; done
ping_ok node-b "${ADDR[node-c]}"
sum_of() { ddp_status "$1" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cluster_sum"])'; }
old_sum=$(sum_of node-a)
[ "$old_sum" != None ] && [ "$(sum_of node-c)" = "$old_sum" ] ||
    fail "status does not show the same cluster file checksum on a and c: $old_sum, $(sum_of node-c)"
say "a and c run the cluster file $old_sum"

step "the new file: node-d added, node-c removed, node-b's keepalive 7 s"
N=$T/cluster.new
cluster_begin "$N"
node_lines "$N" node-a
node_lines "$N" node-b
printf 'persistent-keepalive = 7\n' >>"$N"
node_lines "$N" node-d

step "iperf3 a -> b for ${RELOAD_IPERF_S} s; reload on a and b in the middle"
nx_bg node-b iperf3-server timeout 60 iperf3 -s -1 -B "${ADDR[node-b]}" -p 5201
wait_for 10 e2e_listening node-b 5201 || fail "iperf3 server on node-b did not start"
IPERF_T0=$(date +%s.%N)
nx_bg node-a iperf3 timeout $((RELOAD_IPERF_S + 20)) iperf3 -c "${ADDR[node-b]}" -p 5201 \
    -t "$RELOAD_IPERF_S" -i 1 -J
IPERF_PID=$BG_PID
sleep $((RELOAD_IPERF_S / 2))
reload_on() {   # reload_on NODE: the new file in place of its copy, then reload
    cp "$N" "$T/$1/cluster.conf"
    nx "$1" timeout 20 "$DDPNET" reload --run-dir "$T/$1/run" >"$T/$1/reload.out" 2>&1 ||
        fail "$1: ddpnet reload failed: $(cat "$T/$1/reload.out")"
    say "$1: ddpnet reload printed: $(tr '\n' ';' <"$T/$1/reload.out")"
}
# a's latest handshake with b: the reload changes b's keepalive only,
# which is taken live, so it must keep b's session (no new handshake).
hs_ab() { wg_in node-a show ddp0 latest-handshakes | awk -v k="$(pub node-b)" '$1 == k { print $2 }'; }
hs_ab_before=$(hs_ab)
RELOAD_T=$(date +%s.%N)
[ -n "$hs_ab_before" ] && [ "$hs_ab_before" != 0 ] ||
    fail "node-a: no handshake with node-b before the reload: '$hs_ab_before'"
reload_on node-a
reload_on node-b
[ "$(hs_ab)" = "$hs_ab_before" ] ||
    fail "node-a: the reload made a new handshake with node-b (latest $hs_ab_before, now $(hs_ab)): its session was not kept"
for n in node-a node-b; do
    for want in "added node-d" "removed node-c" "changed node-b: keepalive"; do
        grep -qx "$want" "$T/$n/reload.out" || fail "$n: reload did not print '$want': $(cat "$T/$n/reload.out")"
    done
    [ "$(wc -l <"$T/$n/reload.out")" -eq 3 ] || fail "$n: reload printed more than its 3 changes"
done
wait "$IPERF_PID" || fail "iperf3 a -> b failed across the reload: $(tail -n 20 "$T/node-a/iperf3.out")"

# Within RELOAD_JOIN_S, or, where this run's baseline join (node-c's at
# the start) took longer than half of that, within twice the baseline: a
# node joins reloaded members as fast as it joins fresh ones.
join_s=$(( JOIN_BASE_MS * 2 > RELOAD_JOIN_S * 1000 ? (JOIN_BASE_MS * 2 + 999) / 1000 : RELOAD_JOIN_S ))
step "node-d comes up with the new file and reaches a and b within $join_s s (baseline join: $JOIN_BASE_MS ms)"
cp "$N" "$T/node-d/cluster.conf"
t0=$(date +%s%N)
ddp_up node-d "$T/node-d/cluster.conf"
for n in node-a node-b; do
    wait_for "$join_s" nx node-d ping -n -c 1 -W 1 "${ADDR[$n]}" ||
        fail "node-d does not reach $n within $join_s s of its up (node-c's join at the start: $JOIN_BASE_MS ms)"
done
say "node-d reaches a and b $(( ($(date +%s%N) - t0) / 1000000 )) ms after its up began"
ping_ok node-a node-d
ping_ok node-b node-d

# Judged: every second from the one before the reload began to the end.
# The seconds before that cannot show the reload, and the first is TCP's
# slow start (under a loaded CI machine it has tripped this check at
# 3.08 and 2.24 against a median of 4.9, two seconds before any reload).
step "iperf3 a -> b across the reload: no second from the reload on below half the median"
"$PY" - "$T/node-a/iperf3.out" "$IPERF_T0" "$RELOAD_T" <<'PYEOF' || fail "iperf3 a -> b dipped across the reload (above)"
import json, statistics, sys
d = json.load(open(sys.argv[1]))
t0, reload_t = float(sys.argv[2]), float(sys.argv[3])
iv = [(i["sum"]["start"], i["sum"]["end"], i["sum"]["bits_per_second"] / 1e9) for i in d["intervals"]]
rates = [r for _, _, r in iv]
med = statistics.median(rates[1:] if len(rates) > 1 else rates)
judged = [(s, r) for s, e, r in iv if t0 + e > reload_t - 1]
print("reload: iperf3 a -> b, Gbit/s each second: " + " ".join("%.2f" % r for r in rates) +
      " (median after the first %.2f; the reload began %.1f s in; judged from second %d)"
      % (med, reload_t - t0, int(judged[0][0]) if judged else -1))
low = [r for _, r in judged if r < med / 2]
sys.exit(1 if low or len(judged) < 3 else 0)
PYEOF

step "node-c is gone from a and b: no traffic, no name, no status row"
for n in node-a node-b; do
    ping_fails node-c "${ADDR[$n]}"
    ping_fails "$n" "${ADDR[node-c]}"
    ! grep -q 'node-c' "$T/$n/hosts" || fail "$n: node-c still in the hosts block: $(cat "$T/$n/hosts")"
    grep -q "${ADDR[node-d]} node-d" "$T/$n/hosts" || fail "$n: node-d not in the hosts block: $(cat "$T/$n/hosts")"
    ! ddp_status "$n" | grep -q 'node-c' || fail "$n: status still shows node-c: $(ddp_status "$n")"
    nx "$n" getent hosts node-d >/dev/null || fail "$n: node-d does not resolve"
done
ka=$(wg_in node-a show ddp0 persistent-keepalive | awk -v k="$(pub node-b)" '$1 == k { print $2 }')
[ "$ka" = 7 ] || fail "node-a: keepalive towards node-b is '$ka', want 7"
new_sum=$(sum_of node-a)
[ "$new_sum" != "$old_sum" ] && [ "$(sum_of node-d)" = "$new_sum" ] && [ "$(sum_of node-c)" = "$old_sum" ] ||
    fail "checksums: a $new_sum, d $(sum_of node-d), c $(sum_of node-c) (old $old_sum)"
say "a and d run $new_sum; c still runs $old_sum"

step "refused: a broken file, a change of a's own address; unchanged: no changes"
status_before=$(ddp_status node-a --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(sorted(p["name"] for p in d["peers"]), d["cluster_sum"])')
cp "$N" "$T/node-a/cluster.conf"
printf '\n[node node-e]\npublic-key = %s\nadress = 10.77.0.5\n' "$(pub node-c)" >>"$T/node-a/cluster.conf"
bad_line=$(grep -n '^adress' "$T/node-a/cluster.conf" | cut -d: -f1)
if out=$(nx node-a "$DDPNET" reload --run-dir "$T/node-a/run" 2>&1); then
    fail "reload took a broken file: $out"
fi
grep -q "cluster.conf:$bad_line: unknown key 'adress'" <<<"$out" || fail "reload of a broken file said: $out"
say "broken file: $out"
sed "s/^address = ${ADDR[node-a]}\$/address = 10.77.0.9/" "$N" >"$T/node-a/cluster.conf"
if out=$(nx node-a "$DDPNET" reload --run-dir "$T/node-a/run" 2>&1); then
    fail "reload took a change of the node's own address: $out"
fi
grep -q "changes this node's (node-a) address: run .ddpnet down. and .ddpnet up." <<<"$out" ||
    fail "reload of a new own address said: $out"
say "own address: $out"
status_after=$(ddp_status node-a --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(sorted(p["name"] for p in d["peers"]), d["cluster_sum"])')
[ "$status_after" = "$status_before" ] || fail "a refused reload changed something: $status_before -> $status_after"
cp "$N" "$T/node-a/cluster.conf"
out=$(nx node-a "$DDPNET" reload --run-dir "$T/node-a/run" 2>&1) || fail "reload of the unchanged file failed: $out"
[ "$out" = "no changes" ] || fail "reload of the unchanged file printed: $out"
ping_ok node-a node-b
ping_ok node-a node-d

step "SIGHUP: node-b's daemon re-reads its file itself, as its unprivileged user"
# The daemon runs as the user ddpnet: the file and the folders above it
# must let others read it (as /etc/ddpnet/*.conf does); the keys in $T
# stay readable by root alone.
chmod 711 "$T" "$T/node-b"
{ cat "$N"; printf 'persistent-keepalive = 11\n'; } >"$T/node-b/cluster.conf"   # node-d's section is last
chmod 644 "$T/node-b/cluster.conf"
bpid=$(sed -n 's/^pid=//p' "$T/node-b/run/ddp0.state")
kill -HUP "$bpid" || fail "cannot send SIGHUP to node-b's daemon ($bpid)"
d_keepalive() { wg_in node-b show ddp0 persistent-keepalive | awk -v k="$(pub node-d)" '$1 == k { print $2 }'; }
# Read again at each try (wait_for runs a command; "$(d_keepalive)" as its
# argument would be read once, before the first).
d_keepalive_is() { [ "$(d_keepalive)" = "$1" ]; }
wait_for 5 d_keepalive_is 11 ||
    fail "node-b: SIGHUP did not apply the changed file (keepalive towards node-d: $(d_keepalive))"
[ "$(sum_of node-b)" != "$new_sum" ] || fail "node-b: the checksum did not follow the SIGHUP"
e2e_no_daemon node-b && fail "node-b: the daemon stopped on SIGHUP"
ping_ok node-b node-a
ping_ok node-b node-d
say "node-b applied its file on SIGHUP: keepalive towards node-d 11 s, checksum $(sum_of node-b)"

step "node-d rebuilt with a new key (same name and address): a's reload replaces the peer"
# The old peer and its sessions go (a new one starts with no handshake,
# never the old session); node-d with its new key is reached; node-b,
# unchanged, keeps its session (the same latest handshake).
old_d=$(pub node-d)
hs_ab_before=$(hs_ab)
RELOAD_T=$(date +%s.%N)
ddp_down node-d
e2e_key node-d
[ "$(pub node-d)" != "$old_d" ] || fail "node-d: the new key is the old one"
R=$T/cluster.rekeyed
sed "s|^public-key = $old_d\$|public-key = $(pub node-d)|" "$N" >"$R"
grep -qxF "public-key = $(pub node-d)" "$R" || fail "node-d's key not replaced in $R: $(cat "$R")"
cp "$R" "$T/node-a/cluster.conf"
out=$(nx node-a timeout 20 "$DDPNET" reload --run-dir "$T/node-a/run" 2>&1) ||
    fail "node-a: reload with node-d's new key failed: $out"
[ "$out" = "changed node-d: key" ] || fail "node-a: reload printed '$out', want 'changed node-d: key'"
keys=$(wg_in node-a show ddp0 peers)
! grep -qxF "$old_d" <<<"$keys" || fail "node-a still has a peer with node-d's old key: $keys"
grep -qxF "$(pub node-d)" <<<"$keys" || fail "node-a has no peer with node-d's new key: $keys"
hs_d() { wg_in node-a show ddp0 latest-handshakes | awk -v k="$(pub node-d)" '$1 == k { print $2 }'; }
[ "$(hs_d)" = 0 ] ||
    fail "node-a: the new node-d has a handshake ($(hs_d)) before node-d came back: the old session was kept"
cp "$R" "$T/node-d/cluster.conf"
ddp_up node-d "$T/node-d/cluster.conf"
ping_ok node-d "${ADDR[node-a]}"
[ "$(hs_d)" -gt 0 ] || fail "node-a: no handshake with the new node-d after a ping"
[ "$(hs_ab)" = "$hs_ab_before" ] ||
    fail "node-a: node-d's new key made a new handshake with node-b (latest $hs_ab_before, now $(hs_ab))"
say "node-a: node-d's peer replaced (old key gone, new key's first handshake after node-d came back); node-b's session kept"
