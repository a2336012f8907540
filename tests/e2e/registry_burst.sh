#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Many nodes join at once (issue 59): BURST_NODES (24) nodes whose file
# lists none start `up` together against one etcd, with the least lease
# (registry-ttl 5: a lease that runs out while etcd is busy is the case
# the join must live through). Every `up` succeeds, the addresses are
# distinct, and every node has a session with every other within
# BURST_MESH_S of the last `up`. A name already held by a live key is
# still refused at once, with its reason.
#
#              namespace "hub": bridge br0, 192.168.241.0/24
#    etcd .250   b1 .1 ... b24 .24
# Environment: BURST_NODES (24), BURST_MESH_S (30).
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init registry_burst etcd etcdctl

BURST_NODES=${BURST_NODES:-24}
BURST_MESH_S=${BURST_MESH_S:-30}
ETCD=$E2E_V4NET.250:2379

step "one etcd, $BURST_NODES nodes"
e2e_hub
e2e_node etcd 250 -
nx_bg etcd etcd timeout 300 etcd --name e1 --data-dir "$T/etcd/data" \
    --listen-client-urls "http://$ETCD" --advertise-client-urls "http://$ETCD" \
    --listen-peer-urls "http://$E2E_V4NET.250:2380" \
    --initial-advertise-peer-urls "http://$E2E_V4NET.250:2380" \
    --initial-cluster "e1=http://$E2E_V4NET.250:2380"
wait_for 30 nx etcd etcdctl --endpoints "$ETCD" endpoint health ||
    fail "etcd did not start: $(tail -n 5 "$T/etcd/etcd.out")"
C=$T/cluster.conf
cluster_begin "$C" "registry = etcd://$ETCD/ddpnet/burst" "registry-ttl = 5"
chmod 644 "$C"
NODES=()
for i in $(seq 1 "$BURST_NODES"); do
    NODES+=("b$i")
    e2e_node "b$i" "$i" -
    e2e_key "b$i"
done

step "every node up at once"
# up NODE [ARGS]: joining the registry; its output in $T/NODE/up.log.
up() {
    local n=$1; shift
    E2E_UP+=("$n")
    nx "$n" timeout 120 "$DDPNET" up -c "$C" -k "$T/$n/key" --run-dir "$T/$n/run" \
        --hosts-file "$T/$n/hosts" --state-dir "$T/$n/state" "$@" >"$T/$n/up.log" 2>&1
}
pids=()
for n in "${NODES[@]}"; do
    up "$n" &
    pids+=("$!")
done
failed=()
for i in "${!pids[@]}"; do
    wait "${pids[i]}" || failed+=("${NODES[i]}: $(cat "$T/${NODES[i]}/up.log")")
done
[ ${#failed[@]} -eq 0 ] || fail "${#failed[@]} of $BURST_NODES ups failed, e.g. ${failed[0]}"
last_up=$(date +%s.%N)
say "every up succeeded"
addrs=$(for n in "${NODES[@]}"; do
    ddp_status "$n" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["address"])'
done)
[ "$(sort -u <<<"$addrs" | wc -l)" -eq "$BURST_NODES" ] || fail "addresses not distinct: $addrs"

# full: NODE has a session with every other node.
full() {
    ddp_status "$1" --json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if sum(1 for p in d["peers"] if p["latest_handshake"]) >= int(sys.argv[1]) else 1)' \
        "$((BURST_NODES - 1))"
}
mesh() {
    local n
    for n in "${NODES[@]}"; do full "$n" || return 1; done
}
wait_for "$BURST_MESH_S" mesh || fail "no full mesh within $BURST_MESH_S s of the last up"
say "full mesh of $BURST_NODES nodes $("$PY" -c "import time; print(f'{time.time() - $last_up:.1f}')") s after the last up"

step "a name held by a live key: refused at once"
e2e_node taker 100 -
e2e_key taker
t0=$(date +%s)
if up taker --name b1; then fail "a second key joined as b1"; fi
grep -q "the name b1 is registered with another key" "$T/taker/up.log" ||
    fail "refused, but not for its name: $(cat "$T/taker/up.log")"
[ $(( $(date +%s) - t0 )) -lt 10 ] || fail "the refusal took $(( $(date +%s) - t0 )) s"
say "refused: $(head -n 1 "$T/taker/up.log")"
