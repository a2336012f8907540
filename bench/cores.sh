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
# Each daemon is started under `taskset -c` (its crypto workers and
# io_uring's threads inherit the mask) with DDPNET_CRYPTO_THREADS=N-1: one
# core for the event loop, the others for crypto workers (N=1: none, all
# inline). Per N and round: iperf3 -P 4 and -P 8 a -> b over ddp0, the
# receiver's rate, both daemons' CPU per GB and the share of a core each
# daemon's event loop took (the loop does all I/O and whatever crypto no
# worker does: near 100%, it is the ceiling more workers cannot lift); in
# the same rounds, before them, the bare veth with -P 4 and -P 8 as the
# reference. Rows go to $CORES_TSV; cores_report prints the medians.
#
# BENCH_CORES_FORCE=1 drops the 2 cores of iperf3 from the check (N only
# needs 2 x N cores): on a small machine the code path runs, iperf3 shares
# the daemons' cores (not pinned) and the figures do not measure scaling.

CORES_CPUS=()     # the CPUs this run may use (its affinity), in order
CORES_N=()        # the N measured, ascending
CORES_IPERF=""    # taskset list for iperf3; empty: not pinned
CORES_WHY=""      # why nothing is measured (the report's n/a)
CORES_LEFT=""     # the N left out and why
CORES_PLAN=""     # who runs where, for the report
CORES_TSV=""
CORES_SYSFS=/sys/devices/system/cpu

