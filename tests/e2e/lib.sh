# Shared plumbing of the end-to-end tests (sourced, not run): skipping,
# failing, the per-run names and scratch directory, the network namespaces
# that stand in for machines, and the ddpnet, ping, iperf3 and wg steps the
# scripts repeat. Everything a script makes is recorded here and undone by
# one cleanup on EXIT, so a failed or interrupted run leaves nothing behind.
#
# A "node" is three namespaces held open by one sleeping process: a network
# namespace (its own underlay link eth0 and, once up, ddp0), a UTS namespace
# (hostname = node name, for torchrun) and a private mount namespace in
# which the node's own hosts file is bind-mounted over /etc/hosts and its
# run directory over /run/wireguard (so stock `wg show ddp0` finds the
# node's control socket). `nx NODE CMD...` runs a command inside all three.
#
# Environment: DDPNET (binary, default bin/ddpnet), E2E_FOREGROUND=1 (run
# daemons with --foreground, logging to $T/NODE/daemon.out, shown on
# failure), E2E_KEEP=1 (keep the scratch directory), E2E_VERBOSE=1.

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
E2E_ROOT=$(cd "$E2E_DIR/../.." && pwd)
DDPNET=${DDPNET:-$E2E_ROOT/bin/ddpnet}
E2E_FOREGROUND=${E2E_FOREGROUND:-0}
E2E_KEEP=${E2E_KEEP:-0}
E2E_VERBOSE=${E2E_VERBOSE:-0}
# Debian's python3 (the one python3-torch is for); a python3 earlier in
# PATH (pyenv, venv) may lack torch.
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi

# The cluster every script uses unless it says otherwise.
E2E_NET=10.77.0.0/16
E2E_PORT=51820
# Underlay, inside our namespaces only.
E2E_V4NET=192.168.241
E2E_V6NET=fd00:dd

E2E_NAME=${E2E_NAME:-e2e}
E2E_PFX=""
T=""
E2E_NETNS=()      # namespaces we created, in creation order
E2E_NODES=()      # nodes (names) we created
E2E_UP=()         # nodes on which ddpnet may be up
E2E_PIDS=()       # background processes we started

say()  { printf '%s: %s\n' "$E2E_NAME" "$*"; }
step() { printf '\n== %s: %s\n' "$E2E_NAME" "$*"; }
skip() { printf 'SKIP: %s\n' "$*"; exit 77; }
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }

# Needs each named command, else skip.
need() {
    local t
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || skip "missing tool: $t"
    done
}

# Polls CMD... every 0.2 s until it succeeds or SECONDS pass; returns its status.
wait_for() {
    local secs=$1; shift
    local end=$(( $(date +%s%N) + secs * 1000000000 ))
    while :; do
        "$@" >/dev/null 2>&1 && return 0
        [ "$(date +%s%N)" -lt "$end" ] || return 1
        sleep 0.2
    done
}

e2e_on_err() {
    # Only the script's own shell reports; command substitutions inherit the trap.
    [ "$BASH_SUBSHELL" -eq 0 ] || return 0
    printf 'FAIL: line %s: `%s` exited %s\n' "$1" "$2" "$3"
}

# e2e_init NAME [TOOL...]: checks that we can run, then makes the scratch
# directory and the per-run prefix, and installs the cleanup.
e2e_init() {
    E2E_NAME=$1; shift
    [ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, TUN)"
    [ -c /dev/net/tun ] || skip "no /dev/net/tun"
    need ip nsenter unshare timeout mktemp sleep "$@"
    [ -x "$PY" ] || command -v "$PY" >/dev/null 2>&1 || skip "missing tool: python3"
    [ -x "$DDPNET" ] || skip "$DDPNET not built (make bin/ddpnet)"
    unshare --net true 2>/dev/null || skip "cannot create network namespaces"
    # Unique per run: parallel runs and leftovers of killed runs never collide.
    E2E_PFX="ddpe2e-$E2E_NAME-$$-"
    T=$(mktemp -d "/tmp/ddpnet-e2e-$E2E_NAME.XXXXXX")
    chmod 700 "$T"
    umask 077
    set -E
    trap 'e2e_on_err $LINENO "$BASH_COMMAND" $?' ERR
    trap e2e_exit EXIT
    trap 'exit 130' INT TERM HUP
    # wireguard-tools only looks in /run/wireguard; each node bind-mounts its
    # own run directory there, which needs the mount point to exist.
    mkdir -p /run/wireguard
}

