#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Roaming: node-b's underlay address changes twice; as soon as node-b sends
# again, node-a learns the new endpoint from the authenticated packets and
# traffic resumes both ways.
#
#              namespace "hub": bridge br0
#            +-------------------+
#          p-node-a            p-node-b
#            |                   |
#      192.168.241.1      192.168.241.2 -> .12 -> .22
#        [node-a]            [node-b]
#      ddp0 10.77.0.1      ddp0 10.77.0.2
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init roaming ping wg
# One loop (DDPNET_SHARDS=1), whatever the cores: the default runs shards,
# and this script keeps the one-loop data path covered, where each
# message is opened inline and the endpoint learned from it at once.
export DDPNET_SHARDS=1

step "two nodes"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
for n in node-a node-b; do e2e_key "$n"; done
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$E2E_V4NET.2:$E2E_PORT"
ddp_up node-a
ddp_up node-b
ping_ok node-a 10.77.0.2
ping_ok node-b 10.77.0.1

# endpoint_is NODE ADDR:PORT: NODE's endpoint for its one peer, by
# `ddpnet status` and by `wg show`.
endpoint_is() {
    local st ep
    st=$(ddp_status "$1" 2>&1) || return 1
    case "$st" in *"$2"*) ;; *) return 1 ;; esac
    ep=$(wg_in "$1" show ddp0 endpoints 2>&1) || return 1
    case "$ep" in *"	$2") return 0 ;; esac
    return 1
}
endpoint_is node-a "$E2E_V4NET.2:$E2E_PORT" ||
    fail "node-a: endpoint of node-b is not $E2E_V4NET.2:$E2E_PORT: $(ddp_status node-a 2>&1)"

old=2
for new in 12 22; do
    step "node-b moves from $E2E_V4NET.$old to $E2E_V4NET.$new"
    # Old one first: deleting a primary address also deletes its secondaries.
    nx node-b ip addr del "$E2E_V4NET.$old/24" dev eth0
    nx node-b ip addr add "$E2E_V4NET.$new/24" dev eth0
    addrs=$(nx node-b ip -4 -o addr show dev eth0)
    case "$addrs" in *"$E2E_V4NET.$new/24"*) ;; *) fail "node-b: address did not change: $addrs" ;; esac
    # node-b speaks first: node-a has no other way to learn where it went.
    t0=$(date +%s)
    ping_ok node-b 10.77.0.1
    say "traffic resumed after $(( $(date +%s) - t0 )) s"
    ping_ok node-a 10.77.0.2
    wait_for 5 endpoint_is node-a "$E2E_V4NET.$new:$E2E_PORT" ||
        fail "node-a: endpoint of node-b is not $E2E_V4NET.$new:$E2E_PORT: $(ddp_status node-a 2>&1); $(wg_in node-a show ddp0 endpoints 2>&1)"
    say "node-a shows node-b at $E2E_V4NET.$new:$E2E_PORT"
    old=$new
done
