# SPDX-License-Identifier: MIT
# Booted Debian machines for the end-to-end tests (sourced after lib.sh,
# not run): systemd as PID 1 under `systemd-nspawn --boot`, each on an
# overlay of one Debian root that debootstrap makes once, each in a
# network namespace of the test's; commands run inside through nsenter,
# shown as an operator's transcript. tests/e2e/systemd_boot.sh and
# tests/e2e/slurm.sh use it.
#
# The caller sets, before make_root: BASE_PKGS (what every machine has
# besides the .deb's Depends and Recommends), ROOT_FORMAT (a number to
# change when the root is made otherwise) and ROOT_KIND (the cache's name
# for this kind of root, default the suite: each kind keeps one root);
# before the EXIT trap runs: NODES (the machines, for the clean-up and the
# logs shown on failure).
#
# The root is cached in build/systemd-root/KIND-HASH, HASH of the suite,
# mirror and package list: the first run costs a download, later runs
# reuse it. Each machine runs on an overlay of it (its changes in the
# scratch directory); nspawn is not registered with machined (the host's
# PID 1 need not be systemd) and is given CAP_NET_ADMIN, which a
# machine's root has (nspawn keeps it only for networks it makes itself).
#
# Environment: DEBIAN_MIRROR (default: this system's apt sources),
# BOOT_SUITE (bookworm).

SUITE=${BOOT_SUITE:-bookworm}
CACHE=$E2E_ROOT/build/systemd-root
NODES=()

# --- the transcript ------------------------------------------------------------------

# in_node NODE CMD...: CMD inside NODE's every namespace, with a clean
# login-like environment (no pager, no colours).
in_node() {
    local n=$1; shift
    nsenter -t "$(cat "$T/$n/leader")" -a -- /usr/bin/env -i \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 TERM=dumb SYSTEMD_PAGER= SYSTEMD_COLORS=0 \
        DEBIAN_FRONTEND=noninteractive "$@"
}
# op NODE 'COMMANDS': typed at NODE's root prompt (bash, pipefail: a
# failed command is not hidden by a grep after it): shown with its output
# (also in $T/NODE/op.out); returns its status.
op() {
    local n=$1 rc=0
    printf '%s# %s\n' "$n" "$2"
    in_node "$n" bash -o pipefail -c "$2" >"$T/$n/op.out" 2>&1 </dev/null || rc=$?
    sed 's/^/    /' "$T/$n/op.out"
    [ "$rc" = 0 ] || printf '    (exit %s)\n' "$rc"
    return "$rc"
}
op_ok() { op "$@" || fail "$1: '$2' failed"; }
# out NODE: what the last op printed there.
out() { cat "$T/$1/op.out"; }

# --- the package and the root, cached ------------------------------------------------

# The root, made once and cached by dist/debroot.sh (which `make image`
# shares): one of each kind in the cache. (It reads the Debian archive
# from DEBIAN_MIRROR, else this system's: bench/fetch_deb.sh.)
. "$(dirname "${BASH_SOURCE[0]}")/../../dist/debroot.sh"

# boot_deb: `make deb`; sets DEB, the package's path.
boot_deb() {
    make -C "$E2E_ROOT" --no-print-directory deb >"$T/deb.out" 2>&1 || fail "make deb: $(tail -n 5 "$T/deb.out")"
    DEB=$E2E_ROOT/$(sed -n 's/^built //p' "$T/deb.out")
    [ -f "$DEB" ] || fail "make deb built no package: $(cat "$T/deb.out")"
    say "package: ${DEB#"$E2E_ROOT"/}"
}

# make_root DEB: sets ROOT, the cached tree for BASE_PKGS and the .deb's
# Depends and Recommends, made by debootstrap if there is none (and older
# ones of its kind removed); ROOT_COST says which.
make_root() {
    local rc=0
    say "root: minbase $SUITE with $(echo "${BASE_PKGS[@]}" $(debroot_needs "$1" Depends Recommends))"
    DEBROOT_KIND=${ROOT_KIND:-$SUITE} debroot_make "$CACHE" "$SUITE" "$ROOT_FORMAT" \
        "${BASE_PKGS[@]}" $(debroot_needs "$1" Depends Recommends) || rc=$?
    case $rc in
    0) ROOT=$DEBROOT ROOT_COST=$DEBROOT_COST
       say "root: $ROOT ($ROOT_COST)" ;;
    2) skip "$DEBROOT_WHY" ;;
    *) fail "$DEBROOT_WHY" ;;
    esac
}

# --- machines --------------------------------------------------------------------------

MOUNTS=()
CGROUPS=()
# 1 where the kernel has time namespaces (Linux 5.6): see boot_start.
BOOT_TIMENS=0
unshare --time true 2>/dev/null && BOOT_TIMENS=1
BOOTED=0   # machines booted so far
# machine NODE: its root (an overlay of ROOT), as Debian's installer would
# leave it (hostname, /etc/hosts, a machine id of its own), the .deb in
# /root, and its network namespace (no link yet: the caller wires eth0).
machine() {
    local n=$1 r=$T/$1/root
    # (lib.sh's umask is 077: the overlay's top would make / 0700, and
    # the machine's daemons that are not root could reach nothing.)
    mkdir -p "$T/$n/upper" "$T/$n/work" "$r"
    chmod 755 "$T/$n/upper" "$r"
    if mount -t overlay overlay -o "lowerdir=$ROOT,upperdir=$T/$n/upper,workdir=$T/$n/work" "$r" 2>/dev/null; then
        MOUNTS+=("$r")
    else
        cp -a --reflink=auto "$ROOT/." "$r/"   # no overlayfs here: a copy
    fi
    echo "$n" >"$r/etc/hostname"
    printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
        "$n" >"$r/etc/hosts"
    tr -d '-' </proc/sys/kernel/random/uuid >"$r/etc/machine-id"
    chmod 644 "$r/etc/hostname" "$r/etc/hosts"
    chmod 444 "$r/etc/machine-id"
    cp "$DEB" "$r/root/"
    e2e_netns "$n"
}

