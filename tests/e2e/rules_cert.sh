#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Groups carried by certificates (issue 61): train is in the file (groups
# = train); spot is not: it joins with a certificate signed through a join
# token that gives the group spot (`authority token --groups spot`), the
# file's rules
#     allow spot -> train tcp 29400-29600
#     allow any -> any icmp
#  1. the token holder asking for train too is refused by sign;
#  2. spot (its certificate's group spot) reaches train's training port
#     (29500: an exchange, so train's receiver knows spot's group too) and
#     not its ssh (22): refused at once by its own daemon (ICMP
#     administratively prohibited);
#  3. the same node signed with no group (a token without groups) is
#     refused the training port too: the group came from the certificate.
#
#                    namespace "hub": bridge br0
#      +--------------+
#    train .1       spot .2                           192.168.241.0/24
#    10.77.0.1      derived from its key (ddp0)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init rules_cert ping ss

step "an authority, a token giving spot; train in the file, spot by certificate"
e2e_hub
i=0
for n in train spot; do
    i=$((i + 1))
    e2e_node "$n" "$i" -
    e2e_key "$n"
done
mkdir -p "$T/authority"
"$DDPNET" authority init -o "$T/authority/authority.key" >/dev/null 2>&1 ||
    fail "ddpnet authority init failed"
AUTH=$("$DDPNET" authority pubkey -a "$T/authority/authority.key")
C=$T/cluster.conf
cluster_begin "$C" "authority = $AUTH"
cluster_node "$C" train "$(pub train)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
printf 'groups = train\n\n[rules]\nallow spot -> train tcp 29400-29600\nallow any -> any icmp\n' >>"$C"
"$DDPNET" check -c "$C" >"$T/check.out" 2>&1 || fail "check: $(cat "$T/check.out")"
(umask 077
 "$DDPNET" authority token -a "$T/authority/authority.key" --name-prefix spot- --groups spot \
     --valid 1h >"$T/token" || fail "ddpnet authority token --groups spot failed"
 "$DDPNET" authority token -a "$T/authority/authority.key" --name-prefix spot- \
     --valid 1h >"$T/token-none" || fail "ddpnet authority token (no groups) failed")
if out=$("$DDPNET" authority sign --token "$T/token" --name spot-1 --public-key "$(pub spot)" \
    --groups spot,train 2>&1); then
    fail "the token's holder got train too: $out"
fi
say "asking the token for more: $out"
"$DDPNET" authority sign --token "$T/token" --name spot-1 --public-key "$(pub spot)" \
    >"$T/spot/key.cert" || fail "ddpnet authority sign --token failed"
"$DDPNET" authority show "$T/spot/key.cert" | grep -qx 'groups: *spot' ||
    fail "spot's certificate: $("$DDPNET" authority show "$T/spot/key.cert")"

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
else:                                      # connect ADDR PORT TIMEOUT
    t0 = time.monotonic()
    try:
        s = socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=float(sys.argv[4]))
        s.sendall(b"hi\n"); print("answered" if s.recv(16) == b"hi\n" else "no answer")
    except OSError as e:
        print(type(e).__name__, e.strerror or e, "after %d ms" % ((time.monotonic() - t0) * 1000))
        sys.exit(1)
EOF
connect() { nx "$1" "$PY" "$T/echo.py" connect "$2" "$3" "$4" 2>&1 || true; }

step "up: spot is a member by its certificate, in group spot"
for n in train spot; do ddp_up "$n" "$C"; done
nx_bg train echo "$PY" "$T/echo.py" serve 22 29500
wait_for 10 e2e_listening train 29500 || fail "echo server on train did not start"
ping_ok spot 10.77.0.1

step "spot reaches the training port, not ssh"
out=$(connect spot 10.77.0.1 29500 5)
[ "$out" = answered ] || fail "spot -> train:29500: $out"
say "spot (certificate groups spot) -> train:29500: $out"
out=$(connect spot 10.77.0.1 22 5)
case "$out" in *"No route to host"*) ;; *) fail "spot -> train:22 not refused: $out" ;; esac
say "spot -> train:22: $out"
say "spot status: $(ddp_status spot | grep '^rules:')"

step "the same key with a certificate of no group: no training port either"
ddp_down spot
"$DDPNET" authority sign --token "$T/token-none" --name spot-1 --public-key "$(pub spot)" \
    >"$T/spot/key.cert" || fail "ddpnet authority sign --token (no groups) failed"
ddp_up spot "$C"
ping_ok spot 10.77.0.1
out=$(connect spot 10.77.0.1 29500 5)
case "$out" in *"No route to host"*) ;; *) fail "spot without groups -> train:29500 not refused: $out" ;; esac
say "spot (no group) -> train:29500: $out"
say "PASS"
