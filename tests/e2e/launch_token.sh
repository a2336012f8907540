#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The launch template's first-boot script, as docs/slurm.md has it (issue
# 55): the join token leaves the disk on every way out of the script. Run
# with a scratch directory for /etc/ddpnet, on a machine named cloud-7 (a
# UTS namespace of its own), systemctl and scontrol stubbed:
#
#   a token that `authority sign` refuses   the script fails, before any
#                                           unit is enabled; no token left
#   a good token                            the script runs through; a
#                                           certificate the authority's
#                                           key verifies; no token left
#
# No network, no daemon: under 5 s.
set -eu
. "$(dirname "$0")/lib.sh"
e2e_init launch_token shred hostname install

FIRST="# example: the launch template's first-boot script, as root on a new cloud machine"
doc_block docs/slurm.md "$FIRST" >"$T/launch.sh" || fail "docs/slurm.md has no block beginning: $FIRST"
grep -q 'authority sign --token join.token' "$T/launch.sh" ||
    fail "docs/slurm.md's launch script signs nothing: $(cat "$T/launch.sh")"
grep -qx 'cd /etc/ddpnet' "$T/launch.sh" || fail "docs/slurm.md's launch script works elsewhere than /etc/ddpnet"
sed -i "s|^cd /etc/ddpnet\$|cd $T/etc|" "$T/launch.sh"

# Stubs: each records its call; scontrol says the controller is up.
mkdir -p "$T/bin"
ln -s "$DDPNET" "$T/bin/ddpnet"
for c in systemctl scontrol; do
    printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$c" "$T" >"$T/bin/$c"
done
echo 'echo "Slurmctld(primary) at onprem is UP"' >>"$T/bin/scontrol"
chmod 755 "$T/bin/"*

"$DDPNET" authority init -o "$T/authority.key" >/dev/null 2>&1 || fail "ddpnet authority init failed"
AUTH=$("$DDPNET" authority pubkey -a "$T/authority.key")
"$DDPNET" authority token -a "$T/authority.key" --name-prefix cloud- --max 8 \
    --valid 1h >"$T/good.token" || fail "ddpnet authority token failed"

# launch TOKEN: a fresh /etc/ddpnet holding TOKEN as join.token (0600),
# the doc's script run in it as a launch unit would (sh, as root), on a
# machine named cloud-7; its exit status. What it leaves is in $T/etc.
launch() {
    rm -rf "$T/etc" "$T/calls"
    mkdir -p "$T/etc"
    install -m 600 "$1" "$T/etc/join.token"
    unshare --uts sh -c 'hostname cloud-7 && PATH="$1:$PATH" exec sh "$2"' sh "$T/bin" \
        "$T/launch.sh" >"$T/launch.out" 2>&1
}

step "a token that authority sign refuses: the script fails, the token goes"
# A damaged copy (cut short in the template), refused as an expired one is.
head -c 40 "$T/good.token" >"$T/bad.token"
rc=0; launch "$T/bad.token" || rc=$?
[ "$rc" != 0 ] || fail "the launch script succeeded with a bad token: $(cat "$T/launch.out")"
grep -q 'ddpnet authority sign' "$T/launch.out" || fail "the launch script failed elsewhere: $(cat "$T/launch.out")"
[ ! -e "$T/etc/join.token" ] || fail "the launch script left its join token after a failed sign"
grep -q '^systemctl enable' "$T/calls" 2>/dev/null && fail "a unit was enabled after a failed sign: $(cat "$T/calls")"
say "exit $rc ($(head -n 1 "$T/launch.out")); join.token gone, nothing enabled"

step "a good token: the script runs through, the token goes"
launch "$T/good.token" || fail "the launch script failed with a good token: $(cat "$T/launch.out")"
[ ! -e "$T/etc/join.token" ] || fail "the launch script left its join token"
"$DDPNET" authority show "$T/etc/ddp0.cert" --authority "$AUTH" >"$T/show.out" 2>&1 ||
    fail "the certificate it signed: $(cat "$T/show.out")"
grep -q 'systemctl enable --now ddpnet@ddp0' "$T/calls" || fail "ddpnet@ddp0 not enabled: $(cat "$T/calls")"
grep -q 'systemctl enable --now slurmd' "$T/calls" || fail "slurmd not enabled: $(cat "$T/calls")"
grep -q 'cloud-7' "$T/show.out" || fail "the certificate is not cloud-7's: $(cat "$T/show.out")"
say "ddp0.cert signed for cloud-7 and valid; join.token gone; ddpnet@ddp0 and slurmd enabled"
