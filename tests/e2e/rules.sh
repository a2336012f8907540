#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Groups and rules inside the overlay (issue 61): two train nodes and a spot
# node, one cluster file with
#     allow train -> train any
#     allow spot -> train tcp 29400-29600
#     allow any -> any icmp
#  1. spot reaches train-a's training port (an echo: the replies pass) and a
#     TCP stream runs spot -> train-a on it (iperf3 on 29510);
#  2. the receiver holds on its own: spot runs a copy of the file without
#     [rules] (its own check lets everything out), and its connects to
#     train-a's ssh (22) and etcd (2379) ports and to train-b's metrics
#     (9586) get nothing back; train-a counts them (dropped_rule);
#  3. spot takes the rules (reload): the same connects fail at once, "No
#     route to host" (ICMP administratively prohibited from its own
#     daemon), counted as refused_rule; status and doctor say why;
#  4. train-a reaches train-b's metrics (train -> train);
#  5. live: an echo spot -> train-a:29500 and one train-b -> train-a:29501
#     run while every node reloads a file without the spot rule: the spot
#     one stops at its next packet (documented: a connection whose rule is
#     gone is refused from then on), the train one carries on.
#  6. torchrun across all three (c10d at train-a:29500, Gloo) with the
#     rules and the one Gloo needs besides (`allow train -> spot tcp
#     29400-29600`, every node's ephemeral range narrowed to 29520-29600):
#     the all_reduce's sum on every rank; spot's ssh still refused.
#     Without torch the script ends as skipped after every other check.
#
#                    namespace "hub": bridge br0
#        +-----------------+-----------------+
#      train-a .1        train-b .2         spot .3        192.168.241.0/24
#      10.77.0.1         10.77.0.2         10.77.0.3       (ddp0)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init rules ping iperf3 ss

MPORT=9586
declare -A ADDR=([train-a]=10.77.0.1 [train-b]=10.77.0.2 [spot]=10.77.0.3)
declare -A GROUP=([train-a]=train [train-b]=train [spot]=spot)

step "namespaces, keys, the file"
e2e_hub
i=0
for n in train-a train-b spot; do
    i=$((i + 1))
    e2e_node "$n" "$i" -
    e2e_key "$n"
done
write_file() {   # write_file FILE RULE...: the nodes, then [rules] with RULE... (none: no section)
    local f=$1 n; shift
    cluster_begin "$f" "metrics = overlay:$MPORT"
    for n in train-a train-b spot; do
        cluster_node "$f" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
        printf 'groups = %s\n' "${GROUP[$n]}" >>"$f"
    done
    [ $# -eq 0 ] || { printf '\n[rules]\n'; printf '%s\n' "$@"; } >>"$f"
}
RULES=("allow train -> train any" "allow spot -> train tcp 29400-29600" "allow any -> any icmp")
write_file "$T/rules.conf" "${RULES[@]}"
write_file "$T/open.conf"
write_file "$T/less.conf" "allow train -> train any" "allow any -> any icmp"
"$DDPNET" check -c "$T/rules.conf" >"$T/check.out" 2>/dev/null || fail "check: $(cat "$T/check.out")"
grep -q '^  spot (1 node): train tcp 29400-29600 (line [0-9]*), any icmp' "$T/check.out" ||
    fail "check does not show what spot may reach: $(cat "$T/check.out")"
out=$("$DDPNET" rules test -c "$T/rules.conf" spot train-a tcp 22) &&
    fail "rules test allowed spot -> train-a tcp 22: $out"
case "$out" in *"refused: none of the 3 rules allows it"*) ;; *) fail "rules test: $out" ;; esac
out=$("$DDPNET" rules test -c "$T/rules.conf" spot train-a tcp 29500) || fail "rules test: $out"
case "$out" in *"allowed by rule 2 (line "*"allow spot -> train tcp 29400-29600") ;; *) fail "rules test: $out" ;; esac
say "$out"

# The echo: a server on each port given, each line sent back; a client
# that sends a line every 0.1 s and counts the answers in a file, or
# writes why it stopped.
cat >"$T/echo.py" <<'EOF'
import socket, sys, threading, time
if sys.argv[1] == "serve":
    def serve(port):
        s = socket.create_server(("0.0.0.0", port), reuse_port=True)
        while True:
            c, _ = s.accept()
            threading.Thread(target=lambda c=c: [c.sendall(d) for d in iter(lambda: c.recv(4096), b"")],
                             daemon=True).start()
    for p in sys.argv[2:]:
        threading.Thread(target=serve, args=(int(p),), daemon=True).start()
    time.sleep(3600)
