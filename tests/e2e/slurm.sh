#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e: long
# e2e: lock deb
# Slurm over ddp0, in booted machines (issue 47): an on-prem machine runs
# slurmctld and a slurmd and is in the cluster file; cloud machines behind
# NAT gateways in two other networks run slurmd and join by themselves: at
# boot the launch template's script (docs/slurm.md) makes a key, signs its
# certificate through a join token (names cloud-*), removes the token,
# brings up ddpnet@ddp0 and then slurmd. Every machine has Debian's
# slurm-wlm, munge and python3-torch and the ddpnet package; slurm.conf
# names every host (SlurmctldHost, NodeName, NodeAddr) by its node name,
# which resolves to its overlay address through ddpnet's hosts block, and
# the on-prem machine's underlay lets in nothing but ddpnet's UDP port (as
# a security group would): every Slurm connection rides ddp0. Then:
#
#   sbatch (2 nodes: onprem, cloud-1)   torchrun + Gloo all_reduce, with
#                                       eval "$(ddpnet env)" in the script
#   cloud-2 boots (a burst), joins;     scontrol update State=RESUME: idle
#   sbatch (3 nodes)                    the same job on all three
#   scontrol show node                  every node up (idle)
#
#                      hub: br0, 100.64.0.0/16 (the internet)
#        +--------------------------+---------------------------+
#   onprem 100.64.0.10        gw-1 100.64.1.1 (NAT)       gw-2 100.64.2.1 (NAT)
#   ddp0 10.77.0.1 (file)       |  lan0 172.31.1.0/24       |  lan0 172.31.1.0/24
#                             cloud-1 .10                 cloud-2 .10 (the burst)
#                             ddp0: derived from their keys (certificates)
#
# The machines' root is boot_lib.sh's, of its own kind (slurm-SUITE: the
# packages below), made once by debootstrap and cached. The munge key,
# the authority, its join token and every node key are made at test time.
# Environment: SLURM_JOB_S (180: the bound on each job, in seconds), and boot_lib.sh's.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init slurm systemd-nspawn debootstrap dpkg-deb sha256sum flock mount umount chroot nft
. "$(dirname "$0")/boot_lib.sh"
# A booted machine's uptime must start at its boot, or slurmctld never
# takes the burst node's registration (boot_start).
[ "$BOOT_TIMENS" = 1 ] || skip "no time namespaces (unshare --time): a machine's uptime would be the host's"

NODES=(onprem cloud-1 cloud-2)
# systemd_boot.sh's machines, and Slurm (controller, node daemon, client),
# munge and Debian's torch for the job.
BASE_PKGS=(systemd systemd-sysv dbus iproute2 iputils-ping procps slurm-wlm munge python3-torch)
ROOT_FORMAT=1
ROOT_KIND=slurm-$SUITE
JOB_S=${SLURM_JOB_S:-180}
ONPREM_V4=$E2E_INET.0.10
t_start=$SECONDS
trap boot_exit EXIT
boot_exit_logs() {
    local n
    for n in "${NODES[@]}"; do
        [ -s "$T/$n/leader" ] && kill -0 "$(cat "$T/$n/leader")" 2>/dev/null || continue
        echo "--- $n: Slurm's and munge's journal (last 20 lines)"
        in_node "$n" journalctl -u slurmctld -u slurmd -u munge -u ddpnet-launch -b --no-pager -n 20 2>&1
        echo "--- $n: /var/log/slurm (last 30 lines each)"
        in_node "$n" sh -c 'tail -n 30 /var/log/slurm/*.log' 2>&1
    done
}

# --- what the machines are given (the launch template's files) -------------------------

# put NODE PATH MODE [OWNER]: stdin as PATH in NODE's root (before boot).
put() {
    local f=$T/$1/root$2
    mkdir -p "$(dirname "$f")"
    cat >"$f"
    chmod "$3" "$f"
    [ -z "${4:-}" ] || chown "$4" "$f"
}
# uid_of NODE USER: USER's uid:gid in NODE's root.
uid_of() { awk -F: -v u="$2" '$1 == u { print $3 ":" $4 }' "$T/$1/root/etc/passwd"; }

