# SPDX-License-Identifier: MIT
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
# failure; E2E_DEBUG=1 adds --debug), E2E_KEEP=1 (keep the scratch directory), E2E_VERBOSE=1,
# E2E_MESH_LOAD_FACTOR (4: see e2e_mesh_limit_ms).

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
# e2e_torch_missing: why torch cannot run here (empty when it can), for a
# script that needs it in one step only (skip_step).
e2e_torch_missing() {
    command -v torchrun >/dev/null 2>&1 || { echo "missing tool: torchrun"; return; }
    "$PY" -c 'import torch, torch.distributed' 2>/dev/null ||
        echo "$PY cannot import torch (apt-get install python3-torch)"
}
# skip_step REASON: the step that needs what is missing does not run; the
# rest of the script does. Under DDPNET_NO_SKIP=1 (CI) the script fails
# instead, unless docs/testing.md lists "SCRIPT/step" as an expected skip.
skip_step() {
    if [ "${DDPNET_NO_SKIP:-0}" = 1 ] &&
       ! "$E2E_ROOT/tests/expected_skip.sh" "$E2E_NAME/step"; then
        fail "a step would be skipped ($*), and DDPNET_NO_SKIP=1"
    fi
    printf 'SKIP (this step only): %s\n' "$*"
}
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

# On failure, the logs a person needs to see what went wrong, and what the
# daemons still up say of their peers (the daemons log to syslog, which a
# test host may not keep).
e2e_dump_logs() {
    local f n
    [ -n "$T" ] && [ -d "$T" ] || return 0
    for f in "$T"/*/up.log "$T"/*/*.out; do
        [ -s "$f" ] || continue
        printf -- '--- %s (last 40 lines)\n' "${f#"$T"/}"
        tail -n 40 "$f"
    done
    for n in "${E2E_UP[@]}"; do
        [ -S "$T/$n/run/ddp0.sock" ] || continue
        printf -- '--- %s: ddpnet status, wg show\n' "$n"
        ddp_status "$n" 2>&1 | tail -n 20
        wg_in "$n" show ddp0 2>&1 | tail -n 30
    done
}

