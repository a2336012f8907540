# SPDX-License-Identifier: MIT
# Plumbing of `make bench` (sourced, not run): the testbed, the measuring
# instruments (iperf3, ping, CPU ticks of the daemons) and the cleanup that
# undoes everything on EXIT, so an interrupted run leaves no namespace or
# process behind.
#
#   [node a] veth0 192.168.243.1/24 ======= veth0 192.168.243.2/24 [node b]
#            tunnel 10.78.0.1/24                 tunnel 10.78.0.2/24
#            (underlay MTU 1500, tunnel MTU 1420)
#
# A node is a network namespace plus a private mount namespace, held open
# by one sleeping process, in which the node's run directory is bind-mounted
# over /run/wireguard: each node's `wg` then finds its own wg0.sock, so both
# wireguard-go instances can be called wg0. `nx NODE CMD...` runs inside.
# All traffic stays on the veth pair between our two namespaces.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_ROOT=$(cd "$BENCH_DIR/.." && pwd)
DDPNET=${DDPNET:-$BENCH_ROOT/bin/ddpnet}
BENCH_KEEP=${BENCH_KEEP:-0}
# Debian's python3: the one the packages in `make deps-test` are for; BENCH_PY
# names another (one whose torch the machine has elsewhere, as in a venv).
if [ -n "${BENCH_PY:-}" ]; then PY=$BENCH_PY
elif [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi

UL_A=192.168.243.1
UL_B=192.168.243.2
UL_PREFIX=24
UL_MTU=1500
TN_A=10.78.0.1
TN_B=10.78.0.2
TN_NET=10.78.0.0/24
TN_PREFIX=24
TN_MTU=1420
WG_PORT=51820
IPERF_PORT=5201

T=""              # scratch directory
BENCH_NETNS=()    # namespaces we created
BENCH_PIDS=()     # background processes we started
BENCH_NODES=()    # nodes made by bench_node (a, b; m1, m2, m3: mesh.sh)
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)

say()  { printf 'bench: %s\n' "$*"; }
warn() { printf 'bench: %s\n' "$*" >&2; }
skip() { printf 'SKIP: %s\n' "$*"; exit 77; }
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }

need() {
    local t
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || skip "missing tool: $t"
    done
}

# wait_for SECONDS CMD...: polls CMD every 0.05 s until it succeeds.
wait_for() {
    local secs=$1; shift
    local end=$(( $(date +%s%N) + secs * 1000000000 ))
    while ! "$@" >/dev/null 2>&1; do
        [ "$(date +%s%N)" -lt "$end" ] || return 1
        sleep 0.05
    done
}

# reap PID SECONDS: waits for our child PID to end, killing it (TERM, then
# KILL) when it outlives SECONDS.
reap() {
    local pid=$1 secs=$2
    wait_for "$secs" gone "$pid" || kill "$pid" 2>/dev/null
    wait_for 3 gone "$pid" || kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}

# gone PID: the process has ended (a zombie counts: kill -0 would not say).
gone() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    s=${s##*) }
    [ "${s%% *}" = Z ]
}

# bench_init: checks that we can run at all (else exit 77 with the reason),
# then the scratch directory and the cleanup.
bench_init() {
    [ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, TUN)"
    [ -c /dev/net/tun ] || skip "no /dev/net/tun"
    need iperf3 ip nsenter unshare timeout ping ss ps awk getconf
    command -v "$PY" >/dev/null 2>&1 || skip "missing tool: python3"
    [ -x "$DDPNET" ] || skip "$DDPNET not built (make bin/ddpnet)"
    unshare --net true 2>/dev/null || skip "cannot create network namespaces"
    BENCH_PFX="ddpbench-$$-"
    T=$(mktemp -d /tmp/ddpnet-bench.XXXXXX)
    chmod 700 "$T"
    trap bench_exit EXIT
    trap 'exit 130' INT TERM HUP
    mkdir -p /run/wireguard
}

