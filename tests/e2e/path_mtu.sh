#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: long
# Paths that carry less than the link (issue 13): no black hole, and each
# peer's path MTU learned. The NAT testbed of nat_traversal.sh (two VPCs
# behind NAT gateways, one public node; every node's own link at 1500, so
# ddp0 is 1420), with the "internet" narrowed in three ways:
#   icmp    the gateways' internet links at MTU 1400: what a node sends
#           through its gateway that is too big gets ICMP fragmentation-
#           needed; what comes in too big is dropped without a word
#   silent  the gateways drop every packet over 1400 bytes, both ways, and
#           say nothing (a middlebox, an IPsec hop that does not tell)
#   ab      only between node-a's and node-b's gateways, silently; a <-> c
#           stays at 1500 (a's packets to c must stay full-size)
# Each case runs first on the same testbed left at 1500 (the baseline, in
# the same run), then narrowed, with the daemons started afresh on it.
# Checked in each: a -> b over ddp0 goes direct; iperf3 a -> b keeps at
# least PMTU_MIN_RATIO of the baseline, and flows within its first 0.2 s
# interval (or no later than the baseline did, if that was later: a loaded
# machine); `ddpnet status --json` shows the learned
# path MTU (below ddp0's MTU on a narrow path, ddp0's MTU on a wide one;
# in the icmp case exactly what the gateway's ICMP said, less 60).
# In the silent case, a torchrun Gloo all_reduce of PMTU_ALLREDUCE_MIB
# over a, b and c.
#
# The silent drops match the packet's length at the gateway, so the
# nodes' links cut UDP GSO super-packets into wire packets before the
# gateway (gso_max_segs 1), as a real network would have; the baseline
# of that case runs with the same setting.
#
# Environment: PMTU_CASES ("icmp silent ab"), PMTU_MIN_RATIO (0.5),
# PMTU_IPERF_SECONDS (4), PMTU_ALLREDUCE_MIB (64), TORCH_TIMEOUT (240),
# and lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init path_mtu ping iperf3 nft
# torch is for the silent case's all_reduce only: without it that step
# alone is skipped.
NO_TORCH=$(e2e_torch_missing)
PMTU_CASES=${PMTU_CASES:-icmp silent ab}
PMTU_MIN_RATIO=${PMTU_MIN_RATIO:-0.5}
PMTU_IPERF_SECONDS=${PMTU_IPERF_SECONDS:-4}
PMTU_ALLREDUCE_MIB=${PMTU_ALLREDUCE_MIB:-64}
NODES=(node-a node-b node-c)
declare -A ADDR=([node-a]=10.77.0.1 [node-b]=10.77.0.2 [node-c]=10.77.0.3)
GW_A=$E2E_INET.1.1 GW_B=$E2E_INET.2.1 PUB_C=$E2E_INET.0.3
P=$E2E_PORT
NARROW=1400
DDP0_MTU=1420

build_world() {
    e2e_hub
    e2e_router gw-a 1.1 cone
    e2e_router gw-b 2.1 cone
    e2e_lan_node gw-a node-a 10
    e2e_lan_node gw-b node-b 10
    e2e_public_node node-c 0.3
    local n out
    for n in "${NODES[@]}"; do e2e_key "$n"; done
    cluster_begin "$T/cluster.conf"
    cluster_node "$T/cluster.conf" node-a "$(pub node-a)" "${ADDR[node-a]}"
    cluster_node "$T/cluster.conf" node-b "$(pub node-b)" "${ADDR[node-b]}"
    cluster_node "$T/cluster.conf" node-c "$(pub node-c)" "${ADDR[node-c]}" "$PUB_C:$P"
    out=$("$DDPNET" check -c "$T/cluster.conf" 2>&1) || fail "ddpnet check: $out"
}

# gw_drop GW [DADDR]: GW forwards nothing over NARROW bytes (to DADDR only,
# when given), silently.
gw_drop() {
    local match=""
    [ -z "${2:-}" ] || match="ip daddr $2"
    ip netns exec "$E2E_PFX$1" nft -f - <<EOF || fail "$1: nftables rules refused"
table ip narrow {
    chain forward {
        type filter hook forward priority filter; policy accept;
        $match meta length gt $NARROW counter drop
    }
}
EOF
}
gw_dropped() {
    ip netns exec "$E2E_PFX$1" nft list table ip narrow 2>/dev/null |
        sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | head -n 1
}

