#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: long
# A member whose key was stolen (build/tools/hostile speaks for node-m)
# may speak only for its own overlay address. Two ways it could do more
# through discovery (overlay/disco/disco_msg.h), each checked here:
#
#  1. Reflection: it names third-party addresses (the "sink", which never
#     answers) as other members' candidates, in ENDPOINTS records and
#     PUNCH messages, and the victims aim handshakes and probes at them.
#     Amplification = UDP payload bytes that reached the sink from the
#     victims / UDP payload bytes node-m sent (handshakes included), from
#     node-m's first packet to the end of each attack in turn (a member's
#     credit is what it sent, so a member that sent much before may spend
#     it at once: each attack's own ratio is printed too). Each attack has
#     sink addresses of its own, and the sink's counters are read once, at
#     the end, so that what the victims kept sending after an attack (punch
#     rounds, handshake retries) is counted too. Fails above
#     HOSTILE_MAX_AMP (2.00). The attacks (HOSTILE_ATTACKS):
#       punch-down             PUNCH about node-d (down), 16 sink candidates
#       endpoints-down         ENDPOINTS record about node-e (down): an
#                              observed sink (another each time) and 8
#                              local ones, no DIRECT flag
#       endpoints-direct-down  the same about node-f, with DIRECT
#       punch-live             PUNCH about each live member, 16 sinks
#       endpoints-live         ENDPOINTS records about each live member
#                              (sinks as observed and local candidates)
#       self-locals            node-m says its own local addresses are 8
#                              sinks (another 8 every 10 s), to node-a
#                              only; node-a passes them on (PUNCH when it
#                              introduces node-m, its ENDPOINTS records) to
#                              b and c, who punch to them (node-m never
#                              answers them), and punches them itself once
#                              node-m has gone
#       spoof-endpoints        node-m's ENDPOINTS (a new local address of
#                              its own each round, which makes the victims
#                              introduce it) sent from the attack's first
#                              sink address (a raw socket: a forged UDP
#                              source) to a, b and c
#       spoof-ping             a PING with the probe flag from the same
#                              forged source (a, b and c reach node-m
#                              directly: the relayed case, where a probe
#                              went back too, is test_engine's)
#     For the spoof-* attacks the sink's counters hold everything the
#     victims sent the forged source, and each attack's own ratio is held
#     to HOSTILE_MAX_AMP as well.
#  2. Relay hijack: node-a and node-b cannot reach each other (nftables
#     drop between their underlay addresses); node-c reaches both. node-m
#     says to each that it reaches the others directly (ENDPOINTS records
#     with DIRECT, PUNCH), answers its own pings and drops every RELAY.
#     node-m is up first and node-a and node-b come up while it lies. For
#     HOSTILE_HIJACK_S seconds, about every second, `ddpnet status --json`
#     on a and b: the path to the other must never be via node-m, every
#     status must answer, and the last sample must be via node-c; then
#     a <-> b answers ping over ddp0 (through node-c) while node-m still
#     lies. This runs first; the reflection attacks follow.
#  3. Impersonation (inner source): node-m, on its own authentic sessions
#     with node-a and node-b, sends UDP datagrams whose inner source is
#     node-c's overlay address (HOSTILE_IMPERSONATE_S seconds, a pair a
#     round): neither delivers one (a listener on each counts what its
#     ddp0 delivers, by source), and each counts every one it got as a
#     drop (ddpnet_packets_dropped_total{reason="bad_source"} of its
#     metrics). The control: node-m's datagrams from its own address, sent
#     beside them, are delivered. WireGuard's cryptokey routing: a member
#     speaks for its own address only.
# At the end a <-> b, a <-> c and b <-> c answer ping. All figures are
# printed before the verdict.
#
#              namespace "hub": bridge br0, 192.168.241.0/24
#   +-------------+-------------+-------------+---------------------+
#   |             |             |             |                     |
# node-a .1    node-b .2     node-c .3     node-m .9            sink .200-.215
# 10.77.0.1    10.77.0.2     10.77.0.3     10.77.0.9            (2 addresses per
# ddpnet       ddpnet        ddpnet        build/tools/hostile   attack, ports
#   \_ nft drop _/                         (node-m's key)        40001-40008; drops
#   (a <-> b underlay)                                           and counts all)
# node-d 10.77.0.4, node-e 10.77.0.5, node-f 10.77.0.6: in the cluster
# file, without endpoint, never started.
#
# Environment: HOSTILE_ATTACKS (all of the above, in that order),
# HOSTILE_ATTACK_S (15 s each), HOSTILE_TAIL_S (25 s after the last),
# HOSTILE_INTERVAL_MS (500: between node-m's rounds of lies),
# HOSTILE_HIJACK_S (25), HOSTILE_IMPERSONATE_S (5), HOSTILE_MAX_AMP
# (2.00), HOSTILE (the harness,
# build/tools/hostile), HOSTILE_CONTROL=1 (a control run: node-m tells no
# lie, in every phase -- the test must then pass, on any engine), and
# lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init hostile_member ping nft awk

