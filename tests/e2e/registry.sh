#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Elastic clusters (issue 18): membership in etcd.
#  1. a three-member etcd cluster (Debian's etcd-server), each member in a
#     namespace of its own;
#  2. six nodes whose cluster file has a [cluster] section only start at
#     once with `up --name` alone (no --endpoint: each publishes its own
#     candidates, issue 30): distinct addresses, a full mesh within
#     REG_MESH_S of the last `up`;
#  3. a seventh joins: every node reaches it within REG_JOIN_S;
#  4. one leaves with `down`: gone from every node's peers and hosts block
#     within REG_LEAVE_S (it tells its peers before its lease goes); one
#     is killed (SIGKILL): gone within its lease's TTL, the grace after it
#     (the TTL again: issue 59) + REG_LEAVE_S;
#  5. a name taken by another key, and a key already registered under
#     another name, are refused at `up`;
#  6. one etcd member killed: nothing changes; all three killed: the mesh
#     still carries ping and iperf3, status says unreachable; etcd back:
#     status says synced again, and a node that joins then is seen by all;
#  7. torchrun + Gloo all_reduce across the registered nodes, by name.
#
#              namespace "hub": bridge br0, 192.168.241.0/24
#    etcd1 .201  etcd2 .202  etcd3 .203   node-1 .1 ... node-9 .9
# Environment: REG_MESH_S (5), REG_JOIN_S (3), REG_LEAVE_S (2), REG_TTL (5).
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init registry ping iperf3 ss getent etcd etcdctl torchrun

REG_MESH_S=${REG_MESH_S:-5}
REG_JOIN_S=${REG_JOIN_S:-3}
REG_LEAVE_S=${REG_LEAVE_S:-2}
REG_TTL=${REG_TTL:-5}
ETCDS="$E2E_V4NET.201:2379,$E2E_V4NET.202:2379,$E2E_V4NET.203:2379"
PREFIX=/ddpnet/e2e

step "a three-member etcd cluster"
e2e_hub
initial=""
for i in 1 2 3; do
    e2e_node "etcd$i" "20$i" -
    initial="$initial${initial:+,}e$i=http://$E2E_V4NET.20$i:2380"
done
start_etcd() {   # start_etcd I: member I (again), on its data directory
    local i=$1 a=$E2E_V4NET.20$1
    mkdir -p "$T/etcd$i/data"
    nx_bg "etcd$i" etcd timeout 900 etcd --name "e$i" --data-dir "$T/etcd$i/data" \
        --listen-client-urls "http://$a:2379" --advertise-client-urls "http://$a:2379" \
        --listen-peer-urls "http://$a:2380" --initial-advertise-peer-urls "http://$a:2380" \
        --initial-cluster "$initial" --initial-cluster-state new \
        --initial-cluster-token ddpnet-e2e
}
kill_etcd() {   # kill_etcd I: SIGKILL member I (the process itself, not its wrapper)
    local pid
    for pid in $(ip netns pids "${E2E_PFX}etcd$1"); do
        [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = etcd ] && kill -9 "$pid"
    done
    return 0
}
etcd_healthy() { nx etcd1 etcdctl --endpoints "$ETCDS" --dial-timeout 1s endpoint health >/dev/null 2>&1; }
for i in 1 2 3; do start_etcd "$i"; done
wait_for 30 etcd_healthy || fail "etcd did not become healthy: $(tail -n 5 "$T/etcd1/etcd.out")"
say "etcd: three members healthy"

step "six nodes with a [cluster] section only, started at once"
C=$T/cluster.conf
cluster_begin "$C" "registry = etcd://$ETCDS$PREFIX" "registry-ttl = $REG_TTL"
chmod 644 "$C"
for i in 1 2 3 4 5 6 7 8 9; do
    e2e_node "node-$i" "$i" -
    e2e_key "node-$i"
done
# reg_up NODE [ARGS]: `ddpnet up` joining the registry, no --endpoint:
# the node's record carries the candidates it finds itself.
reg_up() {
    local n=$1; shift
    E2E_UP+=("$n")
    nx "$n" timeout 40 "$DDPNET" up -c "$C" -k "$T/$n/key" --run-dir "$T/$n/run" \
        --hosts-file "$T/$n/hosts" --state-dir "$T/$n/state" "$@" >"$T/$n/up.log" 2>&1
}
pids=()
for i in 1 2 3 4 5 6; do
    # node-6 goes by its machine's hostname (the namespace's: node-6).
    if [ "$i" = 6 ]; then reg_up "node-$i" & else reg_up "node-$i" --name "node-$i" & fi
    pids+=("$!")
