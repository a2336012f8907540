#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: alone
# Members that are down cost the live ones nothing (issue 12). A cluster
# file of 10 nodes of which 2 are up: node-a and node-b. Of the 8 down
# members, 4 have an endpoint (an address on the hub where nothing
# answers) and 4 have none. From node-a, bursts of traffic towards all 8
# at once (a ping every 2 ms to each, and TCP connects to each in a loop)
# for longer than the handshake retries last (WireGuard's 90 s plus the
# last attempt). Before, during (every DOWN_CHECK_EVERY s) and after the
# bursts: a <-> b ping (20 echoes, average RTT printed; none may be lost)
# and iperf3 a -> b (3 s). Before that, the same bursts at 8 addresses of
# the overlay that no member holds, for DOWN_CONTROL_SECONDS: the bursts'
# own cost, the baseline. Checked: during the bursts at the down members
# the median a -> b rate keeps DOWN_MIN_CONTROL_RATIO of the baseline's,
# and each sample DOWN_MIN_SAMPLE_RATIO of it (a stall shows as a sample
# near 0); after them, the better of two samples DOWN_MIN_RATIO of the
# rate before any burst. (Each
# sample was held to the rate before the bursts once: on two noisy cores
# the bursts' own cost took a sample below that bound now and then.) Also checked: after the hold time the down members show as
# `unreachable` in `ddpnet status` and a TCP connect to one fails at once
# ("No route to host") instead of hanging; node-a's daemon still answers
# after it all.
#
# Runs once, on one loop (DDPNET_SHARDS=1, the default on two cores
# before issue 58; it ran again with crypto worker threads, which are
# gone). Not on the default's 2 shards yet: there the bursts cost the
# live pair more than this bound allows (2026-12-02, make test on 2 vCPUs:
# a -> b median 2.33 Gbit/s during the bursts against 3.54 under the same
# bursts at no member, 0.66x; samples 2.14-2.94) while the down members'
# handshakes are retried: a shard that stages their packets and starts
# their handshakes holds the one engine lock the other shard's data path
# waits on. Data packets off that lock (issue 58's second part) is what
# lets this run on shards again.
#
#                    namespace "hub": bridge br0
#             +------------------+
#          p-node-a           p-node-b       192.168.241.101..104: nobody
#   192.168.241.1/24     192.168.241.2/24
#   ddp0 10.77.0.1       ddp0 10.77.0.2      10.77.0.11..18: down members
#
# Environment: DOWN_BURST_SECONDS (default 105), DOWN_CHECK_EVERY (25),
# DOWN_MIN_RATIO (0.5), DOWN_MIN_SAMPLE_RATIO (0.5), DOWN_MIN_CONTROL_RATIO
# (0.7), DOWN_CONTROL_SECONDS (20), and lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init down_members ping iperf3 awk

DOWN_BURST_SECONDS=${DOWN_BURST_SECONDS:-105}
DOWN_CHECK_EVERY=${DOWN_CHECK_EVERY:-25}
DOWN_MIN_RATIO=${DOWN_MIN_RATIO:-0.5}
DOWN_MIN_SAMPLE_RATIO=${DOWN_MIN_SAMPLE_RATIO:-0.5}
DOWN_MIN_CONTROL_RATIO=${DOWN_MIN_CONTROL_RATIO:-0.7}
DOWN_CONTROL_SECONDS=${DOWN_CONTROL_SECONDS:-20}
A=10.77.0.1 B=10.77.0.2
DOWN=()
for i in 1 2 3 4 5 6 7 8; do DOWN+=("10.77.0.1$i"); done

step "namespaces and the cluster file (10 nodes, 2 up)"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
e2e_key node-a
e2e_key node-b
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" "$A" "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" "$B" "$E2E_V4NET.2:$E2E_PORT"
for i in 1 2 3 4 5 6 7 8; do
    e2e_key "down-$i"
    ep=""
    [ "$i" -le 4 ] && ep="$E2E_V4NET.10$i:$E2E_PORT"
    cluster_node "$T/cluster.conf" "down-$i" "$(pub "down-$i")" "10.77.0.1$i" $ep
done
out=$("$DDPNET" check -c "$T/cluster.conf" 2>&1) || fail "ddpnet check: $out"

declare -a ROWS=()
# row PHASE PING_AVG LOSS GBITS
row() { ROWS+=("$(printf '%-9s %-26s %9s %6s %10s' "$MODE" "$1" "$2" "$3" "$4")"); }

