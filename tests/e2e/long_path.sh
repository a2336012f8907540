#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: alone
# A long path (issue 44): node-a and node-b behind a router whose FORWARD
# chain queues every packet to the delay line (build/tools/delayline,
# NFQUEUE), which holds it LONG_DELAY_MS before letting it go: a round
# trip of twice that. Checked: the underlay's round trip is the path's
# (not shorter: the rule and the delay line are in place; not much
# longer: the delay line keeps up), ddpnet's handshake and data cross it
# (ping over ddp0 takes the path's round trip too), a stream crosses it,
# the delay line let every packet through that it held and the kernel
# dropped none at its queue, and with all packets lost nothing crosses.
#
# Environment: LONG_DELAY_MS (20), DELAYLINE (build/tools/delayline), and
# lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init long_path ping iperf3 iptables-nft awk

DELAYLINE=${DELAYLINE:-$E2E_ROOT/build/tools/delayline}
LONG_DELAY_MS=${LONG_DELAY_MS:-20}
QUEUE=4405
[ -x "$DELAYLINE" ] || skip "$DELAYLINE not built (make build/tools/delayline)"
RTT_MIN=$(( 2 * LONG_DELAY_MS ))
RTT_MAX=$(( 2 * LONG_DELAY_MS + 15 ))   # a shared 2-vCPU machine's slack

step "routed topology, the delay line in the router"
e2e_netns router
R=${E2E_PFX}router
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
for n in node-a node-b; do e2e_node_alone "$n"; done
e2e_veth router a-eth node-a eth0
e2e_veth router b-eth node-b eth0
ip -n "$R" addr add 192.168.241.254/24 dev a-eth
ip -n "$R" addr add 192.168.242.254/24 dev b-eth
A=192.168.241.1 B=192.168.242.2
nx node-a ip addr add "$A/24" dev eth0
nx node-b ip addr add "$B/24" dev eth0
nx node-a ip route add default via 192.168.241.254
nx node-b ip route add default via 192.168.242.254
ip netns exec "$R" iptables-nft -A FORWARD -j NFQUEUE --queue-num "$QUEUE" ||
    fail "router: the NFQUEUE rule was not installed"
ip netns exec "$R" iptables-nft -C FORWARD -j NFQUEUE --queue-num "$QUEUE" ||
    fail "router: the NFQUEUE rule is not there"

# delay_start [LOSS]: the delay line in the router, its counts in $T/delayline.err.
delay_start() {
    ip netns exec "$R" "$DELAYLINE" -q "$QUEUE" -d "$LONG_DELAY_MS" -l "${1:-0}" -t 120 \
        2>"$T/delayline.err" &
    DL_PID=$!
    E2E_PIDS+=("$DL_PID")
}
delay_stop() {
    kill -TERM "$DL_PID"
    wait "$DL_PID" || fail "the delay line failed: $(cat "$T/delayline.err")"
}

# rtt_ms FROM DEST: the average of 5 echoes, whole milliseconds.
rtt_ms() {
    nx "$1" ping -n -c 5 -i 0.2 -w 10 "$2" | sed -n 's/.*= [0-9.]*\/\([0-9]*\)[0-9.]*\/.*/\1/p'
}

# rtt_in_path WHAT FROM DEST
rtt_in_path() {
    local rtt
    rtt=$(rtt_ms "$2" "$3")
    [ -n "$rtt" ] || fail "$1: no echo crossed the path"
    [ "$rtt" -ge "$RTT_MIN" ] && [ "$rtt" -le "$RTT_MAX" ] ||
        fail "$1: round trip $rtt ms, not $RTT_MIN-$RTT_MAX ms"
    say "$1: round trip $rtt ms"
}

delay_start
rtt_in_path "underlay" node-a "$B"

step "ddpnet across it"
for n in node-a node-b; do e2e_key "$n"; done
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$A:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$B:$E2E_PORT"
ddp_up node-a
ddp_up node-b
ping_ok node-a 10.77.0.2
rtt_in_path "ddp0" node-a 10.77.0.2
iperf_ok node-b 10.77.0.2 node-a

step "the delay line's counts"
delay_stop
counts=$(tail -n 1 "$T/delayline.err")
say "$counts"
case "$counts" in
*" 0 dropped at random"*"kernel drops: 0 queue full, 0 socket full") ;;
*) fail "the delay line dropped or lost packets: $counts" ;;
esac

step "all lost: nothing crosses"
delay_start 1
ping_fails node-a "$B" 3
delay_stop
