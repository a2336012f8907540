#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad input on the UDP port: malformed, truncated and random datagrams get
# no reply and leave the tunnel working; authenticated transport packets
# that arrive twice (duplicated on the way) or again later (captured and
# replayed) are delivered once.
#
#   [node-a] eth0 192.168.241.1/24
#       |
#     a-eth (192.168.241.254)
#   [router] --- nftables: every datagram between a and b on port 51820 is
#     |     \    duplicated (dup to the same destination); a sniffer on
#     |      \   b-eth records a's transport packets to replay them later
#     b-eth   x-eth (192.168.243.254)
#  (192.168.242.254)   |
#     |              [node-x] eth0 192.168.243.9  sends the garbage
#   [node-b] eth0 192.168.242.2/24
#   overlay: node-a 10.77.0.1, node-b 10.77.0.2
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init bad_input ping nft
# One loop (DDPNET_SHARDS=1), whatever the cores: the default runs shards,
# and this script keeps the one-loop data path covered, where duplicates
# and replays meet the replay window of an open made inline.
export DDPNET_SHARDS=1

step "routed topology"
e2e_netns router
R=${E2E_PFX}router
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
for n in node-a node-b node-x; do e2e_node_alone "$n"; done
e2e_veth router a-eth node-a eth0
e2e_veth router b-eth node-b eth0
e2e_veth router x-eth node-x eth0
ip -n "$R" addr add 192.168.241.254/24 dev a-eth
ip -n "$R" addr add 192.168.242.254/24 dev b-eth
ip -n "$R" addr add 192.168.243.254/24 dev x-eth
A=192.168.241.1 B=192.168.242.2 X=192.168.243.9
nx node-a ip addr add "$A/24" dev eth0
nx node-b ip addr add "$B/24" dev eth0
nx node-x ip addr add "$X/24" dev eth0
nx node-a ip route add default via 192.168.241.254
nx node-b ip route add default via 192.168.242.254
nx node-x ip route add default via 192.168.243.254

ip netns exec "$R" nft -f - <<NFT
table ip e2e_dup {
    counter dup_ab {
    }
    counter dup_ba {
    }
    chain forward_dup {
        type filter hook forward priority 0; policy accept;
        ip saddr $A ip daddr $B udp dport $E2E_PORT counter name "dup_ab" dup to $B device "b-eth"
        ip saddr $B ip daddr $A udp dport $E2E_PORT counter name "dup_ba" dup to $A device "a-eth"
    }
}
NFT
# What reaches node-a's and node-b's UDP port, whatever the daemons make of it.
for n in node-a node-b; do
    nx "$n" nft -f - <<NFT
table inet e2e_in {
    counter seen {
    }
    chain in {
        type filter hook input priority 0; policy accept;
        udp dport $E2E_PORT counter name "seen"
    }
}
NFT
done
seen() {
    nx "$1" nft list counter inet e2e_in seen | sed -n 's/.*packets \([0-9]*\).*/\1/p'
}
dup_count() {
    ip netns exec "$R" nft list counter ip e2e_dup "$1" | sed -n 's/.*packets \([0-9]*\).*/\1/p'
}

step "two nodes up"
for n in node-a node-b; do e2e_key "$n"; done
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$A:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$B:$E2E_PORT"
ddp_up node-a
ddp_up node-b
ping_ok node-a 10.77.0.2
ping_ok node-b 10.77.0.1

step "duplicated datagrams are delivered once"
# Record a's transport packets to b as they leave the router, for the replay below.
cat >"$T/sniff.py" <<'PYEOF'
# Records, for SECONDS, the Ethernet frames on IFACE that carry a WireGuard
# transport message (type 4, longer than a keepalive) from SRC to DST.
import socket, struct, sys, time
iface, src, dst, port, secs, out = sys.argv[1:7]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))   # ETH_P_ALL: taps see outgoing frames only with it
s.bind((iface, 0))
s.settimeout(0.2)
frames, end = [], time.time() + float(secs)
while time.time() < end:
    try:
        f, meta = s.recvfrom(65535)
    except socket.timeout:
        continue
    if meta[2] == socket.PACKET_OUTGOING and len(f) > 42 and f[12:14] == b"\x08\x00" and f[23] == 17:
        ihl = (f[14] & 15) * 4
        ip_src, ip_dst = socket.inet_ntoa(f[26:30]), socket.inet_ntoa(f[30:34])
        dport = struct.unpack("!H", f[14 + ihl + 2:14 + ihl + 4])[0]
        payload = f[14 + ihl + 8:]
        if (ip_src, ip_dst, dport) == (src, dst, int(port)) and payload[:4] == b"\4\0\0\0" and len(payload) > 32:
            frames.append(f)
with open(out, "wb") as o:
    for f in frames:
        o.write(struct.pack("!H", len(f)) + f)
