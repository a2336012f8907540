#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: long
# NAT traversal (issue 5): two nodes behind NAT gateways, in two VPCs that
# use the same private range, and one public node; only the public node has
# an endpoint in the cluster file. Checked, with the figures printed:
#  1. after `up` on all three, every node pings every other by name over
#     ddp0; the time from the last `up` to the full mesh (target 5 s,
#     plus 4 times this run's baseline: e2e_mesh_limit_ms in lib.sh);
#  2. a <-> b goes direct: c's UDP counters do not grow by what iperf3 moves
#     from a to b, and `ddpnet status --json` says path "direct";
#  3. torchrun (c10d rendezvous at node-a by name) + a Gloo all_reduce over
#     a, b and c;
#  4. rebuilt with a symmetric NAT in front of a: a <-> b is relayed via c
#     (status: path "relay", via "node-c"; c's counters grow by at least
#     what iperf3 moves), full mesh within 10 s (plus the same load
#     allowance), the all_reduce passes;
#  5. iperf3 a -> b (3 s) direct and relayed, side by side; relayed, it
#     travels in relay frames, data frames (node-c's
#     ddpnet_relay_frames_total and ddpnet_relay_data_frames_total grow by
#     at least a frame per 1500 bytes moved, both ways);
#  6. node-c restarted as a version without relay frames
#     (DDPNET_RELAY_FRAMES=0): a <-> b is relayed via c again, with RELAY
#     and RELAYED only (no frame sent or taken by anyone), and iperf3 goes
#     through it.
#
#                namespace "hub": bridge br0, the "internet" 100.64.0.0/16
#        +---------------------------+---------------------------+
#      p-gw-a                      p-gw-b                     p-node-c
#        |                           |                           |
#   wan0 100.64.1.1            wan0 100.64.2.1             eth0 100.64.0.3
#   [gw-a] masquerade          [gw-b] masquerade           [node-c] public;
#    (phase 2: masquerade         |                         its endpoint is the
#     random,fully-random)        |                         only one in the file
#   lan0 172.31.1.1/24         lan0 172.31.1.1/24
#        |                           |
#   eth0 172.31.1.10/24        eth0 172.31.1.10/24      (the same address:
#   [node-a]                   [node-b]                  two default VPCs)
#   ddp0 10.77.0.1             ddp0 10.77.0.2              ddp0 10.77.0.3
#
# Gateways: NAT from lan0 to wan0; from the internet only replies come in
# (established, related), to the LAN or to the gateway itself. Nodes: a
# firewall on eth0 admits established/related traffic and UDP to the
# overlay port, nothing else (ddp0 is not filtered). node-c counts the UDP
# bytes on its overlay port (nftables, before its firewall).
#
# NAT_SELFTEST=1 first checks the testbed itself with plain UDP sockets
# and no ddpnet (each node reaches c through its NAT; the cone mapping is
# endpoint-independent and the symmetric one is not; the firewalls drop
# what was not asked for; two sockets behind the cone NATs punch a hole to
# each other, and behind the symmetric one they cannot), then goes on to
# the real checks.
# Environment: NAT_UP_ORDER (default "node-c node-a node-b"),
# NAT_TARGET_CONE_S (5), NAT_TARGET_SYM_S (10), NAT_MESH_DEADLINE_S (30),
# TORCH_TIMEOUT (180), and lib.sh's (E2E_MESH_LOAD_FACTOR among them).
set -eu
. "$(dirname "$0")/lib.sh"