e2e_exit() {
    local rc=$?
    set +e
    trap - ERR
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
        e2e_dump_logs
    fi
    e2e_cleanup
    if [ "$rc" -eq 0 ]; then say "PASS"; fi
    exit "$rc"
}

# On failure, the logs a person needs to see what went wrong.
e2e_dump_logs() {
    local f
    [ -n "$T" ] && [ -d "$T" ] || return 0
    for f in "$T"/*/up.log "$T"/*/*.out; do
        [ -s "$f" ] || continue
        printf -- '--- %s (last 40 lines)\n' "${f#"$T"/}"
        tail -n 40 "$f"
    done
}

e2e_cleanup() {
    local i n ns pid pids
    # ddpnet down first, so that the hosts blocks and sockets go the way a user's would.
    for (( i=${#E2E_UP[@]}-1; i>=0; i-- )); do
        n=${E2E_UP[i]}
        [ -f "$T/$n/pid" ] || continue
        nx "$n" timeout 10 "$DDPNET" down -i ddp0 --run-dir "$T/$n/run" >/dev/null 2>&1
    done
    for pid in "${E2E_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    # Everything still running inside our namespaces is ours (daemons,
    # wireguard-go, iperf3, torchrun, the holders).
    for ns in "${E2E_NETNS[@]}"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill $pids 2>/dev/null
    done
    sleep 0.3
    for ns in "${E2E_NETNS[@]}"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    done
    for pid in "${E2E_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    for (( i=${#E2E_NETNS[@]}-1; i>=0; i-- )); do
        ip netns del "${E2E_NETNS[i]}" 2>/dev/null
    done
    if [ -n "$T" ] && [ -d "$T" ]; then
        if [ "$E2E_KEEP" = 1 ]; then say "kept $T"; else rm -rf "$T"; fi
    fi
}

# Runs CMD... in NODE's network, UTS and mount namespaces.
nx() {
    local n=$1; shift
    nsenter -t "$(cat "$T/$n/pid")" -m -u -n -- "$@"
}

# Runs CMD... in the background inside NODE, output to $T/NODE/TAG.out;
# sets BG_PID.
nx_bg() {
    local n=$1 tag=$2; shift 2
    nx "$n" "$@" >"$T/$n/$tag.out" 2>&1 &
    BG_PID=$!
    E2E_PIDS+=("$BG_PID")
}

# e2e_netns NAME: a bare network namespace ${E2E_PFX}NAME with lo up.
e2e_netns() {
    local ns=$E2E_PFX$1
    ip netns add "$ns"
    E2E_NETNS+=("$ns")
    ip -n "$ns" link set lo up
}

# e2e_hub: the "switch" all nodes' eth0 hang off, in a namespace of its own
# so that nothing is added to the host's namespace.
e2e_hub() {
    e2e_netns hub
    ip -n "${E2E_PFX}hub" link add br0 type bridge forward_delay 0 stp_state 0
    ip -n "${E2E_PFX}hub" link set br0 up
}

# e2e_node NAME V4 V6: a node on the hub with underlay addresses
# $E2E_V4NET.V4/24 and $E2E_V6NET::V6/64 ("-" for none), its own hosts file
# and run directory, and the holder process that keeps its namespaces.
e2e_node() {
    local n=$1 v4=$2 v6=$3 ns=$E2E_PFX$1
    e2e_netns "$n"
    E2E_NODES+=("$n")
    mkdir -p "$T/$n/run"
    ip -n "${E2E_PFX}hub" link add "p-$n" type veth peer name eth0 netns "$ns"
    ip -n "${E2E_PFX}hub" link set "p-$n" master br0 up
    [ "$v4" = - ] || ip -n "$ns" addr add "$E2E_V4NET.$v4/24" dev eth0
    [ "$v6" = - ] || ip -n "$ns" addr add "$E2E_V6NET::$v6/64" dev eth0 nodad
    ip -n "$ns" link set eth0 up
    e2e_holder "$n"
}

# e2e_node_alone NAME: a node with no link yet (for routed topologies: see e2e_veth).
e2e_node_alone() {
    e2e_netns "$1"
    E2E_NODES+=("$1")
    mkdir -p "$T/$1/run"
    e2e_holder "$1"
}

# e2e_veth NS1 IF1 NS2 IF2: a veth pair between two of our namespaces
# (names without the prefix), both ends up.
e2e_veth() {
    ip -n "$E2E_PFX$1" link add "$2" type veth peer name "$4" netns "$E2E_PFX$3"
    ip -n "$E2E_PFX$1" link set "$2" up
    ip -n "$E2E_PFX$3" link set "$4" up
}

# Starts the process that holds NODE's UTS and mount namespaces open.
e2e_holder() {
    local n=$1 ns=$E2E_PFX$1
    printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$T/$n/hosts"
    chmod 644 "$T/$n/hosts"
    ip netns exec "$ns" unshare --mount --uts --propagation private \
        sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts &&
               mount --bind "$3" /run/wireguard &&
               echo $$ >"$4.tmp" && mv "$4.tmp" "$4" && exec sleep 3600' \
        holder "$n" "$T/$n/hosts" "$T/$n/run" "$T/$n/pid" >"$T/$n/holder.out" 2>&1 &
    E2E_PIDS+=("$!")
    wait_for 5 test -s "$T/$n/pid" || fail "node $n: namespace holder did not start: $(cat "$T/$n/holder.out")"
}

# e2e_key NODE: a private key in $T/NODE/key (mode 0600) and its public key
# in $T/NODE/pub, by `ddpnet genkey` / `ddpnet pubkey`.
e2e_key() {
    local n=$1
    mkdir -p "$T/$n"
    "$DDPNET" genkey >"$T/$n/key" || fail "ddpnet genkey failed"
    chmod 600 "$T/$n/key"
    "$DDPNET" pubkey <"$T/$n/key" >"$T/$n/pub" || fail "ddpnet pubkey failed"
    [ "$(wc -c <"$T/$n/pub")" -eq 45 ] || fail "ddpnet pubkey printed '$(cat "$T/$n/pub")', not a base64 key"
}
pub() { cat "$T/$1/pub"; }

# cluster_begin FILE [EXTRA-LINE...]: a [cluster] section on E2E_NET/E2E_PORT.
cluster_begin() {
    local f=$1; shift
    { printf '# written by tests/e2e (%s)\n[cluster]\nnetwork = %s\nport = %s\n' \
          "$E2E_NAME" "$E2E_NET" "$E2E_PORT"
      local l; for l in "$@"; do printf '%s\n' "$l"; done
    } >"$f"
}

# cluster_node FILE NAME PUBKEY ADDRESS [ENDPOINT]
cluster_node() {
    { printf '\n[node %s]\npublic-key = %s\naddress = %s\n' "$2" "$3" "$4"
      [ -z "${5:-}" ] || printf 'endpoint = %s\n' "$5"
    } >>"$1"
}

# ddp_up NODE [CLUSTER]: `ddpnet up` inside NODE with its key, run directory
# and hosts file; then ddp0 must exist and be up.
ddp_up() {
    local n=$1 c=${2:-$T/cluster.conf}
    E2E_UP+=("$n")
    if [ "$E2E_FOREGROUND" = 1 ]; then
        nx_bg "$n" daemon timeout 3600 "$DDPNET" up -c "$c" -k "$T/$n/key" \
            --run-dir "$T/$n/run" --hosts-file "$T/$n/hosts" --foreground
        wait_for 20 nx "$n" "$DDPNET" status --run-dir "$T/$n/run" ||
            fail "node $n: daemon (foreground) did not answer within 20 s"
    else
        if ! nx "$n" timeout 30 "$DDPNET" up -c "$c" -k "$T/$n/key" \
                --run-dir "$T/$n/run" --hosts-file "$T/$n/hosts" >"$T/$n/up.log" 2>&1; then
            fail "node $n: ddpnet up failed: $(cat "$T/$n/up.log")"
        fi
    fi
    nx "$n" ip link show dev ddp0 up >"$T/$n/link.out" 2>&1 ||
        fail "node $n: after up, no ddp0: $(cat "$T/$n/link.out")"
    [ -n "$(cat "$T/$n/link.out")" ] || fail "node $n: after up, ddp0 is not up"
}

# ddp_down NODE: `ddpnet down`; then no ddp0, no hosts block, no daemon.
ddp_down() {
    local n=$1 out
    out=$(nx "$n" timeout 20 "$DDPNET" down --run-dir "$T/$n/run" 2>&1) ||
        fail "node $n: ddpnet down failed: $out"
    wait_for 5 e2e_no_ddp0 "$n" || fail "node $n: ddp0 still exists after down"
    if grep -q 'ddpnet' "$T/$n/hosts"; then
        fail "node $n: hosts block left after down: $(cat "$T/$n/hosts")"
    fi
    wait_for 5 e2e_no_daemon "$n" || fail "node $n: a ddpnet process still runs after down"
}
e2e_no_ddp0() { ! nx "$1" ip link show dev ddp0 >/dev/null 2>&1; }
e2e_no_daemon() {
    local pid
    for pid in $(ip netns pids "$E2E_PFX$1"); do
        case "$(cat "/proc/$pid/comm" 2>/dev/null)" in ddpnet*) return 1 ;; esac
    done
    return 0
}

# ddp_status NODE [ARGS...]: `ddpnet status` inside NODE.
ddp_status() {
    local n=$1; shift
    nx "$n" timeout 10 "$DDPNET" status --run-dir "$T/$n/run" "$@"
}

# wg_in NODE ARGS...: stock `wg` inside NODE (finds NODE's run directory).
wg_in() {
    local n=$1; shift
    nx "$n" timeout 10 wg "$@"
}

# ping_ok FROM DEST: a first reply within 15 s (the handshake may be under
# way), then 3 of 3 echoes answered, no duplicates.
ping_ok() {
    local from=$1 dest=$2 out
    out=$(nx "$from" ping -n -c 1 -i 0.5 -w 15 "$dest" 2>&1) ||
        fail "ping $from -> $dest: no reply within 15 s: $out"
    out=$(nx "$from" ping -n -c 3 -i 0.2 -w 6 "$dest" 2>&1) ||
        fail "ping $from -> $dest: lost echoes: $out"
    case "$out" in *DUP!*) fail "ping $from -> $dest: duplicate replies: $out" ;; esac
    [ "$E2E_VERBOSE" = 1 ] && say "ping $from -> $dest ok"
    return 0
}

# ping_fails FROM DEST [SECONDS]: not a single reply within SECONDS (default 5).
ping_fails() {
    local from=$1 dest=$2 secs=${3:-5} out
    if out=$(nx "$from" ping -n -c 100 -i 0.25 -w "$secs" "$dest" 2>&1); then
        fail "ping $from -> $dest: expected no reply, got: $out"
    fi
    case "$out" in *" 0 received"*) return 0 ;; esac
    fail "ping $from -> $dest: expected no reply, got: $out"
}

