# Installing ddpnet as a service, and its Debian package (included by the
# Makefile).
#   make install [PREFIX=/usr/local] [DESTDIR=]   the binary (Makefile), and
#       the systemd unit, man pages, bash completion and /etc/ddpnet (here)
#   make deb       build/ddpnet_VERSION_ARCH.deb, from `make install
#                  PREFIX=/usr` into a staging directory; runs nothing else
#   make packaging tests/packaging.sh: the layout, the unit, the pages, the
#                  completion and the package checked (part of `make test`)
#   make image     the OCI image ddpnet:VERSION (IMAGE=) from the package,
#                  no registry: dist/container/image.sh (root, podman)

# The package's version is the VERSION file's (the Makefile), which
# dist/deb/changelog's latest entry must name; `ddpnet --version` says the
# same, or git describe's longer name for a build between two tags.
DEB_REVISION ?= 1
DEB_VERSION   = $(VERSION_FILE)-$(DEB_REVISION)
DEB_ARCH     ?= $(shell dpkg --print-architecture 2>/dev/null)
DEB_MAINTAINER ?= Seed 7712704a maintainers <maintainers@users.noreply.a-seed-7712704a.example>
DEB           = build/ddpnet_$(DEB_VERSION)_$(DEB_ARCH).deb

BINDIR      = $(PREFIX)/bin
MANDIR      = $(PREFIX)/share/man
BASHCOMPDIR = $(PREFIX)/share/bash-completion/completions
# The unit and the cluster files live where systemd and the unit look,
# whatever the prefix: /etc/ddpnet is what ddpnet@.service reads. Units go
# where systemd reads a package's (systemd-analyze unit-paths):
# /lib/systemd/system for PREFIX=/usr (Debian 12 keeps packages' units
# there, and lintian wants them there), /usr/local/lib/systemd/system for
# the default /usr/local -- not /etc/systemd/system, which is the
# administrator's own, where a unit would override any package's.
SYSCONFDIR ?= /etc
UNITDIR    ?= $(if $(filter /usr,$(PREFIX)),/lib/systemd/system,$(PREFIX)/lib/systemd/system)

# What `make install` lays out beside the binary.
DIST_FILES := dist/ddpnet@.service dist/ddpnet.8 dist/ddpnet.conf.5 dist/ddpnet.bash-completion

.PHONY: install-dist deb packaging image
install: install-dist

# /etc/ddpnet is 0755: the cluster file in it is not secret (0644: the
# daemon reads it again on SIGHUP as the unprivileged ddpnet user, which
# must be able to reach it), and the key file guards itself -- the daemon
# refuses a key that is not root's or that group or others may read.
# Man pages are gzip -9n'd (no name or time inside: the same bytes on
# every build). With no DESTDIR, as root, the system user the unit's
# daemon drops to is made here: inside the unit's sandbox /etc is
# read-only, so the daemon could not make it itself.
install-dist: $(DIST_FILES)
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5 \
	  $(DESTDIR)$(BASHCOMPDIR) build/dist
	install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/ddpnet
	sed 's|@BINDIR@|$(BINDIR)|g' dist/ddpnet@.service > build/dist/ddpnet@.service
	install -m 0644 build/dist/ddpnet@.service $(DESTDIR)$(UNITDIR)/ddpnet@.service
	gzip -9n < dist/ddpnet.8 > build/dist/ddpnet.8.gz
	gzip -9n < dist/ddpnet.conf.5 > build/dist/ddpnet.conf.5.gz
	install -m 0644 build/dist/ddpnet.8.gz $(DESTDIR)$(MANDIR)/man8/ddpnet.8.gz
	install -m 0644 build/dist/ddpnet.conf.5.gz $(DESTDIR)$(MANDIR)/man5/ddpnet.conf.5.gz
	install -m 0644 dist/ddpnet.bash-completion $(DESTDIR)$(BASHCOMPDIR)/ddpnet
	$(Q)if [ -z "$(DESTDIR)" ] && ! getent passwd ddpnet >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    useradd --system --user-group --no-create-home --home-dir /nonexistent \
	      --shell /usr/sbin/nologin --comment "ddpnet daemon" ddpnet; \
	  else \
	    echo "make install: create the system user ddpnet as root before starting" \
	      "ddpnet@.service: useradd --system --user-group --no-create-home" \
	      "--home-dir /nonexistent --shell /usr/sbin/nologin ddpnet" >&2; \
	  fi; \
	fi

