#!/usr/bin/env bash
# What the running daemon may do (issue 15): every thread of it (the event
# loop, the crypto workers, the resolver's, io_uring's workers) runs as the
# system user `ddpnet` -- made by `up` when missing, with no shell and no
# home -- in its own group, without supplementary groups, with no
# capability in any set (the bounding set too) and no_new_privs, after a
# session has carried traffic (so that the workers have all started).
# Issue 27: the same for a daemon started with CAP_NET_ADMIN alone (not
# root): every thread without capabilities and with no_new_privs; and each
# node's DNS server is silent, so that a lookup begun at up (the machine's
# FQDN, a hostname endpoint) is still hanging when the threads are read,
# and ping goes through meanwhile. Also checked: `up` refuses a run
# directory others can write to and a key file another user owns.
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

step "three nodes, node-a with two crypto workers, node-c not root; silent DNS everywhere"
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

step "up, and traffic through the workers (node-b's endpoint a silent name at node-a)"
DDPNET_CRYPTO_THREADS=2 ddp_up node-a
ddp_up node-b
ping_ok node-a 10.77.0.2
nx node-a ping -n -q -c 50 -i 0.01 -s 1200 10.77.0.2 >/dev/null || fail "ping with 1200-byte payloads failed"
getent passwd ddpnet >/dev/null || fail "no user ddpnet after up"
IFS=: read -r _ _ U G _ HOME_DIR SHELL_PATH <<<"$(getent passwd ddpnet)"
say "user ddpnet: uid $U, gid $G, home $HOME_DIR, shell $SHELL_PATH"
case "$SHELL_PATH" in */nologin|*/false) ;; *) fail "user ddpnet has a login shell: $SHELL_PATH" ;; esac
[ ! -e "$HOME_DIR" ] || fail "user ddpnet has a home directory: $HOME_DIR"

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
check_threads node-a 3
check_threads node-b 1

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
check_threads node-a 3

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