# ping_ab PHASE: 20 echoes a -> b; none may be lost. Sets PING_AVG.
ping_ab() {
    local out loss
    out=$(nx node-a ping -n -q -c 20 -i 0.05 -w 10 "$B" 2>&1) || true
    loss=$(echo "$out" | sed -n 's/.* \([0-9.]*\)% packet loss.*/\1/p')
    PING_AVG=$(echo "$out" | awk -F/ '/^rtt|^round-trip/ { print $5 }')
    PING_LOSS=${loss:-100}
    # On a 2-core machine flooded by ping -i 0.002 to 8 addresses, a lost
    # echo would mean a stall: the bound is none.
    [ "$PING_LOSS" = 0 ] ||
        fail "$MODE $1: a -> b ping lost ${PING_LOSS}% of 20 echoes: $out"
}

# iperf_ab: iperf3 a -> b for 3 s; sets GBITS.
iperf_ab() {
    local out
    out=$(nx node-a timeout 20 iperf3 -c "$B" -t 3 -f g 2>&1) ||
        fail "$MODE $1: iperf3 a -> b failed: $out"
    GBITS=$(echo "$out" | awk '/receiver/ { print $(NF-2) }')
    [ -n "$GBITS" ] || fail "$MODE $1: no iperf3 figure: $out"
}

check() {
    ping_ab "$1"
    iperf_ab "$1"
    row "$1" "${PING_AVG} ms" "${PING_LOSS}%" "$GBITS"
    say "$MODE $1: ping a -> b avg ${PING_AVG} ms, loss ${PING_LOSS}%; iperf3 a -> b $GBITS Gbit/s"
    [ -n "${BASE_GBITS:-}" ] || return 0
    local r=$DOWN_MIN_SAMPLE_RATIO b=$CONTROL_GBITS what="under the same bursts at no member"
    case "$1" in
    during*) DURING+=("$GBITS") ;;
    *after) AFTER+=("$GBITS"); return 0 ;;     # judged together: check_after
    esac
    if ! awk -v g="$GBITS" -v b="$b" -v r="$r" 'BEGIN { exit !(g >= b * r) }'; then
        fail "$MODE $1: iperf3 a -> b $GBITS Gbit/s, below $r x $b $what"
    fi
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# The bursts themselves (16 ping and connect loops on a 2-vCPU machine)
# take CPU from iperf3 whoever they aim at. The fair baseline: the same
# bursts at addresses of the overlay's network that no member holds (the
# daemon answers each packet with ICMP unreachable, as it does for a
# member marked unreachable). During the bursts at the down members, the
# median of the samples must keep DOWN_MIN_CONTROL_RATIO of that.
control_bursts() {
    local i nontarget=() t0
    for i in 1 2 3 4 5 6 7 8; do nontarget+=("10.77.0.20$i"); done
    t0=$(date +%s)
    start_bursts "$DOWN_CONTROL_SECONDS" "${nontarget[@]}"
    sleep 5
    CONTROL=()
    for i in 1 2 3; do
        iperf_ab "control $i"
        CONTROL+=("$GBITS")
    done
    CONTROL_GBITS=$(printf '%s\n' "${CONTROL[@]}" | median)
    say "$MODE: the same bursts at addresses no member holds: iperf3 a -> b ${CONTROL[*]} Gbit/s, median $CONTROL_GBITS"
    row "control bursts (median)" "-" "-" "$CONTROL_GBITS"
    # Over before the next phase: the loops end on their own.
    while [ "$(date +%s)" -le $((t0 + DOWN_CONTROL_SECONDS + 2)) ]; do sleep 1; done
}

check_median() {
    local med
    med=$(printf '%s\n' "${DURING[@]}" | median)
    say "$MODE: iperf3 a -> b during the bursts at the down members, median $med Gbit/s (before: $BASE_GBITS; the same bursts elsewhere: $CONTROL_GBITS)"
    awk -v g="$med" -v b="$CONTROL_GBITS" -v r="$DOWN_MIN_CONTROL_RATIO" 'BEGIN { exit !(g >= b * r) }' ||
        fail "$MODE: iperf3 a -> b median $med Gbit/s during the bursts, below $DOWN_MIN_CONTROL_RATIO x $CONTROL_GBITS under the same bursts at no member"
}

# After the bursts the better of the two samples keeps DOWN_MIN_RATIO of
# the rate before them: a slowdown the bursts left behind shows in both,
# one 3 s sample that the machine's own noise halved (seen once in a run
# beside other builds: 2.49 against 5.25) in one only.
check_after() {
    local best
    best=$(printf '%s\n' "${AFTER[@]}" | sort -g | tail -1)
    say "$MODE: iperf3 a -> b after the bursts ${AFTER[*]} Gbit/s, best $best (before: $BASE_GBITS)"
    awk -v g="$best" -v b="$BASE_GBITS" -v r="$DOWN_MIN_RATIO" 'BEGIN { exit !(g >= b * r) }' ||
        fail "$MODE: iperf3 a -> b after the bursts ${AFTER[*]} Gbit/s, both below $DOWN_MIN_RATIO x $BASE_GBITS before the bursts"
}