done
for i in 1 2 3 4 5 6; do
    wait "${pids[i-1]}" || fail "node-$i: up failed: $(cat "$T/node-$i/up.log")"
done
last_up=$(date +%s.%N)
addr_of() { ddp_status "$1" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["address"])'; }
declare -A ADDR
for i in 1 2 3 4 5 6; do ADDR[node-$i]=$(addr_of "node-$i"); done
[ "$(printf '%s\n' "${ADDR[@]}" | sort -u | wc -l)" = 6 ] ||
    fail "addresses are not distinct: ${ADDR[*]}"
say "addresses: $(for i in 1 2 3 4 5 6; do printf 'node-%s=%s ' "$i" "${ADDR[node-$i]}"; done)"
# mesh_ok NODE...: every NODE has a handshake with every other NODE.
mesh_ok() {
    local n
    for n in "$@"; do
        ddp_status "$n" --json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
want = set(sys.argv[1:]) - {d["self"]}
have = {p["name"] for p in d["peers"] if p["latest_handshake"]}
sys.exit(0 if want <= have else 1)' "$@" || return 1
    done
}
wait_for $((REG_MESH_S * 4)) mesh_ok node-1 node-2 node-3 node-4 node-5 node-6 ||
    fail "no full mesh: $(ddp_status node-1)"
mesh_s=$("$PY" -c "import time; print(f'{time.time() - $last_up:.2f}')")
"$PY" -c "import sys; sys.exit(0 if $mesh_s <= $REG_MESH_S else 1)" ||
    fail "full mesh took $mesh_s s after the last up (want <= $REG_MESH_S)"
say "full mesh of 6 within $mesh_s s of the last up"
ping_ok node-1 "${ADDR[node-6]}"
# The hosts block follows within a second or so (hosts_writer.h: one
# write a second at most, a registered name asked of the resolver first).
resolves_on() { nx "$1" getent hosts "$2" | grep -q "^$3 "; }
wait_for 5 resolves_on node-1 node-6 "${ADDR[node-6]}" ||
    fail "node-6 does not resolve to ${ADDR[node-6]} on node-1: $(nx node-1 getent hosts node-6)"

step "a seventh joins; every node reaches it"
reg_up node-7 --name node-7 || fail "node-7: up failed: $(cat "$T/node-7/up.log")"
t0=$(date +%s.%N)
ADDR[node-7]=$(addr_of node-7)
reach_all() {   # reach_all DEST-NODE FROM...: one echo from each, in parallel
    local dest=$1 n ps=() rc=0; shift
    for n in "$@"; do nx "$n" ping -n -c 1 -W 1 "${ADDR[$dest]}" >/dev/null 2>&1 & ps+=("$!"); done
    for n in "${ps[@]}"; do wait "$n" || rc=1; done
    return $rc
}
wait_for $((REG_JOIN_S * 4)) reach_all node-7 node-1 node-2 node-3 node-4 node-5 node-6 ||
    fail "not every node reaches node-7"
join_s=$("$PY" -c "import time; print(f'{time.time() - $t0:.2f}')")
"$PY" -c "import sys; sys.exit(0 if $join_s <= $REG_JOIN_S else 1)" ||
    fail "every node reached node-7 only $join_s s after its up (want <= $REG_JOIN_S)"
say "every node reached node-7 within $join_s s"

step "refused: a name taken by another key, a key under another name"
if reg_up node-8 --name node-1; then fail "node-8 took node-1's name"; fi
grep -q "the name node-1 is registered with another key" "$T/node-8/up.log" ||
    fail "unclear refusal: $(cat "$T/node-8/up.log")"
say "refused: $(cat "$T/node-8/up.log")"
cp "$T/node-1/key" "$T/node-8/key"
if reg_up node-8 --name other; then fail "node-1's key joined again as 'other'"; fi
grep -q "this key is registered as node-1" "$T/node-8/up.log" ||
    fail "unclear refusal: $(cat "$T/node-8/up.log")"
say "refused: $(cat "$T/node-8/up.log")"
e2e_key node-8