HOSTILE=${HOSTILE:-$E2E_ROOT/build/tools/hostile}
HOSTILE_ATTACKS=${HOSTILE_ATTACKS:-punch-down endpoints-down endpoints-direct-down punch-live endpoints-live self-locals spoof-endpoints spoof-ping}
HOSTILE_ATTACK_S=${HOSTILE_ATTACK_S:-15}
HOSTILE_TAIL_S=${HOSTILE_TAIL_S:-25}
HOSTILE_INTERVAL_MS=${HOSTILE_INTERVAL_MS:-500}
HOSTILE_HIJACK_S=${HOSTILE_HIJACK_S:-25}
HOSTILE_IMPERSONATE_S=${HOSTILE_IMPERSONATE_S:-5}
HOSTILE_MAX_AMP=${HOSTILE_MAX_AMP:-2.00}
HOSTILE_CONTROL=${HOSTILE_CONTROL:-0}
[ -x "$HOSTILE" ] || skip "$HOSTILE not built (make build/tools/hostile)"

P=$E2E_PORT
LIVE=(node-a node-b node-c)
DOWN=(node-d node-e node-f)
declare -A ADDR=([node-a]=10.77.0.1 [node-b]=10.77.0.2 [node-c]=10.77.0.3 [node-m]=10.77.0.9
                 [node-d]=10.77.0.4 [node-e]=10.77.0.5 [node-f]=10.77.0.6)
declare -A UNDER=([node-a]=$E2E_V4NET.1 [node-b]=$E2E_V4NET.2 [node-c]=$E2E_V4NET.3
                  [node-m]=$E2E_V4NET.9)
# Short names for the sink's counters.
declare -A SHORT=([node-a]=a [node-b]=b [node-c]=c)
ALL_ATTACKS=(punch-down endpoints-down endpoints-direct-down punch-live endpoints-live self-locals
             spoof-endpoints spoof-ping)
SINK_PORTS=(40001 40002 40003 40004 40005 40006 40007 40008)
BAD=""
bad() { say "NOT OK: $*"; BAD="${BAD:+$BAD; }$*"; }

# sink_addrs K: the two sink addresses of the K-th attack.
sink_addrs() { echo "$E2E_V4NET.$((200 + 2 * $1)) $E2E_V4NET.$((201 + 2 * $1))"; }

step "namespaces: a, b, c, node-m (the harness), the sink; the cluster (d, e, f never up)"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
e2e_node node-c 3 -
e2e_node node-m 9 -
e2e_node sink 200 -
for k in "${!ALL_ATTACKS[@]}"; do
    for a in $(sink_addrs "$k"); do
        [ "$a" = "$E2E_V4NET.200" ] || ip -n "${E2E_PFX}sink" addr add "$a/24" dev eth0
    done
