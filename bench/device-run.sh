#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs parts of `make bench` on a bare machine with what
# bench/device-bundle.sh packed into .devcarry/: no compiler, no make, no
# iproute2, iperf3 or nftables needed there; bash, coreutils, util-linux's
# mount, python3 and glibc (as new as MANIFEST's glibc_min) are.
#
#   bash bench/device-run.sh        (root, from the repository root)
#
# 1. Wrappers, in a temporary directory put first in PATH, one per carried
#    binary: only the carried binaries load .devcarry/lib. Those that start
#    other programs (ip netns exec, nsenter, unshare, taskset) are run
#    through the loader, `ld-linux-x86-64.so.2 --library-path`, which, unlike
#    LD_LIBRARY_PATH, is not inherited: the system's mount, sh, timeout or
#    python3 they start load the system's own libraries, not Debian 12's.
#    The others get LD_LIBRARY_PATH (ddpnet must: `ddpnet down` knows its
#    daemon by its process name, which the loader would rename; the only
#    program the daemon starts, useradd, gets an environment of its own).
# 2. A probe, one line each: CPUs, kernel, glibc, /dev/net/tun (made with
#    mknod when missing), network namespaces, veth, bridge, nftables,
#    io_uring, the carried binaries, iperf3 over loopback, torch.
# 3. bench/bench.sh, as the Makefile's `bench` rule runs it, once per part
#    of BENCH_ONLY (default: pair cores allreduce, what issue 32's 16-core
#    targets need: 1 and 8 streams and ping, core scaling, all_reduce),
#    with DDPNET and BENCH_AEAD_BIN set to the carried binaries and every
#    other BENCH_* passed through; each part within what is left of
#    DEVRUN_LIMIT_S (default 480 s) and its elapsed seconds printed. Here
#    BENCH_ROUNDS defaults to 2, BENCH_SECONDS to 3 and BENCH_IDLE_SECONDS
#    to 2 (5, 5, 5 in make bench), so the three parts fit in about 8
#    minutes on 16 cores. A carried newer wireguard-go (device-bundle.sh
#    carries build/bench/wireguard-go-sid's when it was fetched) becomes
#    BENCH_EXTRA=wggo-new=... unless BENCH_EXTRA is set. Where
#    /usr/bin/python3 cannot import torch.distributed and the python3 first
#    in PATH can (a venv's), that one becomes BENCH_PY unless it is set. Each part ends
#    with issue 32's TARGET lines (bench/report.sh).
#
# Everything goes to $OUT (default ./build/device-out): device-run.log (all
# of the output), probe.txt, and per part BENCH_OUT=$OUT/PART (the .tsv
# rows, rtt/, aead_bench.txt), written as the run goes so that a run cut
# short still leaves what it measured.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CARRY=$ROOT/.devcarry
LDSO=/lib64/ld-linux-x86-64.so.2
OUT=${OUT:-$ROOT/build/device-out}
DEVRUN_LIMIT_S=${DEVRUN_LIMIT_S:-480}
export BENCH_ONLY=${BENCH_ONLY:-pair cores allreduce}
if [ "${BENCH_QUICK:-0}" != 1 ]; then
    export BENCH_ROUNDS=${BENCH_ROUNDS:-2} BENCH_SECONDS=${BENCH_SECONDS:-3}
    export BENCH_IDLE_SECONDS=${BENCH_IDLE_SECONDS:-2}
fi
W=""
PROBE_NS=devrun-probe-$$

say() { printf 'device-run: %s\n' "$*"; }

cleanup() {
    ip netns del "$PROBE_NS" >/dev/null 2>&1
    [ -z "$W" ] || rm -rf "$W"
}

# wrappers: one script per carried binary in $W (see the header).
wrappers() {
    local f name how
    W=$(mktemp -d "$ROOT/build/devcarry-wrap.XXXXXX") || return 1
    for f in "$CARRY"/bin/*; do
        name=${f##*/}
        case "$name" in
        ip|nsenter|unshare|taskset) how=ldso ;;
        *) how=env ;;
        esac
        [ "$how" = env ] || "$LDSO" --verify "$f" >/dev/null 2>&1 || how=env
        if [ "$how" = ldso ]; then
            printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$LDSO" "$CARRY/lib" "$f" >"$W/$name"
        else
            printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
                "$CARRY/lib" "$f" >"$W/$name"
        fi
        chmod 755 "$W/$name"
    done
}

# --- probe --------------------------------------------------------------------

# check NAME CMD...: one line, ok or FAIL, with the command's last line.
check() {
    local name=$1 out rc; shift
    if declare -F "$1" >/dev/null; then out=$("$@" 2>&1); else out=$(timeout 20 "$@" 2>&1); fi
    rc=$?
    out=$(printf '%s' "$out" | tail -n 1 | cut -c1-150)
    if [ "$rc" -eq 0 ]; then printf 'probe: %-16s ok    %s\n' "$name" "$out"
    else printf 'probe: %-16s FAIL  (exit %s) %s\n' "$name" "$rc" "$out"; fi
    return "$rc"
}

