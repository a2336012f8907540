# SPDX-License-Identifier: MIT
# The contenders of `make bench` (sourced after lib.sh): how each one is
# brought up between nodes a and b, which processes are its daemons, and
# how it is torn down so that the next contender finds a bare testbed.
#
# Kinds:
#   veth    no tunnel: the underlay itself, the ceiling of the testbed
#   ddpnet  `ddpnet up` in each node from one generated cluster file; BIN
#           busy-poll=VALUE (BENCH_BUSY_POLL) adds that key to the file
#   wg      a userspace WireGuard that takes the interface name as its
#           argument, as wireguard-go does, configured by stock `wg`
#   nebula  Nebula (bench/fetch-nebula.sh): a CA and one host certificate
#           per node made with the nebula-cert beside BIN, each node naming
#           the other in static_host_map (no lighthouse), every port open;
#           Nebula's defaults otherwise, as a new user would run it
#
# tunnel_up KIND BIN sets TUN_DEST (b's address as a reached from a) and
# TUN_PIDS (the daemons, both nodes); on failure it returns non-zero with
# the reason in TUN_WHY. tunnel_down KIND always leaves the testbed bare.

TUN_DEST=""
TUN_PIDS=""
TUN_LOOPS=""      # ddpnet: the daemons' pids, whose main threads are the event loops
TUN_WHY=""
WG_PIDS=()

tunnel_up() {
    local kind=$1 bin=${2:-}
    TUN_DEST=$TN_B TUN_PIDS="" TUN_LOOPS="" TUN_WHY=""
    case "$kind" in
    veth)   TUN_DEST=$UL_B; return 0 ;;
    ddpnet) ddp_up "$bin" || return 1 ;;
    wg)     wg_up "$bin" || return 1 ;;
    nebula) neb_up "$bin" || return 1 ;;
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
    nebula) neb_down ;;
    esac
    return 0
}

# --- ddpnet ---------------------------------------------------------------

# ddp_cluster [BUSY-POLL]: the cluster file, $T/cluster.conf, or with that
# busy-poll value $T/cluster-bp-VALUE.conf; with DDP_METRICS_PORT set, the
# metrics on 127.0.0.1 at that port in each node ($T/cluster-m*.conf).
DDP_METRICS_PORT=""
ddp_cluster() {
    local bp=${1:-} f=$T/cluster
    [ -z "$DDP_METRICS_PORT" ] || f=$f-m$DDP_METRICS_PORT
    f=$f${bp:+-bp-$bp}.conf
    DDP_CLUSTER=$f
    [ -f "$f" ] && return 0
    {
        printf '# written by bench/tunnels.sh\n[cluster]\n'
        printf 'network = %s\nport = %s\nmtu = %s\n' "$TN_NET" "$WG_PORT" "$TN_MTU"
        [ -z "$bp" ] || printf 'busy-poll = %s\n' "$bp"
        [ -z "$DDP_METRICS_PORT" ] || printf 'metrics = 127.0.0.1:%s\n' "$DDP_METRICS_PORT"
        [ -z "${BENCH_SOCKET_BUFFER:-}" ] || printf 'socket-buffer = %s\n' "$BENCH_SOCKET_BUFFER"
        # The flows part reads each daemon's replay drops there (flows.sh).
        [ -z "${DDP_METRICS:-}" ] || printf 'metrics = %s\n' "$DDP_METRICS"
        printf '\n[node bench-a]\npublic-key = %s\naddress = %s\nendpoint = %s:%s\n' \
            "$(cat "$T/a/pub")" "$TN_A" "$UL_A" "$WG_PORT"
        printf '\n[node bench-b]\npublic-key = %s\naddress = %s\nendpoint = %s:%s\n' \
            "$(cat "$T/b/pub")" "$TN_B" "$UL_B" "$WG_PORT"
    } >"$f"
}

# DDP_UP_PREFIX_a, DDP_UP_PREFIX_b: words run before `ddpnet up` in that
# node, inherited by its daemon (cores.sh: `env DDPNET_SHARDS=...
# taskset -c ...`); empty, as for every other part, runs it as it is.
DDP_UP_PREFIX_a="" DDP_UP_PREFIX_b=""
# DDP_UP_ENV: VAR=VALUE words put in both daemons' environment before a
# variant's own and the prefix's (bench.sh sets it to BENCH_DDPNET_ENV for
# the pair part alone: cores and shards set their own).
DDP_UP_ENV=""

