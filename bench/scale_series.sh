#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make scale` (issue 59): bench/scale.sh once per size of SCALE_SIZES
# (default "64 128 256") through one etcd, each started at once, and once
# under an authority (no etcd) at SCALE_AUTHORITY_NODES (default 128; ""
# for none); the largest etcd run last (it loads the machine most). Then
# a table of the per-node costs by size and the targets that compare
# sizes: idle CPU and idle datagrams per node growing at most linearly
# with N (from the smallest size to the largest, the per-node figure
# grows by no more than the ratio of the sizes). Each run's own targets
# (0 failed ups, the full mesh in time) are scale.sh's. Logs in
# SCALE_OUT (build/scale/). Root; several minutes per size.
set -u
cd "$(dirname "$0")/.."
SIZES=${SCALE_SIZES:-64 128 256}
AUTH=${SCALE_AUTHORITY_NODES-128}
OUT=${SCALE_OUT:-build/scale}
mkdir -p "$OUT"
rc=0
# run NAME AUTHORITY NODES: one scale.sh run, its log in $OUT/NAME.log.
run() {
    echo "== scale series: $1"
    SCALE_AUTHORITY=$2 SCALE_NODES=$3 bench/scale.sh 2>&1 | tee "$OUT/$1.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "FAIL: $1: scale.sh failed"; rc=1; }
}
sorted=$(tr ' ' '\n' <<<"$SIZES" | grep . | sort -n)
largest=$(tail -n 1 <<<"$sorted")
for n in $sorted; do
    [ "$n" = "$largest" ] || run "etcd-$n" 0 "$n"
done
[ -z "$AUTH" ] || run "authority-$AUTH" 1 "$AUTH"
run "etcd-$largest" 0 "$largest"

logs=()
for n in $sorted; do logs+=("$OUT/etcd-$n.log"); done
[ -z "$AUTH" ] || logs+=("$OUT/authority-$AUTH.log")
python3 - "${logs[@]}" <<'EOF' || rc=1
import sys
rows = []
for path in sys.argv[1:]:
    try:
        line = [l for l in open(path) if l.startswith('scale: summary ')][-1]
    except (OSError, IndexError):
        print(f'scale series: {path}: no summary (the run failed)')
        continue
    rows.append(dict(kv.split('=', 1) for kv in line.split()[2:]))
cols = [('failed', 'failed ups'), ('registered_s', 'all registered s'),
        ('mesh_s', 'full mesh s'), ('rss_med_kib', 'RSS median KiB'),
        ('rss_max_kib', 'RSS max KiB'), ('cpu_pct', 'idle CPU % core/node'),
        ('etcd_per_min', 'etcd req/node/min idle'), ('udp_per_s', 'datagrams/node/s idle'),
        ('hosts_writes', 'hosts writes/node start')]
print('| run | ' + ' | '.join(c[1] for c in cols) + ' |')
print('| --- ' * (len(cols) + 1) + '|')
for r in rows:
    name = ('authority ' if r['authority'] == '1' else 'etcd ') + r['nodes']
    print(f'| {name} | ' + ' | '.join(r[c[0]] for c in cols) + ' |')
etcd = sorted((r for r in rows if r['authority'] == '0'), key=lambda r: int(r['nodes']))
ok = True
if len(etcd) >= 2:
    a, b = etcd[0], etcd[-1]
    k = int(b['nodes']) / int(a['nodes'])
    for key, what in (('cpu_pct', 'idle CPU per node'), ('udp_per_s', 'idle datagrams per node')):
        x, y = float(a[key]), float(b[key])
        g = y / x if x else float('inf') if y else 1.0
        v = 'PASS' if g <= k else 'FAIL'
        ok &= v == 'PASS'
        print(f'{v}: {what} grew x{g:.2f} from {a["nodes"]} to {b["nodes"]} nodes '
              f'(at most linear: x{k:.2f})')
sys.exit(0 if ok else 1)
EOF
exit $rc
