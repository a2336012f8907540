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
#    minutes on 16 cores (each part's expected seconds are printed first,
#    and a warning when they add up to more than DEVRUN_LIMIT_S). A carried
#    newer wireguard-go (device-bundle.sh
#    carries build/bench/wireguard-go-sid's when it was fetched) becomes
#    BENCH_EXTRA=wggo-new=... unless BENCH_EXTRA is set. Where
#    /usr/bin/python3 cannot import torch.distributed and the python3 first
#    in PATH can (a venv's), that one becomes BENCH_PY unless it is set. Each part ends
#    with issue 32's TARGET lines (bench/report.sh).
# 4. Issue 45's 16-core targets are measured on the configuration we would
#    ship for 16 cores: the pair and allreduce (and relay) parts run the
#    daemons with DDPNET_SHARDS=$DEVRUN_SHARDS (default 8; through
#    BENCH_DDPNET_ENV, unless it is set; DEVRUN_SHARDS=1: one loop; since
#    issue 58 8 is also the default a daemon picks on 16 cores, at most 8,
#    overlay/loop/shard.h). 8 because the pair testbed puts
#    both daemons on one machine: 8 loops each is one per CPU for the two
#    together, the most that does not oversubscribe 16 cores, it gives each
#    of the 8 streams a queue of its own, and it is the cores part's largest
#    N, so both parts measure the same daemon. The cores part runs in shards
#    mode (BENCH_CORES_MODE=shards, its only one) with BENCH_CORES_FORCE=1 (N=8 takes all 16
#    CPUs, so iperf3 shares them there; N=1, 2 and 4 keep it on CPUs of its
#    own) and 8 streams only (BENCH_CORES_STREAMS=8: the doubling target is
#    judged on 8 streams). At the end, "=== issue 45, 16-core targets ===":
#    one ISSUE45 line per target, PASS, FAIL or n/a with the reason, from
#    the rows all the parts wrote (report_issue45, bench/report.sh).
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
DEVRUN_SHARDS=${DEVRUN_SHARDS:-8}
export BENCH_ONLY=${BENCH_ONLY:-pair cores allreduce}
export BENCH_CORES_MODE=${BENCH_CORES_MODE:-shards} BENCH_CORES_FORCE=${BENCH_CORES_FORCE:-1}
export BENCH_CORES_STREAMS=${BENCH_CORES_STREAMS:-8}
# The daemons of pair, allreduce and relay: sharded (see the header, 4.).
if [ -z "${BENCH_DDPNET_ENV:-}" ]; then
    export BENCH_DDPNET_ENV="DDPNET_SHARDS=$DEVRUN_SHARDS"
fi
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

# Expected seconds per part, for the plan printed before the run (rough:
# from what each test costs, not measured as a whole on 16 cores):
# an iperf3 test BENCH_SECONDS + ~2 s of set-up, a tunnel up and down ~5 s
# (the cores part's ~4 s), BENCH_PINGS echoes 10 ms apart + ~1 s, the idle
# window + 1 s; a torchrun of three ranks (import torch, rendezvous, the
# all_reduces) ~20 s per contender and round, a guess.

