#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Packs what `make bench` needs besides bash, coreutils and python3 into
# .devcarry/, for bench/device-run.sh on a machine where nothing can be
# built or installed (a bare Ubuntu-like x86-64 VM: no compiler, maybe no
# iproute2, iperf3, nftables, iputils, procps):
#
#   .devcarry/bin/   ddpnet (bin/ddpnet), aead_bench (build/bench/, if it
#                    builds), iperf3, ip, ss, nft, taskset, ping, wg, and
#                    ps, nsenter, unshare (util-linux and procps: there on
#                    most systems, carried for the ones without)
#   .devcarry/lib/   every shared library they load, as `ldd` resolves it
#                    here, except glibc's own (libc, libm, libpthread,
#                    libdl, librt, libresolv, the loader and their kin):
#                    those must be the target's, which must be as new as
#                    this machine's (MANIFEST says which version)
#   .devcarry/MANIFEST  where each file came from (path, package, sha256),
#                    the commit bin/ddpnet was built from, glibc needed
#
# It checks that the loader, given .devcarry/lib, finds every library there,
# that the whole stays under DEVCARRY_MAX_MIB (40), and adds /.devcarry/ to
# .git/info/exclude (never .gitignore). Run it as any user, from anywhere:
#   bash bench/device-bundle.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CARRY=$ROOT/.devcarry
MAX_MIB=${DEVCARRY_MAX_MIB:-40}
LDSO=/lib64/ld-linux-x86-64.so.2

# glibc's libraries: the target's own must serve (they go together with its
# loader); copying ours would mix two glibcs in one process.
GLIBC_RE='^(libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libmvec|libnsl|libBrokenLocale|libthread_db|libc_malloc_debug|libnss_[a-z0-9]+|ld-linux-x86-64)\.so(\.[0-9]+)*$'

say() { printf 'device-bundle: %s\n' "$*"; }
die() { printf 'device-bundle: %s\n' "$*" >&2; exit 1; }

[ "$(uname -m)" = x86_64 ] || die "this machine is $(uname -m); the target is x86-64"
[ -x "$LDSO" ] || die "no $LDSO"
command -v ldd >/dev/null || die "no ldd"

# --- what to carry: NAME=PATH -------------------------------------------------
[ -x "$ROOT/bin/ddpnet" ] || die "no $ROOT/bin/ddpnet: run make first"
if ! make -C "$ROOT" -q bin/ddpnet >/dev/null 2>&1; then
    say "warning: bin/ddpnet is older than its sources (make -q says so); carrying it as it is: run make first to carry the newest"
fi
ITEMS=("ddpnet=$ROOT/bin/ddpnet")
aead=$ROOT/build/bench/aead_bench
if [ ! -x "$aead" ] && [ -f "$ROOT/bench/aead_bench.c" ]; then
    make -C "$ROOT" --no-print-directory build/bench/aead_bench >/dev/null 2>&1 || true
fi
if [ -x "$aead" ]; then ITEMS+=("aead_bench=$aead"); else say "aead_bench did not build: left out (no AEAD floor on the device)"; fi
for tool in iperf3 ip ss nft taskset ping wg; do
    p=$(command -v "$tool" 2>/dev/null) || die "missing tool here: $tool (make deps-test installs it)"
    ITEMS+=("$tool=$p")
done
for tool in ps nsenter unshare; do
    if p=$(command -v "$tool" 2>/dev/null); then ITEMS+=("$tool=$p"); else say "no $tool here: not carried"; fi
done

