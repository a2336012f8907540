# SPDX-License-Identifier: MIT
# The `flows` part of `make bench` (sourced after lib.sh, tunnels.sh and
# wan.sh, whose router testbed it shares): issue 57, one node pair's
# traffic over several UDP flows. Nodes a and b are behind a router
# namespace; each phase of a round sets the router up, then brings up each
# contender in turn (bare TCP, ddp0, each ddpnet variant: always
# `flows1`, DDPNET_FLOWS=1, today's one flow; BENCH_DDPNET_VARIANTS adds
# others, e.g. the build before flows as DDPNET=PATH):
#
#   clean   no policer, no delay: iperf3 a -> b with 1 stream (the daemons'
#           CPU-s per GB) and FLOWS_STREAMS_LOW (4), ping: what flows cost
#           where there is no cap
#   capped  every 5-tuple policed at FLOWS_CAP_MBIT (200) by xt_hashlimit
#           through iptables-nft, as a cloud's per-flow limit, then wan.sh's
#           delay line, FLOWS_RTT ms (20), and a tbf at FLOWS_LINK_MBIT (2000):
#           1 stream (at most one flow's cap), 4 and 8 streams
#   nat     the same, a behind a cone NAT (masquerade; only replies get in
#           to a): 4 and 8 streams a -> b
#
#   [a] veth0 10.79.1.1 --- toa [ r: hashlimit, NAT, delay lines; tbf ] tob --- veth0 10.79.2.1 [b]
#
# Per run: the receiver's rate, b's TcpExtTCPOFOQueue delta (segments
# queued out of order: after a loss as much as after reordering), a's
# reordering seen (TcpExtTCPSACKReorder + TCPTSReorder + TCPRenoReorder:
# the sender's count of segments that came late but were not lost) and
# both daemons' replay drops; a's and b's
# `ddpnet status` line of the other (how many flows) once per contender
# and phase. The part brings the relay part with it (three nodes, the
# relayed path, mesh.sh), which runs each variant too (relay-NAME); the
# report puts it beside. Raw rows in $BENCH_OUT/flows.tsv, status lines in
# $BENCH_OUT/flows-status.txt.

F_NAME=() F_KIND=() F_BIN=()

flows_config() {
    FLOWS_ROUNDS=$BENCH_ROUNDS
    FLOWS_SECONDS=${FLOWS_SECONDS:-3}
    FLOWS_OMIT=${FLOWS_OMIT:-2}        # seconds left out: slow start and the policer's burst
    FLOWS_CAP_MBIT=${FLOWS_CAP_MBIT:-200}
    FLOWS_RTT=${FLOWS_RTT:-20}
    FLOWS_LINK_MBIT=${FLOWS_LINK_MBIT:-2000}
    FLOWS_STREAMS_LOW=${FLOWS_STREAMS_LOW:-4}
    FLOWS_STREAMS_HIGH=${FLOWS_STREAMS_HIGH:-8}
    # The capped phases first: what the part is for, and what fails first.
    FLOWS_PHASES=${FLOWS_PHASES:-capped nat clean}
    local v
    for v in FLOWS_SECONDS FLOWS_CAP_MBIT FLOWS_RTT FLOWS_LINK_MBIT FLOWS_STREAMS_LOW FLOWS_STREAMS_HIGH; do
        positive_int "$v" "${!v}"
    done
    case "$FLOWS_OMIT" in ''|*[!0-9]*) usage_error "FLOWS_OMIT=$FLOWS_OMIT: want an integer" ;; esac
    for v in $FLOWS_PHASES; do
        case "$v" in clean|capped|nat) ;; *) usage_error "FLOWS_PHASES: no phase '$v' (clean, capped, nat)" ;; esac
    done
}

# flows_contenders: F_* from bench.sh's C_*: bare TCP, ddpnet, each ddpnet
# variant (flows1, DDPNET_FLOWS=1, added when none is named so) and each
# BENCH_EXTRA WireGuard.
flows_contenders() {
    local i
    F_NAME=() F_KIND=() F_BIN=()
    for i in "${!C_NAME[@]}"; do
        case "${C_KIND[i]}" in
        veth|ddpnet) ;;
        wg) case " ${EXTRA_WG[*]} " in *" ${C_NAME[i]} "*) ;; *) continue ;; esac ;;
        *) continue ;;
        esac
        F_NAME+=("${C_NAME[i]}") F_KIND+=("${C_KIND[i]}") F_BIN+=("${C_BIN[i]}")
    done
    case " ${F_NAME[*]} " in
    *" ddpnet-flows1 "*) ;;
    *) F_NAME+=(ddpnet-flows1) F_KIND+=(ddpnet) F_BIN+=("env=DDPNET_FLOWS=1") ;;
    esac
}

