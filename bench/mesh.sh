# SPDX-License-Identifier: MIT
# The three-node half of `make bench` (sourced after lib.sh): what a
# training job sees. Gloo all_reduce under torchrun on three nodes, and one
# TCP stream through a relay next to the direct path.
#
#                  namespace "hub": bridge br0
#         +------------------+------------------+
#       p-m1               p-m2               p-m3
#         |                  |                  |
#   eth0 192.168.244.1  eth0 192.168.244.2  eth0 192.168.244.3   (MTU 1500)
#   [m1]                [m2]                [m3]
#   tunnel 10.79.0.1    tunnel 10.79.0.2    tunnel 10.79.0.3     (MTU 1420)
#
# Contenders, each brought up, measured and torn down in turn per round:
#   bare     no tunnel: Gloo over eth0                          (allreduce)
#   ddp0     `ddpnet up` on all three, a full direct mesh:      (allreduce)
#            Gloo over ddp0; iperf3 and ping m1 -> m2 direct    (relay)
#   relay    as ddp0, but nftables in m1 and m2 drop every packet
#            between their underlay addresses, so m1 <-> m2 goes through
#            m3; iperf3 and ping m1 -> m2, m3's CPU per GB      (relay)
#   NAME     each BENCH_EXTRA wireguard-go, a 3-node mesh set up with
#            `wg`: Gloo over wg0                                (allreduce)
# Rows go to $MESH_TSV: round, contender, metric, value, note.

MESH_NODES=(m1 m2 m3)
MESH_UL=192.168.244
MESH_TN=10.79.0
MESH_NET=10.79.0.0/24
MESH_PORT=29400           # torchrun's store; one port per run (see mesh_allreduce)
M_NAME=() M_KIND=() M_BIN=()
MESH_WHY=""
MESH_PIDS=""              # the daemons of all three nodes
MESH_WG_PIDS=()

mesh_num() { echo "${1#m}"; }
mesh_ul() { echo "$MESH_UL.$(mesh_num "$1")"; }
mesh_tn() { echo "$MESH_TN.$(mesh_num "$1")"; }

# mesh_contenders: M_NAME, M_KIND, M_BIN from the parts asked for
# (part_on allreduce / relay) and BENCH_EXTRA (C_* of bench.sh).
mesh_contenders() {
    local i
    M_NAME=() M_KIND=() M_BIN=()
    if part_on allreduce; then M_NAME+=(bare) M_KIND+=(bare) M_BIN+=(""); fi
    M_NAME+=(ddp0) M_KIND+=(ddpnet) M_BIN+=("$DDPNET")
    if part_on relay; then M_NAME+=(relay) M_KIND+=(relay) M_BIN+=("$DDPNET"); fi
    if part_on allreduce; then
        for i in "${!C_NAME[@]}"; do
            case " ${EXTRA_NAMES[*]} " in *" ${C_NAME[i]} "*) ;; *) continue ;; esac
            # Nebula runs in the two-node part only (its mesh needs a
            # certificate per node and is not what all_reduce compares).
            [ "${C_KIND[i]}" = wg ] || continue
            M_NAME+=("${C_NAME[i]}") M_KIND+=(wg) M_BIN+=("${C_BIN[i]}")
        done
    fi
}

mesh_testbed() {
    local n hub=${BENCH_PFX}hub
    ip netns add "$hub" || fail "cannot create namespace $hub"
    BENCH_NETNS+=("$hub")
    ip -n "$hub" link set lo up
    ip -n "$hub" link add br0 type bridge forward_delay 0 stp_state 0 || fail "cannot create the bridge"
    ip -n "$hub" link set br0 up
    for n in "${MESH_NODES[@]}"; do
        bench_node "$n"
        ip -n "$hub" link add "p-$n" type veth peer name eth0 netns "$BENCH_PFX$n" ||
            fail "node $n: cannot create its link to the hub"
        ip -n "$hub" link set "p-$n" mtu "$UL_MTU" master br0 up || fail "hub: cannot attach p-$n"
        ip -n "$BENCH_PFX$n" link set eth0 mtu "$UL_MTU" || fail "node $n: cannot set MTU"
        ip -n "$BENCH_PFX$n" addr add "$(mesh_ul "$n")/24" dev eth0 || fail "node $n: cannot add its address"
        ip -n "$BENCH_PFX$n" link set eth0 up || fail "node $n: cannot bring eth0 up"
    done
    bench_pin_neighbours "m1:eth0:$(mesh_ul m1)" "m2:eth0:$(mesh_ul m2)" "m3:eth0:$(mesh_ul m3)"
    mesh_hub_ok m1 m2 && mesh_hub_ok m1 m3 && mesh_hub_ok m2 m3
}