# pair_estimate: per round veth (4 tests, ping) and each tunnel contender
# (the same, up and down, idle): ddpnet, Debian's wireguard-go where it is
# installed, each BENCH_EXTRA, BENCH_BUSY_POLL value and variant.
pair_estimate() {
    local s=${BENCH_SECONDS:-5} k=1 test ping
    [ ! -x "${BENCH_WGGO:-/usr/bin/wireguard-go}" ] || k=$(( k + 1 ))
    set -- ${BENCH_EXTRA:-} ${BENCH_BUSY_POLL:-} ${BENCH_DDPNET_VARIANTS:-}
    k=$(( k + $# ))
    test=$(( 4 * (s + 2) )) ping=$(( ${BENCH_PINGS:-200} / 100 + 1 ))
    echo $(( ${BENCH_ROUNDS:-1} * (test + ping + k * (test + ping + 5 + ${BENCH_IDLE_SECONDS:-5} + 1)) + 10 ))
}

# allreduce_estimate: bare, ddp0 and each BENCH_EXTRA, ~20 s each a round.
allreduce_estimate() {
    set -- ${BENCH_EXTRA:-}
    echo $(( ${BENCH_ROUNDS:-1} * (2 + $#) * 20 + 10 ))
}

# cores_estimate: per round the veth and each fitting N in each mode, one
# test per stream count each.
cores_estimate() {
    local n k=0 have s=${BENCH_SECONDS:-5} BENCH_CORES=${BENCH_CORES:-1 2 4 8} m=0 t
    have=$(nproc)
    for n in ${BENCH_CORES//,/ }; do
        if [ $(( 2 * n + 2 )) -le "$have" ] || { [ "${BENCH_CORES_FORCE:-0}" = 1 ] && [ $(( 2 * n )) -le "$have" ]; }; then
            k=$(( k + 1 ))
        fi
    done
    for n in ${BENCH_CORES_MODE//,/ }; do m=$(( m + 1 )); done
    set -- ${BENCH_CORES_STREAMS//,/ }
    t=$(( $# * (s + 2) ))
    echo $(( ${BENCH_ROUNDS:-1} * (t + k * m * (t + 4)) + 5 ))
}

# part_estimate PART: its expected seconds, or empty for a part not estimated.
part_estimate() {
    case "$1" in
    pair) pair_estimate ;;
    allreduce) allreduce_estimate ;;
    cores) cores_estimate ;;
    esac
}

run_part() {
    local part=$1 left=$2 began=$SECONDS rc aead=""
    mkdir -p "$OUT/$part"
    [ -x "$W/aead_bench" ] && aead=$W/aead_bench
    local est; est=$(part_estimate "$part")
    say "part $part: starting, at most $left s left (DEVRUN_LIMIT_S)${est:+; expected about $est s}"
    BENCH_ONLY=$part BENCH_OUT=$OUT/$part DDPNET=$W/ddpnet BENCH_AEAD_BIN=$aead BENCH_ISSUE45=0 \
        timeout --kill-after=30 "$left" bash "$ROOT/bench/bench.sh"
    rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        say "part $part: cut short at $left s (DEVRUN_LIMIT_S)"
        PART_STATUS[$part]="cut short at $left s (DEVRUN_LIMIT_S): its figures are from the rounds it finished"
    elif [ "$rc" -ne 0 ]; then
        PART_STATUS[$part]="bench.sh exited $rc"
    else
        PART_STATUS[$part]=ok
    fi
    say "part $part: exit $rc, $(( SECONDS - began )) s"
    return "$rc"
}

declare -A PART_STATUS=()

# summary: issue 45's 16-core targets from the rows every part wrote under
# $OUT (bench/report.sh's report_issue45), with why a target's part did
# not measure it.
summary() {
    local p why=() w
    for p in pair allreduce cores; do
        case "${PART_STATUS[$p]:-}" in
        "") w="part $p not run here (BENCH_ONLY=$BENCH_ONLY)" ;;
        "not run"*) w="part $p ${PART_STATUS[$p]}" ;;
        *) w=$(sed -n "s/^bench: $p skipped: /part $p skipped: /p; s/^bench: cores: n\/a: /part cores n\/a: /p" \
                   "$OUT/device-run.log" 2>/dev/null | grep "^part $p" | tail -n 1) ;;
        esac
        why+=("$w")
        case "${PART_STATUS[$p]:-}" in ""|ok|"not run"*) ;; *) say "part $p: ${PART_STATUS[$p]}" ;; esac
    done
    (
        BENCH_DIR=$ROOT/bench PY=${BENCH_PY:-python3}
        . "$ROOT/bench/report.sh"
        report_issue45 pair="$OUT/pair/results.tsv" mesh="$OUT/allreduce/mesh.tsv" cores="$OUT/cores/cores.tsv" \
            env="${BENCH_DDPNET_ENV:-}" pair_why="${why[0]}" allreduce_why="${why[1]}" cores_why="${why[2]}" \
            cores_left="$(sed -n 's/^bench: cores: \(left out: .*\)/\1/p' "$OUT/device-run.log" 2>/dev/null | tail -n 1)"
    )
}

main() {
    local t0=$SECONDS t part left rc=0 parts est total=0 plan=""
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
    say "ddpnet's daemons in pair and allreduce: ${BENCH_DDPNET_ENV:-the defaults}; cores: BENCH_CORES_MODE=$BENCH_CORES_MODE BENCH_CORES_FORCE=$BENCH_CORES_FORCE BENCH_CORES_STREAMS=$BENCH_CORES_STREAMS"
    for part in $parts; do
        est=$(part_estimate "$part")
        plan="$plan, $part ${est:-?} s" total=$(( total + ${est:-0} ))
    done
    say "plan: ${plan#, }: about $(( total + SECONDS - t0 )) s with the probe, of DEVRUN_LIMIT_S=$DEVRUN_LIMIT_S"
    [ $(( total + SECONDS - t0 )) -le "$DEVRUN_LIMIT_S" ] ||
        say "plan: WARNING: more than DEVRUN_LIMIT_S; the last part may be cut short (fewer BENCH_ROUNDS or parts)"
    for part in $parts; do
        left=$(( DEVRUN_LIMIT_S - (SECONDS - t0) ))
        if [ "$left" -lt 30 ]; then
            say "part $part: not run, $left s left of DEVRUN_LIMIT_S=$DEVRUN_LIMIT_S"; rc=1
            PART_STATUS[$part]="not run: $left s left of DEVRUN_LIMIT_S=$DEVRUN_LIMIT_S"
            continue
        fi
        run_part "$part" "$left" || rc=1
    done
    summary
    say "results in $OUT: $(cd "$OUT" && find . -maxdepth 2 \( -name '*.tsv' -o -name '*.txt' -o -name '*.log' \) | sort | tr '\n' ' ')"
    say "total: $(( SECONDS - t0 )) s (exit $rc)"
    return "$rc"
}

mkdir -p "$OUT" || { echo "device-run: cannot create $OUT" >&2; exit 1; }
case "$OUT" in /*) ;; *) OUT=$(cd "$OUT" && pwd) ;; esac
main 2>&1 | tee "$OUT/device-run.log"
exit "${PIPESTATUS[0]}"
