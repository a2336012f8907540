# SPDX-License-Identifier: MIT
# The `shards` part of `make bench` (sourced after lib.sh and tunnels.sh):
# what the data path costs when it runs on more than one thread, beside
# the inline one-thread daemon, in the same rounds (issue 45).
#
# On the two-node testbed of lib.sh, per round, for each contender:
#   inline    DDPNET_SHARDS=1: one thread does everything (the reference)
#   shards    DDPNET_SHARDS=$BENCH_SHARDS (default 2): each shard reads,
#             seals or opens, and writes its own packets (overlay/loop/shard.h),
#             idle shards helping a busy one with its crypto (deferred.h)
#   alone     the same with DDPNET_SHARD_HELP=0: each shard runs only its
#             own crypto (what the help buys)
# (The helpers, crypto workers and I/O lanes on one loop, were a contender
# until issue 58 removed them: 1.65x inline's CPU per GB, bench/README.md.)
# iperf3 a -> b with 1 and with $BENCH_SHARDS_STREAMS (default 4) streams:
# the receiver's rate, both daemons' CPU seconds per GB (every thread,
# io_uring's workers included: /proc/PID/stat), and for each daemon the
# share of its CPU that its busiest thread took (per-thread ticks over
# the process's). Rows go to $SHARDS_TSV; shards_report prints medians
# and the two targets of issue 45 on 2 vCPUs:
#   shards, 4 streams: CPU-s per GB <= 1.15x inline's;
#   shards, 4 streams: no thread of a daemon above 0.6 of its CPU;
# and that one stream uses more than one core where cores are spare:
#   shards, 1 stream: no thread of a daemon above 0.85 of its CPU.

SHARDS_TSV=""
SHARDS_CONTENDERS=(inline shards alone)

shards_config() {
    BENCH_SHARDS=${BENCH_SHARDS:-2}
    BENCH_SHARDS_STREAMS=${BENCH_SHARDS_STREAMS:-4}
    positive_int BENCH_SHARDS "$BENCH_SHARDS"
    positive_int BENCH_SHARDS_STREAMS "$BENCH_SHARDS_STREAMS"
    SHARDS_TSV=$BENCH_OUT/shards.tsv
    rm -f "$SHARDS_TSV"   # this run's rows only: the report's medians are over them
}

# shards_env CONTENDER: the daemons' environment for it.
shards_env() {
    case "$1" in
    inline)  echo "DDPNET_SHARDS=1" ;;
    shards)  echo "DDPNET_SHARDS=$BENCH_SHARDS" ;;
    alone)   echo "DDPNET_SHARDS=$BENCH_SHARDS DDPNET_SHARD_HELP=0" ;;
    esac
}

# thread_ticks PID: "TID TICKS NAME" for each thread of PID now.
thread_ticks() {
    local t ticks
    for t in /proc/"$1"/task/*; do
        ticks=$(stat_ticks "$t/stat") || continue
        echo "${t##*/} $ticks $(tr ' ' _ <"$t/comm" 2>/dev/null)"
    done
}

# busiest BEFORE AFTER PROC-TICKS: "SHARE NAME" of the thread whose ticks
# grew most between the two thread_ticks listings, over PROC-TICKS (the
# process's growth: threads that ended count there, not here).
busiest() {
    awk -v total="$3" 'NR == FNR { t0[$1] = $2; next }
        { d = $2 - ($1 in t0 ? t0[$1] : 0); if (d > best) { best = d; name = $3 } }
        END { if (total > 0) printf "%.3f %s\n", best / total, name; else print "NA NA" }' "$1" "$2"
}

# shards_run ROUND CONTENDER STREAMS DIR: one iperf3 test a -> b; a row.
shards_run() {
    local r=$1 c=$2 s=$3 dir=$4 pa pb a0 b0 a1 b1 t0 t1 res gbps=NA bytes=NA cpus=NA per=NA
    local ta=NA tb=NA na=NA nb=NA note=""
    pa=$(node_daemon a) pb=$(node_daemon b)
    thread_ticks "$pa" >"$dir/a$s.before"; thread_ticks "$pb" >"$dir/b$s.before"
    a0=$(cpu_ticks "$pa") b0=$(cpu_ticks "$pb") t0=$(cpu_ticks $TUN_PIDS)
    if res=$(iperf_run a b "$TUN_DEST" "$dir/p$s.json" -P "$s"); then
        read -r gbps bytes <<<"$res"
        gbps=$(calc "$gbps / 1e9")
        if t1=$(cpu_ticks $TUN_PIDS) && a1=$(cpu_ticks "$pa") && b1=$(cpu_ticks "$pb"); then
            cpus=$(calc "($t1 - $t0) / $CLK_TCK")
            [ "$bytes" -gt 0 ] && per=$(calc "$cpus / ($bytes / 1e9)")
            thread_ticks "$pa" >"$dir/a$s.after"; thread_ticks "$pb" >"$dir/b$s.after"
            read -r ta na <<<"$(busiest "$dir/a$s.before" "$dir/a$s.after" $(( a1 - a0 )))"
            read -r tb nb <<<"$(busiest "$dir/b$s.before" "$dir/b$s.after" $(( b1 - b0 )))"
        else
            note="a daemon ended during the test"
        fi
    else
        note="iperf3 failed"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$c" "$s" "$gbps" "$bytes" "$cpus" \
        "$per" "$ta" "$tb" "$na" "$nb" "$note" >>"$SHARDS_TSV"
    SHARDS_LAST="$s streams $(short "$gbps") Gbit/s, $(short "$per") CPU-s/GB, busiest thread $ta ($na) / $tb ($nb)"
}