# The bursts: to each down member a ping every 2 ms and a TCP connect loop
# (start_bursts SECONDS [ADDRESS...]: to those addresses instead).
start_bursts() {
    local d secs=$1; shift
    local to=("$@")
    [ ${#to[@]} -gt 0 ] || to=("${DOWN[@]}")
    for d in "${to[@]}"; do
        nx_bg node-a "ping-$d" ping -n -q -i 0.002 -w "$secs" "$d"
        nx_bg node-a "tcp-$d" timeout "$secs" bash -c \
            "while :; do timeout 2 bash -c '</dev/tcp/$d/29500' 2>/dev/null; sleep 0.2; done"
    done
}

run_mode() {
    MODE=$1
    step "$MODE: up"
    ddp_up node-a
    ddp_up node-b
    ping_ok node-a "$B"
    nx node-b iperf3 -s -D >/dev/null 2>&1 || fail "iperf3 server on node-b did not start"
    wait_for 5 nx node-b sh -c 'ss -ltn | grep -q ":5201 "' || fail "iperf3 server not listening"

    step "$MODE: before the bursts"
    BASE_GBITS=""
    DURING=()
    AFTER=()
    check "before"
    BASE_GBITS=$GBITS

    step "$MODE: the same bursts at 8 addresses no member holds (the baseline)"
    control_bursts

    step "$MODE: bursts towards the 8 down members for ${DOWN_BURST_SECONDS}s"
    local t0 now next
    t0=$(date +%s)
    start_bursts "$DOWN_BURST_SECONDS"
    next=$((t0 + 12))
    while :; do
        now=$(date +%s)
        [ "$now" -lt $((t0 + DOWN_BURST_SECONDS)) ] || break
        if [ "$now" -ge "$next" ]; then
            check "during, $((now - t0))s in"
            next=$((now + DOWN_CHECK_EVERY))
        fi
        sleep 1
    done

    check_median

    step "$MODE: what node-a says of the down members"
    local st
    st=$(ddp_status node-a --json) || fail "$MODE: status on node-a failed during the bursts"
    for i in 1 5 8; do
        echo "$st" | grep -q "\"name\":\"down-$i\",[^}]*\"path\":\"unreachable\"" ||
            fail "$MODE: down-$i not shown unreachable: $st"
    done
    # Refused at once: a connect fails with "No route to host", not a timeout.
    # Judged against the same command refused by the kernel itself (a
    # closed port on lo), timed in the same moment: what a loaded machine
    # adds to both (starting the shells) is not ddpnet's.
    local t0 t1 t2 err base_ms down_ms
    t0=$(date +%s%N)
    nx node-a timeout 5 bash -c "</dev/tcp/127.0.0.1/1" 2>/dev/null && fail "$MODE: the baseline connect to 127.0.0.1:1 succeeded"
    t1=$(date +%s%N)
    err=$(nx node-a timeout 5 bash -c "</dev/tcp/${DOWN[0]}/29500" 2>&1) && fail "$MODE: connect to a down member succeeded"
    t2=$(date +%s%N)
    case "$err" in *"No route to host"*) ;; *) fail "$MODE: connect to a down member: '$err', want 'No route to host'" ;; esac
    base_ms=$(( (t1 - t0) / 1000000 )) down_ms=$(( (t2 - t1) / 1000000 ))
    [ $(( down_ms - base_ms )) -lt 1000 ] ||
        fail "$MODE: connect to a down member took $down_ms ms, $((down_ms - base_ms)) ms more than one the kernel refuses ($base_ms ms)"
    say "$MODE: connect to a down member refused in $down_ms ms (the kernel's own refusal: $base_ms ms): $err"

    step "$MODE: after the bursts"
    sleep 2
    check "right after"
    sleep 10
    check "10 s after"
    check_after
    ddp_status node-a >/dev/null || fail "$MODE: status on node-a failed after the bursts"

    for n in node-b node-a; do ddp_down "$n"; done
    E2E_UP=()
    nx node-b pkill -x iperf3 || true
}

export DDPNET_SHARDS=1
run_mode one-loop

step "summary"
printf '%-9s %-26s %9s %6s %10s\n' mode phase "ping avg" loss "Gbit/s"
printf '%s\n' "${ROWS[@]}"
