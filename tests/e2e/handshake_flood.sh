#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: alone
# A stranger who floods a node's port with handshakes costs it a bounded
# share (issue 12). node-a and node-b are members; "stranger" is not, but
# knows node-b's public key (the cluster file is not secret) and sends from
# FLOOD_SOURCES addresses of its own, one after another, FLOOD_PPS
# initiations a second in all (build/tools/hsflood):
#   junk  initiations with a wrong mac1: dropped after one BLAKE2s. This is
#         the baseline the others are held to: the packets alone.
#   mac1  random initiations with a valid mac1 for node-b.
#   mac2  the same, and each source that gets a cookie reply adds a valid
#         mac2 from then on (what reaches an X25519 per message).
# The flood is paced because here the flooder shares node-b's two vCPUs: an
# unpaced one takes a whole core, and the rates under it then measured the
# scheduler more than node-b (two CI runs failed on a spoiled median, in
# different modes, that runs here did not reproduce). A real flooder has
# its own machine; what is under test is what each message costs node-b.
# For each, and with no flood, iperf3 a -> b over ddp0 (FLOOD_IPERF_SECONDS)
# and the CPU node-b's daemon used meanwhile, FLOOD_ROUNDS times. Each
# round measures the four back to back, and each flood is judged against
# the junk flood of its own round; the median of those ratios is checked.
# Checked: under each flood a -> b keeps FLOOD_MIN_RATIO of its rate
# under junk; node-b answered no source with more than the rate limit lets
# through (RATELIMIT_BURST + RATELIMIT_PER_SEC a second); one source alone
# cannot put node-b under load (no cookie reply to it); the mac2 flood did
# take cookies and send mac2s (or it would not test what it says); and
# a <-> b still pings after it all.
#
# Environment: FLOOD_ROUNDS (5), FLOOD_IPERF_SECONDS (4), FLOOD_SOURCES (16),
# FLOOD_PPS (100000; 0: as fast as the flooder can), FLOOD_MIN_RATIO (0.7),
# HSFLOOD (build/tools/hsflood), and lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init handshake_flood iperf3 awk sort

HSFLOOD=${HSFLOOD:-$E2E_ROOT/build/tools/hsflood}
FLOOD_ROUNDS=${FLOOD_ROUNDS:-5}
FLOOD_IPERF_SECONDS=${FLOOD_IPERF_SECONDS:-4}
FLOOD_SOURCES=${FLOOD_SOURCES:-16}
FLOOD_PPS=${FLOOD_PPS:-100000}
FLOOD_MIN_RATIO=${FLOOD_MIN_RATIO:-0.7}
# overlay/engine/model/ratelimit.h
RATE_PER_SEC=20 RATE_BURST=5
[ -x "$HSFLOOD" ] || skip "$HSFLOOD not built (make build/tools/hsflood)"
A=10.77.0.1 B=10.77.0.2
B_UNDER=$E2E_V4NET.2

step "namespaces, the cluster (a, b) and the stranger with $FLOOD_SOURCES addresses"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
e2e_node stranger 9 -
SOURCES=()
for i in $(seq 1 "$FLOOD_SOURCES"); do
    SOURCES+=("$E2E_V4NET.$((99 + i))")
    ip -n "${E2E_PFX}stranger" addr add "$E2E_V4NET.$((99 + i))/24" dev eth0
done
e2e_key node-a
e2e_key node-b
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" "$A" "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" "$B" "$E2E_V4NET.2:$E2E_PORT"
ddp_up node-a
ddp_up node-b
ping_ok node-a "$B"
nx node-b iperf3 -s -D >/dev/null 2>&1 || fail "iperf3 server on node-b did not start"
wait_for 5 e2e_listening node-b 5201 || fail "iperf3 server on node-b not listening"

B_PID=""
for pid in $(ip netns pids "${E2E_PFX}node-b"); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = ddpnet ] && B_PID=$pid
done
[ -n "$B_PID" ] || fail "no ddpnet process in node-b"
TICKS=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$B_PID/stat"; }

# flood MODE SECONDS SRC...: hsflood from the stranger, in the background.
flood() {
    local mode=$1 secs=$2 pace=(); shift 2
    [ "$FLOOD_PPS" = 0 ] || pace=(--rate "$FLOOD_PPS")
    nx_bg stranger "flood-$mode" "$HSFLOOD" "${pace[@]}" "$mode" "$B_UNDER" "$E2E_PORT" "$(pub node-b)" \
        "$secs" "$@"
    FLOOD_PID=$BG_PID
}
flood_result() {
    wait "$FLOOD_PID" || fail "hsflood failed: $(cat "$T/stranger/flood-$1.out")"
    FLOOD_LINE=$(grep '^hsflood:' "$T/stranger/flood-$1.out") ||
        fail "hsflood printed nothing: $(cat "$T/stranger/flood-$1.out")"
    FLOOD_RATE=$(echo "$FLOOD_LINE" | sed -n 's/.*(\([0-9]*\)\/s).*/\1/p')
    FLOOD_REPLIES=$(echo "$FLOOD_LINE" | sed -n 's/.* \([0-9]*\) cookie replies.*/\1/p')
    FLOOD_COOKIES=$(echo "$FLOOD_LINE" | sed -n 's/.* \([0-9]*\) sources took a cookie.*/\1/p')
    FLOOD_MAC2=$(echo "$FLOOD_LINE" | sed -n 's/.* \([0-9]*\) carried a mac2.*/\1/p')
}

