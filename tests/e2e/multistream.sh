#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: alone
# The sharded data path under 8 streams (issues 19 and 58). Each daemon
# runs MS_SHARDS shards (4, more than a 2-core machine's default, so that
# 8 flows spread over them): a flow is read and sealed on one shard, its
# crypto jobs run there or on an idle shard that helps, and the shard
# finishes them in the order it made them. Checked:
#  1. both daemons run their shards (threads beside the daemon's loop);
#  2. 8 UDP flows a -> b at once (tools/seqflows.py), every datagram
#     numbered, BURST of one flow back to back then the next flow's, so
#     that one flow's consecutive datagrams are in different TUN reads
#     and so in different crypto jobs; at a moderate rate, the sender
#     retrying what its own kernel refused (ENOBUFS):
#     - at b, per flow: nothing lost, duplicated or foreign;
#     - the seal side keeps order, strictly: on a's eth0, the counters of
#       each shard's transport messages never go back (they are reserved
#       in order by the shard; a job finished out of turn sends a higher
#       counter before a lower one);
#     - end to end, per flow, at most REORDER_MAX datagrams came after a
#       later one. Not zero, because a loop itself reorders a little: it
#       keeps 4 reads of ddp0 in flight in io_uring's worker threads, and
#       its ddp0 writes run there too, so two packets that arrive
#       together can be taken, or written, in either order. Measured on a
#       loaded 2-vCPU machine, of 24000 (with the crypto worker threads
#       this script checked before issue 58): 0-16 with 4 workers, 0-1
#       with none; a pool that handed jobs back as they finished: ~220
#       (and ~90 sealed out of order). Set MS_REORDER_MAX=0 once the
#       loop keeps order.
#  3. the counters agree: a's tx_bytes to b (ddpnet status --json) ==
#     b's rx_bytes from a, both == what the flows moved (each datagram
#     one transport message: 16 B header + the inner packet padded to 16
#     + 16 B tag) up to what the daemons said besides (discovery,
#     keepalives: SLACK); stock `wg show ddp0 transfer` says what status
#     says; ddp0's packet counters on a (sent) and b (received) count the
#     flows' datagrams (and at most the few the kernel sends on its own);
#     no drop counter of either daemon (replay, bad packet, bad source,
#     no session, pool full, ...; but queue_delay, queue management's
#     own, below) moved, nor ddp0's drop/error counters;
#  4. iperf3 -P 8 (TCP: GSO super-packets, many segments per job) a -> b
#     at a capped rate: every stream moves data; a's TCP detected
#     reordering (SACK, timestamps) at most TCP_REORDER_MAX times (the
#     loop's own reordering of 2 counts there too; measured: 0 in 11
#     runs; with the broken pools above, 65-490); no drop counter
#     moved; the counters agree in both directions (allowing for
#     datagrams the kernels' UDP counters say were lost between the
#     daemons).
#  5. iperf3 -P 8 a -> b uncapped: the checks of 4, and the shards beside
#     each daemon's own loop did work (their threads, ddpnet-shard*,
#     used CPU): b's open what a's sealed (the shard hint).
# With jobs finished out of turn (seal or open) it fails at 2 and 4.
#
#      node-a .1  ----  hub  ----  node-b .2      192.168.241.0/24
#      10.77.0.1                   10.77.0.2      (ddp0)
#
# Environment: MS_SHARDS (shards per daemon, 4; at least 2), MS_COUNT
# (datagrams per flow, 3000), MS_RATE (datagrams/s over all flows, 6000),
# MS_BURST (4), MS_REORDER_MAX (datagrams over all flows, default 0.25%
# of them: 60), MS_TCP_SECS (4), MS_TCP_RATE (per stream, 40M),
# MS_TCP_REORDER_MAX (reordering events TCP may detect, 10), MS_SLACK
# (bytes the daemons may send besides the flows in one phase, 65536), and
# lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init multistream iperf3 ping ss wg

