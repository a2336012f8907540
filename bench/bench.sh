#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make bench`: ddpnet side by side with the bare veth and other userspace
# WireGuards, on one two-namespace testbed (see lib.sh), in interleaved
# rounds so that the noise of a shared machine falls on every contender
# alike. The parts (BENCH_ONLY picks some):
#   pair       two nodes: one TCP stream each way, 4 streams, ping RTT
#              (average and p99), CPU seconds per GB of both daemons during
#              the one-stream test, and their idle CPU (tunnels.sh)
#   allreduce  three nodes: Gloo all_reduce under torchrun, 64 MiB and
#              64 KiB per rank, bare, over ddp0 and over each BENCH_EXTRA
#              wireguard-go (mesh.sh)
#   relay      three nodes: one stream and ping m1 -> m2 over ddp0, direct
#              and through m3; the relay's CPU per GB forwarded (mesh.sh)
#   aead       the AEAD floor (build/bench/aead_bench)
#   shards     two nodes: one thread inline (DDPNET_SHARDS=1) and
#              DDPNET_SHARDS=2, 1 and 4 streams, CPU per GB and each
#              daemon's busiest thread (shards.sh)
#   cores      two nodes, only when asked for: each daemon confined to N
#              cores (taskset; N shards), iperf3 -P 4 and -P 8, Gbit/s
#              and CPU per GB per N beside the bare veth (cores.sh)
#   wan        two nodes behind a router that delays and limits, only when
#              asked for and not with pair or cores: long fat paths, bare
#              TCP beside ddp0 and each BENCH_EXTRA WireGuard (wan.sh)
#   flows      two nodes behind a router, only when asked for and not with
#              pair, cores, shards or wan: each 5-tuple policed (issue 57),
#              direct and through a cone NAT, and no cap; bare TCP, ddp0,
#              ddp0 with one flow and each variant; the relayed
#              path with each variant too (the relay part comes with it;
#              flows.sh)
#   rules      two nodes of their own: a dozen rules and three groups
#              beside none, reloaded in turn, one stream, rate and CPU per
#              GB (rules.sh, its own process; issue 61's target)
# Then medians, ratios, the targets of issues 4, 19, 32, 45 and 61 (report.sh;
# issue 45's 16-core block: report_issue45).
# Raw rows go to $BENCH_OUT/results.tsv (pair) and $BENCH_OUT/mesh.tsv
# (three nodes), $BENCH_OUT/cores.tsv (cores), every echo's round trip to
# $BENCH_OUT/rtt/. See
# bench/README.md for the knobs.
set -u
. "$(dirname "$0")/lib.sh"
. "$BENCH_DIR/tunnels.sh"
. "$BENCH_DIR/mesh.sh"
. "$BENCH_DIR/cores.sh"
. "$BENCH_DIR/wan.sh"
. "$BENCH_DIR/shards.sh"
. "$BENCH_DIR/flows.sh"
. "$BENCH_DIR/report.sh"

usage_error() { printf 'bench: %s\n' "$*" >&2; exit 2; }

# positive_int NAME VALUE
positive_int() {
    case "$2" in
    ''|*[!0-9]*|0*) usage_error "$1=$2: want a positive integer" ;;
    esac
}

ALL_PARTS="pair shards allreduce relay aead rules"   # run when BENCH_ONLY is empty
KNOWN_PARTS="$ALL_PARTS cores wan flows"   # cores, wan, flows: only when asked for
PARTS=""
part_on() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
part_off() { PARTS=$(printf ' %s ' $PARTS | sed "s/ $1 / /"); PARTS=$(echo $PARTS); }

