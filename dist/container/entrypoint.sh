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
down_args="" want=""
for arg; do
    case $want in
    i) down_args="$down_args -i $arg" ;;
    r) down_args="$down_args --run-dir $arg" ;;
    esac
    want=""
    case $arg in
    -i|--interface) want=i ;;
    --run-dir) want=r ;;
    --interface=*|--run-dir=*) down_args="$down_args $arg" ;;
    -i?*) down_args="$down_args $arg" ;;
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
# shellcheck disable=SC2086 # the words of down_args are separate arguments
/usr/bin/ddpnet down $down_args >/dev/null 2>&1 ||
    echo "ddpnet down$down_args failed: the hosts block or run files may be left" >&2
exit "$rc"
