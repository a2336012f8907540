#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: lock deb
# The package as an operator meets it, under a real systemd: three Debian
# 12 machines booted with systemd as PID 1 (systemd-nspawn --boot), joined
# by a bridge, each with the .deb installed by `apt install
# ./ddpnet_*.deb`, its key and the cluster file; then, as typed by an
# operator (every command and its output go to the log, a transcript):
#
#   systemctl enable --now ddpnet@ddp0   active (running) through READY=1;
#                                        the mesh forms; ddpnet status, wg show
#   systemctl reload                     the edited file applied: a node added
#   journalctl -p warning                nothing a person must act on
#   systemctl restart; kill -9; reboot   the mesh and the hosts block back
#   systemctl stop                       ddp0, socket, state, hosts block gone
#   apt remove; apt purge                nothing left but what policy keeps
#
# The machines' root is made once by debootstrap (minbase, the packages
# below and the .deb's Depends) and cached in build/systemd-root/, named
# by a hash of the suite, mirror and package list: the first run costs a
# download (about a minute), later runs reuse it. Each machine runs on an
# overlay of it (its changes in the scratch directory), in a network
# namespace of this test's on the hub's bridge; nspawn is not registered
# with machined (the host's PID 1 need not be systemd) and is given
# CAP_NET_ADMIN, which a machine's root has (nspawn keeps it only for
# networks it makes itself).
#
#   hub: br0 -- boot-a 192.168.241.1, boot-b .2, boot-c .3 (ddp0 10.77.0.1-3)
#
# Environment: DEBIAN_MIRROR (default: this system's apt sources),
# BOOT_SUITE (bookworm).
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init systemd_boot systemd-nspawn debootstrap dpkg-deb sha256sum flock mount umount
. "$(dirname "$0")/boot_lib.sh"

NODES=(boot-a boot-b boot-c)
declare -A V4=([boot-a]=1 [boot-b]=2 [boot-c]=3)
# What every machine has besides the .deb's own Depends and Recommends:
# systemd as init, ip, ping, ps. Changing it (or the format below) makes a
# new root.
BASE_PKGS=(systemd systemd-sysv dbus iproute2 iputils-ping procps)
ROOT_FORMAT=1
t_start=$SECONDS

# machine_on_hub NODE: NODE's machine (boot_lib.sh) with its eth0 on the hub.
machine_on_hub() {
    local n=$1 ns=$E2E_PFX$1
    machine "$n"
    ip -n "${E2E_PFX}hub" link add "p-$n" type veth peer name eth0 netns "$ns"
    ip -n "${E2E_PFX}hub" link set "p-$n" master br0 up
    ip -n "$ns" addr add "$E2E_V4NET.${V4[$n]}/24" dev eth0
    ip -n "$ns" link set eth0 up
}
trap boot_exit EXIT

# --- checks ------------------------------------------------------------------------------