mesh_hub_ok() {
    wait_for 15 nx "$1" ping -n -c 1 -W 1 "$(mesh_ul "$2")" && return 0
    fail "the hub does not carry ping $1 -> $2: $(nx "$1" ping -n -c 1 -W 1 "$(mesh_ul "$2")" 2>&1 | tail -n 2 | tr '\n' ' ');" \
        "$1's neighbours: $(nx "$1" ip neigh show dev eth0 | tr '\n' ';')"
}

# --- bringing contenders up and down --------------------------------------

# mesh_up KIND BIN: sets MESH_IF, MESH_ADDR (m1's, m2's, m3's addresses on
# it) and MESH_PIDS; on failure returns 1 with MESH_WHY.
mesh_up() {
    local kind=$1 bin=$2 n
    MESH_WHY="" MESH_PIDS="" MESH_IF=ddp0 MESH_ADDR=()
    for n in "${MESH_NODES[@]}"; do MESH_ADDR+=("$(mesh_tn "$n")"); done
    case "$kind" in
    bare)   MESH_IF=eth0 MESH_ADDR=()
            for n in "${MESH_NODES[@]}"; do MESH_ADDR+=("$(mesh_ul "$n")"); done
            return 0 ;;
    ddpnet) mesh_ddp_up || return 1 ;;
    relay)  mesh_block m1 m2 && mesh_block m2 m1 || return 1
            mesh_ddp_up "$bin" || return 1 ;;
    wg)     MESH_IF=wg0; mesh_wg_up "$bin" || return 1 ;;
    *)      MESH_WHY="unknown kind $kind"; return 1 ;;
    esac
    # Every pair, both ways: the first packet waits for a handshake (and,
    # relayed, for the direct path to be given up: 3 s).
    mesh_pings_ok 20 || return 1
    if [ "$kind" = relay ]; then
        if ! wait_for 20 mesh_path_is m1 m2 relay m3 || ! wait_for 10 mesh_path_is m2 m1 relay m3; then
            MESH_WHY="m1 <-> m2 not relayed via m3 (m1 sees $(mesh_path m1 m2), m2 sees $(mesh_path m2 m1))"
            return 1
        fi
    elif [ "$kind" = ddpnet ]; then
        if ! wait_for 10 mesh_path_is m1 m2 direct || ! wait_for 10 mesh_path_is m2 m1 direct; then
            MESH_WHY="m1 <-> m2 not direct (m1 sees $(mesh_path m1 m2), m2 sees $(mesh_path m2 m1))"
            return 1
        fi
    fi
}

mesh_down() {
    case "$1" in
    ddpnet) mesh_ddp_down ;;
    relay)  mesh_ddp_down; mesh_unblock m1; mesh_unblock m2 ;;
    wg)     mesh_wg_down ;;
    esac
    return 0
}

# mesh_pings_ok SECONDS: every node reaches both others on MESH_ADDR.
mesh_pings_ok() {
    local secs=$1 i j
    for i in 0 1 2; do
        for j in 0 1 2; do
            [ "$i" != "$j" ] || continue
            if ! nx "${MESH_NODES[i]}" ping -n -c 1 -i 0.2 -w "$secs" "${MESH_ADDR[j]}" >"$T/mesh-warmup.out" 2>&1; then
                MESH_WHY="no ping ${MESH_NODES[i]} -> ${MESH_NODES[j]} (${MESH_ADDR[j]} on $MESH_IF) within $secs s"
                return 1
            fi
        done
    done
}

# mesh_block NODE PEER: NODE drops everything from and to PEER's underlay
# address (as tests/e2e/hostile_member.sh cuts node-a from node-b).
mesh_block() {
    local out
    out=$(nx "$1" nft -f - 2>&1 <<EOF
table inet benchblk {
    chain input {
        type filter hook input priority filter; policy accept;
        ip saddr $(mesh_ul "$2") counter drop
    }
    chain output {
        type filter hook output priority filter; policy accept;
        ip daddr $(mesh_ul "$2") counter drop
    }
}
EOF
) || { MESH_WHY="$1: nftables refused the blocking rules: $out"; return 1; }
    if nx "$1" ping -n -c 1 -W 1 "$(mesh_ul "$2")" >/dev/null 2>&1; then
        MESH_WHY="$1 still reaches $2 with the blocking rules in place"
        return 1
    fi
}

mesh_unblock() {
    nx "$1" nft delete table inet benchblk >/dev/null 2>&1
    return 0
}

