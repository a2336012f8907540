# SPDX-License-Identifier: MIT
# The `cores` part of `make bench` (sourced after lib.sh and tunnels.sh):
# how ddpnet's throughput grows with the cores each daemon may use (issue
# 19: "the 1 -> N core scaling with 4 and 8 streams").
#
# On the two-node testbed of lib.sh, for each N of BENCH_CORES that fits
# (2 x N cores for the daemons and at least 2 for iperf3):
#
#   CPUs  0 .. N-1        node a's daemon and all its threads
#         N .. 2N-1       node b's daemon and all its threads
#         2Nmax .. last   iperf3, client and server, for every N alike
#                         (Nmax: the largest N measured), and for veth
#
# Each daemon is started under `taskset -c` (its threads and io_uring's
# inherit the mask), in the one mode of BENCH_CORES_MODE:
#   shards   DDPNET_SHARDS=N: N event loops, each packet run to completion
#            on one (overlay/loop/shard.h); N=1 is one thread inline
# (Mode `workers`, one loop and N-1 crypto workers, went with the workers
# in issue 58; the lanes' and workers' columns below stay, at 0, so that
# the rows of earlier runs still read.)
# Per N, mode and round: iperf3 -P S a -> b over ddp0 for each S of
# BENCH_CORES_STREAMS (default "4 8"), the receiver's rate, both daemons'
# CPU per GB and the share of a core each daemon's threads took: its main
# thread (the event loop, shard 0), its other shards (ddpnet-shard*), its
# I/O lanes and readers, its crypto workers (a thread near 100% is the
# ceiling that more cores cannot lift); in the same rounds, before them,
# the bare veth with the same streams as the reference. Rows go to
# $CORES_TSV; cores_report prints the medians per mode.
#
# BENCH_CORES_FORCE=1 also keeps an N whose daemons fit in 2 x N cores but
# leave none to iperf3: that N runs with iperf3 unpinned, sharing the
# daemons' cores (its rows say so in the iperf3 column), while the N that
# fit keep iperf3 on its own CPUs. On a 16-core machine that is N=8; on a
# small one the code path runs and the figures do not measure scaling.

CORES_CPUS=()     # the CPUs this run may use (its affinity), in order
CORES_N=()        # the N measured, ascending
CORES_IPERF=""    # taskset list for iperf3 at the N that fit; empty: not pinned
CORES_IPERF_NOW="" # the one this test uses (empty at a forced N)
CORES_FORCED=" "  # the N run without CPUs for iperf3 (BENCH_CORES_FORCE=1)
CORES_MODES=()    # BENCH_CORES_MODE, in order
CORES_STREAMS=()  # BENCH_CORES_STREAMS, ascending
CORES_WHY=""      # why nothing is measured (the report's n/a)
CORES_LEFT=""     # the N left out and why
CORES_PLAN=""     # who runs where, for the report
CORES_TSV=""
CORES_SYSFS=/sys/devices/system/cpu

