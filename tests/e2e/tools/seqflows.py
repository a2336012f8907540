#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Sequence-numbered UDP flows for tests/e2e/multistream.sh: does the
tunnel keep each flow's order, and lose nothing, with several at once?

  seqflows.py recv PORT FLOWS SIZE TIMEOUT
      FLOWS sockets on PORT, PORT+1, ...; reads until every flow's last
      datagram came and 0.3 s passed without another (or TIMEOUT
      seconds), then prints one JSON object:
      per flow what came, in what order, and what the socket dropped.
      "ready" on stderr once every socket is bound.
  seqflows.py send DEST PORT FLOWS COUNT SIZE RATE [BURST]
      COUNT datagrams of SIZE bytes on each of FLOWS flows (one source
      socket each, to DEST:PORT+i), BURST back to back per flow in turn
      (so that consecutive datagrams of one flow are in different TUN
      reads, and so in different crypto jobs), paced to RATE datagrams
      per second in all; prints {"sent": [...], "secs": S, "enobufs": N}.
  seqflows.py wire IFACE PORT MSGLEN out|in TIMEOUT
      Until SIGTERM (or TIMEOUT seconds): the WireGuard transport
      messages of MSGLEN bytes that IFACE sends (out) or receives (in) to
      UDP PORT (every node's), in the order the device saw them; prints
      {"messages": N, "backwards": N, "first_backwards": [C, BEFORE]}:
      how many had a counter at or below one seen before (same receiver
      index). "ready PID" on stderr once capturing. A capture that falls
      behind misses messages; it never reorders them.

A datagram: magic, run id, flow, seq, flags (1: the flow's last), then
filler. Whatever comes with a bad magic, run id or flow is counted apart
("foreign"), never as a flow's. The sender never loses a datagram to its
own kernel: a full ddp0 queue (the daemon not reading, on a loaded
machine) makes the kernel drop the datagram with ENOBUFS, which
IP_RECVERR makes send() report, and the same datagram is sent again
("enobufs" counts the waits). So every datagram the receiver misses was
lost after ddp0 took it."""
import errno
import json
import os
import select
import socket
import struct
import sys
import time

HDR = struct.Struct("!IIIQI")
MAGIC = 0x5e9f10f5
SO_RXQ_OVFL = getattr(socket, "SO_RXQ_OVFL", 40)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
IP_RECVERR = getattr(socket, "IP_RECVERR", 11)


def recv(port, flows, size, timeout):
    socks = []
    for i in range(flows):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)
        except OSError:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
        s.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
        s.bind(("0.0.0.0", port + i))
        s.setblocking(False)
        socks.append(s)
    print("ready", file=sys.stderr, flush=True)
    st = [dict(received=0, next=0, highest=-1, reordered=0, duplicates=0, gaps=0,
               bad_size=0, last=None, socket_drops=0, first_reorder=None)
          for _ in range(flows)]
    seen = [set() for _ in range(flows)]
    foreign = 0
    run = None
    ended = 0
    poller = select.epoll()
    for i, s in enumerate(socks):
        poller.register(s.fileno(), select.EPOLLIN)
    byfd = {s.fileno(): i for i, s in enumerate(socks)}
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        events = poller.poll(0.3)
        if not events and ended == flows:
            break   # every flow's last came, and nothing after it for 0.3 s
        for fd, _ in events:
            i = byfd[fd]
            s = socks[i]
            while True:
                try:
                    data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(4))
                except BlockingIOError:
                    break
                for lvl, typ, val in anc:
                    if lvl == socket.SOL_SOCKET and typ == SO_RXQ_OVFL and len(val) >= 4:
                        st[i]["socket_drops"] = struct.unpack("=I", val[:4])[0]
                if len(data) < HDR.size:
                    foreign += 1
                    continue
                magic, rid, flow, seq, flags = HDR.unpack_from(data)
                if magic != MAGIC or flow != i or (run is not None and rid != run):
                    foreign += 1
                    continue
                run = rid
                f = st[i]
                if len(data) != size:
                    f["bad_size"] += 1
                if seq in seen[i]:
                    f["duplicates"] += 1
                    continue
                seen[i].add(seq)
                f["received"] += 1
                if seq < f["highest"]:
                    f["reordered"] += 1
                    if f["first_reorder"] is None:
                        f["first_reorder"] = [seq, f["highest"]]
                elif seq > f["highest"] + 1:
                    f["gaps"] += 1
                f["highest"] = max(f["highest"], seq)
                if flags & 1:
                    f["last"] = seq
                    ended += 1
    for i, f in enumerate(st):
        n = f["last"] + 1 if f["last"] is not None else f["highest"] + 1
        f["missing"] = n - f["received"] if f["last"] is not None else None
        del f["next"]
    print(json.dumps({"flows": st, "foreign": foreign, "complete": ended == flows}), flush=True)


def send(dest, port, flows, count, size, rate, burst):
    rid = int.from_bytes(os.urandom(4), "big")
    socks = []
    for i in range(flows):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 << 10)
        # Without IP_RECVERR a datagram the kernel drops for a full ddp0
        # queue (ENOBUFS) is "sent"; with it, send says so and we try again.
        s.setsockopt(socket.IPPROTO_IP, IP_RECVERR, 1)
        s.connect((dest, port + i))
        socks.append(s)
    filler = bytes((j * 7) & 0xff for j in range(size - HDR.size))
    seq = [0] * flows
    total = 0
    waits = 0
    t0 = time.monotonic()
    while total < flows * count:
        for i in range(flows):
            s = socks[i]
            for _ in range(burst):
                if seq[i] >= count:
                    break
                last = 1 if seq[i] == count - 1 else 0
                data = HDR.pack(MAGIC, rid, i, seq[i], last) + filler
                while True:
                    try:
                        s.send(data)
                        break
                    except OSError as e:
                        if e.errno != errno.ENOBUFS:
                            raise
                        waits += 1
                        time.sleep(0.001)
                seq[i] += 1
                total += 1
        ahead = t0 + total / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    print(json.dumps({"sent": seq, "secs": round(time.monotonic() - t0, 3), "enobufs": waits}),
          flush=True)


def wire(ifname, port, msglen, direction, timeout):
    """See the module's comment. A UDP GSO super-packet (ddpnet sends
    runs of equal messages as one) is read as the messages laid back to
    back in it."""
    import signal
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    # ETH_P_ALL: a socket for one protocol sees only what comes in.
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(3))
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
    except OSError:
        pass
    s.bind((ifname, 3))
    s.settimeout(0.2)
    want_type = socket.PACKET_OUTGOING if direction == "out" else socket.PACKET_HOST
    last, seen, backwards, first_back = {}, 0, 0, None
    print("ready %d" % os.getpid(), file=sys.stderr, flush=True)
    end = time.monotonic() + timeout
    while not stop and time.monotonic() < end:
        try:
            pkt, addr = s.recvfrom(1 << 17)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        if addr[1] != 0x0800 or addr[2] != want_type or len(pkt) < 28 or pkt[9] != 17:
            continue
        ihl = (pkt[0] & 0x0f) * 4
        sport, dport = struct.unpack_from("!HH", pkt, ihl)
        # To the peer's port: with several underlay flows (DDPNET_FLOWS)
        # a node sends from more source ports than its own.
        if dport != port:
            continue
        payload = memoryview(pkt)[ihl + 8:]
        if len(payload) % msglen:
            continue
        for off in range(0, len(payload), msglen):
            typ, idx, ctr = struct.unpack_from("<IIQ", payload, off)
            if typ & 0xff != 4:     # the shard bytes (1 to 3) aside
                continue
            # With shards each sealing shard (its sub-session, byte 2)
            # takes its counters in order; shards interleave on the wire.
            key = (idx, (typ >> 16) & 0xff)
            seen += 1
            if key in last and ctr <= last[key]:
                backwards += 1
                if first_back is None:
                    first_back = [ctr, last[key]]
            last[key] = max(ctr, last.get(key, 0))
    print(json.dumps({"messages": seen, "backwards": backwards, "first_backwards": first_back}),
          flush=True)


def main(argv):
    if len(argv) >= 5 and argv[0] == "recv":
        recv(int(argv[1]), int(argv[2]), int(argv[3]), float(argv[4]))
    elif len(argv) >= 7 and argv[0] == "send":
        send(argv[1], int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]),
             float(argv[6]), int(argv[7]) if len(argv) > 7 else 4)
    elif len(argv) >= 6 and argv[0] == "wire":
        wire(argv[1], int(argv[2]), int(argv[3]), argv[4], float(argv[5]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
