# SPDX-License-Identifier: MIT
# The contenders of `make bench` (sourced after lib.sh): how each one is
# brought up between nodes a and b, which processes are its daemons, and
# how it is torn down so that the next contender finds a bare testbed.
#
# Kinds:
#   veth    no tunnel: the underlay itself, the ceiling of the testbed
#   ddpnet  `ddpnet up` in each node from one generated cluster file
#   wg      a userspace WireGuard that takes the interface name as its
#           argument, as wireguard-go does, configured by stock `wg`
#
# tunnel_up KIND BIN sets TUN_DEST (b's address as a reached from a) and
# TUN_PIDS (the daemons, both nodes); on failure it returns non-zero with
# the reason in TUN_WHY. tunnel_down KIND always leaves the testbed bare.

TUN_DEST=""
TUN_PIDS=""
TUN_WHY=""
WG_PIDS=()

tunnel_up() {
    local kind=$1 bin=${2:-}
    TUN_DEST=$TN_B TUN_PIDS="" TUN_WHY=""
    case "$kind" in
    veth)   TUN_DEST=$UL_B; return 0 ;;
    ddpnet) ddp_up || return 1 ;;
    wg)     wg_up "$bin" || return 1 ;;
    *)      TUN_WHY="unknown kind $kind"; return 1 ;;
    esac
    # The first packet waits for the handshake; measure only after it.
    if ! nx a ping -n -c 1 -i 0.2 -w 15 "$TN_B" >"$T/warmup.out" 2>&1; then
        TUN_WHY="no ping through the tunnel within 15 s"
        return 1
    fi
    nx b ping -n -c 1 -w 5 "$TN_A" >/dev/null 2>&1 || {
        TUN_WHY="no ping b -> a through the tunnel"; return 1; }
}

tunnel_down() {
    case "$1" in
    ddpnet) ddp_down ;;
    wg)     wg_down ;;
    esac
    return 0
}

# --- ddpnet ---------------------------------------------------------------

ddp_cluster() {
    {
        printf '# written by bench/tunnels.sh\n[cluster]\n'
        printf 'network = %s\nport = %s\nmtu = %s\n' "$TN_NET" "$WG_PORT" "$TN_MTU"
        printf '\n[node bench-a]\npublic-key = %s\naddress = %s\nendpoint = %s:%s\n' \
            "$(cat "$T/a/pub")" "$TN_A" "$UL_A" "$WG_PORT"
        printf '\n[node bench-b]\npublic-key = %s\naddress = %s\nendpoint = %s:%s\n' \
            "$(cat "$T/b/pub")" "$TN_B" "$UL_B" "$WG_PORT"
    } >"$T/cluster.conf"
}

# DDP_UP_PREFIX_a, DDP_UP_PREFIX_b: words run before `ddpnet up` in that
# node, inherited by its daemon (cores.sh: `env DDPNET_CRYPTO_THREADS=...
# taskset -c ...`); empty, as for every other part, runs it as it is.
DDP_UP_PREFIX_a="" DDP_UP_PREFIX_b=""

ddp_up() {
    local n pid roots="" prefix
    [ -f "$T/cluster.conf" ] || ddp_cluster
    for n in a b; do
        prefix=DDP_UP_PREFIX_$n
        if ! nx "$n" ${!prefix} timeout 30 "$DDPNET" up -c "$T/cluster.conf" -k "$T/$n/key" \
                --run-dir "$T/$n/run" --hosts-file "$T/$n/hosts" >"$T/$n/ddpnet-up.log" 2>&1; then
            TUN_WHY="ddpnet up in node $n failed: $(tail -n 2 "$T/$n/ddpnet-up.log")"
            return 1
        fi
        pid=$(node_daemon "$n")
        if [ -z "$pid" ] || gone "$pid"; then
            TUN_WHY="node $n: no running daemon in $T/$n/run/ddp0.state"
            return 1
        fi
        roots="$roots $pid"
    done
    TUN_PIDS=$(proc_tree $roots)
}

ddp_down() {
    local n pids
    pids=$(ddp_state_pids)
    for n in a b; do
        [ -f "$T/$n/run/ddp0.state" ] || nx "$n" ip link show ddp0 >/dev/null 2>&1 || continue
        nx "$n" timeout 20 "$DDPNET" down --run-dir "$T/$n/run" >"$T/$n/ddpnet-down.log" 2>&1 ||
            warn "ddpnet down in node $n failed: $(tail -n 2 "$T/$n/ddpnet-down.log")"
    done
    # The daemons are not our children: poll, then insist.
    for pid in $pids; do
        wait_for 10 gone "$pid" || { warn "ddpnet daemon $pid outlived down; killing it"; kill -9 "$pid"; }
    done
}

ddp_state_pids() {
    local n
    for n in a b; do node_daemon "$n"; done
}

# --- wireguard-go and its kin ------------------------------------------------

wg_up() {
    local bin=$1 n peer rc
    command -v wg >/dev/null 2>&1 || { TUN_WHY="missing tool: wg (wireguard-tools)"; return 1; }
    WG_PIDS=()
    for n in a b; do
        wg_start "$n" "$bin"
        rc=$?
        WG_PIDS+=("$WG_START_PID")
        [ "$rc" -eq 0 ] || { TUN_WHY=$WG_START_WHY; return 1; }
    done
    for n in a b; do
        if [ "$n" = a ]; then peer=b; else peer=a; fi
        wg_conf "$n" "$peer" || return 1
    done
    TUN_PIDS=$(proc_tree "${WG_PIDS[@]}")
}

# wg_conf NODE PEER: keys, port, peer and addresses of NODE's wg0.
wg_conf() {
    local n=$1 p=$2 ul tn out
    if [ "$p" = a ]; then ul=$UL_A tn=$TN_A; else ul=$UL_B tn=$TN_B; fi
    out=$(nx "$n" timeout 10 wg set wg0 private-key "$T/$n/key" listen-port "$WG_PORT" \
              peer "$(cat "$T/$p/pub")" endpoint "$ul:$WG_PORT" allowed-ips "$tn/32" 2>&1) ||
        { TUN_WHY="wg set in node $n failed: $out"; return 1; }
    if [ "$n" = a ]; then tn=$TN_A; else tn=$TN_B; fi
    out=$( { nx "$n" ip addr add "$tn/$TN_PREFIX" dev wg0 &&
             nx "$n" ip link set wg0 mtu "$TN_MTU" up; } 2>&1) ||
        { TUN_WHY="node $n: cannot configure wg0: $out"; return 1; }
}

wg_down() {
    local n pid
    for n in a b; do nx "$n" ip link del wg0 >/dev/null 2>&1; done
    for pid in "${WG_PIDS[@]}"; do reap "$pid" 5; done
    WG_PIDS=()
    for n in a b; do rm -f "$T/$n/run/wg0.sock"; done
}