elif sys.argv[1] == "connect":            # connect ADDR PORT: one exchange, or the error
    try:
        s = socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=float(sys.argv[4]))
        s.sendall(b"hi\n"); print("answered" if s.recv(16) == b"hi\n" else "no answer")
    except OSError as e:
        print(type(e).__name__, e.strerror or e); sys.exit(1)
else:                                      # stream ADDR PORT FILE
    s = socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=5)
    n = 0
    try:
        while True:
            s.sendall(b"x\n")
            if s.recv(16) != b"x\n":
                raise OSError("closed")
            n += 1
            open(sys.argv[4], "w").write(str(n))
            time.sleep(0.1)
    except OSError as e:
        open(sys.argv[4] + ".end", "w").write(str(e))
EOF

step "up: spot with the file without rules, the train nodes with rules"
cp "$T/rules.conf" "$T/train-a/cluster.conf"
cp "$T/rules.conf" "$T/train-b/cluster.conf"
cp "$T/open.conf" "$T/spot/cluster.conf"
for n in train-a train-b spot; do ddp_up "$n" "$T/$n/cluster.conf"; done
nx_bg train-a echo "$PY" "$T/echo.py" serve 22 2379 29500 29501
wait_for 10 e2e_listening train-a 29501 || fail "echo server on train-a did not start"
ping_ok spot "${ADDR[train-a]}"
ping_ok train-a "${ADDR[train-b]}"

connect() {   # connect FROM ADDR PORT TIMEOUT: prints the outcome
    nx "$1" "$PY" "$T/echo.py" connect "$2" "$3" "$4" 2>&1 || true
}
counter() {   # counter NODE KEY: a number from the control socket's get
    ddp_status "$1" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["rules"][sys.argv[1]])' "$2"
}

step "spot reaches the training port; the replies pass"
out=$(connect spot "${ADDR[train-a]}" 29500 5)
[ "$out" = answered ] || fail "spot -> train-a:29500: $out"
nx_bg train-a iperf3-server timeout 30 iperf3 -s -1 -B "${ADDR[train-a]}" -p 29510
wait_for 10 e2e_listening train-a 29510 || fail "iperf3 server on train-a did not start"
nx spot timeout 20 iperf3 -c "${ADDR[train-a]}" -p 29510 -t 2 -J >"$T/iperf.json" 2>&1 ||
    fail "iperf3 spot -> train-a:29510: $(tail -n 5 "$T/iperf.json")"
bytes=$("$PY" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_received"]["bytes"]))' "$T/iperf.json")
[ "$bytes" -gt 0 ] || fail "iperf3 spot -> train-a: 0 bytes"
say "iperf3 spot -> train-a on the training port: $((bytes * 8 / 2 / 1000000)) Mbit/s"

step "the receiver refuses on its own: spot's file has no rules"
before=$(counter train-a dropped)
for target in "train-a 22" "train-a 2379" "train-b $MPORT"; do
    set -- $target
    out=$(connect spot "${ADDR[$1]}" "$2" 2)
    case "$out" in timeout*|"TimeoutError"*) ;; *) fail "spot -> $1:$2 without spot's rules: '$out', want a timeout" ;; esac
    say "spot -> $1:$2, spot without rules: $out"
done
after=$(counter train-a dropped)
[ "$after" -gt "$before" ] || fail "train-a counted no rule drops ($before -> $after)"
say "train-a dropped_rule: $before -> $after"
ddp_status train-a >"$T/train-a.status"
grep -q '^rules: 3 (default deny), [0-9]* connections\?; refused (rule): [1-9][0-9]* received' \
    "$T/train-a.status" || fail "train-a's status has no rules line: $(cat "$T/train-a.status")"
say "train-a status: $(grep '^rules:' "$T/train-a.status")"

step "spot takes the rules: a quick refusal from its own daemon"
cp "$T/rules.conf" "$T/spot/cluster.conf"
out=$(nx spot timeout 20 "$DDPNET" reload --run-dir "$T/spot/run" 2>&1) || fail "reload on spot: $out"
case "$out" in *"rules changed (3 rules)"*) ;; *) fail "reload on spot said: $out" ;; esac
for target in "train-a 22" "train-a 2379" "train-b $MPORT"; do
    set -- $target
    t0=$(date +%s%N)
    out=$(connect spot "${ADDR[$1]}" "$2" 5)
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    case "$out" in *"No route to host"*) ;; *) fail "spot -> $1:$2: '$out', want No route to host" ;; esac
    [ "$ms" -lt 2000 ] || fail "spot -> $1:$2 took $ms ms to be refused"
    say "spot -> $1:$2: $out after $ms ms"
done
[ "$(counter spot refused)" -ge 3 ] || fail "spot counted $(counter spot refused) refusals, want 3"
ddp_status spot >"$T/spot.status"
grep -q '^rules: 3 (default deny), [0-9]* connections\?; refused (rule): [0-9]* received, [1-9][0-9]* sent back as prohibited' \
    "$T/spot.status" || fail "spot's status has no rules line: $(cat "$T/spot.status")"