bench_exit() {
    local rc=$?
    set +e
    bench_cleanup
    exit "$rc"
}

bench_cleanup() {
    local n ns pid pids
    # `ddpnet down` first, so that daemons leave the way a user's would.
    for n in "${BENCH_NODES[@]}"; do
        [ -s "$T/$n/holder.pid" ] && [ -f "$T/$n/run/ddp0.state" ] || continue
        nx "$n" timeout 10 "$DDPNET" down --run-dir "$T/$n/run" >/dev/null 2>&1
    done
    for pid in "${BENCH_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    # Whatever still runs inside our namespaces is ours.
    for ns in "${BENCH_NETNS[@]}"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -z "$pids" ] || kill $pids 2>/dev/null
    done
    sleep 0.3
    for ns in "${BENCH_NETNS[@]}"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -z "$pids" ] || kill -9 $pids 2>/dev/null
    done
    for pid in "${BENCH_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    for ns in "${BENCH_NETNS[@]}"; do ip netns del "$ns" 2>/dev/null; done
    if [ -n "$T" ] && [ -d "$T" ]; then
        if [ "$BENCH_KEEP" = 1 ]; then say "kept $T"; else rm -rf "$T"; fi
    fi
}

holder_pid() { cat "$T/$1/holder.pid"; }

# nx NODE CMD...: runs CMD in NODE's network and mount namespaces.
nx() {
    local n=$1; shift
    nsenter -t "$(holder_pid "$n")" -m -n -- "$@"
}

# wg_start NODE BIN: starts BIN (wireguard-go or kin) as wg0 in NODE's
# namespaces, its output in $T/NODE/wg.out, and waits up to 10 s for its
# UAPI socket, wg0.sock. WG_START_PID is the daemon (also in BENCH_PIDS),
# set even when it fails, so the caller can reap it; the failure's reason
# goes to WG_START_WHY. Call it in this shell, not in $(...): the daemon
# must stay our child for wait and reap.
wg_start() {
    local n=$1 bin=$2 pid why
    WG_START_PID="" WG_START_WHY=""
    rm -f "$T/$n/run/wg0.sock"
    # nsenter and env exec, so $! is the daemon itself; it stays in the
    # foreground, unlike wireguard-go's default of forking away.
    nsenter -t "$(holder_pid "$n")" -m -n -- env WG_PROCESS_FOREGROUND=1 LOG_LEVEL=error \
        "$bin" wg0 >"$T/$n/wg.out" 2>&1 &
    pid=$!
    BENCH_PIDS+=("$pid")
    WG_START_PID=$pid
    wait_for 10 wg_started "$pid" "$T/$n/run/wg0.sock"
    if gone "$pid" || [ ! -S "$T/$n/run/wg0.sock" ]; then
        why=" (still running, no wg0.sock)"
        if gone "$pid"; then wait "$pid"; why=" (exit $?)"; fi
        WG_START_WHY="$bin in node $n did not start$why: $(tail -n 2 "$T/$n/wg.out")"
        return 1
    fi
}

# wg_started PID SOCKET: the daemon listens, or has ended (no use waiting).
wg_started() {
    [ -S "$2" ] || gone "$1"
}

# bench_testbed: nodes a and b and the veth pair between them.
bench_testbed() {
    local n
    for n in a b; do bench_node "$n"; done
    ip -n "${BENCH_PFX}a" link add veth0 type veth peer name veth0 netns "${BENCH_PFX}b" ||
        fail "cannot create the veth pair"
    bench_link a "$UL_A"
    bench_link b "$UL_B"
    bench_pin_neighbours "a:veth0:$UL_A" "b:veth0:$UL_B"
    wait_for 5 nx a ping -n -c 1 -W 1 "$UL_B" || fail "the veth pair does not carry ping"
}