done
for n in "${LIVE[@]}" node-m "${DOWN[@]}"; do e2e_key "$n"; done
MPORT=9586     # metrics on: their drop counters are read (impersonation)
cluster_begin "$T/cluster.conf" "metrics = overlay:$MPORT"
for n in "${LIVE[@]}" node-m; do
    cluster_node "$T/cluster.conf" "$n" "$(pub "$n")" "${ADDR[$n]}" "${UNDER[$n]}:$P"
done
for n in "${DOWN[@]}"; do cluster_node "$T/cluster.conf" "$n" "$(pub "$n")" "${ADDR[$n]}"; done
out=$("$DDPNET" check -c "$T/cluster.conf" 2>&1) || fail "ddpnet check: $out"

step "the sink: drops everything, counts what each victim sends to each attack's addresses"
{
    echo "table inet sink {"
    for k in "${!ALL_ATTACKS[@]}"; do
        for n in "${LIVE[@]}"; do echo "    counter v${k}_${SHORT[$n]} { }"; done
    done
    echo "    counter other { }"
    echo "    chain input {"
    echo "        type filter hook input priority filter; policy drop;"
    for k in "${!ALL_ATTACKS[@]}"; do
        read -r s1 s2 <<<"$(sink_addrs "$k")"
        for n in "${LIVE[@]}"; do
            echo "        ip saddr ${UNDER[$n]} ip daddr { $s1, $s2 } meta l4proto udp counter name v${k}_${SHORT[$n]} drop"
        done
    done
    echo "        counter name other drop"
    echo "    }"
    echo "    chain output {"
    echo "        type filter hook output priority filter; policy drop;"
    echo "    }"
    echo "}"
} >"$T/sink.nft"
ip netns exec "${E2E_PFX}sink" nft -f "$T/sink.nft" || fail "sink: nftables rules refused: $(cat "$T/sink.nft")"

