#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: alone
# The UDP sockets' queue management (overlay/loop/codel.h, issue 44): a
# standing queue at a receiver's socket slows the inner TCP down, by a
# drop where TCP has no ECN and a CE mark where it has, each counted in
# `ddpnet status`, the metrics and `doctor`, and the rest still arrives.
#  1. a and b up; while a floods, b's daemon runs 4 ms of every 40
#     (SIGSTOP and SIGCONT from here): a receiver short of CPU, slower
#     than the wire, whose socket holds a standing queue;
#  2. a floods b through ddp0 (UDP, not ECN-capable), faster than the
#     starved daemon drains: b drops some (queue_delay > 0), marks none,
#     and b's application still gets the rest;
#  3. the same flood ECN-capable (TOS ECT(0)): b marks instead
#     (ecn_marked > 0, no more drops), and b's application reads CE in
#     the datagrams it gets; then a TCP stream still moves;
#  4. status has its line, status --json, the metrics (promtool-clean)
#     and doctor the counts, which a's (target left at 5 ms, an idle
#     socket) never gets.
#
#      node-a .1  ----  hub  ----  node-b .2      192.168.241.0/24
#      10.77.0.1                   10.77.0.2      (ddp0)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init queue_management iperf3 promtool ss

MPORT=9587

step "namespaces, keys, a and b up"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
for n in node-a node-b; do e2e_key "$n"; done
cluster_begin "$T/cluster.conf" "metrics = overlay:$MPORT"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$E2E_V4NET.2:$E2E_PORT"
for n in node-a node-b; do ddp_up "$n"; done
ping_ok node-a 10.77.0.2

daemon_pid() {   # daemon_pid NODE: the daemon's process in NODE
    local pid
    for pid in $(ip netns pids "$E2E_PFX$1"); do
        case "$(cat "/proc/$pid/comm" 2>/dev/null)" in ddpnet*) echo "$pid"; return 0 ;; esac
    done
    return 1
}
# starve NODE SECONDS: NODE's daemon runs 4 ms of every 40 for SECONDS,
# then runs on (in the background: STARVE_PID). Should the script die
# first, the clean-up's SIGKILL still ends the daemon.
starve() {
    local pid
    pid=$(daemon_pid "$1") || fail "no daemon process in $1"
    "$PY" - "$pid" "$2" <<'PYEOF' &
import os, signal, sys, time
pid, end = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
try:
    while time.monotonic() < end:
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.036)
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.004)
finally:
    os.kill(pid, signal.SIGCONT)
PYEOF
    STARVE_PID=$!
}

json_get() {   # json_get NODE EXPR: a value of NODE's `status --json` (a Python expression over d)
    ddp_status "$1" --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"
}
# flood TOS SECONDS: a sends b's port 9999 1200-byte UDP datagrams through
# ddp0 as fast as they go for SECONDS, their IP TOS byte TOS, while b's
# daemon is starved and an application on b reads them; prints what that
# application got: "DATAGRAMS CE-MARKED".
flood() {
    local tos=$1 secs=$2 got
    cat >"$T/sink.py" <<'PYEOF'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.bind(("10.77.0.2", 9999))
s.settimeout(0.5)
n = ce = 0
end = time.monotonic() + float(sys.argv[1]) + 3
while time.monotonic() < end:
    try:
        _, anc, _, _ = s.recvmsg(2048, 64)
    except socket.timeout:
        continue
    n += 1
    ce += any(l == socket.IPPROTO_IP and t == socket.IP_TOS and d[0] & 3 == 3 for l, t, d in anc)
print(n, ce)
PYEOF
    nx_bg node-b sink "$PY" "$T/sink.py" "$secs"
    local sink=$BG_PID
    wait_for 10 e2e_udp_bound node-b 9999 || fail "b's sink did not start"
    starve node-b "$secs"
    nx node-a "$PY" - "$tos" "$secs" <<'PYEOF'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, int(sys.argv[1]))
data, end = b"x" * 1200, time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    for _ in range(64):
        try:
            s.sendto(data, ("10.77.0.2", 9999))
        except OSError:
            pass
