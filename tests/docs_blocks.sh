#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every shell block of README.md and docs/*.md runs here, or says it is an
# example (issue 46). The convention, as docs/testing.md states it:
#
#   - A fenced block whose info string is a shell (sh, bash, shell, zsh,
#     console) is runnable: this script runs it, and fails when it fails.
#   - Unless its first line is a comment `# example: ...` (saying what to
#     fill in, or where it runs: a running node, the etcd machines). Those
#     are not run; the reader sees the mark before pasting.
#   - An HTML comment `<!-- docs-check: CMDS -->` on the line right before
#     the fence is run first, in the same shell, and is not rendered: what
#     a person does between two blocks (copying a file to the node).
#   - A fence with no info string fails: say what it is (text, ini, ...).
#
# How a runnable block runs: the blocks of one page in order, each in its
# own `bash -eu -o pipefail` (an unset variable fails), as root, umask
# 022, in one scratch directory per page (HOME too), with bin/ddpnet first
# on PATH and before it stubs for what would touch this machine or the
# network (systemctl, journalctl, etcdctl, etcd, apt, apt-get, scp, ssh,
# torchrun, shred, Slurm's sbatch, srun, scontrol and squeue, docker,
# podman, kubectl; and make, which checks only that the target exists); each
# stub records its arguments in the page's calls.log, shown on a failure.
# Each page runs in a mount namespace of its own, where /etc/ddpnet and
# /etc/systemd/system are empty scratch directories, so a block that
# writes there writes nothing of this machine's. A block that needs a
# running daemon is an example here, and so is one whose every command is
# a stub (it fails here otherwise: only_stubs); tests/e2e/quickstart.sh types the
# README's quick start on two namespaces.
#
# Usage: tests/docs_blocks.sh [FILE.md...]   (default README.md docs/*.md)
# DOCS_BLOCKS_KEEP=1 keeps the scratch directory. Needs root (mounts).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DDPNET=${DDPNET:-$ROOT/bin/ddpnet}

if [ "$(id -u)" != 0 ]; then
    echo "docs_blocks: SKIP: needs root (mount namespaces)" >&2
    tests/expected_skip.sh docs_blocks >/dev/null 2>&1 && exit 77
    [ "${DDPNET_NO_SKIP:-0}" = 1 ] && exit 1
    exit 77
fi
[ -x "$DDPNET" ] || { echo "docs_blocks: $DDPNET not built (make)" >&2; exit 1; }

if [ $# -gt 0 ]; then PAGES=("$@"); else PAGES=(README.md docs/*.md); fi

S=$(mktemp -d /tmp/ddpnet-docs.XXXXXX)
[ "${DOCS_BLOCKS_KEEP:-0}" = 1 ] || trap 'rm -rf "$S"' EXIT

# The targets make knows (the make stub checks against them).
{ make -C "$ROOT" -pRrq : 2>/dev/null || true; } |
    awk -F: '/^[a-zA-Z0-9][^$#\/\t=]*:([^=]|$)/ {print $1}' | sort -u >"$S/make-targets"

# Stubs: record the call; shred -u removes, make checks the target.
mkdir -p "$S/stubs" "$S/bin"
ln -s "$DDPNET" "$S/bin/ddpnet"
for c in systemctl journalctl etcdctl etcd apt apt-get scp ssh torchrun shred make \
         sbatch srun scontrol squeue docker podman kubectl; do
    cat >"$S/stubs/$c" <<EOF
#!/bin/sh
echo "$c \$*" >>"\$DOCS_CALLS"
EOF
    chmod 755 "$S/stubs/$c"
done
cat >>"$S/stubs/shred" <<'EOF'
case " $* " in *" -u "*) for f; do case $f in -*) ;; *) rm -f -- "$f";; esac; done;; esac
EOF
cat >>"$S/stubs/make" <<EOF
for t; do
    case \$t in -*|*=*) continue;; esac
    grep -qx -- "\$t" "$S/make-targets" || { echo "make: no target '\$t'" >&2; exit 2; }
done
EOF