# sink_read: SINK[vK_x] = "PACKETS BYTES" for every counter.
declare -A SINK=()
sink_read() {
    local name pk by out
    out=$(ip netns exec "${E2E_PFX}sink" nft -j list counters table inet sink) ||
        fail "sink: cannot read its counters"
    while read -r name pk by; do SINK[$name]="$pk $by"; done < <(
        "$PY" -c 'import json,sys
for o in json.load(sys.stdin)["nftables"]:
    c = o.get("counter")
    if c: print(c["name"], c["packets"], c["bytes"])' <<<"$out")
    [ -n "${SINK[v0_a]:-}" ] || fail "sink: no counter v0_a in: $out"
}
# sink_payload NAME: UDP payload bytes counted by NAME since BASE[NAME]
# (the counters count IP packets: minus 20 + 8 bytes of headers each).
declare -A BASE=()
sink_payload() {
    local now=${SINK[$1]} base=${BASE[$1]:-0 0}
    echo $(( (${now#* } - ${base#* }) - 28 * (${now% *} - ${base% *}) ))
}

# The counters themselves: 3 datagrams of 100 bytes from node-c to each
# attack's first address must count as 300 payload bytes there, and the
# sink must not answer a ping.
sink_read
for k in "${!ALL_ATTACKS[@]}"; do BASE[v${k}_c]=${SINK[v${k}_c]}; done
for k in "${!ALL_ATTACKS[@]}"; do
    read -r s1 _ <<<"$(sink_addrs "$k")"
    nx node-c "$PY" -c 'import socket,sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(3): s.sendto(b"x" * 100, (sys.argv[1], int(sys.argv[2])))' "$s1" "${SINK_PORTS[0]}" ||
        fail "node-c: cannot send to the sink at $s1"
done
sleep 0.5
sink_read
for k in "${!ALL_ATTACKS[@]}"; do
    got=$(sink_payload "v${k}_c")
    [ "$got" -eq 300 ] || fail "sink: counter v${k}_c counted $got payload bytes of node-c's 300 (${SINK[v${k}_c]})"
done
ping_fails node-c "$E2E_V4NET.200" 2
say "ok: the sink counts UDP payload bytes per attack and victim, and answers nothing"

step "node-a and node-b cannot reach each other (nftables, both ways)"
for pair in "node-a node-b" "node-b node-a"; do
    set -- $pair
    ip netns exec "$E2E_PFX$1" nft -f - <<EOF || fail "$1: blocking rules refused"
table inet blk {
    chain input {
        type filter hook input priority filter; policy accept;
        ip saddr ${UNDER[$2]} counter drop
    }
    chain output {
        type filter hook output priority filter; policy accept;
        ip daddr ${UNDER[$2]} counter drop
    }
}
EOF
    out=$(ip netns exec "$E2E_PFX$1" nft list table inet blk) || fail "$1: no table inet blk"
    case "$out" in *"ip saddr ${UNDER[$2]} counter"*"ip daddr ${UNDER[$2]} counter"*) ;;
        *) fail "$1: blocking rules not installed: $out" ;; esac
done
ping_fails node-a "${UNDER[node-b]}" 2
ping_fails node-b "${UNDER[node-a]}" 2
ping_ok node-a "${UNDER[node-c]}"
ping_ok node-b "${UNDER[node-c]}"
say "ok: a and b reach c, not each other"

# What node-m sends over UDP (its port, and the spoof-* attacks' raw socket),
# counted by the kernel, to hold the harness's own count to (sent_bytes:
# UDP payload bytes).
ip netns exec "${E2E_PFX}node-m" nft -f - <<EOF || fail "node-m: counter rules refused"
table inet mcount {
    counter tx { }
    chain output {
        type filter hook output priority raw; policy accept;
        meta l4proto udp counter name tx
    }
}
EOF
# m_sent: "PACKETS BYTES" node-m's port sent so far (IP packets).
m_sent() {
    ip netns exec "${E2E_PFX}node-m" nft list counter inet mcount tx |
        sed -n 's/.*packets \([0-9]*\) bytes \([0-9]*\).*/\1 \2/p'
}
[ -n "$(m_sent)" ] || fail "node-m: no counter inet mcount tx"

# --- the harness -------------------------------------------------------------

victim() { echo "$1,$(pub "$1"),${ADDR[$1]},${UNDER[$1]}:$P"; }
SINKS_OF=()
for k in "${!ALL_ATTACKS[@]}"; do
    s=""
    for a in $(sink_addrs "$k"); do
        for port in "${SINK_PORTS[@]}"; do s="$s --sink $a:$port"; done
    done
    SINKS_OF[k]=$s
done

# hostile_start TAG SECONDS MODE ARGS...: the harness in node-m, in the background.
hostile_start() {
    local tag=$1 secs=$2 mode=$3; shift 2
    [ "$HOSTILE_CONTROL" != 1 ] || mode=quiet
    HOSTILE_M0=$(m_sent)
    nx_bg node-m "hostile-$tag" "$HOSTILE" "$mode" "$secs" "$T/node-m/key" "${ADDR[node-m]}" \
        "${UNDER[node-m]}:$P" --interval "$HOSTILE_INTERVAL_MS" "${@:2}"
    HOSTILE_BG=$BG_PID
}
HOSTILE_M0=""
# hostile_end TAG: waits for it; HLINE is its summary line.
hostile_end() {
    local after pk by mine silent
    wait "$HOSTILE_BG" || fail "hostile ($1) failed: $(cat "$T/node-m/hostile-$1.out")"
    HLINE=$(grep '^hostile: mode=' "$T/node-m/hostile-$1.out") ||
        fail "hostile ($1) printed no summary: $(cat "$T/node-m/hostile-$1.out")"
    after=$(m_sent)
    pk=$(( ${after% *} - ${HOSTILE_M0% *} )) by=$(( ${after#* } - ${HOSTILE_M0#* } ))
    mine=$(hfield sent_bytes)
    [ "$mine" -eq $(( by - 28 * pk )) ] ||
        fail "hostile ($1) says it sent $mine bytes; node-m's port sent $pk packets, $((by - 28 * pk)) payload bytes"
    silent=$(grep '^hostile: victim' "$T/node-m/hostile-$1.out" | grep ' rx=0 ' || true)
    [ -z "$silent" ] || fail "hostile ($1): a victim never talked to it, so its lies were not heard: $silent"
}
hfield() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$HLINE"; }
# The harness's process in node-m (ours: started by hostile_start).
hostile_pid() {
    local pid
    for pid in $(ip netns pids "${E2E_PFX}node-m"); do
        [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = hostile ] && echo "$pid"
    done
    return 0
}

# --- 2. relay hijack (first: a and b come up while node-m lies) ----------------

[ "$HOSTILE_CONTROL" != 1 ] || say "control run: node-m tells no lie (HOSTILE_CONTROL=1)"
step "relay hijack: node-m claims to reach a, b and c directly and drops what it should relay"
ddp_up node-c
hostile_start hijack $((HOSTILE_HIJACK_S + 60)) hijack \
    "$(victim node-a)" "$(victim node-b)" "$(victim node-c)"
sleep 1
ddp_up node-a
ddp_up node-b
declare -A SEEN=() LAST=()
via_m=0 samples=0 status_failed=0
t_end=$(( $(date +%s) + HOSTILE_HIJACK_S ))
while [ "$(date +%s)" -lt "$t_end" ]; do
    for pair in "node-a node-b" "node-b node-a"; do
        set -- $pair
        via=-
        if got=$(e2e_peer_path "$1" "$2"); then
            read -r path via _ <<<"$got"
            what=$path
            [ "$via" = - ] || what="$path via $via"
        else
            what="(status failed)"
            status_failed=$((status_failed + 1))
        fi
        LAST[$1]=$what
        SEEN["$1 -> $2: $what"]=$(( ${SEEN["$1 -> $2: $what"]:-0} + 1 ))
        [ "$via" != node-m ] || via_m=$((via_m + 1))
    done
    samples=$((samples + 1))
    sleep 0.7
done
for k in "${!SEEN[@]}"; do say "seen $k: ${SEEN[$k]} of $samples samples"; done | sort
HIJACK_PATHS=$(for k in "${!SEEN[@]}"; do echo "$k (${SEEN[$k]}/$samples)"; done | sort | paste -sd '|' - | sed 's/|/; /g')
hijack_ping=""
for pair in "node-a node-b" "node-b node-a"; do
    set -- $pair
    if ! out=$(nx "$1" ping -n -c 3 -i 0.3 -w 8 "${ADDR[$2]}" 2>&1); then
        why="$1 -> $2: no ping over ddp0 while node-m lies ($(grep 'packets transmitted' <<<"$out" || echo "$out"))"
        hijack_ping="${hijack_ping:+$hijack_ping; }$why"
        bad "$why"
    fi
done
[ -n "$hijack_ping" ] || { hijack_ping="a <-> b answered ping"; say "ok: $hijack_ping over ddp0"; }
pid=$(hostile_pid)
[ -z "$pid" ] || kill -TERM $pid
hostile_end hijack
HIJACK_BYTES=$(hfield sent_bytes)
say "$HLINE"
grep '^hostile: victim' "$T/node-m/hostile-hijack.out" | while read -r l; do say "$l"; done
[ "$(hfield sessions)" = 3 ] ||
    fail "hostile (hijack) had no session with every victim, so it lied to no one: $HLINE"
HIJACK_DROPPED=$(hfield relays_dropped)
if [ "$via_m" -gt 0 ]; then
    bad "relay hijack: a <-> b went via node-m in $via_m of $((2 * samples)) samples (node-m dropped $HIJACK_DROPPED RELAYs)"
fi
# A sample whose status failed says nothing of the path: none may fail.
# And not via node-m is not enough: by the window's end the path is via
# the honest relay (before, a and b may still think the listed direct
# endpoints work).
[ "$status_failed" -eq 0 ] ||
    bad "relay hijack: ddpnet status failed in $status_failed of $((2 * samples)) samples"
for n in node-a node-b; do
    [ "$HOSTILE_CONTROL" = 1 ] || [ "${LAST[$n]:-}" = "relay via node-c" ] ||
        bad "relay hijack: at the window's end $n's path to the other is '${LAST[$n]:-none seen}', not relay via node-c"
done
for pair in "node-a node-b" "node-b node-a"; do
    set -- $pair
    got=$(e2e_peer_path "$1" "$2") || got="?"
    say "after the hijack window: $1 -> $2: $got (path via rtt_ms endpoint)"
done

# --- 1. reflection ------------------------------------------------------------

step "reflection: $HOSTILE_ATTACKS (${HOSTILE_ATTACK_S} s each, then ${HOSTILE_TAIL_S} s more)"
sink_read
for k in "${!ALL_ATTACKS[@]}"; do
    for n in "${LIVE[@]}"; do BASE[v${k}_${SHORT[$n]}]=${SINK[v${k}_${SHORT[$n]}]}; done
done
declare -A MEMBER_BYTES=()
ran=()
for name in $HOSTILE_ATTACKS; do
    k=""
    for i in "${!ALL_ATTACKS[@]}"; do [ "${ALL_ATTACKS[i]}" != "$name" ] || k=$i; done
    [ -n "$k" ] || fail "HOSTILE_ATTACKS: unknown attack '$name' (known: ${ALL_ATTACKS[*]})"
    victims=("$(victim node-a)" "$(victim node-b)" "$(victim node-c)")
    read -ra sinks <<<"${SINKS_OF[k]}"
    case "$name" in
    punch-down)            args=(punch --about "$(pub node-d)" "${sinks[@]}") ;;
    endpoints-down)        args=(endpoints --about "$(pub node-e)" "${sinks[@]}") ;;
    endpoints-direct-down) args=(endpoints-direct --about "$(pub node-f)" "${sinks[@]}") ;;
    punch-live)            args=(punch --about-victims "${sinks[@]}") ;;
    endpoints-live)        args=(endpoints --about-victims "${sinks[@]}") ;;
    self-locals)           args=(self "${sinks[@]}"); victims=("$(victim node-a)") ;;
    spoof-*)               read -r s1 _ <<<"$(sink_addrs "$k")"
                           args=("$name" --spoof "$s1:${SINK_PORTS[0]}") ;;
    esac
    say "attack $name: sinks $(sink_addrs "$k" | tr ' ' ','), ports ${SINK_PORTS[0]}-${SINK_PORTS[7]}"
    hostile_start "$name" "$HOSTILE_ATTACK_S" "${args[@]}" "${victims[@]}"
    hostile_end "$name"
    say "$HLINE"
    [ "$(hfield sessions)" = "${#victims[@]}" ] ||
        fail "hostile ($name) had no session with every victim, so it lied to no one: $HLINE"
    [ "$(hfield lies)" -gt 0 ] || [ "$HOSTILE_CONTROL" = 1 ] || fail "hostile ($name) told no lie: $HLINE"
    MEMBER_BYTES[$name]=$(hfield sent_bytes)
    ran+=("$name:$k")