mesh_cluster() {
    local n
    {
        printf '# written by bench/mesh.sh\n[cluster]\n'
        printf 'network = %s\nport = %s\nmtu = %s\n' "$MESH_NET" "$WG_PORT" "$TN_MTU"
        for n in "${MESH_NODES[@]}"; do
            printf '\n[node bench-%s]\npublic-key = %s\naddress = %s\nendpoint = %s:%s\n' \
                "$n" "$(cat "$T/$n/pub")" "$(mesh_tn "$n")" "$(mesh_ul "$n")" "$WG_PORT"
        done
    } >"$T/mesh.conf"
}

# mesh_ddp_up [env=VAR=VALUE,...]: env= (a variant of the flows part,
# flows.sh) puts the variables in the daemons' environment; DDPNET=PATH
# among them runs that build.
MESH_DDP_BIN=""
mesh_ddp_up() {
    local n pid roots="" vars=() kv
    MESH_DDP_BIN=$DDPNET
    case "${1:-}" in
    env=*)
        IFS=, read -r -a vars <<<"${1#env=}"
        for kv in "${vars[@]}"; do
            case "$kv" in DDPNET=*) MESH_DDP_BIN=${kv#DDPNET=} ;; esac
        done ;;
    esac
    [ -f "$T/mesh.conf" ] || mesh_cluster
    for n in "${MESH_NODES[@]}"; do
        # BENCH_DDPNET_ENV: the daemons' environment (DDPNET_SHARDS=8 ...).
        if ! nx "$n" env ${BENCH_DDPNET_ENV:-} "${vars[@]}" timeout 30 "$MESH_DDP_BIN" up -c "$T/mesh.conf" -k "$T/$n/key" \
                --run-dir "$T/$n/run" --hosts-file "$T/$n/hosts" >"$T/$n/ddpnet-up.log" 2>&1; then
            MESH_WHY="ddpnet up in node $n failed: $(tail -n 2 "$T/$n/ddpnet-up.log")"
            return 1
        fi
        pid=$(node_daemon "$n")
        if [ -z "$pid" ] || gone "$pid"; then
            MESH_WHY="node $n: no running daemon in $T/$n/run/ddp0.state"
            return 1
        fi
        roots="$roots $pid"
    done
    MESH_PIDS=$(proc_tree $roots)
}


mesh_ddp_down() {
    local n pid pids=""
    for n in "${MESH_NODES[@]}"; do pids="$pids $(node_daemon "$n")"; done
    for n in "${MESH_NODES[@]}"; do
        [ -f "$T/$n/run/ddp0.state" ] || nx "$n" ip link show ddp0 >/dev/null 2>&1 || continue
        nx "$n" timeout 20 "${MESH_DDP_BIN:-$DDPNET}" down --run-dir "$T/$n/run" >"$T/$n/ddpnet-down.log" 2>&1 ||
            warn "ddpnet down in node $n failed: $(tail -n 2 "$T/$n/ddpnet-down.log")"
    done
    for pid in $pids; do
        wait_for 10 gone "$pid" || { warn "ddpnet daemon $pid outlived down; killing it"; kill -9 "$pid"; }
    done
}

# mesh_path NODE PEER: "PATH VIA" of PEER (bench-PEER) in NODE's status.
mesh_path() {
    local out
    out=$(nx "$1" timeout 10 "$DDPNET" status --run-dir "$T/$1/run" --json 2>&1) || { echo "(status failed)"; return 1; }
    printf '%s' "$out" | "$PY" -c '
import json, sys
try:
    doc = json.load(sys.stdin)
except ValueError:
    print("(status is not JSON)"); sys.exit(1)
row = next((p for p in doc.get("peers", []) if p.get("name") == sys.argv[1]), None)
if row is None:
    print("(no row for %s)" % sys.argv[1]); sys.exit(1)
print(row.get("path") or "-", row.get("via") or "-")' "bench-$2"
}

# mesh_path_is NODE PEER PATH [VIA]
mesh_path_is() {
    local got via=-
    [ -z "${4:-}" ] || via=bench-$4
    got=$(mesh_path "$1" "$2") || return 1
    [ "$got" = "$3 $via" ]
}

