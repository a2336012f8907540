#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: long
# Certificates renewed under a training run's load (issue 56). a is in the
# file; spot-b and spot-c join with certificates signed through a join
# token valid 75 s, which then leaves the disk. While a torchrun
# all_reduce loop (Gloo over ddp0, the three ranks), an iperf3 stream
# (spot-c to a, 1 s intervals) and pings (a to spot-b and spot-c, five a
# second) run, the "authority's machine" (this script) runs the timer's
# pipeline of docs/authority.md every 2 s:
#     ddpnet certs (on a) | ddpnet authority renew --within 60s --valid 75s
#                         | ddpnet renew (on a)
# until each certificate was renewed three times at least, held by all
# three nodes. Then:
#  - no session reset: every node's `status --json` latest_handshake of
#    each peer is the one it had before the first renewal (a session
#    made anew, as a reset makes it at the next packet, changes it; the
#    run stays well inside WireGuard's 120 s rekey, checked);
#  - no ping lost, each all_reduce right on every rank (each adds
#    rank + 1 to 1 MiB of float32s: all 6), iperf3 never stalled (no 1 s
#    interval without bytes).
# About 55 s (the tag: torch starts slower on a busy machine).
set -eu
E2E_FOREGROUND=1
. "$(dirname "$0")/lib.sh"
e2e_init renewal_load ping iperf3 ss pgrep torchrun
"$PY" -c 'import torch, torch.distributed' 2>/dev/null || skip "$PY cannot import torch (apt-get install python3-torch)"
NODES=(a spot-b spot-c)

step "a in the file; spot-b and spot-c through a join token valid 75 s"
e2e_authority_hub "${NODES[@]}"
C=$T/cluster.conf
cluster_begin "$C" "authority = $AUTH"
cluster_node "$C" a "$(pub a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
(umask 077; "$DDPNET" authority token -a "$KEY" --name-prefix spot- --valid 75s >"$T/join.token") ||
    fail "ddpnet authority token failed"
for n in spot-b spot-c; do
    "$DDPNET" authority sign --token "$T/join.token" --name "$n" -k "$T/$n/key" >"$T/$n/key.cert" ||
        fail "ddpnet authority sign --token ($n) failed"