tun_probe() {
    local how=exists
    if [ ! -c /dev/net/tun ]; then
        mkdir -p /dev/net && mknod -m 666 /dev/net/tun c 10 200 || { echo "missing, and mknod failed"; return 1; }
        how="made with mknod"
    fi
    python3 -c '
import os, sys
try:
    os.close(os.open("/dev/net/tun", os.O_RDWR)); print("opens")
except OSError as e:
    print("does not open: %s" % e); sys.exit(1)' | sed "s/^/$how, /"
    return "${PIPESTATUS[0]}"
}

libs_probe() {
    local f out bad="" n=0
    for f in "$CARRY"/bin/*; do
        out=$("$LDSO" --library-path "$CARRY/lib" --list "$f" 2>&1) || { bad="$bad ${f##*/}(does not load)"; continue; }
        case "$out" in *"not found"*) bad="$bad ${f##*/}:$(printf '%s\n' "$out" | awk '/not found/ { printf "%s,", $1 }')" ;; esac
        n=$(( n + 1 ))
    done
    [ -z "$bad" ] || { echo "missing:$bad"; return 1; }
    echo "$n binaries find all their libraries"
}

glibc_probe() {
    local have need
    have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
    need=$(sed -n 's/^glibc_min //p' "$CARRY/MANIFEST" 2>/dev/null)
    echo "glibc $have here, the bundle needs $need"
    [ -n "$have" ] && [ -n "$need" ] &&
        [ "$(printf '%s\n%s\n' "$need" "$have" | sort -t. -k1,1n -k2,2n | head -n 1)" = "$need" ]
}

# uring_probe: io_uring_setup(2) with one entry, as the daemon's loop needs.
uring_probe() {
    python3 - <<'PYEOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 1, params)
if fd < 0:
    e = ctypes.get_errno()
    print("io_uring_setup: %s" % os.strerror(e)); sys.exit(1)
os.close(fd)
try:
    d = open("/proc/sys/kernel/io_uring_disabled").read().strip()
except OSError:
    d = "absent"
print("io_uring_setup works (io_uring_disabled=%s)" % d)
PYEOF
}

iperf_probe() {
    local ns=$1 g
    ip netns exec "$ns" iperf3 -s -1 -p 5299 >/dev/null 2>&1 &
    sleep 1
    g=$(ip netns exec "$ns" iperf3 -c 127.0.0.1 -p 5299 -t 1 -J 2>&1 |
        python3 -c 'import json,sys; print("%.1f Gbit/s over loopback" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))')
    local rc=$?
    wait
    echo "$g"
    return "$rc"
}

probe() {
    local ns=$PROBE_NS t v
    printf 'probe: %-16s %s CPUs (allowed %s), %s, %s MiB\n' cpus "$(nproc)" \
        "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)" \
        "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" \
        "$(awk '/^MemTotal/ { print int($2 / 1024) }' /proc/meminfo)"
    printf 'probe: %-16s %s (%s)\n' kernel "$(uname -r)" "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")"
    check root sh -c 'id -un; [ "$(id -u)" -eq 0 ]'
    check glibc glibc_probe
    check libraries libs_probe
    check /dev/net/tun tun_probe
    check io_uring uring_probe
    for t in ddpnet ip ss iperf3 nft taskset ping wg ps nsenter unshare; do
        case "$t" in
        ip|ss|ping|ps) v=-V ;;
        *) v=--version ;;
        esac
        check "$t" bash -c 'set -o pipefail; "$0" "$1" 2>&1 | head -n 1' "$t" "$v"
    done
    check tools sh -c 'm=""; for t in bash python3 timeout awk sed sort getconf mount mktemp sleep; do command -v $t >/dev/null || m="$m $t"; done; [ -z "$m" ] && echo "bash python3 timeout awk sed sort getconf mount mktemp sleep" || { echo "missing:$m"; false; }'
    check useradd sh -c 'if getent passwd ddpnet >/dev/null; then echo "user ddpnet exists"; elif [ -x /usr/sbin/useradd ] || [ -x /sbin/useradd ]; then echo "useradd present (the daemon makes its user ddpnet)"; else echo "no user ddpnet and no useradd"; false; fi'
    if check "netns add" ip netns add "$ns"; then
        ip -n "$ns" link set lo up
        check veth ip -n "$ns" link add dv0 type veth peer name dv1
        check bridge ip -n "$ns" link add dbr0 type bridge
        check nft ip netns exec "$ns" nft add table inet devprobe
        check "iperf3 run" iperf_probe "$ns"
        ip netns del "$ns"
    fi
    check "mount ns" unshare --mount --propagation private sh -c 'd=$(mktemp -d) && mount --bind /tmp "$d" && umount "$d" && rmdir "$d" && echo "a private mount namespace, a bind mount"'
    check taskset-pin taskset -c 0 true
    check torch python3 -c 'import torch, torch.distributed; print("torch", torch.__version__)'
    check torchrun sh -c 'command -v torchrun || { echo "not on PATH (only the allreduce part needs it)"; false; }'
}

