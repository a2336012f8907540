#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the running daemon may do (issue 15): every thread of it (the event
# loops of its shards, the resolver's, io_uring's workers) runs as the
# system user `ddpnet` -- made by `up` when missing (node-b's up, in a
# private /etc without it, on any machine), with no shell and no home -- in
# its own group, without supplementary groups, with no capability in any
# set (the bounding set too) and no_new_privs, after a session has carried
# traffic (so that io_uring's workers have started); the daemon is not
# dumpable. Issue 27: the same for a daemon started with CAP_NET_ADMIN
# alone (not root): every thread without capabilities and with
# no_new_privs; and each node's DNS server is silent, so that a lookup
# begun at up (the machine's FQDN, a hostname endpoint) is still hanging
# when the threads are read, and ping goes through meanwhile. Also
# checked: `up` refuses a run directory others can write to and a key file
# another user owns.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init privileges ping getent awk setpriv mount ss
XU=65533      # node-c's user: not root, and no other process's

# silent_dns NODE: NODE's resolver asks 127.0.0.53, where a socket takes
# the queries and never answers (a DNS server down without a word); each
# try waits the longest glibc allows.
silent_dns() {
    local n=$1 rc=0
    printf 'nameserver 127.0.0.53\noptions timeout:30 attempts:1\n' >"$T/$n/resolv.conf"
    chmod 644 "$T/$n/resolv.conf"
    nx "$n" mount --bind "$T/$n/resolv.conf" /etc/resolv.conf
    nx_bg "$n" dns "$PY" -c 'import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.53", 53))
time.sleep(3600)'
    wait_for 5 nx "$n" sh -c "ss -uln | grep -q 127.0.0.53:53" || fail "$n: the silent DNS server did not start"
    nx "$n" timeout 2 getent hosts "$n" >/dev/null 2>&1 || rc=$?
    [ "$rc" = 124 ] || fail "$n: its hostname resolved or failed at once (rc $rc): the DNS server is not silent"
}

step "three nodes, node-a with four shards, node-c not root; silent DNS everywhere"
e2e_hub
e2e_node node-a 1 -
e2e_node node-b 2 -
e2e_node node-c 3 -
e2e_key node-a
e2e_key node-b
e2e_key node-c
cluster_begin "$T/cluster.conf"
cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "$E2E_V4NET.1:$E2E_PORT"
# A hostname only the silent server could answer: node-a and node-c ask,
# and hear nothing; node-b reaches them.
cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "node-b.silent.test:$E2E_PORT"
cluster_node "$T/cluster.conf" node-c "$(pub node-c)" 10.77.0.3 "$E2E_V4NET.3:$E2E_PORT"
silent_dns node-a
silent_dns node-b
silent_dns node-c

step "up refuses a run directory others can write to, and a key another user owns"
mkdir -p "$T/open-run"
chmod 777 "$T/open-run"
if out=$(nx node-a timeout 30 "$DDPNET" up -c "$T/cluster.conf" -k "$T/node-a/key" \
        --run-dir "$T/open-run" --hosts-file "$T/node-a/hosts" 2>&1); then
    fail "up accepted a run directory of mode 0777"
fi
case "$out" in *"let others write in it; run: chmod go-w"*) say "refused: $out" ;;
    *) fail "up with a 0777 run directory: '$out'" ;; esac
cp "$T/node-a/key" "$T/other-key"
chown 65534 "$T/other-key"
if out=$(nx node-a timeout 30 "$DDPNET" up -c "$T/cluster.conf" -k "$T/other-key" \
        --run-dir "$T/node-a/run" --hosts-file "$T/node-a/hosts" 2>&1); then
    fail "up accepted a key file owned by uid 65534"
fi
case "$out" in *"owned by uid 65534, not by root"*) say "refused: $out" ;;
    *) fail "up with a key owned by another user: '$out'" ;; esac
nx node-a ip link show dev ddp0 >/dev/null 2>&1 && fail "a refused up left ddp0 behind"