mesh_wg_up() {
    local bin=$1 n p rc out peers
    command -v wg >/dev/null 2>&1 || { MESH_WHY="missing tool: wg (wireguard-tools)"; return 1; }
    MESH_WG_PIDS=()
    for n in "${MESH_NODES[@]}"; do
        wg_start "$n" "$bin"
        rc=$?
        MESH_WG_PIDS+=("$WG_START_PID")
        [ "$rc" -eq 0 ] || { MESH_WHY=$WG_START_WHY; return 1; }
    done
    for n in "${MESH_NODES[@]}"; do
        peers=()
        for p in "${MESH_NODES[@]}"; do
            [ "$p" != "$n" ] || continue
            peers+=(peer "$(cat "$T/$p/pub")" endpoint "$(mesh_ul "$p"):$WG_PORT" allowed-ips "$(mesh_tn "$p")/32")
        done
        out=$(nx "$n" timeout 10 wg set wg0 private-key "$T/$n/key" listen-port "$WG_PORT" "${peers[@]}" 2>&1) ||
            { MESH_WHY="wg set in node $n failed: $out"; return 1; }
        out=$( { nx "$n" ip addr add "$(mesh_tn "$n")/24" dev wg0 &&
                 nx "$n" ip link set wg0 mtu "$TN_MTU" up; } 2>&1) ||
            { MESH_WHY="node $n: cannot configure wg0: $out"; return 1; }
    done
    MESH_PIDS=$(proc_tree "${MESH_WG_PIDS[@]}")
}

mesh_wg_down() {
    local n pid
    for n in "${MESH_NODES[@]}"; do nx "$n" ip link del wg0 >/dev/null 2>&1; done
    for pid in "${MESH_WG_PIDS[@]}"; do reap "$pid" 5; done
    MESH_WG_PIDS=()
    for n in "${MESH_NODES[@]}"; do rm -f "$T/$n/run/wg0.sock"; done
}

# --- measuring --------------------------------------------------------------

# mesh_allreduce OUT.json LOGTAG: torchrun on the three nodes (static
# rendezvous at m1's MESH_ADDR, Gloo pinned to MESH_IF); rank 0 writes OUT.
mesh_allreduce() {
    local out=$1 tag=$2 i n pids=() rc failed=""
    MESH_PORT=$(( MESH_PORT + 1 )); [ "$MESH_PORT" -lt 29500 ] || MESH_PORT=29401
    rm -f "$out"
    # --redirects and --tee: Debian's torch 1.13 on Python 3.11 cannot take
    # 0 (none) or 3 (both), only one stream each: the workers' stdout goes
    # to the log directory, their stderr there and to $T/NODE/TAG.out.
    for i in 0 1 2; do
        n=${MESH_NODES[i]}
        nx "$n" timeout "$BENCH_AR_TIMEOUT" env GLOO_SOCKET_IFNAME="$MESH_IF" OMP_NUM_THREADS=1 \
            AR_OUT="$out" AR_BIG_BYTES="$BENCH_AR_BIG" AR_SMALL_BYTES="$BENCH_AR_SMALL" \
            AR_BIG_ITERS="$BENCH_AR_ITERS" AR_SMALL_BATCHES="$BENCH_AR_BATCHES" \
            AR_SMALL_ITERS="$BENCH_AR_SMALL_ITERS" \
            torchrun --nnodes 3 --nproc_per_node 1 --node_rank "$i" \
                --master_addr "${MESH_ADDR[0]}" --master_port "$MESH_PORT" --max_restarts 0 --monitor_interval 0.2 \
                --redirects 1 --tee 2 --log_dir "$T/$n/torchrun-logs" \
                "$BENCH_DIR/allreduce.py" >"$T/$n/$tag.out" 2>&1 &
        pids+=("$!")
        BENCH_PIDS+=("$!")
    done
    for i in 0 1 2; do
        rc=0; wait "${pids[i]}" || rc=$?
        [ "$rc" -eq 0 ] || failed="$failed ${MESH_NODES[i]}(exit $rc)"
    done
    if [ -n "$failed" ]; then
        MESH_WHY="torchrun failed on:$failed: $(grep -h -E '^[A-Za-z.]*(Error|Exception)' "$T"/m?/"$tag".out | tail -n 1)"
        return 1
    fi
    [ -s "$out" ] || { MESH_WHY="torchrun wrote no result"; return 1; }
}

# mesh_row ROUND CONTENDER METRIC VALUE [NOTE]
mesh_row() {
    printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" >>"$MESH_TSV"
}

