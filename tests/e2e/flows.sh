#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: alone
# Several underlay flows per node pair (issue 57): a cloud caps each UDP
# 5-tuple, so a node spreads its peers' inner flows over DDPNET_FLOWS
# source ports (default 4), all to the peer's one port. Checked:
#  1. direct, through a router (no NAT), a clean path: both nodes' status
#     says "direct, 4 flows" of the other; iperf3 -P 8 a -> b at a capped
#     rate: b's TCP queued no segment out of order (TcpExtTCPOFOQueue),
#     no replay drop at either daemon (each inner flow stays on one
#     5-tuple; the replay window takes what flows reorder among them);
#  2. the router polices every 5-tuple at CAP (xt_hashlimit through
#     iptables-nft, UDP and TCP, as a cloud's per-flow limit): iperf3 -P 4
#     over ddp0 a -> b moves at least 0.6 x what bare TCP -P 4 between
#     the nodes moves (4 5-tuples; held to one flow, ddp0 moved 0.23 x),
#     and the policer saw 4 UDP source ports of a's towards b's port;
#  3. node-c behind a cone NAT (masquerade, which lets in only replies:
#     d's extra source ports never get in), the same policer in the
#     gateway: c -> d spreads (c's status: "4 flows"), d -> c falls back
#     to one (d's status of c: "1 flow"); iperf3 -P 4 c -> d at least
#     0.6 x bare TCP's of 2; d -> c still moves data;
#  4. node-e behind a symmetric NAT (a new port per destination and
#     source), policed too: e -> d spreads ("4 flows"), d -> e falls back
#     ("1 flow"); iperf3 -P 4 e -> d at least 0.6 x bare TCP's of 2.
#  (A relayed peer's status says "relay via NODE": relay frames leave
#  from the port, one flow; nat_traversal.sh checks that path.)
#
#  [1, 2]  node-a 10.201.1.2 -- [rt] -- 10.201.2.2 node-b
#  [3]     node-c 172.31.1.10 -- [gw, cone NAT] -- hub 100.64/16 -- node-d 100.64.0.4
#  [4]     node-e 172.31.1.10 -- [gw2, symmetric NAT] -- hub
#
# The policer's burst (a second of its rate: iptables takes no less) lets
# a 3 s TCP stream move about twice CAP, so the rates are judged against
# bare TCP's under the same policer, in the same run.
# Environment: FL_CAP_MBYTES (the policer's rate per 5-tuple, MB/s: 4,
# about 34 Mbit/s), FL_SECS (3), FL_RATIO (ddp0 over bare TCP, in %: 60),
# and lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init flows iperf3 iptables nstat ss

CAP=${FL_CAP_MBYTES:-4}
RATIO=${FL_RATIO:-60}
CAP_MBIT=$(( CAP * 8 * 1048576 / 1000000 ))
SECS=${FL_SECS:-3}
MPORT=9587
P=$E2E_PORT

# police NS: every UDP and TCP 5-tuple forwarded by NS held to CAP.
police() {
    local proto
    for proto in udp tcp; do
        ip netns exec "$E2E_PFX$1" iptables -I FORWARD -p $proto -m hashlimit \
            --hashlimit-name "fl$proto" --hashlimit-mode srcip,srcport,dstip,dstport \
            --hashlimit-above "${CAP}mb/s" --hashlimit-burst "$(( CAP + 1 ))mb" -j DROP ||
            fail "$1: the hashlimit policer was refused (xt_hashlimit)"
    done
}

# rate SERVER ADDR CLIENT STREAMS [IPERF-ARGS...]: Mbit/s received.
rate() {
    local srv=$1 addr=$2 cli=$3 n=$4; shift 4
    nx_bg "$srv" iperf3-server timeout 40 iperf3 -s -1 -B "$addr" -p 5201
    local spid=$BG_PID
    wait_for 10 e2e_listening "$srv" 5201 || fail "iperf3 server on $srv did not start"
    nx "$cli" timeout 30 iperf3 -c "$addr" -p 5201 -t "$SECS" -P "$n" -J "$@" \
        >"$T/$cli/iperf3.json" 2>&1 || fail "iperf3 $cli -> $srv failed: $(tail -n 5 "$T/$cli/iperf3.json")"
    wait "$spid" 2>/dev/null || true
    "$PY" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e6))' \
        "$T/$cli/iperf3.json"
}

step "1. direct through a router, a clean path: 8 streams, nothing out of order"
e2e_routed_pair
e2e_routed_pair_up "$MPORT"
ofo0=$(e2e_ofo node-b) ra0=$(e2e_replays node-a "$MPORT") rb0=$(e2e_replays node-b "$MPORT")
r=$(rate node-b 10.77.0.2 node-a 8 -b 25M)
ofo1=$(e2e_ofo node-b) ra1=$(e2e_replays node-a "$MPORT") rb1=$(e2e_replays node-b "$MPORT")
say "8 streams a -> b: $r Mbit/s; b's TcpExtTCPOFOQueue +$(( ofo1 - ofo0 )), replay drops a +$(( ra1 - ra0 )) b +$(( rb1 - rb0 ))"
[ "$r" -gt 0 ] || fail "8 streams moved nothing"
[ $(( ofo1 - ofo0 )) -eq 0 ] || fail "b queued $(( ofo1 - ofo0 )) TCP segments out of order on a clean path"
[ $(( ra1 - ra0 + rb1 - rb0 )) -eq 0 ] || fail "replay drops on a clean path: a +$(( ra1 - ra0 )), b +$(( rb1 - rb0 ))"