SHARDS=${MS_SHARDS:-4}
[ "$SHARDS" -ge 2 ] || fail "MS_SHARDS=$SHARDS: at least 2 (this script checks the shards)"
FLOWS=8
COUNT=${MS_COUNT:-3000}
RATE=${MS_RATE:-6000}
BURST=${MS_BURST:-4}
REORDER_MAX=${MS_REORDER_MAX:-$(( FLOWS * COUNT / 400 ))}
TCP_SECS=${MS_TCP_SECS:-4}
TCP_RATE=${MS_TCP_RATE:-40M}
TCP_REORDER_MAX=${MS_TCP_REORDER_MAX:-10}
SLACK=${MS_SLACK:-65536}
SIZE=1000     # UDP payload: inner packet 1028, padded 1040, message 1072, below
              # any path MTU probe (outer >= 1280), so the flows' messages are told by size
MSG=$(( 16 + (SIZE + 28 + 15) / 16 * 16 + 16 ))
UPORT=6100
MPORT=9586
SEQFLOWS=$E2E_DIR/tools/seqflows.py
FAILED=()     # the checks that failed; each printed its FAIL: lines

step "two nodes, $SHARDS shards each, metrics on loopback"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
for n in node-a node-b; do e2e_key "$n"; done
cluster_begin "$T/cluster.conf" "metrics = 127.0.0.1:$MPORT"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$E2E_V4NET.2:$E2E_PORT"
for n in node-a node-b; do DDPNET_SHARDS=$SHARDS ddp_up "$n"; done
ping_ok node-a 10.77.0.2
ping_ok node-b 10.77.0.1