# bench_pin_neighbours NODE:IFACE:ADDR...: each gets a permanent neighbour
# entry for every other. The kernel's neighbour table limit (gc_thresh3) is
# one for all namespaces, and permanent entries are exempt from it: on a
# host where another job's namespaces filled the table, ARP in ours would
# fail ("No buffer space available") and the testbed would carry nothing.
bench_pin_neighbours() {
    local x y xn xi xa yn yi ya mac
    for x in "$@"; do
        IFS=: read -r xn xi xa <<<"$x"
        for y in "$@"; do
            [ "$x" != "$y" ] || continue
            IFS=: read -r yn yi ya <<<"$y"
            mac=$(ip -n "$BENCH_PFX$yn" -o link show dev "$yi" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
            [ -n "$mac" ] || fail "node $yn: no MAC address on $yi"
            ip -n "$BENCH_PFX$xn" neigh replace "$ya" lladdr "$mac" dev "$xi" nud permanent ||
                fail "node $xn: cannot pin the neighbour $ya ($mac) on $xi"
        done
    done
}

bench_link() {
    local ns=$BENCH_PFX$1
    ip -n "$ns" link set veth0 mtu "$UL_MTU" || fail "node $1: cannot set MTU $UL_MTU"
    ip -n "$ns" addr add "$2/$UL_PREFIX" dev veth0 || fail "node $1: cannot add $2"
    ip -n "$ns" link set veth0 up || fail "node $1: cannot bring veth0 up"
}

# bench_node NAME: the namespaces, run directory, hosts file and key of a node.
bench_node() {
    local n=$1 ns=$BENCH_PFX$1
    ip netns add "$ns" || fail "cannot create namespace $ns"
    BENCH_NETNS+=("$ns")
    BENCH_NODES+=("$n")
    ip -n "$ns" link set lo up
    mkdir -p "$T/$n/run"
    chmod 755 "$T/$n"
    printf '127.0.0.1 localhost\n' >"$T/$n/hosts"
    ip netns exec "$ns" unshare --mount --propagation private \
        sh -c 'mount --bind "$1" /run/wireguard && echo $$ >"$2.tmp" &&
               mv "$2.tmp" "$2" && exec sleep 86400' \
        holder "$T/$n/run" "$T/$n/holder.pid" >"$T/$n/holder.out" 2>&1 &
    BENCH_PIDS+=("$!")
    wait_for 5 test -s "$T/$n/holder.pid" ||
        fail "node $n: namespace holder did not start: $(cat "$T/$n/holder.out")"
    ( umask 077; "$DDPNET" genkey >"$T/$n/key" ) || fail "ddpnet genkey failed"
    "$DDPNET" pubkey <"$T/$n/key" >"$T/$n/pub" || fail "ddpnet pubkey failed"
}

# stat_ticks FILE: utime + stime in clock ticks from a /proc stat file (a
# process's, /proc/PID/stat, with all its threads; or one thread's,
# /proc/PID/task/TID/stat). Fails when it is gone.
stat_ticks() {
    local s f
    s=$(cat "$1" 2>/dev/null) || return 1
    # Fields after the command name, which may itself hold spaces.
    read -r -a f <<<"${s##*) }"
    echo $(( f[11] + f[12] ))
}

# ticks_sum WHAT PID...: utime + stime in clock ticks, summed over the
# PIDs: of each process with all its threads (WHAT=all), or of its main
# thread alone (WHAT=main). Fails when one of them is gone, since its
# ticks went with it.
ticks_sum() {
    local what=$1 pid t sum=0
    shift
    for pid in "$@"; do
        case $what in
        all) t=$(stat_ticks "/proc/$pid/stat") || return 1 ;;
        *) t=$(stat_ticks "/proc/$pid/task/$pid/stat") || return 1 ;;
        esac
        sum=$(( sum + t ))
    done
    echo "$sum"
}

# cpu_ticks PID...: the processes, all their threads.
cpu_ticks() { ticks_sum all "$@"; }
# loop_ticks PID...: ddpnet daemons' event loops alone (each one's main
# thread; workers, lanes and io_uring's threads are threads of their own).
loop_ticks() { ticks_sum main "$@"; }