done
say "the victims' retries go on: ${HOSTILE_TAIL_S} s more"
sleep "$HOSTILE_TAIL_S"
# What each victim says its hints cost (status --json "hints").
for n in "${LIVE[@]}"; do
    h=$(ddp_status "$n" --json 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("hints"))' 2>/dev/null) || h="?"
    say "$n: hints: $h"
done

step "after it all: a, b and c still reach each other"
final_ok=""
for pair in "node-a node-b" "node-b node-a" "node-a node-c" "node-c node-a" "node-b node-c"; do
    set -- $pair
    if ! out=$(nx "$1" ping -n -c 3 -i 0.3 -w 10 "${ADDR[$2]}" 2>&1); then
        bad "$1 -> $2: no ping over ddp0 at the end ($(grep 'packets transmitted' <<<"$out" || echo "$out"))"
    else
        final_ok="$final_ok $1->$2"
    fi
done
[ -z "$final_ok" ] || say "ok: ping over ddp0:$final_ok"
for pair in "node-a node-b" "node-b node-a"; do
    set -- $pair
    got=$(e2e_peer_path "$1" "$2") || got="?"
    say "at the end: $1 -> $2: $got (path via rtt_ms endpoint)"
done

# --- 3. impersonation: another member's overlay address as the inner source ---