NAT_SELFTEST=${NAT_SELFTEST:-0}
e2e_init nat_traversal ping iperf3 ss nft getent
# torch is for the all_reduce steps only: without it they alone are skipped.
NO_TORCH=$(e2e_torch_missing)
NAT_UP_ORDER=${NAT_UP_ORDER:-node-c node-a node-b}
NAT_TARGET_CONE_S=${NAT_TARGET_CONE_S:-5}
NAT_TARGET_SYM_S=${NAT_TARGET_SYM_S:-10}
NAT_MESH_DEADLINE_S=${NAT_MESH_DEADLINE_S:-30}
TORCH_TIMEOUT=${TORCH_TIMEOUT:-180}
NODES=(node-a node-b node-c)
declare -A ADDR=([node-a]=10.77.0.1 [node-b]=10.77.0.2 [node-c]=10.77.0.3)
GW_A=$E2E_INET.1.1 GW_B=$E2E_INET.2.1 PUB_C=$E2E_INET.0.3 PROBE=$E2E_INET.0.9
P=$E2E_PORT

# build_world NAT-OF-GW-A: the topology above, no ddpnet yet.
build_world() {
    e2e_hub
    e2e_router gw-a 1.1 "$1"
    e2e_router gw-b 2.1 cone
    e2e_lan_node gw-a node-a 10
    e2e_lan_node gw-b node-b 10
    e2e_public_node node-c 0.3
    for n in "${NODES[@]}"; do e2e_firewall "$n" "$P"; done
    e2e_udp_counters node-c "$P"
}

# --- the plumbing self-check: plain UDP sockets, no ddpnet ---------------------

# $T/udp.py: the few UDP roles the self-check needs, each bounded in time.
write_udp_tool() {
    cat >"$T/udp.py" <<'PYEOF'
# echo PORT SECS                    reply "IP:PORT" (the sender as seen) to each datagram
# ask LPORT HOST:PORT...            from LPORT, ask each echo server how it sees us
# listen PORT SECS                  print "received N" (and the senders)
# send LPORT HOST:PORT N            N datagrams, 50 ms apart (LPORT 0: any port)
# punch LPORT HOST:PORT START SECS  from START (epoch s) send every 20 ms for SECS;
#                                   print "got" with the peer's first arrival, or "none"
import socket, sys, time

def ep(s):
    h, p = s.rsplit(":", 1)
    return (h, int(p))

def sock(port, timeout=0.05):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    s.settimeout(timeout)
    return s

def recv(s):
    try:
        return s.recvfrom(2048)
    except (socket.timeout, ConnectionRefusedError):
        return None, None

mode, args = sys.argv[1], sys.argv[2:]
if mode == "echo":
    s, end = sock(int(args[0])), time.time() + float(args[1])
    while time.time() < end:
        data, src = recv(s)
        if src:
            s.sendto(("%s:%d" % src).encode(), src)
elif mode == "ask":
    s = sock(int(args[0]))
    for t in args[1:]:
        seen, end = "none", time.time() + 2
        while seen == "none" and time.time() < end:
            s.sendto(b"?", ep(t))
            stop = time.time() + 0.2
            while time.time() < stop:
                data, src = recv(s)
                if src == ep(t):
                    seen = data.decode()
                    break
        print(t, seen)
elif mode == "listen":
    s, end, got = sock(int(args[0])), time.time() + float(args[1]), []
    while time.time() < end:
        data, src = recv(s)
        if src:
            got.append("%s:%d" % src)
    print("received %d %s" % (len(got), " ".join(sorted(set(got)))))
elif mode == "send":
    s = sock(int(args[0]))
    for _ in range(int(args[2])):
        s.sendto(b"unsolicited", ep(args[1]))
        time.sleep(0.05)
elif mode == "punch":
    s, peer, start = sock(int(args[0]), 0.02), ep(args[1]), float(args[2])
    end, first, others = start + float(args[3]), None, set()
    time.sleep(max(0.0, start - time.time()))
    while time.time() < end:
        s.sendto(b"punch", peer)
        t = time.time() + 0.02
        while time.time() < t:
            data, src = recv(s)
            if src == peer and first is None:
                first = int((time.time() - start) * 1000)
            elif src and src != peer:
                others.add("%s:%d" % src)
    print(("got %s:%d after %d ms" % (peer + (first,))) if first is not None else "none",
          ("(also from %s)" % " ".join(sorted(others))) if others else "")
    sys.exit(0 if first is not None else 1)
PYEOF
    chmod 644 "$T/udp.py"
}
udp() { local n=$1; shift; nx "$n" timeout 20 "$PY" "$T/udp.py" "$@"; }
udp_bg() { local n=$1 tag=$2; shift 2; nx_bg "$n" "$tag" timeout 30 "$PY" "$T/udp.py" "$@"; }
udp_in_ns() { local ns=$E2E_PFX$1; shift; ip netns exec "$ns" timeout 20 "$PY" "$T/udp.py" "$@"; }
listening_udp() { local out; out=$(nx "$1" ss -Hlun "sport = :$2") && [ -n "$out" ]; }