bench_config() {
    local quick=${BENCH_QUICK:-0} r=5 s=5 idle=5 ari=3 arb=5 p
    if [ "$quick" = 1 ]; then r=1 s=2 idle=2 ari=2 arb=3; fi
    # flows alone (or with relay, which it brings): 2 rounds of about 5 minutes.
    case ",${BENCH_ONLY:-}," in ,flows,|,flows,relay,|,relay,flows,) [ "$quick" = 1 ] || r=2 ;; esac
    BENCH_ROUNDS=${BENCH_ROUNDS:-$r}
    BENCH_SECONDS=${BENCH_SECONDS:-$s}
    BENCH_IDLE_SECONDS=${BENCH_IDLE_SECONDS:-$idle}
    BENCH_PINGS=${BENCH_PINGS:-200}
    BENCH_PING_MS=${BENCH_PING_MS:-10}     # echoes this many ms apart
    BENCH_ONLY=${BENCH_ONLY:-}
    for p in ${BENCH_ONLY//,/ }; do
        case " $KNOWN_PARTS " in *" $p "*) ;; *) usage_error "BENCH_ONLY: no part '$p' (parts: ${KNOWN_PARTS// /,})" ;; esac
        part_on "$p" || PARTS="$PARTS $p"
    done
    [ -n "$BENCH_ONLY" ] || PARTS=$ALL_PARTS
    PARTS=$(echo $PARTS)
    [ -n "$PARTS" ] || usage_error "BENCH_ONLY=$BENCH_ONLY names no part"
    BENCH_AR_BIG=${BENCH_AR_BIG:-67108864}
    BENCH_AR_SMALL=${BENCH_AR_SMALL:-65536}
    BENCH_AR_ITERS=${BENCH_AR_ITERS:-$ari}
    BENCH_AR_BATCHES=${BENCH_AR_BATCHES:-$arb}
    BENCH_AR_SMALL_ITERS=${BENCH_AR_SMALL_ITERS:-100}
    BENCH_AR_TIMEOUT=${BENCH_AR_TIMEOUT:-300}
    BENCH_WGGO=${BENCH_WGGO:-/usr/bin/wireguard-go}
    BENCH_OUT=${BENCH_OUT:-$BENCH_ROOT/build/bench}
    # Empty means "did not build" (the Makefile says so); unset means the default.
    BENCH_AEAD_BIN=${BENCH_AEAD_BIN-$BENCH_ROOT/build/bench/aead_bench}
    BENCH_STRICT=${BENCH_STRICT:-0}
    # VAR=VALUE words in the environment of ddpnet's daemons of the pair,
    # allreduce and relay parts (the configuration measured there, e.g.
    # DDPNET_SHARDS=8); cores and shards set their own.
    BENCH_DDPNET_ENV=${BENCH_DDPNET_ENV:-}
    for p in $BENCH_DDPNET_ENV; do
        [[ "$p" =~ ^[A-Za-z_][A-Za-z0-9_]*=[^,]*$ ]] || usage_error "BENCH_DDPNET_ENV: '$p' is not VAR=VALUE"
    done
    positive_int BENCH_ROUNDS "$BENCH_ROUNDS"
    positive_int BENCH_SECONDS "$BENCH_SECONDS"
    positive_int BENCH_IDLE_SECONDS "$BENCH_IDLE_SECONDS"
    positive_int BENCH_PINGS "$BENCH_PINGS"
    positive_int BENCH_PING_MS "$BENCH_PING_MS"
    positive_int BENCH_AR_BIG "$BENCH_AR_BIG"
    positive_int BENCH_AR_SMALL "$BENCH_AR_SMALL"
    positive_int BENCH_AR_ITERS "$BENCH_AR_ITERS"
    positive_int BENCH_AR_BATCHES "$BENCH_AR_BATCHES"
    positive_int BENCH_AR_SMALL_ITERS "$BENCH_AR_SMALL_ITERS"
    positive_int BENCH_AR_TIMEOUT "$BENCH_AR_TIMEOUT"
    if part_on cores; then cores_config; fi
    if part_on shards; then shards_config; fi
    if part_on wan && { part_on pair || part_on cores || part_on shards; }; then
        usage_error "BENCH_ONLY: wan runs its own nodes a and b: not with pair, cores or shards"
    fi
    if part_on flows; then
        # Its "no loss without a cap" includes the relayed path.
        part_on relay || PARTS="$PARTS relay"
        { part_on pair || part_on cores || part_on shards || part_on wan; } &&
            usage_error "BENCH_ONLY: flows runs its own nodes a, b and r: not with pair, cores, shards or wan"
        flows_config
    fi
}