# Kills first, then tidies: every process of ours (what nx_bg started,
# and everything inside our namespaces: daemons, wireguard-go, iperf3,
# torchrun, the holders) gets SIGTERM -- a daemon takes it as `down`,
# removing its hosts block and ddp0 -- and SIGKILL if still there after
# E2E_CLEANUP_GRACE_S (2); then the namespaces and the scratch directory
# go. Bounded by the grace, whatever state the script died in, so a
# script killed for its time limit (run.sh gives 10 s) leaves nothing
# running for the next.
e2e_cleanup() {
    local i ns pid pids end
    for pid in "${E2E_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    for ns in "${E2E_NETNS[@]}"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill $pids 2>/dev/null
    done
    end=$(( $(date +%s%N) + ${E2E_CLEANUP_GRACE_S:-2} * 1000000000 ))
    while [ "$(date +%s%N)" -lt "$end" ]; do
        pids=""
        for ns in "${E2E_NETNS[@]}"; do pids+=$(ip netns pids "$ns" 2>/dev/null); done
        [ -n "$pids" ] || break
        sleep 0.1
    done
    for ns in "${E2E_NETNS[@]}"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    done
    for pid in "${E2E_PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
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
    # The machine's DNS server is out of a namespace's reach: each lookup
    # of a name outside the hosts file would wait for it (10 s, glibc's
    # timeout and retry) where a cloud's DNS answers at once. A resolver on
    # the node's own loopback, where nothing listens, answers at once
    # (refused), as that DNS would say "no such name". privileges.sh binds
    # a silent one on top where it wants the wait.
    printf 'nameserver 127.0.0.1\noptions attempts:1\n' >"$T/$n/resolv.conf"
    chmod 644 "$T/$n/resolv.conf"
    ip netns exec "$ns" unshare --mount --uts --propagation private \
        sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts &&
               mount --bind "$3" /run/wireguard &&
               mount --bind "$5" /etc/resolv.conf &&
               echo $$ >"$4.tmp" && mv "$4.tmp" "$4" && exec sleep 3600' \
        holder "$n" "$T/$n/hosts" "$T/$n/run" "$T/$n/pid" "$T/$n/resolv.conf" \
        >"$T/$n/holder.out" 2>&1 &
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

# ddp_up NODE [CLUSTER]: `ddpnet up` inside NODE with its key, run directory,
# hosts file and state directory; then ddp0 must exist and be up.
ddp_up() {
    local n=$1 c=${2:-$T/cluster.conf} u
    for u in "${E2E_UP[@]}"; do [ "$u" != "$n" ] || { n=""; break; }; done
    [ -z "$n" ] || E2E_UP+=("$n")   # once, though it comes up again
    n=$1
    if [ "$E2E_FOREGROUND" = 1 ]; then
        nx_bg "$n" daemon timeout 3600 "$DDPNET" up -c "$c" -k "$T/$n/key" \
            --run-dir "$T/$n/run" --hosts-file "$T/$n/hosts" --state-dir "$T/$n/state" --foreground \
            ${E2E_DEBUG:+--debug}
        wait_for 20 nx "$n" "$DDPNET" status --run-dir "$T/$n/run" ||
            fail "node $n: daemon (foreground) did not answer within 20 s"
    else
        if ! nx "$n" timeout 30 "$DDPNET" up -c "$c" -k "$T/$n/key" \
                --run-dir "$T/$n/run" --hosts-file "$T/$n/hosts" --state-dir "$T/$n/state" \
                >"$T/$n/up.log" 2>&1; then
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

# --- etcd ----------------------------------------------------------------------
# e2e_etcd_single NS ADDR: one etcd member in namespace NS, clients on
# ADDR:2379, its data under $T/NS; returns once it answers health, fails
# the test (with etcd's last lines) when it does not within 30 s.
e2e_etcd_single() {
    local ns=$1 addr=$2
    mkdir -p "$T/$ns/data"
    nx_bg "$ns" etcd timeout 900 etcd --name e1 --data-dir "$T/$ns/data" \
        --listen-client-urls "http://$addr:2379" --advertise-client-urls "http://$addr:2379" \
        --listen-peer-urls "http://$addr:2380" --initial-advertise-peer-urls "http://$addr:2380" \
        --initial-cluster "e1=http://$addr:2380" --initial-cluster-state new
    wait_for 30 _etcd_healthy "$ns" "$addr" ||
        fail "etcd did not become healthy: $(tail -n 5 "$T/$ns/etcd.out")"
}
_etcd_healthy() {
    nx "$1" etcdctl --endpoints "$2:2379" --dial-timeout 1s endpoint health >/dev/null 2>&1
}

# --- NAT topologies: VPC gateways, firewalls, counters, mesh timing ----------
# (nat_traversal.sh, mesh16.sh). The hub stands for the internet, with
# "public" addresses in $E2E_INET.0.0/16 (a shared-address range, inside our
# namespaces only). A VPC is a router namespace: wan0 on the hub, a LAN
# bridge lan0 at $E2E_LAN.1/24, NAT from the LAN to wan0, and a gateway
# firewall that lets nothing unsolicited in from the internet. Every VPC
# uses the same LAN range, as two default VPCs do.
E2E_INET=100.64
E2E_LAN=172.31.1

# e2e_public_node NAME X.Y: a node on the hub at $E2E_INET.X.Y/16.
e2e_public_node() {
    local n=$1 ns=$E2E_PFX$1
    e2e_netns "$n"
    E2E_NODES+=("$n")
    mkdir -p "$T/$n/run"
    ip -n "${E2E_PFX}hub" link add "p-$n" type veth peer name eth0 netns "$ns"
    ip -n "${E2E_PFX}hub" link set "p-$n" master br0 up
    ip -n "$ns" addr add "$E2E_INET.$2/16" dev eth0
    ip -n "$ns" link set eth0 up
    e2e_holder "$n"
}

# e2e_router NAME X.Y MODE: a VPC gateway with wan0 at $E2E_INET.X.Y/16.
# MODE cone: masquerade, which keeps the source port where it is free and,
# while any flow from a host:port is tracked, gives that host:port's new
# flows the same mapping: endpoint-independent for as long as the node
# keeps one flow alive; symmetric: masquerade random,fully-random, a new
# port per destination; eim: masquerade plus the static per-host mappings
# of e2e_router_map (the same port even after every flow expired).
# The gateway drops unsolicited packets to itself in its input hook, so
# they never become conntrack entries: an unreplied entry for
# (peer -> gateway:port) would make masquerade give the next outgoing flow
# to that peer another port, and no hole could be punched.
e2e_router() {
    local r=$1 wan=$2 mode=$3 ns=$E2E_PFX$1 nat
    case "$mode" in
    cone|eim) nat="masquerade" ;;
    symmetric) nat="masquerade random,fully-random" ;;
    *) fail "e2e_router $r: unknown NAT mode '$mode'" ;;
    esac
    e2e_netns "$r"
    ip -n "${E2E_PFX}hub" link add "p-$r" type veth peer name wan0 netns "$ns"
    ip -n "${E2E_PFX}hub" link set "p-$r" master br0 up
    ip -n "$ns" addr add "$E2E_INET.$wan/16" dev wan0
    ip -n "$ns" link set wan0 up
    ip -n "$ns" link add lan0 type bridge forward_delay 0 stp_state 0
    ip -n "$ns" addr add "$E2E_LAN.1/24" dev lan0
    ip -n "$ns" link set lan0 up
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
    # LAN to LAN stays plain bridging, never the IP hooks (br_netfilter).
    ip netns exec "$ns" sysctl -qw net.bridge.bridge-nf-call-iptables=0 2>/dev/null || true
    ip netns exec "$ns" nft -f - <<EOF || fail "router $r: nftables rules refused"