# hosts_block NODE NAME...: NODE's /etc/hosts has one ddpnet block for
# ddp0, naming exactly these nodes, and the installer's lines still
# (within 5 s: the daemon writes the file once a second at most).
hosts_block() {
    wait_for 5 hosts_block_now "$@" && return 0
    hosts_block_now "$@" || fail "$1: $HOSTS_WRONG: $(in_node "$1" cat /etc/hosts)"
}
hosts_block_now() {
    local n=$1 name want got
    shift
    got=$(in_node "$n" cat /etc/hosts)
    HOSTS_WRONG="/etc/hosts has not exactly one ddpnet block"
    [ "$(grep -c '^# BEGIN ddpnet ddp0 ' <<<"$got")" = 1 ] && [ "$(grep -c '^# END ddpnet ddp0$' <<<"$got")" = 1 ] ||
        return 1
    want=$(for name in "$@"; do printf '10.77.0.%s %s\n' "${V4[$name]}" "$name"; done | sort)
    HOSTS_WRONG="the hosts block is not $(echo $want)"
    [ "$(sed -n '/^# BEGIN ddpnet ddp0 /,/^# END ddpnet ddp0$/p' <<<"$got" | grep -v '^#' | sort)" = "$want" ] ||
        return 1
    HOSTS_WRONG="the installer's lines of /etc/hosts are gone"
    grep -qP "^127\.0\.1\.1\t$n$" <<<"$got"
}
no_hosts_block() {
    in_node "$1" grep -q 'ddpnet' /etc/hosts && fail "$1: /etc/hosts still has a ddpnet block: $(in_node "$1" cat /etc/hosts)"
    return 0
}
# active NODE: the unit active (running) with the daemon's status line:
# Type=notify, so systemd got READY=1.
active() {
    local n=$1 show
    show=$(in_node "$n" systemctl show ddpnet@ddp0 -p Type -p ActiveState -p SubState -p StatusText -p MainPID)
    grep -qx 'Type=notify' <<<"$show" && grep -qx 'ActiveState=active' <<<"$show" &&
        grep -qx 'SubState=running' <<<"$show" && grep -q '^StatusText=ddp0 up' <<<"$show" ||
        fail "$n: ddpnet@ddp0 is not active (running) with READY=1: $(echo $show)"
}
# mesh FROM TO...: FROM pings each TO by name through ddp0 (20 s each to
# come up).
mesh() {
    local from=$1 to
    shift
    for to in "$@"; do
        wait_for 20 in_node "$from" ping -c 1 -W 1 "$to" ||
            fail "$from cannot ping $to: $(in_node "$from" ddpnet status 2>&1)"
    done
    say "$from reaches $* by name over ddp0"
}
main_pid() { in_node "$1" systemctl show -p MainPID --value ddpnet@ddp0; }
# restarted NODE PID: active again, under another daemon than PID.
restarted() {
    [ "$(in_node "$1" systemctl is-active ddpnet@ddp0)" = active ] &&
        [ "$(main_pid "$1")" != "$2" ] && [ "$(main_pid "$1")" != 0 ]
}
# gone NODE: no ddp0, no control socket, no state file, no hosts block.
gone() {
    local n=$1 f
    in_node "$n" ip link show ddp0 >/dev/null 2>&1 && fail "$n: ddp0 is still there"
    for f in /run/wireguard/ddp0.sock /run/wireguard/ddp0.state /run/wireguard/ddp0.env; do
        in_node "$n" test -e "$f" && fail "$n: $f is still there"
    done
    no_hosts_block "$n"
}

# --- the run ---------------------------------------------------------------------------------

step "the package (make deb) and the machines' root"
boot_deb
make_root "$DEB"
t_root=$SECONDS

step "three machines on one bridge, booted with systemd as PID 1"
e2e_hub
for n in "${NODES[@]}"; do machine_on_hub "$n"; done
for n in "${NODES[@]}"; do boot "$n"; done
op_ok boot-a 'ps -p 1 -o pid=,comm=; systemctl is-system-running'
t_boot=$SECONDS

step "apt install ./ddpnet_*.deb, a key each"
declare -A PUB
for n in "${NODES[@]}"; do
    op_ok "$n" "apt install -y -q ./root/$(basename "$DEB") 2>&1 | grep -E '^(Setting up|E:|W:)'"
    op_ok "$n" '(umask 077; ddpnet genkey > /etc/ddpnet/ddp0.key); ddpnet pubkey < /etc/ddpnet/ddp0.key'
    PUB[$n]=$(out "$n")
    op_ok "$n" 'id ddpnet; ddpnet --version'
done

# cluster NODE...: the cluster file naming these nodes.
cluster() {
    local n
    printf '[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n'
    for n in "$@"; do
        printf '\n[node %s]\npublic-key = %s\naddress = 10.77.0.%s\nendpoint = %s.%s:51820\n' \
            "$n" "${PUB[$n]}" "${V4[$n]}" "$E2E_V4NET" "${V4[$n]}"
    done
}
# put NODE FILE: FILE's text as NODE's /etc/ddpnet/ddp0.conf, as typed.
put() {
    in_node "$1" sh -c 'umask 022; cat > /etc/ddpnet/ddp0.conf' <"$2"
    printf '%s# cat > /etc/ddpnet/ddp0.conf   (%s)\n' "$1" "$(grep -c '^\[node' "$2") nodes"
}
cluster boot-a boot-b >"$T/two.conf"
cluster boot-a boot-b boot-c >"$T/three.conf"

