#!/usr/bin/env bash
# `make bench`: ddpnet side by side with the bare veth and other userspace
# WireGuards, on one two-namespace testbed (see lib.sh), in interleaved
# rounds so that the noise of a shared machine falls on every contender
# alike. Per round and contender: one TCP stream each way, 4 streams,
# ping RTT (average and p99), CPU seconds per GB of both daemons during the
# one-stream test, and their idle CPU. Then medians, ratios, the AEAD floor
# of this run and the targets of issue 4 (report.sh). Raw rows go to
# $BENCH_OUT/results.tsv. See bench/README.md for the knobs.
set -u
. "$(dirname "$0")/lib.sh"
. "$BENCH_DIR/tunnels.sh"
. "$BENCH_DIR/report.sh"

usage_error() { printf 'bench: %s\n' "$*" >&2; exit 2; }

# positive_int NAME VALUE
positive_int() {
    case "$2" in
    ''|*[!0-9]*|0*) usage_error "$1=$2: want a positive integer" ;;
    esac
}

bench_config() {
    local quick=${BENCH_QUICK:-0} r=5 s=5 idle=5
    if [ "$quick" = 1 ]; then r=1 s=2 idle=2; fi
    BENCH_ROUNDS=${BENCH_ROUNDS:-$r}
    BENCH_SECONDS=${BENCH_SECONDS:-$s}
    BENCH_IDLE_SECONDS=${BENCH_IDLE_SECONDS:-$idle}
    BENCH_PINGS=${BENCH_PINGS:-200}
    BENCH_WGGO=${BENCH_WGGO:-/usr/bin/wireguard-go}
    BENCH_OUT=${BENCH_OUT:-$BENCH_ROOT/build/bench}
    # Empty means "did not build" (the Makefile says so); unset means the default.
    BENCH_AEAD_BIN=${BENCH_AEAD_BIN-$BENCH_ROOT/build/bench/aead_bench}
    BENCH_STRICT=${BENCH_STRICT:-0}
    positive_int BENCH_ROUNDS "$BENCH_ROUNDS"
    positive_int BENCH_SECONDS "$BENCH_SECONDS"
    positive_int BENCH_IDLE_SECONDS "$BENCH_IDLE_SECONDS"
    positive_int BENCH_PINGS "$BENCH_PINGS"
}

# The contenders, in the order each round runs them: C_NAME, C_KIND (veth,
# ddpnet, wg, or missing), C_BIN (or, for a missing one, why).
C_NAME=() C_KIND=() C_BIN=() EXTRA_NAMES=()
bench_contenders() {
    local item name path
    C_NAME=(veth ddpnet) C_KIND=(veth ddpnet) C_BIN=("" "$DDPNET")
    C_NAME+=(wireguard-go)
    if [ -x "$BENCH_WGGO" ]; then
        C_KIND+=(wg) C_BIN+=("$BENCH_WGGO")
    else
        C_KIND+=(missing) C_BIN+=("$BENCH_WGGO not installed (apt-get install wireguard-go)")
    fi
    for item in ${BENCH_EXTRA:-}; do
        name=${item%%=*} path=${item#*=}
        [ "$name" != "$item" ] && [ -n "$name" ] && [ -n "$path" ] ||
            usage_error "BENCH_EXTRA: '$item' is not name=/path/to/binary"
        case "$name" in *[!A-Za-z0-9._+-]*) usage_error "BENCH_EXTRA: bad name '$name' (letters, digits, . _ + -)" ;; esac
        case " ${C_NAME[*]} " in *" $name "*) usage_error "BENCH_EXTRA: name '$name' is taken" ;; esac
        [ -f "$path" ] && [ -x "$path" ] || usage_error "BENCH_EXTRA: $name: $path is not an executable file"
        C_NAME+=("$name") C_KIND+=(wg) C_BIN+=("$(cd "$(dirname "$path")" && pwd)/$(basename "$path")")
        EXTRA_NAMES+=("$name")
    done
}