# blocks PAGE: one record per shell block, fields separated by \037:
# line, mark (run|example|bad), setup, body (\036 for newlines).
blocks() {
    awk -v Q="'" '
    function flush() {
        gsub(/\n/, "\036", body)
        printf "%d\037%s\037%s\037%s\n", start, mark, setup, body
    }
    BEGIN { inb = 0 }
    {
        line = $0
        if (!inb) {
            if (match(line, /^ *```/)) {
                ind = RLENGTH - 3
                info = substr(line, RLENGTH + 1)
                sub(/[ \t].*/, "", info)
                start = NR; body = ""; first = ""; inb = 1
                if (info == "") { kind = "bad" }
                else if (info ~ /^(sh|bash|shell|zsh|console|shell-session)$/) { kind = "sh" }
                else { kind = "other" }
                lang = info
                setup = (prev ~ /^ *<!-- docs-check: .* -->$/) ? prev : ""
                sub(/^ *<!-- docs-check: /, "", setup); sub(/ -->$/, "", setup)
                next
            }
            prev = line
            next
        }
        if (match(line, /^ *```[ \t]*$/)) {
            inb = 0; prev = ""
            if (kind == "bad") { mark = "bad"; flush() }
            else if (kind == "sh") {
                mark = (first ~ /^#[ \t]*example:/) ? "example" : "run"
                if (lang == "console") mark = mark "-console"
                flush()
            }
            next
        }
        # the fence indentation off (blocks inside list items)
        if (ind > 0 && substr(line, 1, ind) ~ /^ *$/) line = substr(line, ind + 1)
        if (body == "" && first == "") first = line
        body = body line "\n"
    }
    END { if (inb) { start = start; mark = "unclosed"; setup = ""; body = ""; flush() } }
    ' "$1"
}

# only_stubs < SCRIPT: true when every command of the script is a stub
# that checks nothing (all but make's, which checks its target): such a
# block runs and passes whatever it says, so it must be an example. A
# command is a line's first word (continuations joined, comments and
# here-documents' bodies skipped, leading VAR=value and sudo dropped).
NOOP_STUBS="systemctl journalctl etcdctl etcd apt apt-get scp ssh torchrun shred
            sbatch srun scontrol squeue docker podman kubectl"
only_stubs() {
    awk -v stubs="$NOOP_STUBS" -v Q="'" '
    BEGIN { n = split(stubs, a, /[ \t\n]+/); for (i = 1; i <= n; i++) s[a[i]] = 1; delete s[""] }
    hd != "" { if ($0 ~ "^[ \t]*" hd "[ \t]*$") hd = ""; next }
    { line = cont $0; cont = "" }
    line ~ /\\$/ { cont = substr(line, 1, length(line) - 1) " "; next }
    {
        if (match(line, "<<-?[ \t]*[\"" Q "]?[A-Za-z_]+")) {
            hd = substr(line, RSTART, RLENGTH)
            sub("^<<-?[ \t]*[\"" Q "]?", "", hd)
        }
        sub(/^[ \t]+/, "", line)
        if (line == "" || line ~ /^#/) next
        while (line ~ /^[A-Za-z_][A-Za-z0-9_]*=[^ \t]*[ \t]+/)
            sub(/^[A-Za-z_][A-Za-z0-9_]*=[^ \t]*[ \t]+/, "", line)
        split(line, w, /[ \t;|&()]+/)
        c = (w[1] == "sudo") ? w[2] : w[1]
        cmds++
        if (!(c in s)) other = 1
    }
    END { exit !(cmds > 0 && !other) }'
}

fails=0 ran=0 examples=0
fail() { echo "docs_blocks: FAIL: $*" >&2; fails=$((fails + 1)); }

for page in "${PAGES[@]}"; do
    [ -f "$page" ] || { fail "$page: no such page"; continue; }
    name=$(echo "$page" | tr '/.' '__')
    d=$S/$name
    mkdir -p "$d/work" "$d/etc-ddpnet" "$d/systemd"
    : >"$d/calls.log"
    n=0
    while IFS=$'\037' read -r line mark setup body; do
        n=$((n + 1))
        case $mark in
        bad) fail "$page:$line: a fence with no info string (say sh, text, ini, ...)"; continue ;;
        unclosed) fail "$page:$line: a fence never closed"; continue ;;
        example*) examples=$((examples + 1)); continue ;;
        esac
        script=${body//$'\036'/$'\n'}
        if [ "$mark" = run-console ]; then
            # a console block: the lines after a "$ " prompt, output ignored
            script=$(printf '%s\n' "$script" | sed -n 's/^\$ //p')
        fi
        if printf '%s\n' "$script" | only_stubs; then
            fail "$page:$line: every command is a stub, so running it checks nothing: mark it '# example: ...'"
            sed 's/^/    | /' <<<"$script" >&2
            continue
        fi
        printf '%s\n' "$setup" >"$d/$n.setup"
        printf '%s\n' "$script" >"$d/$n.sh"
        echo "$n $page:$line" >>"$d/blocks"
        ran=$((ran + 1))
    done < <(blocks "$page")
    [ -f "$d/blocks" ] || continue

    # The page's runnable blocks in order, in one mount namespace.
    cat >"$d/run" <<EOF
set -u
mkdir -p /etc/ddpnet /etc/systemd/system   # mount points (the package makes the first)
mount --bind "$d/etc-ddpnet" /etc/ddpnet
mount --bind "$d/systemd" /etc/systemd/system
while read -r i where; do
    ( cd "$d/work" && umask 022 &&
      env -i PATH="$S/stubs:$S/bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME="$d/work" \
          DOCS_CALLS="$d/calls.log" LANG=C.UTF-8 \
          bash -eu -o pipefail -c "\$(cat "$d/\$i.setup")
\$(cat "$d/\$i.sh")" ) >"$d/\$i.out" 2>&1 </dev/null ||
        echo "\$i \$where" >>"$d/failed"
done <"$d/blocks"
EOF
    if ! unshare -m --propagation private bash "$d/run"; then
        fail "$page: could not run its blocks in a mount namespace"
        continue
    fi
    if [ -f "$d/failed" ]; then
        while read -r i where; do
            fail "$where: the block failed (mark it '# example: ...' if it cannot run as written):"
            sed 's/^/    | /' "$d/$i.sh" >&2
            sed 's/^/    > /' "$d/$i.out" >&2
            [ -s "$d/calls.log" ] && sed 's/^/    stub: /' "$d/calls.log" >&2
        done <"$d/failed"
    fi
done

# The README stays short (issue 46): the guides and the man pages hold the rest.
if [ $# = 0 ] && [ "$(wc -l <README.md)" -gt 200 ]; then
    fail "README.md has $(wc -l <README.md) lines, more than 200: move detail to docs/"
fi

echo "docs_blocks: ${#PAGES[@]} pages, $ran blocks run, $examples examples not run, $fails failed"
[ "$fails" = 0 ]
