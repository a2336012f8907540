#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Spreading a node pair over several underlay flows (issue 57) reorders
# nothing: each inner flow stays on one 5-tuple. Two nodes through a
# router, a clean path (no policer, no loss) whose 5-tuples are not all
# equally long, as a cloud's fabric hashes each onto a path of its own:
# the router holds the UDP datagrams a sends b from any port but the
# cluster's FO_SKEW_MS longer (the delay line, build/tools/delayline, on
# NFQUEUE), so an inner flow whose packets took several 5-tuples would
# arrive out of order. The default DDPNET_FLOWS (4). Both nodes' status
# says "direct, 4 flows" of the other; then iperf3 -P 8 a -> b, each
# stream at FO_RATE, for FO_SECS:
# b's TCP queued no segment out of order (nstat TcpExtTCPOFOQueue) and
# neither daemon counted a replay drop (its metrics).
# No rate is judged: the streams are held to FO_RATE so that nothing is
# lost (a loss also makes a segment arrive out of order).
#
#   node-a 10.201.1.2 -- [rt] -- 10.201.2.2 node-b
#
# Environment: FO_RATE (iperf3 -b per stream: 25M), FO_SECS (4), FO_RUNS
# (2), FO_SKEW_MS (2), DELAYLINE (build/tools/delayline), and lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init flows_order iperf3 nstat ss iptables-nft

RATE=${FO_RATE:-25M}
SECS=${FO_SECS:-4}
RUNS=${FO_RUNS:-2}
SKEW=${FO_SKEW_MS:-2}
DELAYLINE=${DELAYLINE:-$E2E_ROOT/build/tools/delayline}
[ -x "$DELAYLINE" ] || skip "$DELAYLINE not built (make build/tools/delayline)"
QUEUE=4457
P=$E2E_PORT

flows_of() {
    ddp_status "$1" --json | "$PY" -c '
import json, sys
for p in json.load(sys.stdin)["peers"]:
    if p["name"] == sys.argv[1]:
        print(p.get("flows") if p.get("flows") is not None else "-")' "$2"
}
flows_are() { [ "$(flows_of "$1" "$2")" = "$3" ]; }

# replays NODE: the replay drops NODE's daemon counted (its metrics).
MPORT=9588
replays() {
    nx "$1" "$PY" -c '
import urllib.request, sys
for l in urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode().splitlines():
    if l.startswith("ddpnet_packets_dropped_total{") and "reason=\"replay\"" in l:
        print(int(float(l.rsplit(" ", 1)[1])))' "$MPORT"
}

ofo() { nx "$1" nstat -az TcpExtTCPOFOQueue | awk '$1 == "TcpExtTCPOFOQueue" { print $2 }'; }

step "two nodes through a router, a clean path; a's extra 5-tuples ${SKEW} ms longer"
e2e_node_alone node-a
e2e_node_alone node-b
e2e_netns rt
e2e_veth node-a eth0 rt ra
e2e_veth node-b eth0 rt rb
ip -n "${E2E_PFX}rt" addr add 10.201.1.1/24 dev ra
ip -n "${E2E_PFX}rt" addr add 10.201.2.1/24 dev rb
ip netns exec "${E2E_PFX}rt" sysctl -qw net.ipv4.ip_forward=1
ip -n "${E2E_PFX}node-a" addr add 10.201.1.2/24 dev eth0
ip -n "${E2E_PFX}node-b" addr add 10.201.2.2/24 dev eth0
ip -n "${E2E_PFX}node-a" route add default via 10.201.1.1
ip -n "${E2E_PFX}node-b" route add default via 10.201.2.1
ip netns exec "${E2E_PFX}rt" iptables-nft -A FORWARD -i ra -p udp ! --sport "$P" -j NFQUEUE --queue-num "$QUEUE" ||
    fail "router: the NFQUEUE rule was not installed"
ip netns exec "${E2E_PFX}rt" "$DELAYLINE" -q "$QUEUE" -d "$SKEW" -t 120 2>"$T/delayline.err" &
E2E_PIDS+=("$!")
for n in node-a node-b; do e2e_key "$n"; done
cluster_begin "$T/cluster.conf" "metrics = 127.0.0.1:$MPORT"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "10.201.1.2:$P"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "10.201.2.2:$P"
for n in node-a node-b; do ddp_up "$n"; done
ping_ok node-a 10.77.0.2
wait_for 10 flows_are node-a node-b 4 || fail "node-a's status of node-b: $(flows_of node-a node-b) flows, want 4"
wait_for 10 flows_are node-b node-a 4 || fail "node-b's status of node-a: $(flows_of node-b node-a) flows, want 4"
say "status: $(ddp_status node-a | grep node-b)"

step "8 inner streams a -> b at $RATE each, $RUNS runs: nothing out of order"
for run in $(seq 1 "$RUNS"); do
    ofo0=$(ofo node-b) ra0=$(replays node-a) rb0=$(replays node-b)
    nx_bg node-b iperf3-server timeout 40 iperf3 -s -1 -B 10.77.0.2 -p 5201
    spid=$BG_PID
    wait_for 10 e2e_listening node-b 5201 || fail "iperf3 server on node-b did not start"
    nx node-a timeout 30 iperf3 -c 10.77.0.2 -p 5201 -t "$SECS" -P 8 -b "$RATE" -J >"$T/iperf3-$run.json" 2>&1 ||
        fail "iperf3 a -> b failed: $(tail -n 5 "$T/iperf3-$run.json")"
    wait "$spid" 2>/dev/null || true
    read -r bytes retr < <("$PY" -c 'import json,sys; e = json.load(open(sys.argv[1]))["end"]
print(int(e["sum_received"]["bytes"]), e["sum_sent"].get("retransmits", "?"))' "$T/iperf3-$run.json")
    ofo1=$(ofo node-b) ra1=$(replays node-a) rb1=$(replays node-b)
    say "run $run: $bytes bytes, $retr retransmits; b's TcpExtTCPOFOQueue +$(( ofo1 - ofo0 )), replay drops a +$(( ra1 - ra0 )) b +$(( rb1 - rb0 ))"
    [ "$bytes" -gt 0 ] || fail "8 streams moved nothing"
    [ $(( ofo1 - ofo0 )) -eq 0 ] || fail "b queued $(( ofo1 - ofo0 )) TCP segments out of order on a clean path (run $run)"
    [ $(( ra1 - ra0 + rb1 - rb0 )) -eq 0 ] || fail "replay drops on a clean path: a +$(( ra1 - ra0 )), b +$(( rb1 - rb0 )) (run $run)"
done
delayed=$(ip netns exec "${E2E_PFX}rt" iptables-nft -L FORWARD -v -n -x | awk '/NFQUEUE/ { print $1 }')
say "the router delayed $delayed datagrams of a's extra 5-tuples"
[ "${delayed:-0}" -gt 1000 ] || fail "the router delayed $delayed datagrams: a's traffic did not spread over its extra 5-tuples"
say "ok: 8 streams over 4 flows, nothing out of order, no replay drop"