# --- the bench ----------------------------------------------------------------

# cores_estimate: seconds the cores part should take, for the log: per
# round the veth and each fitting N, two tests each, BENCH_SECONDS plus
# ~2 s of iperf3 set-up per test and ~4 s per ddpnet up and down.
cores_estimate() {
    local n k=0 have s=${BENCH_SECONDS:-5} BENCH_CORES=${BENCH_CORES:-1 2 4 8}
    have=$(nproc)
    for n in ${BENCH_CORES//,/ }; do
        if [ $(( 2 * n + 2 )) -le "$have" ] || { [ "${BENCH_CORES_FORCE:-0}" = 1 ] && [ $(( 2 * n )) -le "$have" ]; }; then
            k=$(( k + 1 ))
        fi
    done
    echo $(( ${BENCH_ROUNDS:-1} * (2 * (s + 2) + k * (2 * (s + 2) + 4)) + 5 ))
}

run_part() {
    local part=$1 left=$2 began=$SECONDS rc aead=""
    mkdir -p "$OUT/$part"
    [ -x "$W/aead_bench" ] && aead=$W/aead_bench
    say "part $part: starting, at most $left s left (DEVRUN_LIMIT_S)$([ "$part" = cores ] && printf '; expected about %s s' "$(cores_estimate)")"
    BENCH_ONLY=$part BENCH_OUT=$OUT/$part DDPNET=$W/ddpnet BENCH_AEAD_BIN=$aead \
        timeout --kill-after=30 "$left" bash "$ROOT/bench/bench.sh"
    rc=$?
    [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || say "part $part: cut short at $left s (DEVRUN_LIMIT_S)"
    say "part $part: exit $rc, $(( SECONDS - began )) s"
    return "$rc"
}

main() {
    local t0=$SECONDS t part left rc=0 parts
    trap cleanup EXIT
    trap 'exit 130' INT TERM HUP
    say "repository $ROOT, output $OUT, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    [ -d "$CARRY/bin" ] && [ -x "$CARRY/bin/ddpnet" ] ||
        { say "no $CARRY/bin/ddpnet: run bash bench/device-bundle.sh where it builds, and carry .devcarry"; return 1; }
    [ -x "$LDSO" ] || { say "no $LDSO: not an x86-64 glibc system"; return 1; }
    sed -n '1,2p' "$CARRY/MANIFEST" 2>/dev/null | sed 's/^/device-run: bundle: /'
    mkdir -p "$ROOT/build"
    chmod 755 "$CARRY"/bin/* 2>/dev/null     # in case the copy lost the modes
    wrappers || { say "cannot write the wrappers under $ROOT/build"; return 1; }
    export PATH="$W:$PATH"
    say "wrappers in $W, first in PATH"
    # The machine's torch may live in another python3 than /usr/bin's (a
    # venv first in PATH): allreduce needs one that imports it.
    if [ -z "${BENCH_PY:-}" ] && ! /usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1 &&
        command -v python3 >/dev/null && python3 -c 'import torch.distributed' >/dev/null 2>&1; then
        export BENCH_PY
        BENCH_PY=$(command -v python3)
        say "BENCH_PY=$BENCH_PY (/usr/bin/python3 has no torch.distributed; this one has)"
    fi
    if [ -z "${BENCH_EXTRA:-}" ] && [ -x "$W/wireguard-go-new" ]; then
        export BENCH_EXTRA="wggo-new=$W/wireguard-go-new"
        say "BENCH_EXTRA=$BENCH_EXTRA (the carried newer wireguard-go)"
    fi
    t=$SECONDS
    probe | tee "$OUT/probe.txt"
    say "probe: $(( SECONDS - t )) s"
    parts=${BENCH_ONLY//,/ }
    for part in $parts; do
        left=$(( DEVRUN_LIMIT_S - (SECONDS - t0) ))
        if [ "$left" -lt 30 ]; then
            say "part $part: not run, $left s left of DEVRUN_LIMIT_S=$DEVRUN_LIMIT_S"; rc=1; continue
        fi
        run_part "$part" "$left" || rc=1
    done
    say "results in $OUT: $(cd "$OUT" && find . -maxdepth 2 \( -name '*.tsv' -o -name '*.txt' -o -name '*.log' \) | sort | tr '\n' ' ')"
    say "total: $(( SECONDS - t0 )) s (exit $rc)"
    return "$rc"
}

mkdir -p "$OUT" || { echo "device-run: cannot create $OUT" >&2; exit 1; }
case "$OUT" in /*) ;; *) OUT=$(cd "$OUT" && pwd) ;; esac
main 2>&1 | tee "$OUT/device-run.log"
exit "${PIPESTATUS[0]}"
