#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: alone
# Every drop counted where the operator looks (issue 44): what the kernel
# drops before the daemon sees it shows in `ddpnet status` and in the
# metrics, or this fails.
#  1. a and b up with `socket-buffer = 64K` (the smallest) and metrics on;
#     b's sockets report the buffer they got, and b's ddp0 has the longer
#     transmit queue the daemon sets;
#  2. b's daemon is stopped (SIGSTOP) while a floods it through ddp0
#     (1200-byte UDP datagrams) and b's own applications send into b's
#     ddp0 (more datagrams than its queue holds): the kernel drops at b's
#     UDP socket and at b's ddp0 queue;
#  3. SIGCONT, a few pings (the first datagram queued after the drops
#     tells them: SO_RXQ_OVFL); then b's `status` has its drop line,
#     `status --json` and the metrics (promtool-clean) count
#     socket_overflow as many as the namespace's UdpRcvbufErrors (b's
#     daemon is the only UDP receiver there) and tun_queue as many as
#     ddp0's tx_dropped, both above 0; `doctor` says what to do.
#
#      node-a .1  ----  hub  ----  node-b .2      192.168.241.0/24
#      10.77.0.1                   10.77.0.2      (ddp0)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init drops ping awk promtool

MPORT=9586
STOPPED_S=2          # how long b's daemon stays stopped after the floods
SOCKET_FLOOD=3000    # 1200-byte datagrams a sends b meanwhile (b's buffer: 64K)
TUN_FLOOD=12000      # datagrams b's applications send meanwhile (its queue: 5000)

step "namespaces, keys, socket-buffer = 64K, metrics = overlay:$MPORT"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
for n in node-a node-b; do e2e_key "$n"; done
cluster_begin "$T/cluster.conf" "socket-buffer = 64K" "metrics = overlay:$MPORT"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$E2E_V4NET.2:$E2E_PORT"
for n in node-a node-b; do ddp_up "$n"; done
ping_ok node-a 10.77.0.2

# json_get NODE EXPR: a value of `ddpnet status --json` on NODE (a Python
# expression over d).
json_get() {
    ddp_status "$1" --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"
}
[ "$(json_get node-b 'd["drops"]["socket_overflow"]')" = 0 ] ||
    fail "b counts socket drops before any: $(ddp_status node-b --json)"
qlen=$(nx node-b cat /sys/class/net/ddp0/tx_queue_len)
[ "$qlen" = 5000 ] || fail "b's ddp0 has a transmit queue of $qlen packets, want 5000"
doc=$(nx node-b timeout 30 "$DDPNET" doctor --json --run-dir "$T/node-b/run" 2>&1) ||
    fail "doctor on b failed: $doc"
buf=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["drops"]["socket_buffer"])' "$doc")
# The smallest size is no more than net.core.rmem_max: the kernel gives it whole.
[ "$buf" = 65536 ] || fail "b's sockets got $buf bytes of buffer, asked 65536: $doc"

# The daemon's process in NODE (the one `up` left running).
daemon_pid() {
    local pid
    for pid in $(ip netns pids "$E2E_PFX$1"); do
        case "$(cat "/proc/$pid/comm" 2>/dev/null)" in ddpnet*) echo "$pid"; return 0 ;; esac
    done
    return 1
}
snmp_udp() {   # snmp_udp NODE FIELD: the namespace's Udp counter FIELD
    nx "$1" awk -v f="$2" '$1 == "Udp:" && !n { for (i = 2; i <= NF; i++) col[$i] = i; n = 1; next }
                          $1 == "Udp:" { print $col[f] }' /proc/net/snmp
}