for n in node-a node-b; do
    pid=""
    for p in $(ip netns pids "$E2E_PFX$n"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = ddpnet ] && pid=$p
    done
    [ -n "$pid" ] || fail "$n: no ddpnet process"
    th=$(ls "/proc/$pid/task" | wc -l)
    eval "PID_${n//-/_}=$pid"
    shards=$(grep -l '^ddpnet-shard' /proc/$pid/task/*/comm | wc -l)
    [ "$shards" -eq $(( SHARDS - 1 )) ] ||
        fail "$n: $shards threads named ddpnet-shard*, want $(( SHARDS - 1 )) beside the daemon's own loop"
    say "$n: the daemon runs $th threads ($SHARDS shards: the loop and $shards ddpnet-shard*)"
done

# snap NODE TAG: what NODE's daemon and kernel count, as JSON in
# $T/NODE/TAG.json: per peer tx/rx bytes from `ddpnet status --json` and
# from `wg show ddp0 transfer`, the daemon's drop counters (from its
# Prometheus exposition), ddp0's statistics, the node's IP/UDP/TCP counters.
cat >"$T/snap.py" <<'PYEOF'
import json, subprocess, sys, urllib.request
ddpnet, rundir, mport, out = sys.argv[1:5]
names = dict(a.rsplit("=", 1) for a in sys.argv[5:])   # KEY=NAME (a key ends in =)
st = json.loads(subprocess.check_output([ddpnet, "status", "--run-dir", rundir, "--json"], timeout=10))
wg = subprocess.check_output(["wg", "show", "ddp0", "transfer"], timeout=10).decode()
met = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % mport, timeout=5).read().decode()
snap = {"status": {p["name"]: {"tx": p["tx_bytes"], "rx": p["rx_bytes"]} for p in st["peers"]},
        "wg": {}, "drops": {}, "ddp0": {}, "net": {}}
for line in wg.splitlines():
    key, rx, tx = line.split()
    snap["wg"][names.get(key, key)] = {"rx": int(rx), "tx": int(tx)}
for line in met.splitlines():
    if line.startswith("ddpnet_packets_dropped_total{"):
        reason = line.split('reason="', 1)[1].split('"', 1)[0]
        snap["drops"][reason] = int(float(line.rsplit(" ", 1)[1]))
if not snap["drops"]:
    sys.exit("no ddpnet_packets_dropped_total in the metrics: " + met[:500])
for k in ("tx_packets", "rx_packets", "tx_dropped", "rx_dropped", "tx_errors", "rx_errors"):
    snap["ddp0"][k] = int(open("/sys/class/net/ddp0/statistics/" + k).read())
for f in ("/proc/net/netstat", "/proc/net/snmp"):
    lines = open(f).read().splitlines()
    for hdr, val in zip(lines[0::2], lines[1::2]):
        sect, keys = hdr.split(":", 1)
        for k, v in zip(keys.split(), val.split(":", 1)[1].split()):
            snap["net"][sect + "." + k] = int(v)
json.dump(snap, open(out, "w"))
PYEOF
snap() {
    local n=$1 out
    out=$(nx "$n" "$PY" "$T/snap.py" "$DDPNET" "$T/$n/run" "$MPORT" "$T/$n/$2.json" \
              "$(pub node-a)=node-a" "$(pub node-b)=node-b" 2>&1) ||
        fail "$n: counters unreadable: $out"
}

# counters_ok PHASE [UDP-RESULT]: the counters of both nodes from
# $T/NODE/PHASE-0.json to -1.json, as in 3 above; with a UDP result, also
# against what the flows moved. Prints what it compared, FAIL: lines.
cat >"$T/counters.py" <<'PYEOF'
import json, sys
T, phase, slack, msg = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
udp = sys.argv[5] if len(sys.argv) > 5 else None
LOST_KEYS = ("Udp.SndbufErrors", "Udp.RcvbufErrors", "Udp.InErrors", "Ip.OutDiscards")
d = {}
for n in ("node-a", "node-b"):
    s0, s1 = [json.load(open("%s/%s/%s-%d.json" % (T, n, phase, i))) for i in (0, 1)]
    d[n] = {"status": {p: {k: s1["status"][p][k] - s0["status"][p][k] for k in ("tx", "rx")}
                       for p in s1["status"]},
            "drops": {r: v - s0["drops"].get(r, 0) for r, v in s1["drops"].items()},
            "ddp0": {k: v - s0["ddp0"][k] for k, v in s1["ddp0"].items()},
            "net": {k: s1["net"].get(k, 0) - s0["net"].get(k, 0) for k in LOST_KEYS},
            "end": s1}
bad = []
a, b = d["node-a"], d["node-b"]
for n in ("node-a", "node-b"):
    print("%s: %s: ddp0 %s; drops %s; kernel %s" % (phase, n, d[n]["ddp0"], d[n]["drops"], d[n]["net"]))
ab_tx, ab_rx = a["status"]["node-b"]["tx"], b["status"]["node-a"]["rx"]
ba_tx, ba_rx = b["status"]["node-a"]["tx"], a["status"]["node-b"]["rx"]
print("%s: a->b: a counted %d B sent, b %d B received; b->a: b sent %d B, a received %d B"
      % (phase, ab_tx, ab_rx, ba_tx, ba_rx))
# What the kernels refused between the two daemons (a full socket buffer):
# what the counters may differ by. Each refusal is one buffer: a GSO send
# or a GRO receive of up to 64 full-size messages (the uncapped bulk phase
# filled b's receive buffer in CI: 35 receives refused, 1540 messages).
# InErrors counts every RcvbufErrors again, and is taken only beyond it.
GRO_SEGS_MAX = 64
for what, x, y, snd, rcv in (("a->b", ab_tx, ab_rx, a, b), ("b->a", ba_tx, ba_rx, b, a)):
    lost = snd["net"]["Udp.SndbufErrors"] + max(rcv["net"]["Udp.RcvbufErrors"], rcv["net"]["Udp.InErrors"])
    if udp:
        lost = 0   # the daemons' sockets: whatever the flows moved must be there
    # Each side is read a moment apart: a message in between counts on one side only.
    if abs(x - y) > slack + lost * GRO_SEGS_MAX * 1500:
        bad.append("%s: the sender counted %d B, the receiver %d B (%d sends or receives refused by the kernels)"
                   % (what, x, y, lost))
for n in ("node-a", "node-b"):
    # Read at the same moment (up to a discovery message), the two views agree.
    for p, v in d[n]["end"]["status"].items():
        w = d[n]["end"]["wg"].get(p)
        if w is None:
            bad.append("%s: wg show ddp0 transfer has no row for %s" % (n, p))
        elif abs(w["tx"] - v["tx"]) > slack or abs(w["rx"] - v["rx"]) > slack:
            bad.append("%s: for %s, status says tx %d rx %d, wg show tx %d rx %d"
                       % (n, p, v["tx"], v["rx"], w["tx"], w["rx"]))
    # queue_delay: the daemon's own queue management (codel.h) gave up a
    # packet of a queue that stood at its socket, a signal to TCP, not a
    # fault of the data path; a loaded 2-vCPU machine starves 4 shards
    # now and then in the uncapped phase (8 of 370,000 in one run). The
    # UDP flows' own check still counts every datagram.
    moved = {r: v for r, v in d[n]["drops"].items() if v and r != "queue_delay"}
    if moved:
        bad.append("%s: drop counters moved: %s" % (n, moved))
    dd = d[n]["ddp0"]
    if dd["tx_dropped"] or dd["rx_dropped"] or dd["tx_errors"] or dd["rx_errors"]:
        bad.append("%s: ddp0 dropped or failed packets: %s" % (n, dd))
if udp:
    r = json.load(open(udp))
    n_msgs = sum(f["received"] for f in r["flows"])
    want = n_msgs * msg
    print("%s: the flows moved %d datagrams = %d B as transport messages; ddp0: a sent %d packets, b received %d"
          % (phase, n_msgs, want, a["ddp0"]["tx_packets"], b["ddp0"]["rx_packets"]))
    for what, got in (("a's tx_bytes to b", ab_tx), ("b's rx_bytes from a", ab_rx)):
        if not want <= got <= want + slack:
            bad.append("%s grew by %d B; the flows' messages are %d B (+ at most %d)" % (what, got, want, slack))
    # ddp0 also carries what the kernel sends on its own (IPv6 router
    # solicitations, MLD reports: a few packets, to no peer).
    for what, got in (("a's ddp0 sent", a["ddp0"]["tx_packets"]), ("b's ddp0 received", b["ddp0"]["rx_packets"])):
        if not n_msgs <= got <= n_msgs + 8:
            bad.append("%s %d packets; the flows %d" % (what, got, n_msgs))
for x in bad:
    print("FAIL: %s: %s" % (phase, x))
sys.exit(1 if bad else 0)
PYEOF
counters_ok() {
    "$PY" "$T/counters.py" "$T" "$1" "$SLACK" "$MSG" "${2:-}"
}

step "$FLOWS UDP flows a -> b: $COUNT datagrams of $SIZE B each, $RATE/s in all, bursts of $BURST"
# ddp0's queue holds every datagram of the run: TUN takes a packet off its
# socket's account once queued (no back-pressure) and drops it silently
# when its queue is full, so a daemon that a loaded machine leaves
# unscheduled for ~80 ms (500 packets) would lose the flows datagrams at
# the default length, before ddpnet ever saw them.
nx node-a ip link set dev ddp0 txqueuelen $(( FLOWS * COUNT + 1000 ))
snap node-a udp-0
snap node-b udp-0
nx_bg node-a wire-out "$PY" "$SEQFLOWS" wire eth0 "$E2E_PORT" "$MSG" out 90
nx_bg node-b wire-in "$PY" "$SEQFLOWS" wire eth0 "$E2E_PORT" "$MSG" in 90
nx_bg node-b seqrecv "$PY" "$SEQFLOWS" recv "$UPORT" "$FLOWS" "$SIZE" 60
rpid=$BG_PID
for f in node-b/seqrecv node-a/wire-out node-b/wire-in; do
    wait_for 10 grep -q ready "$T/$f.out" || fail "$f did not start: $(cat "$T/$f.out")"
done
nx node-a timeout 60 "$PY" "$SEQFLOWS" send 10.77.0.2 "$UPORT" "$FLOWS" "$COUNT" "$SIZE" "$RATE" "$BURST" \
    >"$T/send.json" 2>"$T/send.err" || fail "sender failed: $(cat "$T/send.err")"
say "sent: $(cat "$T/send.json")"
rc=0; wait "$rpid" || rc=$?
[ "$rc" -eq 0 ] || fail "receiver exited $rc: $(tail -n 5 "$T/node-b/seqrecv.out")"
grep '^{' "$T/node-b/seqrecv.out" >"$T/udp.json" || fail "no result from the receiver: $(cat "$T/node-b/seqrecv.out")"
sleep 1   # what is still in flight lands; then both sides are read
snap node-a udp-1
snap node-b udp-1
for f in node-a/wire-out node-b/wire-in; do
    kill -TERM "$(sed -n 's/^ready //p' "$T/$f.out")"
done
for f in node-a/wire-out node-b/wire-in; do
    wait_for 5 grep -q '^{' "$T/$f.out" || fail "$f gave no result: $(cat "$T/$f.out")"
    grep '^{' "$T/$f.out" >"$T/${f#*/}.json"
