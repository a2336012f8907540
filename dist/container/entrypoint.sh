#!/bin/sh
# SPDX-License-Identifier: MIT
# The image's entrypoint (/usr/lib/ddpnet/entrypoint): `ddpnet ARGS`.
# For `up`, what the unit's ExecStopPost does besides: the daemon runs
# unprivileged and cannot remove its hosts block or its run directory's
# files itself, so once it has exited (`podman stop`'s SIGTERM, passed
# on to it) `ddpnet down` does, as root, for the same interface and run
# directory. Any other verb (status, env, genkey...) is ddpnet's alone.
# docs/containers.md.
set -u
[ "${1:-}" = up ] || exec /usr/bin/ddpnet "$@"

# The interface and run directory `down` must name: those given to up.
ifname=ddp0 run_dir=/var/run/wireguard want=""
for arg; do
    case $want in
    i) ifname=$arg ;;
    r) run_dir=$arg ;;
    esac
    want=""
    case $arg in
    -i|--interface) want=i ;;
    --run-dir) want=r ;;
    --interface=*) ifname=${arg#*=} ;;
    --run-dir=*) run_dir=${arg#*=} ;;
    -i?*) ifname=${arg#-i} ;;
    esac
done

/usr/bin/ddpnet "$@" &
pid=$!
# podman stop signals this process; the daemon, once it runs as ddpnet,
# is out of root's reach without CAP_KILL. As the ddpnet user (the
# CAP_SETUID the daemon's drop needs already allows it; the image has
# no kill(1): the shell's), not with one more capability.
stop() {
    setpriv --reuid=ddpnet --regid=ddpnet --clear-groups \
        /bin/sh -c 'kill -TERM "$1"' stop "$pid" 2>/dev/null ||
        kill -TERM "$pid" 2>/dev/null   # still root's: set-up not done
}
trap stop TERM INT HUP
# wait returns early when a signal is trapped: until the daemon is gone
# (reaped: its /proc entry goes).
while :; do
    wait "$pid"
    rc=$?
    [ -e "/proc/$pid" ] || break
done
# Nothing to clean after a start that failed (no state file, no
# interface): down would only say the node is not up.
if [ -e "$run_dir/$ifname.state" ] || [ -e "/sys/class/net/$ifname" ]; then
    /usr/bin/ddpnet down -i "$ifname" --run-dir "$run_dir" >/dev/null ||
        echo "ddpnet down -i $ifname failed: its hosts block or run files may be left" >&2
fi
exit "$rc"
