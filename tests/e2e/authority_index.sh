#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A derived-address clash moved past (issue 59): the launch script of
# docs/authority.md, as the page has it, run on two new machines whose
# keys derive one address at index 0 in a /24 (chosen here, the
# derivation computed apart from the code with b2sum, as
# authority_clash.sh does). systemctl is a stub that runs `ddpnet up`
# (enable, restart: down first), genkey prints the key chosen here, and
# doctor is told the node's run directory; everything else is ddpnet.
#  1. n1's script: signed at index 0, reached by a and b at X; no restart;
#  2. n2's script: index 0 is X, n1's: doctor says the clash, the script
#     signs index 1 and restarts; n2 reached by a, b and n1 at Y, its
#     index-1 address; n1 still at X; both tokens gone.
#
#                    namespace "hub": bridge br0
#      +--------------+--------------+--------------+
#    a .1           b .2           n1 .3          n2 .4      192.168.241.0/24
#    10.77.0.1      10.77.0.2      X (index 0)    Y (index 1; X at 0)
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init authority_index ping b2sum base64 unshare

E2E_NET=10.77.0.0/24
declare -A ADDR=([a]=10.77.0.1 [b]=10.77.0.2)

FIRST="set -e"
doc_block docs/authority.md "$FIRST" >"$T/launch.sh" || fail "docs/authority.md has no block beginning: $FIRST"
grep -q 'authority sign --token join.token' "$T/launch.sh" ||
    fail "docs/authority.md's first 'set -e' block is not the launch script: $(cat "$T/launch.sh")"
grep -q -- '--address-index' "$T/launch.sh" ||
    fail "docs/authority.md's launch script never moves past a clash: $(cat "$T/launch.sh")"

step "two keys that derive one address at index 0 in $E2E_NET; a and b in the file"
e2e_hub
i=0
for n in a b n1 n2; do
    i=$((i + 1))
    e2e_node "$n" "$i" -
done
e2e_key a
e2e_key b
mkdir -p "$T/keys"
declare -A seen=()
first="" second=""
for k in $(seq 1 600); do
    "$DDPNET" genkey >"$T/keys/$k" || fail "ddpnet genkey failed"
    p=$("$DDPNET" pubkey <"$T/keys/$k") || fail "ddpnet pubkey failed"
    o=$(e2e_derived_octet "$p")
    [ "$o" -gt 2 ] || continue                 # a's and b's
    if [ -n "${seen[$o]:-}" ]; then
        o1=$(e2e_derived_octet "$p" 1)                   # the second's index 1: free
        if [ "$o1" -gt 2 ] && [ "$o1" != "$o" ]; then first=${seen[$o]} second=$k; break; fi
        continue
    fi
    seen[$o]=$k
done
[ -n "$second" ] || fail "no two of 600 keys derive one address (odds: below 1e-100)"
X=10.77.0.$o Y=10.77.0.$o1
say "keys $first and $second of $k derive $X at index 0; the second's index 1 is $Y"

mkdir -p "$T/authority"
"$DDPNET" authority init -o "$T/authority/authority.key" >/dev/null 2>&1 ||
    fail "ddpnet authority init failed"
AUTH=$("$DDPNET" authority pubkey -a "$T/authority/authority.key")
C=$T/cluster.conf
cluster_begin "$C" "authority = $AUTH"
for n in a b; do
    cluster_node "$C" "$n" "$(pub "$n")" "${ADDR[$n]}" "$E2E_V4NET.${ADDR[$n]##*.}:$E2E_PORT"
    # said on each session: a newcomer whose file lists a alone counts b
    "$DDPNET" authority sign -a "$T/authority/authority.key" --name "$n" \
        --public-key "$(pub "$n")" --address "${ADDR[$n]}" --valid 1h >"$T/$n/key.cert" ||
        fail "ddpnet authority sign --name $n failed"
done
(umask 077; "$DDPNET" authority token -a "$T/authority/authority.key" --name-prefix spot- \
    --max 8 --valid 1h >"$T/join.token") || fail "ddpnet authority token failed"
# The newcomers' file: the same [cluster], and a to reach first.
CN=$T/newcomer.conf
cluster_begin "$CN" "authority = $AUTH"
cluster_node "$CN" a "$(pub a)" "${ADDR[a]}" "$E2E_V4NET.1:$E2E_PORT"
for n in a b; do ddp_up "$n" "$C"; done

