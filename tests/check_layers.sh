#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Keeps the shape of the tree (HACKING.md, "The map"): fails, naming the
# file and line, when
#  - crypto/, config/ or tun/ include anything of another top folder
#    (each stands alone: they are libraries the daemon uses);
#  - a folder of overlay/ includes a folder at its own level or above it
#    in the order below (the arrows point one way, so there is no cycle,
#    and the event loop knows no engine);
#  - inside overlay/engine/, three rooms: the model (overlay/engine/model/:
#    device.h and the tables it holds) below both others, includes
#    nothing of the engine but its own; paths and discovery (their own
#    room, overlay/engine/paths/) include of the engine only the model's
#    headers and their own, and name no function of the WireGuard core
#    (datapath_, handshake_, timers_, icmp_, engine_, peer_ other than
#    device.h's): the core calls them, they reach it back only through
#    paths.h's struct core_ops; and the core includes of their room
#    paths.h alone;
#  - a file outside overlay/engine/ includes of it anything but
#    model/device.h and device_setup.h;
#  - a C or header file sits at overlay/'s top level, a folder of overlay/
#    is not in the order (a new one must be placed), or a code folder
#    (crypto/, config/, tun/, a folder of overlay/, or a room inside one)
#    holds more than 15 C files;
#  - a code folder has no README.md, or its README does not name one of
#    its .c or .h files (as `name`, `name.c`, `name.h` or `name.{c,h}`,
#    maybe after a folder: `model/device.h`); a room inside a folder with
#    no README of its own has its files named in the folder's;
#  - the includes between rooms (a top folder, or a folder inside one of
#    overlay/'s, as overlay/engine/paths/) make a cycle, whatever the
#    order says (tsort names it);
#  - files of overlay/ call each other in a circle of more than 5 files
#    (tests/call_circles.py, from the objects in build/plain/: make
#    check-layers builds them first);
#  - a global function no code of the daemon calls is not said to be a
#    test seam in its header (tests/test_seams.py, from the same objects).
# Run by `make test` (make check-layers); needs bash, grep, tsort, nm and
# python3.
set -u
cd "$(dirname "$0")/.."

# overlay/'s folders, lowest first: each may include only those before it.
ORDER=(base disco loop engine registry membership control daemon cli)
MAX_C_FILES=15
declare -A RANK=()
for i in "${!ORDER[@]}"; do RANK[${ORDER[i]}]=$i; done
bad=0
complain() { printf 'check-layers: %s\n' "$*"; bad=1; }