# shards_measure ROUND: each contender in turn, up, 1 and N streams, down.
shards_measure() {
    local r=$1 c s began dir line
    [ -s "$SHARDS_TSV" ] ||
        printf 'round\tcontender\tstreams\tgbps\tbytes\tcpu_s\tcpu_s_per_gb\tbusiest_a\tbusiest_b\tthread_a\tthread_b\tnote\n' >"$SHARDS_TSV"
    for c in "${SHARDS_CONTENDERS[@]}"; do
        began=$SECONDS dir=$T/r$r-shards-$c line=""
        mkdir -p "$dir"
        DDP_UP_PREFIX_a="env $(shards_env "$c")" DDP_UP_PREFIX_b="env $(shards_env "$c")"
        if ! tunnel_up ddpnet; then
            warn "round $r shards $c: setup failed: $TUN_WHY"
            for s in 1 "$BENCH_SHARDS_STREAMS"; do
                printf '%s\t%s\t%s\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tsetup failed\n' "$r" "$c" "$s" >>"$SHARDS_TSV"
            done
        else
            for s in 1 "$BENCH_SHARDS_STREAMS"; do
                shards_run "$r" "$c" "$s" "$dir"
                line="$line; $SHARDS_LAST"
            done
        fi
        tunnel_down ddpnet
        DDP_UP_PREFIX_a="" DDP_UP_PREFIX_b=""
        say "$(printf 'round %s/%s shards %-8s %s (%s s)' "$r" "$BENCH_ROUNDS" "$c:" "${line#; }" "$(( SECONDS - began ))")"
    done
}

# shards_report: medians per contender and streams, then the targets.
# Returns 1 when a target failed, 0 otherwise.
shards_report() {
    BENCH_DIR="$BENCH_DIR" "$PY" - "$SHARDS_TSV" "$BENCH_SHARDS" "$BENCH_SHARDS_STREAMS" <<'PYEOF'
import os, statistics, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
from report_fmt import num, fmt, times

tsv, shards, streams = sys.argv[1], sys.argv[2], sys.argv[3]
rows = []
with open(tsv) as f:
    head = f.readline().rstrip("\n").split("\t")
    for line in f:
        rows.append(dict(zip(head, line.rstrip("\n").split("\t"))))

def med(c, s, key):
    vals = [num(r[key]) for r in rows if r["contender"] == c and r["streams"] == s]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None

print()
print("Shards (issue 45): %s shards beside one thread inline, "
      "medians of %d rounds" % (shards, len({r["round"] for r in rows})))
print("%-9s %7s %9s %11s %12s %12s" % ("", "streams", "Gbit/s", "CPU-s/GB", "busiest a", "busiest b"))
for c in ("inline", "shards", "alone"):
    for s in ("1", streams):
        print("%-9s %7s %9s %11s %12s %12s" % (c, s, fmt(med(c, s, "gbps")), fmt(med(c, s, "cpu_s_per_gb")),
              fmt(med(c, s, "busiest_a"), "%.2f"), fmt(med(c, s, "busiest_b"), "%.2f")))
results = []
def target(text, value, ok):
    status = "n/a" if ok is None else ("PASS" if ok else "FAIL")
    results.append(status)
    print("TARGET %s: %s %s" % (text, value, status))

inl, sh = (med(c, streams, "cpu_s_per_gb") for c in ("inline", "shards"))
r = sh / inl if sh and inl else None
target("%s shards, %s streams: CPU-s/GB <= 1.15x inline" % (shards, streams),
       "%s vs %s (%s)" % (fmt(sh), fmt(inl), times(r)),
       None if r is None else r <= 1.15)
ba, bb = med("shards", streams, "busiest_a"), med("shards", streams, "busiest_b")
worst = max(v for v in (ba, bb) if v is not None) if (ba is not None or bb is not None) else None
target("%s shards, %s streams: no thread above 0.60 of its daemon's CPU" % (shards, streams),
       "a %s, b %s" % (fmt(ba, "%.2f"), fmt(bb, "%.2f")), None if worst is None else worst <= 0.60)
b1 = [v for v in (med("shards", "1", "busiest_a"), med("shards", "1", "busiest_b")) if v is not None]
n1 = [v for v in (med("alone", "1", "busiest_a"), med("alone", "1", "busiest_b")) if v is not None]
target("%s shards, 1 stream: no thread above 0.85 of its daemon's CPU (one stream on more than one core)" % shards,
       "worst %s (without help %s)" % (fmt(max(b1) if b1 else None, "%.2f"), fmt(max(n1) if n1 else None, "%.2f")),
       None if not b1 else max(b1) <= 0.85)
sys.exit(1 if "FAIL" in results else 0)
PYEOF
}
