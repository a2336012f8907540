#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Registered nodes behind NATs find each other with `up --name` alone
# (issue 30): two nodes behind cone NAT gateways, in two VPCs that use the
# same private range, and one public node, all three joining through etcd;
# only the public one is given --endpoint. Checked:
#  1. every node pings every other by name within REG_NAT_MESH_S of the
#     last up;
#  2. each NATed node's record comes to carry the address its NAT maps it
#     to (its "observed" candidate), as the public node sees it;
#  3. a <-> b goes direct (status: path "direct"), not through c;
#  4. torchrun (c10d rendezvous at node-a by name) + a Gloo all_reduce over
#     a, b and c.
#
#                namespace "hub": bridge br0, the "internet" 100.64.0.0/16
#        +-------------------+-------------------+-------------------+
#      p-gw-a              p-gw-b             p-node-c             p-etcd
#   wan0 100.64.1.1     wan0 100.64.2.1     eth0 100.64.0.3     eth0 100.64.0.201
#   [gw-a] cone NAT     [gw-b] cone NAT     [node-c] public,    [etcd]
#   lan0 172.31.1.1/24  lan0 172.31.1.1/24   up --endpoint
#   eth0 172.31.1.10    eth0 172.31.1.10    (the same LAN address twice)
#   [node-a] up --name  [node-b] up --name
#
# Gateways and node firewalls as in nat_traversal.sh (lib.sh).
# Environment: REG_NAT_MESH_S (10), TORCH_TIMEOUT (180), and lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init registry_nat ping ss nft getent etcd etcdctl torchrun
"$PY" -c 'import torch, torch.distributed' 2>/dev/null ||
    skip "$PY cannot import torch (apt-get install python3-torch)"
REG_NAT_MESH_S=${REG_NAT_MESH_S:-10}
TORCH_TIMEOUT=${TORCH_TIMEOUT:-180}
NODES=(node-a node-b node-c)
P=$E2E_PORT
PUB_C=$E2E_INET.0.3 ETCD=$E2E_INET.0.201
PREFIX=/ddpnet/nat

step "two cone NAT gateways, a public node and etcd"
e2e_hub
e2e_router gw-a 1.1 cone
e2e_router gw-b 2.1 cone
e2e_lan_node gw-a node-a 10
e2e_lan_node gw-b node-b 10
e2e_public_node node-c 0.3
e2e_public_node etcd 0.201
for n in "${NODES[@]}"; do e2e_firewall "$n" "$P"; done
e2e_etcd_single etcd "$ETCD"

step "up --name on all three; --endpoint on the public one only"
C=$T/cluster.conf
cluster_begin "$C" "registry = etcd://$ETCD:2379$PREFIX" "registry-ttl = 5"
chmod 644 "$C"
for n in "${NODES[@]}"; do e2e_key "$n"; done
reg_up() {   # reg_up NODE [ARGS]
    local n=$1; shift
    E2E_UP+=("$n")
    nx "$n" timeout 40 "$DDPNET" up -c "$C" -k "$T/$n/key" --run-dir "$T/$n/run" \
        --hosts-file "$T/$n/hosts" --state-dir "$T/$n/state" --name "$n" "$@" >"$T/$n/up.log" 2>&1 ||
        fail "$n: up failed: $(cat "$T/$n/up.log")"
}
reg_up node-c --endpoint "$PUB_C:$P"
reg_up node-a
t0=$(date +%s%N)
reg_up node-b
e2e_mesh_time "$t0" 30 "${NODES[@]}"
[ -n "$MESH_MS" ] || fail "no full mesh within 30 s of the last up; never answered: $MESH_MISSING"
[ "$MESH_MS" -le $((REG_NAT_MESH_S * 1000)) ] ||
    fail "full mesh took $MESH_MS ms, want <= $REG_NAT_MESH_S s"
say "ok: full mesh by name in $MESH_MS ms"

step "each NATed node's record carries its NAT's mapping"
record_of() { nx etcd etcdctl --endpoints "$ETCD:2379" get --print-value-only "$PREFIX/members/$1"; }
observed_in() {   # observed_in NODE GATEWAY: its record says it is seen at GATEWAY:port
    record_of "$1" | grep -q "\"observed\":\"$2:[0-9]*\""
}
wait_for 15 observed_in node-a "$E2E_INET.1.1" || fail "node-a's record: $(record_of node-a)"
wait_for 15 observed_in node-b "$E2E_INET.2.1" || fail "node-b's record: $(record_of node-b)"
say "node-a: $(record_of node-a)"
say "node-b: $(record_of node-b)"
record_of node-c | grep -q "\"candidates\":\[\"$PUB_C:$P\"" ||
    fail "node-c's record does not give its --endpoint first: $(record_of node-c)"
! record_of node-c | grep -q '"observed"' ||
    fail "node-c's record names an observed address, though it is seen where it is: $(record_of node-c)"

step "a <-> b direct"
path_is() {   # path_is NODE PEER PATH
    local got path rest
    got=$(e2e_peer_path "$1" "$2") || return 1
    read -r path rest <<<"$got"
    [ "$path" = "$3" ]
}
for pair in "node-a node-b" "node-b node-a"; do
    set -- $pair
    wait_for 10 path_is "$1" "$2" direct ||
        fail "$1: path to $2 is '$(e2e_peer_path "$1" "$2")', want direct"
    say "ok: $1 -> $2: $(e2e_peer_path "$1" "$2") (path via rtt_ms endpoint)"
done

step "torchrun + Gloo all_reduce across a, b and c, by name"
e2e_allreduce node-a node-b node-c