# Stubs for the script, per node (RUN, HOSTS, STATE, KEY from the
# environment): systemctl enable/restart run ddpnet up as the unit would
# (with the node's directories); genkey prints the chosen key; doctor
# looks at the node's run directory. The rest is ddpnet itself.
mkdir -p "$T/bin"
cat >"$T/bin/ddpnet" <<EOF
#!/bin/sh
case \$1 in
genkey) cat "\$KEY"; exit;;
doctor) shift; exec "$DDPNET" doctor --run-dir "\$RUN" "\$@";;
esac
exec "$DDPNET" "\$@"
EOF
cat >"$T/bin/systemctl" <<EOF
#!/bin/sh
echo "systemctl \$*" >>"\$CALLS"
case \$1 in restart) "$DDPNET" down --run-dir "\$RUN" >/dev/null || exit 1;; enable|restart) ;; *) exit 0;; esac
exec "$DDPNET" up -c "$CN" -k "\$PWD/ddp0.key" --run-dir "\$RUN" --hosts-file "\$HOSTS" \\
    --state-dir "\$STATE"
EOF
chmod 755 "$T/bin/"*

# launch NODE KEYFILE: the page's script in a fresh etc directory holding
# the token (0600), on NODE named NODE, as root; its output in
# $T/NODE/launch.out, the systemctl calls in $T/NODE/calls.
launch() {
    local n=$1
    mkdir -p "$T/$n/etc" "$T/$n/state"
    chmod 700 "$T/$n/state"
    install -m 600 "$T/join.token" "$T/$n/etc/join.token"
    sed "s|^cd /etc/ddpnet\$|cd $T/$n/etc|" "$T/launch.sh" >"$T/$n/launch.sh"
    E2E_UP+=("$n")
    nx "$n" env KEY="$2" RUN="$T/$n/run" HOSTS="$T/$n/hosts" STATE="$T/$n/state" \
        CALLS="$T/$n/calls" unshare --uts sh -c 'hostname "$1" && PATH="$2:$PATH" exec sh "$3"' \
        sh "$n" "$T/bin" "$T/$n/launch.sh" >"$T/$n/launch.out" 2>&1
}

step "n1's launch script: index 0, reached at $X"
launch n1 "$T/keys/$first" || fail "n1's launch script failed: $(cat "$T/n1/launch.out")"
! grep -q restart "$T/n1/calls" || fail "n1 restarted: $(cat "$T/n1/calls")"
got=$(nx n1 ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
[ "$got" = "$X" ] || fail "n1's address is $got, not $X"
for n in a b; do
    wait_for 20 nx "$n" ping -n -c 1 -W 1 "$X" || fail "$n does not reach n1 ($X)"
done
[ ! -e "$T/n1/etc/join.token" ] || fail "n1's script left its join token"
say "n1 at $X, reached by a and b; no restart; token gone"

step "n2's launch script: $X is n1's, so index 1: reached at $Y"
launch n2 "$T/keys/$second" || fail "n2's launch script failed: $(cat "$T/n2/launch.out")"
[ "$(grep -c 'systemctl restart' "$T/n2/calls")" = 1 ] ||
    fail "n2 restarted other than once: $(cat "$T/n2/calls"); $(cat "$T/n2/launch.out")"
"$DDPNET" authority show "$T/n2/etc/ddp0.cert" --authority "$AUTH" >"$T/n2/show.out" 2>&1 ||
    fail "n2's certificate: $(cat "$T/n2/show.out")"
grep -q 'derived from its key, index 1$' "$T/n2/show.out" || fail "n2's certificate is not index 1: $(cat "$T/n2/show.out")"
got=$(nx n2 ip -4 -o addr show dev ddp0 | awk '{print $4}' | cut -d/ -f1)
[ "$got" = "$Y" ] || fail "n2's address is $got, not $Y (index 1)"
for n in a b n1; do
    wait_for 20 nx "$n" ping -n -c 1 -W 1 "$Y" || fail "$n does not reach n2 at $Y"
done
for n in a b; do
    nx "$n" ping -n -c 1 -W 1 "$X" >/dev/null || fail "$n lost n1 ($X) to n2"
done
! ddp_status n2 | grep -q "CLASH" || fail "n2's status still shows a clash: $(ddp_status n2)"
[ ! -e "$T/n2/etc/join.token" ] || fail "n2's script left its join token"
say "n2 at $Y (index 1) reached by a, b and n1; n1 still at $X; token gone"
say "PASS"