nx spot timeout 60 "$DDPNET" doctor --run-dir "$T/spot/run" >"$T/spot.doctor" 2>&1 ||
    fail "doctor on spot: $(cat "$T/spot.doctor")"
grep -q "^note: the cluster file's rules (3, default deny) refused" "$T/spot.doctor" ||
    fail "spot's doctor does not explain the refusals: $(cat "$T/spot.doctor")"
say "spot status: $(grep '^rules:' "$T/spot.status")"
say "spot doctor: $(grep '^note: the cluster' "$T/spot.doctor")"
out=$(nx train-a "$PY" -c 'import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
      "http://${ADDR[train-a]}:$MPORT/metrics" | grep 'ddpnet_packets_dropped_total{.*reason="rule"}') ||
    fail "train-a's metrics have no reason=\"rule\""
case "$out" in *" 0") fail "train-a's metrics count no rule drops: $out" ;; esac
say "train-a metrics: $out"

step "train reaches train's metrics"
out=$(connect train-a "${ADDR[train-b]}" "$MPORT" 5)
case "$out" in answered|"no answer") ;; *) fail "train-a -> train-b:$MPORT: $out" ;; esac

step "live: the spot rule removed by reload stops spot's connection, not train's"
nx_bg spot stream "$PY" "$T/echo.py" stream "${ADDR[train-a]}" 29500 "$T/spot/count"
nx_bg train-b stream "$PY" "$T/echo.py" stream "${ADDR[train-a]}" 29501 "$T/train-b/count"
moving() { local a; a=$(cat "$1" 2>/dev/null || echo 0); sleep 0.5; [ "$(cat "$1" 2>/dev/null || echo 0)" -gt "$a" ]; }
wait_for 10 moving "$T/spot/count" || fail "spot's stream does not run"
wait_for 10 moving "$T/train-b/count" || fail "train-b's stream does not run"
for n in train-a train-b spot; do
    cp "$T/less.conf" "$T/$n/cluster.conf"
    out=$(nx "$n" timeout 20 "$DDPNET" reload --run-dir "$T/$n/run" 2>&1) || fail "reload on $n: $out"
done
stopped() { ! moving "$T/spot/count"; }
wait_for 5 stopped || fail "spot's stream still runs after its rule went: $(cat "$T/spot/count")"
moving "$T/train-b/count" || fail "train-b's stream stopped with the reload: $(cat "$T/train-b/count")"
say "after the reload: spot's stream stopped at $(cat "$T/spot/count") echoes, train-b's runs ($(cat "$T/train-b/count"))"

step "torchrun across all three with the rules, and the rule Gloo needs"
# The c10d rendezvous is train-a:29500 (spot -> train tcp 29400-29600).
# Gloo's pairs then listen on ephemeral ports and either end may be the
# one to connect: each node's ephemeral range (its namespace's) narrowed
# to 29520-29600, and the training ports allowed the other way too:
# `allow train -> spot tcp 29400-29600`. train -> train is `any`.
"$PY" -c 'import torch, torch.distributed' 2>/dev/null && command -v torchrun >/dev/null ||
    skip "every check above passed; the torchrun step needs torch ($PY) and torchrun"
echo_pid=$(nx train-a ss -Hltnp 'sport = :29500' | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1)
[ -z "$echo_pid" ] || kill "$echo_pid"   # the echo server this script started: 29500 is torch's now
port_free() { ! nx train-a ss -Hltn 'sport = :29500' | grep -q .; }
wait_for 10 port_free || fail "the echo server still holds train-a:29500"
write_file "$T/torch.conf" "${RULES[@]}" "allow train -> spot tcp 29400-29600"
for n in train-a train-b spot; do
    nx "$n" sysctl -qw net.ipv4.ip_local_port_range="29520 29600" || fail "sysctl on $n"
    cp "$T/torch.conf" "$T/$n/cluster.conf"
    out=$(nx "$n" timeout 20 "$DDPNET" reload --run-dir "$T/$n/run" 2>&1) || fail "reload on $n: $out"
done
out=$("$DDPNET" rules test -c "$T/torch.conf" train-a spot tcp 29550) || fail "rules test: $out"
say "$out"
e2e_allreduce train-a train-b spot
out=$(connect spot "${ADDR[train-a]}" 22 5)
case "$out" in *"No route to host"*) ;; *) fail "spot -> train-a:22 with torch's rules: '$out'" ;; esac
say "with torchrun's rules, spot -> train-a:22 still: $out"
say "spot status: $(ddp_status spot | grep '^rules:')"
