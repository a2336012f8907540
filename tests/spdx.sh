#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every source file says its licence in one machine-readable line
# (https://spdx.org/licenses/): `SPDX-License-Identifier: MIT` within its
# first SPDX_LINES lines. Source files are the tracked .c, .h, .sh and .py
# files and the tracked scripts without a suffix (a #! line: .ci/run, the
# package's maintainer scripts).
#
#   tests/spdx.sh         the check (make spdx-check, part of make test):
#                         fails naming each file without the line
#   tests/spdx.sh --add   adds the line where it is missing (make spdx):
#                         first in a C file, after the #! line of a script
#
# Needs git (the tracked files) and bash only.
set -u
cd "$(dirname "$0")/.."

LICENSE_ID=MIT
TAG="SPDX-License-Identifier: $LICENSE_ID"
# A #! line, then the tag: the second line. Room for an editor's line too.
SPDX_LINES=3

# The first two bytes, NULs dropped (fuzz seeds are binary).
first2() {
    head -c 2 "$1" | tr -d '\000'
}

sources() {
    git ls-files -z | while IFS= read -r -d '' f; do
        [ -f "$f" ] && [ ! -L "$f" ] || continue
        case $f in
        *.c | *.h | *.sh | *.py) printf '%s\n' "$f" ;;
        *) [[ $(first2 "$f") == '#!' ]] && printf '%s\n' "$f" ;;
        esac
    done
}

has_tag() {
    head -n "$SPDX_LINES" "$1" | grep -qF "$TAG"
}

# The line as the file's language comments it, where it goes.
add_tag() {
    local f=$1 tmp
    tmp=$(mktemp "$f.spdx.XXXXXX") || return 1
    case $f in
    *.c | *.h) { printf '/* %s */\n' "$TAG"; cat "$f"; } >"$tmp" ;;
    *)
        if [[ $(first2 "$f") == '#!' ]]; then
            { head -n 1 "$f"; printf '# %s\n' "$TAG"; tail -n +2 "$f"; } >"$tmp"
        else
            { printf '# %s\n' "$TAG"; cat "$f"; } >"$tmp"
        fi
        ;;
    esac
    chmod --reference="$f" "$tmp" && mv "$tmp" "$f"
}

if [ "${1:-}" = --add ]; then
    n=0
    while IFS= read -r f; do
        has_tag "$f" && continue
        add_tag "$f" || { echo "spdx: could not add the line to $f" >&2; exit 1; }
        n=$((n + 1))
    done < <(sources)
    echo "spdx: added '$TAG' to $n files"
    exit 0
fi

# The check must be able to fail: a file without the line is caught, one
# that make spdx fixed is not.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf '#!/bin/sh\necho hi\n' >"$scratch/t.sh"
printf '/* a file */\nint x;\n' >"$scratch/t.c"
for f in "$scratch/t.sh" "$scratch/t.c"; do
    has_tag "$f" && { echo "spdx: the check passes $f, which lacks the line" >&2; exit 1; }
    add_tag "$f"
    has_tag "$f" || { echo "spdx: the check refuses $f after --add put the line in" >&2; exit 1; }
done
[[ $(head -n 1 "$scratch/t.sh") == '#!/bin/sh' ]] || { echo "spdx: --add moved a #! line" >&2; exit 1; }

missing=0 total=0
while IFS= read -r f; do
    total=$((total + 1))
    if ! has_tag "$f"; then
        [ $missing -lt 20 ] && echo "spdx: $f: no '$TAG' in its first $SPDX_LINES lines"
        missing=$((missing + 1))
    fi
done < <(sources)
if [ $missing -gt 0 ]; then
    echo "spdx: $missing of $total source files lack the line; \`make spdx\` adds it"
    exit 1
fi
echo "spdx: all $total source files carry '$TAG'"
