#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetches Nebula (and its nebula-cert) from a Debian suite, as a contender
# for `make bench` (BENCH_EXTRA), the way fetch-wireguard-go.sh fetches
# wireguard-go:
#
#   bench/fetch-nebula.sh [SUITE]        (default: sid)
#   make bench BENCH_EXTRA="$(bench/fetch-wireguard-go.sh) $(bench/fetch-nebula.sh)"
#
# Nebula is the other userspace overlay a cluster might run instead of
# ddpnet (1.11.0 in unstable when this was written). apt-get runs with a
# private sources list, state and cache under build/bench/apt-SUITE, checked
# against the system's Debian archive keyring; nothing of the system's apt
# set-up changes and nothing is installed: the package is unpacked to
# build/bench/nebula-SUITE/root/usr/bin/{nebula,nebula-cert} (Go binaries
# need only libc). The bench recognises a BENCH_EXTRA binary called
# `nebula` as Nebula (bench/tunnels.sh: a CA and two host certificates made
# with the nebula-cert beside it, at bench time).
#
# Prints one line, NAME=PATH, for BENCH_EXTRA; everything else goes to
# stderr. Exit status 1 with a reason when anything fails.
set -eu

suite=${1:-sid}
case "$suite" in
    ''|*[!a-z0-9-]*) echo "fetch-nebula: bad suite name '$suite'" >&2; exit 1 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
apt_dir=$root/build/bench/apt-$suite
out_dir=$root/build/bench/nebula-$suite
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# The Debian archive this system already uses (as fetch-wireguard-go.sh);
# DEBIAN_MIRROR overrides.
system_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] && sed -n 's/^URIs:[[:space:]]*//p' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] && sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' "$f"
    done
} 2>/dev/null
mirror=${DEBIAN_MIRROR:-$(system_mirror | tr ' ' '\n' | grep -E '/debian/?$' | head -n 1)}

die() { echo "fetch-nebula: $*" >&2; exit 1; }

for tool in apt-get dpkg-deb; do
    command -v "$tool" >/dev/null || die "$tool not found (a Debian or Ubuntu system is needed)"
done
[ -r "$keyring" ] || die "$keyring not found (apt-get install debian-archive-keyring)"
[ -n "$mirror" ] || die "no Debian archive in this system's apt sources: set DEBIAN_MIRROR=URL"

mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$out_dir"
printf 'deb [signed-by=%s] %s %s main\n' "$keyring" "$mirror" "$suite" >"$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=-"
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
          -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")

apt-get -q "${apt_opts[@]}" update >"$apt_dir/update.log" 2>&1 ||
    die "apt-get update for $suite failed: $(tail -n 3 "$apt_dir/update.log")"
rm -f "$apt_dir"/nebula_*.deb
(cd "$apt_dir" && apt-get -q "${apt_opts[@]}" download nebula) >"$apt_dir/download-nebula.log" 2>&1 ||
    die "no nebula in $suite: $(tail -n 3 "$apt_dir/download-nebula.log")"
deb=$(ls "$apt_dir"/nebula_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || die "apt-get download left no package in $apt_dir"

rm -rf "$out_dir/root"
dpkg-deb -x "$deb" "$out_dir/root" || die "cannot unpack $deb"
bin=$out_dir/root/usr/bin/nebula
[ -x "$bin" ] || die "$deb holds no usr/bin/nebula"
[ -x "$out_dir/root/usr/bin/nebula-cert" ] || die "$deb holds no usr/bin/nebula-cert"
version=$("$bin" -version 2>&1 | head -n 1) || die "$bin does not run here: $version"
echo "fetch-nebula: $version from $(basename "$deb")" >&2

v=$(printf '%s\n' "$version" | sed -n 's/^Version:[[:space:]]*\([0-9][0-9.]*\).*/\1/p')
echo "nebula-${v:-$suite}=$bin"
