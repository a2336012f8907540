# SPDX-License-Identifier: MIT
# The `wan` part of `make bench` (sourced after lib.sh and tunnels.sh):
# long fat paths, issue 44. Nodes a and b are behind a router namespace
# that delays every packet by half a round trip each way (the delay line,
# tests/e2e/tools/delayline.c, one per direction, on NFQUEUE rules in its
# FORWARD chain) and sends it on through a tbf bottleneck at the path's rate with one
# bandwidth-delay product of queue:
#
#   [a] veth0 10.79.1.1 --- toa [ r: FORWARD -> NFQUEUE (RTT/2) ] tob --- veth0 10.79.2.1 [b]
#                                egress tbf RATE, limit 1 BDP, both ways
#
# The nodes' links send wire-sized packets (gso_max_segs 1, as a NIC
# does; a veth would hand the router a GSO super-packet whole), TCP is
# cubic (WAN_CC) with buffers that can hold a BDP. For each path (WAN_PATHS) and
# round, each contender in turn (bare underlay TCP, ddp0, each BENCH_EXTRA
# WireGuard): iperf3 a -> b with WAN_STREAMS streams, WAN_OMIT s omitted
# and WAN_SECONDS measured; per run the rate, the sender's TCP retransmits,
# the datagrams the kernel dropped at full UDP sockets in each node
# (UdpRcvbufErrors: only the tunnels' sockets take UDP there), ddp0's
# transmit drops, the drops `ddpnet status --json` counts, and the CPU of
# each node's daemon. On the first path, a slow stream too (one stream at
# WAN_SLOW_RATE): the daemons' CPU beside the WireGuards'. Then medians,
# ratios to bare TCP and the targets of issue 44. Raw rows in
# $BENCH_OUT/wan.tsv.

WAN_UL_A=10.79.1.1
WAN_UL_B=10.79.2.1
WAN_R_A=10.79.1.254
WAN_R_B=10.79.2.254
WAN_QUEUE=4404                 # NFQUEUE numbers inside the router: a -> b, and +1 b -> a
WAN_TOOL=${WAN_DELAYLINE:-$BENCH_ROOT/build/tools/delayline}
WAN_DL_PIDS=()

wan_config() {
    local quick=${BENCH_QUICK:-0} s=12 o=2
    [ "$quick" != 1 ] || { s=4 o=1; }
    WAN_SECONDS=${WAN_SECONDS:-$s}
    WAN_OMIT=${WAN_OMIT:-$o}
    WAN_STREAMS=${WAN_STREAMS:-4}
    WAN_CC=${WAN_CC:-cubic}         # iperf3 -C: the TCP congestion control of every contender
    WAN_ECN=${WAN_ECN:-0}           # 1: every node's TCP asks for ECN (wan_tcp)
    WAN_ROUNDS=${WAN_ROUNDS:-$BENCH_ROUNDS}
    WAN_RATE_MBIT=${WAN_RATE_MBIT:-1000}
    # RTT_MS:LOSS, loss a probability per packet and direction.
    WAN_PATHS=${WAN_PATHS:-"40:0 80:0 40:0.0005"}
    WAN_SLOW_RATE=${WAN_SLOW_RATE:-20M}
    WAN_TESTS=${WAN_TESTS:-bulk slow}      # slow: on the first path only
    case " $WAN_TESTS " in *" bulk "*|*" slow "*) ;; *) usage_error "WAN_TESTS=$WAN_TESTS: bulk, slow or both" ;; esac
    positive_int WAN_SECONDS "$WAN_SECONDS"
    positive_int WAN_STREAMS "$WAN_STREAMS"
    positive_int WAN_ROUNDS "$WAN_ROUNDS"
    positive_int WAN_RATE_MBIT "$WAN_RATE_MBIT"
    case "$WAN_OMIT" in ''|*[!0-9]*) usage_error "WAN_OMIT=$WAN_OMIT: want an integer" ;; esac
    case "$WAN_ECN" in 0|1) ;; *) usage_error "WAN_ECN=$WAN_ECN: 0 or 1" ;; esac
}