cores_config() {
    local n m
    BENCH_CORES=${BENCH_CORES:-1 2 4 8}
    BENCH_CORES_FORCE=${BENCH_CORES_FORCE:-0}
    BENCH_CORES_MODE=${BENCH_CORES_MODE:-shards}
    BENCH_CORES_STREAMS=${BENCH_CORES_STREAMS:-4 8}
    for n in ${BENCH_CORES//,/ }; do positive_int BENCH_CORES "$n"; done
    [ -n "${BENCH_CORES//[, ]/}" ] || usage_error "BENCH_CORES is empty"
    CORES_MODES=()
    for m in ${BENCH_CORES_MODE//,/ }; do
        case "$m" in shards) ;;
        workers) usage_error "BENCH_CORES_MODE: workers: the crypto workers are gone (issue 58)" ;;
        *) usage_error "BENCH_CORES_MODE: '$m' is not shards" ;; esac
        case " ${CORES_MODES[*]} " in *" $m "*) ;; *) CORES_MODES+=("$m") ;; esac
    done
    [ ${#CORES_MODES[@]} -gt 0 ] || usage_error "BENCH_CORES_MODE is empty"
    for n in ${BENCH_CORES_STREAMS//,/ }; do positive_int BENCH_CORES_STREAMS "$n"; done
    mapfile -t CORES_STREAMS < <(printf '%s\n' ${BENCH_CORES_STREAMS//,/ } | sort -n -u)
    [ ${#CORES_STREAMS[@]} -gt 0 ] || usage_error "BENCH_CORES_STREAMS is empty"
}

# cpu_list_ids LIST: the CPU numbers of a kernel CPU list ("0-3,8,10-11"),
# one a line.
cpu_list_ids() {
    tr ',' '\n' <<<"$1" | awk -F- 'NF == 2 { for (i = $1; i <= $2; i++) print i; next } NF == 1 && $1 != "" { print $1 }'
}

# cores_allowed: the CPU list this run may use (its affinity: nproc's
# count, taskset's or a cpuset's CPUs).
cores_allowed() { sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$$/status"; }

# cpu_list_join ID...: "0,1,2".
cpu_list_join() { local IFS=,; echo "$*"; }

# cores_plan: which N fit this machine, and the CPUs of each daemon and of
# iperf3; says what it left out and why. Sets CORES_* above.
cores_plan() {
    local n have need min="" left=() forced=() nfit="" ids order
    CORES_TSV=$BENCH_OUT/cores.tsv
    printf 'round\tcontender\tmode\tcores\tworkers\tworkers_seen\tshards\tshards_seen\tstreams\tgbps\tbytes\tcpu_s\tcpu_s_per_gb\tloop_a_pct\tloop_b_pct\tshards_a_pct\tshards_b_pct\tlanes_a_pct\tlanes_b_pct\tworkers_a_pct\tworkers_b_pct\tiperf3\tseconds\tnote\n' >"$CORES_TSV"
    ids=$(cores_allowed)
    mapfile -t CORES_CPUS < <(cpu_list_ids "$ids" | cores_order)
    have=${#CORES_CPUS[@]}
    if ! command -v taskset >/dev/null 2>&1; then
        CORES_WHY="no taskset (util-linux) to confine the daemons"
        warn "cores: n/a: $CORES_WHY"
        return 0
    fi
    for n in $(printf '%s\n' ${BENCH_CORES//,/ } | sort -n -u); do
        [ -n "$min" ] || min=$n
        need=$(( 2 * n + 2 ))
        if [ "$need" -le "$have" ]; then
            CORES_N+=("$n") nfit=$n
        elif [ "$BENCH_CORES_FORCE" = 1 ] && [ $(( 2 * n )) -le "$have" ]; then
            CORES_N+=("$n") forced+=("$n")
        elif [ "$BENCH_CORES_FORCE" = 1 ]; then
            left+=("N=$n (needs $(( 2 * n )) CPUs for the daemons alone)")
        else
            left+=("N=$n (needs $need CPUs: 2 x $n for the daemons, 2 for iperf3)")
        fi
    done
    if [ ${#left[@]} -gt 0 ]; then
        CORES_LEFT="left out: $(IFS=';'; echo "${left[*]}" | sed 's/;/, /g'); this run may use $have"
    fi
    if [ ${#CORES_N[@]} -eq 0 ]; then
        CORES_WHY="needs at least $(( 2 * min + 2 )) cores (2 x N=$min for the daemons, 2 for iperf3), this run may use $have (BENCH_CORES_FORCE=1 runs it anyway)"
        say "cores: n/a: $CORES_WHY"
        return 0
    fi
    order=$(cpu_list_join "${CORES_CPUS[@]}")
    CORES_FORCED=" ${forced[*]} "
    # iperf3 on the CPUs after the largest N that leaves it 2, for that N,
    # every smaller one and veth alike; a forced N shares the daemons'.
    if [ -n "$nfit" ]; then
        CORES_IPERF=$(cpu_list_join "${CORES_CPUS[@]:$(( 2 * nfit ))}")
        CORES_PLAN="node a's daemon on the first N of CPUs $order, node b's on the next N; iperf3 client and server on CPUs $CORES_IPERF for N <= $nfit and for veth"
        [ ${#forced[@]} -eq 0 ] ||
            CORES_PLAN="$CORES_PLAN, not pinned at N=${forced[*]} (BENCH_CORES_FORCE=1: no CPU left for it, it shares the daemons')"
    else
        CORES_PLAN="node a's daemon on the first N of CPUs $order, node b's on the next N; iperf3 not pinned (no CPU left, BENCH_CORES_FORCE=1: not a measure of scaling)"
    fi
    say "cores: N = ${CORES_N[*]} per daemon (BENCH_CORES=$BENCH_CORES), modes ${CORES_MODES[*]} (BENCH_CORES_MODE), iperf3 -P ${CORES_STREAMS[*]} a -> b, ${BENCH_SECONDS} s per test; $CORES_PLAN"
    [ -z "$CORES_LEFT" ] || say "cores: $CORES_LEFT"
    [ ${#forced[@]} -eq 0 ] ||
        warn "cores: BENCH_CORES_FORCE=1: N=${forced[*]} without 2 free CPUs for iperf3; it shares the daemons' CPUs there: the code path runs, those figures are lower bounds"
    say "cores: CPU siblings (threads of one physical core): $(cores_siblings)"
}

# cores_order: the CPU numbers on stdin, first threads of each physical
# core first, then second threads (SMT siblings), each by number: a daemon
# given N CPUs gets N physical cores where there are enough, not two
# threads of one, and node a's one CPU at N=1 is not node b's sibling.
# Without SMT (or without sysfs) the order is by number.
cores_order() {
    local c sib rank
    while read -r c; do
        sib=$(cat "$CORES_SYSFS/cpu$c/topology/thread_siblings_list" 2>/dev/null) || sib=$c
        rank=$(cpu_list_ids "$sib" | sort -n | awk -v c="$c" '$1 == c { print NR - 1; exit }')
        echo "${rank:-0} $c"
    done | sort -k1,1n -k2,2n | awk '{ print $2 }'
}

cores_active() { part_on cores && [ ${#CORES_N[@]} -gt 0 ]; }

# cores_siblings: the distinct thread_siblings_list of the CPUs we use, so
# that the reader knows whether "2 cores" are two threads of one core.
cores_siblings() {
    local c out=""
    for c in "${CORES_CPUS[@]}"; do
        out="$out $(cat "$CORES_SYSFS/cpu$c/topology/thread_siblings_list" 2>/dev/null || echo "?")"
    done
    printf '%s\n' $out | awk '!seen[$0]++' | tr '\n' ' ' | sed 's/ $//'
}

# named_ticks PID PREFIX: utime + stime of the daemon's threads whose name
# begins with PREFIX (ddpnet-lane: the I/O lanes; ddpnet-crypto: the
# crypto workers), together.
named_ticks() {
    local t sum=0 ticks
    for t in /proc/"$1"/task/*; do
        case "$(cat "$t/comm" 2>/dev/null)" in
        "$2"*) ticks=$(stat_ticks "$t/stat") && sum=$(( sum + ticks )) ;;
        esac
    done
    echo "$sum"
}

# shares PID: "LOOP SHARDS LANES WORKERS" ticks of the daemon PID: its
# main thread (the event loop; shard 0 where there are shards), its other
# shards together (ddpnet-shard*), its I/O lanes with the readers
# (ddpnet-lane*, ddpnet-read*: both are I/O lanes), its crypto workers.
shares() {
    echo "$(loop_ticks "$1") $(named_ticks "$1" ddpnet-shard)" \
        "$(( $(named_ticks "$1" ddpnet-lane) + $(named_ticks "$1" ddpnet-read) ))" \
        "$(named_ticks "$1" ddpnet-crypto)"
}

# cores_run DEST OUT STREAMS [PID...]: one iperf3 test a -> b with -P
# STREAMS, client and server on CORES_IPERF_NOW (set on this shell, which
# must be a subshell: nsenter and iperf3 inherit it; empty: not pinned).
# Prints "GBIT/S BYTES CPU-S CPU-S/GB LOOP-A% LOOP-B% SHARDS-A% SHARDS-B%
# LANES-A% LANES-B% WORKERS-A% WORKERS-B%", CPU as lib.sh counts it (utime
# + stime of PIDS), and the share of one core that each daemon's event
# loop, its other shards together, its I/O lanes together and its crypto
# workers together took (CORES_LOOP_A, CORES_LOOP_B: the daemons' pids; a
# loop near 100% is what more workers cannot speed up); NA without PIDS or
# when one of them ended.
cores_run() {
    local dest=$1 out=$2 streams=$3; shift 3
    local pids="$*" t0="" t1 res gbps bytes cpus=NA per=NA sa0="" sb0="" sa1 sb1
    local shares_out="NA NA NA NA NA NA NA NA" began
    if [ -n "$CORES_IPERF_NOW" ]; then
        taskset -pc "$CORES_IPERF_NOW" "$BASHPID" >/dev/null || { warn "cores: taskset -pc $CORES_IPERF_NOW failed"; return 1; }
    fi
    [ -z "$pids" ] || t0=$(cpu_ticks $pids)
    [ -z "${CORES_LOOP_A:-}" ] || { sa0=$(shares "$CORES_LOOP_A"); sb0=$(shares "$CORES_LOOP_B"); }
    began=$(date +%s.%N)
    res=$(iperf_run a b "$dest" "$out" -P "$streams") || return 1
    read -r gbps bytes <<<"$res"
    if [ -n "$t0" ] && t1=$(cpu_ticks $pids); then
        cpus=$(calc "($t1 - $t0) / $CLK_TCK")
        [ "$bytes" -gt 0 ] && per=$(calc "$cpus / ($bytes / 1e9)")
    fi
    if [ -n "$sa0" ] && [ -n "$sb0" ] && sa1=$(shares "$CORES_LOOP_A") && sb1=$(shares "$CORES_LOOP_B"); then
        local secs i a0 a1 b0 b1 pa="" pb=""
        secs=$(calc "$(date +%s.%N) - $began")
        read -r -a a0 <<<"$sa0"; read -r -a a1 <<<"$sa1"
        read -r -a b0 <<<"$sb0"; read -r -a b1 <<<"$sb1"
        for i in 0 1 2 3; do
            pa="$pa $(calc "100 * (${a1[i]} - ${a0[i]}) / $CLK_TCK / $secs")"
            pb="$pb $(calc "100 * (${b1[i]} - ${b0[i]}) / $CLK_TCK / $secs")"
        done
        read -r -a a1 <<<"$pa"; read -r -a b1 <<<"$pb"
        shares_out="${a1[0]} ${b1[0]} ${a1[1]} ${b1[1]} ${a1[2]} ${b1[2]} ${a1[3]} ${b1[3]}"
    fi
    echo "$(calc "$gbps / 1e9") $bytes $cpus $per $shares_out"
}

# cores_row ROUND CONTENDER MODE N WORKERS SEEN SHARDS SEEN STREAMS SECONDS NOTE RESULT
cores_row() {
    local g=NA b=NA c=NA p=NA la=NA lb=NA sa=NA sb=NA na=NA nb=NA wa=NA wb=NA cpus=${CORES_IPERF_NOW:-shared}
    [ -z "${12}" ] || read -r g b c p la lb sa sb na nb wa wb <<<"${12}"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9" \
        "$g" "$b" "$c" "$p" "${la:-NA}" "${lb:-NA}" "${sa:-NA}" "${sb:-NA}" "${na:-NA}" "${nb:-NA}" \
        "${wa:-NA}" "${wb:-NA}" "$cpus" "${10}" "${11}" >>"$CORES_TSV"
    CORES_LAST="$(short "$g") Gbit/s" CORES_LAST_CPU="$(short "$p") CPU-s/GB"
}

# cores_measure ROUND: veth, then each N, each mode of BENCH_CORES_MODE in
# turn at that N (so the modes share each round's noise).
cores_measure() {
    local r=$1 n m
    cores_veth "$r"
    for n in "${CORES_N[@]}"; do
        for m in "${CORES_MODES[@]}"; do cores_ddp "$r" "$n" "$m"; done
    done
}

cores_veth() {
    local r=$1 s res began=$SECONDS line="" dir=$T/r$1-cores-veth
    mkdir -p "$dir"
    CORES_IPERF_NOW=$CORES_IPERF
    for s in "${CORES_STREAMS[@]}"; do
        res=$(cores_run "$UL_B" "$dir/p$s.json" "$s") || res=""
        cores_row "$r" veth - - - - - - "$s" "$(( SECONDS - began ))" "$([ -n "$res" ] || echo "iperf3 failed")" "$res"
        line="$line, $s streams $CORES_LAST"
    done
    say "$(printf 'round %s/%s cores %-15s%s (%s s)' "$r" "$BENCH_ROUNDS" "veth:" "${line#, }" "$(( SECONDS - began ))")"
}

# cores_env MODE N: the daemons' environment in that mode at N cores.
cores_env() {
    case "$1" in
    shards)  echo "DDPNET_SHARDS=$2" ;;
    esac
}

# cores_ddp ROUND N MODE: both daemons up on N CPUs each in MODE, each
# stream count, down.
cores_ddp() {
    local r=$1 n=$2 m=$3 w sh la lb s note="" seen=NA sseen=NA began=$SECONDS line="" dir=$T/r$1-cores-$3-$2 env
    local -a res=() secs=()
    if [ "$m" = shards ]; then w=0 sh=$n; else w=$(( n - 1 )) sh=1; fi
    mkdir -p "$dir"
    la=$(cpu_list_join "${CORES_CPUS[@]:0:$n}")
    lb=$(cpu_list_join "${CORES_CPUS[@]:$n:$n}")
    CORES_IPERF_NOW=$CORES_IPERF
    case "$CORES_FORCED" in *" $n "*) CORES_IPERF_NOW="" ;; esac
    env=$(cores_env "$m" "$n")
    DDP_UP_PREFIX_a="env $env taskset -c $la"
    DDP_UP_PREFIX_b="env $env taskset -c $lb"
    if ! tunnel_up ddpnet; then
        note="setup failed: $TUN_WHY"
        warn "round $r cores $m N=$n: $note"
        for s in "${CORES_STREAMS[@]}"; do
            cores_row "$r" ddpnet "$m" "$n" "$w" NA "$sh" NA "$s" "$(( SECONDS - began ))" "$note" ""
        done
    else
        CORES_LOOP_A=$(node_daemon a) CORES_LOOP_B=$(node_daemon b)
        [ -n "$CORES_LOOP_A" ] && [ -n "$CORES_LOOP_B" ] || CORES_LOOP_A="" CORES_LOOP_B=""
        for s in "${CORES_STREAMS[@]}"; do
            res[s]=$(cores_run "$TUN_DEST" "$dir/p$s.json" "$s" $TUN_PIDS) || res[s]=""
            secs[s]=$(( SECONDS - began ))
        done
        # After the tests: the daemon's start leaves a short-lived thread
        # (glibc's getaddrinfo_a helper) that would count as a worker.
        cores_check a "$la" "$w" "$sh" && cores_check b "$lb" "$w" "$sh"
        note=$CORES_CHECK_NOTE seen=$CORES_CHECK_SEEN sseen=$CORES_CHECK_SHARDS
        [ -z "$note" ] || warn "round $r cores $m N=$n: $note"
        for s in "${CORES_STREAMS[@]}"; do
            cores_row "$r" ddpnet "$m" "$n" "$w" "$seen" "$sh" "$sseen" "$s" "${secs[s]}" \
                "${note:-$([ -n "${res[s]}" ] || echo "iperf3 failed")}" "${res[s]}"
            line="$line, $s streams $CORES_LAST, $CORES_LAST_CPU"
        done
    fi
    tunnel_down ddpnet
    DDP_UP_PREFIX_a="" DDP_UP_PREFIX_b="" CORES_LOOP_A="" CORES_LOOP_B=""
    say "$(printf 'round %s/%s cores %-15s%s (%s; %s s)' "$r" "$BENCH_ROUNDS" "$m N=$n:" \
        "${line#, }" "$([ "$m" = shards ] && echo "$sh shards" || echo "$w workers")$([ -n "$CORES_IPERF_NOW" ] || echo ", iperf3 unpinned")" \
        "$(( SECONDS - began ))")"
}

# cores_check NODE CPU-LIST WORKERS SHARDS: every thread of NODE's daemon
# may run on CPU-LIST and nowhere else, and it runs WORKERS crypto workers
# (its threads named ddpnet-crypto*) and SHARDS loops (its main thread and
# SHARDS-1 threads named ddpnet-shard*). Sets CORES_CHECK_SEEN and
# CORES_CHECK_SHARDS (both nodes' counts, "a/b": workers, loops) and
# CORES_CHECK_NOTE (what was wrong; empty when all was right). Returns 0
# either way: a wrong set-up is noted, not hidden.
CORES_CHECK_SEEN="" CORES_CHECK_SHARDS="" CORES_CHECK_NOTE=""
cores_check() {
    local n=$1 want=$2 workers=$3 shards=$4 pid task comm allowed count=0 loops=1 bad=""
    [ "$n" = a ] && CORES_CHECK_SEEN="" CORES_CHECK_SHARDS="" CORES_CHECK_NOTE=""
    pid=$(node_daemon "$n")
    if [ -z "$pid" ]; then
        CORES_CHECK_NOTE="$CORES_CHECK_NOTE node $n: no daemon pid;"
        CORES_CHECK_SEEN="${CORES_CHECK_SEEN:+$CORES_CHECK_SEEN/}NA"
        CORES_CHECK_SHARDS="${CORES_CHECK_SHARDS:+$CORES_CHECK_SHARDS/}NA"
        return 0
    fi
    want=$(cpu_list_ids "$want" | sort -n | tr '\n' ' ')
    for task in /proc/"$pid"/task/*; do
        comm=$(cat "$task/comm" 2>/dev/null) || continue
        allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$task/status" 2>/dev/null)
        if [ "$(cpu_list_ids "$allowed" | sort -n | tr '\n' ' ')" != "$want" ]; then
            bad="$bad ${task##*/}($comm):$allowed"
        fi
        case "$comm" in
        ddpnet-crypto*) count=$(( count + 1 )) ;;
        ddpnet-shard*) loops=$(( loops + 1 )) ;;
        esac
    done
    CORES_CHECK_SEEN="${CORES_CHECK_SEEN:+$CORES_CHECK_SEEN/}$count"
    CORES_CHECK_SHARDS="${CORES_CHECK_SHARDS:+$CORES_CHECK_SHARDS/}$loops"
    [ -z "$bad" ] || CORES_CHECK_NOTE="$CORES_CHECK_NOTE node $n: threads outside CPUs ${want% }:$bad;"
    [ "$count" = "$workers" ] ||
        CORES_CHECK_NOTE="$CORES_CHECK_NOTE node $n: $count crypto workers running, $workers asked;"
    [ "$loops" = "$shards" ] ||
        CORES_CHECK_NOTE="$CORES_CHECK_NOTE node $n: $loops shards running, $shards asked;"
    CORES_CHECK_NOTE=${CORES_CHECK_NOTE# }
    return 0
}

# cores_report: the medians of $CORES_TSV, per mode one row per N, and
# the veth reference; the n/a line when nothing was measured. Always
# returns 0: issue 19 asks for these figures; issue 45's doubling target
# on them is judged by report_issue45 (report.sh).
cores_report() {
    BENCH_DIR="$BENCH_DIR" "$PY" - "$CORES_TSV" "$CORES_WHY" "$CORES_LEFT" "$CORES_PLAN" "$BENCH_SECONDS" <<'PYEOF'
import os, statistics, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
from report_fmt import num, fmt, ratio, times

tsv, why, left, plan, seconds = sys.argv[1:6]
print()
print("=== 1 -> N cores per daemon, iperf3 a -> b over ddp0 (issues 19, 45) ===")
if why:
    print("CORES n/a: " + why)
    sys.exit(0)
try:
    lines = [l.rstrip("\n").split("\t") for l in open(tsv) if l.strip()]
except OSError as e:
    print("CORES n/a: cannot read %s: %s" % (tsv, e))
    sys.exit(0)
rows = [dict(zip(lines[0], f)) for f in lines[1:]]
for r in rows:
    r.setdefault("mode", "workers" if r["contender"] == "ddpnet" else "-")

def med(key, contender, mode, n, streams):
    v = [num(r.get(key)) for r in rows if r["contender"] == contender and r["mode"] == mode
         and r["cores"] == n and r["streams"] == streams]
    v = [x for x in v if x is not None]
    return (statistics.median(v), len(v)) if v else (None, 0)

def pct(key, mode, n, s):
    return "%s/%s" % (fmt(med(key + "_a_pct", "ddpnet", mode, n, s)[0], "%.0f"),
                      fmt(med(key + "_b_pct", "ddpnet", mode, n, s)[0], "%.0f"))

streams = sorted({r["streams"] for r in rows}, key=int)
top = streams[-1] if streams else None
modes = []
for r in rows:
    if r["contender"] == "ddpnet" and r["mode"] not in modes:
        modes.append(r["mode"])
rounds = len({r["round"] for r in rows})
print("  %s; %s s per test, medians over %d round(s); CPU-s/GB: both daemons, per GB received;" %
      (plan, seconds, rounds))
print("  %%core a/b (%s streams): the main thread (the event loop, shard 0), the other shards," % top)
print("  the I/O lanes and readers, the crypto workers, each together, in % of one core")
greps = []
for mode in modes:
    ns = sorted({int(r["cores"]) for r in rows if r["contender"] == "ddpnet" and r["mode"] == mode})
    base = str(ns[0]) if ns else None
    other = [m for m in modes if m != mode]
    print()
    print("  mode %s: %s" % (mode, "DDPNET_SHARDS=N, no workers, no lanes (N loops, each packet on one)"
          if mode == "shards" else "DDPNET_CRYPTO_THREADS=N-1 (one event loop, N-1 crypto workers)"))
    head = ["cores/daemon", "shards" if mode == "shards" else "workers"]
    head += ["%s streams Gbit/s" % s for s in streams] + ["x N=%s (%s)" % (base, s) for s in streams]
    if other:
        head += ["x %s (%s)" % (other[0], top)]
    head += ["CPU-s/GB (%s)" % s for s in streams] + ["loop", "shards", "lanes", "workers", "iperf3", "rounds"]
    table = []
    for n in ns:
        key = str(n)
        mine = [r for r in rows if r["contender"] == "ddpnet" and r["mode"] == mode and r["cores"] == key]
        want = n if mode == "shards" else n - 1
        col = "shards_seen" if mode == "shards" else "workers_seen"
        seen = sorted({r.get(col, "NA") for r in mine})
        asked = str(want) + ("" if seen == ["%d/%d" % (want, want)] else " (seen %s)" % ",".join(seen))
        g = {s: med("gbps", "ddpnet", mode, key, s)[0] for s in streams}
        b = {s: med("gbps", "ddpnet", mode, base, s)[0] for s in streams}
        k = min(med("gbps", "ddpnet", mode, key, s)[1] for s in streams)
        cpus = sorted({r.get("iperf3", "?") for r in mine})
        row = [key, asked] + [fmt(g[s]) for s in streams] + [times(ratio(g[s], b[s])) for s in streams]
        if other:
            row.append(times(ratio(g[top], med("gbps", "ddpnet", other[0], key, top)[0])))
        row += [fmt(med("cpu_s_per_gb", "ddpnet", mode, key, s)[0]) for s in streams]
        row += [pct(p, mode, key, top) for p in ("loop", "shards", "lanes", "workers")]
        row += [",".join("shared" if c == "shared" else "own" for c in cpus), "%d/%d" % (k, rounds)]
        table.append(row)
        greps.append("CORES %s N=%s %s=%d: %s, CPU-s/GB %s, event loop %s%% / %s%% of a core (%s streams)" %
                     (mode, key, "shards" if mode == "shards" else "workers", want,
                      ", ".join("%s streams %s Gbit/s (%s N=%s)" % (s, fmt(g[s]), times(ratio(g[s], b[s])), base)
                                for s in streams),
                      " / ".join(fmt(med("cpu_s_per_gb", "ddpnet", mode, key, s)[0]) for s in streams),
                      fmt(med("loop_a_pct", "ddpnet", mode, key, top)[0], "%.0f"),
                      fmt(med("loop_b_pct", "ddpnet", mode, key, top)[0], "%.0f"), top))
    w = [max(len(str(x)) for x in col) + 2 for col in zip(head, *table)]
    for row in [head] + table:
        print("  " + "".join(str(x).ljust(k) for x, k in zip(row, w)).rstrip())
    for note in sorted({(r["cores"], r["note"]) for r in rows
                        if r["contender"] == "ddpnet" and r["mode"] == mode and r.get("note")}):
        print("    note N=%s: %s" % note)
v = {s: med("gbps", "veth", "-", "-", s) for s in streams}
print()
print("  veth: " + ", ".join("%s streams %s Gbit/s" % (s, fmt(v[s][0])) for s in streams) +
      " (%d/%d rounds)" % (min([v[s][1] for s in streams] or [0]), rounds))
for note in sorted({r["note"] for r in rows if r["contender"] == "veth" and r.get("note")}):
    print("    note veth: %s" % note)
if any(r.get("iperf3") == "shared" for r in rows):
    print("  iperf3 shared: at that N iperf3 ran on the daemons' CPUs (BENCH_CORES_FORCE=1), a lower bound")
if left:
    print("  " + left)
print()
for g in greps:
    print(g)
print("CORES veth: " + ", ".join("%s streams %s Gbit/s" % (s, fmt(v[s][0])) for s in streams))
PYEOF
    return 0
}