# bad_source NODE: what NODE's metrics count as dropped for an inner
# source that is not the sender's.
bad_source() {
    nx "$1" "$PY" - "http://${ADDR[$1]}:$MPORT/metrics" <<'EOF'
import re, sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()
m = re.search(r'^ddpnet_packets_dropped_total\{[^}]*reason="bad_source"[^}]*\} (\d+)$', text, re.M)
print(m.group(1) if m else "none")
EOF
}

step "impersonation: node-m sends a and b datagrams as node-c (${ADDR[node-c]}), and as itself"
IMP_PORT=40100
declare -A SRC0=() IMP_LISTEN=()
for n in node-a node-b; do
    SRC0[$n]=$(bad_source "$n") || fail "$n: cannot read its metrics"
    [ "${SRC0[$n]}" != none ] || fail "$n: no bad_source in its metrics"
    # What ddp0 delivers to the two ports, by source, for SECS seconds
    # (the harness's time and 3 s more).
    nx_bg "$n" imp-listen "$PY" -u -c '
import select, socket, sys, time
port, end = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
socks = []
for p in (port, port + 1):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", p))
    socks.append(s)
seen = {}
print("listener: ready", flush=True)
while (left := end - time.monotonic()) > 0:
    for s in select.select(socks, [], [], left)[0]:
        _, (src, _) = s.recvfrom(2048)
        key = (s.getsockname()[1], src)
        seen[key] = seen.get(key, 0) + 1