slurm_conf() {
    cat <<'EOF'
# /etc/slurm/slurm.conf: the same on every machine. Every host by its
# ddpnet node name: it resolves to the overlay address on every node.
ClusterName=ddpnet
SlurmctldHost=onprem
SlurmctldParameters=cloud_dns
AuthType=auth/munge
SlurmUser=slurm
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldDebug=debug
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/linear
ReturnToService=1
TreeWidth=65533
# The burst: a cloud node, powered down until a job needs it; then
# ResumeProgram asks the cloud for the machine, which joins by itself.
ResumeProgram=/usr/local/sbin/slurm-resume
SuspendProgram=/usr/local/sbin/slurm-suspend
ResumeTimeout=300
SuspendTime=3600
SuspendExcNodes=onprem,cloud-1
NodeName=onprem NodeAddr=onprem State=UNKNOWN
NodeName=cloud-1 NodeAddr=cloud-1 State=UNKNOWN
NodeName=cloud-2 NodeAddr=cloud-2 State=CLOUD
PartitionName=main Nodes=ALL Default=YES MaxTime=10 State=UP
EOF
}
# ResumeProgram: the cloud's API, which this test is: it notes the
# request; the test boots the machines it names.
resume_program() {
    cat <<'EOF'
#!/bin/sh
echo "$1" >> /var/lib/slurm/slurmctld/resume.requests
EOF
}
# resume_asked NODE: ResumeProgram was asked for NODE.
resume_asked() {
    in_node onprem scontrol show hostnames "$(in_node onprem cat /var/lib/slurm/slurmctld/resume.requests)" |
        grep -qx "$1"
}

# The job (docs/slurm.md): on the first node of the allocation, srun
# starts one torchrun per node; the rendezvous is at that node by name.
batch_script() {
    cat <<'EOF'
#!/bin/bash
#SBATCH --job-name=allreduce
#SBATCH --ntasks-per-node=1
#SBATCH --time=5
#SBATCH --output=/root/allreduce-%j.out
eval "$(ddpnet env)"
export OMP_NUM_THREADS=1
head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
srun torchrun --nnodes "$SLURM_JOB_NUM_NODES" --nproc_per_node 1 \
    --rdzv_backend=c10d --rdzv_endpoint="$head:29500" --rdzv_id="$SLURM_JOB_ID" \
    --max_restarts 0 --redirects 1 --tee 1 /opt/allreduce.py
EOF
}

# The launch template's script, run once as root at a cloud machine's
# first boot: docs/slurm.md's, as the page has it (its token removed on
# every exit; tests/e2e/launch_token.sh runs its failure path).
LAUNCH=$(doc_block docs/slurm.md \
    "# example: the launch template's first-boot script, as root on a new cloud machine") ||
    fail "docs/slurm.md has no launch template's first-boot script"
launch_script() { printf '#!/bin/sh\n%s\n' "$LAUNCH"; }
launch_unit() {
    cat <<'EOF'
[Unit]
Description=The launch template's first-boot script: join ddp0, start slurmd
ConditionPathExists=/etc/ddpnet/join.token
After=network-online.target munge.service

[Service]
Type=oneshot
ExecStart=/etc/ddpnet/launch.sh
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
EOF
}
# Slurm's daemons start once ddp0 is up (when both are enabled).
after_ddp0() { printf '[Unit]\nAfter=ddpnet@ddp0.service\n'; }

# slurm_machine NODE: NODE's machine with the package installed (as an
# image would have it), Slurm's and munge's files, the job's script.
slurm_machine() {
    local n=$1 r=$T/$1/root u
    machine "$n"
    chroot "$r" dpkg -i "/root/$(basename "$DEB")" >"$T/$n/dpkg.out" 2>&1 ||
        fail "$n: dpkg -i of the package failed: $(tail -n 5 "$T/$n/dpkg.out")"
    # No DNS server is reachable from here: "no such name" at once.
    printf 'nameserver 127.0.0.1\noptions attempts:1\n' | put "$n" /etc/resolv.conf 644
    u=$(uid_of "$n" munge)
    put "$n" /etc/munge/munge.key 400 "$u" <"$T/munge.key"
    slurm_conf | put "$n" /etc/slurm/slurm.conf 644
    put "$n" /opt/allreduce.py 644 <"$T/allreduce.py"
    put "$n" /etc/ddpnet/ddp0.conf 644 <"$T/ddp0.conf"
    for u in slurmd slurmctld; do
        after_ddp0 | put "$n" "/etc/systemd/system/$u.service.d/ddp0.conf" 644
    done
}

# on_lan GW NODE: NODE's eth0 in GW's LAN at .10, its default route GW.
on_lan() {
    local ns=$E2E_PFX$2
    ip -n "$E2E_PFX$1" link add "l-$2" type veth peer name eth0 netns "$ns"
    ip -n "$E2E_PFX$1" link set "l-$2" master lan0 up
    ip -n "$ns" addr add "$E2E_LAN.10/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" route add default via "$E2E_LAN.1"
}