step "b's daemon stopped: a floods it, b's applications fill ddp0"
pid=$(daemon_pid node-b) || fail "no daemon process in node-b"
# Should the script die before SIGCONT, the clean-up's SIGKILL still ends it.
kill -STOP "$pid"
# udp_flood NODE DEST COUNT SIZE: COUNT datagrams of SIZE bytes to DEST's
# discard port, through ddp0, as fast as they go (what a queue has no
# room for is the kernel's to drop, silently).
udp_flood() {
    nx "$1" "$PY" - "$2" "$3" "$4" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
data = b"x" * int(sys.argv[3])
for _ in range(int(sys.argv[2])):
    try:
        s.sendto(data, (sys.argv[1], 9))
    except OSError:
        pass
EOF
}
udp_flood node-a 10.77.0.2 "$SOCKET_FLOOD" 1200
udp_flood node-b 10.77.0.1 "$TUN_FLOOD" 64
# a's daemon seals and sends what its ddp0 queue still holds.
sleep "$STOPPED_S"
kill -CONT "$pid"

step "SIGCONT; the drops show in status, status --json, the metrics and doctor"
ping_ok node-a 10.77.0.2
kernel=$(snmp_udp node-b RcvbufErrors)
tx_dropped=$(nx node-b cat /sys/class/net/ddp0/statistics/tx_dropped)
say "the kernel: $kernel datagrams dropped at b's socket, $tx_dropped at b's ddp0 queue"
[ "$kernel" -gt 0 ] || fail "the flood overflowed no socket buffer (UdpRcvbufErrors 0): the test proves nothing"
[ "$tx_dropped" -gt 0 ] || fail "b's ddp0 queue dropped nothing (tx_dropped 0): the test proves nothing"
# Drops are told by the next datagram queued: keep pinging until every one is.
socket_counted() {
    nx node-a ping -n -c 1 -w 2 10.77.0.2 >/dev/null 2>&1
    [ "$(json_get node-b 'd["drops"]["socket_overflow"]')" = "$kernel" ]
}
wait_for 15 socket_counted ||
    fail "b's status counts $(json_get node-b 'd["drops"]["socket_overflow"]') socket drops, the kernel $kernel"
[ "$(json_get node-b 'd["drops"]["tun_queue"]')" = "$tx_dropped" ] ||
    fail "b's status counts $(json_get node-b 'd["drops"]["tun_queue"]') drops at ddp0, the kernel $tx_dropped"
out=$(ddp_status node-b)
line="dropped by the kernel: $kernel datagrams? at the UDP sockets \(socket_overflow\), $tx_dropped packets? at ddp0's queue \(tun_queue\)"
grep -qE "$line" <<<"$out" || fail "b's status has no drop line ($line): $out"
# a may count drops too: b's daemon, woken, sends the 5000 datagrams its
# queue held in one burst into a's 64K socket.

nx node-a "$PY" - "http://10.77.0.2:$MPORT/metrics" >"$T/b.prom" <<'EOF'
import sys, urllib.request
sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())
EOF
promtool check metrics <"$T/b.prom" >"$T/b.lint" 2>&1 || fail "promtool on b's metrics: $(cat "$T/b.lint")"
for want in "socket_overflow\"} $kernel" "tun_queue\"} $tx_dropped"; do
    grep -qF "ddpnet_packets_dropped_total{interface=\"ddp0\",reason=\"$want" "$T/b.prom" ||
        fail "b's metrics lack $want: $(grep ddpnet_packets_dropped_total "$T/b.prom")"
done

doc=$(nx node-b timeout 30 "$DDPNET" doctor --run-dir "$T/node-b/run" 2>&1) || true
grep -qE "warning: the kernel dropped $kernel datagrams? at the UDP sockets.*Raise socket-buffer" <<<"$doc" ||
    fail "b's doctor does not say what to do about the socket drops: $doc"
grep -qE "warning: the kernel dropped $tx_dropped packets? at ddp0's transmit queue" <<<"$doc" ||
    fail "b's doctor does not say what to do about ddp0's drops: $doc"
say "status, metrics and doctor count $kernel socket drops and $tx_dropped at ddp0"