for (p, src), k in sorted(seen.items()):
    print(f"got port={p} src={src} n={k}")
print("listener: done")' "$IMP_PORT" "$((HOSTILE_IMPERSONATE_S + 3))"
    IMP_LISTEN[$n]=$BG_PID
done
for n in node-a node-b; do
    wait_for 5 grep -q 'listener: ready' "$T/$n/imp-listen.out" ||
        fail "$n: the listener did not start: $(cat "$T/$n/imp-listen.out")"
done
hostile_start impersonate "$HOSTILE_IMPERSONATE_S" impersonate --as "${ADDR[node-c]}" \
    --port "$IMP_PORT" "$(victim node-a)" "$(victim node-b)"
hostile_end impersonate
say "$HLINE"
for n in node-a node-b; do
    wait "${IMP_LISTEN[$n]}" || fail "$n: the listener failed: $(cat "$T/$n/imp-listen.out")"
done
for n in node-a node-b; do
    hl=$(grep "^hostile: victim $n " "$T/node-m/hostile-impersonate.out") ||
        fail "hostile (impersonate) printed no line for $n"
    say "$hl"
    spoofed=$(sed -n 's/.* spoofed=\([0-9]*\).*/\1/p' <<<"$hl")
    genuine=$(sed -n 's/.* genuine=\([0-9]*\).*/\1/p' <<<"$hl")
    grep -q 'listener: done' "$T/$n/imp-listen.out" ||
        fail "$n: the listener did not report: $(cat "$T/$n/imp-listen.out")"
    got_spoofed=$(sed -n "s/^got port=$IMP_PORT src=\\(.*\\) n=\\([0-9]*\\)$/\\1:\\2/p" "$T/$n/imp-listen.out" | paste -sd, -)
    got_genuine=$(sed -n "s/^got port=$((IMP_PORT + 1)) src=${ADDR[node-m]} n=\\([0-9]*\\)$/\\1/p" "$T/$n/imp-listen.out")
    now_drops=$(bad_source "$n") || fail "$n: cannot read its metrics"
    drops=$(( now_drops - SRC0[$n] ))
    say "$n: delivered as ${ADDR[node-c]}: ${got_spoofed:-none} (of $spoofed sent); from node-m itself: ${got_genuine:-0} (of $genuine); bad_source drops: $drops"
    [ -z "$got_spoofed" ] || bad "$n delivered datagrams node-m sent as node-c: $got_spoofed"
    [ "$drops" -ge "$spoofed" ] || bad "$n counted $drops bad_source drops for $spoofed impersonated datagrams"
    if [ "$HOSTILE_CONTROL" != 1 ]; then
        [ "$spoofed" -gt 0 ] || fail "hostile (impersonate) sent $n nothing as node-c: $hl"
        [ "${got_genuine:-0}" -gt 0 ] ||
            fail "$n delivered none of node-m's own $genuine datagrams: the listener or the harness is broken, so the check above proves nothing"
    fi