# cloud_machine NODE GW: a cloud machine in GW's network: the cluster
# file, the join token and the launch script; slurmd disabled until it
# has joined.
cloud_machine() {
    local n=$1 r=$T/$1/root
    slurm_machine "$n"
    put "$n" /etc/ddpnet/join.token 600 <"$T/join.token"
    launch_script | put "$n" /etc/ddpnet/launch.sh 755
    launch_unit | put "$n" /etc/systemd/system/ddpnet-launch.service 644
    chroot "$r" systemctl -q disable slurmd slurmctld 2>/dev/null
    chroot "$r" systemctl -q enable ddpnet-launch.service
    on_lan "$2" "$n"
}

# node_state NODE: Slurm's state of NODE, as slurmctld says (sinfo %T).
node_state() { in_node onprem sinfo -h -N -n "$1" -o %T 2>/dev/null; }
# state_is NODE STATE: NODE's state is STATE (nothing appended: not
# '*', not responding).
state_is() { [ "$(node_state "$1")" = "$2" ]; }

# job_start [SBATCH-ARGS...]: sbatch --wait of the batch script on
# onprem (bounded by JOB_S), in the background (JOB_PID).
job_start() {
    printf 'onprem# cd /root; timeout %s sbatch --wait %s allreduce.sbatch   (in the background)\n' "$JOB_S" "$*"
    in_node onprem sh -c 'cd /root && exec timeout "$0" sbatch --wait "$@" allreduce.sbatch' \
        "$JOB_S" "$@" >"$T/sbatch.out" 2>&1 &
    JOB_PID=$!
    E2E_PIDS+=("$JOB_PID")
}
# job_end NODES: the job of job_start ended well; it ran on NODES (a
# Slurm host list), one rank on each, every rank with the sum (its
# output, on the batch host, shown).
job_end() {
    local nodes id world want n got bh rc=0
    nodes=$(in_node onprem scontrol show hostnames "$1" | sort)
    world=$(wc -w <<<"$nodes")
    want=$(( world * (world + 1) / 2 ))
    wait "$JOB_PID" || rc=$?
    sed 's/^/    /' "$T/sbatch.out"
    id=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/sbatch.out")
    if [ "$rc" != 0 ]; then
        op onprem 'scontrol show job' || true
        for n in $nodes; do op "$n" 'tail -n 40 /root/allreduce-*.out' || true; done
        fail "the $world-node job failed (sbatch exit $rc)"
    fi
    [ -n "$id" ] || fail "sbatch printed no job id"
    op_ok onprem "scontrol show job $id | grep -E 'JobState|RunTime|StartTime|NodeList=|BatchHost'"
    got=$(in_node onprem scontrol show hostnames "$(out onprem | sed -n 's/^ *NodeList=//p')" | sort)
    [ "$got" = "$nodes" ] || fail "job $id ran on $(echo $got), not $(echo $nodes)"
    bh=$(out onprem | sed -n 's/^ *BatchHost=//p')
    # The output is on the batch host (the first node: no shared file system).
    op_ok "$bh" "cat /root/allreduce-$id.out"
    cp "$T/$bh/op.out" "$T/job-$id.out"
    [ "$(grep -c "allreduce host=.* world=$world sum=$want " "$T/job-$id.out")" = "$world" ] ||
        fail "job $id: not $world ranks with the sum $want"
    for n in $nodes; do
        grep -q "allreduce host=$n rank=" "$T/job-$id.out" || fail "job $id: no rank on $n"
    done
    say "job $id: $world ranks on $(echo $nodes), each with the sum $want"
}

# --- the run ---------------------------------------------------------------------------------

step "the package, the machines' root, the authority, the munge key"
boot_deb
make_root "$DEB"
t_root=$SECONDS
"$DDPNET" authority init -o "$T/authority.key" >/dev/null 2>&1 || fail "ddpnet authority init failed"
AUTH=$("$DDPNET" authority pubkey -a "$T/authority.key") || fail "ddpnet authority pubkey failed"
"$DDPNET" authority token -a "$T/authority.key" --name-prefix cloud- --max 8 --valid 1h \
    >"$T/join.token" || fail "ddpnet authority token failed"
"$DDPNET" genkey >"$T/onprem.key"
cluster_begin "$T/ddp0.conf" "authority = $AUTH"
cluster_node "$T/ddp0.conf" onprem "$("$DDPNET" pubkey <"$T/onprem.key")" 10.77.0.1 "$ONPREM_V4:$E2E_PORT"
head -c 128 /dev/urandom >"$T/munge.key"   # as mungekey makes it
e2e_allreduce_script
say "authority $AUTH; a join token for cloud-* (8 members, 1 h); a munge key of 128 random bytes"