# wan_usable: why this machine cannot run the part (empty: it can).
wan_usable() {
    command -v iptables-nft >/dev/null 2>&1 || { echo "no iptables-nft (apt-get install iptables)"; return; }
    command -v tc >/dev/null 2>&1 || { echo "no tc (apt-get install iproute2)"; return; }
    [ -x "$WAN_TOOL" ] || { echo "$WAN_TOOL not built (make build/tools/delayline)"; return; }
}

# wan_link NODE ROUTER-SIDE: NODE's veth0 to the router, wire-sized packets.
wan_link() {
    local n=$1 rside=$2 addr=$3 raddr=$4
    ip -n "$BENCH_PFX$n" link add veth0 type veth peer name "$rside" netns "${BENCH_PFX}r" ||
        fail "cannot create the veth pair $n - r"
    ip -n "$BENCH_PFX$n" link set veth0 gso_max_segs 1 || fail "node $n: gso_max_segs 1 refused"
    bench_link "$n" "$addr"
    ip -n "${BENCH_PFX}r" link set "$rside" mtu "$UL_MTU" gso_max_segs 1 up &&
        ip -n "${BENCH_PFX}r" addr add "$raddr/$UL_PREFIX" dev "$rside" ||
        fail "router: cannot set up $rside"
    ip -n "$BENCH_PFX$n" route add default via "$raddr" || fail "node $n: no route via the router"
}

# wan_tcp NODE: TCP buffers up to 64 MB, so that a window can hold the
# longest path's BDP (per namespace since Linux 4.15). Cubic is iperf3's
# -C: a namespace may only default to what the host allows.
# WAN_ECN=1 makes every contender's connections ECN-capable (tcp_ecn=1:
# asked for, not only taken), so that the queue management marks instead
# of dropping; 0 (the default) leaves Linux's own (2: taken, not asked).
wan_tcp() {
    nx "$1" sysctl -qw net.ipv4.tcp_rmem="4096 131072 67108864" net.ipv4.tcp_wmem="4096 16384 67108864" ||
        fail "node $1: cannot set TCP's buffers"
    [ "$WAN_ECN" = 0 ] || nx "$1" sysctl -qw net.ipv4.tcp_ecn=1 || fail "node $1: cannot turn ECN on"
}

wan_testbed() {
    local n
    UL_A=$WAN_UL_A UL_B=$WAN_UL_B
    for n in a b r; do bench_node "$n"; done
    wan_link a toa "$WAN_UL_A" "$WAN_R_A"
    wan_link b tob "$WAN_UL_B" "$WAN_R_B"
    nx r sysctl -qw net.ipv4.ip_forward=1 || fail "router: cannot forward"
    bench_pin_neighbours "a:veth0:$WAN_UL_A" "r:toa:$WAN_R_A"
    bench_pin_neighbours "b:veth0:$WAN_UL_B" "r:tob:$WAN_R_B"
    for n in a b; do wan_tcp "$n"; done
    # A queue and a delay line per direction: one alone fell 1-100 ms
    # behind at 1 Gbit/s on 2 vCPUs.
    nx r iptables-nft -A FORWARD -i toa -j NFQUEUE --queue-num "$WAN_QUEUE" &&
        nx r iptables-nft -A FORWARD -i tob -j NFQUEUE --queue-num "$((WAN_QUEUE + 1))" ||
        fail "router: the NFQUEUE rules were not installed"
    nx r iptables-nft -C FORWARD -i toa -j NFQUEUE --queue-num "$WAN_QUEUE" &&
        nx r iptables-nft -C FORWARD -i tob -j NFQUEUE --queue-num "$((WAN_QUEUE + 1))" ||
        fail "router: the NFQUEUE rules are not there"
}