step "one source alone cannot put node-b under load"
flood mac1 3 "$E2E_V4NET.9"
flood_result mac1
say "$FLOOD_LINE"
[ "$FLOOD_REPLIES" = 0 ] || fail "one source got $FLOOD_REPLIES cookie replies: it put node-b under load"

# measure MODE: iperf3 a -> b with MODE's flood running (none: no flood).
declare -A RATES=() CPUS=() SENT=() VSJUNK=()
JUNK_NOW=0      # this round's rate under junk
measure() {
    local mode=$1 out gbits c0 c1 t0 t1 secs cpu
    if [ "$mode" != none ]; then
        flood "$mode" $((FLOOD_IPERF_SECONDS + 3)) "${SOURCES[@]}"
        sleep 1.5       # the mac2 flood takes its cookies in this time
    fi
    c0=$(cpu_ticks); t0=$(date +%s%N)
    out=$(nx node-a timeout $((FLOOD_IPERF_SECONDS + 15)) iperf3 -c "$B" -t "$FLOOD_IPERF_SECONDS" -f g 2>&1) ||
        fail "$mode: iperf3 a -> b failed: $out"
    c1=$(cpu_ticks); t1=$(date +%s%N)
    gbits=$(echo "$out" | awk '/receiver/ { print $(NF-2) }')
    [ -n "$gbits" ] || fail "$mode: no iperf3 figure: $out"
    cpu=$(awk -v c=$((c1 - c0)) -v hz="$TICKS" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", 100 * c / hz / (ns / 1e9) }')
    RATES[$mode]+="$gbits "
    CPUS[$mode]+="$cpu "
    [ "$mode" != junk ] || JUNK_NOW=$gbits
    [ "$mode" = none ] ||
        VSJUNK[$mode]+="$(awk -v g="$gbits" -v j="$JUNK_NOW" 'BEGIN { printf "%.2f", (j > 0 ? g / j : 0) }') "
    if [ "$mode" = none ]; then
        say "round $r, no flood: a -> b $gbits Gbit/s, node-b's daemon ${cpu}% of a core"
        return 0
    fi
    flood_result "$mode"
    SENT[$mode]+="$FLOOD_RATE "
    say "round $r, $mode flood: a -> b $gbits Gbit/s, node-b's daemon ${cpu}% of a core; $FLOOD_LINE"
    # The rate limit: per source a burst, then RATE_PER_SEC a second, over
    # the flood's whole life.
    local bound
    bound=$(( FLOOD_SOURCES * (RATE_BURST + RATE_PER_SEC * (FLOOD_IPERF_SECONDS + 4)) ))
    [ "$FLOOD_REPLIES" -le "$bound" ] ||
        fail "$mode: node-b sent $FLOOD_REPLIES cookie replies to $FLOOD_SOURCES sources, more than the limit's $bound"
    if [ "$mode" = mac2 ]; then
        [ "$FLOOD_COOKIES" -gt 0 ] && [ "$FLOOD_MAC2" -gt 0 ] ||
            fail "mac2: the flooder took no cookie, so sent no mac2: $FLOOD_LINE"
    fi
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for r in $(seq 1 "$FLOOD_ROUNDS"); do
    step "round $r of $FLOOD_ROUNDS"
    for mode in none junk mac1 mac2; do measure "$mode"; done
done

step "after the floods"
ping_ok node-a "$B"
ping_ok node-b "$A"

step "summary (medians of $FLOOD_ROUNDS rounds; \"vs junk\": each round's rate over its junk round's)"
printf '%-8s %12s %10s %14s %16s\n' flood "a->b Gbit/s" "vs junk" "b's CPU (%)" "flood (pkt/s)"
bad=""
for mode in none junk mac1 mac2; do
    g=$(echo "${RATES[$mode]}" | median)
    c=$(echo "${CPUS[$mode]}" | median)
    s=- ratio= shown=-
    [ "$mode" = none ] || s=$(echo "${SENT[$mode]}" | median)
    [ "$mode" = none ] || { ratio=$(echo "${VSJUNK[$mode]}" | median); shown=${ratio}x; }
    printf '%-8s %12s %10s %14s %16s\n' "$mode" "$g" "$shown" "$c" "$s"
    case "$mode" in
    mac1|mac2)
        awk -v r="$ratio" -v m="$FLOOD_MIN_RATIO" 'BEGIN { exit !(r >= m) }' ||
            bad+="$mode flood: a -> b ${shown} of its rate under junk, below $FLOOD_MIN_RATIO (rounds, Gbit/s: junk ${RATES[junk]% }; $mode ${RATES[$mode]% }); " ;;
    esac
done
[ -z "$bad" ] || fail "$bad"