cores_config() {
    local n
    BENCH_CORES=${BENCH_CORES:-1 2 4 8}
    BENCH_CORES_FORCE=${BENCH_CORES_FORCE:-0}
    for n in ${BENCH_CORES//,/ }; do positive_int BENCH_CORES "$n"; done
    [ -n "${BENCH_CORES//[, ]/}" ] || usage_error "BENCH_CORES is empty"
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
    local n have need min="" left=() forced=() nmax ids order
    CORES_TSV=$BENCH_OUT/cores.tsv
    printf 'round\tcontender\tcores\tworkers\tworkers_seen\tstreams\tgbps\tbytes\tcpu_s\tcpu_s_per_gb\tloop_a_pct\tloop_b_pct\tlanes_a_pct\tlanes_b_pct\tworkers_a_pct\tworkers_b_pct\tseconds\tnote\n' >"$CORES_TSV"
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
            CORES_N+=("$n")
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
    nmax=${CORES_N[${#CORES_N[@]}-1]}
    order=$(cpu_list_join "${CORES_CPUS[@]}")
    if [ $(( 2 * nmax )) -lt "$have" ]; then
        CORES_IPERF=$(cpu_list_join "${CORES_CPUS[@]:$(( 2 * nmax ))}")
        CORES_PLAN="node a's daemon on the first N of CPUs $order, node b's on the next N; iperf3 client and server on CPUs $CORES_IPERF for every N and for veth"
    else
        CORES_PLAN="node a's daemon on the first N of CPUs $order, node b's on the next N; iperf3 not pinned (no CPU left, BENCH_CORES_FORCE=1: not a measure of scaling)"
    fi
    say "cores: N = ${CORES_N[*]} per daemon (BENCH_CORES=$BENCH_CORES), iperf3 -P 4 and -P 8 a -> b, ${BENCH_SECONDS} s per test; $CORES_PLAN"
    [ -z "$CORES_LEFT" ] || say "cores: $CORES_LEFT"
    [ ${#forced[@]} -eq 0 ] ||
        warn "cores: BENCH_CORES_FORCE=1: N=${forced[*]} without 2 free CPUs for iperf3; it shares the daemons' CPUs: the code path runs, the figures do not measure scaling"
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

# shares PID: "LOOP LANES WORKERS" ticks of the daemon PID; LANES counts
# the readers (ddpnet-read*) with the lanes: both are I/O lanes.
shares() {
    echo "$(loop_ticks "$1") $(( $(named_ticks "$1" ddpnet-lane) + $(named_ticks "$1" ddpnet-read) ))" \
        "$(named_ticks "$1" ddpnet-crypto)"
}

# cores_run DEST OUT STREAMS [PID...]: one iperf3 test a -> b with -P
# STREAMS, client and server on CORES_IPERF (set on this shell, which must
# be a subshell: nsenter and iperf3 inherit it). Prints "GBIT/S BYTES CPU-S
# CPU-S/GB LOOP-A% LOOP-B% LANES-A% LANES-B% WORKERS-A% WORKERS-B%", CPU as
# lib.sh counts it (utime + stime of PIDS), and the share of one core that
# each daemon's event loop, its I/O lanes together and its crypto workers
# together took (CORES_LOOP_A, CORES_LOOP_B: the daemons' pids; a loop
# near 100% is what more workers cannot speed up); NA without PIDS or when
# one of them ended.
cores_run() {
    local dest=$1 out=$2 streams=$3; shift 3
    local pids="$*" t0="" t1 res gbps bytes cpus=NA per=NA sa0="" sb0="" sa1 sb1 shares_out="NA NA NA NA NA NA"
    local began
    if [ -n "$CORES_IPERF" ]; then
        taskset -pc "$CORES_IPERF" "$BASHPID" >/dev/null || { warn "cores: taskset -pc $CORES_IPERF failed"; return 1; }
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
        for i in 0 1 2; do
            pa="$pa $(calc "100 * (${a1[i]} - ${a0[i]}) / $CLK_TCK / $secs")"
            pb="$pb $(calc "100 * (${b1[i]} - ${b0[i]}) / $CLK_TCK / $secs")"
        done
        read -r -a a1 <<<"$pa"; read -r -a b1 <<<"$pb"
        shares_out="${a1[0]} ${b1[0]} ${a1[1]} ${b1[1]} ${a1[2]} ${b1[2]}"
    fi
    echo "$(calc "$gbps / 1e9") $bytes $cpus $per $shares_out"
}

# cores_row ROUND CONTENDER N WORKERS SEEN STREAMS SECONDS NOTE RESULT
cores_row() {
    local g=NA b=NA c=NA p=NA la=NA lb=NA na=NA nb=NA wa=NA wb=NA
    [ -z "$9" ] || read -r g b c p la lb na nb wa wb <<<"$9"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" \
        "$g" "$b" "$c" "$p" "${la:-NA}" "${lb:-NA}" "${na:-NA}" "${nb:-NA}" "${wa:-NA}" "${wb:-NA}" \
        "$7" "$8" >>"$CORES_TSV"
    CORES_LAST="$(short "$g") Gbit/s" CORES_LAST_CPU="$(short "$p") CPU-s/GB"
}

# cores_measure ROUND: veth, then each N, in turn.
cores_measure() {
    local r=$1 n
    cores_veth "$r"
    for n in "${CORES_N[@]}"; do cores_ddp "$r" "$n"; done
}

cores_veth() {
    local r=$1 s res began=$SECONDS line="" dir=$T/r$1-cores-veth
    mkdir -p "$dir"
    for s in 4 8; do
        res=$(cores_run "$UL_B" "$dir/p$s.json" "$s") || res=""
        cores_row "$r" veth - - - "$s" "$(( SECONDS - began ))" "$([ -n "$res" ] || echo "iperf3 failed")" "$res"
        line="$line, $s streams $CORES_LAST"
    done
    say "$(printf 'round %s/%s cores %-7s%s (%s s)' "$r" "$BENCH_ROUNDS" "veth:" "${line#, }" "$(( SECONDS - began ))")"
}

# cores_ddp ROUND N: both daemons up on N CPUs each, -P 4 and -P 8, down.
cores_ddp() {
    local r=$1 n=$2 w=$(( $2 - 1 )) la lb s note="" seen=NA began=$SECONDS line="" dir=$T/r$1-cores-$2
    local -a res=() secs=()
    mkdir -p "$dir"
    la=$(cpu_list_join "${CORES_CPUS[@]:0:$n}")
    lb=$(cpu_list_join "${CORES_CPUS[@]:$n:$n}")
    DDP_UP_PREFIX_a="env DDPNET_CRYPTO_THREADS=$w taskset -c $la"
    DDP_UP_PREFIX_b="env DDPNET_CRYPTO_THREADS=$w taskset -c $lb"
    if ! tunnel_up ddpnet; then
        note="setup failed: $TUN_WHY"
        warn "round $r cores N=$n: $note"
        for s in 4 8; do cores_row "$r" ddpnet "$n" "$w" NA "$s" "$(( SECONDS - began ))" "$note" ""; done
    else
        CORES_LOOP_A=$(node_daemon a) CORES_LOOP_B=$(node_daemon b)
        [ -n "$CORES_LOOP_A" ] && [ -n "$CORES_LOOP_B" ] || CORES_LOOP_A="" CORES_LOOP_B=""
        for s in 4 8; do
            res[s]=$(cores_run "$TUN_DEST" "$dir/p$s.json" "$s" $TUN_PIDS) || res[s]=""
            secs[s]=$(( SECONDS - began ))
        done
        # After the tests: the daemon's start leaves a short-lived thread
        # (glibc's getaddrinfo_a helper) that would count as a worker.
        cores_check a "$la" "$w" && cores_check b "$lb" "$w"
        note=$CORES_CHECK_NOTE seen=$CORES_CHECK_SEEN
        [ -z "$note" ] || warn "round $r cores N=$n: $note"
        for s in 4 8; do
            cores_row "$r" ddpnet "$n" "$w" "$seen" "$s" "${secs[s]}" \
                "${note:-$([ -n "${res[s]}" ] || echo "iperf3 failed")}" "${res[s]}"
            line="$line, $s streams $CORES_LAST, $CORES_LAST_CPU"
        done
    fi
    tunnel_down ddpnet
    DDP_UP_PREFIX_a="" DDP_UP_PREFIX_b="" CORES_LOOP_A="" CORES_LOOP_B=""
    say "$(printf 'round %s/%s cores N=%-5s%s (%s workers; %s s)' "$r" "$BENCH_ROUNDS" "$n:" \
        "${line#, }" "$w" "$(( SECONDS - began ))")"
}

# cores_check NODE CPU-LIST WORKERS: every thread of NODE's daemon may run
# on CPU-LIST and nowhere else, and it runs WORKERS crypto workers (its
# threads named ddpnet-crypto*). Sets CORES_CHECK_SEEN (both nodes'
# counts, "a/b") and CORES_CHECK_NOTE (what was wrong; empty when all was
# right). Returns 0 either way: a wrong set-up is noted, not hidden.
CORES_CHECK_SEEN="" CORES_CHECK_NOTE=""
cores_check() {
    local n=$1 want=$2 workers=$3 pid task comm allowed count=0 bad=""
    [ "$n" = a ] && CORES_CHECK_SEEN="" CORES_CHECK_NOTE=""
    pid=$(node_daemon "$n")
    if [ -z "$pid" ]; then
        CORES_CHECK_NOTE="$CORES_CHECK_NOTE node $n: no daemon pid;"
        CORES_CHECK_SEEN="${CORES_CHECK_SEEN:+$CORES_CHECK_SEEN/}NA"
        return 0
    fi
    want=$(cpu_list_ids "$want" | sort -n | tr '\n' ' ')
    for task in /proc/"$pid"/task/*; do
        comm=$(cat "$task/comm" 2>/dev/null) || continue
        allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$task/status" 2>/dev/null)
        if [ "$(cpu_list_ids "$allowed" | sort -n | tr '\n' ' ')" != "$want" ]; then
            bad="$bad ${task##*/}($comm):$allowed"
        fi
        case "$comm" in ddpnet-crypto*) count=$(( count + 1 )) ;; esac
    done
    CORES_CHECK_SEEN="${CORES_CHECK_SEEN:+$CORES_CHECK_SEEN/}$count"
    [ -z "$bad" ] || CORES_CHECK_NOTE="$CORES_CHECK_NOTE node $n: threads outside CPUs ${want% }:$bad;"
    [ "$count" = "$workers" ] ||
        CORES_CHECK_NOTE="$CORES_CHECK_NOTE node $n: $count crypto workers running, $workers asked;"
    CORES_CHECK_NOTE=${CORES_CHECK_NOTE# }
    return 0
}

# cores_report: the medians of $CORES_TSV, one row per N and the veth
# reference; the n/a line when nothing was measured. Always returns 0:
# issue 19 asks for these figures, it sets no target on them.
cores_report() {
    BENCH_DIR="$BENCH_DIR" "$PY" - "$CORES_TSV" "$CORES_WHY" "$CORES_LEFT" "$CORES_PLAN" "$BENCH_SECONDS" <<'PYEOF'
import os, statistics, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
from report_fmt import num, fmt, ratio, times

tsv, why, left, plan, seconds = sys.argv[1:6]
print()
print("=== 1 -> N cores per daemon, iperf3 a -> b over ddp0 (issue 19) ===")
if why:
    print("CORES n/a: " + why)
    sys.exit(0)
try:
    lines = [l.rstrip("\n").split("\t") for l in open(tsv) if l.strip()]
except OSError as e:
    print("CORES n/a: cannot read %s: %s" % (tsv, e))
    sys.exit(0)
rows = [dict(zip(lines[0], f)) for f in lines[1:]]

def med(key, contender, n, streams):
    v = [num(r[key]) for r in rows if r["contender"] == contender and r["cores"] == n
         and r["streams"] == streams]
    v = [x for x in v if x is not None]
    return (statistics.median(v), len(v)) if v else (None, 0)

ns = sorted({int(r["cores"]) for r in rows if r["contender"] == "ddpnet"})
rounds = len({r["round"] for r in rows})
base = str(ns[0]) if ns else None
print("  %s; %s s per test, medians over %d round(s); CPU-s/GB: both daemons, per GB received" %
      (plan, seconds, rounds))
head = ["cores/daemon", "workers", "4 streams Gbit/s", "8 streams Gbit/s",
        "x N=%s (4)" % base, "x N=%s (8)" % base, "CPU-s/GB (4)", "CPU-s/GB (8)",
        "%core a/b (8): loop", "lanes", "workers", "rounds"]
table, greps = [], []
b4, b8 = (med("gbps", "ddpnet", base, "4")[0], med("gbps", "ddpnet", base, "8")[0]) if base else (None, None)
for n in ns:
    key = str(n)
    g4, k4 = med("gbps", "ddpnet", key, "4")
    g8, k8 = med("gbps", "ddpnet", key, "8")
    c4, c8 = med("cpu_s_per_gb", "ddpnet", key, "4")[0], med("cpu_s_per_gb", "ddpnet", key, "8")[0]
    seen = sorted({r["workers_seen"] for r in rows if r["contender"] == "ddpnet" and r["cores"] == key})
    workers = str(n - 1) + ("" if seen == ["%d/%d" % (n - 1, n - 1)] else " (seen %s)" % ",".join(seen))
    share = {}
    for part in ("loop", "lanes", "workers"):
        a = med(part + "_a_pct", "ddpnet", key, "8")[0] if part + "_a_pct" in rows[0] else None
        b = med(part + "_b_pct", "ddpnet", key, "8")[0] if part + "_b_pct" in rows[0] else None
        share[part] = "%s/%s" % (fmt(a, "%.0f"), fmt(b, "%.0f"))
    la, lb = med("loop_a_pct", "ddpnet", key, "8")[0], med("loop_b_pct", "ddpnet", key, "8")[0]
    table.append([key, workers, fmt(g4), fmt(g8), times(ratio(g4, b4)), times(ratio(g8, b8)),
                  fmt(c4), fmt(c8), share["loop"], share["lanes"], share["workers"],
                  "%d/%d" % (min(k4, k8), rounds)])
    greps.append("CORES N=%s workers=%d: 4 streams %s Gbit/s (%s N=%s), 8 streams %s Gbit/s (%s), "
                 "CPU-s/GB %s / %s, event loop %s%% / %s%% of a core (8 streams)" %
                 (key, n - 1, fmt(g4), times(ratio(g4, b4)), base, fmt(g8), times(ratio(g8, b8)),
                  fmt(c4), fmt(c8), fmt(la, "%.0f"), fmt(lb, "%.0f")))
v4, k4 = med("gbps", "veth", "-", "4")
v8, k8 = med("gbps", "veth", "-", "8")
table.append(["veth", "-", fmt(v4), fmt(v8), "", "", "", "", "", "", "", "%d/%d" % (min(k4, k8), rounds)])
w = [max(len(str(x)) for x in col) + 2 for col in zip(head, *table)]
for row in [head] + table:
    print("  " + "".join(str(x).ljust(k) for x, k in zip(row, w)).rstrip())
for note in sorted({(r["cores"], r["note"]) for r in rows if r.get("note")}):
    print("    note %s: %s" % ("veth" if note[0] == "-" else "N=" + note[0], note[1]))
if left:
    print("  " + left)
print()
for g in greps:
    print(g)
print("CORES veth: 4 streams %s Gbit/s, 8 streams %s Gbit/s" % (fmt(v4), fmt(v8)))
PYEOF
    return 0
}