# wan_path RTT_MS LOSS: the delay line for that path, and the bottleneck
# with one BDP of queue; fails when the path does not carry ping.
wan_path() {
    local rtt=$1 loss=$2 half bdp burst side secs q
    half=$(calc "$rtt / 2")
    bdp=$(( WAN_RATE_MBIT * 1000000 / 8 * rtt / 1000 ))
    burst=$(( WAN_RATE_MBIT * 1000000 / 8 / 1000 ))       # 1 ms at the rate
    [ "$burst" -ge 16384 ] || burst=16384
    for side in toa tob; do
        nx r tc qdisc replace dev "$side" root tbf rate "${WAN_RATE_MBIT}mbit" \
            burst "$burst" limit "$bdp" || fail "router: tbf on $side refused"
    done
    wan_path_end
    # It stops by itself after the path's runs even if we are killed.
    secs=$(( WAN_ROUNDS * (${#C_NAME[@]} + 1) * (WAN_SECONDS + WAN_OMIT + 60) + 120 ))
    for q in "$WAN_QUEUE" "$((WAN_QUEUE + 1))"; do
        # nsenter itself, not nx in a subshell: $! must be the delay line.
        nsenter -t "$(holder_pid r)" -m -n -- "$WAN_TOOL" -q "$q" -d "$half" -l "$loss" -t "$secs" \
            2>"$T/delayline-$q.err" &
        WAN_DL_PIDS+=("$!")
        BENCH_PIDS+=("$!")
    done
    wait_for 10 nx a ping -n -c 1 -W 2 "$WAN_UL_B" ||
        fail "the path ${rtt} ms does not carry ping: $(cat "$T"/delayline-*.err)"
    say "path $rtt ms RTT, loss $loss, ${WAN_RATE_MBIT} Mbit/s, queue $bdp bytes: ping $(nx a ping -n -c 3 -i 0.2 "$WAN_UL_B" |
        sed -n 's/.*= [0-9.]*\/\([0-9.]*\)\/.*/\1/p') ms"
}

# wan_path_end: stops the delay line (it lets what it holds go) and says
# what it counted.
wan_path_end() {
    local pid f
    for pid in "${WAN_DL_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${WAN_DL_PIDS[@]}"; do reap "$pid" 5; done
    WAN_DL_PIDS=()
    for f in "$T"/delayline-*.err; do
        [ -f "$f" ] || continue
        say "$(tail -n 1 "$f")"
        rm -f "$f"
    done
}

# udp_rcvbuf_errors NODE: the namespace's UDP receive-buffer drops so far.
udp_rcvbuf_errors() {
    nx "$1" awk '/^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 } else print $c["RcvbufErrors"] }' /proc/net/snmp
}

# ddp0_tx_dropped NODE: what ddp0's transmit queue dropped so far (0 without ddp0).
ddp0_tx_dropped() {
    nx "$1" ip -s -o link show dev ddp0 2>/dev/null |
        awk '{ for (i = 1; i <= NF; i++) if ($i == "TX:") { print $(i + 11); exit } } END { if (!NR) print 0 }'
}

# ddp_status_drops NODE: "DROPS QUEUE ECN": every drop `ddpnet status
# --json` counts but the queue management's, summed (any number under a
# key that names a drop); then the queue management's drops
# (queue_delay) and ECN marks; NA NA NA without a daemon.
ddp_status_drops() {
    local out
    out=$(nx "$1" timeout 5 "${DDP_BIN:-$DDPNET}" status --json --run-dir "$T/$1/run" 2>/dev/null) || { echo NA NA NA; return; }
    printf '%s' "$out" | "$PY" -c '
import json, sys
QUEUE = ("queue_delay", "ecn_marked")
def walk(v, drop=False):
    if isinstance(v, dict):
        return sum(walk(x, drop or "drop" in k) for k, x in v.items() if k not in QUEUE)
    if isinstance(v, list):
        return sum(walk(x, drop) for x in v)
    return v if drop and isinstance(v, int) and not isinstance(v, bool) else 0
st = json.load(sys.stdin)
d = st.get("drops", {})
print(walk(st), d.get("queue_delay", 0), d.get("ecn_marked", 0))' 2>/dev/null || echo NA NA NA
}

# wan_counters: "UDPDROPS_A UDPDROPS_B TXDROP_A TXDROP_B STATUSDROPS_A
# QUEUEDROPS_A ECN_A STATUSDROPS_B QUEUEDROPS_B ECN_B"
wan_counters() {
    local kind=$1 n s
    for n in a b; do printf '%s ' "$(udp_rcvbuf_errors "$n")"; done
    for n in a b; do printf '%s ' "$(ddp0_tx_dropped "$n")"; done
    for n in a b; do
        s="NA NA NA"; [ "$kind" != ddpnet ] || s=$(ddp_status_drops "$n")
        printf '%s ' "$s"
    done
}

# wan_daemons KIND: each node's daemon (its process tree), "A-PIDS|B-PIDS".
wan_daemons() {
    case "$1" in
    ddpnet) printf '%s|%s' "$(proc_tree "$(node_daemon a)")" "$(proc_tree "$(node_daemon b)")" ;;
    wg)     printf '%s|%s' "$(proc_tree "${WG_PIDS[0]}")" "$(proc_tree "${WG_PIDS[1]}")" ;;
    esac
}

iperf_retransmits() {
    "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_sent"].get("retransmits", "NA"))' "$1" 2>/dev/null ||
        echo NA
}