# flows_mesh_variants: the relay part's extra contenders, one per ddpnet
# variant of this part (relay-NAME: mesh.sh brings m1..m3 up with it).
flows_mesh_variants() {
    local i
    part_on relay || return 0
    for i in "${!F_NAME[@]}"; do
        case "${F_NAME[i]}" in ddpnet-*) ;; *) continue ;; esac
        case "${F_BIN[i]}" in env=*) ;; *) continue ;; esac
        M_NAME+=("relay-${F_NAME[i]#ddpnet-}") M_KIND+=(relay) M_BIN+=("${F_BIN[i]}")
    done
}

flows_usable() {
    command -v iptables-nft >/dev/null 2>&1 || { echo "no iptables-nft (apt-get install iptables)"; return; }
    command -v tc >/dev/null 2>&1 || { echo "no tc (apt-get install iproute2)"; return; }
    command -v nstat >/dev/null 2>&1 || { echo "no nstat (apt-get install iproute2)"; return; }
    [ -x "$WAN_TOOL" ] || { echo "$WAN_TOOL not built (make build/tools/delayline)"; return; }
}

flows_testbed() {
    local n
    UL_A=$WAN_UL_A UL_B=$WAN_UL_B
    WAN_ECN=0
    for n in a b r; do bench_node "$n"; done
    wan_link a toa "$WAN_UL_A" "$WAN_R_A"
    wan_link b tob "$WAN_UL_B" "$WAN_R_B"
    nx r sysctl -qw net.ipv4.ip_forward=1 || fail "router: cannot forward"
    bench_pin_neighbours "a:veth0:$WAN_UL_A" "r:toa:$WAN_R_A"
    bench_pin_neighbours "b:veth0:$WAN_UL_B" "r:tob:$WAN_R_B"
    for n in a b; do wan_tcp "$n"; done
    FLOWS_PORT0=$WG_PORT
    DDP_METRICS=127.0.0.1:9597
}