# mapping NODE TARGET: how TARGET's echo server sees NODE's port P.
mapping() {
    local out
    out=$(udp "$1" ask "$P" "$2") || fail "$1: asking $2 failed: $out"
    set -- $out
    [ "${2:-none}" != none ] || fail "$1: no answer from the echo server at $1 (UDP through the NAT)"
    echo "$2"
}

# selftest_world NAT-OF-GW-A: the topology, a probe on the internet (no
# firewall), and echo servers on c:P and probe:3478 (STUN's port).
selftest_world() {
    build_world "$1"
    e2e_public_node probe 0.9
    write_udp_tool
    udp_bg node-c echo echo "$P" 60
    udp_bg probe echo echo 3478 60
    wait_for 10 listening_udp node-c "$P" || fail "echo server on node-c did not start"
    wait_for 10 listening_udp probe 3478 || fail "echo server on probe did not start"
}

# punch_pair: a and b, from port P, send to each other's mapping (as c saw
# it) starting in the same 20 ms, for 3 s. Sets PUNCH_A and PUNCH_B.
punch_pair() {
    local ma=$1 mb=$2 start pa pb
    start=$(( $(date +%s) + 2 ))
    udp_bg node-a punch punch "$P" "$mb" "$start" 3; pa=$BG_PID
    udp_bg node-b punch punch "$P" "$ma" "$start" 3; pb=$BG_PID
    wait "$pa" || true
    wait "$pb" || true
    PUNCH_A=$(cat "$T/node-a/punch.out") PUNCH_B=$(cat "$T/node-b/punch.out")
    say "punch: node-a heard node-b: $PUNCH_A"
    say "punch: node-b heard node-a: $PUNCH_B"
}

