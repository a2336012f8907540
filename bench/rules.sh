#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the rules cost (issue 61): ddp0's rate and the daemons' CPU per GB
# with a dozen rules and three groups written, beside none, on lib.sh's
# two-node testbed. One pair of daemons for the whole run; each round
# reloads both with one file, measures, then the other (the order turns
# every round, so the noise of a shared machine falls on both alike):
# iperf3 a -> b, RULES_STREAMS streams (default 1) for BENCH_SECONDS, the
# receiver's rate, both daemons' CPU seconds (every thread) per GB. The
# rule that allows the stream is the last of the dozen (the others never
# match it): the worst place, though a connection is matched once and its
# packets then only find it in the connection table.
#
#   sudo flock /tmp/ddpnet-rate.lock bench/rules.sh     (BENCH_ROUNDS=5, BENCH_SECONDS=5)
#
# Prints each round's figures, then "rules: medians ..." and the ratios
# (rules over none); issue 61's target is within 3% for both.
set -u
. "$(dirname "$0")/lib.sh"

BENCH_ROUNDS=${BENCH_ROUNDS:-5}
BENCH_SECONDS=${BENCH_SECONDS:-5}
RULES_STREAMS=${RULES_STREAMS:-1}

calc() { awk "BEGIN { printf \"%.4f\", $1 }"; }
median() { sort -g | awk '{ v[n++] = $1 } END { if (n % 2) print v[int(n / 2)]; else printf "%.4f\n", (v[n / 2 - 1] + v[n / 2]) / 2 }'; }

bench_init
bench_testbed

# write_file FILE [RULES]: the two nodes, both "train"; with RULES, the dozen.
write_file() {
    {
        printf '[cluster]\nnetwork = %s\nport = %s\nmtu = %s\n' "$TN_NET" "$WG_PORT" "$TN_MTU"
        printf '\n[node bench-a]\npublic-key = %s\naddress = %s\nendpoint = %s:%s\ngroups = train\n' \
            "$(cat "$T/a/pub")" "$TN_A" "$UL_A" "$WG_PORT"
        printf '\n[node bench-b]\npublic-key = %s\naddress = %s\nendpoint = %s:%s\ngroups = train\n' \
            "$(cat "$T/b/pub")" "$TN_B" "$UL_B" "$WG_PORT"
        [ -z "${2:-}" ] || cat <<EOF

[rules]
allow spot -> train tcp 29400-29600
allow spot -> train udp 29400-29600
allow monitor -> any tcp 9586
allow monitor -> any tcp 9100
allow spot -> monitor tcp 3000
allow train -> monitor udp 8125
allow train -> spot tcp 29400-29600
allow spot -> spot tcp 1024-65535
allow monitor -> train tcp 22
allow any -> any icmp
allow train -> train udp 1024-65535
allow train -> train tcp $IPERF_PORT
EOF
    } >"$1"
}
write_file "$T/none.conf"
write_file "$T/rules.conf" rules
"$DDPNET" check -c "$T/rules.conf" >"$T/check.out" 2>&1 || fail "check: $(cat "$T/check.out")"

for n in a b; do
    cp "$T/none.conf" "$T/$n/cluster.conf"
    nx "$n" timeout 30 "$DDPNET" up -c "$T/$n/cluster.conf" -k "$T/$n/key" --run-dir "$T/$n/run" \
        --hosts-file "$T/$n/hosts" >"$T/$n/up.log" 2>&1 || fail "up on $n: $(cat "$T/$n/up.log")"
done
nx a ping -n -c 1 -w 15 "$TN_B" >/dev/null || fail "no ping through ddp0"
PA=$(node_daemon a) PB=$(node_daemon b)

use() {   # use CONF: both nodes reload it
    local n
    for n in a b; do
        cp "$T/$1.conf" "$T/$n/cluster.conf"
        nx "$n" timeout 20 "$DDPNET" reload --run-dir "$T/$n/run" >"$T/$n/reload.out" 2>&1 ||
            fail "reload $1 on $n: $(cat "$T/$n/reload.out")"
    done
}

printf 'round\tconf\tgbps\tcpu_s_per_gb\n' >"$T/rows.tsv"
for r in $(seq 1 "$BENCH_ROUNDS"); do
    order="none rules"
    [ $((r % 2)) -eq 0 ] && order="rules none"
    for conf in $order; do
        use "$conf"
        t0=$(cpu_ticks "$PA" "$PB")
        res=$(iperf_run a b "$TN_B" "$T/iperf-$r-$conf.json" -P "$RULES_STREAMS") || fail "iperf3 ($conf)"
        t1=$(cpu_ticks "$PA" "$PB")
        read -r bps bytes <<<"$res"
        gbps=$(calc "$bps / 1e9")
        per=$(calc "($t1 - $t0) / $CLK_TCK / ($bytes / 1e9)")
        printf '%s\t%s\t%s\t%s\n' "$r" "$conf" "$gbps" "$per" >>"$T/rows.tsv"
        say "round $r, $conf: $gbps Gbit/s, $per CPU-s/GB"
    done
done
ddp=$(nx b timeout 10 "$DDPNET" status --run-dir "$T/b/run" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["rules"])')
say "b's rules after the run: $ddp"
for conf in none rules; do
    g=$(awk -v c="$conf" '$2 == c { print $3 }' "$T/rows.tsv" | median)
    c=$(awk -v c="$conf" '$2 == c { print $4 }' "$T/rows.tsv" | median)
    eval "G_$conf=$g C_$conf=$c"
done
say "rules: medians over $BENCH_ROUNDS rounds of ${BENCH_SECONDS} s, $RULES_STREAMS stream(s): none $G_none Gbit/s $C_none CPU-s/GB; 12 rules, 3 groups $G_rules Gbit/s $C_rules CPU-s/GB; ratio rate $(calc "$G_rules / $G_none"), CPU per GB $(calc "$C_rules / $C_none")"
