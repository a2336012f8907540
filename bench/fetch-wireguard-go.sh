#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetches a newer wireguard-go than this machine's own, from another Debian
# suite, as a contender for `make bench` (BENCH_EXTRA):
#
#   bench/fetch-wireguard-go.sh [SUITE]        (default: sid)
#   make bench BENCH_EXTRA="$(bench/fetch-wireguard-go.sh)"
#
# Debian's unstable suite carries the upstream releases with TUN offloads
# and UDP GSO/GRO (0.0.20250522 when this was written), the reference the
# throughput target is set against. apt-get runs with a private sources
# list, state and cache under build/bench/apt-SUITE, checked against the
# system's Debian archive keyring; nothing of the system's apt set-up
# changes and nothing is installed: the binary is unpacked to
# build/bench/wireguard-go-SUITE/root/usr/bin/wireguard-go. Go binaries need only libc,
# so the unstable build runs on a stable system.
#
# Prints one line, NAME=PATH, for BENCH_EXTRA; everything else goes to
# stderr. Exit status 1 with a reason when anything fails.
set -eu

suite=${1:-sid}
case "$suite" in
    ''|*[!a-z0-9-]*) echo "fetch-wireguard-go: bad suite name '$suite'" >&2; exit 1 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
apt_dir=$root/build/bench/apt-$suite
out_dir=$root/build/bench/wireguard-go-$suite
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# The Debian archive this system already uses (deb822 "URIs:" or one-line
# "deb" entries), so the script names no mirror of its own; DEBIAN_MIRROR
# overrides. Security and update archives are not full suites: skipped.
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

die() { echo "fetch-wireguard-go: $*" >&2; exit 1; }

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
rm -f "$apt_dir"/wireguard-go_*.deb
(cd "$apt_dir" && apt-get -q "${apt_opts[@]}" download wireguard-go) >"$apt_dir/download.log" 2>&1 ||
    die "no wireguard-go in $suite: $(tail -n 3 "$apt_dir/download.log")"
deb=$(ls "$apt_dir"/wireguard-go_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || die "apt-get download left no package in $apt_dir"

rm -rf "$out_dir/root"
dpkg-deb -x "$deb" "$out_dir/root" || die "cannot unpack $deb"
bin=$out_dir/root/usr/bin/wireguard-go
[ -x "$bin" ] || die "$deb holds no usr/bin/wireguard-go"
version=$("$bin" --version 2>&1 | head -n 1) || die "$bin does not run here: $version"
echo "fetch-wireguard-go: $version from $(basename "$deb")" >&2

name=wggo-$(printf '%s\n' "$version" | sed -n 's/.*v0\.0\.\([0-9]\{8\}\).*/\1/p')
[ "$name" != wggo- ] || name=wggo-$suite
echo "$name=$bin"
