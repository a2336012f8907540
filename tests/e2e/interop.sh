#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Interop with a WireGuard implementation no one here wrote: Debian's
# wireguard-go, configured by stock wg. Ping and iperf3 both ways, twice
# from a fresh start: first only ddpnet can initiate (the wg peer is given
# no endpoint for it), then only wireguard-go can (the cluster file gives
# node-w no endpoint). ddpnet runs with its default DDPNET_FLOWS (4):
# a stock WireGuard peer never hears "takes flows", so node-a's status
# says "direct, 1 flow" of it, and wireguard-go learns node-a's one port
# as its endpoint (a message from an extra port would move it there).
#
#            namespace "hub": bridge br0
#          +-------------------+
#        p-node-a            p-node-w
#          |                   |
#    192.168.241.1       192.168.241.2
#      [node-a]             [node-w]
#   ddpnet: ddp0         wireguard-go: wg0
#     10.77.0.1/16         10.77.0.2/16
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init interop ping iperf3 ss wg wireguard-go

e2e_hub
e2e_node node-a 1 -
e2e_node node-w 2 -
e2e_key node-a
wg genkey >"$T/node-w/key"
wg pubkey <"$T/node-w/key" >"$T/node-w/pub"
EP_A=$E2E_V4NET.1:$E2E_PORT
EP_W=$E2E_V4NET.2:$E2E_PORT

# wg_up [ENDPOINT]: wireguard-go's wg0 in node-w, its peer node-a at
# ENDPOINT (none when empty).
wg_up() {
    nx_bg node-w wireguard-go env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=verbose wireguard-go wg0
    WGGO_PID=$BG_PID
    wait_for 10 test -S "$T/node-w/run/wg0.sock" || fail "wireguard-go did not start: $(cat "$T/node-w/wireguard-go.out")"
    local ep=()
    [ -z "${1:-}" ] || ep=(endpoint "$1")
    wg_in node-w set wg0 private-key "$T/node-w/key" listen-port "$E2E_PORT" \
        peer "$(pub node-a)" "${ep[@]}" allowed-ips 10.77.0.1/32
    nx node-w ip addr add 10.77.0.2/16 dev wg0
    nx node-w ip link set wg0 mtu 1420 up
}
wg_down() {
    nx node-w ip link del wg0 2>/dev/null || true
    kill "$WGGO_PID" 2>/dev/null || true
    wait "$WGGO_PID" 2>/dev/null || true
    rm -f "$T/node-w/run/wg0.sock"
}

# traffic FIRST: FIRST sends the first packet; then ping and iperf3 both ways.
traffic() {
    if [ "$1" = node-a ]; then
        ping_ok node-a 10.77.0.2; ping_ok node-w 10.77.0.1
    else
        ping_ok node-w 10.77.0.1; ping_ok node-a 10.77.0.2
    fi
    iperf_ok node-w 10.77.0.2 node-a
    iperf_ok node-w 10.77.0.2 node-a -R
    iperf_ok node-a 10.77.0.1 node-w
    iperf_ok node-a 10.77.0.1 node-w -R
    # Both sides saw a handshake.
    wg_handshakes_ok node-a 1
    # One flow: the stock peer takes no other (issue 57).
    local line
    line=$(ddp_status node-a | grep node-w) || fail "node-a's status has no node-w"
    case "$line" in *"direct, 1 flow "*) ;; *) fail "node-a's status of a stock WireGuard peer: '$line', want 'direct, 1 flow'" ;; esac
    say "status: $line"
    # wireguard-go's one peer, node-a, with a handshake time: an empty
    # answer (no peer, or wg printing nothing) fails too.
    hs=$(wg_in node-w show wg0 latest-handshakes) || fail "wireguard-go: wg show failed: $hs"
    printf '%s\n' "$hs" | awk -v k="$(pub node-a)" '
        NF { n++ } $1 == k && $2 ~ /^[0-9]+$/ && $2 > 0 { ok++ }
        END { exit !(n == 1 && ok == 1) }' ||
        fail "wireguard-go: want one peer (node-a) with a handshake, got: '$hs'"
}

step "round 1: ddpnet initiates (wireguard-go has no endpoint for node-a)"
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$EP_A"
cluster_node "$T/cluster.conf" node-w "$(pub node-w)" 10.77.0.2 "$EP_W"
wg_up
ddp_up node-a
traffic node-a
ep=$(wg_in node-w show wg0 endpoints)
case "$ep" in *"	$EP_A") ;; *) fail "wireguard-go did not learn node-a's endpoint: $ep" ;; esac
ddp_down node-a
wg_down

step "round 2: wireguard-go initiates (the cluster file has no endpoint for node-w)"
cluster_begin "$T/cluster2.conf"
cluster_node "$T/cluster2.conf" node-a "$(pub node-a)" 10.77.0.1 "$EP_A"
cluster_node "$T/cluster2.conf" node-w "$(pub node-w)" 10.77.0.2
ddp_up node-a "$T/cluster2.conf"
wg_up "$EP_A"
traffic node-w
ep=$(wg_in node-a show ddp0 endpoints)
case "$ep" in *"	$EP_W") ;; *) fail "ddpnet did not learn node-w's endpoint: $ep" ;; esac
ddp_down node-a
wg_down
say "ping and iperf3 both ways, with each side initiating"