# cgroups NODE: NODE's own cgroup in each hierarchy systemd uses (the
# named v1 one and the unified one, or the one v2 tree), made and
# printed. nspawn --keep-unit runs the machine in its caller's cgroup:
# without one each, the machines' systemds would share one tree (their
# units' cgroups the same directories) and kill or count each other's
# processes.
cgroups() {
    local h d
    if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
        set -- /sys/fs/cgroup
    else
        set -- /sys/fs/cgroup/systemd /sys/fs/cgroup/unified
    fi
    for h; do
        [ -w "$h/cgroup.procs" ] || continue
        d=$h/${E2E_PFX}$n
        mkdir -p "$d" && echo "$d"
    done
}

# boot_start NODE: systemd-nspawn --boot on its root and network
# namespace, in cgroups of its own; returns once its systemd runs. Where
# the kernel has time namespaces, the machine's uptime counts from its
# boot, as a new machine's does (Slurm takes a cloud node's registration
# for the boot it asked for only if the node booted after it asked).
boot_start() {
    local n=$1 pid i timens=()
    cgroups "$n" >"$T/$n/cgroups"
    CGROUPS+=($(cat "$T/$n/cgroups"))
    [ "$BOOT_TIMENS" = 0 ] ||
        timens=(unshare --time --boottime "-$(cut -d. -f1 /proc/uptime)")
    sh -c 'for d in $(cat "$1"); do echo $$ >"$d/cgroup.procs"; done; shift; exec "$@"' \
        cgroups "$T/$n/cgroups" "${timens[@]}" \
        systemd-nspawn -q --register=no --keep-unit -D "$T/$n/root" -M "$n" --boot \
        --network-namespace-path="/run/netns/$E2E_PFX$n" --capability=CAP_NET_ADMIN \
        --bind=/dev/net/tun --console=passive >>"$T/$n/console.log" 2>&1 </dev/null &
    pid=$!
    E2E_PIDS+=("$pid")
    echo "$pid" >"$T/$n/nspawn.pid"
    for i in $(seq 100); do
        pgrep -P "$pid" -x systemd >"$T/$n/leader" 2>/dev/null && break
        if ! kill -0 "$pid" 2>/dev/null; then
            # The first machine: nspawn itself cannot run on this host
            # (no cgroup hierarchy it knows, no namespaces): the tool cannot
            # be had here. Later ones: a failure.
            [ "$BOOTED" = 0 ] && skip "systemd-nspawn cannot boot a container here: $(tail -n 1 "$T/$n/console.log")"
            fail "$n: systemd-nspawn exited: $(tail -n 5 "$T/$n/console.log")"
        fi
        sleep 0.1
    done
    [ -s "$T/$n/leader" ] || fail "$n: no systemd inside systemd-nspawn after 10 s"
}

# boot_wait NODE: returns once NODE's systemd says the boot is done
# (running; anything else fails, with the units that failed).
boot_wait() {
    local n=$1 i state
    # Until its bus is there, systemctl cannot even ask.
    for i in $(seq 300); do
        state=$(timeout 90 nsenter -t "$(cat "$T/$n/leader")" -a systemctl is-system-running --wait 2>&1) || true
        case $state in *'Failed to connect to bus'*) sleep 0.1 ;; *) break ;; esac
    done
    case $state in
    running) BOOTED=$((BOOTED + 1)) ;;
    *) in_node "$n" systemctl --failed --no-pager >&2 || true
       fail "$n: the boot ended '$state', not running" ;;
    esac
}

# boot NODE: started and booted.
boot() { boot_start "$1"; boot_wait "$1"; }

# halt NODE: the container powered off (SIGTERM to nspawn: a clean
# shutdown), then killed if it lingers.
halt() {
    local n=$1 pid
    pid=$(cat "$T/$n/nspawn.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null || return 0
    wait_for 20 sh -c "! kill -0 $pid 2>/dev/null" || kill -9 "$(cat "$T/$n/leader")" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}

# boot_exit: the EXIT trap: on failure the machines' ddpnet journals and
# what failed on their consoles (and what boot_exit_logs, a function the
# caller may define, prints); then every machine halted, every overlay
# unmounted, every cgroup removed, and lib.sh's clean-up.
boot_exit() {
    local rc=$? n
    set +e
    trap - ERR
    if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
        for n in "${NODES[@]}"; do
            [ -s "$T/$n/leader" ] && kill -0 "$(cat "$T/$n/leader")" 2>/dev/null || continue
            echo "--- $n: journalctl -u ddpnet@ddp0 (last 30 lines)"
            in_node "$n" journalctl -u ddpnet@ddp0 -b --no-pager -n 30 2>&1
        done
        declare -F boot_exit_logs >/dev/null && boot_exit_logs
        for n in "${NODES[@]}"; do
            [ -s "$T/$n/console.log" ] || continue
            echo "--- $n: what failed on its console"
            grep -aE 'FAILED|Failed' "$T/$n/console.log" | tail -n 10
        done
    fi
    for n in "${NODES[@]}"; do halt "$n"; done
    for n in "${MOUNTS[@]}"; do umount "$n" 2>/dev/null || umount -l "$n"; done
    # The machines' cgroups, deepest first (their systemds made the inner ones).
    for n in "${CGROUPS[@]}"; do
        [ -d "$n" ] && find "$n" -depth -type d -exec rmdir {} + 2>/dev/null
    done
    (exit "$rc")
    e2e_exit
}
