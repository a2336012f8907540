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
MPORT=9588

step "two nodes through a router, a clean path; a's extra 5-tuples ${SKEW} ms longer"
e2e_routed_pair
ip netns exec "${E2E_PFX}rt" iptables-nft -A FORWARD -i ra -p udp ! --sport "$P" -j NFQUEUE --queue-num "$QUEUE" ||
    fail "router: the NFQUEUE rule was not installed"
ip netns exec "${E2E_PFX}rt" "$DELAYLINE" -q "$QUEUE" -d "$SKEW" -t 120 2>"$T/delayline.err" &
E2E_PIDS+=("$!")
e2e_routed_pair_up "$MPORT"

step "8 inner streams a -> b at $RATE each, $RUNS runs: nothing out of order"
for run in $(seq 1 "$RUNS"); do
    ofo0=$(e2e_ofo node-b) ra0=$(e2e_replays node-a "$MPORT") rb0=$(e2e_replays node-b "$MPORT")
    nx_bg node-b iperf3-server timeout 40 iperf3 -s -1 -B 10.77.0.2 -p 5201
    spid=$BG_PID
    wait_for 10 e2e_listening node-b 5201 || fail "iperf3 server on node-b did not start"
    nx node-a timeout 30 iperf3 -c 10.77.0.2 -p 5201 -t "$SECS" -P 8 -b "$RATE" -J >"$T/iperf3-$run.json" 2>&1 ||
        fail "iperf3 a -> b failed: $(tail -n 5 "$T/iperf3-$run.json")"
    wait "$spid" 2>/dev/null || true
    read -r bytes retr < <("$PY" -c 'import json,sys; e = json.load(open(sys.argv[1]))["end"]
print(int(e["sum_received"]["bytes"]), e["sum_sent"].get("retransmits", "?"))' "$T/iperf3-$run.json")
    ofo1=$(e2e_ofo node-b) ra1=$(e2e_replays node-a "$MPORT") rb1=$(e2e_replays node-b "$MPORT")
    say "run $run: $bytes bytes, $retr retransmits; b's TcpExtTCPOFOQueue +$(( ofo1 - ofo0 )), replay drops a +$(( ra1 - ra0 )) b +$(( rb1 - rb0 ))"
    [ "$bytes" -gt 0 ] || fail "8 streams moved nothing"
    [ $(( ofo1 - ofo0 )) -eq 0 ] || fail "b queued $(( ofo1 - ofo0 )) TCP segments out of order on a clean path (run $run)"
    [ $(( ra1 - ra0 + rb1 - rb0 )) -eq 0 ] || fail "replay drops on a clean path: a +$(( ra1 - ra0 )), b +$(( rb1 - rb0 )) (run $run)"
done
delayed=$(ip netns exec "${E2E_PFX}rt" iptables-nft -L FORWARD -v -n -x | awk '/NFQUEUE/ { print $1 }')
say "the router delayed $delayed datagrams of a's extra 5-tuples"
[ "${delayed:-0}" -gt 1000 ] || fail "the router delayed $delayed datagrams: a's traffic did not spread over its extra 5-tuples"
say "ok: 8 streams over 4 flows, nothing out of order, no replay drop"
