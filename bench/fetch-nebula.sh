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
# ddpnet (1.11.0 in unstable when this was written). Nothing is installed
# (fetch_deb.sh): the package is unpacked to
# build/bench/nebula-SUITE/root/usr/bin/{nebula,nebula-cert} (Go binaries
# need only libc). The bench recognises a BENCH_EXTRA binary called
# `nebula` as Nebula (bench/tunnels.sh: a CA and two host certificates made
# with the nebula-cert beside it, at bench time).
#
# Prints one line, NAME=PATH, for BENCH_EXTRA; everything else goes to
# stderr. Exit status 1 with a reason when anything fails.
set -eu
. "$(dirname "$0")/fetch_deb.sh"

fetch_deb fetch-nebula nebula "${1:-sid}"
bin=$FETCH_ROOT/usr/bin/nebula
[ -x "$bin" ] || fetch_die "$FETCH_DEB holds no usr/bin/nebula"
[ -x "$FETCH_ROOT/usr/bin/nebula-cert" ] || fetch_die "$FETCH_DEB holds no usr/bin/nebula-cert"
version=$("$bin" -version 2>&1 | head -n 1) || fetch_die "$bin does not run here: $version"
echo "fetch-nebula: $version from $(basename "$FETCH_DEB")" >&2

v=$(printf '%s\n' "$version" | sed -n 's/^Version:[[:space:]]*\([0-9][0-9.]*\).*/\1/p')
echo "nebula-${v:-${1:-sid}}=$bin"