# --- copy ---------------------------------------------------------------------
rm -rf "$CARRY"
mkdir -p "$CARRY/bin" "$CARRY/lib"
manifest=$CARRY/MANIFEST
# pkg_of PATH: "PACKAGE VERSION" of the file (Debian's merged /usr: dpkg
# may know it by its /bin or /lib name), from one dpkg -S of all files.
declare -A PKG=()
pkg_index() {
    local f real line
    for f in "$@"; do real=$(readlink -f "$f"); printf '%s\n%s\n' "$real" "${real#/usr}"; done |
        sort -u | xargs dpkg -S 2>/dev/null | while IFS= read -r line; do
            printf '%s\t%s\n' "${line#*: }" "${line%%:*}"
        done >"$CARRY/.pkgs" || true
    while IFS=$'\t' read -r f line; do
        PKG[$f]=$line
    done <"$CARRY/.pkgs"
    rm -f "$CARRY/.pkgs"
}
pkg_of() {
    local real pkg
    real=$(readlink -f "$1")
    pkg=${PKG[$real]:-${PKG[${real#/usr}]:-}}
    if [ -n "$pkg" ]; then
        printf '%s %s' "$pkg" "$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null)"
    else
        printf 'not from a package'
    fi
}
{
    printf '# .devcarry, made by bench/device-bundle.sh on %s (%s)\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")"
    printf 'commit %s%s\n' "$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo '?')" \
        "$(git -C "$ROOT" diff --quiet HEAD -- . 2>/dev/null || echo ' (the work tree differs from it)')"
} >"$manifest"

declare -A LIBS=()
for item in "${ITEMS[@]}"; do
    name=${item%%=*} src=${item#*=}
    # ldd's "NAME => PATH (ADDR)"; "not found" is fatal.
    while read -r soname arrow path _; do
        [ "$arrow" = "=>" ] || continue
        [ "$path" != "not" ] || die "$name: $soname not found here"
        [[ $soname =~ $GLIBC_RE ]] && continue
        LIBS[$soname]=$path
    done < <(ldd "$src")
done
pkg_index "${ITEMS[@]#*=}" "${LIBS[@]}"
for item in "${ITEMS[@]}"; do
    name=${item%%=*} src=${item#*=}
    cp -L "$src" "$CARRY/bin/$name"
    chmod 755 "$CARRY/bin/$name"
    printf 'bin/%s\t%s\t%s\t%s\n' "$name" "$(readlink -f "$src")" "$(pkg_of "$src")" \
        "$(sha256sum <"$src" | cut -c1-16)" >>"$manifest"
done
for soname in $(printf '%s\n' "${!LIBS[@]}" | sort); do
    src=${LIBS[$soname]}
    cp -L "$src" "$CARRY/lib/$soname"
    printf 'lib/%s\t%s\t%s\t%s\n' "$soname" "$(readlink -f "$src")" "$(pkg_of "$src")" \
        "$(sha256sum <"$src" | cut -c1-16)" >>"$manifest"
done

# --- checks -------------------------------------------------------------------
# With .devcarry/lib as its library path, the loader must find every
# library but glibc's there (a lib found only in this machine's
# /lib would be missing on the target).
bad=""
for f in "$CARRY"/bin/*; do
    while read -r soname arrow path _; do
        [ "$arrow" = "=>" ] || continue
        [[ $soname =~ $GLIBC_RE ]] && continue
        case "$path" in "$CARRY/lib/"*) ;; *) bad="$bad ${f##*/}:$soname=>$path" ;; esac
    done < <("$LDSO" --library-path "$CARRY/lib" --list "$f")
done
[ -z "$bad" ] || die "resolved outside .devcarry/lib:$bad"

# The newest glibc symbol version anything here needs: the target's glibc
# must be at least that.
need=$(for f in "$CARRY"/bin/* "$CARRY"/lib/*; do objdump -T "$f" 2>/dev/null; done |
       grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n -u | tail -n 1)
printf 'glibc_min %s\nglibc_here %s\n' "${need:-?}" "$(getconf GNU_LIBC_VERSION | awk '{print $2}')" >>"$manifest"

bytes=$(du -sb "$CARRY" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
[ "$bytes" -le $(( MAX_MIB * 1048576 )) ] || die ".devcarry is $mib MiB, over DEVCARRY_MAX_MIB=$MAX_MIB"

exclude=$(git -C "$ROOT" rev-parse --git-path info/exclude 2>/dev/null || true)
if [ -n "$exclude" ]; then
    case "$exclude" in /*) ;; *) exclude=$ROOT/$exclude ;; esac
    mkdir -p "$(dirname "$exclude")"
    grep -qxF '/.devcarry/' "$exclude" 2>/dev/null || echo '/.devcarry/' >>"$exclude"
fi

say "$(ls "$CARRY/bin" | wc -l) binaries ($(ls "$CARRY/bin" | tr '\n' ' '| sed 's/ $//')), $(ls "$CARRY/lib" | wc -l) libraries; needs glibc >= ${need:-?} on the target (here $(getconf GNU_LIBC_VERSION))"
say "size: $mib MiB ($bytes bytes) in $CARRY (limit $MAX_MIB MiB)"
