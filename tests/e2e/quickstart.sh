#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README.md's "Quick start: two cloud machines", typed as written, on two
# namespaces playing gpu-a1 and gpu-b1 (hostnames too). Each command is
# first looked up in README.md, verbatim: a README that drifts from this
# walk fails it. Each node has its own /etc/ddpnet (bind-mounted in its
# mount namespace), /run/wireguard and /etc/hosts, as real machines do.
#
# As typed, except: `ddpnet` is bin/ddpnet (first in PATH), not the
# package's (installing it would change this machine); the endpoints are
# the namespaces' underlay addresses; ping is bounded (`-c 3`); torchrun
# runs one process per node (`--nproc_per_node 1`) and a small train.py
# (an all_reduce); there is no systemd here, so step 4 is the README's
# "Without systemd" line. Steps run in a login-like shell of umask 022;
# step 5 (train) as the unprivileged user nobody, as a training user is
# usually not root (QUICKSTART_TRAIN_USER=root runs it as root: to see
# the rest of the walk where `env` does not yet answer other users).
#
#   hub: br0 -- gpu-a1 192.168.241.1, gpu-b1 192.168.241.2 (ddp0 10.77.0.1-2)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init quickstart ping setpriv torchrun

QUICKSTART_TRAIN_USER=${QUICKSTART_TRAIN_USER:-nobody}
NODES=(gpu-a1 gpu-b1)
declare -A UNDERLAY=([gpu-a1]=$E2E_V4NET.1 [gpu-b1]=$E2E_V4NET.2)
declare -A README_IP=([gpu-a1]=203.0.113.10 [gpu-b1]=198.51.100.20)

