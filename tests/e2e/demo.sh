#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The first thing a new user sees (`make demo`): three nodes, each in its own
# network namespace on one virtual switch, brought up from one cluster file;
# then `ddpnet status`, ping, iperf3 over ddp0 for 3 s, a torchrun
# all_reduce when python3-torch is installed, and `ddpnet down`. Nothing is
# left behind, and no traffic leaves this machine.
#
#                 namespace "hub": bridge br0 (the "LAN")
#         +------------------+------------------+
#   [node-a]            [node-b]            [node-c]
#   192.168.241.1       192.168.241.2       192.168.241.3    underlay (eth0)
#   ddp0 10.77.0.1      ddp0 10.77.0.2      ddp0 10.77.0.3   overlay
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init demo ping iperf3 ss

# show NODE CMD...: prints the command as typed on NODE, then runs it there.
show() {
    local n=$1; shift
    local shown=("$@")
    [ "$1" != "$DDPNET" ] || shown[0]=ddpnet
    printf '\n%s# %s\n' "$n" "${shown[*]}"
    nx "$n" "$@"
}
if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B="" N=""; fi
heading() { printf '\n%s=== %s ===%s\n' "$B" "$*" "$N"; }

NODES=(node-a node-b node-c)
heading "1. Three machines (network namespaces) on one LAN"
e2e_hub
i=1
for n in "${NODES[@]}"; do e2e_node "$n" "$i" -; i=$((i + 1)); done
echo "node-a 192.168.241.1, node-b 192.168.241.2, node-c 192.168.241.3"

heading "2. One key per node, one cluster file for all"
for n in "${NODES[@]}"; do e2e_key "$n"; done
i=1
cluster_begin "$T/cluster.conf"
for n in "${NODES[@]}"; do
    cluster_node "$T/cluster.conf" "$n" "$(pub "$n")" "10.77.0.$i" "$E2E_V4NET.$i:$E2E_PORT"
    i=$((i + 1))
done
echo "(each node: ddpnet genkey > key; ddpnet pubkey < key  ->  its public-key line)"
cat "$T/cluster.conf"
printf '\n# ddpnet check -c cluster.conf\n'
"$DDPNET" check -c "$T/cluster.conf"

heading "3. ddpnet up on every node"
for n in "${NODES[@]}"; do
    printf '\n%s# ddpnet up -c cluster.conf -k key\n' "$n"
    ddp_up "$n"
    cat "$T/$n/up.log"
done

heading "4. Every node reaches every other over ddp0, by name"
show node-a ping -c 3 -i 0.2 -w 10 node-b
show node-a ping -c 3 -i 0.2 -w 10 node-c
show node-b ping -c 3 -i 0.2 -w 10 node-c
show node-c getent hosts node-a node-b node-c

heading "5. ddpnet status"
show node-a "$DDPNET" status --run-dir "$T/node-a/run"

heading "6. iperf3 over ddp0, 3 s (node-a -> node-b)"
nx_bg node-b iperf3-server timeout 30 iperf3 -s -1 -B 10.77.0.2
wait_for 10 e2e_listening node-b 5201 || fail "iperf3 server did not start"
show node-a timeout 30 iperf3 -c node-b -t 3
wait "$BG_PID" 2>/dev/null || true
show node-a "$DDPNET" status --run-dir "$T/node-a/run"

heading "7. torchrun all_reduce over ddp0 (Gloo)"
if "$PY" -c 'import torch.distributed' 2>/dev/null && command -v torchrun >/dev/null; then
    show node-a "$DDPNET" env --run-dir "$T/node-a/run"
    cat >"$T/allreduce.py" <<'PYEOF'
import socket, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print("%s: rank %d of %d, all_reduce sum = %g" % (socket.gethostname(), dist.get_rank(),
      dist.get_world_size(), t.item()), flush=True)
dist.destroy_process_group()
PYEOF
    chmod 644 "$T/allreduce.py"
    echo
    echo "each node# eval \"\$(ddpnet env)\"; torchrun --nnodes 3 --nproc_per_node 1 \\"
    echo "             --rdzv_backend=c10d --rdzv_endpoint=node-a:29500 --redirects 1 --tee 1 allreduce.py"
    pids=()
    for n in "${NODES[@]}"; do
        nx_bg "$n" torchrun timeout -k 10 240 sh -c '
            eval "$("$1" env --run-dir "$2")" && export OMP_NUM_THREADS=1 &&
            exec torchrun --nnodes 3 --nproc_per_node 1 --rdzv_backend=c10d \
                --rdzv_endpoint=node-a:29500 --rdzv_id=demo --max_restarts 0 \
                --redirects 1 --tee 1 "$3"' sh "$DDPNET" "$T/$n/run" "$T/allreduce.py"
        pids+=("$BG_PID")
    done
    ok=1
    for p in "${pids[@]}"; do wait "$p" || ok=0; done
    for n in "${NODES[@]}"; do grep -h 'all_reduce sum' "$T/$n/torchrun.out" | sed 's/^\[default0\]://'; done
    [ "$ok" = 1 ] || fail "torchrun failed: $(tail -n 20 "$T/node-a/torchrun.out")"
else
    echo "(skipped: $PY cannot import torch; apt-get install python3-torch)"
fi

heading "8. ddpnet down on every node"
for n in "${NODES[@]}"; do
    printf '\n%s# ddpnet down\n' "$n"
    ddp_down "$n"
done
echo "ddp0 and the hosts entries are gone."
heading "Done. See README.md to run ddpnet on real machines."