# The stand-alone libraries.
for top in crypto config tun; do
    while IFS= read -r hit; do
        complain "$hit: $top/ includes another folder"
    done < <(grep -nE '^#include "(crypto|config|tun|overlay)/' "$top"/*.[ch] 2>/dev/null |
             grep -vE "#include \"$top/")
done

# overlay/: nothing loose at the top, every folder placed.
for f in overlay/*.c overlay/*.h; do
    [ -e "$f" ] && complain "$f: at overlay/'s top level; put it in the folder it belongs to"
done
for d in overlay/*/; do
    d=${d%/}; name=${d#overlay/}
    [ -n "${RANK[$name]:-}" ] || complain "$d: not in tests/check_layers.sh's ORDER; place it there and in HACKING.md"
done

# Every code folder: small enough, and a README that names each of its
# files (HACKING.md: "Each code folder's README.md lists its files").
named_in() {   # named_in README FILE: FILE's name in a code span of README
    local base=${2##*/} stem
    stem=${base%.*}
    grep -qE "\`([a-z_]+/)*$stem(\`|\.[ch]\b|\.\{c,h\})" "$1"
}
for d in crypto/ config/ tun/ overlay/*/; do
    d=${d%/}
    [ -f "$d/README.md" ] || complain "$d: no README.md; say what each of its files owns"
    for room in "$d" "$d"/*/; do
        [ -d "$room" ] || continue
        room=${room%/}
        n=$(find "$room" -maxdepth 1 -name '*.c' | wc -l)
        [ "$n" -le "$MAX_C_FILES" ] || complain "$room: $n C files, more than $MAX_C_FILES: split it by concern"
        readme=$room/README.md
        [ -f "$readme" ] || readme=$d/README.md
        [ -f "$readme" ] || continue
        for f in "$room"/*.[ch]; do
            [ -e "$f" ] || continue
            named_in "$readme" "$f" || complain "$f: not named in $readme"
        done
    done
done

# overlay/: the arrows.
for d in overlay/*/; do
    d=${d%/}; from=${d#overlay/}
    [ -n "${RANK[$from]:-}" ] || continue
    while IFS=: read -r file line text; do
        to=${text#*\"overlay/}; to=${to%%/*}
        [ "$to" = "$from" ] && continue
        if [ -z "${RANK[$to]:-}" ]; then
            complain "$file:$line: includes overlay/$to/, which is not in the order"
        elif [ "${RANK[$to]}" -ge "${RANK[$from]}" ]; then
            complain "$file:$line: overlay/$from/ includes overlay/$to/ (arrows go down only: ${ORDER[*]})"
        fi
    done < <(grep -rnE --include='*.[ch]' '^#include "overlay/' "$d" 2>/dev/null)
done

# overlay/engine/ from outside: model/device.h (the model) and
# device_setup.h (peers made and removed, the loop's handlers) are its
# only doors.
while IFS=: read -r file line text; do
    complain "$file:$line: includes the engine's inside ($text); use model/device.h or device_setup.h"
done < <(grep -rnE --include='*.[ch]' '^#include "overlay/engine/' overlay 2>/dev/null |
         grep -v '^overlay/engine/' |
         grep -vE '#include "overlay/engine/(model/device|device_setup)\.h"')

# overlay/engine/: the core calls paths and discovery; they call it back
# only through the operations it hands them (paths.h: struct core_ops).
ENGINE_PATHS=(overlay/engine/paths/*.[ch])
PATHS_MAY_INCLUDE='model/[a-z_]+|paths/[a-z_]+'
CORE_CALLS='\b(datapath|handshake|timers|icmp|engine)_[a-z0-9_]+[[:space:]]*\(|\bpeer_(new|free|install_keypair|received_with_keypair|clear_keys|stage|unstage|drop_staged|give_up|count_rx|count_tx|sent)[[:space:]]*\('
for f in "${ENGINE_PATHS[@]}"; do
    [ -e "$f" ] || continue
    while IFS=: read -r line text; do
        complain "$f:$line: paths/discovery include the core ($text); use paths.h's struct core_ops"
    done < <(grep -nE '^#include "overlay/engine/' "$f" |
             grep -vE "#include \"overlay/engine/($PATHS_MAY_INCLUDE)\.h\"")
    while IFS=: read -r line text; do
        complain "$f:$line: paths/discovery call the core back ($text); use paths.h's struct core_ops"
    done < <(sed -e 's://.*$::' "$f" | grep -nE "$CORE_CALLS" | grep -vE '^[0-9]+:[[:space:]]*(/?\*)')
done

# The model is below the core and paths/: it includes neither.
while IFS=: read -r file line text; do
    complain "$file:$line: the model includes the engine above it ($text); the core and paths/ include the model, not the other way"
done < <(grep -nE '^#include "overlay/engine/' overlay/engine/model/*.[ch] 2>/dev/null |
         grep -v '#include "overlay/engine/model/')

# The core sees of paths/discovery's room only paths.h (the seam).
while IFS=: read -r file line text; do
    complain "$file:$line: the core includes paths/discovery's inside ($text); use paths.h"
done < <(grep -nE '^#include "overlay/engine/paths/' overlay/engine/*.[ch] 2>/dev/null |
         grep -v '#include "overlay/engine/paths/paths\.h"')

# Rooms: a top folder (crypto/, config/, tun/, a folder of overlay/) or a
# folder inside one of overlay/'s (overlay/engine/paths/). The includes
# between rooms must have no cycle (tsort names one where there is).
# Sets ROOM to the room of the file path $1.
room_of() {
    local dir=${1%/*} rest
    if [[ $dir == overlay/*/*/* ]]; then
        rest=${dir#overlay/*/*/}; dir=${dir%/"$rest"}
    fi
    ROOM=$dir
}
room_edges=$(grep -rnE --include='*.[ch]' '^#include "(crypto|config|tun|overlay)/' crypto config tun overlay 2>/dev/null |
    while IFS=: read -r file _ text; do
        to=${text#*\"}; to=${to%%\"*}
        room_of "$file"; a=$ROOM; room_of "$to"; b=$ROOM
        [ "$a" != "$b" ] && printf '%s %s %s\n' "$a" "$b" "$file"
    done | sort -u -k1,2)
loop=$(printf '%s\n' "$room_edges" | cut -d' ' -f1,2 | tsort 2>&1 >/dev/null |
       sed -n 's/^tsort: //p' | grep -v 'input contains a loop')
if [ -n "$loop" ]; then
    complain "a cycle of includes between rooms: $(printf '%s\n' "$loop" | tr '\n' ' ')"
    # Each arrow inside the cycle, with a file that makes it.
    while IFS=' ' read -r a b file; do
        grep -qx "$a" <<< "$loop" && grep -qx "$b" <<< "$loop" &&
            complain "  $a -> $b ($file)"
    done <<< "$room_edges"
fi

# overlay/: no call circle of more than 5 files (a file calls another
# when its object uses a symbol the other's defines; tests/call_circles.py,
# on the objects make builds first).
while IFS= read -r line; do
    [ -n "$line" ] && complain "$line"
done < <(python3 tests/call_circles.py overlay || echo "")

# Global functions only tests call: each a test seam, said so (issue 62).
while IFS= read -r line; do
    [ -n "$line" ] && complain "$line"
done < <(python3 tests/test_seams.py || echo "")

if [ "$bad" -ne 0 ]; then
    echo "check-layers: FAILED"
    exit 1
fi
echo "check-layers: passed (${ORDER[*]}; crypto config tun stand alone; engine: core -> paths/ (paths.h), back through core_ops; both -> model/; no cycle of rooms; no call circle above 5 files; test seams said)"