# mesh_parts_usable: drops a three-node part this machine cannot run, and
# says why (the report then shows it as not measured).
mesh_parts_usable() {
    if part_on allreduce; then
        if ! command -v torchrun >/dev/null 2>&1; then
            PART_WHY_allreduce="no torchrun (apt-get install python3-torch)"
        elif ! "$PY" -c 'import torch.distributed' 2>/dev/null; then
            PART_WHY_allreduce="$PY cannot import torch.distributed (apt-get install python3-torch)"
        fi
        if [ -n "${PART_WHY_allreduce:-}" ]; then warn "allreduce skipped: $PART_WHY_allreduce"; part_off allreduce; fi
    fi
    if part_on relay && ! command -v nft >/dev/null 2>&1; then
        PART_WHY_relay="no nft (apt-get install nftables)"
        warn "relay skipped: $PART_WHY_relay"; part_off relay
    fi
}

# The contenders, in the order each round runs them: C_NAME, C_KIND (veth,
# ddpnet, wg, or missing), C_BIN (or, for a missing one, why).
# EXTRA_NAMES: BENCH_EXTRA's names; EXTRA_WG: those of kind wg (the reports
# of issues 19 and 32 compare with WireGuards); EXTRA_KINDS: NAME=KIND.
C_NAME=() C_KIND=() C_BIN=() EXTRA_NAMES=() EXTRA_WG=() EXTRA_KINDS=()
bench_contenders() {
    local item name path kind
    C_NAME=(veth ddpnet) C_KIND=(veth ddpnet) C_BIN=("" "$DDPNET")
    C_NAME+=(wireguard-go)
    if [ -x "$BENCH_WGGO" ]; then
        C_KIND+=(wg) C_BIN+=("$BENCH_WGGO")
    else
        C_KIND+=(missing) C_BIN+=("$BENCH_WGGO not installed (apt-get install wireguard-go)")
    fi
    # BENCH_BUSY_POLL="always 0 ...": ddpnet again with each busy-poll
    # value, as contenders ddpnet-bp-VALUE (the default's cost and gain).
    for item in ${BENCH_BUSY_POLL:-}; do
        case "$item" in always|[0-9]|[0-9][0-9]|[0-9][0-9][0-9]|[0-9][0-9][0-9][0-9]|[1-5][0-9][0-9][0-9][0-9]|60000) ;;
        *) usage_error "BENCH_BUSY_POLL: '$item' is not always or 0..60000" ;; esac
        C_NAME+=("ddpnet-bp-$item") C_KIND+=(ddpnet) C_BIN+=("busy-poll=$item")
    done
    # BENCH_DDPNET_VARIANTS="NAME:VAR=VALUE,... ...": ddpnet again with
    # those variables in its environment (DDPNET_SHARDS=1, ...; DDPNET=
    # PATH runs another build), as contenders ddpnet-NAME.
    for item in ${BENCH_DDPNET_VARIANTS:-}; do
        name=${item%%:*}
        [ "$name" != "$item" ] && [ -n "$name" ] && [ -n "${item#*:}" ] ||
            usage_error "BENCH_DDPNET_VARIANTS: '$item' is not NAME:VAR=VALUE,..."
        case "$name" in *[!A-Za-z0-9._+-]*) usage_error "BENCH_DDPNET_VARIANTS: bad name '$name'" ;; esac
        C_NAME+=("ddpnet-$name") C_KIND+=(ddpnet) C_BIN+=("env=${item#*:}")
    done
    for item in ${BENCH_EXTRA:-}; do
        name=${item%%=*} path=${item#*=}
        [ "$name" != "$item" ] && [ -n "$name" ] && [ -n "$path" ] ||
            usage_error "BENCH_EXTRA: '$item' is not name=/path/to/binary"
        case "$name" in *[!A-Za-z0-9._+-]*) usage_error "BENCH_EXTRA: bad name '$name' (letters, digits, . _ + -)" ;; esac
        case " ${C_NAME[*]} " in *" $name "*) usage_error "BENCH_EXTRA: name '$name' is taken" ;; esac
        [ -f "$path" ] && [ -x "$path" ] || usage_error "BENCH_EXTRA: $name: $path is not an executable file"
        # A binary called nebula is Nebula (bench/fetch-nebula.sh); any
        # other is a userspace WireGuard run as wireguard-go is.
        kind=wg; [ "$(basename "$path")" != nebula ] || kind=nebula
        C_NAME+=("$name") C_KIND+=("$kind") C_BIN+=("$(cd "$(dirname "$path")" && pwd)/$(basename "$path")")
        EXTRA_NAMES+=("$name") EXTRA_KINDS+=("$name=$kind")
        [ "$kind" != wg ] || EXTRA_WG+=("$name")
    done
}