step "systemctl enable --now on boot-a and boot-b: active (running) through READY=1"
for n in boot-a boot-b; do
    put "$n" "$T/two.conf"
    op_ok "$n" 'ddpnet check -c /etc/ddpnet/ddp0.conf 2>/dev/null'
    op_ok "$n" 'systemctl enable --now ddpnet@ddp0'
    op_ok "$n" 'systemctl status ddpnet@ddp0 --no-pager -n 0'
    active "$n"
done
mesh boot-a boot-b
mesh boot-b boot-a
op_ok boot-a 'ping -c 2 -W 2 boot-b'
op_ok boot-a 'ddpnet status'
grep -Eq '^boot-b +10\.77\.0\.2 .* direct[ ,]' <<<"$(out boot-a)" || fail "boot-a: status shows no direct path to boot-b"
op_ok boot-a 'wg show ddp0'
grep -q "peer: ${PUB[boot-b]}" <<<"$(out boot-a)" || fail "boot-a: wg show names no peer boot-b"
grep -q 'latest handshake' <<<"$(out boot-a)" || fail "boot-a: wg show shows no handshake"
op_ok boot-a 'cat /etc/hosts'
hosts_block boot-a boot-a boot-b
hosts_block boot-b boot-a boot-b

step "systemctl reload after editing the file: boot-c added"
for n in boot-a boot-b; do
    put "$n" "$T/three.conf"
    op_ok "$n" 'systemctl reload ddpnet@ddp0'
    op_ok "$n" 'journalctl -u ddpnet@ddp0 -b --no-pager -q -n 3 -o cat'
    grep -q 'boot-c' <<<"$(out "$n")" || fail "$n: the reload's journal lines do not name boot-c"
    active "$n"
done
put boot-c "$T/three.conf"
op_ok boot-c 'systemctl enable --now ddpnet@ddp0'
active boot-c
mesh boot-a boot-c
mesh boot-c boot-a boot-b
for n in "${NODES[@]}"; do hosts_block "$n" "${NODES[@]}"; done
op_ok boot-c 'ddpnet status'

step "journalctl -p warning: nothing for a person to act on"
for n in "${NODES[@]}"; do
    op "$n" 'journalctl -u ddpnet@ddp0 -b -p warning --no-pager -q' || true
    [ -z "$(out "$n")" ] || fail "$n: warnings in the journal of a healthy start: $(out "$n")"
done

step "systemctl restart on boot-b"
pid=$(main_pid boot-b)
op_ok boot-b 'systemctl restart ddpnet@ddp0'
active boot-b
[ "$(main_pid boot-b)" != "$pid" ] || fail "boot-b: restart kept the same daemon"
mesh boot-a boot-b
mesh boot-b boot-a boot-c
hosts_block boot-b "${NODES[@]}"

step "kill -9 of boot-b's daemon: Restart= brings it back"
pid=$(main_pid boot-b)
op_ok boot-b "kill -9 $pid"
wait_for 30 restarted boot-b "$pid" ||
    fail "boot-b: no new daemon 30 s after kill -9: $(in_node boot-b systemctl status ddpnet@ddp0 --no-pager 2>&1)"
op_ok boot-b 'systemctl show ddpnet@ddp0 -p NRestarts -p Result -p ActiveState'
grep -qx 'NRestarts=1' <<<"$(out boot-b)" || fail "boot-b: systemd did not count one restart"
active boot-b
mesh boot-a boot-b
mesh boot-b boot-a boot-c
hosts_block boot-b "${NODES[@]}"
op_ok boot-b 'journalctl -u ddpnet@ddp0 -b --no-pager -q -o cat -n 8'

