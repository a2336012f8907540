#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a keyless flood costs a starved receiver, with the sockets' queue
# management on and off (issue 55: the backlog read once per receive
# made the flood three times cheaper). Not part of `make bench`: run it
# alone, as root, from the top of the tree:
#
#   bench/flood_drain.sh [ROUNDS]        (default 3)
#
# On lib.sh's two-node testbed, per round, for each variant in turn:
# `ddpnet up` in a and b with the variant's environment; b's daemon
# starved, FLOOD_QUOTA_US of every FLOOD_PERIOD_US (4 ms of 40: a
# receiver short of CPU), in a cpu cgroup of its own (every thread) or,
# with FLOOD_STARVE=sigstop, stopped and continued from here as
# tests/e2e/queue_management.sh does; and a keyless flood at b's port
# from a's underlay address for FLOOD_SECONDS (6), of FLOOD_KIND:
#   junk   build/tools/hsflood's initiations (148 bytes, a wrong mac1:
#          dropped after one BLAKE2s), the default
#   small  32-byte datagrams of no message type (dropped at the first
#          byte), from FLOOD_SENDERS (2) Python loops
# The flood must outrun the starved daemon: the rows say what was sent
# and what the socket dropped. What b's daemon drained is the growth of
# UDP InDatagrams in b's namespace (only the daemon reads UDP there),
# what the socket dropped that of RcvbufErrors. Prints one row per run
# (round, variant, sent, drained, dropped), each variant's medians, and
# the target of issue 55: with queue management on, at least 0.8x the
# datagrams drained with it off.
#
#   FLOOD_VARIANTS  NAME:VAR=VALUE,... words (default: "on:" with the
#                   default target, "off:DDPNET_QUEUE_TARGET_US=0"); a
#                   DDPNET=PATH among the variables runs that build (an
#                   older one, to compare)
#   HSFLOOD         the flooder (build/tools/hsflood: make build/tools/hsflood)
set -eu
. "$(dirname "$0")/lib.sh"
. "$BENCH_DIR/tunnels.sh"

ROUNDS=${1:-3}
FLOOD_SECONDS=${FLOOD_SECONDS:-6}
FLOOD_QUOTA_US=${FLOOD_QUOTA_US:-4000}
FLOOD_PERIOD_US=${FLOOD_PERIOD_US:-40000}
FLOOD_VARIANTS=${FLOOD_VARIANTS:-"on: off:DDPNET_QUEUE_TARGET_US=0"}
FLOOD_KIND=${FLOOD_KIND:-junk}
FLOOD_SENDERS=${FLOOD_SENDERS:-2}
HSFLOOD=${HSFLOOD:-$BENCH_ROOT/build/tools/hsflood}
CG=""

bench_init
[ -x "$HSFLOOD" ] || skip "$HSFLOOD not built (make build/tools/hsflood)"

# A cpu cgroup of our own (v2's cpu.max, else v1's CFS quota), removed
# at exit; skip where neither can be made.
starve_cgroup() {
    local v2=/sys/fs/cgroup v1=/sys/fs/cgroup/cpu
    [ -f $v2/cgroup.controllers ] || v2=/sys/fs/cgroup/unified
    if grep -qw cpu $v2/cgroup.controllers 2>/dev/null && mkdir "$v2/ddpbench-flood-$$" 2>/dev/null; then
        CG=$v2/ddpbench-flood-$$
        echo "$FLOOD_QUOTA_US $FLOOD_PERIOD_US" >"$CG/cpu.max"
    elif [ -f $v1/cpu.cfs_quota_us ] && mkdir "$v1/ddpbench-flood-$$" 2>/dev/null; then
        CG=$v1/ddpbench-flood-$$
        echo "$FLOOD_PERIOD_US" >"$CG/cpu.cfs_period_us"
        echo "$FLOOD_QUOTA_US" >"$CG/cpu.cfs_quota_us"
    else
        skip "no cpu cgroup to starve the daemon in"
    fi
}
FLOOD_STARVE=${FLOOD_STARVE:-cgroup}
[ "$FLOOD_STARVE" = sigstop ] || starve_cgroup
flood_exit() {
    local rc=$? pid
    set +e
    if [ -n "$CG" ]; then
        for pid in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
        sleep 0.2
        rmdir "$CG" 2>/dev/null
    fi
    bench_cleanup
    exit "$rc"
}
trap flood_exit EXIT

# udp_counter NODE FIELD: a field of the Udp line of NODE's /proc/net/snmp.
udp_counter() {
    nx "$1" awk -v f="$2" '$1 == "Udp:" { if (!n) { for (i = 2; i <= NF; i++) col[$i] = i; n = 1 }
                                          else print $col[f] }' /proc/net/snmp
}