done
rm -f "$T/join.token"
for n in "${NODES[@]}"; do ddp_up "$n" "$C"; done
declare -A ADDR
for n in "${NODES[@]}"; do
    ADDR[$n]=$(nx "$n" ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
    [ -n "${ADDR[$n]}" ] || fail "$n has no address on ddp0"
done
for n in "${NODES[@]}"; do
    for m in "${NODES[@]}"; do
        [ "$n" = "$m" ] || wait_for 20 nx "$n" ping -n -c 1 -W 1 "${ADDR[$m]}" ||
            fail "$n does not reach $m (${ADDR[$m]})"
    done
done
say "every node reaches the others: a ${ADDR[a]}, spot-b ${ADDR[spot-b]}, spot-c ${ADDR[spot-c]}"

# The end (unix s) NODE's status shows for WHO's certificate.
end_on() {
    ddp_status "$1" | sed -n "s/^certificate of $2.* expires .*(\([0-9]*\))\$/\1/p"
}
all_hold() {
    local n
    for n in "${NODES[@]}"; do [ "$(end_on "$n" "$1")" = "$2" ] || return 1; done
}
declare -A RENEWED=([spot-b]=0 [spot-c]=0)
# One pass of the timer: the renewals due, handed to a; each must be held
# by the three nodes within 5 s.
renew_pass() {
    local line who end n
    nx a "$DDPNET" certs --run-dir "$T/a/run" >"$T/held" || fail "ddpnet certs on a failed"
    "$DDPNET" authority renew -a "$KEY" --within 65s --valid 75s "$T/held" >"$T/renewed" \
        2>"$T/renew.err" || fail "ddpnet authority renew failed: $(cat "$T/renew.err")"
    [ -s "$T/renewed" ] || return 0
    nx a "$DDPNET" renew --run-dir "$T/a/run" "$T/renewed" >"$T/renew.out" 2>&1 ||
        fail "ddpnet renew on a failed: $(cat "$T/renew.out")"
    while read -r line; do
        printf '%s\n' "$line" >"$T/one.cert"
        who=$("$DDPNET" authority show "$T/one.cert" | sed -n 's/^name: *//p')
        end=$("$DDPNET" authority show "$T/one.cert" | sed -n 's/^valid: .* to \(.*\) UTC.*/\1/p')
        end=$(date -u -d "$end" +%s)
        wait_for 5 all_hold "$who" "$end" ||
            fail "$who's renewal to $end not held by all: $(for n in "${NODES[@]}"; do printf '%s %s; ' "$n" "$(end_on "$n" "$who")"; done)"
        RENEWED[$who]=$(( ${RENEWED[$who]} + 1 ))
        say "$who renewed (${RENEWED[$who]}): ends at $end on a, spot-b and spot-c"
    done <"$T/renewed"
}
# interrupt PID: SIGINT to what nx_bg started (the command, under the
# subshell PID when it did not exec it), which then prints its summary.
interrupt() {
    local kids
    kids=$(pgrep -P "$1") || true
    kill -INT ${kids:-$1} 2>/dev/null || true
}
# handshakes NODE: "PEER TIME" for each peer of NODE's status --json.
handshakes() {
    ddp_status "$1" --json | "$PY" -c '
import json, sys
for p in json.load(sys.stdin)["peers"]:
    print(p["name"], p.get("latest_handshake"))'
}

step "traffic: torchrun all_reduce loop, iperf3 spot-c -> a, pings from a"
cat >"$T/allreduce_loop.py" <<'PYEOF'
# All_reduce of 1 MiB until rank 0 sees the stop file (its flag rides in
# the last element, so every rank stops after the same round).
import os, sys, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
want = world * (world + 1) / 2
rounds = bad = 0
t0 = time.time()
while True:
    t = torch.full((262145,), float(rank + 1))
    t[-1] = 1.0 if rank == 0 and (os.path.exists(sys.argv[1]) or time.time() - t0 > 150) else 0.0
    dist.all_reduce(t)
    rounds += 1
    if not bool((t[:-1] == want).all()):
        bad += 1
    if rounds == 1:
        print("allreduce first round done", flush=True)
    if t[-1].item() > 0:
        break
print("allreduce rounds=%d bad=%d secs=%.1f" % (rounds, bad, time.time() - t0), flush=True)
dist.destroy_process_group()
raise SystemExit(0 if bad == 0 else 1)
PYEOF
chmod 644 "$T/allreduce_loop.py"
declare -A TPID
for n in "${NODES[@]}"; do
    nx_bg "$n" torchrun timeout 200 sh -c '
        eval "$("$1" env --run-dir "$2")" || exit 3
        export OMP_NUM_THREADS=1
        exec torchrun --nnodes 3 --nproc_per_node 1 --rdzv_backend=c10d \
            --rdzv_endpoint=a:29500 --rdzv_id=ddpnet-renewal --max_restarts 0 \
            --redirects 2 --tee 1 "$3" "$4"' sh "$DDPNET" "$T/$n/run" "$T/allreduce_loop.py" "$T/stop"
    TPID[$n]=$BG_PID
done
nx_bg a iperf3-server timeout 150 iperf3 -s -1 -B "${ADDR[a]}" -p 5201
wait_for 10 e2e_listening a 5201 || fail "iperf3 server on a did not start: $(cat "$T/a/iperf3-server.out")"
# 50 Mbit/s: load on every renewal, CPU left for torch on a shared machine.
nx_bg spot-c iperf3 timeout 150 iperf3 -c "${ADDR[a]}" -p 5201 -t 120 -i 1 -b 50M --forceflush
IPERF=$BG_PID
nx_bg a ping-b ping -n -i 0.2 -W 2 "${ADDR[spot-b]}"
PING_B=$BG_PID
nx_bg a ping-c ping -n -i 0.2 -W 2 "${ADDR[spot-c]}"
PING_C=$BG_PID
all_started() {
    local n
    for n in "${NODES[@]}"; do grep -q 'allreduce first round done' "$T/$n/torchrun.out" || return 1; done
}
# torch starts slowly on a busy machine: the timer runs meanwhile.
deadline=$(( $(date +%s) + 90 ))
while ! all_started; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "torchrun's first all_reduce did not come: $(tail -n 20 "$T/a/torchrun.out")"
    renew_pass
    sleep 1
done
say "the all_reduce loop runs on the three ranks"
for n in "${NODES[@]}"; do
    handshakes "$n" >"$T/$n/hs.before" || fail "status --json on $n failed"
    [ "$(grep -vc ' None$' "$T/$n/hs.before")" -eq 2 ] ||
        fail "$n: not two sessions before the renewals: $(cat "$T/$n/hs.before")"
done
HS_FIRST=$(awk '{ print $2 }' "$T"/*/hs.before | sort -n | head -n 1)

step "the timer's pipeline every 2 s until each certificate was renewed three times more"
RENEWED=([spot-b]=0 [spot-c]=0)
deadline=$(( $(date +%s) + 60 ))
while [ "${RENEWED[spot-b]}" -lt 3 ] || [ "${RENEWED[spot-c]}" -lt 3 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "three renewals each did not come in 60 s: ${RENEWED[*]}"
    renew_pass
    sleep 2
done

step "no session made anew; traffic stopped: nothing lost"
for n in "${NODES[@]}"; do
    handshakes "$n" >"$T/$n/hs.after" || fail "status --json on $n failed"
    cmp -s "$T/$n/hs.before" "$T/$n/hs.after" ||
        fail "$n: a session was made anew across the renewals: before $(tr '\n' ' ' <"$T/$n/hs.before"), after $(tr '\n' ' ' <"$T/$n/hs.after")"
done
# Checked inside the rekey's 120 s: a session older is made anew by rule.
age=$(( $(date +%s) - HS_FIRST ))
[ "$age" -lt 120 ] || fail "the run took $age s from the first handshake: past the 120 s rekey, the sessions cannot be told"
say "every session the one made before the renewals ($age s old); ${RENEWED[spot-b]} and ${RENEWED[spot-c]} renewals"
touch "$T/stop"
failed=""
for n in "${NODES[@]}"; do
    rc=0; wait "${TPID[$n]}" || rc=$?
    [ "$rc" -eq 0 ] || failed="$failed $n(exit $rc)"
done
[ -z "$failed" ] || fail "torchrun failed on:$failed: $(tail -n 20 "$T/a/torchrun.out")"
for n in "${NODES[@]}"; do
    line=$(grep -h 'allreduce rounds=' "$T/$n/torchrun.out" | tail -n 1)
    case "$line" in *" bad=0 "*) say "$n: ${line#*allreduce }" ;;
        *) fail "$n: an all_reduce wrong or none: $(tail -n 20 "$T/$n/torchrun.out")" ;; esac
done
interrupt "$PING_B"
interrupt "$PING_C"
wait "$PING_B" "$PING_C" || true
for p in ping-b ping-c; do
    grep -q ' 0% packet loss' "$T/a/$p.out" || fail "a's $p lost echoes: $(tail -n 3 "$T/a/$p.out")"
    say "a's $p: $(grep 'packet loss' "$T/a/$p.out")"
done
interrupt "$IPERF"
wait "$IPERF" || true
# Each 1 s interval's line "[  5]  3.00-4.00  sec  5.96 MBytes  50.0 Mbits/sec ...".
"$PY" - "$T/spot-c/iperf3.out" <<'PYEOF' || fail "iperf3 spot-c -> a stalled or failed: $(tail -n 20 "$T/spot-c/iperf3.out")"
import re, sys
unit = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
full = []
for line in open(sys.argv[1]):
    m = re.match(r"\[ *\d+\] +([\d.]+)-([\d.]+) +sec +([\d.]+) ([KMG]?)Bytes +([\d.]+) ([KMG]?)bits/sec", line)
    if m and "sender" not in line and "receiver" not in line and float(m[2]) - float(m[1]) > 0.9:
        full.append(float(m[5]) * unit[m[6]])
if len(full) < 20 or min(full) <= 0:
    print("intervals of 1 s (bit/s):", full); sys.exit(1)
full.sort()
print("renewal_load: iperf3 spot-c -> a: %d intervals of 1 s, median %.1f Mbit/s, lowest %.1f"
      % (len(full), full[len(full) // 2] / 1e6, full[0] / 1e6))
PYEOF
for n in "${NODES[@]}"; do
    if grep -E "(removed|changed) spot-" "$T/$n/daemon.out"; then fail "$n removed or changed a spot node"; fi
done