# readme_has TEXT: README.md holds TEXT verbatim (this walk types it).
readme_has() { grep -qF -- "$1" README.md || fail "README.md no longer says: $1"; }
# typed NODE [USER] CMDS: CMDS in a shell on NODE (umask 022, ddpnet in
# PATH), as root or USER; stdout and stderr into $T/NODE/typed.out.
typed() {
    local n=$1 user=root cmds
    [ $# = 2 ] || { user=$2; shift; }
    cmds=$2
    if [ "$user" = root ]; then
        nx "$n" env PATH="$T/bin:$PATH" HOME=/root sh -ec "umask 022; $cmds" >"$T/$n/typed.out" 2>&1
    else
        nx "$n" setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups \
            env PATH="$T/bin:$PATH" HOME=/tmp sh -ec "umask 022; $cmds" >"$T/$n/typed.out" 2>&1
    fi
}
typed_ok() { typed "$@" || fail "$1: '${*: -1}' failed: $(cat "$T/$1/typed.out")"; }

step "two machines, each with its own /etc/ddpnet"
e2e_hub
e2e_node gpu-a1 1 -
e2e_node gpu-b1 2 -
mkdir -p "$T/bin" /etc/ddpnet   # /etc/ddpnet: a mount point, as the package makes it
ln -s "$DDPNET" "$T/bin/ddpnet"
chmod 711 "$T"
chmod 755 "$T/bin"
for n in "${NODES[@]}"; do
    mkdir -p "$T/$n/etc"
    chmod 755 "$T/$n" "$T/$n/etc"
    nx "$n" mount --bind "$T/$n/etc" /etc/ddpnet || fail "$n: cannot bind /etc/ddpnet"
    # The run directory as up makes it (0755), not the test's 0700: the
    # training user reaches the env socket in it.
    chmod 755 "$T/$n/run"
done

step "2. keys: the umask in a subshell leaves the shell's as it was"
readme_has '(umask 077; ddpnet genkey > /etc/ddpnet/ddp0.key)'
readme_has 'ddpnet pubkey < /etc/ddpnet/ddp0.key'
declare -A PUB
for n in "${NODES[@]}"; do
    typed_ok "$n" '(umask 077; ddpnet genkey > /etc/ddpnet/ddp0.key)
                   ddpnet pubkey < /etc/ddpnet/ddp0.key
                   echo "umask after: $(umask)"'
    PUB[$n]=$(head -n 1 "$T/$n/typed.out")
    [ "${#PUB[$n]}" = 44 ] || fail "$n: pubkey printed '${PUB[$n]}'"
    grep -qx 'umask after: 0022' "$T/$n/typed.out" || fail "$n: the shell's umask changed: $(cat "$T/$n/typed.out")"
    [ "$(stat -c %a "$T/$n/etc/ddp0.key")" = 600 ] || fail "$n: ddp0.key is not mode 600"
done
say "keys 0600, the shells' umask still 0022"

step "3. one cluster file, the same on every node; check says ok"
readme_has 'ddpnet check -c /etc/ddpnet/ddp0.conf'
# The README's file, its placeholders filled in.
conf=$(sed -n '/^   ```ini$/,/^   ```$/p' README.md | sed '1d;$d;s/^   //')
grep -q '^\[node gpu-b1\]$' <<<"$conf" || fail "no cluster file for gpu-a1 and gpu-b1 in README.md's step 3"
for n in "${NODES[@]}"; do
    conf=${conf//"<public key of $n>"/${PUB[$n]}}
    conf=${conf//"${README_IP[$n]}:"/"${UNDERLAY[$n]}:"}
done
for n in "${NODES[@]}"; do
    printf '%s\n' "$conf" >"$T/conf.typed"
    typed_ok "$n" "cat $T/conf.typed > /etc/ddpnet/ddp0.conf
                   ddpnet check -c /etc/ddpnet/ddp0.conf"
    # ok on stdout; on stderr, what only up can check on the node.
    [ "$(head -n 1 "$T/$n/typed.out")" = ok ] || fail "$n: check printed: $(cat "$T/$n/typed.out")"
    grep -q "only \`ddpnet up\` can" "$T/$n/typed.out" ||
        fail "$n: check did not say what it leaves to up: $(cat "$T/$n/typed.out")"
    [ "$(stat -c %a "$T/$n/etc/ddp0.conf")" = 644 ] || fail "$n: ddp0.conf is not 644"
done

step "4. up (without systemd), status, names, doctor"
readme_has 'ddpnet up -c /etc/ddpnet/ddp0.conf -k /etc/ddpnet/ddp0.key'
readme_has 'ddpnet status'
readme_has 'ping gpu-b1'
readme_has 'ddpnet doctor'
E2E_UP+=("${NODES[@]}")
for n in "${NODES[@]}"; do
    typed_ok "$n" 'ddpnet up -c /etc/ddpnet/ddp0.conf -k /etc/ddpnet/ddp0.key'
    cat "$T/$n/typed.out"
done
typed_ok gpu-a1 'ping -c 3 -W 5 gpu-b1'
typed_ok gpu-b1 'ping -c 3 -W 5 gpu-a1'
typed_ok gpu-a1 'ddpnet status'
cat "$T/gpu-a1/typed.out"
grep -Eq '^gpu-b1 +10\.77\.0\.2 ' "$T/gpu-a1/typed.out" || fail "status has no row for gpu-b1"
typed_ok gpu-a1 'ddpnet doctor'
cat "$T/gpu-a1/typed.out"
grep -qx 'ok: gpu-a1 reached every peer (1)' "$T/gpu-a1/typed.out" || fail "doctor did not say ok"

step "SIGHUP: the daemon's user reads the cluster file (the umask left it readable)"
pid=$(sed -n 's/^pid=//p' "$T/gpu-a1/run/ddp0.state")
kill -HUP "$pid"
log=$T/gpu-a1/run/ddp0.log   # no syslog in the namespace's /dev/log? then here
if [ -f "$log" ]; then
    wait_for 10 grep -q 'reload: no changes' "$log" ||
        fail "SIGHUP did not apply the file: $(tail -n 5 "$log")"
    say "SIGHUP read the file: $(grep -m1 'reload: no changes' "$log")"
else
    # Syslog took the lines: the file's mode and directory say the same.
    typed_ok gpu-a1 "setpriv --reuid=ddpnet --regid=ddpnet --clear-groups cat /etc/ddpnet/ddp0.conf >/dev/null"
    say "the daemon's user can read /etc/ddpnet/ddp0.conf"
fi

step "5. train, as $QUICKSTART_TRAIN_USER: eval \"\$(ddpnet env)\"; torchrun"
readme_has 'eval "$(ddpnet env)"'
readme_has '--rdzv_endpoint gpu-a1:29500 --redirects 1 --tee 1 train.py'
cat >"$T/train.py" <<'PYEOF'
import os
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
t = torch.full((4,), float(dist.get_rank() + 1))
dist.all_reduce(t)
print("trained rank=%d sum=%g iface=%s" % (dist.get_rank(), t[0].item(),
      os.environ.get("GLOO_SOCKET_IFNAME")), flush=True)
dist.destroy_process_group()
PYEOF
chmod 644 "$T/train.py"
pids=()
for n in "${NODES[@]}"; do
    ( typed "$n" "$QUICKSTART_TRAIN_USER" "cd $T && eval \"\$(ddpnet env)\" && export OMP_NUM_THREADS=1 &&
        timeout -k 10 120 torchrun --nnodes 2 --nproc_per_node 1 --rdzv_backend c10d \
            --rdzv_endpoint gpu-a1:29500 --redirects 1 --tee 1 train.py" ) &
    pids+=("$!")
done
i=0
for n in "${NODES[@]}"; do
    wait "${pids[i]}" ||
        fail "$n: the training step failed as $QUICKSTART_TRAIN_USER: $(tail -n 15 "$T/$n/typed.out")"
    grep -q 'trained rank=[01] sum=3 iface=ddp0' "$T/$n/typed.out" ||
        fail "$n: no all_reduce over ddp0: $(tail -n 15 "$T/$n/typed.out")"
    say "$n: $(grep -o 'trained rank=.*' "$T/$n/typed.out")"
    i=$((i + 1))
done

step "down"
readme_has '`ddpnet down` to stop'
for n in "${NODES[@]}"; do
    typed_ok "$n" 'ddpnet down'
    grep -q ddpnet "$T/$n/hosts" && fail "$n: hosts block left after down"
done
say "the quick start works as typed"