step "boot-c reboots: enabled, the node comes back with the machine"
op boot-c 'systemctl reboot' || true
pid=$(cat "$T/boot-c/nspawn.pid")
wait_for 60 sh -c "! kill -0 $pid 2>/dev/null" || fail "boot-c: did not shut down for the reboot"
rc=0; wait "$pid" || rc=$?
say "boot-c's systemd-nspawn exited $rc (133: reboot asked); booting it again"
: >"$T/boot-c/leader"
boot boot-c
op_ok boot-c 'systemctl is-enabled ddpnet@ddp0; systemctl is-active ddpnet@ddp0'
active boot-c
mesh boot-a boot-c
mesh boot-c boot-a boot-b
hosts_block boot-c "${NODES[@]}"

step "journalctl -p warning after restart, kill -9 and reboot"
# The daemon's own lines: none (its peers came back each time); systemd's
# two about the kill on boot-b, which a person should see.
for n in "${NODES[@]}"; do
    op "$n" 'journalctl -u ddpnet@ddp0 -b -p warning --no-pager -q -o short' || true
    grep -E ' ddpnet\[[0-9]+\]: ' "$T/$n/op.out" &&
        fail "$n: the daemon warned: $(grep -E ' ddpnet\[[0-9]+\]: ' "$T/$n/op.out")"
    grep -vE 'Main process exited, code=killed, status=9/KILL|Failed with result .signal.' \
        "$T/$n/op.out" | grep -q . && fail "$n: unexpected warnings: $(out "$n")"
done

step "systemctl stop on boot-a: ddp0, socket, state file and hosts block gone"
op_ok boot-a 'systemctl stop ddpnet@ddp0'
op_ok boot-a 'ip link show ddp0 2>&1; ls -A /run/wireguard; cat /etc/hosts'
gone boot-a
op boot-a 'systemctl is-active ddpnet@ddp0' || true
[ "$(out boot-a)" = inactive ] || fail "boot-a: stopped unit is '$(out boot-a)', not inactive"

step "apt remove on boot-b (its node running), then apt purge"
op_ok boot-b "apt remove -y -q ddpnet 2>&1 | grep -E '^(Removing|E:|W:)'"
gone boot-b
op_ok boot-b "dpkg-query -W -f='\${db:Status-Abbrev}\n' ddpnet; ls /usr/bin/ddpnet /lib/systemd/system/ddpnet@.service 2>&1; id ddpnet; ls -A /etc/ddpnet"
grep -q '^rc' <<<"$(out boot-b)" || fail "boot-b: after remove ddpnet is not in state rc (config-files)"
grep -q 'No such file' <<<"$(out boot-b)" || fail "boot-b: remove left the binary or the unit"
grep -q '^uid=.*(ddpnet)' <<<"$(out boot-b)" || fail "boot-b: remove took the ddpnet user (only purge may)"
op_ok boot-b "apt purge -y -q ddpnet 2>&1 | grep -E '^(Purging|E:|W:)|ddpnet'"
op boot-b 'id ddpnet; getent group ddpnet; dpkg-query -W ddpnet' || true
grep -q 'no such user' <<<"$(out boot-b)" || fail "boot-b: purge left the ddpnet user"
# What is left (the .deb this test put in /root aside): the operator's
# own files in /etc/ddpnet (dpkg keeps a
# directory that holds files it did not install) and nothing else.
op_ok boot-b "find / -xdev \\( -name '*ddpnet*' -o -name 'ddp0.*' \\) ! -path '/proc/*' ! -path '/root/*' | sort"
[ "$(out boot-b)" = "$(printf '/etc/ddpnet\n/etc/ddpnet/ddp0.conf\n/etc/ddpnet/ddp0.key')" ] ||
    fail "boot-b: purge left more than the operator's key and cluster file: $(out boot-b)"
in_node boot-c ping -c 1 -W 2 boot-a >/dev/null 2>&1 && fail "boot-c still reaches boot-a, whose node was stopped"
say "boot-c cannot reach the stopped boot-a, as it should not"

step "cost"
say "root: $ROOT_COST ($((t_root - t_start)) s with make deb); boot of 3 machines: $((t_boot - t_root)) s;" \
    "operator steps: $((SECONDS - t_boot)) s; total $((SECONDS - t_start)) s"