calc() { awk "BEGIN { printf \"%.4f\", $1 }"; }
short() { case "$1" in NA) echo NA ;; *) awk -v v="$1" 'BEGIN { printf "%.2f", v }' ;; esac; }

# measure ROUND INDEX: one contender, up, measured, down; appends its row.
measure() {
    local r=$1 i=$2 name=${C_NAME[$2]} kind=${C_KIND[$2]} bin=${C_BIN[$2]}
    local ab=NA ba=NA p4=NA pavg=NA p99=NA lost=NA cpu=NA idle=NA bytes=NA cpus=NA note=""
    local dir=$T/r$r-$name pids t0 t1 res
    mkdir -p "$dir"
    if [ "$kind" = missing ]; then
        note=$bin
    elif ! tunnel_up "$kind" "$bin"; then
        note="setup failed: $TUN_WHY"
        warn "round $r $name: $note"
    else
        pids=$TUN_PIDS
        t0=""; [ -z "$pids" ] || t0=$(cpu_ticks $pids)
        if res=$(iperf_run a b "$TUN_DEST" "$dir/ab.json"); then
            set -- $res
            ab=$(calc "$1 / 1e9") bytes=$2
            if [ -n "$t0" ] && t1=$(cpu_ticks $pids) && [ "$bytes" -gt 0 ]; then
                cpus=$(calc "($t1 - $t0) / $CLK_TCK")
                cpu=$(calc "$cpus / ($bytes / 1e9)")
            elif [ -n "$pids" ]; then
                note="a daemon ended during the one-stream test"
            fi
        fi
        res=$(iperf_run a b "$TUN_DEST" "$dir/ba.json" -R) && { set -- $res; ba=$(calc "$1 / 1e9"); }
        res=$(iperf_run a b "$TUN_DEST" "$dir/p4.json" -P 4) && { set -- $res; p4=$(calc "$1 / 1e9"); }
        if res=$(ping_run a "$TUN_DEST" "$dir/ping.out"); then
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
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$name" "$ab" "$ba" "$p4" \
        "$pavg" "$p99" "$lost" "$cpu" "$idle" "$bytes" "$cpus" "$note" >>"$TSV"
    say "$(printf 'round %s/%s %-14s 1 stream %s / %s, 4 streams %s Gbit/s; ping %s / %s µs, lost %s; %s CPU-s/GB; idle %s %%' \
        "$r" "$BENCH_ROUNDS" "$name:" "$(short "$ab")" "$(short "$ba")" "$(short "$p4")" \
        "$pavg" "$p99" "$lost" "$(short "$cpu")" "$(short "$idle")")"
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
    local r i rc
    bench_config
    bench_contenders
    bench_init
    mkdir -p "$BENCH_OUT" || fail "cannot create $BENCH_OUT"
    TSV=$BENCH_OUT/results.tsv
    printf 'round\tcontender\tab_gbps\tba_gbps\tp4_gbps\tping_avg_us\tping_p99_us\tping_lost\tcpu_s_per_gb\tidle_pct_core\tab_bytes\tab_cpu_s\tnote\n' >"$TSV"
    say "$BENCH_ROUNDS rounds x ${BENCH_SECONDS} s per iperf3 test; contenders: ${C_NAME[*]}"
    say "machine: $(nproc) CPUs, kernel $(uname -r), load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (a shared machine: other work skews every contender alike, not the ratios)"
    bench_testbed
    for (( r = 1; r <= BENCH_ROUNDS; r++ )); do
        for i in "${!C_NAME[@]}"; do measure "$r" "$i"; done
    done
    say "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    aead_floor
    report_print "$TSV" "${AEAD_OUT:-}" "$AEAD_STATUS" "${EXTRA_NAMES[@]}"
    rc=$?
    say "raw rows: $TSV"
    [ "$BENCH_STRICT" = 1 ] || rc=0
    return "$rc"
}

main "$@"
