# SPDX-License-Identifier: MIT
# The summary of `make bench` (sourced after lib.sh): medians per contender
# from the per-round results, ratios of ddpnet to each reference, the AEAD
# floor as aead_bench measured it in this run, and one PASS/FAIL line per
# target of issue 4. Figures only ever come from the files it is given; a
# figure that was not measured is printed as missing, never guessed.
#
# report_print RESULTS.TSV AEAD-OUTPUT AEAD-STATUS EXTRA-NAMES...
# Returns 0 when every target passed, 1 when one failed, 2 when none failed
# but one could not be judged.

report_print() {
    BENCH_DIR="$BENCH_DIR" "$PY" - "$@" <<'PYEOF'
import os, re, statistics, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
from report_fmt import num, fmt, ratio, times

TARGET_GBPS = 2.5          # one stream, Gbit/s
TARGET_VS_DEBIAN = 5.0     # x Debian's wireguard-go, one stream
TARGET_VS_EXTRA = 1.25     # x each implementation given in BENCH_EXTRA
TARGET_CPU_PER_GB = 3.0    # CPU-s per GB, both daemons
TARGET_VS_FLOOR = 1.5      # x the AEAD floor
TARGET_PING_US = 100.0     # average RTT
TARGET_IDLE_PCT = 1.0      # % of one core, strictly below
FLOOR_PHRASE = "CPU-s per GB through a tunnel (seal+open)"
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")

tsv, aead_out, aead_status = sys.argv[1:4]
extras = sys.argv[4:]

lines = [l.rstrip("\n").split("\t") for l in open(tsv) if l.strip()]
header, body = lines[0], lines[1:]
order, rounds = [], {}
for fields in body:
    row = dict(zip(header, fields))
    name = row["contender"]
    if name not in rounds:
        order.append(name)
        rounds[name] = []
    rounds[name].append(row)

def median(name, key):
    vals = [num(r[key]) for r in rounds.get(name, [])]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None

COLS = [("ab_gbps", "1 stream", "A->B Gbit/s", "%.2f"),
        ("ba_gbps", "1 stream", "B->A Gbit/s", "%.2f"),
        ("p4_gbps", "4 streams", "A->B Gbit/s", "%.2f"),
        ("ping_avg_us", "ping avg", "µs", "%.0f"),
        ("ping_p99_us", "ping p99", "µs", "%.0f"),
        ("cpu_s_per_gb", "CPU-s/GB", "both daemons", "%.2f"),
        ("idle_pct_core", "idle", "% of a core", "%.2f")]
med = {n: {k: median(n, k) for k, *_ in COLS} for n in order}

w0 = max([len("contender")] + [len(n) for n in order]) + 2
widths = [max(len(a), len(b), 8) + 2 for _, a, b, _ in COLS]
print()
print("medians over rounds (rounds: those with a one-stream result)")
print("".ljust(w0) + "".join(a.ljust(w) for (_, a, _, _), w in zip(COLS, widths)) + "rounds")
print("contender".ljust(w0) + "".join(b.ljust(w) for (_, _, b, _), w in zip(COLS, widths)))
for n in order:
    ok = sum(1 for r in rounds[n] if num(r["ab_gbps"]) is not None)
    cells = "".join(fmt(med[n][k], f).ljust(w) for (k, _, _, f), w in zip(COLS, widths))
    print(n.ljust(w0) + cells + "%d/%d" % (ok, len(rounds[n])))
    notes = sorted({r["note"] for r in rounds[n] if r.get("note")})
    for note in notes:
        print("    note: " + note)

ddp = med.get("ddpnet")
print()
print("ddpnet relative to each reference (throughput: higher is better; CPU: lower is better)")
for n in order:
    if n == "ddpnet" or ddp is None:
        continue
    parts = ["1 stream " + times(ratio(ddp["ab_gbps"], med[n]["ab_gbps"])),
             "B->A " + times(ratio(ddp["ba_gbps"], med[n]["ba_gbps"])),
             "4 streams " + times(ratio(ddp["p4_gbps"], med[n]["p4_gbps"])),
             "CPU-s/GB " + times(ratio(ddp["cpu_s_per_gb"], med[n]["cpu_s_per_gb"]))]
    print("  vs %s %s" % ((n + ":").ljust(w0), ",  ".join(parts)))

print()
floor, floor_line = None, None
if aead_status == "ok":
    print("AEAD floor, measured in this run by aead_bench:")
    for l in open(aead_out):
        l = l.rstrip("\n")
        if not l.strip():
            continue
        print("    " + l)
        if FLOOR_PHRASE.lower() in l.lower():
            found = NUMBER.findall(l.split(":")[-1]) or NUMBER.findall(l)
            if found and (floor is None or float(found[-1]) < floor):
                floor, floor_line = float(found[-1]), l.strip()
    if floor is None:
        print("  no line with \"%s\" in its output: no floor this run" % FLOOR_PHRASE)
    else:
        print("  floor (fastest backend): %.2f CPU-s/GB  <- %s" % (floor, floor_line))
else:
    print("AEAD floor: missing (%s); no figure is assumed" % aead_status)

results = []
def target(text, value, ok, why=None):
    status = "----" if ok is None else ("PASS" if ok else "FAIL")
    results.append(status)
    shown = value if ok is not None else "not measured: " + (why or "?")
    print("  %s  %s %s" % (status, text.ljust(46), shown))

def judged(v, test):
    return None if v is None else test(v)

print()
print("targets of issue 4 (ddpnet medians, this run)")
g = ddp["ab_gbps"] if ddp else None
target("one stream A->B >= %.1f Gbit/s" % TARGET_GBPS, fmt(g) + " Gbit/s",
       judged(g, lambda v: v >= TARGET_GBPS), "no ddpnet result")
r = ratio(g, med["wireguard-go"]["ab_gbps"]) if "wireguard-go" in med else None
target("one stream >= %.2gx Debian wireguard-go" % TARGET_VS_DEBIAN, times(r),
       judged(r, lambda v: v >= TARGET_VS_DEBIAN), "no wireguard-go or ddpnet result")
if not extras:
    target("one stream >= %.2fx a newer wireguard-go" % TARGET_VS_EXTRA, "", None,
           "none given (BENCH_EXTRA=\"name=/path/to/wireguard-go\")")
for x in extras:
    r = ratio(g, med[x]["ab_gbps"]) if x in med else None
    target("one stream >= %.2fx %s" % (TARGET_VS_EXTRA, x), times(r),
           judged(r, lambda v: v >= TARGET_VS_EXTRA), "no %s or ddpnet result" % x)
c = ddp["cpu_s_per_gb"] if ddp else None
target("both daemons <= %.1f CPU-s/GB" % TARGET_CPU_PER_GB, fmt(c) + " CPU-s/GB",
       judged(c, lambda v: v <= TARGET_CPU_PER_GB), "no ddpnet CPU figure")
r = ratio(c, floor)
target("both daemons <= %.1fx the AEAD floor" % TARGET_VS_FLOOR,
       "%s / %s = %s" % (fmt(c), fmt(floor), times(r)),
       judged(r, lambda v: v <= TARGET_VS_FLOOR),
       "no AEAD floor this run" if floor is None else "no ddpnet CPU figure")
p = ddp["ping_avg_us"] if ddp else None
target("ping avg <= %.0f µs" % TARGET_PING_US, fmt(p, "%.0f") + " µs",
       judged(p, lambda v: v <= TARGET_PING_US), "no ddpnet ping")
i = ddp["idle_pct_core"] if ddp else None
target("idle < %.0f%% of a core" % TARGET_IDLE_PCT, fmt(i) + " %",
       judged(i, lambda v: v < TARGET_IDLE_PCT), "no ddpnet idle figure")
print("targets: %d passed, %d failed, %d not measured" %
      (results.count("PASS"), results.count("FAIL"), results.count("----")))
sys.exit(1 if "FAIL" in results else (2 if "----" in results else 0))
PYEOF
}