# wan_run PATH ROUND INDEX TEST [IPERF3-ARGS...]: one iperf3 run of one
# contender, with its counters; appends a row to $WAN_TSV.
wan_run() {
    local path=$1 r=$2 i=$3 test=$4; shift 4
    local name=${C_NAME[$i]} kind=${C_KIND[$i]} out
    out=$T/wan-$path-$r-$name-$test.json
    local gbps=NA retr=NA c0 c1 d="" pa pb ta0=NA tb0=NA cpua=NA cpub=NA res t
    local -a x0 x1
    c0=$(wan_counters "$kind"); read -r -a x0 <<<"$c0"
    [ "$kind" = veth ] || d=$(wan_daemons "$kind")
    pa=${d%%|*} pb=${d#*|}
    [ -z "$pa" ] || ta0=$(cpu_ticks $pa) || ta0=NA
    [ -z "$pb" ] || tb0=$(cpu_ticks $pb) || tb0=NA
    if res=$(BENCH_SECONDS=$((WAN_SECONDS + WAN_OMIT)) iperf_run a b "$TUN_DEST" "$out" -O "$WAN_OMIT" -C "$WAN_CC" "$@"); then
        set -- $res; gbps=$(calc "$1 / 1e9")
        retr=$(iperf_retransmits "$out")
    fi
    [ "$ta0" = NA ] || { t=$(cpu_ticks $pa) && cpua=$(calc "($t - $ta0) / $CLK_TCK"); }
    [ "$tb0" = NA ] || { t=$(cpu_ticks $pb) && cpub=$(calc "($t - $tb0) / $CLK_TCK"); }
    c1=$(wan_counters "$kind"); read -r -a x1 <<<"$c1"
    local udp=$(( x1[0] - x0[0] + x1[1] - x0[1] )) tx=$(( x1[2] - x0[2] + x1[3] - x0[3] )) st=NA q=NA e=NA
    if [ "${x1[4]}" != NA ] && [ "${x0[4]}" != NA ] && [ "${x1[7]}" != NA ] && [ "${x0[7]}" != NA ]; then
        st=$(( x1[4] - x0[4] + x1[7] - x0[7] ))
        q=$(( x1[5] - x0[5] + x1[8] - x0[8] ))
        e=$(( x1[6] - x0[6] + x1[9] - x0[9] ))
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$path" "$r" "$name" "$test" "$gbps" "$retr" \
        "$udp" "$tx" "$st" "$q" "$e" "$cpua" "$cpub" >>"$WAN_TSV"
    say "$(printf 'path %-10s round %s/%s %-14s %-5s %s Gbit/s, %s retransmits, %s UDP socket drops, %s ddp0 tx drops, %s drops in status, queue management %s dropped / %s ECN-marked, CPU-s %s / %s' \
        "$path" "$r" "$WAN_ROUNDS" "$name:" "$test" "$(short "$gbps")" "$retr" "$udp" "$tx" "$st" "$q" "$e" "$cpua" "$cpub")"
}

# wan_measure PATH SLOW ROUND INDEX: one contender up, its runs, down.
wan_measure() {
    local path=$1 slow=$2 r=$3 i=$4 kind=${C_KIND[$4]}
    [ "$kind" != missing ] && [ "$kind" != nebula ] || return 0
    DDP_UP_ENV=""
    [ "$kind" != ddpnet ] || DDP_UP_ENV=$BENCH_DDPNET_ENV
    if ! tunnel_up "$kind" "${C_BIN[$i]}"; then
        warn "path $path round $r ${C_NAME[$i]}: setup failed: $TUN_WHY"
        tunnel_down "$kind"
        return 0
    fi
    case " $WAN_TESTS " in *" bulk "*) wan_run "$path" "$r" "$i" bulk -P "$WAN_STREAMS" ;; esac
    case "$slow: $WAN_TESTS " in "1:"*" slow "*) wan_run "$path" "$r" "$i" slow -b "$WAN_SLOW_RATE" ;; esac
    tunnel_down "$kind"
}