calc() { awk "BEGIN { printf \"%.4f\", $1 }"; }
short() { case "$1" in NA) echo NA ;; *) awk -v v="$1" 'BEGIN { printf "%.2f", v }' ;; esac; }

# measure ROUND INDEX: one contender, up, measured, down; appends its row.
measure() {
    local r=$1 i=$2 name=${C_NAME[$2]} kind=${C_KIND[$2]} bin=${C_BIN[$2]}
    local ab=NA ba=NA p4=NA p8=NA pavg=NA p99=NA lost=NA cpu=NA idle=NA bytes=NA cpus=NA note=""
    local loop=NA l0="" l1 dir=$T/r$r-$name pids t0 t1 res began=$SECONDS
    mkdir -p "$dir"
    if [ "$kind" = missing ]; then
        note=$bin
    elif ! { [ "$kind" != ddpnet ] || DDP_UP_ENV=$BENCH_DDPNET_ENV; tunnel_up "$kind" "$bin"; }; then
        note="setup failed: $TUN_WHY"
        warn "round $r $name: $note"
    else
        pids=$TUN_PIDS
        t0=""; [ -z "$pids" ] || t0=$(cpu_ticks $pids)
        [ -z "$TUN_LOOPS" ] || l0=$(loop_ticks $TUN_LOOPS) || l0=""
        if res=$(iperf_run a b "$TUN_DEST" "$dir/ab.json"); then
            set -- $res
            ab=$(calc "$1 / 1e9") bytes=$2
            if [ -n "$l0" ] && l1=$(loop_ticks $TUN_LOOPS) && [ "$bytes" -gt 0 ]; then
                loop=$(calc "($l1 - $l0) / $CLK_TCK / ($bytes / 1e9)")
            fi
            if [ -n "$t0" ] && t1=$(cpu_ticks $pids) && [ "$bytes" -gt 0 ]; then
                cpus=$(calc "($t1 - $t0) / $CLK_TCK")
                cpu=$(calc "$cpus / ($bytes / 1e9)")
            elif [ -n "$pids" ]; then
                note="a daemon ended during the one-stream test"
            fi
        fi
        res=$(iperf_run a b "$TUN_DEST" "$dir/ba.json" -R) && { set -- $res; ba=$(calc "$1 / 1e9"); }
        res=$(iperf_run a b "$TUN_DEST" "$dir/p4.json" -P 4) && { set -- $res; p4=$(calc "$1 / 1e9"); }
        res=$(iperf_run a b "$TUN_DEST" "$dir/p8.json" -P 8) && { set -- $res; p8=$(calc "$1 / 1e9"); }
        if res=$(ping_run a "$TUN_DEST" "$dir/ping.out" "$name"); then
            set -- $res; pavg=$1 p99=$2 lost=$3
        else
            warn "round $r $name: no ping replies: $(tail -n 2 "$dir/ping.out")"
        fi
        if [ -n "$pids" ]; then
            # Let the last test's stragglers (acks, keepalives) pass first.
            sleep 1
            if t0=$(cpu_ticks $pids); then
                sleep "$BENCH_IDLE_SECONDS"
                t1=$(cpu_ticks $pids) && idle=$(calc "100 * ($t1 - $t0) / $CLK_TCK / $BENCH_IDLE_SECONDS")
            fi
        fi
    fi
    tunnel_down "$kind"
    DDP_UP_ENV=""
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$name" "$ab" "$ba" "$p4" "$p8" \
        "$pavg" "$p99" "$lost" "$cpu" "$idle" "$bytes" "$cpus" "$loop" "$note" >>"$TSV"
    say "$(printf 'round %s/%s %-14s 1 stream %s / %s, 4 / 8 streams %s / %s Gbit/s; ping %s / %s µs, lost %s; %s CPU-s/GB; idle %s %% (%s s)' \
        "$r" "$BENCH_ROUNDS" "$name:" "$(short "$ab")" "$(short "$ba")" "$(short "$p4")" "$(short "$p8")" \
        "$pavg" "$p99" "$lost" "$(short "$cpu")" "$(short "$idle")" "$(( SECONDS - began ))")"
}