step "one leaves with down, one is killed"
gone_from() {   # gone_from NODE FROM...: not a peer, not in the hosts block
    local gone=$1 n; shift
    for n in "$@"; do
        ddp_status "$n" --json | "$PY" -c '
import json, sys
sys.exit(1 if any(p["name"] == sys.argv[1] for p in json.load(sys.stdin)["peers"]) else 0)' "$gone" ||
            return 1
        ! grep -q " $gone\b" "$T/$n/hosts" || return 1
    done
}
t0=$(date +%s.%N)
nx node-2 "$DDPNET" down --run-dir "$T/node-2/run" >/dev/null || fail "node-2: down failed"
wait_for 10 gone_from node-2 node-1 node-3 node-4 node-5 node-6 node-7 ||
    fail "node-2 is still a peer somewhere after its down: $(ddp_status node-1)"
leave_s=$("$PY" -c "import time; print(f'{time.time() - $t0:.2f}')")
"$PY" -c "import sys; sys.exit(0 if $leave_s <= $REG_LEAVE_S else 1)" ||
    fail "node-2 left everyone only $leave_s s after down (want <= $REG_LEAVE_S)"
say "node-2 (down) gone from every node within $leave_s s"
t0=$(date +%s.%N)
for pid in $(ip netns pids "${E2E_PFX}node-3"); do
    case "$(cat "/proc/$pid/comm" 2>/dev/null)" in ddpnet*) kill -9 "$pid" ;; esac
done
wait_for $((2 * REG_TTL + 15)) gone_from node-3 node-1 node-4 node-5 node-6 node-7 ||
    fail "node-3 (killed) is still a peer somewhere"
kill_s=$("$PY" -c "import time; print(f'{time.time() - $t0:.2f}')")
"$PY" -c "import sys; sys.exit(0 if $kill_s <= 2 * $REG_TTL + $REG_LEAVE_S else 1)" ||
    fail "node-3 (killed) left only after $kill_s s (want <= TTL $REG_TTL + grace $REG_TTL + $REG_LEAVE_S)"
say "node-3 (SIGKILL) gone from every node within $kill_s s (lease TTL $REG_TTL s, grace as long)"
ALIVE=(node-1 node-4 node-5 node-6 node-7)

step "etcd: one member killed, then all three"
kill_etcd 1
sleep 2
ping_ok node-4 "${ADDR[node-7]}"
mesh_ok "${ALIVE[@]}" || fail "the mesh changed when one etcd member died"
synced() { ddp_status "$1" --json | "$PY" -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["registry"]["state"] == "synced" else 1)'; }
wait_for 15 synced node-1 || fail "node-1 did not follow the two etcd members left: $(ddp_status node-1)"
say "one etcd member down: mesh unchanged; $(ddp_status node-1 | grep "^registry")"
kill_etcd 2; kill_etcd 3
unreachable() { ddp_status "$1" --json | "$PY" -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["registry"]["state"] == "unreachable" else 1)'; }
wait_for 30 unreachable node-1 || fail "node-1 does not say the registry is unreachable: $(ddp_status node-1)"
ping_ok node-1 "${ADDR[node-7]}"
ping_ok node-5 "${ADDR[node-4]}"
iperf_ok node-7 "${ADDR[node-7]}" node-1
mesh_ok "${ALIVE[@]}" || fail "the mesh changed without etcd"
say "etcd all down: $(ddp_status node-1 | grep '^registry')"
# Longer than a lease: every node must still be there when etcd returns.
sleep $((REG_TTL + 1))
for i in 1 2 3; do start_etcd "$i"; done
wait_for 30 etcd_healthy || fail "etcd did not come back"
for n in "${ALIVE[@]}"; do wait_for 30 synced "$n" || fail "$n did not follow etcd again"; done
reg_up node-8 --name node-8 || fail "node-8: up failed: $(cat "$T/node-8/up.log")"
ADDR[node-8]=$(addr_of node-8)
wait_for 10 reach_all node-8 "${ALIVE[@]}" || fail "not every node reaches node-8"
wait_for 10 mesh_ok "${ALIVE[@]}" node-8 || fail "the mesh did not take node-8 in"
say "etcd back: all synced, node-8 joined and is reached by all"

step "torchrun + Gloo all_reduce across the registered nodes, by name"
e2e_allreduce node-1 node-4 node-7 node-8