selftest() {
    local ma mpa mb mpb out d0 d1
    step "self-check, cone NAT: each node reaches c through its gateway"
    selftest_world cone
    ma=$(mapping node-a "$PUB_C:$P"); mpa=$(mapping node-a "$PROBE:3478")
    mb=$(mapping node-b "$PUB_C:$P"); mpb=$(mapping node-b "$PROBE:3478")
    say "node-a 172.31.1.10:$P is seen as $ma by c and as $mpa by the probe"
    say "node-b 172.31.1.10:$P is seen as $mb by c and as $mpb by the probe"
    case "$ma" in "$GW_A":*) ;; *) fail "node-a is not translated to $GW_A: $ma" ;; esac
    case "$mb" in "$GW_B":*) ;; *) fail "node-b is not translated to $GW_B: $mb" ;; esac
    [ "$ma" = "$mpa" ] || fail "cone NAT: node-a's mapping depends on the destination ($ma, $mpa)"
    [ "$mb" = "$mpb" ] || fail "cone NAT: node-b's mapping depends on the destination ($mb, $mpb)"
    say "ok: both mappings are endpoint-independent"

    step "self-check: firewalls and gateways drop what was not asked for"
    d0=$(e2e_fw_dropped node-c)
    udp_bg node-c listen listen 5555 3
    wait_for 5 listening_udp node-c 5555 || fail "listener on node-c did not start"
    udp probe send 0 "$PUB_C:5555" 5
    ping_fails probe "$PUB_C" 2
    wait "$BG_PID" || true
    out=$(cat "$T/node-c/listen.out")
    d1=$(e2e_fw_dropped node-c)
    case "$out" in "received 0"*) ;; *) fail "node-c's firewall let UDP to port 5555 in: $out" ;; esac
    [ "$d1" -ge $(( d0 + 5 )) ] || fail "node-c's firewall counted $((d1 - d0)) drops, want >= 5"
    say "ok: node-c dropped $((d1 - d0)) unsolicited packets (UDP 5555, ping); its port $P answers (above)"
    udp_bg node-a listen listen 5555 3
    wait_for 5 listening_udp node-a 5555 || fail "listener on node-a did not start"
    udp_in_ns gw-a send 0 "172.31.1.10:5555" 5
    wait "$BG_PID" || true
    out=$(cat "$T/node-a/listen.out")
    case "$out" in "received 0"*) ;; *) fail "node-a's firewall let UDP to port 5555 in from its LAN: $out" ;; esac
    # The mapping c saw, from another port and host: only c's replies may pass.
    udp_bg node-a listen listen "$P" 3
    wait_for 5 listening_udp node-a "$P" || fail "listener on node-a did not start"
    udp probe send 4000 "$ma" 5
    wait "$BG_PID" || true
    out=$(cat "$T/node-a/listen.out")
    case "$out" in "received 0"*) ;; *) fail "gw-a passed an unsolicited datagram to node-a's mapping $ma: $out" ;; esac
    say "ok: node-a dropped UDP 5555 from its LAN; gw-a dropped the probe's datagrams to mapping $ma"

    step "self-check, cone NAT: node-a and node-b punch a hole to each other"
    punch_pair "$ma" "$mb"
    case "$PUNCH_A $PUNCH_B" in got*got*) ;; *) fail "no hole punched through the cone NATs (a: $PUNCH_A; b: $PUNCH_B)" ;; esac
    say "ok: hole punched both ways through the cone NATs"
    e2e_reset

    step "self-check, symmetric NAT in front of node-a"
    selftest_world symmetric
    ma=$(mapping node-a "$PUB_C:$P"); mpa=$(mapping node-a "$PROBE:3478")
    mb=$(mapping node-b "$PUB_C:$P")
    say "node-a is seen as $ma by c and as $mpa by the probe; node-b as $mb"
    case "$ma" in "$GW_A":*) ;; *) fail "node-a is not translated to $GW_A: $ma" ;; esac
    [ "$ma" != "$mpa" ] || fail "symmetric NAT: node-a has one mapping ($ma) for two destinations"
    punch_pair "$ma" "$mb"
    case "$PUNCH_A" in none*) ;; *) fail "symmetric NAT: node-a heard node-b: $PUNCH_A" ;; esac
    case "$PUNCH_B" in none*) ;; *) fail "symmetric NAT: node-b heard node-a: $PUNCH_B" ;; esac
    say "ok: no hole through the symmetric NAT; a relay is the only way"
    e2e_reset
    say "self-check passed"
}

# --- the real checks ---------------------------------------------------------

write_cluster() {
    local n out
    for n in "${NODES[@]}"; do e2e_key "$n"; done
    cluster_begin "$T/cluster.conf" "metrics = 127.0.0.1:$MPORT"
    cluster_node "$T/cluster.conf" node-a "$(pub node-a)" "${ADDR[node-a]}"
    cluster_node "$T/cluster.conf" node-b "$(pub node-b)" "${ADDR[node-b]}"
    cluster_node "$T/cluster.conf" node-c "$(pub node-c)" "${ADDR[node-c]}" "$PUB_C:$P"
    out=$("$DDPNET" check -c "$T/cluster.conf" 2>&1) || fail "ddpnet check: $out"
}