# node_daemon NODE: the pid of NODE's ddpnet daemon, from its state file
# (empty when it has none).
node_daemon() { sed -n 's/^pid=\([0-9][0-9]*\)$/\1/p' "$T/$1/run/ddp0.state" 2>/dev/null; }

# proc_tree PID...: those processes and all their descendants (a daemon
# that forks workers is charged for them too).
proc_tree() {
    ps -e -o pid=,ppid= | awk -v roots="$*" '
        BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
        { parent[$1] = $2 }
        END {
            do {
                grew = 0
                for (p in parent)
                    if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 }
            } while (grew)
            for (p in keep) print p
        }' | sort -n | tr '\n' ' '
}

listening() {
    local out
    out=$(nx "$1" ss -Hltn "sport = :$2") && [ -n "$out" ]
}

# iperf_run CLIENT SERVER DEST OUT [IPERF3-ARGS...]: one iperf3 test of
# BENCH_SECONDS against a one-off server on SERVER; the client's JSON goes
# to OUT. Prints the receiver's "BITS_PER_SECOND BYTES".
iperf_run() {
    local cli=$1 srv=$2 dest=$3 out=$4; shift 4
    local spid rc
    nx "$srv" timeout $((BENCH_SECONDS + 40)) iperf3 -s -1 -p "$IPERF_PORT" >"$out.server" 2>&1 &
    spid=$!
    if ! wait_for 10 listening "$srv" "$IPERF_PORT"; then
        warn "iperf3 server on $srv did not start: $(tail -n 3 "$out.server")"
        reap "$spid" 0
        return 1
    fi
    nx "$cli" timeout $((BENCH_SECONDS + 30)) iperf3 -c "$dest" -p "$IPERF_PORT" \
        -t "$BENCH_SECONDS" --connect-timeout 5000 -J "$@" >"$out" 2>&1
    rc=$?
    reap "$spid" 10
    if [ "$rc" -ne 0 ]; then
        warn "iperf3 $cli -> $dest $* failed (exit $rc): $(iperf_error "$out")"
        return 1
    fi
    "$PY" - "$out" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["end"]["sum_received"]
print("%.0f %d" % (r["bits_per_second"], r["bytes"]))
PYEOF
}

iperf_error() {
    "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("error", "?"))' "$1" 2>/dev/null ||
        tail -n 3 "$1"
}

# ping_run FROM DEST OUT [PATH-NAME]: BENCH_PINGS echoes BENCH_PING_MS
# (default 10) ms apart;
# prints the per-packet "AVG_US P99_US LOST" (p99 by nearest rank). With a
# PATH-NAME, each reply's round trip (µs) is also appended to
# $BENCH_OUT/rtt/PATH-NAME.txt, so the report can take the p99 of all
# rounds' echoes together.
ping_run() {
    local from=$1 dest=$2 out=$3 name=${4:-} ms=${BENCH_PING_MS:-10}
    nx "$from" timeout $((BENCH_PINGS / 100 + 60)) ping -n -i "$((ms / 1000)).$(printf %03d $((ms % 1000)))" -c "$BENCH_PINGS" \
        -w $((BENCH_PINGS / 100 + 50)) "$dest" >"$out" 2>&1
    awk '/ time=/ { t = $0; sub(/.* time=/, "", t); sub(/ ms.*/, "", t); printf "%.1f\n", t * 1000 }' \
        "$out" >"$out.rtt"
    [ -z "$name" ] || cat "$out.rtt" >>"$BENCH_OUT/rtt/$name.txt"
    sort -g "$out.rtt" | awk -v want="$BENCH_PINGS" '
        { v[n++] = $1; s += $1 }
        END {
            if (n == 0) exit 1
            k = int(0.99 * n); if (k < 0.99 * n) k++
            printf "%.1f %.1f %d\n", s / n, v[k - 1], want - n
        }'
}