done
"$PY" - "$T" "$REORDER_MAX" <<'PYEOF' || FAILED+=("udp flows")
import json, sys
T, reorder_max = sys.argv[1], int(sys.argv[2])
r, s = json.load(open(T + "/udp.json")), json.load(open(T + "/send.json"))
out, inn = json.load(open(T + "/wire-out.json")), json.load(open(T + "/wire-in.json"))
bad = []
reordered = 0
for i, (f, sent) in enumerate(zip(r["flows"], s["sent"])):
    print("flow %d: sent %d, received %d, reordered %d%s, duplicates %d, missing %s, socket drops %d"
          % (i, sent, f["received"], f["reordered"],
             " (first: seq %d after %d)" % tuple(f["first_reorder"]) if f["reordered"] else "",
             f["duplicates"], f["missing"], f["socket_drops"]))
    reordered += f["reordered"]
    if f["duplicates"]:
        bad.append("flow %d: %d duplicates" % (i, f["duplicates"]))
    if f["received"] != sent or f["last"] != sent - 1:
        bad.append("flow %d: sent %d, received %d (last seen: %s; the receiving socket dropped %d)"
                   % (i, sent, f["received"], f["last"], f["socket_drops"]))
    if f["bad_size"]:
        bad.append("flow %d: %d datagrams of the wrong size" % (i, f["bad_size"]))
