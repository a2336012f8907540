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
    "$PY" - "$@" <<'PYEOF'
import re, statistics, sys

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

def num(v):
    return None if v in ("", "NA") else float(v)

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

def fmt(v, f="%.2f"):
    return "–" if v is None else f % v

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

def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b

def times(r):
    return "–" if r is None else "%.2fx" % r

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