# The package: `make install PREFIX=/usr` into a staging tree laid out as
# dpkg-shlibdeps expects (build/deb/debian/ddpnet), the binary stripped,
# the Debian files, the Depends computed from the libraries the binary
# links, then dpkg-deb. No debhelper, no fakeroot: --root-owner-group
# makes every file root's.
DEB_STAGE := build/deb/debian/ddpnet
DEB_DOC   := $(DEB_STAGE)/usr/share/doc/ddpnet

deb: bin/ddpnet
	$(Q)rm -rf build/deb $(DEB)
	$(Q)$(MAKE) --no-print-directory install PREFIX=/usr DESTDIR=$(abspath $(DEB_STAGE))
	$(call quiet,DEB,$(DEB))strip --strip-unneeded --remove-section=.comment \
	  --remove-section=.note $(DEB_STAGE)/usr/bin/ddpnet
	$(Q)install -d $(DEB_DOC) $(DEB_STAGE)/DEBIAN
	$(Q)install -m 0644 dist/deb/copyright $(DEB_DOC)/copyright
	$(Q)gzip -9n < dist/deb/changelog > build/deb/changelog.Debian.gz
	$(Q)install -m 0644 build/deb/changelog.Debian.gz $(DEB_DOC)/changelog.Debian.gz
	$(Q)install -d $(DEB_STAGE)/usr/share/lintian/overrides
	$(Q)install -m 0644 dist/deb/lintian-overrides $(DEB_STAGE)/usr/share/lintian/overrides/ddpnet
	$(Q)install -m 0755 dist/deb/postinst dist/deb/prerm dist/deb/postrm $(DEB_STAGE)/DEBIAN/
	$(Q)top=$$(sed -n '1s/^ddpnet (\([^)]*\)).*/\1/p' dist/deb/changelog); \
	if [ "$$top" != "$(DEB_VERSION)" ]; then \
	  echo "make deb: dist/deb/changelog's latest entry is $$top, the package $(DEB_VERSION):" \
	    "add an entry (or set DEB_REVISION)" >&2; exit 1; \
	fi
	$(Q)printf 'Source: ddpnet\n\nPackage: ddpnet\nArchitecture: any\n' > build/deb/debian/control
	$(Q)depends=$$(cd build/deb && dpkg-shlibdeps -O -e debian/ddpnet/usr/bin/ddpnet | \
	  sed -n 's/^shlibs:Depends=//p'); \
	[ -n "$$depends" ] || { echo "make deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }; \
	size=$$(du -sk --exclude=DEBIAN $(DEB_STAGE) | cut -f1); \
	sed -e 's|@VERSION@|$(DEB_VERSION)|' -e 's|@ARCH@|$(DEB_ARCH)|' \
	  -e 's|@MAINTAINER@|$(DEB_MAINTAINER)|' -e "s|@INSTALLED_SIZE@|$$size|" \
	  -e "s|@DEPENDS@|$$depends|" dist/deb/control.in > $(DEB_STAGE)/DEBIAN/control
	$(Q)cd $(DEB_STAGE) && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | LC_ALL=C sort | \
	  xargs -d '\n' md5sum > DEBIAN/md5sums && chmod 0644 DEBIAN/control DEBIAN/md5sums
	$(Q)dpkg-deb --root-owner-group --build $(DEB_STAGE) $(DEB) >/dev/null
	@echo "built $(DEB)"

# 77: a tool it needs is missing (make deps-test installs them): skipped, as an
# e2e script that cannot run is -- but under DDPNET_NO_SKIP=1 (CI) a
# failure, unless docs/testing.md lists "packaging" as an expected skip.
packaging:
	$(Q)tests/packaging.sh || { rc=$$?; [ $$rc -eq 77 ] && \
	  { [ "$${DDPNET_NO_SKIP:-0}" != 1 ] || tests/expected_skip.sh packaging || \
	    { echo "packaging: skipped, and DDPNET_NO_SKIP=1: not an expected skip (docs/testing.md)" >&2; false; }; }; }

# The container image (docs/containers.md): the package installed into a
# Debian root that debootstrap makes once (build/image/cache, dist/debroot.sh,
# which tests/e2e/systemd_boot.sh shares), imported into podman's store
# under IMAGE; no registry is asked. tests/e2e/container.sh runs it.
IMAGE ?= ddpnet:$(VERSION_FILE)
image: deb
	$(Q)dist/container/image.sh $(DEB) $(IMAGE)