table ip nat {
    chain postrouting {
        type nat hook postrouting priority srcnat; policy accept;
        oifname "wan0" $nat
    }
}
table inet gw {
    chain input {
        type filter hook input priority filter; policy accept;
        iifname "wan0" ct state established,related accept
        iifname "wan0" drop
    }
    chain forward {
        type filter hook forward priority filter; policy accept;
        iifname "wan0" ct state established,related accept
        iifname "wan0" drop
    }
}
EOF
}

# e2e_router_map ROUTER HOST PORT WANPORT: on an eim gateway, UDP from
# $E2E_LAN.HOST:PORT always leaves as wan0's address :WANPORT.
e2e_router_map() {
    local ns=$E2E_PFX$1 wan
    wan=$(ip -n "$ns" -4 -o addr show dev wan0 | awk '{ split($4, a, "/"); print a[1] }')
    ip netns exec "$ns" nft insert rule ip nat postrouting oifname wan0 \
        ip saddr "$E2E_LAN.$2" udp sport "$3" snat to "$wan:$4" ||
        fail "router $1: mapping for $E2E_LAN.$2:$3 refused"
}

# e2e_lan_node ROUTER NAME HOST: a node in ROUTER's LAN at $E2E_LAN.HOST/24,
# default route via the gateway.
e2e_lan_node() {
    local r=$1 n=$2 ns=$E2E_PFX$2
    e2e_netns "$n"
    E2E_NODES+=("$n")
    mkdir -p "$T/$n/run"
    ip -n "$E2E_PFX$r" link add "l-$n" type veth peer name eth0 netns "$ns"
    ip -n "$E2E_PFX$r" link set "l-$n" master lan0 up
    ip -n "$ns" addr add "$E2E_LAN.$3/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" route add default via "$E2E_LAN.1"
    e2e_holder "$n"
}

