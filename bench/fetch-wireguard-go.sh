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
# throughput target is set against. Nothing is installed (fetch_deb.sh):
# the binary is unpacked to
# build/bench/wireguard-go-SUITE/root/usr/bin/wireguard-go. Go binaries
# need only libc, so the unstable build runs on a stable system.
#
# Prints one line, NAME=PATH, for BENCH_EXTRA; everything else goes to
# stderr. Exit status 1 with a reason when anything fails.
set -eu
. "$(dirname "$0")/fetch_deb.sh"

fetch_deb fetch-wireguard-go wireguard-go "${1:-sid}"
bin=$FETCH_ROOT/usr/bin/wireguard-go
[ -x "$bin" ] || fetch_die "$FETCH_DEB holds no usr/bin/wireguard-go"
version=$("$bin" --version 2>&1 | head -n 1) || fetch_die "$bin does not run here: $version"
echo "fetch-wireguard-go: $version from $(basename "$FETCH_DEB")" >&2

name=wggo-$(printf '%s\n' "$version" | sed -n 's/.*v0\.0\.\([0-9]\{8\}\).*/\1/p')
[ "$name" != wggo- ] || name=wggo-${1:-sid}
echo "$name=$bin"