# flows_router PHASE: the router's rules, qdiscs and delay lines for
# PHASE; those of the phase before are gone first. Capped: per direction a
# tbf bottleneck at the link's rate with one bandwidth-delay product of
# queue and a delay line of half the round trip (wan.sh's, on NFQUEUE:
# this kernel has no netem), every 5-tuple policed ahead of them.
flows_router() {
    local phase=$1 side proto half bdp burst q secs
    wan_path_end
    nx r iptables-nft -F FORWARD && nx r iptables-nft -t nat -F POSTROUTING || fail "router: cannot flush its rules"
    for side in toa tob; do nx r tc qdisc del dev "$side" root 2>/dev/null; done
    [ "$phase" != clean ] || return 0
    half=$(calc "$FLOWS_RTT / 2")
    bdp=$(( FLOWS_LINK_MBIT * 1000000 / 8 * FLOWS_RTT / 1000 ))
    burst=$(( FLOWS_LINK_MBIT * 1000000 / 8 / 1000 ))       # 1 ms at the rate
    [ "$burst" -ge 16384 ] || burst=16384
    for side in toa tob; do
        nx r tc qdisc replace dev "$side" root tbf rate "${FLOWS_LINK_MBIT}mbit" burst "$burst" limit "$bdp" ||
            fail "router: tbf on $side refused"
    done
    # Every 5-tuple of either protocol policed, with the least burst
    # iptables takes (one second of the rate); first in the chain.
    for proto in udp tcp; do
        nx r iptables-nft -A FORWARD -p "$proto" -m hashlimit --hashlimit-name "fl$proto" \
            --hashlimit-mode srcip,srcport,dstip,dstport \
            --hashlimit-above "$(( FLOWS_CAP_MBIT / 8 ))mb/s" --hashlimit-burst "$(( FLOWS_CAP_MBIT / 8 + 1 ))mb" \
            -j DROP || fail "router: the hashlimit policer was refused (xt_hashlimit)"
    done
    if [ "$phase" = nat ]; then
        # a behind a NAT that lets in only replies; before the delay
        # lines, whose verdict ends the chain.
        nx r iptables-nft -t nat -A POSTROUTING -o tob -s "$WAN_UL_A" -j MASQUERADE &&
            nx r iptables-nft -A FORWARD -i tob -o toa -m conntrack --ctstate NEW,INVALID -j DROP ||
            fail "router: the NAT rules were refused"
    fi
    nx r iptables-nft -A FORWARD -i toa -j NFQUEUE --queue-num "$WAN_QUEUE" &&
        nx r iptables-nft -A FORWARD -i tob -j NFQUEUE --queue-num "$((WAN_QUEUE + 1))" ||
        fail "router: the NFQUEUE rules were not installed"
    # They stop by themselves after the phase even if we are killed.
    secs=$(( ${#F_NAME[@]} * (3 * (FLOWS_SECONDS + FLOWS_OMIT + 20) + 40) + 120 ))
    for q in "$WAN_QUEUE" "$((WAN_QUEUE + 1))"; do
        nsenter -t "$(holder_pid r)" -m -n -- "$WAN_TOOL" -q "$q" -d "$half" -l 0 -t "$secs" \
            2>"$T/delayline-$q.err" &
        WAN_DL_PIDS+=("$!")
        BENCH_PIDS+=("$!")
    done
    wait_for 10 nx a ping -n -c 1 -W 2 "$WAN_UL_B" ||
        fail "the capped path does not carry ping: $(cat "$T"/delayline-*.err)"
}

flows_ofo() { nx "$1" nstat -az TcpExtTCPOFOQueue | awk '$1 == "TcpExtTCPOFOQueue" { print $2 }'; }
# flows_reorder NODE: reordering NODE's TCP senders have seen so far (a
# hole filled by the original segment, not by a retransmission).
flows_reorder() {
    nx "$1" nstat -az TcpExtTCPSACKReorder TcpExtTCPTSReorder TcpExtTCPRenoReorder |
        awk '$1 ~ /Reorder$/ { n += $2; seen = 1 } END { if (seen) print n }'
}

# flows_replays: both daemons' replay drops so far, from their metrics
# (DDP_METRICS, set in flows_testbed); NA where one does not answer.
flows_replays() {
    local n out sum=0
    for n in a b; do
        out=$(nx "$n" "$PY" -c '
import urllib.request, sys
n = 0
for l in urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=5).read().decode().splitlines():
    if l.startswith("ddpnet_packets_dropped_total{") and "reason=\"replay\"" in l:
        n += int(float(l.rsplit(" ", 1)[1]))
print(n)' "$DDP_METRICS" 2>/dev/null) || { echo NA; return; }
        sum=$(( sum + out ))
    done
    echo "$sum"
}

# flows_status PHASE NAME: each node's status line of the other, kept.
flows_status() {
    local n other
    for n in a b; do
        other=b; [ "$n" = a ] || other=a
        printf '%s %s %s: %s\n' "$1" "$2" "$n" "$(nx "$n" timeout 5 "${DDP_BIN:-$DDPNET}" status --run-dir "$T/$n/run" 2>&1 |
            grep "bench-$other" | tr -s ' ' | head -n 1)" >>"$FLOWS_STATUS"
    done
}

# flows_spread: a's status says it spreads b's traffic ("N flows"): the
# default build, once the peers told each other they take flows.
flows_spread() {
    nx a timeout 5 "${DDP_BIN:-$DDPNET}" status --run-dir "$T/a/run" 2>/dev/null | grep "bench-b" | grep -q "flows"
}

# flows_run PHASE ROUND INDEX TEST STREAMS: one iperf3 run a -> b; a row.
flows_run() {
    local phase=$1 r=$2 i=$3 test=$4 n=$5 name=${F_NAME[$3]} kind=${F_KIND[$3]}
    local out=$T/flows-$phase-$r-$name-$test.json gbps=NA cpu=NA ofo0 ofo1 ofo=NA ro0 ro1 ro=NA rp0=NA rp1 rp=NA t0="" t1 res omit=$FLOWS_OMIT
    [ "$phase" != clean ] || omit=1
    ofo0=$(flows_ofo b) ro0=$(flows_reorder a)
    [ "$kind" != ddpnet ] || rp0=$(flows_replays)
    [ -z "$TUN_PIDS" ] || t0=$(cpu_ticks $TUN_PIDS) || t0=""
    if res=$(BENCH_SECONDS=$((FLOWS_SECONDS + omit)) iperf_run a b "$TUN_DEST" "$out" -O "$omit" -P "$n"); then
        set -- $res; gbps=$(calc "$1 / 1e9")
        if [ -n "$t0" ] && t1=$(cpu_ticks $TUN_PIDS) && [ "$2" -gt 0 ]; then
            cpu=$(calc "($t1 - $t0) / $CLK_TCK / ($2 / 1e9)")
        fi
    fi
    ofo1=$(flows_ofo b) && [ -n "$ofo0" ] && ofo=$(( ofo1 - ofo0 ))
    ro1=$(flows_reorder a) && [ -n "$ro0" ] && [ -n "$ro1" ] && ro=$(( ro1 - ro0 ))
    if [ "$rp0" != NA ]; then rp1=$(flows_replays); [ "$rp1" = NA ] || rp=$(( rp1 - rp0 )); fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$phase" "$r" "$name" "$test" "$gbps" "$cpu" "$ofo" "$ro" "$rp" >>"$FLOWS_TSV"
    say "$(printf 'flows %-6s round %s/%s %-16s %-3s %s Gbit/s, CPU-s/GB %s, b out of order +%s, a saw reordering +%s, replay drops +%s' \
        "$phase" "$r" "$FLOWS_ROUNDS" "$name:" "$test" "$(short "$gbps")" "$(short "$cpu")" "$ofo" "$ro" "$rp")"
}

# flows_measure PHASE ROUND INDEX: one contender up, its runs, down.
flows_measure() {
    local phase=$1 r=$2 i=$3 kind=${F_KIND[$3]} res
    DDP_UP_ENV=""
    if ! tunnel_up "$kind" "${F_BIN[$i]}"; then
        warn "flows $phase round $r ${F_NAME[$i]}: setup failed: $TUN_WHY"
        tunnel_down "$kind"
        return 0
    fi
    if [ "${F_NAME[$i]}" = ddpnet ] && ! wait_for 10 flows_spread; then
        warn "flows $phase round $r: a does not spread b's traffic after 10 s"
    fi
    [ "$kind" != ddpnet ] || [ "$r" != 1 ] || flows_status "$phase" "${F_NAME[$i]}"
    case "$phase" in
    clean)
        flows_run "$phase" "$r" "$i" s1 1
        flows_run "$phase" "$r" "$i" "s$FLOWS_STREAMS_LOW" "$FLOWS_STREAMS_LOW"
        if res=$(ping_run a "$TUN_DEST" "$T/flows-ping-$r-${F_NAME[$i]}.out"); then
            set -- $res
            printf '%s\t%s\t%s\tping\t%s\tNA\tNA\tNA\tNA\n' "$phase" "$r" "${F_NAME[$i]}" "$1" >>"$FLOWS_TSV"
            say "$(printf 'flows %-6s round %s/%s %-16s ping %s µs' "$phase" "$r" "$FLOWS_ROUNDS" "${F_NAME[$i]}:" "$1")"
        fi ;;
    capped)
        flows_run "$phase" "$r" "$i" s1 1
        flows_run "$phase" "$r" "$i" "s$FLOWS_STREAMS_LOW" "$FLOWS_STREAMS_LOW"
        flows_run "$phase" "$r" "$i" "s$FLOWS_STREAMS_HIGH" "$FLOWS_STREAMS_HIGH" ;;
    nat)
        flows_run "$phase" "$r" "$i" "s$FLOWS_STREAMS_LOW" "$FLOWS_STREAMS_LOW"
        flows_run "$phase" "$r" "$i" "s$FLOWS_STREAMS_HIGH" "$FLOWS_STREAMS_HIGH" ;;
    esac
    tunnel_down "$kind"
}