# e2e_firewall NODE PORT: a host firewall on NODE's underlay link eth0 (as a
# security group would be): only established/related traffic and UDP to
# PORT come in; the rest is dropped and counted. Traffic inside the overlay
# (ddp0) and on lo is not filtered.
e2e_firewall() {
    ip netns exec "$E2E_PFX$1" nft -f - <<EOF || fail "node $1: firewall rules refused"
table inet ddpfw {
    counter dropped { }
    chain input {
        type filter hook input priority filter; policy accept;
        iifname != "eth0" accept
        ct state established,related accept
        udp dport $2 accept
        counter name dropped drop
    }
}
EOF
}

# e2e_fw_dropped NODE: the packets NODE's firewall has dropped so far.
e2e_fw_dropped() {
    ip netns exec "$E2E_PFX$1" nft list counter inet ddpfw dropped |
        sed -n 's/.*packets \([0-9]*\) bytes.*/\1/p'
}

# e2e_udp_counters NODE PORT: counts the UDP bytes NODE receives on and
# sends from PORT (every one, before any firewall decides).
e2e_udp_counters() {
    ip netns exec "$E2E_PFX$1" nft -f - <<EOF || fail "node $1: counter rules refused"
table inet ddpcount {
    counter rx { }
    counter tx { }
    chain in {
        type filter hook input priority raw; policy accept;
        udp dport $2 counter name rx
    }
    chain out {
        type filter hook output priority raw; policy accept;
        udp sport $2 counter name tx
    }
}
EOF
}

# e2e_udp_bytes NODE: "RX TX", the bytes e2e_udp_counters counted so far.
e2e_udp_bytes() {
    local ns=$E2E_PFX$1 rx tx
    rx=$(ip netns exec "$ns" nft list counter inet ddpcount rx | sed -n 's/.*bytes \([0-9]*\).*/\1/p')
    tx=$(ip netns exec "$ns" nft list counter inet ddpcount tx | sed -n 's/.*bytes \([0-9]*\).*/\1/p')
    [ -n "$rx" ] && [ -n "$tx" ] || fail "node $1: no UDP counters (e2e_udp_counters first)"
    echo "$rx $tx"
}