# iperf_ok SERVER SERVER-ADDR CLIENT [-R]: a 3 s iperf3 TCP run; prints and
# checks the bytes the receiver got (>0).
iperf_ok() {
    local srv=$1 addr=$2 cli=$3 rev=${4:-} bytes dir
    dir="$cli -> $srv"
    [ -z "$rev" ] || dir="$srv -> $cli"
    nx_bg "$srv" iperf3-server timeout 40 iperf3 -s -1 -B "$addr" -p 5201
    local spid=$BG_PID
    wait_for 10 e2e_listening "$srv" 5201 || fail "iperf3 server on $srv did not start: $(cat "$T/$srv/iperf3-server.out")"
    if ! nx "$cli" timeout 30 iperf3 -c "$addr" -p 5201 -t 3 -J $rev >"$T/$cli/iperf3.json" 2>&1; then
        fail "iperf3 $dir failed: $(tail -n 20 "$T/$cli/iperf3.json")"
    fi
    bytes=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(int(d["end"]["sum_received"]["bytes"]))' \
              "$T/$cli/iperf3.json" 2>/dev/null) || fail "iperf3 $dir: unreadable result: $(tail -n 20 "$T/$cli/iperf3.json")"
    [ "$bytes" -gt 0 ] || fail "iperf3 $dir: moved 0 bytes"
    wait "$spid" 2>/dev/null
    say "iperf3 $dir: $bytes bytes in 3 s ($(( bytes * 8 / 3 / 1000000 )) Mbit/s)"
}
e2e_listening() {
    local out
    out=$(nx "$1" ss -Hltn "sport = :$2") && [ -n "$out" ]
}