# up_all LABEL TARGET: up in NAT_UP_ORDER, then the time from the start of
# the last up to the full mesh (every node pings every other by name).
up_all() {
    local label=$1 target=$2 n m t0="" ms limit_ms limit
    e2e_mesh_baseline "${NODES[@]}"
    limit_ms=$(e2e_mesh_limit_ms "$target" "$MESH_BASE_MS")
    limit="$(( limit_ms / 1000 )).$(printf '%03d' $(( limit_ms % 1000 ))) s"
    for n in $NAT_UP_ORDER; do
        t0=$(date +%s%N)
        ddp_up "$n"
    done
    say "last up took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
    e2e_mesh_time "$t0" "$NAT_MESH_DEADLINE_S" "${NODES[@]}"
    [ -n "$MESH_MS" ] || fail "$label: no full mesh within ${NAT_MESH_DEADLINE_S} s of the last up; never answered: $MESH_MISSING"
    ms=$MESH_MS
    FIG["mesh $label"]="$(( ms / 1000 )).$(printf '%03d' $(( ms % 1000 ))) s"
    [ "$ms" -le "$limit_ms" ] ||
        fail "$label: full mesh took ${FIG["mesh $label"]}, limit $limit (target ${target} s + ${E2E_MESH_LOAD_FACTOR:-4} x this run's baseline, $MESH_BASE_MS ms)"
    say "ok: full mesh in ${FIG["mesh $label"]}, within $limit (target ${target} s + ${E2E_MESH_LOAD_FACTOR:-4} x baseline $MESH_BASE_MS ms)"
    for n in "${NODES[@]}"; do
        for m in "${NODES[@]}"; do [ "$n" = "$m" ] || ping_ok "$n" "$m"; done
    done
    say "ok: every pair answers stock ping by name"
}

# path_is NODE PEER PATH [VIA]: the status path settles to PATH (via VIA).
path_is() {
    local got path via rest
    got=$(e2e_peer_path "$1" "$2") || return 1
    read -r path via rest <<<"$got"
    [ "$path" = "$3" ] || return 1
    [ -z "${4:-}" ] || [ "$via" = "$4" ]
}
# path_check NODE PEER PATH [VIA]: waits up to 10 s, records the rtt.
path_check() {
    local n=$1 peer=$2 want=$3 via=${4:-} got
    # A missing field fails at once, saying which.
    got=$(e2e_peer_path "$n" "$peer") || fail "$n: $got"
    if ! wait_for 10 path_is "$@"; then
        got=$(e2e_peer_path "$n" "$peer") || fail "$n: $got"
        fail "$n: path to $peer is '$got' (path via rtt_ms endpoint), want $want${via:+ via $via}"
    fi
    got=$(e2e_peer_path "$n" "$peer") || fail "$n: $got"
    say "ok: $n -> $peer: $got (path via rtt_ms endpoint)"
    RTT=$(echo "$got" | awk '{ print $3 }')
}

# relay_frames NODE [data]: its ddpnet_relay_frames_total (with data:
# ddpnet_relay_data_frames_total), "SENT RECEIVED", from its metrics on
# its own loopback.
MPORT=9586
relay_frames() {
    nx "$1" "$PY" - "http://127.0.0.1:$MPORT/metrics" "ddpnet_relay_${2:+data_}frames_total{" <<'PYEOF'
import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()
v = {}
for line in text.splitlines():
    if line.startswith(sys.argv[2]):
        v["sent" if 'direction="sent"' in line else "received"] = int(line.rsplit(" ", 1)[1])
print(v["sent"], v["received"])
PYEOF
}

relayed_again() {
    path_is node-a node-b relay node-c && path_is node-b node-a relay node-c &&
        nx node-a ping -n -c 1 -W 1 "${ADDR[node-b]}" >/dev/null 2>&1
}