step "the networks: onprem on the internet, cloud-1 and cloud-2 each behind a NAT gateway"
e2e_hub
e2e_router gw-1 1.1 cone
e2e_router gw-2 2.1 cone
slurm_machine onprem
put onprem /etc/ddpnet/ddp0.key 600 <"$T/onprem.key"
batch_script | put onprem /root/allreduce.sbatch 644
resume_program | put onprem /usr/local/sbin/slurm-resume 755
printf '#!/bin/sh\nexit 0\n' | put onprem /usr/local/sbin/slurm-suspend 755
chroot "$T/onprem/root" systemctl -q enable ddpnet@ddp0
ip -n "${E2E_PFX}hub" link add p-onprem type veth peer name eth0 netns "${E2E_PFX}onprem"
ip -n "${E2E_PFX}hub" link set p-onprem master br0 up
ip -n "${E2E_PFX}onprem" addr add "$ONPREM_V4/16" dev eth0
ip -n "${E2E_PFX}onprem" link set eth0 up
# Its security group: ddpnet's UDP port and nothing else (Slurm's,
# munge's and torch's ports ride ddp0).
e2e_firewall onprem "$E2E_PORT"
cloud_machine cloud-1 gw-1
cloud_machine cloud-2 gw-2
t_made=$SECONDS

step "onprem and cloud-1 boot; cloud-1 joins by itself and starts slurmd"
boot_start onprem
boot_start cloud-1
boot_wait onprem
boot_wait cloud-1
t_boot=$SECONDS
op_ok onprem 'systemctl is-active ddpnet@ddp0 munge slurmctld slurmd'
op_ok cloud-1 'systemctl is-active ddpnet-launch ddpnet@ddp0 munge slurmd; ls /etc/ddpnet'
grep -q join.token <<<"$(out cloud-1)" && fail "cloud-1 kept its join token"
op_ok cloud-1 'journalctl -u ddpnet-launch -b --no-pager -q -o cat'
wait_for 30 state_is cloud-1 idle || fail "cloud-1 is '$(node_state cloud-1)' in Slurm, not idle"
wait_for 30 state_is onprem idle || fail "onprem is '$(node_state onprem)' in Slurm, not idle"
op_ok onprem 'ddpnet status'
op_ok onprem 'getent hosts onprem cloud-1; sinfo -N'
op_ok cloud-1 'getent hosts onprem cloud-1; scontrol ping'

step "sbatch: a 2-node torchrun (Gloo all_reduce) on onprem and cloud-1"
op_ok onprem 'cat /root/allreduce.sbatch'
t0=$SECONDS
job_start -N 2 -w onprem,cloud-1
job_end onprem,cloud-1
t_job1=$((SECONDS - t0))

step "a burst: a 3-node job; ResumeProgram asks for cloud-2, which boots and joins by itself"
op_ok onprem 'sinfo -N'
t0=$SECONDS
job_start -N 3
wait_for 60 resume_asked cloud-2 || fail "slurmctld did not run ResumeProgram for cloud-2: $(in_node onprem sinfo -N 2>&1)"
op_ok onprem 'cat /var/lib/slurm/slurmctld/resume.requests; sinfo -N; squeue'
# A cloud takes a while: Slurm takes the node's registration for the boot
# it asked for only if the node's uptime began after it asked (in whole
# seconds).
sleep 2
boot cloud-2
t_burst=$((SECONDS - t0))
op_ok cloud-2 'systemctl is-active ddpnet-launch ddpnet@ddp0 munge slurmd; ls /etc/ddpnet'
grep -q join.token <<<"$(out cloud-2)" && fail "cloud-2 kept its join token"
job_end 'onprem,cloud-[1-2]'
t_job2=$((SECONDS - t0))

step "scontrol show node: every node up"
op_ok onprem 'scontrol show node | grep -E "^NodeName|State="'
for n in "${NODES[@]}"; do
    wait_for 10 state_is "$n" idle || fail "$n is '$(node_state "$n")', not idle"
done
[ "$(grep -cE 'State=IDLE[ +]' <<<"$(out onprem)")" = 3 ] || fail "scontrol show node: not 3 nodes IDLE"
grep -qE 'NOT_RESPONDING|DOWN|DRAIN|POWER' <<<"$(out onprem)" && fail "scontrol show node: a node is not up"
op_ok cloud-2 'ddpnet status'
dropped=$(e2e_fw_dropped onprem)
say "onprem's underlay firewall dropped $dropped packets (none needed: Slurm rides ddp0)"

step "cost"
say "root: $ROOT_COST ($((t_root - t_start)) s with make deb); machines made: $((t_made - t_root)) s;" \
    "boot of onprem and cloud-1: $((t_boot - t_made)) s; job 1: $t_job1 s;" \
    "job 2: $t_job2 s (of which cloud-2 asked for, booted and joined: $t_burst s);" \
    "total $((SECONDS - t_start)) s"
