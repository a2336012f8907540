# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced, not run: a Debian root made by debootstrap once and cached,
# shared by what runs the package in a root of its own -- the machines
# of tests/e2e/systemd_boot.sh and the image of `make image`
# (dist/container/image.sh). Root only (debootstrap).
#
#   debroot_make CACHE SUITE FORMAT PACKAGE...
#
# sets DEBROOT to CACHE/KIND-KEY (KIND: $DEBROOT_KIND, default the
# suite), a minbase root with the PACKAGEs,
# where KEY is a hash of FORMAT (the caller's: raise it when what it
# does to a root changes), the suite, the mirror and the package list;
# made by debootstrap if it is not there (the first run costs a
# download, about a minute), other roots of its kind in CACHE removed
# (a cache holds one of each kind: the booted machines' and Slurm's
# machines' roots are kinds apart, so neither evicts the other). DEBROOT_COST says "cached" or what it took.
# Returns 0; 2 where the Debian archive cannot be had (none in this
# system's apt sources and no DEBIAN_MIRROR, or debootstrap cannot reach
# it); 1 on another failure; DEBROOT_WHY says why.
#
#   debroot_needs DEB FIELD...
#
# prints the package names the .deb's FIELDs (Depends, Recommends) name:
# the first of each choice, versions dropped.

# The Debian archive: DEBIAN_MIRROR, else this system's (fetch_mirror).
. "$(dirname "${BASH_SOURCE[0]}")/../bench/fetch_deb.sh"

debroot_needs() {
    local deb=$1
    shift
    dpkg-deb -f "$deb" "$@" | sed 's/^[A-Za-z-]*://' | tr ',' '\n' |
        sed 's/|.*//; s/(.*)//; s/:any//; s/[[:space:]]//g' | grep -v '^$' | sort -u
}

debroot_make() {
    local cache=$1 suite=$2 format=$3 mirror pkgs key tmp lock rc=0 t0=$SECONDS
    local kind=${DEBROOT_KIND:-$2}
    shift 3
    DEBROOT="" DEBROOT_COST="" DEBROOT_WHY=""
    mirror=$(fetch_mirror)
    if [ -z "$mirror" ]; then
        DEBROOT_WHY="no Debian archive in this system's apt sources (set DEBIAN_MIRROR)"
        return 2
    fi
    pkgs=$(printf '%s\n' "$@" | sort -u)
    key=$(printf '%s\n' "format $format" "$suite" "$mirror" $pkgs | sha256sum | cut -c1-16)
    DEBROOT=$cache/$kind-$key
    mkdir -p "$cache"
    exec {lock}>"$cache/.lock"
    flock "$lock"
    if [ -f "$DEBROOT/.complete" ]; then
        DEBROOT_COST=cached
    else
        tmp=$DEBROOT.tmp
        rm -rf "$tmp"
        debootstrap --variant=minbase --include="$(echo $pkgs | tr ' ' ',')" \
            "$suite" "$tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 || rc=$?
        if [ "$rc" != 0 ]; then
            rm -rf "$tmp"
            DEBROOT_WHY="debootstrap $suite from $mirror failed (exit $rc): $(tail -n 5 "$cache/debootstrap.log")"
            grep -qiE 'Failed getting release file|Could not resolve|unable to fetch|Temporary failure' \
                "$cache/debootstrap.log" && rc=2 || rc=1
            flock -u "$lock"
            exec {lock}>&-
            return "$rc"
        fi
        find "$cache" -mindepth 1 -maxdepth 1 -type d -name "$kind-*" ! -name "$kind-$key" \
            ! -name '*.tmp' -exec rm -rf {} +
        touch "$tmp/.complete"
        mv "$tmp" "$DEBROOT"
        DEBROOT_COST="debootstrap $((SECONDS - t0)) s"
    fi
    flock -u "$lock"
    exec {lock}>&-
    return 0
}