# iperf_a_to_b: 3 s iperf3 TCP node-a -> node-b over ddp0, with node-c's
# UDP bytes counted around it. Sets IPERF_BYTES, IPERF_MBPS, C_RX, C_TX.
iperf_a_to_b() {
    local before after spid
    nx_bg node-b iperf3-server timeout 40 iperf3 -s -1 -B "${ADDR[node-b]}" -p 5201
    spid=$BG_PID
    wait_for 10 e2e_listening node-b 5201 || fail "iperf3 server on node-b did not start: $(cat "$T/node-b/iperf3-server.out")"
    before=$(e2e_udp_bytes node-c)
    nx node-a timeout 30 iperf3 -c "${ADDR[node-b]}" -p 5201 -t 3 -J >"$T/node-a/iperf3.json" 2>&1 ||
        fail "iperf3 node-a -> node-b failed: $(tail -n 20 "$T/node-a/iperf3.json")"
    after=$(e2e_udp_bytes node-c)
    wait "$spid" 2>/dev/null || true
    IPERF_BYTES=$("$PY" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_received"]["bytes"]))' \
        "$T/node-a/iperf3.json") || fail "iperf3: unreadable result: $(tail -n 20 "$T/node-a/iperf3.json")"
    [ "$IPERF_BYTES" -gt 0 ] || fail "iperf3 node-a -> node-b moved 0 bytes"
    IPERF_MBPS=$(( IPERF_BYTES * 8 / 3 / 1000000 ))
    C_RX=$(( ${after% *} - ${before% *} )) C_TX=$(( ${after#* } - ${before#* } ))
    say "iperf3 node-a -> node-b: $IPERF_BYTES bytes in 3 s ($IPERF_MBPS Mbit/s); node-c's port $P meanwhile: rx $C_RX, tx $C_TX bytes"
}

phase_cone() {
    step "cone NATs: up ($NAT_UP_ORDER), full mesh"
    build_world cone
    up_all cone "$NAT_TARGET_CONE_S"
    step "cone NATs: node-a <-> node-b is direct"
    path_check node-a node-b direct
    FIG["rtt direct"]=$RTT
    path_check node-b node-a direct
    iperf_a_to_b
    FIG["iperf direct"]="$IPERF_MBPS Mbit/s" FIG["c bytes direct"]="rx $C_RX tx $C_TX of $IPERF_BYTES"
    [ $(( C_RX + C_TX )) -lt $(( IPERF_BYTES / 20 )) ] ||
        fail "node-a -> node-b is not direct: node-c's port $P moved rx $C_RX + tx $C_TX bytes while iperf3 moved $IPERF_BYTES"
    say "ok: node-c saw $((C_RX + C_TX)) bytes, under 5% of the $IPERF_BYTES a sent b"
    step "cone NATs: torchrun (rendezvous at node-a) + Gloo all_reduce"
    if [ -z "$NO_TORCH" ]; then e2e_allreduce node-a node-b node-c; else skip_step "$NO_TORCH"; fi
    e2e_reset
}

phase_symmetric() {
    step "symmetric NAT in front of node-a: up ($NAT_UP_ORDER), full mesh"
    build_world symmetric
    up_all symmetric "$NAT_TARGET_SYM_S"
    step "symmetric NAT: node-a <-> node-b is relayed via node-c"
    path_check node-a node-b relay node-c
    FIG["rtt relay"]=$RTT
    path_check node-b node-a relay node-c
    local f0 f1 fa0 fa1 d0 d1
    f0=$(relay_frames node-c) || fail "node-c: no relay frame counts: $f0"
    d0=$(relay_frames node-c data) || fail "node-c: no data frame counts: $d0"
    iperf_a_to_b
    f1=$(relay_frames node-c) || fail "node-c: no relay frame counts: $f1"
    d1=$(relay_frames node-c data) || fail "node-c: no data frame counts: $d1"
    FIG["iperf relay"]="$IPERF_MBPS Mbit/s" FIG["c bytes relay"]="rx $C_RX tx $C_TX of $IPERF_BYTES"
    [ "$C_RX" -ge $(( IPERF_BYTES * 9 / 10 )) ] && [ "$C_TX" -ge $(( IPERF_BYTES * 9 / 10 )) ] ||
        fail "node-a -> node-b is not relayed via node-c: its port $P moved rx $C_RX, tx $C_TX bytes while iperf3 moved $IPERF_BYTES"
    say "ok: node-c forwarded it all (rx $C_RX, tx $C_TX >= 90% of $IPERF_BYTES)"
    local sent=$(( ${f1% *} - ${f0% *} )) received=$(( ${f1#* } - ${f0#* } ))
    [ "$sent" -ge $(( IPERF_BYTES / 1500 )) ] && [ "$received" -ge $(( IPERF_BYTES / 1500 )) ] ||
        fail "node-c relayed without frames: $sent sent, $received received for $IPERF_BYTES bytes"
    say "ok: in relay frames: node-c took $received and sent $sent"
    FIG["c frames"]="took $received, sent $sent"
    sent=$(( ${d1% *} - ${d0% *} )) received=$(( ${d1#* } - ${d0#* } ))
    [ "$sent" -ge $(( IPERF_BYTES / 1500 )) ] && [ "$received" -ge $(( IPERF_BYTES / 1500 )) ] ||
        fail "node-c relayed the stream without data frames: $sent sent, $received received for $IPERF_BYTES bytes"
    say "ok: in data frames: node-c took $received and sent $sent"

    step "symmetric NAT: node-c restarted as a version without relay frames"
    ddp_down node-c
    DDPNET_RELAY_FRAMES=0 ddp_up node-c
    # a and b notice the restart when their sessions with c go unanswered
    # (keepalive timeout, then a handshake): the relay carries again once
    # a ping a -> b is answered through it.
    if ! wait_for 60 relayed_again; then
        fail "a <-> b not relayed via node-c again within 60 s of its restart: a sees '$(e2e_peer_path node-a node-b)', b '$(e2e_peer_path node-b node-a)'"
    fi
    fa0=$(relay_frames node-a) || fail "node-a: no relay frame counts: $fa0"
    iperf_a_to_b
    f1=$(relay_frames node-c) || fail "node-c: no relay frame counts: $f1"
    fa1=$(relay_frames node-a) || fail "node-a: no relay frame counts: $fa1"
    FIG["iperf relay old"]="$IPERF_MBPS Mbit/s"
    [ "$C_RX" -ge $(( IPERF_BYTES * 9 / 10 )) ] ||
        fail "node-a -> node-b is not relayed via the restarted node-c: rx $C_RX of $IPERF_BYTES"
    [ "$f1" = "0 0" ] && [ "${fa1% *}" = "${fa0% *}" ] ||
        fail "a frame went to or from the node without them: node-c $f1 (sent received), node-a sent ${fa0% *} then ${fa1% *}"
    say "ok: relayed with RELAY and RELAYED only ($IPERF_MBPS Mbit/s), no frame sent to node-c"
    step "symmetric NAT: torchrun (rendezvous at node-a) + Gloo all_reduce"
    if [ -z "$NO_TORCH" ]; then e2e_allreduce node-a node-b node-c; else skip_step "$NO_TORCH"; fi
    e2e_reset
}

declare -A FIG=()
if [ "$NAT_SELFTEST" = 1 ]; then
    selftest
fi
write_cluster
phase_cone
phase_symmetric
step "figures"
for k in "mesh cone" "mesh symmetric" "rtt direct" "rtt relay" "iperf direct" "iperf relay" \
         "iperf relay old" "c bytes direct" "c bytes relay" "c frames"; do
    say "$(printf '%-16s %s' "$k" "${FIG[$k]:-}")"
done