# starve PID: from now on the daemon runs FLOOD_QUOTA_US of every
# FLOOD_PERIOD_US, in the cgroup or (FLOOD_STARVE=sigstop) stopped and
# continued from here, as tests/e2e/queue_management.sh does; unstarve
# PID lets it run again.
STARVE_PID=""
starve() {
    if [ "$FLOOD_STARVE" != sigstop ]; then
        echo "$1" >"$CG/cgroup.procs" || fail "cannot put b's daemon in $CG"
        return
    fi
    "$PY" - "$1" "$FLOOD_QUOTA_US" "$FLOOD_PERIOD_US" <<'PYEOF' &
import os, signal, sys, time
pid, run, period = int(sys.argv[1]), int(sys.argv[2]) / 1e6, int(sys.argv[3]) / 1e6
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
try:
    while True:
        os.kill(pid, signal.SIGSTOP)
        time.sleep(period - run)
        os.kill(pid, signal.SIGCONT)
        time.sleep(run)
finally:
    os.kill(pid, signal.SIGCONT)
PYEOF
    STARVE_PID=$!
    BENCH_PIDS+=("$STARVE_PID")
}
unstarve() {
    if [ "$FLOOD_STARVE" != sigstop ]; then
        echo "$1" >"$(dirname "$CG")/cgroup.procs"   # out of the cgroup before it goes down
        return
    fi
    kill "$STARVE_PID"
    wait "$STARVE_PID" 2>/dev/null || true
    kill -CONT "$1"
}

# flood: FLOOD_SECONDS of datagrams from a to b's port, as FLOOD_KIND says.
flood() {
    if [ "$FLOOD_KIND" = junk ]; then
        nx a "$HSFLOOD" junk "$UL_B" "$WG_PORT" "$(cat "$T/b/pub")" "$FLOOD_SECONDS" "$UL_A"
        return
    fi
    local k pids=() rc=0
    for k in $(seq 1 "$FLOOD_SENDERS"); do
        nx a "$PY" -c "$SMALL_FLOOD" "$UL_A" "$UL_B" "$WG_PORT" "$FLOOD_SECONDS" &
        pids+=("$!")
    done
    for k in "${pids[@]}"; do wait "$k" || rc=1; done
    return "$rc"
}
SMALL_FLOOD=$(cat <<'PYEOF'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 0))
s.connect((sys.argv[2], int(sys.argv[3])))
msg, n, end = b"\xff" * 32, 0, time.monotonic() + float(sys.argv[4])
while time.monotonic() < end:
    for _ in range(256):
        try:
            s.send(msg)
            n += 1
        except OSError:
            pass
print("sent", n)
PYEOF
)

bench_testbed
ROWS=$T/rows
for round in $(seq 1 "$ROUNDS"); do
    for v in $FLOOD_VARIANTS; do
        name=${v%%:*} env=${v#*:}
        ddp_up "env=${env:-DDPNET_QUEUE_TARGET_US=}" || fail "$name: $TUN_WHY"
        bpid=$(node_daemon b)
        in0=$(udp_counter b InDatagrams) drop0=$(udp_counter b RcvbufErrors)
        starve "$bpid"
        flood >"$T/flood.out" 2>&1 || fail "the flood failed: $(cat "$T/flood.out")"
        unstarve "$bpid"
        in1=$(udp_counter b InDatagrams) drop1=$(udp_counter b RcvbufErrors)
        sent=$(sed -n 's/^hsflood: [a-z0-9]*: sent \([0-9]*\) .*/\1/p; s/^sent \([0-9]*\)$/\1/p' "$T/flood.out" |
               awk '{ n += $1 } END { print n }')
        printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "${sent:-?}" $((in1 - in0)) $((drop1 - drop0)) |
            tee -a "$ROWS"
        ddp_down
    done
done

# Each variant's median of drained (and of dropped), then the target.
"$PY" - "$ROWS" $FLOOD_VARIANTS <<'PYEOF'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
names = [v.split(":", 1)[0] for v in sys.argv[2:]]
med = {}
for n in names:
    got = [int(r[3]) for r in rows if r[1] == n]
    drop = [int(r[4]) for r in rows if r[1] == n]
    med[n] = statistics.median(got)
    print(f"{n}: drained {', '.join(map(str, got))} (median {med[n]:.0f}); "
          f"socket drops median {statistics.median(drop):.0f}")
if "on" in med and "off" in med and med["off"]:
    r = med["on"] / med["off"]
    print(f"TARGET {'PASS' if r >= 0.8 else 'FAIL'} starved daemon under a keyless flood: "
          f"queue management on drains {r:.2f}x of off (>= 0.8x)")
PYEOF
