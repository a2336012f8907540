#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Nodes whose keys the cluster does not know get nothing: no handshake
# response, no cookie reply, no overlay traffic; the cluster's own nodes go
# on talking among themselves.
#
#                     namespace "hub": bridge br0
#      +----------------+----------------+----------------+
#    p-node-a         p-node-b         p-mallory         p-eve
#      |                |                |                 |
#  192.168.241.1    192.168.241.2    192.168.241.9    192.168.241.10
#  [node-a]         [node-b]         [mallory]        [eve]
#  ddp0 10.77.0.1   ddp0 10.77.0.2   ddp0 10.77.0.9   ddp0 10.77.0.2
#
# node-a and node-b run the cluster file (a, b). mallory runs a file that
# lists a and b (real keys, endpoints) and itself. eve runs a file in which
# it claims node-b's name and overlay address with its own key. An nftables
# counter in mallory's and eve's namespaces sees every UDP datagram that
# comes back from port 51820: there must be none, while their own counters
# show that they did send handshake initiations.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init wrong_key ping nft wg

step "namespaces and keys"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
e2e_node mallory 9 -
e2e_node eve 10 -
for n in node-a node-b mallory eve; do e2e_key "$n"; done
EP_A=$E2E_V4NET.1:$E2E_PORT
EP_B=$E2E_V4NET.2:$E2E_PORT

cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$EP_A"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$EP_B"

cp "$T/cluster.conf" "$T/mallory.conf"
cluster_node "$T/mallory.conf" mallory "$(pub mallory)" 10.77.0.9 "$E2E_V4NET.9:$E2E_PORT"

cluster_begin "$T/eve.conf"
cluster_node "$T/eve.conf" node-a "$(pub node-a)" 10.77.0.1 "$EP_A"
cluster_node "$T/eve.conf" node-b "$(pub eve)" 10.77.0.2 "$E2E_V4NET.10:$E2E_PORT"

# Counters of what the outsiders send to, and get back from, the UDP port.
for n in mallory eve; do
    nx "$n" nft -f - <<NFT
table inet e2e_count {
    counter sent {
    }
    counter back {
    }
    chain out {
        type filter hook output priority 0; policy accept;
        udp dport $E2E_PORT counter name "sent"
    }
    chain in {
        type filter hook input priority 0; policy accept;
        udp sport $E2E_PORT counter name "back"
    }
}
NFT
done
# counter_packets NODE NAME: packets counted by the named counter.
counter_packets() {
    nx "$1" nft list counter inet e2e_count "$2" | sed -n 's/.*packets \([0-9]*\).*/\1/p'
}

step "up: the cluster, then the outsiders"
ddp_up node-a
ddp_up node-b
ping_ok node-a 10.77.0.2
ping_ok node-b 10.77.0.1
ddp_up mallory "$T/mallory.conf"
ddp_up eve "$T/eve.conf"

step "the outsiders' handshakes go unanswered"
# Two handshake attempts at least (retry every 5 s) toward each node.
nx mallory ping -n -q -c 100 -i 0.25 -w 11 10.77.0.1 >"$T/mallory/ping-a.out" 2>&1 &
pa=$!
nx mallory ping -n -q -c 100 -i 0.25 -w 11 10.77.0.2 >"$T/mallory/ping-b.out" 2>&1 &
pb=$!
ping_fails eve 10.77.0.1 11
rc=0; wait "$pa" || rc=$?
[ "$rc" -ne 0 ] || fail "mallory -> node-a: got echo replies: $(cat "$T/mallory/ping-a.out")"
rc=0; wait "$pb" || rc=$?
[ "$rc" -ne 0 ] || fail "mallory -> node-b: got echo replies: $(cat "$T/mallory/ping-b.out")"
for n in mallory eve; do
    sent=$(counter_packets "$n" sent) back=$(counter_packets "$n" back)
    say "$n: sent $sent datagrams to port $E2E_PORT, got $back back"
    [ "${sent:-0}" -ge 2 ] || fail "$n: sent ${sent:-0} handshake datagrams; the test needs some"
    [ "${back:-1}" -eq 0 ] || fail "$n: got $back datagrams back from the cluster's port"
    # Its daemon saw no handshake either.
    hs=$(wg_in "$n" show ddp0 latest-handshakes) || fail "$n: wg show failed"
    if printf '%s\n' "$hs" | awk '$2 != 0 { bad = 1 } END { exit !bad }'; then
        fail "$n: completed a handshake: $hs"
    fi
done

step "the cluster knows nothing of them and still works"
for n in node-a node-b; do
    peers=$(wg_in "$n" show ddp0 peers)
    [ "$(printf '%s\n' "$peers" | grep -c .)" -eq 1 ] || fail "$n: peers $peers (want one)"
    case "$peers" in *"$(pub mallory)"*|*"$(pub eve)"*) fail "$n: lists an outsider: $peers" ;; esac
    out=$(ddp_status "$n") || fail "$n: ddpnet status failed"
    case "$out" in *mallory*) fail "$n: ddpnet status shows mallory: $out" ;; esac
done
ping_ok node-a 10.77.0.2
ping_ok node-b 10.77.0.1
# The impostor's key never took node-b's place at node-a.
ep=$(wg_in node-a show ddp0 endpoints)
printf '%s\n' "$ep" | grep -qF "$(pub node-b)	$EP_B" || fail "node-a: node-b's endpoint changed: $ep"
say "outsiders got no answer; node-a and node-b unaffected"