step "up, and traffic through the shards (node-b's endpoint a silent name at node-a)"
# Four shards, more than a 2-core machine's default: the three beside the
# daemon's loop (ddpnet-shard*) start after the privilege drop and must
# be born unprivileged too. The loop, 3 shards, the resolver's threads.
DDPNET_SHARDS=4 ddp_up node-a
# node-b gets its own /etc, a copy of the machine's without the user
# ddpnet (its mount namespace is private): its up must make the user
# there, so that making it is tested on every machine -- not only on one
# where no earlier up made it. (/etc/hosts is bound again on top.)
private_etc_without_ddpnet() {
    local n=$1 f
    cp -a /etc "$T/$n/etc"
    for f in passwd group shadow gshadow; do
        [ -f "$T/$n/etc/$f" ] || continue
        sed -i '/^ddpnet:/d' "$T/$n/etc/$f"
    done
    nx "$n" mount --bind "$T/$n/etc" /etc
    nx "$n" mount --bind "$T/$n/hosts" /etc/hosts
    ! nx "$n" getent passwd ddpnet >/dev/null || fail "$n: the private /etc still has the user ddpnet"
}
private_etc_without_ddpnet node-b
ddp_up node-b
ping_ok node-a 10.77.0.2
nx node-a ping -n -q -c 50 -i 0.01 -s 1200 10.77.0.2 >/dev/null || fail "ping with 1200-byte payloads failed"
getent passwd ddpnet >/dev/null || fail "no user ddpnet after up"
IFS=: read -r _ _ U G _ HOME_DIR SHELL_PATH <<<"$(getent passwd ddpnet)"
say "user ddpnet: uid $U, gid $G, home $HOME_DIR, shell $SHELL_PATH"
case "$SHELL_PATH" in */nologin|*/false) ;; *) fail "user ddpnet has a login shell: $SHELL_PATH" ;; esac
[ ! -e "$HOME_DIR" ] || fail "user ddpnet has a home directory: $HOME_DIR"
# Made by node-b's up in its private /etc: the same kind of user, with the
# uid the machine's has (the same free system id), so the checks below
# hold for both daemons.
out=$(nx node-b getent passwd ddpnet) || fail "node-b: its up did not make the user ddpnet in its /etc"
IFS=: read -r _ _ u_b g_b _ home_b shell_b <<<"$out"
case "$shell_b" in */nologin|*/false) ;; *) fail "node-b: up made ddpnet with a login shell: $out" ;; esac
[ ! -e "$home_b" ] || fail "node-b: up made ddpnet with a home directory: $out"
[ "$u_b:$g_b" = "$U:$G" ] || fail "node-b: up made ddpnet as $u_b:$g_b, the machine's is $U:$G: $out"
say "ok: node-b's up made the user ddpnet where it was missing: $out"

# check_threads NODE [MIN [UID GID]]: every task of NODE's daemon, as
# above; started by another user than root, it keeps that user (and its
# bounding set, which only root may empty).
check_threads() {
    local n=$1 min=${2:-1} U=${3:-$U} G=${4:-$G} pid="" p task tasks=0 st bad="" capre
    capre='Inh|Prm|Eff|Amb|Bnd'
    [ "$U" = "$DDPNET_UID" ] || capre='Inh|Prm|Eff|Amb'
    for p in $(ip netns pids "$E2E_PFX$n"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = ddpnet ] && pid=$p
    done
    [ -n "$pid" ] || fail "$n: no ddpnet process"
    for task in /proc/"$pid"/task/*; do
        st=$(cat "$task/status" 2>/dev/null) || continue
        tasks=$((tasks + 1))
        local name uid gid groups caps nnp
        name=$(echo "$st" | awk '/^Name:/ { print $2 }')
        uid=$(echo "$st" | awk '/^Uid:/ { print $2, $3, $4, $5 }')
        gid=$(echo "$st" | awk '/^Gid:/ { print $2, $3, $4, $5 }')
        groups=$(echo "$st" | awk '/^Groups:/ { $1 = ""; print }' | tr -d ' ')
        caps=$(echo "$st" | awk -v re="^Cap($capre):" '$0 ~ re && $2 !~ /^0+$/ { printf "%s%s ", $1, $2 }')
        nnp=$(echo "$st" | awk '/^NoNewPrivs:/ { print $2 }')
        [ "$uid" = "$U $U $U $U" ] || bad+=" $name(uid $uid)"
        [ "$gid" = "$G $G $G $G" ] || bad+=" $name(gid $gid)"
        [ -z "$groups" ] || bad+=" $name(groups $groups)"
        [ -z "$caps" ] || bad+=" $name($caps)"
        [ "$nnp" = 1 ] || bad+=" $name(NoNewPrivs $nnp)"
    done
    [ -z "$bad" ] || fail "$n: threads with more than they should have:$bad"
    [ "$tasks" -ge "$min" ] || fail "$n: $tasks threads, expected at least $min"
    say "ok: $n's daemon (pid $pid): $tasks threads, all uid/gid $U/$G, no groups, no capabilities ($capre), no_new_privs"
}
DDPNET_UID=$U
check_threads node-a 6
check_threads node-b 1
# The shards among them (the count above would pass without them).
for p in $(ip netns pids "${E2E_PFX}node-a"); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = ddpnet ] || continue
    shards=$(grep -l '^ddpnet-shard' /proc/"$p"/task/*/comm 2>/dev/null | wc -l)
    [ "$shards" -eq 3 ] || fail "node-a: $shards threads named ddpnet-shard*, want 3 (DDPNET_SHARDS=4)"
done

step "node-c started by uid $XU with CAP_NET_ADMIN alone (ambient), not root"
for f in key run hosts; do chown "$XU:$XU" "$T/node-c/$f"; done
cp "$T/cluster.conf" "$T/node-c/cluster.conf"
chown "$XU:$XU" "$T/node-c/cluster.conf"
chmod 711 "$T" "$T/node-c"
# /dev/net/tun as a distribution makes it (0666: CAP_NET_ADMIN is what
# guards it), where this host's is root's alone; in node-c's mounts only.
nx node-c sh -c 'mount -t tmpfs -o mode=755 tmpfs /dev/net && mknod -m 666 /dev/net/tun c 10 200' ||
    fail "node-c: cannot make /dev/net/tun of mode 0666 in its mount namespace"