# mesh_stream ROUND NAME CPU-LABEL CPU-PIDS: one stream m1 -> m2 and a ping;
# CPU of CPU-PIDS over the stream, per GB received.
mesh_stream() {
    local r=$1 name=$2 label=$3 pids=$4 dir=$T/mesh-r$r-$name res t0 t1 gbps=NA cpu=NA
    mkdir -p "$dir"
    t0=$(cpu_ticks $pids) || t0=""
    if res=$(iperf_run m1 m2 "${MESH_ADDR[1]}" "$dir/stream.json"); then
        set -- $res
        gbps=$(calc "$1 / 1e9")
        mesh_row "$r" "$name" stream_gbps "$gbps"
        mesh_row "$r" "$name" stream_bytes "$2"
        if [ -n "$t0" ] && t1=$(cpu_ticks $pids) && [ "$2" -gt 0 ]; then
            cpu=$(calc "($t1 - $t0) / $CLK_TCK / ($2 / 1e9)")
            mesh_row "$r" "$name" "$label" "$cpu"
        else
            mesh_row "$r" "$name" note "" "a daemon ended during the stream"
        fi
    else
        mesh_row "$r" "$name" note "" "iperf3 m1 -> m2 failed"
    fi
    MESH_LAST="1 stream $(short "$gbps") Gbit/s, $label $(short "$cpu")"
    mesh_ping "$r" "$name" "$dir"
}

mesh_ping() {
    local r=$1 name=$2 dir=$3 res
    if res=$(ping_run m1 "${MESH_ADDR[1]}" "$dir/ping.out" "mesh-$name"); then
        set -- $res
        mesh_row "$r" "$name" ping_avg_us "$1"
        mesh_row "$r" "$name" ping_p99_us "$2"
        MESH_LAST="$MESH_LAST; ping $1 / $2 µs"
    else
        mesh_row "$r" "$name" note "" "no ping replies m1 -> m2"
    fi
}

# mesh_measure ROUND INDEX: one contender of the three-node testbed.
mesh_measure() {
    local r=$1 i=$2 name=${M_NAME[$2]} kind=${M_KIND[$2]} bin=${M_BIN[$2]}
    local out=$T/mesh-r$r-$name-ar.json said="" relay_pids began=$SECONDS
    MESH_LAST=""
    if ! mesh_up "$kind" "$bin"; then
        warn "round $r $name (3 nodes): setup failed: $MESH_WHY"
        mesh_row "$r" "$name" note "" "setup failed: $MESH_WHY"
        mesh_down "$kind"
        return
    fi
    if part_on allreduce && [ "$kind" != relay ]; then
        if mesh_allreduce "$out" "ar-r$r-$name"; then
            "$PY" - "$out" "$r" "$name" >>"$MESH_TSV" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
r, name = sys.argv[2], sys.argv[3]
for s in d["big_s"]:
    print("%s\t%s\tar_big_s\t%.6f\t" % (r, name, s))
for s in d["small_s"]:
    print("%s\t%s\tar_small_s\t%.9f\t" % (r, name, s))
print("%s\t%s\tar_big_first_s\t%.6f\t" % (r, name, d["big_first_s"]))
print("%s\t%s\tar_big_bytes\t%d\t" % (r, name, d["big_bytes"]))
print("%s\t%s\tar_small_bytes\t%d\t" % (r, name, d["small_bytes"]))
PYEOF
            said=$("$PY" -c '
import json, statistics, sys
d = json.load(open(sys.argv[1]))
print("all_reduce %.0f MiB %.3f s, %.0f KiB %.3f ms (medians)" % (d["big_bytes"] / 2**20, statistics.median(d["big_s"]),
      d["small_bytes"] / 2**10, 1e3 * statistics.median(d["small_s"])))' "$out")
        else
            warn "round $r $name (3 nodes): all_reduce: $MESH_WHY"
            mesh_row "$r" "$name" note "" "all_reduce: $MESH_WHY"
            said="all_reduce failed"
        fi
    fi
    if part_on relay; then
        case "$kind" in
        ddpnet)
            mesh_stream "$r" "$name" cpu_ends_s_per_gb \
                "$(proc_tree $(node_daemon m1) $(node_daemon m2))"
            said="${said:+$said; }direct m1 -> m2: $MESH_LAST" ;;
        relay)
            relay_pids=$(proc_tree "$(node_daemon m3)")
            mesh_stream "$r" "$name" cpu_relay_s_per_gb "$relay_pids"
            said="${said:+$said; }relayed m1 -> m3 -> m2: $MESH_LAST"
            # The relay must still be the path after the stream.
            mesh_path_is m1 m2 relay m3 ||
                mesh_row "$r" "$name" note "" "after the stream m1 sees m2 at $(mesh_path m1 m2)" ;;
        esac
    fi
    mesh_down "$kind"
    say "round $r/$BENCH_ROUNDS $(printf '%-14s' "$name (3 nodes):") ${said:-nothing measured} ($(( SECONDS - began )) s)"
}