print(len(frames))
PYEOF
ip netns exec "$R" timeout 30 "$PY" "$T/sniff.py" b-eth "$A" "$B" "$E2E_PORT" 6 "$T/frames.bin" >"$T/sniff.out" 2>&1 &
SNIFF=$!
E2E_PIDS+=("$SNIFF")
sleep 0.5
dab0=$(dup_count dup_ab) dba0=$(dup_count dup_ba)
rxb0=$(rx_packets node-b) rxa0=$(rx_packets node-a) seenb0=$(seen node-b)
out=$(nx node-a ping -n -c 20 -i 0.1 -w 8 10.77.0.2 2>&1) || fail "ping through the duplicating router: $out"
seenb=$(( $(seen node-b) - seenb0 ))
[ "$seenb" -ge 40 ] || fail "node-b's port got $seenb datagrams for 20 duplicated echo requests (want >= 40)"
case "$out" in *DUP!*) fail "duplicate echoes were delivered: $out" ;; esac
case "$out" in *" 20 received"*) ;; *) fail "ping lost echoes: $out" ;; esac
rxb1=$(rx_packets node-b) rxa1=$(rx_packets node-a)
dab=$(( $(dup_count dup_ab) - dab0 )) dba=$(( $(dup_count dup_ba) - dba0 ))
say "router duplicated $dab datagrams a->b and $dba b->a; ddp0 rx: node-b +$((rxb1 - rxb0)), node-a +$((rxa1 - rxa0))"
[ "$dab" -ge 20 ] && [ "$dba" -ge 20 ] || fail "the router did not duplicate the traffic (a->b $dab, b->a $dba)"
[ "$((rxb1 - rxb0))" -eq 20 ] || fail "node-b delivered $((rxb1 - rxb0)) packets to ddp0 for 20 echo requests"
[ "$((rxa1 - rxa0))" -eq 20 ] || fail "node-a delivered $((rxa1 - rxa0)) packets to ddp0 for 20 echo replies"

step "captured transport packets replayed later are not delivered"
wait "$SNIFF" || fail "sniffer failed: $(cat "$T/sniff.out")"
nframes=$(tail -n 1 "$T/sniff.out")
[ "${nframes:-0}" -ge 20 ] || fail "captured only ${nframes:-0} transport frames from node-a"
cat >"$T/replay.py" <<'PYEOF'
# Sends the recorded frames out of IFACE again, as they were.
import socket, struct, sys
iface, path = sys.argv[1:3]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
data, i, n = open(path, "rb").read(), 0, 0
while i < len(data):
    (ln,) = struct.unpack("!H", data[i:i + 2])
    s.send(data[i + 2:i + 2 + ln]); i += 2 + ln; n += 1
print(n)
PYEOF
rxb0=$(rx_packets node-b) seenb0=$(seen node-b)
sent=$(ip netns exec "$R" timeout 10 "$PY" "$T/replay.py" b-eth "$T/frames.bin") || fail "replay failed: $sent"
sleep 1
rxb1=$(rx_packets node-b)
say "replayed $sent captured frames to node-b; ddp0 rx +$((rxb1 - rxb0))"
[ "$rxb1" -eq "$rxb0" ] || fail "node-b delivered $((rxb1 - rxb0)) replayed packets"
seenb=$(( $(seen node-b) - seenb0 ))
[ "$seenb" -ge "$sent" ] || fail "only $seenb of the $sent replayed frames reached node-b's port"
ping_ok node-a 10.77.0.2

step "malformed, truncated and random datagrams get no reply"
cat >"$T/garbage.py" <<'PYEOF'
# Sends malformed, truncated and random datagrams to HOST:PORT, and junk
# initiations whose mac1 is right (they pass the cheap check and fail at
# the decryption); then listens LISTEN seconds for anything that comes back.
import base64, hashlib, os, random, socket, struct, sys, time
host, port, pub_b64, listen = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
rng = random.Random(1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 0))
def hdr(t):
    return struct.pack("<I", t)
msgs = [b"", b"\1", b"\1\0", b"\1\0\0", hdr(1), hdr(2), hdr(3), hdr(4)]
for t, size in ((1, 148), (2, 92), (3, 64), (4, 32)):
    for ln in (size - 1, size + 1, size // 2, 16, 5):
        msgs.append(hdr(t) + os.urandom(max(0, ln - 4)))
    msgs.append(bytes([t, 1, 0, 0]) + os.urandom(size - 4))   # reserved bytes set
    msgs.append(hdr(t) + bytes(size - 4))                      # all zero
for t in (0, 5, 255, 0x01000000):
    msgs.append(hdr(t) + os.urandom(100))
for _ in range(40):                                            # transport, random index
    msgs.append(hdr(4) + os.urandom(rng.randrange(28, 1500)))
for _ in range(200):                                           # anything
    msgs.append(os.urandom(rng.randrange(1, 1500)))
msgs.append(os.urandom(65000))
for m in msgs:
    s.sendto(m, (host, port))
    time.sleep(0.002)
# A second later (no load), initiations with a valid mac1 and junk inside.
time.sleep(1.5)
key = hashlib.blake2s(b"mac1----" + base64.b64decode(pub_b64)).digest()
for _ in range(8):
    body = hdr(1) + os.urandom(4 + 32 + 48 + 28)
    m = body + hashlib.blake2s(body, key=key, digest_size=16).digest() + bytes(16)
    s.sendto(m, (host, port))
    time.sleep(0.2)
s.settimeout(listen)
try:
    data, src = s.recvfrom(65535)
    print("REPLY from %s: %d bytes: %s" % (src, len(data), data[:16].hex()))
    sys.exit(1)
except socket.timeout:
    print("sent %d datagrams, no reply" % (len(msgs) + 8))
PYEOF
for n in node-b node-a; do
    case $n in node-a) dst=$A ;; *) dst=$B ;; esac
    seen0=$(seen "$n")
    out=$(nx node-x timeout 30 "$PY" "$T/garbage.py" "$dst" "$E2E_PORT" "$(pub "$n")" 1.5 2>&1) ||
        fail "garbage to $n: $out"
    got=$(( $(seen "$n") - seen0 ))
    say "$n: $out; $got reached its port"
    [ "$got" -ge 280 ] || fail "only $got garbage datagrams reached $n's port"
done

step "the tunnel still works"
ping_ok node-a 10.77.0.2
ping_ok node-b 10.77.0.1
for n in node-a node-b; do
    e2e_no_daemon "$n" && fail "$n: the daemon is gone"
done
say "no reply to bad input; duplicates and replays delivered once; tunnel up"