# ddp_up [busy-poll=VALUE | env=VAR=VALUE,...]: env= puts the variables in
# the daemons' environment; DDPNET=PATH among them runs that build
# (BENCH_DDPNET_VARIANTS).
DDP_BIN=""
ddp_up() {
    local n pid roots="" prefix bp="" vars=() kv
    DDP_BIN=$DDPNET
    case "${1:-}" in
    busy-poll=*) bp=${1#busy-poll=} ;;
    env=*)
        IFS=, read -r -a vars <<<"${1#env=}"
        for kv in "${vars[@]}"; do
            case "$kv" in DDPNET=*) DDP_BIN=${kv#DDPNET=} ;; esac
        done ;;
    esac
    ddp_cluster "$bp"
    for n in a b; do
        prefix=DDP_UP_PREFIX_$n
        if ! nx "$n" env $DDP_UP_ENV "${vars[@]}" ${!prefix} timeout 30 "$DDP_BIN" up -c "$DDP_CLUSTER" -k "$T/$n/key" \
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
    TUN_LOOPS=$roots
}

ddp_down() {
    local n pids
    pids=$(ddp_state_pids)
    for n in a b; do
        [ -f "$T/$n/run/ddp0.state" ] || nx "$n" ip link show ddp0 >/dev/null 2>&1 || continue
        nx "$n" timeout 20 "${DDP_BIN:-$DDPNET}" down --run-dir "$T/$n/run" >"$T/$n/ddpnet-down.log" 2>&1 ||
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

# --- Nebula ---------------------------------------------------------------

NEB_PIDS=()
NEB_DEV=nebula1

# neb_pki CERT-TOOL: the CA and both hosts' certificates, once per run.
neb_pki() {
    local tool=$1 n ip out
    [ -f "$T/nebula/b.crt" ] && return 0
    mkdir -p "$T/nebula"
    out=$("$tool" ca -name ddpnet-bench -out-crt "$T/nebula/ca.crt" -out-key "$T/nebula/ca.key" 2>&1) ||
        { TUN_WHY="nebula-cert ca failed: $out"; return 1; }
    for n in a b; do
        if [ "$n" = a ]; then ip=$TN_A; else ip=$TN_B; fi
        out=$("$tool" sign -name "bench-$n" -ip "$ip/$TN_PREFIX" -ca-crt "$T/nebula/ca.crt" \
                -ca-key "$T/nebula/ca.key" -out-crt "$T/nebula/$n.crt" -out-key "$T/nebula/$n.key" 2>&1) ||
            { TUN_WHY="nebula-cert sign for node $n failed: $out"; return 1; }
    done
}

# neb_conf NODE: NODE's config, the other node's underlay address pinned.
neb_conf() {
    local n=$1 ptn pul
    if [ "$n" = a ]; then ptn=$TN_B pul=$UL_B; else ptn=$TN_A pul=$UL_A; fi
    cat >"$T/nebula/$n.yml" <<NEBEOF
pki:
  ca: $T/nebula/ca.crt
  cert: $T/nebula/$n.crt
  key: $T/nebula/$n.key
static_host_map:
  "$ptn": ["$pul:$WG_PORT"]
lighthouse:
  am_lighthouse: false
  hosts: []
listen:
  host: 0.0.0.0
  port: $WG_PORT
punchy:
  punch: false
tun:
  dev: $NEB_DEV
  mtu: $TN_MTU
logging:
  level: error
firewall:
  outbound:
    - port: any
      proto: any
      host: any
  inbound:
    - port: any
      proto: any
      host: any
NEBEOF
}

neb_up() {
    local bin=$1 tool n pid
    tool=$(dirname "$bin")/nebula-cert
    [ -x "$tool" ] || { TUN_WHY="no nebula-cert beside $bin (bench/fetch-nebula.sh unpacks both)"; return 1; }
    neb_pki "$tool" || return 1
    NEB_PIDS=()
    for n in a b; do
        neb_conf "$n"
        # nsenter execs, so $! is the daemon itself (our child: reap waits).
        nsenter -t "$(holder_pid "$n")" -m -n -- "$bin" -config "$T/nebula/$n.yml" \
            >"$T/$n/nebula.out" 2>&1 &
        pid=$!
        BENCH_PIDS+=("$pid") NEB_PIDS+=("$pid")
        wait_for 10 neb_started "$n" "$pid"
        if gone "$pid" || ! nx "$n" ip -o addr show dev "$NEB_DEV" 2>/dev/null | grep -q inet; then
            TUN_WHY="nebula in node $n did not bring up $NEB_DEV: $(tail -n 2 "$T/$n/nebula.out")"
            return 1
        fi
    done
    TUN_PIDS=$(proc_tree "${NEB_PIDS[@]}")
}

# neb_started NODE PID: the tunnel device has its address, or the daemon ended.
neb_started() {
    gone "$2" || nx "$1" ip -o addr show dev "$NEB_DEV" 2>/dev/null | grep -q inet
}

neb_down() {
    local pid
    for pid in "${NEB_PIDS[@]}"; do kill "$pid" 2>/dev/null; reap "$pid" 5; done
    NEB_PIDS=()
}