# report_training RESULTS.TSV MESH.TSV RTT-DIR PARTS WHY-ALLREDUCE WHY-RELAY EXTRA-NAMES...
# What a training job sees (issue 19): Gloo all_reduce on three nodes, a
# relayed stream next to the direct one with the relay's CPU per GB, ping
# average and p99 on every path, and one "TARGET ...: VALUE PASS|FAIL" line
# per target (n/a with the reason where this run could not judge it).
# RESULTS.TSV is the two-node part's (bench.sh), MESH.TSV the three-node
# part's (mesh.sh: round, contender, metric, value, note), RTT-DIR holds
# every echo's round trip per path (lib.sh's ping_run). Returns 0 when every
# target passed, 1 when one failed, 2 when none failed but one was n/a.
report_training() {
    BENCH_DIR="$BENCH_DIR" "$PY" - "$@" <<'PYEOF'
import os, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
from report_fmt import num, fmt, ratio, times, read, med

AR_BIG_MAX = 1.3        # ddp0 / bare, 64 MiB
AR_SMALL_MAX = 1.5      # ddp0 / bare, 64 KiB
RELAY_MIN = 0.6         # relayed / direct, one stream
PING_VS_WGGO_MAX = 0.5  # ddp0 / newer wireguard-go, ping average
CPU_MAX = 1.8           # CPU-s per GB, both daemons, one stream

tsv, mesh_tsv, rtt_dir, parts, why_ar, why_relay = sys.argv[1:7]
extras = sys.argv[7:]
parts = parts.split()

pair = read(tsv) if "pair" in parts else []
mesh = read(mesh_tsv) if ("allreduce" in parts or "relay" in parts) else []

def pair_med(name, key):
    return med([num(r[key]) for r in pair if r["contender"] == name])

def mesh_vals(name, metric):
    return [num(r["value"]) for r in mesh if r["contender"] == name and r["metric"] == metric]

def mesh_med(name, metric):
    return med(mesh_vals(name, metric))

def mesh_rounds(name, metric):
    return len({r["round"] for r in mesh if r["contender"] == name and r["metric"] == metric})

def notes(name, rows):
    return sorted({r["note"] for r in rows if r["contender"] == name and r.get("note")})

def pooled(name):
    """(count, p99) of every echo of every round on this path."""
    try:
        v = sorted(float(l) for l in open(os.path.join(rtt_dir, name + ".txt")) if l.strip())
    except OSError:
        return 0, None
    if not v:
        return 0, None
    k = -(-99 * len(v) // 100)      # nearest rank
    return len(v), v[k - 1]

def table(head, rows):
    w = [max(len(str(x)) for x in col) + 2 for col in zip(head, *rows)]
    for row in [head] + rows:
        print("  " + "".join(str(x).ljust(n) for x, n in zip(row, w)).rstrip())

print()
print("=== what a training job sees (issue 19) ===")

# --- all_reduce -------------------------------------------------------------
ar_names = ["bare", "ddp0"] + [x for x in extras]
ar = {}
if "allreduce" in parts:
    big_b = mesh_med("bare", "ar_big_bytes") or mesh_med("ddp0", "ar_big_bytes")
    small_b = mesh_med("bare", "ar_small_bytes") or mesh_med("ddp0", "ar_small_bytes")
    label = lambda b, d: "?" if b is None else ("%g MiB" % (b / 2**20) if b >= 2**20 else "%g KiB" % (b / 2**10))
    print()
    print("Gloo all_reduce, 3 nodes (torchrun, one rank each, bridge between namespaces);")
    print("  medians, all rounds: of every timed all_reduce of the big tensor after the first, of the first")
    print("  (a job's first all_reduce, median over rounds) and of every batch's time per all_reduce (small)")
    rows = []
    for n in ar_names:
        big, small = mesh_med(n, "ar_big_s"), mesh_med(n, "ar_small_s")
        ar[n] = (big, small)
        nb, ns = len([v for v in mesh_vals(n, "ar_big_s") if v is not None]), \
                 len([v for v in mesh_vals(n, "ar_small_s") if v is not None])
        what = {"bare": "bare underlay (eth0)", "ddp0": "ddp0 (ddpnet)"}.get(n, n + " (wg0)")
        rows.append([what, fmt(big, "%.3f"), fmt(mesh_med(n, "ar_big_first_s"), "%.3f"),
                     fmt(None if small is None else small * 1e3, "%.3f"),
                     times(ratio(big, ar.get("bare", (None,))[0])) if n != "bare" else "",
                     times(ratio(small, ar.get("bare", (None, None))[1])) if n != "bare" else "",
                     "%d / %d (%d rounds)" % (nb, ns, mesh_rounds(n, "ar_big_s"))])
    table(["path", "%s s" % label(big_b, 1), "first one s", "%s ms" % label(small_b, 1),
           "big /bare", "small /bare", "samples big / small"], rows)
    for n in ar_names:
        for note in notes(n, mesh):
            print("    note %s: %s" % (n, note))
    for x in extras:
        if x in ar:
            print("  ddp0 / %s: big %s, small %s" % (x, times(ratio(ar["ddp0"][0], ar[x][0])),
                                                    times(ratio(ar["ddp0"][1], ar[x][1]))))

# --- paths: one stream, ping, CPU ------------------------------------------
print()
print("paths: one TCP stream, ping (avg: median of the rounds' averages; p99: all echoes of all")
print("  rounds together), CPU-s per GB received (whose CPU in brackets)")
rows = []
def pair_row(name, what):
    n, p99 = pooled(name)
    cpu = pair_med(name, "cpu_s_per_gb")
    rows.append([what, "2 nodes", fmt(pair_med(name, "ab_gbps")), fmt(pair_med(name, "ping_avg_us"), "%.0f"),
                 fmt(p99, "%.0f"), str(n), "" if cpu is None else "%.2f (both daemons)" % cpu])
def mesh_row(name, what, cpu_metric, whose):
    n, p99 = pooled("mesh-" + name)
    cpu = mesh_med(name, cpu_metric)
    rows.append([what, "3 nodes", fmt(mesh_med(name, "stream_gbps")), fmt(mesh_med(name, "ping_avg_us"), "%.0f"),
                 fmt(p99, "%.0f"), str(n), "" if cpu is None else "%.2f (%s)" % (cpu, whose)])
if pair:
    pair_row("veth", "bare underlay (veth)")
    pair_row("ddpnet", "ddp0")
    pair_row("wireguard-go", "wireguard-go (Debian)")
    for x in extras:
        pair_row(x, x)
if "relay" in parts:
    mesh_row("ddp0", "ddp0 m1 -> m2 direct", "cpu_ends_s_per_gb", "both ends")
    mesh_row("relay", "ddp0 m1 -> m3 -> m2 relayed", "cpu_relay_s_per_gb", "the relay, per GB forwarded")
if rows:
    table(["path", "testbed", "1 stream Gbit/s", "ping avg µs", "p99 µs", "echoes", "CPU-s/GB"], rows)
    for n in ["relay"] if "relay" in parts else []:
        for note in notes(n, mesh):
            print("    note %s: %s" % (n, note))
else:
    print("  (no part that measures paths ran)")

# --- targets ----------------------------------------------------------------
results = []
def target(text, value, ok, na=None):
    if ok is None:
        results.append("n/a")
        print("TARGET %s: n/a (%s)" % (text, na or "not measured"))
    else:
        results.append("PASS" if ok else "FAIL")
        print("TARGET %s: %s %s" % (text, value, "PASS" if ok else "FAIL"))

def judge(r, test):
    return None if r is None else test(r)

def why_not(part, why, what):
    if part not in parts:
        return why or "part %s not run (BENCH_ONLY)" % part
    return what

print()
for key, i, limit, size in (("big", 0, AR_BIG_MAX, "64MiB"), ("small", 1, AR_SMALL_MAX, "64KiB")):
    r = ratio(ar["ddp0"][i], ar["bare"][i]) if "ddp0" in ar and "bare" in ar else None
    target("all_reduce %s ddp0/bare <= %.1fx" % (size, limit), times(r), judge(r, lambda v: v <= limit),
           why_not("allreduce", why_ar, "no all_reduce result for ddp0 or bare"))
direct, relayed = mesh_med("ddp0", "stream_gbps"), mesh_med("relay", "stream_gbps")
r = ratio(relayed, direct)
target("relay/direct >= %.1fx" % RELAY_MIN,
       "%s (%s / %s Gbit/s)" % (times(r), fmt(relayed), fmt(direct)), judge(r, lambda v: v >= RELAY_MIN),
       why_not("relay", why_relay, "no relayed or direct stream"))
if not extras:
    target("ping ddp0/wggo-new <= %.1fx" % PING_VS_WGGO_MAX, "", None, "no wireguard-go given")
for x in extras:
    a, b = pair_med("ddpnet", "ping_avg_us"), pair_med(x, "ping_avg_us")
    r = ratio(a, b)
    target("ping ddp0/%s <= %.1fx" % (x, PING_VS_WGGO_MAX),
           "%s (%s / %s µs)" % (times(r), fmt(a, "%.0f"), fmt(b, "%.0f")), judge(r, lambda v: v <= PING_VS_WGGO_MAX),
           why_not("pair", "", "no ping through ddp0 or %s" % x))
c = pair_med("ddpnet", "cpu_s_per_gb")
target("CPU-s/GB both daemons <= %.1f" % CPU_MAX, fmt(c), judge(c, lambda v: v <= CPU_MAX),
       why_not("pair", "", "no ddpnet CPU figure"))
print("targets of issue 19: %d passed, %d failed, %d n/a" %
      (results.count("PASS"), results.count("FAIL"), results.count("n/a")))
sys.exit(1 if "FAIL" in results else (2 if "n/a" in results else 0))
PYEOF
}

# report_issue32 RESULTS.TSV MESH.TSV CORES.TSV RTT-DIR PARTS WHY-RELAY NAME=KIND...
# Issue 32 (the tunnel carries what the machine can): every two-node
# contender side by side (1, 4 and 8 streams, ping average and p99, CPU-s
# per GB), then one "TARGET ...: VALUE PASS|FAIL" line per target, or n/a
# with the reason: a contender that was not given or did not run, a part
# that was not run, a machine with too few cores for the 16-core targets.
# NAME=KIND are BENCH_EXTRA's contenders (kind wg or nebula); the newest
# wireguard-go is the wg one with the greatest name (wggo-YYYYMMDD).
# Returns 0 when every target passed, 1 when one failed, 2 when none
# failed but one was n/a.
report_issue32() {
    BENCH_DIR="$BENCH_DIR" "$PY" - "$@" <<'PYEOF'
import os, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
from report_fmt import num, fmt, ratio, times, read, med

PING_VS_LOWEST_MAX = 1.0    # ddp0 / the lowest contender's ping average
PING_VS_WGGO_MAX = 0.5      # ddp0 / the newest wireguard-go's ping average
STREAM_VS_WGGO_MIN = 2.0    # one stream, ddp0 / the newest wireguard-go
CPU_VS_WGGO_MAX = 0.4       # CPU-s per GB, ddp0 / the newest wireguard-go
RELAY_MIN = 0.6             # relayed / direct stream
BIG_CORES = 16              # the 16-core targets are judged from here up
P8_MIN_GBPS = 25.0
ONE_MIN_GBPS = 12.0
DOUBLING_MIN = 1.6          # rate at 2N cores / rate at N, N = 1, 2, 4
PING_MAX_US = 100.0
AR_BIG_MAX, AR_SMALL_MAX = 2.0, 1.3

tsv, mesh_tsv, cores_tsv, rtt_dir, parts, why_relay = sys.argv[1:7]
extras = [a.split("=", 1) for a in sys.argv[7:]]
parts = parts.split()
ncpu = os.cpu_count() or 0

pair = read(tsv) if "pair" in parts else []
mesh = read(mesh_tsv) if ("relay" in parts or "allreduce" in parts) else []
cores = read(cores_tsv) if "cores" in parts else []

def pm(name, key):
    return med([num(r.get(key, "NA")) for r in pair if r["contender"] == name])

def mm(name, metric):
    return med([num(r["value"]) for r in mesh if r["contender"] == name and r["metric"] == metric])

def p99(name):
    try:
        v = sorted(float(l) for l in open(os.path.join(rtt_dir, name + ".txt")) if l.strip())
    except OSError:
        return None
    return v[-(-99 * len(v) // 100) - 1] if v else None

def notes(name):
    return sorted({r["note"] for r in pair if r["contender"] == name and r.get("note")})

names = []
for r in pair:
    if r["contender"] not in names:
        names.append(r["contender"])
wg_new = sorted(n for n, k in extras if k == "wg")
wg_new = wg_new[-1] if wg_new else None
nebulas = [n for n, k in extras if k == "nebula"]

print()
print("=== issue 32: every contender side by side (%d CPUs) ===" % ncpu)
if pair:
    head = ["contender", "1 stream", "4 streams", "8 streams", "ping avg", "ping p99", "CPU-s/GB",
            "CPU-s/GB", "rounds"]
    rows = [head, ["", "Gbit/s", "Gbit/s", "Gbit/s", "µs", "µs", "both daemons", "event loops",
                   ""]]
    for n in names:
        ok = sum(1 for r in pair if r["contender"] == n and num(r["ab_gbps"]) is not None)
        tot = sum(1 for r in pair if r["contender"] == n)
        rows.append([n, fmt(pm(n, "ab_gbps")), fmt(pm(n, "p4_gbps")), fmt(pm(n, "p8_gbps")),
                     fmt(pm(n, "ping_avg_us"), "%.0f"), fmt(p99(n), "%.0f"),
                     fmt(pm(n, "cpu_s_per_gb")), fmt(pm(n, "loop_cpu_s_per_gb")),
                     "%d/%d" % (ok, tot)])
    w = [max(len(str(x)) for x in col) + 2 for col in zip(*rows)]
    for row in rows:
        print("  " + "".join(str(x).ljust(k) for x, k in zip(row, w)).rstrip())
    for n in names:
        for note in notes(n):
            print("    note %s: %s" % (n, note))
    print("  (ping p99: every echo of every round together; the rest: medians of the rounds;")
    print("  CPU-s/GB over the one-stream test; event loops: ddpnet's two loop threads alone,")
    print("  the thread that caps the rate where workers and lanes take the rest)")
    for n in names:
        if not n.startswith("ddpnet-bp-"):
            continue
        print("  busy-poll = %s vs the default: ping avg %s, p99 %s, one stream %s, CPU-s/GB %s; "
              "idle daemons %s vs %s %% of a core" % (n[len("ddpnet-bp-"):],
              times(ratio(pm(n, "ping_avg_us"), pm("ddpnet", "ping_avg_us"))),
              times(ratio(p99(n), p99("ddpnet"))), times(ratio(pm(n, "ab_gbps"), pm("ddpnet", "ab_gbps"))),
              times(ratio(pm(n, "cpu_s_per_gb"), pm("ddpnet", "cpu_s_per_gb"))),
              fmt(pm(n, "idle_pct_core"), "%.0f"), fmt(pm("ddpnet", "idle_pct_core"), "%.0f")))
else:
    print("  (part pair not run)")

results = []
def target(text, value, ok, na):
    if ok is None:
        results.append("n/a")
        print("TARGET %s: n/a (%s)" % (text, na))
    else:
        results.append("PASS" if ok else "FAIL")
        print("TARGET %s: %s %s" % (text, value, "PASS" if ok else "FAIL"))

def judge(v, test):
    return None if v is None else test(v)

FETCH_WG = 'no newer wireguard-go given: BENCH_EXTRA="$(bench/fetch-wireguard-go.sh)"'
FETCH_NEB = 'no Nebula given: BENCH_EXTRA="$(bench/fetch-nebula.sh)"'

def pair_na(what):
    return "part pair not run (BENCH_ONLY)" if "pair" not in parts else what

print()
print("targets of issue 32, 2 vCPUs (ratios within this run, any machine)")
d_ping = pm("ddpnet", "ping_avg_us")
# The lowest contender: every tunnel other than ddpnet and the bare veth;
# n/a until both references the issue names (newest wireguard-go, Nebula)
# have a figure, so a missing one never makes the target easier.
others = {n: pm(n, "ping_avg_us") for n in names if n != "veth" and not n.startswith("ddpnet")}
missing = [why for cond, why in ((wg_new is None, FETCH_WG), (not nebulas, FETCH_NEB)) if cond]
missing += ["no ping through %s" % n for n, v in others.items() if v is None]
if d_ping is None:
    missing.append("no ping through ddp0")
if missing:
    target("ping ddp0 <= lowest contender", "", None, pair_na("; ".join(missing)))
else:
    low = min(others, key=others.get)
    r = ratio(d_ping, others[low])
    target("ping ddp0 <= lowest contender", "%s µs vs %s %s µs (%s)" % (fmt(d_ping, "%.0f"), low,
           fmt(others[low], "%.0f"), times(r)), judge(r, lambda v: v <= PING_VS_LOWEST_MAX), "")

def vs_wg(text, key, limit, test, unit="", f="%.2f"):
    if wg_new is None:
        target(text % "newest wireguard-go", "", None, pair_na(FETCH_WG))
        return
    a, b = pm("ddpnet", key), pm(wg_new, key)
    r = ratio(a, b)
    target(text % wg_new, "%s (%s / %s%s)" % (times(r), fmt(a, f), fmt(b, f), unit), judge(r, test),
           pair_na("no figure for ddp0 or %s" % wg_new))

vs_wg("ping ddp0/%%s <= %.1fx" % PING_VS_WGGO_MAX, "ping_avg_us", PING_VS_WGGO_MAX,
      lambda v: v <= PING_VS_WGGO_MAX, " µs", "%.0f")
vs_wg("one stream ddp0/%%s >= %.1fx" % STREAM_VS_WGGO_MIN, "ab_gbps", STREAM_VS_WGGO_MIN,
      lambda v: v >= STREAM_VS_WGGO_MIN, " Gbit/s")
vs_wg("CPU-s/GB ddp0/%%s <= %.1fx" % CPU_VS_WGGO_MAX, "cpu_s_per_gb", CPU_VS_WGGO_MAX,
      lambda v: v <= CPU_VS_WGGO_MAX)
direct, relayed = mm("ddp0", "stream_gbps"), mm("relay", "stream_gbps")
r = ratio(relayed, direct)
target("relay/direct >= %.1fx" % RELAY_MIN, "%s (%s / %s Gbit/s)" % (times(r), fmt(relayed), fmt(direct)),
       judge(r, lambda v: v >= RELAY_MIN),
       (why_relay or "part relay not run (BENCH_ONLY)") if "relay" not in parts else "no relayed or direct stream")

print()
print("targets of issue 32, 16 cores (judged on a machine with >= %d CPUs)" % BIG_CORES)
small = None if ncpu >= BIG_CORES else "this machine has %d CPUs, fewer than %d" % (ncpu, BIG_CORES)
def big(text, value, ok, na):
    target(text, value, None if small else ok, small or na)
v = pm("ddpnet", "p8_gbps")
big("8 streams >= %.0f Gbit/s" % P8_MIN_GBPS, fmt(v), judge(v, lambda x: x >= P8_MIN_GBPS),
    pair_na("no 8-stream figure for ddp0"))
v = pm("ddpnet", "ab_gbps")
big("one stream >= %.0f Gbit/s" % ONE_MIN_GBPS, fmt(v), judge(v, lambda x: x >= ONE_MIN_GBPS),
    pair_na("no one-stream figure for ddp0"))
v = pm("ddpnet", "ping_avg_us")
big("ping avg <= %.0f µs" % PING_MAX_US, fmt(v, "%.0f"), judge(v, lambda x: x <= PING_MAX_US),
    pair_na("no ping through ddp0"))
# Core scaling: per N, the median rate at the most streams measured there,
# in shards mode where it ran (cores.sh's default), else in workers mode.
cmodes = {r.get("mode", "workers") for r in cores if r["contender"] == "ddpnet"}
cmode = "shards" if "shards" in cmodes else "workers"
rate = {}
for n in (1, 2, 4, 8):
    rs = [r for r in cores if r["contender"] == "ddpnet" and r["cores"] == str(n)
          and r.get("mode", "workers") == cmode]
    if rs:
        s = max(int(r["streams"]) for r in rs)
        rate[n] = med([num(r["gbps"]) for r in rs if int(r["streams"]) == s])
for n in (1, 2, 4):
    r = ratio(rate.get(2 * n), rate.get(n))
    big("cores %d -> %d rate >= %.1fx (%s)" % (n, 2 * n, DOUBLING_MIN, cmode),
        "%s (%s / %s Gbit/s)" % (times(r), fmt(rate.get(2 * n)), fmt(rate.get(n))),
        judge(r, lambda x: x >= DOUBLING_MIN),
        "part cores not run (BENCH_ONLY)" if "cores" not in parts else "no rate at %d or %d cores" % (n, 2 * n))
for metric, limit, size in (("ar_big_s", AR_BIG_MAX, "64MiB"), ("ar_small_s", AR_SMALL_MAX, "64KiB")):
    r = ratio(mm("ddp0", metric), mm("bare", metric))
    big("all_reduce %s ddp0/bare <= %.1fx" % (size, limit), times(r), judge(r, lambda x: x <= limit),
        "part allreduce not run (BENCH_ONLY)" if "allreduce" not in parts else "no all_reduce result")
print("targets of issue 32: %d passed, %d failed, %d n/a" %
      (results.count("PASS"), results.count("FAIL"), results.count("n/a")))
sys.exit(1 if "FAIL" in results else (2 if "n/a" in results else 0))
PYEOF
}

# report_issue45 KEY=VALUE...: issue 45's 16-core targets, one summary
# block ("=== issue 45, 16-core targets ===", then one "ISSUE45 TARGET:
# VALUE PASS|FAIL" or "ISSUE45 TARGET: n/a (WHY)" line per target), from
# the rows of the parts that measure them, which may come from separate
# runs of bench.sh (device-run.sh runs one part at a time):
#   pair=RESULTS.TSV   pair_why=WHY       8 streams, one stream, CPU-s/GB, ping
#   mesh=MESH.TSV      allreduce_why=WHY  all_reduce 64 MiB and 64 KiB / bare
#   cores=CORES.TSV    cores_why=WHY      each doubling 1 -> 8 (shards mode)
#   cores_left=TEXT    the N cores.sh left out and why
#   env=WORDS          the daemons' environment in pair and allreduce
#                      (BENCH_DDPNET_ENV), printed as the configuration
#   ncpu=N             judge as if the machine had N CPUs (to check the
#                      report itself on a small machine)
# A WHY that is not empty means the part did not measure (not run, cut
# short, could not run): its targets read n/a with it. On a machine with
# fewer than 16 CPUs (its affinity) every target is n/a, with the figure
# that was measured shown beside the reason. Returns 0 when every target
# passed, 1 when one failed, 2 when none failed but one was n/a.
report_issue45() {
    BENCH_DIR="$BENCH_DIR" "$PY" - "$@" <<'PYEOF'
import os, sys
sys.path.insert(0, os.environ["BENCH_DIR"])
from report_fmt import num, fmt, ratio, times, read, med

BIG_CORES = 16
P8_MIN_GBPS = 25.0
ONE_MIN_GBPS = 12.0
CPU_MAX = 2.5               # CPU-s per GB, both daemons, one stream
DOUBLING_MIN = 1.6          # rate at 2N cores / at N, N = 1, 2, 4 (shards mode)
PING_MAX_US = 100.0
AR_BIG_MAX, AR_SMALL_MAX = 2.0, 1.3

arg = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
get = lambda k: arg.get(k, "")
try:
    ncpu = len(os.sched_getaffinity(0))
except AttributeError:
    ncpu = os.cpu_count() or 0
if get("ncpu"):
    ncpu = int(get("ncpu"))     # ncpu=16: to check the judging on a small machine
pair = read(get("pair")) if get("pair") and not get("pair_why") else []
mesh = read(get("mesh")) if get("mesh") and not get("allreduce_why") else []
cores = read(get("cores")) if get("cores") and not get("cores_why") else []

def pm(key):
    return med([num(r.get(key)) for r in pair if r["contender"] == "ddpnet"])

def mm(name, metric):
    return med([num(r["value"]) for r in mesh if r["contender"] == name and r["metric"] == metric])

env = get("env").split()
shards = next((w.split("=", 1)[1] for w in env if w.startswith("DDPNET_SHARDS=")), None)
print()
print("=== issue 45, 16-core targets (%d CPUs) ===" % ncpu)
print("  ddpnet's daemons in pair and allreduce: %s" %
      ("%s (BENCH_DDPNET_ENV): %s shards each" % (" ".join(env), shards) if shards and shards != "1"
       else "%s: one loop (DDPNET_SHARDS unset or 1), NOT the sharded path" % (" ".join(env) or "the defaults")))
print("  cores per daemon: shards mode of the cores part (DDPNET_SHARDS=N under taskset, no workers)")

results = []
small = None if ncpu >= BIG_CORES else "this machine has %d CPUs, fewer than %d" % (ncpu, BIG_CORES)

def target(text, value, ok, na):
    """ok: True/False, or None with na the reason; value: what was measured."""
    if small:
        na = small + ("; measured %s" % value if ok is not None and value else "; " + na)
        ok = None
    if ok is None:
        results.append("n/a")
        print("ISSUE45 %s: n/a (%s)" % (text, na))
    else:
        results.append("PASS" if ok else "FAIL")
        print("ISSUE45 %s: %s %s" % (text, value, "PASS" if ok else "FAIL"))

def pair_target(text, key, test, f, unit):
    v = pm(key)
    target(text, "" if v is None else fmt(v, f) + unit, None if v is None else test(v),
           get("pair_why") or "no %s figure for ddp0 in %s" % (key, get("pair") or "(no pair rows)"))

pair_target("8 streams >= %.0f Gbit/s" % P8_MIN_GBPS, "p8_gbps", lambda v: v >= P8_MIN_GBPS, "%.2f", " Gbit/s")
pair_target("1 stream >= %.0f Gbit/s" % ONE_MIN_GBPS, "ab_gbps", lambda v: v >= ONE_MIN_GBPS, "%.2f", " Gbit/s")
pair_target("CPU-s/GB <= %.1f (both daemons, one stream)" % CPU_MAX, "cpu_s_per_gb", lambda v: v <= CPU_MAX,
            "%.2f", " CPU-s/GB")

# Each doubling: the shards-mode median rate per N at the most streams
# measured there; one line, FAIL if any doubling measured fails.
rows = [r for r in cores if r["contender"] == "ddpnet" and r.get("mode", "workers") == "shards"]
rate, shared, top = {}, [], None
if rows:
    top = max(int(r["streams"]) for r in rows)
    for n in (1, 2, 4, 8):
        rs = [r for r in rows if r["cores"] == str(n) and int(r["streams"]) == top]
        if rs:
            rate[n] = med([num(r["gbps"]) for r in rs])
            if any(r.get("iperf3") == "shared" for r in rs):
                shared.append(n)
parts, oks, missing = [], [], []
for n in (1, 2, 4):
    r = ratio(rate.get(2 * n), rate.get(n))
    if r is None:
        missing.append("%d -> %d" % (n, 2 * n))
    else:
        parts.append("%d -> %d %s" % (n, 2 * n, times(r)))
        oks.append(r >= DOUBLING_MIN)
value = ", ".join(parts) + (" (%s streams, Gbit/s %s)" % (top, " / ".join(
    "N=%d %s" % (n, fmt(rate[n])) for n in sorted(rate))) if parts else "")
if shared:
    value += "; N=%s with iperf3 on the daemons' CPUs (a lower bound)" % ",".join(map(str, shared))
why = get("cores_why")
if not why:
    if not rows:
        why = "no shards-mode rows in %s" % (get("cores") or "(no cores rows)")
    else:
        why = "no rate for %s in shards mode" % ", ".join(missing)
    if get("cores_left"):
        why += " (%s)" % get("cores_left")
if missing and not (oks and not all(oks)):
    ok = None
    if parts:
        why += "; measured %s" % value
else:
    ok = all(oks)
target("each doubling of cores per daemon from 1 to 8 >= %.1fx" % DOUBLING_MIN, value, ok, why)

pair_target("ping avg <= %.0f µs" % PING_MAX_US, "ping_avg_us", lambda v: v <= PING_MAX_US, "%.0f", " µs")
for metric, limit, size in (("ar_big_s", AR_BIG_MAX, "64 MiB"), ("ar_small_s", AR_SMALL_MAX, "64 KiB")):
    a, b = mm("ddp0", metric), mm("bare", metric)
    r = ratio(a, b)
    f, k = ("%.3f s", 1) if metric == "ar_big_s" else ("%.2f ms", 1e3)
    target("all_reduce %s ddp0/bare <= %.1fx" % (size, limit),
           "" if r is None else "%s (%s / %s)" % (times(r), f % (a * k), f % (b * k)),
           None if r is None else r <= limit,
           get("allreduce_why") or "no all_reduce result for ddp0 or bare in %s" % (get("mesh") or "(no mesh rows)"))
print("issue 45, 16-core targets: %d passed, %d failed, %d n/a" %
      (results.count("PASS"), results.count("FAIL"), results.count("n/a")))
sys.exit(1 if "FAIL" in results else (2 if "n/a" in results else 0))
PYEOF
}

# Issue 61 (what the rules cost): from bench/rules.sh's log, its medians
# line ("rules: medians ... ratio rate R, CPU per GB C"), one
# "TARGET ...: VALUE PASS|FAIL" line each for the rate and the CPU per GB
# with a dozen rules and three groups beside none (within 3%: rate ratio
# at least 0.97, CPU ratio at most 1.03), or n/a with WHY. Returns 0 when
# both passed, 1 when one failed, 2 when not measured.
report_rules() {
    local log=$1 why=${2:-} line r c
    echo "== issue 61: the rules' cost (12 rules, 3 groups, beside none; bench/rules.sh)"
    line=$(grep 'rules: medians' "$log" 2>/dev/null | tail -n 1)
    if [ -n "$why" ] || [ -z "$line" ]; then
        echo "TARGET rules: rate and CPU per GB within 3% of none: n/a (${why:-no medians line in $log})"
        return 2
    fi
    echo "${line#*bench: }"
    r=$(sed -n 's/.*ratio rate \([0-9.]*\),.*/\1/p' <<<"$line")
    c=$(sed -n 's/.*CPU per GB \([0-9.]*\)$/\1/p' <<<"$line")
    awk -v r="$r" -v c="$c" 'BEGIN {
        rp = r >= 0.97; cp = c <= 1.03
        printf "TARGET rules: rate with rules / none >= 0.97: %s %s\n", r, rp ? "PASS" : "FAIL"
        printf "TARGET rules: CPU per GB with rules / none <= 1.03: %s %s\n", c, cp ? "PASS" : "FAIL"
        exit (rp && cp) ? 0 : 1 }'
}