all_up() {
    local n
    for n in node-c node-a node-b; do ddp_up "$n"; done
    ping_ok node-a "${ADDR[node-b]}"
    ping_ok node-a "${ADDR[node-c]}"
    ping_ok node-b "${ADDR[node-c]}"
}
all_down() {
    local n
    for n in node-b node-a node-c; do ddp_down "$n"; done
    E2E_UP=()
}

# peer_mtu NODE PEER: the path_mtu of PEER in NODE's status --json.
peer_mtu() {
    ddp_status "$1" --json | "$PY" -c '
import json, sys
row = next(p for p in json.load(sys.stdin)["peers"] if p["name"] == sys.argv[1])
print(row["path_mtu"] if row["path_mtu"] is not None else "-")' "$2"
}
# mtu_settled NODE PEER: the search is over (neither unknown nor the 1280 floor).
mtu_settled() {
    local m
    m=$(peer_mtu "$1" "$2") && [ "$m" != - ] && [ "$m" -gt 1220 ]
}

# iperf_ab LABEL: iperf3 a -> b over ddp0, in 0.2 s intervals. Sets GBITS
# and FLOW_S: when the first interval reached half the run's median rate.
iperf_ab() {
    local spid out
    nx_bg node-b iperf3-server timeout 60 iperf3 -s -1 -B "${ADDR[node-b]}" -p 5201
    spid=$BG_PID
    wait_for 10 e2e_listening node-b 5201 || fail "iperf3 server on node-b did not start"
    nx node-a timeout $((PMTU_IPERF_SECONDS + 20)) iperf3 -c "${ADDR[node-b]}" -p 5201 \
        -t "$PMTU_IPERF_SECONDS" -i 0.2 -J >"$T/iperf-$1.json" 2>&1 ||
        fail "$1: iperf3 a -> b failed: $(tail -n 20 "$T/iperf-$1.json")"
    wait "$spid" 2>/dev/null || true
    out=$("$PY" - "$T/iperf-$1.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
rates = [i["sum"]["bits_per_second"] for i in d["intervals"]]
ends = [i["sum"]["end"] for i in d["intervals"]]
med = sorted(rates)[len(rates) // 2]
flow = next((e for r, e in zip(rates, ends) if med > 0 and r >= med / 2), None)
secs = d["end"]["sum_received"]["seconds"]
print("%.2f %s" % (d["end"]["sum_received"]["bytes"] * 8 / secs / 1e9,
                   "%.1f" % flow if flow is not None else "never"))
PYEOF
) || fail "$1: unreadable iperf3 result: $(tail -n 20 "$T/iperf-$1.json")"
    read -r GBITS FLOW_S <<<"$out"
}

declare -a ROWS=()
run_case() {
    local c=$1 base base_flow flow_limit mtu_b mtu_c path n
    step "$c: the testbed at 1500 (baseline)"
    build_world
    if [ "$c" != icmp ]; then
        for n in "${NODES[@]}"; do nx "$n" ip link set dev eth0 gso_max_segs 1; done
    fi
    all_up
    iperf_ab "$c-1500"
    base=$GBITS base_flow=$FLOW_S
    say "$c, at 1500: a -> b $base Gbit/s, flowing after $base_flow s"
    [ "$base_flow" != never ] || fail "$c: at 1500 the stream never flowed"
    all_down

    step "$c: the path narrowed to $NARROW"
    case "$c" in
    icmp)   ip -n "${E2E_PFX}gw-a" link set dev wan0 mtu "$NARROW"
            ip -n "${E2E_PFX}gw-b" link set dev wan0 mtu "$NARROW" ;;
    silent) gw_drop gw-a; gw_drop gw-b ;;
    ab)     gw_drop gw-a "$GW_B"; gw_drop gw-b "$GW_A" ;;
    esac
    # It flows from its first packet (docs/across-clouds.md; one iperf3
    # interval): by 0.2 s, or, on a machine so loaded that the baseline of
    # this run flowed later, no later than the baseline. A black hole
    # (big packets dropped until the search ends) is late on every try;
    # a late first interval on a loaded machine (other scripts share the
    # two CPUs) is tried once more, on daemons started afresh, and said.
    flow_limit=$(awk -v b="$base_flow" 'BEGIN { printf "%.1f", (b > 0.2 ? b : 0.2) }')
    local try late=""
    for try in 1 2; do
        all_up
        path=$(e2e_peer_path node-a node-b) || fail "$c: $path"
        case "$path" in direct*) ;; *) fail "$c: a -> b is not direct: $path (path via rtt_ms endpoint)" ;; esac
        iperf_ab "$c-$NARROW-$try"
        say "$c, narrowed (try $try): a -> b $GBITS Gbit/s (at 1500: $base); flowing after $FLOW_S s"
        [ "$FLOW_S" != never ] || fail "$c: the stream never flowed"
        awk -v f="$FLOW_S" -v l="$flow_limit" 'BEGIN { exit !(f <= l + 1e-9) }' && break
        late="$late $FLOW_S"
        [ "$try" -lt 2 ] ||
            fail "$c: the stream flowed after$late s on the narrow path (two tries, daemons started afresh), later than $flow_limit s (0.2 s, or the baseline's $base_flow s at 1500)"
        say "$c: flowed after $FLOW_S s, later than $flow_limit s: once more on fresh daemons (a loaded machine is late once, a black hole every time)"
        all_down
    done
    awk -v g="$GBITS" -v b="$base" -v r="$PMTU_MIN_RATIO" 'BEGIN { exit !(g >= b * r) }' ||
        fail "$c: a -> b $GBITS Gbit/s on the narrow path, below $PMTU_MIN_RATIO x $base at 1500"
    wait_for 15 mtu_settled node-a node-b || fail "$c: node-a's path MTU to node-b did not settle: $(peer_mtu node-a node-b)"
    mtu_b=$(peer_mtu node-a node-b)
    mtu_c=$(peer_mtu node-a node-c)
    say "$c: node-a's path MTU to node-b $mtu_b, to node-c $mtu_c (ddp0 $DDP0_MTU)"
    [ "$mtu_b" -lt "$DDP0_MTU" ] || fail "$c: path MTU to node-b is $mtu_b over a $NARROW-byte path"
    # An IPv4 outer packet is the inner one + 60 bytes; the search stops within 16.
    [ "$mtu_b" -ge $((NARROW - 60 - 16)) ] || fail "$c: path MTU to node-b is $mtu_b, want within 16 of $((NARROW - 60))"
    # Told by ICMP (the kernel's MTU for b's address), it is exact: the
    # probes only confirm it.
    if [ "$c" = icmp ]; then
        [ "$mtu_b" -eq $((NARROW - 60)) ] ||
            fail "icmp: path MTU to node-b is $mtu_b, want $((NARROW - 60)) exactly (what the gateway's ICMP said)"
        say "ok: the gateway's ICMP gave the exact path MTU ($mtu_b)"
    fi
    if [ "$c" = ab ]; then
        wait_for 15 mtu_settled node-a node-c || true
        mtu_c=$(peer_mtu node-a node-c)
        [ "$mtu_c" = "$DDP0_MTU" ] || fail "ab: node-a's path MTU to node-c is $mtu_c, want $DDP0_MTU (that path is wide)"
        say "ok: a's packets to c stay full-size ($mtu_c)"
    fi
    [ "$c" = icmp ] || say "$c: the gateways dropped $(( $(gw_dropped gw-a) + $(gw_dropped gw-b) )) packets over $NARROW bytes"
    ROWS+=("$(printf '%-7s %10s %10s %8s %10s %8s %8s' "$c" "$base" "$GBITS" \
        "$(awk -v g="$GBITS" -v b="$base" 'BEGIN { printf "%.2fx", g / b }')" "$FLOW_S s" "$mtu_b" "$mtu_c")")
    if [ "$c" = silent ] && [ "$PMTU_ALLREDUCE_MIB" -gt 0 ]; then
        step "silent: torchrun, Gloo all_reduce of $PMTU_ALLREDUCE_MIB MiB over a, b and c"
        if [ -z "$NO_TORCH" ]; then
            ALLREDUCE_MIB=$PMTU_ALLREDUCE_MIB e2e_allreduce node-a node-b node-c
        else
            skip_step "$NO_TORCH"
        fi
    fi
    e2e_reset
}

for c in $PMTU_CASES; do run_case "$c"; done

step "summary"
printf '%-7s %10s %10s %8s %10s %8s %8s\n' case "1500 Gb/s" "narrow" ratio "flowing" "MTU a-b" "MTU a-c"
printf '%s\n' "${ROWS[@]}"
