#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `ddpnet env` for the training user (issue 29): the README's training step,
# `eval "$(ddpnet env)"`, typed in a shell that is not root's -- the user
# nobody, in a node whose run directory is the default /run/wireguard --
# exports NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME and MASTER_ADDR; the env
# socket it asks answers that and nothing else (no private key to `get=1`,
# no `status` through it); and where env cannot answer, the eval fails
# with the reason and a `set -e` shell stops before the job would start.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init env_user setpriv getent
getent passwd nobody >/dev/null || skip "no user nobody"

# as_user NODE CMD...: CMD as nobody (no groups) in NODE's namespaces.
as_user() {
    local n=$1; shift
    nx "$n" setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
        --reset-env -- "$@"
}

step "two nodes up, with the default run directory (bind-mounted in each node)"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
e2e_key node-a
e2e_key node-b
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "$E2E_V4NET.2:$E2E_PORT"
chmod 644 "$T/cluster.conf"
# The run directory as a package leaves it (root's, 0755), not the test's 0700.
chmod 755 "$T/node-a/run" "$T/node-b/run"
ddp_up node-a
ddp_up node-b
ls -l "$T/node-a/run" | sed 's/^/    /'
mode=$(stat -c '%a %U' "$T/node-a/run/ddp0.env")
[ "$mode" = "666 root" ] || fail "the env socket is '$mode', not mode 666 owned by root"
mode=$(stat -c '%a' "$T/node-a/run/ddp0.sock")
[ "$mode" = 600 ] || fail "the control socket is mode $mode, not 600"

step "eval \"\$(ddpnet env)\" as nobody, as the README's training step types it"
out=$(as_user node-b bash -c 'set -e; [ "$(id -u)" != 0 ]; eval "$("$1" env)"
    echo "$NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME $MASTER_ADDR"' sh "$DDPNET" 2>&1) ||
    fail "env as nobody failed: $out"
say "as nobody: $out"
[ "$out" = "ddp0 ddp0 10.77.0.1" ] || fail "env as nobody exported '$out', not ddp0 ddp0 10.77.0.1"
out=$(as_user node-a "$DDPNET" env --master node-b 2>&1) || fail "env --master as nobody: $out"
grep -qx 'export MASTER_ADDR=10.77.0.2' <<<"$out" || fail "env --master node-b as nobody: '$out'"

step "the env socket answers only the env request"
# get=1 would carry the private key: refused, and the connection closed.
out=$(as_user node-a "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect("/run/wireguard/ddp0.env")
s.sendall(b"get=1\n\n")
got = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    got += b
sys.stdout.write(got.decode())
' 2>&1) || fail "asking the env socket for get=1 failed: $out"
say "get=1 on the env socket: $(tr '\n' ' ' <<<"$out")"
grep -q private_key <<<"$out" && fail "the env socket gave out the private key"
[ "$out" = "errno=-1" ] || fail "the env socket answered get=1 with '$out', not errno=-1"
# status still needs root: the control socket is root's alone.
if out=$(as_user node-a "$DDPNET" status 2>&1); then
    fail "status as nobody answered: $out"
fi
case "$out" in *"permission denied"*"run as root"*) say "status as nobody: $out" ;;
    *) fail "status as nobody said '$out', not permission denied" ;; esac

step "where env cannot answer, the eval fails with the reason and set -e stops"
for args in "-i ddp9" "--master nosuch" "--no-such-option"; do
    rc=0
    out=$(as_user node-a bash -c 'set -e; eval "$("$1" env $2)"; echo REACHED' sh \
        "$DDPNET" "$args" 2>&1) || rc=$?
    say "env $args: exit $rc: $out"
    [ "$rc" -ne 0 ] || fail "eval of env $args did not fail"
    case "$out" in *REACHED*) fail "the shell went on after env $args failed" ;; esac
    case "$args" in
    -i*)  want="ddp9 is not up (no env socket at /var/run/wireguard/ddp9.env)" ;;
    --m*) want="no node named 'nosuch' in the cluster" ;;
    *)    want="unknown option '--no-such-option'" ;;
    esac
    case "$out" in *"$want"*) ;; *) fail "env $args did not say '$want'" ;; esac
done
# Without set -e the shell goes on, but eval's status says it failed.
out=$(as_user node-a bash -c 'eval "$("$1" env -i ddp9)" && echo EXPORTED || echo "FAILED $?"' \
    sh "$DDPNET" 2>/dev/null)
[ "$out" = "FAILED 1" ] || fail "eval of a failing env returned '$out', not FAILED 1"

step "down removes the env socket; env then fails"
ddp_down node-a
[ ! -e "$T/node-a/run/ddp0.env" ] || fail "the env socket is left after down"
rc=0
out=$(as_user node-a bash -c 'set -e; eval "$("$1" env)"; echo REACHED' sh "$DDPNET" 2>&1) || rc=$?
[ "$rc" -ne 0 ] && [[ $out != *REACHED* ]] && [[ $out == *"ddp0 is not up"* ]] ||
    fail "env after down: exit $rc: $out"
say "after down: $out"