done

step "figures"
# A member's credit with a victim is what it sent that victim, from its
# first packet on (capped): so the bound holds for everything it sent up
# to any moment, and the check is on those running sums -- node-m's bytes
# from the start (the hijack phase's too) against what the sink got of
# every attack so far. The attack's own ratio is shown beside it: a
# member that sent much earlier (up to the cap) may spend it in one go.
sink_read
run_sink=0 run_member=${HIJACK_BYTES:-0}
for r in "${ran[@]}"; do
    name=${r%:*} k=${r#*:}
    total=0 per=""
    for n in "${LIVE[@]}"; do
        b=$(sink_payload "v${k}_${SHORT[$n]}")
        total=$((total + b))
        per="$per ${SHORT[$n]}=$b"
    done
    mb=${MEMBER_BYTES[$name]}
    run_sink=$((run_sink + total)) run_member=$((run_member + mb))
    own=$(awk -v s="$total" -v m="$mb" 'BEGIN { printf "%.2f", (m > 0 ? s / m : 0) }')
    amp=$(awk -v s="$run_sink" -v m="$run_member" 'BEGIN { printf "%.2f", (m > 0 ? s / m : 0) }')
    say "amplification: $amp after $name (the sink got $run_sink bytes in all, node-m sent $run_member from its first packet; this attack alone: $total bytes:$per, for $mb sent: $own)"
    awk -v a="$amp" -v max="$HOSTILE_MAX_AMP" 'BEGIN { exit !(a <= max) }' ||
        bad "after $name: amplification $amp, above $HOSTILE_MAX_AMP"
    # A forged source costs its owner what node-m sent in that attack, no
    # more: no credit from before counts for it.
    case "$name" in spoof-*)
        awk -v a="$own" -v max="$HOSTILE_MAX_AMP" 'BEGIN { exit !(a <= max) }' ||
            bad "$name: amplification $own at the forged source, above $HOSTILE_MAX_AMP" ;;
    esac
done
all_sink=0 all_member=0
for r in "${ran[@]}"; do
    name=${r%:*} k=${r#*:}
    for n in "${LIVE[@]}"; do all_sink=$(( all_sink + $(sink_payload "v${k}_${SHORT[$n]}") )); done
    all_member=$(( all_member + ${MEMBER_BYTES[$name]} ))
done
say "the attacks alone (the hijack phase not counted): the sink got $all_sink bytes, node-m sent $all_member ($(awk -v s="$all_sink" -v m="$all_member" 'BEGIN { printf "%.2f", (m > 0 ? s / m : 0) }')x)"
say "sink: other traffic (not from a victim to an attack's address): ${SINK[other]} (packets bytes)"
say "relay hijack: $HIJACK_PATHS; $hijack_ping; node-m dropped $HIJACK_DROPPED RELAYs"
[ -z "$BAD" ] || fail "$BAD"
