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
#   many      DDPNET_SHARDS=$BENCH_SHARDS_MANY (default 8): more shards than
#             cores, to see whether they queue on the engine lock (a convoy)
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
# With shards, each daemon's metrics (127.0.0.1:$SHARDS_METRICS_PORT in its
# node) are read before and after each test: the engine lock's held and
# waited-for seconds and each shard's busy seconds (loop.h:
# loop_lock_stats), as shares of the busy time of the worst shard of
# either daemon, and the serial share of the work (held over busy less
# waits, every shard together; for Amdahl: bench/README.md). Issue 58's targets:
#   shards, N streams: lock held <= 5% of a shard's busy time;
#   shards, N streams: waits for it <= 1% of a shard's busy time;
#   many, N streams: >= 0.9x the Gbit/s of shards (no convoy).

SHARDS_TSV=""
SHARDS_CONTENDERS=(inline shards alone many)
SHARDS_METRICS_PORT=9586

shards_config() {
    BENCH_SHARDS=${BENCH_SHARDS:-2}
    BENCH_SHARDS_STREAMS=${BENCH_SHARDS_STREAMS:-4}
    BENCH_SHARDS_MANY=${BENCH_SHARDS_MANY:-8}
    positive_int BENCH_SHARDS "$BENCH_SHARDS"
    positive_int BENCH_SHARDS_MANY "$BENCH_SHARDS_MANY"
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
    many)    echo "DDPNET_SHARDS=$BENCH_SHARDS_MANY" ;;
    esac
}

# lock_scrape NODE FILE: the node's metrics into FILE (empty on failure).
lock_scrape() {
    nx "$1" curl -s -m 5 "http://127.0.0.1:$SHARDS_METRICS_PORT/metrics" >"$2" 2>/dev/null || : >"$2"
}

# lock_shares BEFORE-A AFTER-A BEFORE-B AFTER-B: "HELD WAIT SERIAL": over
# both daemons, the largest share of a shard's busy time it held the
# engine lock, and waited for it, between the scrapes; and the serial
# share of the work, every shard's held seconds over their busy seconds
# less their waits (work done, not queueing), the larger daemon's.
# "NA NA NA" without the figures (one loop has no lock).
lock_shares() {
    "$PY" - "$@" <<'PYEOF'
import re, sys
pat = re.compile(r'^(ddpnet_engine_lock_held_seconds_total|ddpnet_engine_lock_wait_seconds_total|'
                 r'ddpnet_shard_busy_seconds_total)\{.*shard="(\d+)"\} (\S+)$')
def read(path):
    out = {}
    try:
        for line in open(path):
            m = pat.match(line.strip())
            if m:
                out[(m.group(1).split("_")[-3], m.group(2))] = float(m.group(3))
    except OSError:
        pass
    return out
held = wait = serial = None
for b, a in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
    x, y = read(b), read(a)
    d = {k: y[k] - x.get(k, 0.0) for k in y}
    shards = sorted({k[1] for k in d})
    busy = {s: d.get(("busy", s), 0.0) for s in shards}
    for s in shards:
        if busy[s] > 0.05:   # a shard with under 50 ms of work says nothing
            h, w = d.get(("held", s), 0.0) / busy[s], d.get(("wait", s), 0.0) / busy[s]
            held = h if held is None else max(held, h)
            wait = w if wait is None else max(wait, w)
    work = sum(busy[s] - d.get(("wait", s), 0.0) for s in shards)
    if shards and work > 0.05:
        sr = sum(d.get(("held", s), 0.0) for s in shards) / work
        serial = sr if serial is None else max(serial, sr)
f = lambda v: "NA" if v is None else "%.4f" % v
print(f(held), f(wait), f(serial))
PYEOF
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
    local held=NA wait=NA serial=NA
    pa=$(node_daemon a) pb=$(node_daemon b)
    lock_scrape a "$dir/a$s.m0"; lock_scrape b "$dir/b$s.m0"
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
            lock_scrape a "$dir/a$s.m1"; lock_scrape b "$dir/b$s.m1"
            read -r held wait serial <<<"$(lock_shares "$dir/a$s.m0" "$dir/a$s.m1" "$dir/b$s.m0" "$dir/b$s.m1")"
        else
            note="a daemon ended during the test"
        fi
    else
        note="iperf3 failed"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$c" "$s" "$gbps" "$bytes" "$cpus" \
        "$per" "$ta" "$tb" "$na" "$nb" "$held" "$wait" "$serial" "$note" >>"$SHARDS_TSV"
    SHARDS_LAST="$s streams $(short "$gbps") Gbit/s, $(short "$per") CPU-s/GB, busiest thread $ta ($na) / $tb ($nb), lock held $held wait $wait"
}