PYEOF
    wait "$STARVE_PID"
    wait "$sink" || true
    got=$(tail -n 1 "$T/node-b/sink.out")
    say "b's application got $got (datagrams, CE-marked)"
    printf '%s\n' "$got"
}
e2e_udp_bound() {
    local out
    out=$(nx "$1" ss -Hlun "sport = :$2") && [ -n "$out" ]
}

step "a floods b, not ECN-capable, b's daemon starved: b drops to slow a down"
read -r got ce <<<"$(flood 0 4 | tail -n 1)"
drops=$(json_get node-b 'd["drops"]["queue_delay"]')
marks=$(json_get node-b 'd["drops"]["ecn_marked"]')
say "b's daemon: $drops packets dropped, $marks marked"
[ "$got" -gt 0 ] || fail "b's application got nothing of the flood"
[ "$drops" -gt 0 ] || fail "b's queue management dropped nothing under a standing queue: $(ddp_status node-b --json)"
[ "$marks" = 0 ] && [ "$ce" = 0 ] || fail "b marked $marks packets CE ($ce arrived so), though none was ECN-capable"

step "again ECN-capable (ECT(0)): b marks instead, and the marks arrive"
read -r got ce <<<"$(flood 2 4 | tail -n 1)"
drops2=$(json_get node-b 'd["drops"]["queue_delay"]')
marks=$(json_get node-b 'd["drops"]["ecn_marked"]')
say "b's daemon: $marks marked, $(( drops2 - drops )) more dropped"
[ "$marks" -gt 0 ] || fail "b marked nothing though the flood was ECN-capable: $(ddp_status node-b --json)"
[ "$drops2" = "$drops" ] || fail "b dropped $(( drops2 - drops )) ECN-capable packets instead of marking them"
[ "$ce" -gt 0 ] && [ "$ce" -le "$marks" ] ||
    fail "b's application got $ce datagrams marked CE, the daemon marked $marks"
iperf_ok node-b 10.77.0.2 node-a

step "status, metrics and doctor count them; a counts none"
out=$(ddp_status node-b)
grep -qE "slowed senders: $drops2 packets? dropped \(queue_delay\), $marks marked ECN" <<<"$out" ||
    fail "b's status has no queue line: $out"
[ "$(json_get node-a 'd["drops"]["queue_delay"] + d["drops"]["ecn_marked"]')" = 0 ] ||
    fail "a's queue management acted on an idle socket: $(ddp_status node-a --json)"
grep -q "slowed senders" <<<"$(ddp_status node-a)" && fail "a's status has a queue line: $(ddp_status node-a)"
nx node-a "$PY" - "http://10.77.0.2:$MPORT/metrics" >"$T/b.prom" <<'PYEOF'
import sys, urllib.request
sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())
PYEOF
promtool check metrics <"$T/b.prom" >"$T/b.lint" 2>&1 || fail "promtool on b's metrics: $(cat "$T/b.lint")"
# The counters only grow: the metrics were read after status.
m_drops=$(awk -F'} ' '/^ddpnet_packets_dropped_total\{.*reason="queue_delay"/ { print $2 }' "$T/b.prom")
m_marks=$(awk -F'} ' '/^ddpnet_ecn_marked_total\{/ { print $2 }' "$T/b.prom")
[ -n "$m_drops" ] && [ "$m_drops" -ge "$drops2" ] ||
    fail "b's metrics count ${m_drops:-no} queue_delay drops, status $drops2"
[ -n "$m_marks" ] && [ "$m_marks" -ge "$marks" ] ||
    fail "b's metrics count ${m_marks:-no} ECN marks, status $marks"
doc=$(nx node-b timeout 30 "$DDPNET" doctor --run-dir "$T/node-b/run" 2>&1) || true
grep -qE "note: this node slowed its senders down.*dropped [0-9]+ packets? \(queue_delay\) and marked [0-9]+ ECN" <<<"$doc" ||
    fail "b's doctor does not explain the queue management: $doc"
say "b dropped $drops2 and marked $marks, counted in status, metrics and doctor"