step "2. each 5-tuple policed at $CAP MB/s ($CAP_MBIT Mbit/s): 4 streams over 4 flows"
police rt
bare=$(rate node-b 10.201.2.2 node-a 4)
r=$(rate node-b 10.77.0.2 node-a 4)
ip netns exec "${E2E_PFX}rt" cat /proc/net/ipt_hashlimit/fludp >"$T/policed.txt"
ports=$(grep -c "10.201.1.2:[0-9]*->10.201.2.2:$P " "$T/policed.txt" || true)
[ "$E2E_VERBOSE" = 1 ] && cat "$T/policed.txt"
say "policed, 4 streams: bare TCP $bare Mbit/s, ddp0 $r Mbit/s (ratio $(( r * 100 / (bare > 0 ? bare : 1) ))%), a -> b's port from $ports source ports"
[ $(( r * 100 )) -ge $(( bare * RATIO )) ] ||
    fail "ddp0 moved $r Mbit/s under a $CAP_MBIT Mbit/s cap per 5-tuple, bare TCP $bare: held to one flow (want >= $RATIO% of bare)"
[ "$ports" -ge 4 ] || fail "the policer saw $ports 5-tuples from a to b's port, want 4"
for n in node-a node-b; do ddp_down "$n"; done

step "3. behind a cone NAT: a -> b spreads, b -> a falls back to one flow"
e2e_hub
e2e_router gw 1.1 cone
e2e_lan_node gw node-c 10
e2e_public_node node-d 0.4
e2e_firewall node-d "$P"
police gw
for n in node-c node-d; do e2e_key "$n"; done
cluster_begin "$T/nat.conf" "metrics = 127.0.0.1:$MPORT"
cluster_node "$T/nat.conf" node-c "$(pub node-c)" 10.77.0.3
cluster_node "$T/nat.conf" node-d "$(pub node-d)" 10.77.0.4 "$E2E_INET.0.4:$P"
ddp_up node-d "$T/nat.conf"
ddp_up node-c "$T/nat.conf"
ping_ok node-c 10.77.0.4
wait_for 10 e2e_flows_are node-c node-d 4 || fail "node-c's status of node-d: $(e2e_flows_of node-c node-d) flows, want 4"
wait_for 10 e2e_flows_are node-d node-c 1 || fail "node-d's status of node-c: $(e2e_flows_of node-d node-c) flows, want 1 (its extra ports cannot get through c's NAT)"
say "status at c: $(ddp_status node-c | grep node-d)"
say "status at d: $(ddp_status node-d | grep node-c)"
r=$(rate node-d 10.77.0.4 node-c 4)
say "behind the NAT, policed, 4 streams c -> d: $r Mbit/s"
[ $(( r * 100 )) -ge $(( bare * RATIO )) ] ||
    fail "ddp0 moved $r Mbit/s from behind the NAT under a $CAP_MBIT Mbit/s cap per 5-tuple, bare TCP $bare (2): held to one flow"
# Held to one flow, the other way still works.
r=$(rate node-d 10.77.0.4 node-c 4 -R)
say "d -> c (one flow): $r Mbit/s"
[ "$r" -gt 0 ] || fail "d -> c moved nothing"

step "4. behind a symmetric NAT: e's own sends spread, d falls back to one flow"
# A new port per destination and source: d hears each of e's flows from a
# port of their own (authenticated, as one more flow), and none of d's
# extra ports gets in.
e2e_router gw2 1.2 symmetric
e2e_lan_node gw2 node-e 10
police gw2
e2e_key node-e
cluster_node "$T/nat.conf" node-e "$(pub node-e)" 10.77.0.5
for n in node-c node-d; do ddp_down "$n"; done
ddp_up node-d "$T/nat.conf"
ddp_up node-e "$T/nat.conf"
ping_ok node-e 10.77.0.4
wait_for 10 e2e_flows_are node-e node-d 4 || fail "node-e's status of node-d: $(e2e_flows_of node-e node-d) flows, want 4"
wait_for 10 e2e_flows_are node-d node-e 1 || fail "node-d's status of node-e: $(e2e_flows_of node-d node-e) flows, want 1 (its extra ports cannot get through e's NAT)"
say "status at e: $(ddp_status node-e | grep node-d)"
say "status at d: $(ddp_status node-d | grep node-e)"
r=$(rate node-d 10.77.0.4 node-e 4)
say "behind the symmetric NAT, policed, 4 streams e -> d: $r Mbit/s"
[ $(( r * 100 )) -ge $(( bare * RATIO )) ] ||
    fail "ddp0 moved $r Mbit/s from behind the symmetric NAT under a $CAP_MBIT Mbit/s cap per 5-tuple, bare TCP $bare (2): held to one flow"