# aead_floor: runs aead_bench once, in this run; sets AEAD_STATUS.
aead_floor() {
    local rc
    AEAD_OUT=$BENCH_OUT/aead_bench.txt
    rm -f "$AEAD_OUT"
    if [ -z "$BENCH_AEAD_BIN" ]; then
        AEAD_STATUS="aead_bench did not build"
    elif [ ! -x "$BENCH_AEAD_BIN" ]; then
        AEAD_STATUS="$BENCH_AEAD_BIN does not exist yet"
    else
        say "AEAD floor: running $BENCH_AEAD_BIN"
        timeout 600 "$BENCH_AEAD_BIN" >"$AEAD_OUT" 2>"$T/aead.err"
        rc=$?
        if [ "$rc" -eq 0 ]; then AEAD_STATUS=ok
        else AEAD_STATUS="$BENCH_AEAD_BIN failed (exit $rc): $(tail -n 1 "$T/aead.err")"; fi
    fi
}

main() {
    local r i rc=0 rc2 rc3 t_start=$SECONDS
    bench_config
    bench_contenders
    bench_init
    mesh_parts_usable
    mesh_contenders
    if part_on flows; then
        PART_WHY_flows=$(flows_usable)
        if [ -n "$PART_WHY_flows" ]; then warn "flows skipped: $PART_WHY_flows"; part_off flows
        else flows_contenders; flows_mesh_variants; fi
    fi
    mkdir -p "$BENCH_OUT" || fail "cannot create $BENCH_OUT"
    rm -rf "$BENCH_OUT/rtt"; mkdir -p "$BENCH_OUT/rtt"
    TSV=$BENCH_OUT/results.tsv MESH_TSV=$BENCH_OUT/mesh.tsv
    printf 'round\tcontender\tab_gbps\tba_gbps\tp4_gbps\tp8_gbps\tping_avg_us\tping_p99_us\tping_lost\tcpu_s_per_gb\tidle_pct_core\tab_bytes\tab_cpu_s\tloop_cpu_s_per_gb\tnote\n' >"$TSV"
    printf 'round\tcontender\tmetric\tvalue\tnote\n' >"$MESH_TSV"
    say "parts: ${PARTS// /,} (BENCH_ONLY); $BENCH_ROUNDS rounds"
    part_on pair && say "two nodes: ${BENCH_SECONDS} s per iperf3 test, $BENCH_PINGS echoes $BENCH_PING_MS ms apart; contenders: ${C_NAME[*]}"
    if [ -n "$BENCH_DDPNET_ENV" ] && { part_on pair || part_on allreduce || part_on relay || part_on wan; }; then
        say "ddpnet's daemons (pair, allreduce, relay, wan): $BENCH_DDPNET_ENV (BENCH_DDPNET_ENV)"
    fi
    if part_on allreduce || part_on relay; then
        say "three nodes: contenders ${M_NAME[*]}$(part_on allreduce && printf '; all_reduce %s + %s bytes per rank, %s timed of the first, %s batches of %s of the second' \
            "$BENCH_AR_BIG" "$BENCH_AR_SMALL" "$BENCH_AR_ITERS" "$BENCH_AR_BATCHES" "$BENCH_AR_SMALL_ITERS")"
    fi
    say "machine: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), kernel $(uname -r), load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (a shared machine: other work skews every contender alike, not the ratios)"
    part_on cores && cores_plan
    if part_on pair || part_on shards || cores_active; then bench_testbed; fi
    if part_on allreduce || part_on relay; then mesh_testbed; fi
    if part_on flows; then flows_begin; fi
    for (( r = 1; r <= BENCH_ROUNDS; r++ )); do
        if part_on pair; then
            for i in "${!C_NAME[@]}"; do measure "$r" "$i"; done
        fi
        if part_on allreduce || part_on relay; then
            for i in "${!M_NAME[@]}"; do mesh_measure "$r" "$i"; done
        fi
        if part_on shards; then shards_measure "$r"; fi
        if cores_active; then cores_measure "$r"; fi
        if part_on flows; then flows_measure_round "$r"; fi
    done
    # rules.sh runs its own rounds on its own namespaces (named by its pid).
    if part_on rules; then
        BENCH_ROUNDS=$BENCH_ROUNDS BENCH_SECONDS=$BENCH_SECONDS \
            bash "$BENCH_DIR/rules.sh" 2>&1 | tee "$BENCH_OUT/rules.log"
        rc3=${PIPESTATUS[0]}
        [ "$rc3" -eq 0 ] || PART_WHY_rules="rules.sh failed (exit $rc3; $BENCH_OUT/rules.log)"
    fi
    say "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    AEAD_STATUS="not run (BENCH_ONLY=$BENCH_ONLY)"
    part_on aead && aead_floor
    if part_on pair || part_on aead; then
        report_print "$TSV" "${AEAD_OUT:-}" "$AEAD_STATUS" "${EXTRA_NAMES[@]}"
        rc=$?
    fi
    rc2=0
    # wan, rules or flows (with the relay it brings) alone has none of their
    # figures: their n/a lines would be noise.
    if [ "$PARTS" != wan ] && [ "$PARTS" != rules ] && { ! part_on flows || part_on allreduce; }; then
        report_training "$TSV" "$MESH_TSV" "$BENCH_OUT/rtt" "$PARTS" \
            "${PART_WHY_allreduce:-}" "${PART_WHY_relay:-}" "${EXTRA_WG[@]}"
        rc2=$?
        report_issue32 "$TSV" "$MESH_TSV" "${CORES_TSV:-}" "$BENCH_OUT/rtt" "$PARTS" \
            "${PART_WHY_relay:-}" "${EXTRA_KINDS[@]}"
        rc3=$?
        if [ "$rc3" -eq 1 ]; then rc2=1; elif [ "$rc2" -eq 0 ]; then rc2=$rc3; fi
    fi
    part_on cores && cores_report
    # BENCH_ISSUE45=0: device-run.sh runs one part at a time and prints
    # the block once, from all of them.
    if [ "${BENCH_ISSUE45:-1}" != 0 ] && { part_on pair || part_on allreduce || part_on cores; }; then
        local nr="not run (BENCH_ONLY)"
        report_issue45 pair="$TSV" mesh="$MESH_TSV" cores="${CORES_TSV:-}" env="$BENCH_DDPNET_ENV" \
            pair_why="$(part_on pair || echo "part pair $nr")" \
            allreduce_why="$(part_on allreduce || echo "${PART_WHY_allreduce:-part allreduce $nr}")" \
            cores_why="$(part_on cores || echo "part cores $nr")${CORES_WHY:+part cores: $CORES_WHY}" \
            cores_left="$CORES_LEFT"
        rc3=$?
        if [ "$rc3" -eq 1 ]; then rc2=1; elif [ "$rc2" -eq 0 ]; then rc2=$rc3; fi
    fi
    if part_on shards; then
        shards_report
        rc3=$?
        if [ "$rc3" -eq 1 ]; then rc2=1; fi
    fi
    if part_on wan; then
        wan_main
        rc3=$?
        if [ "$rc3" -eq 1 ]; then rc2=1; elif [ "$rc2" -eq 0 ]; then rc2=$rc3; fi
    fi
    if part_on flows; then
        flows_report
        rc3=$?
        if [ "$rc3" -eq 1 ]; then rc2=1; elif [ "$rc2" -eq 0 ]; then rc2=$rc3; fi
    fi
    if part_on rules; then
        report_rules "$BENCH_OUT/rules.log" "${PART_WHY_rules:-}"
        rc3=$?
        if [ "$rc3" -eq 1 ]; then rc2=1; elif [ "$rc2" -eq 0 ]; then rc2=$rc3; fi
    fi
    if [ "$rc" -eq 1 ] || [ "$rc2" -eq 1 ]; then rc=1; elif [ "$rc" -eq 0 ]; then rc=$rc2; fi
    say "raw rows: $TSV (two nodes), $MESH_TSV (three nodes),$(part_on cores && printf ' %s (cores),' "$CORES_TSV") $BENCH_OUT/rtt/ (every echo); $(( SECONDS - t_start )) s in all"
    [ "$BENCH_STRICT" = 1 ] || rc=0
    return "$rc"
}

main "$@"