# flows_measure_round ROUND: every phase, every contender.
flows_measure_round() {
    local r=$1 phase i
    for phase in $FLOWS_PHASES; do
        flows_router "$phase"
        # A port of its own per NAT phase: the router's conntrack still
        # holds the un-NATed 5-tuples of the phases before (no flush
        # without conntrack(8)), which would pass by the NAT.
        WG_PORT=$FLOWS_PORT0
        if [ "$phase" = nat ]; then WG_PORT=$(( FLOWS_PORT0 + r )); fi
        rm -f "$T/cluster.conf"
        for i in "${!F_NAME[@]}"; do flows_measure "$phase" "$r" "$i"; done
    done
    flows_router clean
    WG_PORT=$FLOWS_PORT0
    rm -f "$T/cluster.conf"
}

flows_begin() {
    FLOWS_TSV=$BENCH_OUT/flows.tsv FLOWS_STATUS=$BENCH_OUT/flows-status.txt
    printf 'phase\tround\tcontender\ttest\tgbps\tcpu_s_per_gb\tofo\treorder\treplay\n' >"$FLOWS_TSV"
    : >"$FLOWS_STATUS"
    say "flows: phases $FLOWS_PHASES, $FLOWS_ROUNDS rounds; capped: ${FLOWS_CAP_MBIT} Mbit/s per 5-tuple, $FLOWS_RTT ms, ${FLOWS_LINK_MBIT} Mbit/s link; iperf3 -O $FLOWS_OMIT -t $FLOWS_SECONDS; contenders: ${F_NAME[*]}"
    flows_testbed
}

