# SPDX-License-Identifier: MIT
# Sourced by bench/fetch-*.sh: one Debian package from another suite,
# unpacked, not installed. apt-get runs with a private sources list, state
# and cache under build/bench/apt-SUITE, checked against the system's
# Debian archive keyring; nothing of the system's apt set-up changes.
#
#   fetch_deb WHO PACKAGE SUITE
#
# unpacks PACKAGE to build/bench/PACKAGE-SUITE/root and sets FETCH_DEB
# (the .deb) and FETCH_ROOT; on any failure it prints "WHO: reason" on
# stderr and exits 1. The mirror is the Debian archive this system already
# uses (deb822 "URIs:" or one-line "deb" entries); DEBIAN_MIRROR overrides
# (fetch_mirror; tests/e2e/systemd_boot.sh's debootstrap asks it too).
# Security and update archives are not full suites: skipped.

fetch_die() { echo "$FETCH_WHO: $*" >&2; exit 1; }

fetch_system_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] && sed -n 's/^URIs:[[:space:]]*//p' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] && sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' "$f"
    done
} 2>/dev/null

# The Debian archive to fetch from: DEBIAN_MIRROR, else this system's.
fetch_mirror() {
    echo "${DEBIAN_MIRROR:-$(fetch_system_mirror | tr ' ' '\n' | grep -E '/debian/?$' | head -n 1)}"
}

fetch_deb() {
    FETCH_WHO=$1
    local pkg=$2 suite=$3 root apt_dir out_dir mirror tool
    local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    case "$suite" in
        ''|*[!a-z0-9-]*) fetch_die "bad suite name '$suite'" ;;
    esac
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    apt_dir=$root/build/bench/apt-$suite
    out_dir=$root/build/bench/$pkg-$suite
    mirror=$(fetch_mirror)
    for tool in apt-get dpkg-deb; do
        command -v "$tool" >/dev/null || fetch_die "$tool not found (a Debian or Ubuntu system is needed)"
    done
    [ -r "$keyring" ] || fetch_die "$keyring not found (apt-get install debian-archive-keyring)"
    [ -n "$mirror" ] || fetch_die "no Debian archive in this system's apt sources: set DEBIAN_MIRROR=URL"

    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$out_dir"
    printf 'deb [signed-by=%s] %s %s main\n' "$keyring" "$mirror" "$suite" >"$apt_dir/sources.list"
    local apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=-"
                    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
                    -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")
    apt-get -q "${apt_opts[@]}" update >"$apt_dir/update.log" 2>&1 ||
        fetch_die "apt-get update for $suite failed: $(tail -n 3 "$apt_dir/update.log")"
    rm -f "$apt_dir/${pkg}"_*.deb
    (cd "$apt_dir" && apt-get -q "${apt_opts[@]}" download "$pkg") >"$apt_dir/download-$pkg.log" 2>&1 ||
        fetch_die "no $pkg in $suite: $(tail -n 3 "$apt_dir/download-$pkg.log")"
    FETCH_DEB=$(ls "$apt_dir/${pkg}"_*.deb 2>/dev/null | head -n 1)
    [ -n "$FETCH_DEB" ] || fetch_die "apt-get download left no package in $apt_dir"
    FETCH_ROOT=$out_dir/root
    rm -rf "$FETCH_ROOT"
    dpkg-deb -x "$FETCH_DEB" "$FETCH_ROOT" || fetch_die "cannot unpack $FETCH_DEB"
}