wan_main() {
    local why p rtt loss r i slow=1
    wan_config
    why=$(wan_usable)
    if [ -n "$why" ]; then
        warn "wan skipped: $why"
        printf 'WAN n/a: %s\n' "$why"
        return 2
    fi
    WAN_TSV=$BENCH_OUT/wan.tsv
    printf 'path\tround\tcontender\ttest\tgbps\tretransmits\tudp_drops\tddp0_tx_drops\tstatus_drops\tqueue_drops\tecn_marked\tcpu_s_a\tcpu_s_b\n' >"$WAN_TSV"
    say "wan: paths $WAN_PATHS (RTT ms:loss) at $WAN_RATE_MBIT Mbit/s, $WAN_ROUNDS rounds, tests $WAN_TESTS: iperf3 -P $WAN_STREAMS -O $WAN_OMIT -t $WAN_SECONDS -C $WAN_CC, ECN $WAN_ECN; slow: one stream at $WAN_SLOW_RATE on the first path; contenders: ${C_NAME[*]}"
    wan_testbed
    for p in $WAN_PATHS; do
        rtt=${p%%:*} loss=${p#*:}
        wan_path "$rtt" "$loss"
        for (( r = 1; r <= WAN_ROUNDS; r++ )); do
            for i in "${!C_NAME[@]}"; do wan_measure "${rtt}ms:$loss" "$slow" "$r" "$i"; done
        done
        wan_path_end
        slow=0
    done
    wan_report "$WAN_TSV" "$WAN_RATE_MBIT" "${EXTRA_WG[@]}"
}

# wan_report TSV RATE EXTRA-WG...: medians, ratios and issue 44's targets.
# Returns 0 when every target passed, 1 when one failed, 2 when one could
# not be judged.
wan_report() {
    "$PY" - "$@" <<'PYEOF'
import statistics, sys
tsv, rate = sys.argv[1], sys.argv[2]
wgs = sys.argv[3:]
lines = [l.rstrip("\n").split("\t") for l in open(tsv) if l.strip()]
head = lines[0]
rows = [dict(zip(head, l)) for l in lines[1:]]

def num(v):
    try:
        return float(v)
    except ValueError:
        return None

def vals(path, name, test, key):
    v = [num(r[key]) for r in rows if r["path"] == path and r["contender"] == name and r["test"] == test]
    return [x for x in v if x is not None]

def med(*a):
    v = vals(*a)
    return statistics.median(v) if v else None

def f(v, fmt="%.3f"):
    return "n/a" if v is None else fmt % v

paths = list(dict.fromkeys(r["path"] for r in rows))
names = list(dict.fromkeys(r["contender"] for r in rows))
print()
print("wan: medians over rounds, bulk (a -> b); drops summed over both nodes per run (median, max)")
print("%-12s %-14s %9s %7s %11s %12s %11s %11s %13s %s" % ("path", "contender", "Gbit/s", "x bare", "retransmits",
      "UDP drops", "ddp0 tx", "status", "queue/ECN", "CPU-s a/b"))
for p in paths:
    bare = med(p, "veth", "bulk", "gbps")
    for n in names:
        g = med(p, n, "bulk", "gbps")
        if g is None:
            continue
        udp = vals(p, n, "bulk", "udp_drops")
        x = None if g is None or not bare else g / bare
        print("%-12s %-14s %9s %7s %11s %12s %11s %11s %13s %s/%s" % (p, n, f(g), f(x, "%.2fx"),
              f(med(p, n, "bulk", "retransmits"), "%.0f"),
              "%s, %s" % (f(med(p, n, "bulk", "udp_drops"), "%.0f"), f(max(udp) if udp else None, "%.0f")),
              f(med(p, n, "bulk", "ddp0_tx_drops"), "%.0f"), f(med(p, n, "bulk", "status_drops"), "%.0f"),
              "%s/%s" % (f(med(p, n, "bulk", "queue_drops"), "%.0f"), f(med(p, n, "bulk", "ecn_marked"), "%.0f")),
              f(med(p, n, "bulk", "cpu_s_a"), "%.1f"), f(med(p, n, "bulk", "cpu_s_b"), "%.1f")))
rc = 0
def target(ok, text):
    global rc
    if ok is None:
        print("TARGET n/a   " + text)
        rc = max(rc, 2) if rc != 1 else 1
    else:
        print("TARGET %s " % ("PASS" if ok else "FAIL") + text)
        if not ok:
            rc = 1
print()
def ratio_target(p, want):
    bare, ddp = med(p, "veth", "bulk", "gbps"), med(p, "ddpnet", "bulk", "gbps")
    ok = None if not bare or ddp is None else ddp >= want * bare
    target(ok, "%s at %s Mbit/s: ddp0 %s >= %.1fx bare TCP %s Gbit/s (%s)" % (p, rate, f(ddp), want, f(bare),
           f(ddp / bare if ok is not None else None, "%.2fx")))
bulk_ran = any(r["test"] == "bulk" for r in rows)
for p in paths if bulk_ran else []:
    rtt, loss = p.split(":")
    if num(loss):
        bare, ddp = vals(p, "veth", "bulk", "gbps"), med(p, "ddpnet", "bulk", "gbps")
        # The run's noise: bare TCP's own spread; at least 10% of its median.
        floor = min(min(bare), 0.9 * statistics.median(bare)) if bare else None
        ok = None if floor is None or ddp is None else ddp >= floor
        target(ok, "%s: ddp0 %s within bare TCP's noise (>= %s, its lowest run or 0.9x its median); "
               "retransmits ddp0 %s, bare %s" % (p, f(ddp), f(floor), f(med(p, "ddpnet", "bulk", "retransmits"), "%.0f"),
                                                f(med(p, "veth", "bulk", "retransmits"), "%.0f")))
        continue
    ratio_target(p, 0.9)
    if rtt == "80ms":
        udp = vals(p, "ddpnet", "bulk", "udp_drops")
        ok = None if not udp else max(udp) <= 50
        q = vals(p, "ddpnet", "bulk", "queue_drops")
        target(ok, "%s: at most 50 datagrams dropped at ddpnet's sockets per run (UdpRcvbufErrors, both nodes): max %s"
               " (the queue management's own drops, counted apart: max %s)"
               % (p, f(max(udp) if udp else None, "%.0f"), f(max(q) if q else None, "%.0f")))
slow = [p for p in paths if vals(p, "ddpnet", "slow", "cpu_s_a")]
if slow:
    p = slow[0]
    print()
    print("wan: slow stream on %s, CPU-s of each node's daemon per run (median)" % p)
    for n in names:
        a, b = med(p, n, "slow", "cpu_s_a"), med(p, n, "slow", "cpu_s_b")
        if a is not None:
            print("  %-14s %s / %s CPU-s, %s Gbit/s" % (n, f(a, "%.2f"), f(b, "%.2f"), f(med(p, n, "slow", "gbps"))))
    for w in wgs:
        wa, wb = med(p, w, "slow", "cpu_s_a"), med(p, w, "slow", "cpu_s_b")
        da, db = med(p, "ddpnet", "slow", "cpu_s_a"), med(p, "ddpnet", "slow", "cpu_s_b")
        ok = None if None in (wa, wb, da, db) else da <= 2 * max(wa, 0.05) and db <= 2 * max(wb, 0.05)
        target(ok, "%s slow stream: each ddpnet daemon at most 2x %s's CPU: a %s/%s, b %s/%s CPU-s"
               % (p, w, f(da, "%.2f"), f(wa, "%.2f"), f(db, "%.2f"), f(wb, "%.2f")))
sys.exit(rc)
PYEOF
}