# e2e_reset: every node down (checked, as ddp_down does) and every
# namespace and process made so far gone, the scratch directory kept: a
# script can then build another topology with the same node names.
e2e_reset() {
    local i n ns pid pids
    for (( i=${#E2E_UP[@]}-1; i>=0; i-- )); do
        n=${E2E_UP[i]}
        [ -f "$T/$n/pid" ] && ddp_down "$n"
    done
    for ns in "${E2E_NETNS[@]}"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -z "$pids" ] || kill $pids 2>/dev/null || true
    done
    for pid in "${E2E_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${E2E_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    for (( i=${#E2E_NETNS[@]}-1; i>=0; i-- )); do
        ip netns del "${E2E_NETNS[i]}" 2>/dev/null || true
    done
    for n in "${E2E_NODES[@]}"; do rm -f "$T/$n/pid"; done
    E2E_NETNS=() E2E_NODES=() E2E_UP=() E2E_PIDS=()
}

# e2e_mesh_time T0 SECONDS NODE...: every NODE pings every other NODE by
# name over the overlay, all at once: one pinger per node sends an echo
# to each peer not yet answered every 100 ms, until all have answered or
# SECONDS after T0 (date +%s%N). Sets MESH_MS (the last first-answer, in
# ms after T0; empty if some pair never answered), MESH_MISSING ("a->b
# ..."), and prints the slowest pair.
e2e_mesh_time() {
    local t0=$1 secs=$2 n m pids=() kind peer ms worst=0 worst_pair="" answered=0 i
    shift 2
    e2e_meshping_py
    for n in "$@"; do
        local others=()
        i=0
        for m in "$@"; do
            [ "$m" != "$n" ] || continue
            i=$((i + 1))
            # The baseline's pinger asks its own loopback, one address a peer.
            if [ -n "${E2E_MESH_BARE:-}" ]; then others+=("$m=127.0.1.$i"); else others+=("$m"); fi
        done
        nx_bg "$n" meshping "$PY" "$T/meshping.py" "$t0" "$secs" "${others[@]}"
        pids+=("$BG_PID")
    done
    for n in "${pids[@]}"; do wait "$n" 2>/dev/null || true; done
    MESH_MISSING=""
    for n in "$@"; do
        grep -q '^done' "$T/$n/meshping.out" ||
            fail "node $n: mesh pinger failed: $(tail -n 5 "$T/$n/meshping.out")"
        while read -r kind peer ms; do
            case "$kind" in
            ok) answered=$((answered + 1))
                if [ "$ms" -gt "$worst" ]; then worst=$ms worst_pair="$n->$peer"; fi ;;
            missing) MESH_MISSING="$MESH_MISSING $n->$peer" ;;
            esac
        done <"$T/$n/meshping.out"
    done
    MESH_MISSING=${MESH_MISSING# }
    ms="$(( worst / 1000 )).$(printf '%03d' $(( worst % 1000 ))) s"
    MESH_MS=$worst
    [ -z "$MESH_MISSING" ] || MESH_MS=""
    [ -z "${E2E_MESH_BARE:-}" ] || return 0     # e2e_mesh_baseline says it
    if [ -n "$MESH_MS" ]; then
        say "full mesh ($answered pairs) $ms after T0 (slowest: $worst_pair)"
    else
        say "no full mesh within $secs s: $(wc -w <<<"$MESH_MISSING") pairs never answered; the $answered that did, within $ms"
    fi
}

# e2e_mesh_baseline NODE...: the baseline of e2e_mesh_time in this run, as
# loaded as the machine is now: the same pingers, started the same way in
# the same NODEs right after a stand-in for the last `up` (a no-op in the
# last NODE), each asking 127.0.1.1..N-1 on its own loopback instead of its
# peers, so with no ddpnet at all. Sets MESH_BASE_MS.
e2e_mesh_baseline() {
    local t0 last=${*: -1}
    t0=$(date +%s%N)
    nx "$last" true
    E2E_MESH_BARE=1 e2e_mesh_time "$t0" 30 "$@"
    [ -n "$MESH_MS" ] || fail "the mesh baseline (each node's own loopback) did not answer within 30 s: $MESH_MISSING"
    MESH_BASE_MS=$MESH_MS
    say "mesh baseline: $# pingers answered by their own loopback $MESH_BASE_MS ms after the stand-in up"
}

# e2e_mesh_limit_ms TARGET_S BASE_MS: the most e2e_mesh_time may take, the
# target plus what this machine's load costs now: E2E_MESH_LOAD_FACTOR
# (4) times the baseline. The baseline (the pingers' own start) is 0.1-0.4
# s on an idle 2-core machine and grows with the load that slows the
# daemons too, which start and schedule as many processes; a mesh that
# forms late by more than that fails, loaded or not.
e2e_mesh_limit_ms() {
    echo $(( $1 * 1000 + ${E2E_MESH_LOAD_FACTOR:-4} * $2 ))
}

# Writes $T/meshping.py, the pinger e2e_mesh_time runs in each node.
e2e_meshping_py() {
    [ -f "$T/meshping.py" ] && return 0
    cat >"$T/meshping.py" <<'PYEOF'
# meshping T0_NS SECONDS NAME[=ADDR]...: ICMP echo to each NAME (resolved
# in this node's hosts file, or at ADDR) every 100 ms until it answers or
# T0 + SECONDS; prints "ok NAME MS" (first answer, ms after T0) or
# "missing NAME", then "done".
import os, select, socket, struct, sys, time

def checksum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff

t0, secs, names = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
end = t0 + int(secs * 1e9)
sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
ident = os.getpid() & 0xffff
addr, got, seq = {}, {}, 0
for i, n in enumerate(names):
    if "=" in n:
        name, a = n.split("=", 1)
        names[i], addr[name] = name, a
while len(got) < len(names) and time.time_ns() < end:
    tick = time.time_ns() + 100_000_000
    seq = (seq + 1) & 0xffff
    for n in names:
        if n in got:
            continue
        try:
            if n not in addr:
                addr[n] = socket.gethostbyname(n)
        except OSError:
            continue  # the hosts block is not there yet
        hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
        pkt = struct.pack("!BBHHH", 8, 0, checksum(hdr + b"meshping"), ident, seq) + b"meshping"
        try:
            sock.sendto(pkt, (addr[n], 0))
        except OSError:
            pass  # no route or no key yet: try again next tick
    while True:
        left = (min(tick, end) - time.time_ns()) / 1e9
        if left <= 0 or not select.select([sock], [], [], left)[0]:
            break
        data, src = sock.recvfrom(2048)
        ihl = (data[0] & 0x0f) * 4
        typ, _, _, rid, _ = struct.unpack("!BBHHH", data[ihl:ihl + 8])
        if typ != 0 or rid != ident:
            continue
        for n, a in addr.items():
            if a == src[0] and n not in got:
                got[n] = (time.time_ns() - t0) // 1_000_000
for n in names:
    print("ok %s %d" % (n, got[n]) if n in got else "missing %s" % n)
print("done", flush=True)
PYEOF
    chmod 644 "$T/meshping.py"
}

# e2e_authority_hub NODE...: the hub, each NODE on it (the first at
# $E2E_V4NET.1, the next at .2, ...) with its key, and a cluster
# authority: sets KEY (its key file, $T/authority/authority.key) and AUTH
# (its public key, for the file's `authority =`).
e2e_authority_hub() {
    local n i=0
    e2e_hub
    for n in "$@"; do
        i=$((i + 1))
        e2e_node "$n" "$i" -
        e2e_key "$n"
    done
    KEY=$T/authority/authority.key
    mkdir -p "$T/authority"
    "$DDPNET" authority init -o "$KEY" >/dev/null 2>&1 || fail "ddpnet authority init failed"
    AUTH=$("$DDPNET" authority pubkey -a "$KEY")
}

# e2e_routed_pair: node-a 10.201.1.2 and node-b 10.201.2.2, each on a
# link of its own to the router namespace rt (ra 10.201.1.1, rb
# 10.201.2.1), which forwards: a path between two nodes that the test
# can police, delay or NAT in one place (flows.sh, flows_order.sh).
e2e_routed_pair() {
    e2e_node_alone node-a
    e2e_node_alone node-b
    e2e_netns rt
    e2e_veth node-a eth0 rt ra
    e2e_veth node-b eth0 rt rb
    ip -n "${E2E_PFX}rt" addr add 10.201.1.1/24 dev ra
    ip -n "${E2E_PFX}rt" addr add 10.201.2.1/24 dev rb
    ip netns exec "${E2E_PFX}rt" sysctl -qw net.ipv4.ip_forward=1
    ip -n "${E2E_PFX}node-a" addr add 10.201.1.2/24 dev eth0
    ip -n "${E2E_PFX}node-b" addr add 10.201.2.2/24 dev eth0
    ip -n "${E2E_PFX}node-a" route add default via 10.201.1.1
    ip -n "${E2E_PFX}node-b" route add default via 10.201.2.1
}

# e2e_routed_pair_up METRICS_PORT: keys, the cluster file of node-a and
# node-b (metrics on 127.0.0.1:METRICS_PORT) and both up, each peer seen
# at its default underlay flows (4) by the other.
e2e_routed_pair_up() {
    local n
    for n in node-a node-b; do e2e_key "$n"; done
    cluster_begin "$T/cluster.conf" "metrics = 127.0.0.1:$1"
    cluster_node "$T/cluster.conf" node-a "$(pub node-a)" 10.77.0.1 "10.201.1.2:$E2E_PORT"
    cluster_node "$T/cluster.conf" node-b "$(pub node-b)" 10.77.0.2 "10.201.2.2:$E2E_PORT"
    for n in node-a node-b; do ddp_up "$n"; done
    ping_ok node-a 10.77.0.2
    wait_for 10 e2e_flows_are node-a node-b 4 || fail "node-a's status of node-b: $(e2e_flows_of node-a node-b) flows, want 4"
    wait_for 10 e2e_flows_are node-b node-a 4 || fail "node-b's status of node-a: $(e2e_flows_of node-b node-a) flows, want 4"
    say "status: $(ddp_status node-a | grep node-b)"
}

# e2e_flows_of NODE PEER: the underlay flows NODE's status gives for PEER
# ("-": none); e2e_flows_are NODE PEER N: that it is N.
e2e_flows_of() {
    ddp_status "$1" --json | "$PY" -c '
import json, sys
for p in json.load(sys.stdin)["peers"]:
    if p["name"] == sys.argv[1]:
        print(p.get("flows") if p.get("flows") is not None else "-")' "$2"
}
e2e_flows_are() { [ "$(e2e_flows_of "$1" "$2")" = "$3" ]; }

# e2e_replays NODE PORT: the replay drops NODE's daemon counted, from its
# metrics on 127.0.0.1:PORT.
e2e_replays() {
    nx "$1" "$PY" -c '
import urllib.request, sys
for l in urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode().splitlines():
    if l.startswith("ddpnet_packets_dropped_total{") and "reason=\"replay\"" in l:
        print(int(float(l.rsplit(" ", 1)[1])))' "$2"
}

# e2e_ofo NODE: the kernel's TcpExtTCPOFOQueue so far in NODE.
e2e_ofo() { nx "$1" nstat -az TcpExtTCPOFOQueue | awk '$1 == "TcpExtTCPOFOQueue" { print $2 }'; }

# e2e_peer_path NODE PEER: prints "PATH VIA RTT_MS ENDPOINT" for PEER from
# NODE's `ddpnet status --json` (the path fields of issue 5; "-" where
# empty or null). Else prints why not (a missing field is named) and
# returns 1: got=$(e2e_peer_path ...) || fail "...: $got".
e2e_peer_path() {
    local n=$1 peer=$2 out
    if ! out=$(ddp_status "$n" --json 2>&1); then
        echo "ddpnet status --json failed: $out"
        return 1
    fi
    printf '%s\n' "$out" >"$T/$n/status.json"
    "$PY" - "$T/$n/status.json" "$peer" <<'PYEOF'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except ValueError as e:
    print("ddpnet status --json is not JSON (%s): %s" % (e, open(sys.argv[1]).read()[:300])); sys.exit(1)
row = next((p for p in doc.get("peers", []) if p.get("name") == sys.argv[2]), None)
if row is None:
    print("ddpnet status --json has no row for %s" % sys.argv[2]); sys.exit(1)
missing = [k for k in ("path", "via", "rtt_ms") if k not in row]
if missing:
    print("ddpnet status --json: field(s) %s missing in the row of %s (issue 5: path, via, rtt_ms): %s"
          % (", ".join(missing), sys.argv[2], json.dumps(row))); sys.exit(1)
val = lambda k: "-" if row.get(k) in (None, "") else str(row[k])
print(val("path"), val("via"), val("rtt_ms"), val("endpoint"))
PYEOF
}

# e2e_allreduce_script: $T/allreduce.py, one Gloo all_reduce of
# ALLREDUCE_MIB MiB (0: one number) where each rank adds rank + 1; it
# prints "allreduce host=H rank=R world=W sum=S want=S bytes=B secs=T
# master=M" and exits 1 unless every element is the sum it should be.
e2e_allreduce_script() {
    cat >"$T/allreduce.py" <<'PYEOF'
import os
import socket
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
n = max(1, int(os.environ.get("ALLREDUCE_MIB", "0")) * 262144)   # float32s
t = torch.full((n,), float(rank + 1))
t0 = time.time()
dist.all_reduce(t)
secs = time.time() - t0
want = world * (world + 1) / 2
ok = bool((t == want).all())
print("allreduce host=%s rank=%d world=%d sum=%g want=%g bytes=%d secs=%.2f master=%s"
      % (socket.gethostname(), rank, world, t[0].item() if ok else t.min().item(), want,
         4 * n, secs, os.environ.get("MASTER_ADDR")), flush=True)
dist.barrier()
dist.destroy_process_group()
raise SystemExit(0 if ok else 1)
PYEOF
    chmod 644 "$T/allreduce.py"
}

# e2e_derived_octet PUB [INDEX]: the last byte of the address a certificate with no
# --address gets in 10.77.0.0/24 at that index: the first 8 bytes of
# BLAKE2b-256("ddpnet-address" || key) (index 0) or of
# BLAKE2b-256("ddpnet-address-index" || u8 index || key), as a number,
# modulo 254, plus 1.
e2e_derived_octet() {
    local hex hi lo i=${2:-0}
    hex=$({ if [ "$i" = 0 ]; then printf 'ddpnet-address'
            else printf 'ddpnet-address-index'; printf "\\$(printf %03o "$i")"; fi
            printf '%s' "$1" | base64 -d; } | b2sum -l 256 | cut -c1-16)
    hi=$((16#${hex:0:8})) lo=$((16#${hex:8:8}))
    echo $(( ((hi % 254) * ((1 << 32) % 254) + lo % 254) % 254 + 1 ))
}

# e2e_allreduce NODE...: torchrun on every NODE (c10d rendezvous at the
# first NODE by name, port 29500; Gloo over ddp0, as torch.sh runs it);
# each rank adds rank + 1 and all must see the sum. TORCH_TIMEOUT bounds it;
# ALLREDUCE_MIB (default 0: one number) makes the tensor that many MiB of
# float32s, every one of which must hold the sum.
e2e_allreduce() {
    local n tpids=() failed="" rc line world=$# first=$1 want i
    want=$(( world * (world + 1) / 2 ))
    e2e_allreduce_script
    for n in "$@"; do
        nx_bg "$n" torchrun timeout -k 10 "${TORCH_TIMEOUT:-240}" sh -c '
            eval "$("$1" env --run-dir "$2")" || exit 3
            export OMP_NUM_THREADS=1
            exec torchrun --nnodes "$4" --nproc_per_node 1 --rdzv_backend=c10d \
                --rdzv_endpoint="$5:29500" --rdzv_id=ddpnet-e2e --max_restarts 0 \
                --redirects 2 --tee 1 "$3"' sh "$DDPNET" "$T/$n/run" "$T/allreduce.py" "$world" "$first"
        tpids+=("$BG_PID")
    done
    i=0
    for n in "$@"; do
        rc=0; wait "${tpids[i]}" || rc=$?
        [ "$rc" -eq 0 ] || failed="$failed $n(exit $rc)"
        i=$((i + 1))
    done
    [ -z "$failed" ] || fail "torchrun failed on:$failed"
    for n in "$@"; do
        line=$(grep -h 'allreduce host=' "$T/$n/torchrun.out" | tail -n 1)
        say "$n: ${line#*allreduce }"
        case "$line" in *"host=$n "*"world=$world sum=$want "*) ;;
            *) fail "$n: no all_reduce result with sum $want: $(tail -n 20 "$T/$n/torchrun.out")" ;; esac
    done
}

# doc_block PAGE FIRST: the shell block of PAGE (docs/NAME.md) whose first
# line is FIRST, as the page has it, without its fences: what a test runs
# of a page is what the page says.
doc_block() {
    awk -v first="$2" '
        !inb && /^```(sh|bash)$/ { inb = 1; n = 0; body = ""; next }
        inb && /^```$/ { inb = 0; if (hit) { printf "%s", body; found = 1; exit } next }
        inb { if (n++ == 0) hit = ($0 == first); body = body $0 "\n" }
        END { exit !found }' "$E2E_ROOT/$1"
}