# flows_report: medians, ratios and issue 57's targets; 0 all passed, 1
# one failed, 2 one could not be judged.
flows_report() {
    "$PY" - "$FLOWS_TSV" "${MESH_TSV:-}" "$FLOWS_STATUS" "$FLOWS_CAP_MBIT" "$FLOWS_STREAMS_LOW" "$FLOWS_STREAMS_HIGH" <<'PYEOF'
import os, statistics, sys
tsv, mesh, status, cap, lo, hi = sys.argv[1:7]
cap, lo, hi = float(cap), "s" + lo, "s" + hi
rows = [l.rstrip("\n").split("\t") for l in open(tsv) if l.strip()]
head, rows = rows[0], [dict(zip(rows[0], l)) for l in rows[1:]]

def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None

def vals(phase, name, test, key="gbps"):
    v = [num(r[key]) for r in rows if (r["phase"], r["contender"], r["test"]) == (phase, name, test)]
    return [x for x in v if x is not None]

def med(*a):
    v = vals(*a)
    return statistics.median(v) if v else None

def f(v, fmt="%.3f"):
    return "n/a" if v is None else fmt % v

names = list(dict.fromkeys(r["contender"] for r in rows))
variants = [n for n in names if n.startswith("ddpnet-")]
print()
print("flows (issue 57): medians over rounds, a -> b, Gbit/s; ping in µs; clean path, summed: ooo b's TcpExtTCPOFOQueue"
      " (after losses too), reord a's reordering seen (*Reorder)")
cols = [("clean", "s1"), ("clean", lo), ("clean", "ping"), ("capped", "s1"), ("capped", lo), ("capped", hi),
        ("nat", lo), ("nat", hi)]
print("%-18s" % "contender" + "".join("%13s" % ("%s %s" % c) for c in cols) + "%10s %8s %8s %8s" % ("CPU-s/GB", "ooo", "reord", "replay"))
for n in names:
    line = "%-18s" % n
    for p, t in cols:
        line += "%13s" % f(med(p, n, t), "%.0f" if t == "ping" else "%.3f")
    ofo = sum(vals("clean", n, "s1", "ofo") + vals("clean", n, lo, "ofo"))
    rp = sum(x for p in ("clean", "capped", "nat") for t in ("s1", lo, hi) for x in vals(p, n, t, "replay"))
    ro = sum(vals("clean", n, "s1", "reorder") + vals("clean", n, lo, "reorder"))
    line += "%10s %8s %8s %8s" % (f(med("clean", n, "s1", "cpu_s_per_gb"), "%.2f"),
                               "%d" % ofo if vals("clean", n, "s1", "ofo") else "n/a",
                               "%d" % ro if vals("clean", n, "s1", "reorder") else "n/a",
                               "%d" % rp if n.startswith("ddpnet") else "-")
    print(line)
mrows = []
if mesh and os.path.exists(mesh):
    m = [l.rstrip("\n").split("\t") for l in open(mesh) if l.strip()]
    mrows = [dict(zip(m[0], l)) for l in m[1:]]
def mmed(name, metric):
    v = [num(r["value"]) for r in mrows if r["contender"] == name and r["metric"] == metric]
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None
relays = list(dict.fromkeys(r["contender"] for r in mrows if r["contender"].startswith("relay")))
if relays:
    print()
    print("relayed m1 -> m3 -> m2 (relay part): 1 stream Gbit/s, ping µs, the relay's CPU-s per GB")
    for n in relays:
        print("  %-16s %8s %8s %8s" % (n, f(mmed(n, "stream_gbps")), f(mmed(n, "ping_avg_us"), "%.0f"),
                                         f(mmed(n, "cpu_relay_s_per_gb"), "%.2f")))
if os.path.exists(status):
    print()
    print("status lines (round 1; phase contender node: its line of the other):")
    for l in open(status):
        print("  " + l.rstrip("\n"))
rc = 0
def target(ok, text):
    global rc
    if ok is None:
        print("TARGET n/a  " + text)
        rc = rc if rc == 1 else 2
    else:
        print("TARGET %s " % ("PASS" if ok else "FAIL") + text)
        if not ok:
            rc = 1
print()
for p, label in (("capped", "direct"), ("nat", "a behind a cone NAT")):
    for t in (lo, hi):
        bare, ddp = med(p, "veth", t), med(p, "ddpnet", t)
        ok = None if not bare or ddp is None else ddp >= 0.8 * bare
        target(ok, "%.0f Mbit/s per 5-tuple, %s, %s streams: ddp0 %s >= 0.8x bare TCP %s Gbit/s (%s; one flow: %s)"
               % (cap, label, t[1:], f(ddp), f(bare), f(ddp / bare if ok is not None else None, "%.2fx"),
                  f(med(p, "ddpnet-flows1", t))))
# One flow's worth: the cap, or what one flow moved in this run where
# the policer's burst let it move more (one second of the rate, some of
# which falls after the omitted seconds); 10% beside.
one, one1 = med("capped", "ddpnet", "s1"), med("capped", "ddpnet-flows1", "s1")
limit = max(cap / 1000, one1 or 0)
ok = None if one is None else one <= 1.1 * limit
target(ok, "one inner stream under the cap: ddp0 %s <= 1.1x one flow's %s Gbit/s (the cap %.3f, one flow moved %s)"
       % (f(one), f(limit), cap / 1000, f(one1)))
# Reordering, not loss: b's out-of-order queue grows after every lost
# segment too (the router drops some on a loaded machine, bare TCP most),
# so the target is what a's TCP saw arrive late but not lost. Spreading
# must add none to one inner stream: no more than a contender with one
# flow (`ddpnet-flows1`, or a variant: an older build) saw in the same
# rounds. On a quiet machine that is 0; on a loaded one a stalled
# daemon makes a retransmission spurious now and then, which counts as
# reordering for every build alike (44 for the build before flows in
# one run at a load of 20). `tests/e2e/flows_order.sh` is the check that
# delays one 5-tuple on purpose.
ro = vals("clean", "ddpnet", "s1", "reorder")
ones = {v: sum(vals("clean", v, "s1", "reorder")) for v in variants if vals("clean", v, "s1", "reorder")}
most = max(ones.values()) if ones else None
ok = None if not ro or most is None else sum(ro) <= most
target(ok, "one inner stream, clean path: no reordering beyond one flow's (a's TCP saw %s over %d runs; %s;"
       " b's out-of-order queue, after losses too: +%s)"
       % (f(sum(ro) if ro else None, "%.0f"), len(ro),
          ", ".join("%s %d" % (v[len("ddpnet-"):], n) for v, n in ones.items()) or "no one-flow contender",
          f(sum(vals("clean", "ddpnet", "s1", "ofo")), "%.0f")))
for v in variants:
    if v == "ddpnet-flows1" and len(variants) > 1:
        what = "one flow (DDPNET_FLOWS=1)"
    else:
        what = v[len("ddpnet-"):]
    for t in ("s1", lo):
        a, b = med("clean", "ddpnet", t), med("clean", v, t)
        ok = None if a is None or not b else a >= 0.95 * b
        target(ok, "no cap, %s stream%s: ddp0 %s >= 0.95x %s %s Gbit/s (%s)"
               % (t[1:], "" if t == "s1" else "s", f(a), what, f(b), f(a / b if ok is not None else None, "%.2fx")))
    a, b = med("clean", "ddpnet", "ping"), med("clean", v, "ping")
    ok = None if a is None or not b else a <= 1.05 * b
    target(ok, "no cap, ping: ddp0 %s <= 1.05x %s %s µs" % (f(a, "%.0f"), what, f(b, "%.0f")))
    a, b = med("clean", "ddpnet", "s1", "cpu_s_per_gb"), med("clean", v, "s1", "cpu_s_per_gb")
    ok = None if a is None or not b else a <= 1.05 * b
    target(ok, "no cap, CPU-s per GB of one stream: ddp0 %s <= 1.05x %s %s" % (f(a, "%.2f"), what, f(b, "%.2f")))
    rn = "relay-" + v[len("ddpnet-"):]
    if mrows:
        a, b = mmed("relay", "stream_gbps"), mmed(rn, "stream_gbps")
        ok = None if a is None or not b else a >= 0.95 * b
        target(ok, "no cap, relayed stream: ddp0 %s >= 0.95x %s %s Gbit/s" % (f(a), what, f(b)))
sys.exit(rc)
PYEOF
}