E2E_UP+=(node-c)
if ! nx node-c setpriv --reuid "$XU" --regid "$XU" --clear-groups --inh-caps +net_admin \
        --ambient-caps +net_admin timeout 30 "$DDPNET" up -c "$T/node-c/cluster.conf" \
        -k "$T/node-c/key" --run-dir "$T/node-c/run" --hosts-file "$T/node-c/hosts" \
        >"$T/node-c/up.log" 2>&1; then
    fail "node-c: up with CAP_NET_ADMIN alone failed: $(cat "$T/node-c/up.log")"
fi
# Through a session, so that its io_uring workers have started; node-b
# (a silent hostname in node-c's file) is reached by node-b's own start.
ping_ok node-c 10.77.0.1
ping_ok node-b 10.77.0.3
nx node-c ping -n -q -c 50 -i 0.01 -s 1200 10.77.0.1 >/dev/null || fail "node-c: ping with 1200-byte payloads failed"
check_threads node-c 2 "$XU" "$XU"
check_threads node-a 6

step "a reload at node-a names node-c by a silent hostname: ping node-a -> node-c goes on"
# node-a's loop asks its resolver and does not wait: node-c keeps the
# endpoint it has until the name answers (never, here).
sed -i "s|$E2E_V4NET.3:$E2E_PORT|node-c.silent.test:$E2E_PORT|" "$T/cluster.conf"
grep -q "node-c.silent.test" "$T/cluster.conf" || fail "node-c's endpoint was not renamed"
nx_bg node-a pinger ping -n -i 0.05 -c 80 -W 1 10.77.0.3
PING_PID=$BG_PID
sleep 0.5
t0=$(date +%s%N)
nx node-a timeout 20 "$DDPNET" reload --run-dir "$T/node-a/run" >"$T/node-a/reload.out" 2>&1 ||
    fail "node-a: reload failed: $(cat "$T/node-a/reload.out")"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
grep -qx "changed node-c: endpoint" "$T/node-a/reload.out" ||
    fail "node-a: reload did not change node-c's endpoint: $(tr '\n' ';' <"$T/node-a/reload.out")"
wait "$PING_PID" || true
got=$(awk '/packets transmitted/ { print $4 }' "$T/node-a/pinger.out")
say "reload naming a silent host took $ms ms; ping during it: ${got:-0}/80 answered"
[ "$ms" -lt 5000 ] || fail "node-a: a reload naming a silent host took $ms ms"
[ "${got:-0}" -ge 72 ] || fail "node-a: only ${got:-0}/80 pings answered across the reload: $(tail -3 "$T/node-a/pinger.out")"
# check_not_dumpable NODE: its daemon is not dumpable (no core with keys
# in it, and no other process of the user ddpnet may read its memory):
# /proc/PID's files are root's although the daemon runs as ddpnet, and, as ddpnet,
# reading its environ is refused -- while the same read of a dumpable
# process of ddpnet's (the control) succeeds.
check_not_dumpable() {
    local n=$1 pid="" p owner ctl
    for p in $(ip netns pids "$E2E_PFX$n"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = ddpnet ] && pid=$p
    done
    [ -n "$pid" ] || fail "$n: no ddpnet process"
    # (/proc/PID itself always shows the euid; the files in it show root
    # for a task that is not dumpable.)
    owner=$(stat -c %u "/proc/$pid/environ")
    [ "$owner" = 0 ] || fail "$n: /proc/$pid/environ belongs to uid $owner, not root: the daemon is dumpable"
    as_ddpnet() { setpriv --reuid="$U" --regid="$G" --clear-groups -- "$@"; }
    if as_ddpnet cat "/proc/$pid/environ" >/dev/null 2>&1; then
        fail "$n: the user ddpnet can read its daemon's environ: it is dumpable"
    fi
    # (setpriv itself, not the function: $! is then the process that
    # becomes sleep, not a shell around it.)
    setpriv --reuid="$U" --regid="$G" --clear-groups -- sleep 30 &
    ctl=$!
    E2E_PIDS+=("$ctl")
    owned_by_ddpnet() { [ "$(stat -c %u "/proc/$1/environ" 2>/dev/null)" = "$U" ]; }
    wait_for 5 owned_by_ddpnet "$ctl" ||
        fail "control: a process of ddpnet's is not owned by it in /proc"
    as_ddpnet cat "/proc/$ctl/environ" >/dev/null 2>&1 ||
        fail "control: the user ddpnet cannot read its own dumpable process's environ, so the check above proves nothing"
    kill "$ctl"
    wait "$ctl" 2>/dev/null || true
    say "ok: $n's daemon (pid $pid) is not dumpable: /proc/$pid/environ is root's and unreadable as ddpnet (a dumpable ddpnet process's is its own, and readable)"
}
check_not_dumpable node-a
check_not_dumpable node-b
