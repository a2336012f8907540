#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ddp0's neighbour entry is pinned (tun/netlink.h: nl_neigh_pin). The
# kernel keeps one neighbour table for every namespace of the machine
# (net.ipv4.neigh.default.gc_thresh3, 1024 by default); when others fill
# it (a host of containers, a 128-node test bed) it evicts NOARP entries
# first, and a ddp0 whose one entry (0.0.0.0: the kernel keys a
# point-to-point link's so) is gone fails every send with "No buffer space
# available" before it reaches the daemon, until the table has room. A
# permanent entry is neither evicted nor counted. Checked: after up, the
# entry is PERMANENT, and pings cross with it. About 15 s.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init neighbour_pinned ping

step "two nodes up"
e2e_hub
e2e_node node-a 1 1
e2e_node node-b 2 2
for n in node-a node-b; do e2e_key "$n"; done
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$E2E_V4NET.2:$E2E_PORT"
for n in node-a node-b; do ddp_up "$n"; done

step "ddp0's neighbour entry is permanent"
for n in node-a node-b; do
    got=$(nx "$n" ip -4 neigh show nud all dev ddp0)
    case "$got" in
        *PERMANENT*) say "$n: $got" ;;
        *) fail "$n: ddp0's neighbour entry is not pinned: '${got:-none}' (want PERMANENT)" ;;
    esac
done

step "pings cross"
ping_ok node-a 10.77.0.2
ping_ok node-b 10.77.0.1
got=$(nx node-a ip -4 neigh show nud all dev ddp0)
case "$got" in *PERMANENT*) ;; *) fail "node-a: the entry did not stay pinned: '$got'" ;; esac
say "ok"
