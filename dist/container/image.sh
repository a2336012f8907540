#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make image: the OCI image ddpnet:VERSION, from the package, with no
# registry. A Debian minbase root with the .deb's Depends (dist/debroot.sh:
# debootstrap once, cached in build/image/cache/), copied, the .deb
# installed into the copy with dpkg (the ddpnet user the daemon drops to
# made first, at a fixed id: DDPNET_ID below), what a running node never
# reads removed (apt's lists and caches, documentation but the copyright
# files, locales, logs), then `podman import` with the image's configuration: the daemon
# in the foreground as its command, on the key and cluster file a
# container mounts read-only, run by entrypoint.sh (`ddpnet down` after
# it, as the unit's ExecStopPost). docs/containers.md says how to run it.
#
# Beside it, the seccomp profile the daemon needs, in the image at
# /usr/share/ddpnet/seccomp.json and in build/image/seccomp.json: the
# default profile of podman (containers-common) plus io_uring's three
# calls, which it refuses (ENOSYS) and the daemon's event loop is made
# of; nothing else is added.
#
#   dist/container/image.sh DEB TAG
#
# Root (debootstrap, chroot). Environment: DEBIAN_MIRROR (default: this
# system's apt sources), IMAGE_SUITE (bookworm).
set -eu
DEB=$1 TAG=$2
SUITE=${IMAGE_SUITE:-bookworm}
ROOT_FORMAT=1   # raise when what is done to the cached root changes
# The ddpnet user's uid and gid in the image. The package's postinst would
# take the first free system id (100 in a bare root), which on a Debian
# host is another system user's (messagebus, systemd-*): the host would
# show the daemon as that user, and files it writes in a mounted volume
# as theirs. 64900 is outside base-passwd's static ids (0-99), adduser's
# dynamic system ids (100-999) and people's (1000-59999); in Debian's
# range of ids allocated on demand (60000-64999) it is one that
# base-passwd's registry does not hold (slurm's is 64030, libvirt-qemu's
# 64055); not nobody (65534).
DDPNET_ID=64900
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$top/build/image
die() { echo "make image: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
for t in debootstrap dpkg-deb podman chroot flock sha256sum python3; do
    command -v "$t" >/dev/null || die "missing tool: $t (make deps-test installs it)"
done
[ -f "$DEB" ] || die "no package $DEB (make deb)"
default_seccomp=/usr/share/containers/seccomp.json
[ -f "$default_seccomp" ] || die "no $default_seccomp (podman's containers-common)"

. "$top/dist/debroot.sh"
rc=0
debroot_make "$work/cache" "$SUITE" "$ROOT_FORMAT" $(debroot_needs "$DEB" Depends) || rc=$?
[ "$rc" != 2 ] || die "cannot reach the Debian archive: $DEBROOT_WHY"
[ "$rc" = 0 ] || die "$DEBROOT_WHY"
echo "  ROOT    $DEBROOT ($DEBROOT_COST)"

# What the image is made of: the package's control fields and the
# md5sums of its files (not the .deb's bytes, whose times change with
# every make deb), the root and this builder. An image under TAG made of
# the same is kept (make image, and the e2e test, run again cost
# nothing).
source=$( { dpkg-deb -f "$DEB"; dpkg-deb -I "$DEB" md5sums; basename "$DEBROOT"
            cat "$0" "$top/dist/debroot.sh" "$top/dist/container/entrypoint.sh" "$default_seccomp"; } | sha256sum | cut -c1-16)
if [ "$(podman image inspect -f '{{index .Labels "ddpnet.source"}}' "$TAG" 2>/dev/null)" = "$source" ]; then
    echo "image $TAG is up to date (source $source)"
    exit 0
fi

rootfs=$work/rootfs
rm -rf "$rootfs"
cp -a --reflink=auto "$DEBROOT" "$rootfs"
rm -f "$rootfs/.complete"
cp "$DEB" "$rootfs/tmp/ddpnet.deb"
# No daemon may start in the chroot (Debian's policy-rc.d convention).
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 755 "$rootfs/usr/sbin/policy-rc.d"
# The user first: the postinst keeps a ddpnet user that is there.
chroot "$rootfs" groupadd --system --gid "$DDPNET_ID" ddpnet ||
    die "groupadd ddpnet (gid $DDPNET_ID) in the image's root failed"
chroot "$rootfs" useradd --system --uid "$DDPNET_ID" --gid ddpnet --no-create-home \
    --home-dir /nonexistent --shell /usr/sbin/nologin ddpnet ||
    die "useradd ddpnet (uid $DDPNET_ID) in the image's root failed"
LC_ALL=C DEBIAN_FRONTEND=noninteractive chroot "$rootfs" dpkg -i /tmp/ddpnet.deb \
    >"$work/dpkg.log" 2>&1 || die "dpkg -i in the image's root failed: $(tail -n 5 "$work/dpkg.log")"
[ "$(chroot "$rootfs" id -u ddpnet)" = "$DDPNET_ID" ] || die "the image's ddpnet user is not uid $DDPNET_ID"
rm -f "$rootfs/tmp/ddpnet.deb" "$rootfs/usr/sbin/policy-rc.d"
# What a node never reads. Copyright files stay (the licences travel
# with the binaries).
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old \
    "$rootfs"/var/log/* "$rootfs"/usr/share/man "$rootfs"/usr/share/info \
    "$rootfs"/usr/share/locale "$rootfs"/usr/share/lintian "$rootfs"/usr/share/bash-completion
find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
mkdir -p "$work" "$rootfs/usr/share/ddpnet"
python3 - "$default_seccomp" >"$work/seccomp.json" <<'PYEOF'
import json, sys
profile = json.load(open(sys.argv[1]))
profile["syscalls"].append({
    "names": ["io_uring_setup", "io_uring_enter", "io_uring_register"],
    "action": "SCMP_ACT_ALLOW",
    "comment": "ddpnet: its event loop is io_uring (overlay/loop)",
})
json.dump(profile, sys.stdout, indent=1)
print()
PYEOF
install -m 0644 "$work/seccomp.json" "$rootfs/usr/share/ddpnet/seccomp.json"
install -D -m 0755 "$top/dist/container/entrypoint.sh" "$rootfs/usr/lib/ddpnet/entrypoint"
# The image's /etc/hosts and /etc/hostname are podman's (or the
# mount's) at run time; the build host's must not leak in.
: >"$rootfs/etc/hostname"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$rootfs/etc/hosts"

version=${TAG##*:}
old=$(podman image inspect -f '{{.Id}}' "$TAG" 2>/dev/null) || old=""
tar --numeric-owner --xattrs -C "$rootfs" -c . |
    podman import \
        --change 'ENTRYPOINT ["/usr/lib/ddpnet/entrypoint"]' \
        --change 'CMD ["up", "--foreground", "-c", "/etc/ddpnet/ddp0.conf", "-k", "/etc/ddpnet/ddp0.key"]' \
        --change 'STOPSIGNAL SIGTERM' \
        --change "LABEL org.opencontainers.image.title=ddpnet" \
        --change "LABEL org.opencontainers.image.version=$version" \
        --change "LABEL org.opencontainers.image.description=ddpnet overlay node (docs/containers.md)" \
        --change "LABEL ddpnet.source=$source" \
        --message "ddpnet $version from $(basename "$DEB")" \
        - "$TAG" >"$work/import.log" 2>&1 || die "podman import failed: $(tail -n 5 "$work/import.log")"
rm -rf "$rootfs"
# The image this one replaces under TAG, unless a container still uses it.
[ -z "$old" ] || podman rmi "$old" >/dev/null 2>&1 || true
size=$(podman image inspect -f '{{.Size}}' "$TAG")
echo "built image $TAG ($((size / 1000000)) MB, source $source)"