if r["foreign"]:
    bad.append("%d datagrams that belong to no flow" % r["foreign"])
total = sum(s["sent"])
print("end to end: %d of %d datagrams came after a later one of their flow (at most %d allowed)"
      % (reordered, total, reorder_max))
if reordered > reorder_max:
    bad.append("%d of %d datagrams came after a later one of their flow (at most %d allowed)"
               % (reordered, total, reorder_max))
print("a's eth0, sent: %d of the flows' messages seen, %d with a counter below one sent before by its shard%s"
      % (out["messages"], out["backwards"],
         " (first: %d after %d)" % tuple(out["first_backwards"]) if out["backwards"] else ""))
print("b's eth0, received: %d seen, %d with a counter below one received before"
      % (inn["messages"], inn["backwards"]))
if out["backwards"]:
    bad.append("a sealed out of order: %d of the flows' messages left with a counter below one sent before "
               "(first: %d after %d)" % (out["backwards"], out["first_backwards"][0], out["first_backwards"][1]))
if out["messages"] < min(1000, total // 10):
    bad.append("the capture on a's eth0 saw only %d of the flows' messages" % out["messages"])
for x in bad:
    print("FAIL: udp: " + x)
sys.exit(1 if bad else 0)
PYEOF
counters_ok udp "$T/udp.json" || FAILED+=("udp counters")

# tcp_phase TAG RATE: iperf3 -P FLOWS a -> b for TCP_SECS s (RATE per
# stream; 0: uncapped), then the checks of 4 on snapshots TAG-0 and TAG-1.
tcp_phase() {
    local tag=$1 rate=$2

    snap node-a $tag-0
    snap node-b $tag-0
    nx_bg node-b iperf3-server timeout $((TCP_SECS + 40)) iperf3 -s -1 -B 10.77.0.2 -p 5201
    spid=$BG_PID
    wait_for 10 e2e_listening node-b 5201 || fail "iperf3 server did not start: $(cat "$T/node-b/iperf3-server.out")"
    nx node-a timeout $((TCP_SECS + 30)) iperf3 -c 10.77.0.2 -p 5201 -P "$FLOWS" -t "$TCP_SECS" \
        -b "$rate" -J >"$T/iperf3.json" 2>&1 || fail "iperf3 failed: $(tail -n 20 "$T/iperf3.json")"
    wait "$spid" 2>/dev/null || true
    sleep 1
    snap node-a $tag-1
    snap node-b $tag-1
    "$PY" - "$T" "$FLOWS" "$TCP_REORDER_MAX" "$tag" <<'PYEOF' || FAILED+=("$tag streams")
import json, sys
T, flows, reorder_max, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
res = json.load(open(T + "/iperf3.json"))
def net(n):
    s0, s1 = [json.load(open("%s/%s/%s-%d.json" % (T, n, tag, i)))["net"] for i in (0, 1)]
    return {k: v - s0.get(k, 0) for k, v in s1.items()}
a, b = net("node-a"), net("node-b")
streams = [s["sender"]["bytes"] for s in res["end"]["streams"]]
print("iperf3: %d streams, %d B received (%.0f Mbit/s), %d retransmits; per stream: %s"
      % (len(streams), res["end"]["sum_received"]["bytes"], res["end"]["sum_received"]["bits_per_second"] / 1e6,
         res["end"]["sum_sent"].get("retransmits", 0), " ".join(map(str, streams))))
print("a's TCP: reordering seen by SACK %d, by timestamps %d, segments retransmitted %d; "
      "b's TCP: segments queued out of order %d"
      % (a.get("TcpExt.TCPSACKReorder", 0), a.get("TcpExt.TCPTSReorder", 0), a.get("Tcp.RetransSegs", 0),
         b.get("TcpExt.TCPOFOQueue", 0)))
bad = []
if len(streams) != flows or min(streams) <= 0:
    bad.append("want %d streams each moving data, got %s" % (flows, streams))
seen = a.get("TcpExt.TCPSACKReorder", 0) + a.get("TcpExt.TCPTSReorder", 0)
if seen > reorder_max:
    bad.append("a's TCP saw reordering %d times (at most %d allowed)" % (seen, reorder_max))
for x in bad:
    print("FAIL: %s: %s" % (tag, x))
sys.exit(1 if bad else 0)
PYEOF
    counters_ok "$tag" || FAILED+=("$tag counters")
}

step "iperf3 -P $FLOWS a -> b for $TCP_SECS s, $TCP_RATE per stream"
tcp_phase tcp "$TCP_RATE"

# shard_ticks PID: CPU ticks (user + system) of the daemon's threads
# named ddpnet-shard* (the shards beside its own loop).
shard_ticks() {
    local t sum=0
    for t in /proc/$1/task/*; do
        case "$(cat "$t/comm" 2>/dev/null)" in
        ddpnet-shard*) sum=$(( sum + $(awk '{print $14 + $15}' "$t/stat") )) ;;
        esac
    done
    echo "$sum"
}
step "iperf3 -P $FLOWS a -> b for $TCP_SECS s, uncapped: the flows spread over the shards"
shards_a0=$(shard_ticks "$PID_node_a") shards_b0=$(shard_ticks "$PID_node_b")
tcp_phase bulk 0
shards_a=$(( $(shard_ticks "$PID_node_a") - shards_a0 ))
shards_b=$(( $(shard_ticks "$PID_node_b") - shards_b0 ))
say "CPU ticks over the run of the shards beside each daemon's own loop: a $shards_a, b $shards_b"
# b's shards open what a's shards sealed (the hint): both must work.
[ "$shards_a" -gt 0 ] && [ "$shards_b" -gt 0 ] ||
    { printf 'FAIL: bulk: the shards did no work (ticks a %s, b %s)\n' "$shards_a" "$shards_b"; FAILED+=("bulk shards"); }

step "down: both daemons stop, with their shards"
for n in node-a node-b; do ddp_down "$n"; done

[ "${#FAILED[@]}" -eq 0 ] || fail "failed: ${FAILED[*]} (the FAIL: lines above say why)"