# shards_measure ROUND: each contender in turn, up, 1 and N streams, down.
shards_measure() {
    local r=$1 c s began dir line
    [ -s "$SHARDS_TSV" ] ||
        printf 'round\tcontender\tstreams\tgbps\tbytes\tcpu_s\tcpu_s_per_gb\tbusiest_a\tbusiest_b\tthread_a\tthread_b\tlock_held\tlock_wait\tlock_serial\tnote\n' >"$SHARDS_TSV"
    for c in "${SHARDS_CONTENDERS[@]}"; do
        began=$SECONDS dir=$T/r$r-shards-$c line=""
        mkdir -p "$dir"
        DDP_UP_PREFIX_a="env $(shards_env "$c")" DDP_UP_PREFIX_b="env $(shards_env "$c")"
        DDP_METRICS_PORT=$SHARDS_METRICS_PORT
        if ! tunnel_up ddpnet; then
            warn "round $r shards $c: setup failed: $TUN_WHY"
            for s in 1 "$BENCH_SHARDS_STREAMS"; do
                printf '%s\t%s\t%s\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tsetup failed\n' "$r" "$c" "$s" >>"$SHARDS_TSV"
            done
        else
            for s in 1 "$BENCH_SHARDS_STREAMS"; do
                shards_run "$r" "$c" "$s" "$dir"
                line="$line; $SHARDS_LAST"
            done
        fi
        tunnel_down ddpnet
        DDP_UP_PREFIX_a="" DDP_UP_PREFIX_b="" DDP_METRICS_PORT=""
        say "$(printf 'round %s/%s shards %-8s %s (%s s)' "$r" "$BENCH_ROUNDS" "$c:" "${line#; }" "$(( SECONDS - began ))")"
    done
}

# shards_report: medians per contender and streams, then the targets.
# Returns 1 when a target failed, 0 otherwise.
shards_report() {
    BENCH_DIR="$BENCH_DIR" "$PY" - "$SHARDS_TSV" "$BENCH_SHARDS" "$BENCH_SHARDS_STREAMS" "$BENCH_SHARDS_MANY" <<'PYEOF'
import os, statistics, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
from report_fmt import num, fmt, times

tsv, shards, streams, many = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
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
print("(many: %s shards; lock: held and wait, the worst shard's share of its busy time; "
      "serial: held over busy less waits, every shard together)" % many)
print("%-9s %7s %9s %11s %12s %12s %9s %9s %9s" % ("", "streams", "Gbit/s", "CPU-s/GB", "busiest a",
      "busiest b", "held", "wait", "serial"))
for c in ("inline", "shards", "alone", "many"):
    for s in ("1", streams):
        print("%-9s %7s %9s %11s %12s %12s %9s %9s %9s" % (c, s, fmt(med(c, s, "gbps")), fmt(med(c, s, "cpu_s_per_gb")),
              fmt(med(c, s, "busiest_a"), "%.2f"), fmt(med(c, s, "busiest_b"), "%.2f"),
              fmt(med(c, s, "lock_held"), "%.4f"), fmt(med(c, s, "lock_wait"), "%.4f"),
              fmt(med(c, s, "lock_serial"), "%.4f")))
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
h, w = med("shards", streams, "lock_held"), med("shards", streams, "lock_wait")
target("%s shards, %s streams: engine lock held <= 5%% of a shard's busy time" % (shards, streams),
       fmt(h, "%.4f"), None if h is None else h <= 0.05)
target("%s shards, %s streams: waits for the engine lock <= 1%% of a shard's busy time" % (shards, streams),
       fmt(w, "%.4f"), None if w is None else w <= 0.01)
gm, gs = med("many", streams, "gbps"), med("shards", streams, "gbps")
r = gm / gs if gm and gs else None
target("%s shards carry >= 0.9x what %s carry, %s streams (no convoy)" % (many, shards, streams),
       "%s vs %s Gbit/s (%s)" % (fmt(gm), fmt(gs), times(r)), None if r is None else r >= 0.9)
ser = med("shards", streams, "lock_serial")
if ser:
    # Amdahl: with the share s of one shard's work serial (under the
    # lock), N shards speed up 1 / (s + (1 - s) / N); the lock is full at
    # N = 1 / s.
    print("Amdahl from %s shards' serial share %.4f: 16 shards %.1fx, 64 shards %.1fx of one; "
          "the lock is full at %.0f shards" % (shards, ser, 1 / (ser + (1 - ser) / 16),
          1 / (ser + (1 - ser) / 64), 1 / ser))
sys.exit(1 if "FAIL" in results else 0)
PYEOF
}