# rx_packets NODE [DEV]: the packets DEV (default ddp0) received, as the kernel counts.
rx_packets() {
    nx "$1" cat "/sys/class/net/${2:-ddp0}/statistics/rx_packets"
}

# wg_handshakes_ok NODE N: stock `wg show ddp0 latest-handshakes` lists N
# peers, each with a handshake (non-zero time).
wg_handshakes_ok() {
    local n=$1 want=$2 out lines zero
    out=$(wg_in "$n" show ddp0 latest-handshakes 2>&1) || fail "node $n: wg show ddp0 failed: $out"
    lines=$(printf '%s\n' "$out" | grep -c .) || true
    [ "$lines" -eq "$want" ] || fail "node $n: wg show lists $lines peers, want $want: $out"
    zero=$(printf '%s\n' "$out" | awk '$2 == 0' | wc -l)
    [ "$zero" -eq 0 ] || fail "node $n: wg show: peers without a handshake: $out"
}

# status_handshakes_ok NODE PEER...: `ddpnet status --json` has a row for
# each named peer, and each row reports a handshake (a non-zero, non-null
# age or time that is not "never").
status_handshakes_ok() {
    local n=$1; shift
    local out
    out=$(ddp_status "$n" --json 2>&1) || fail "node $n: ddpnet status --json failed: $out"
    printf '%s\n' "$out" >"$T/$n/status.json"
    "$PY" - "$T/$n/status.json" "$@" <<'PYEOF' || fail "node $n: ddpnet status: $(cat "$T/$n/status.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
rows = []
def walk(v):
    if isinstance(v, dict):
        rows.append(v)
        for x in v.values(): walk(x)
    elif isinstance(v, list):
        for x in v: walk(x)
walk(doc)
bad = []
for name in sys.argv[2:]:
    row = next((r for r in rows if name in [str(x) for x in r.values()]), None)
    if row is None:
        bad.append(name + ": no row"); continue
    hs = [(k, v) for k, v in row.items() if "handshake" in k.lower()]
    if not hs:
        bad.append(name + ": no handshake field"); continue
    if not any(v not in (None, 0, "", "never", "-", False) for k, v in hs):
        bad.append("%s: no handshake (%s)" % (name, hs))
if bad:
    print("; ".join(bad)); sys.exit(1)
PYEOF
}
