# ddpnet build.
#   make            build bin/ddpnet
#   make deps       install the Debian packages the build and the package need (root, apt-get)
#   make deps-test  and those the tests and the demo need (make test and make demo do it)
#   make unit       unit tests, plain and under ASan+UBSan
#   make fuzz       each libFuzzer harness for FUZZ_SECONDS (default 300)
#   make test       everything the project tests: deps-test, then check-layers, spdx-check,
#                   docs-check, unit, packaging, fuzz-smoke, mutants, e2e (about 35 minutes);
#                   docs/testing.md lists every target
#   make docs-check every shell block of README.md and docs/ run, or marked an example
#   make check-layers / spdx-check / packaging / fuzz-smoke / e2e   one part of make test
#   make mutants    each central check deleted in turn: some test must fail (tests/mutants.list)
#   make install / deb / demo / bench / scale / version   (docs/testing.md, bench/README.md)
#   make spdx       add the SPDX licence line to source files that lack it (make spdx-check checks)
#   make clean
# Quiet unless V=1. Warnings are errors.

V ?= 0
ifeq ($(V),0)
Q := @
quiet = @printf '  %-7s %s\n' $(1) $(2);
else
Q :=
quiet =
endif

CC      ?= cc
FUZZ_CC ?= clang
CSTD    := -std=gnu11 -D_GNU_SOURCE
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wcast-qual -Werror
CFLAGS  ?= -O2 -g
ALL_CFLAGS = $(CSTD) $(CFLAGS) $(WARN) -I. -MMD -MP
SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
TSAN    := -fsanitize=thread -fno-omit-frame-pointer
LDLIBS  := -lsodium -lmnl -luring -lmicrohttpd -lcurl -ljson-c
TEST_LDLIBS := $(LDLIBS) -lcmocka
# OpenSSL's libcrypto (3.0 or later), when its headers are installed, is a
# second AEAD backend (crypto/aead_openssl.c); HAVE_OPENSSL=0 leaves it out
# (after a make clean: objects do not track the flag).
HAVE_OPENSSL ?= $(shell pkg-config --atleast-version=3.0 libcrypto 2>/dev/null && echo 1)
ifeq ($(HAVE_OPENSSL),1)
CSTD        += -DDDPNET_HAVE_OPENSSL $(shell pkg-config --cflags libcrypto)
LDLIBS      += $(shell pkg-config --libs libcrypto)
TEST_LDLIBS += $(shell pkg-config --libs libcrypto)
endif
# Unit tests count our code's allocations (tests/unit/alloc_count.h).
TEST_WRAP   := $(foreach f,malloc calloc realloc sodium_malloc,-Wl,--wrap=$(f))
# test_loop_tun makes the ring's waits fail as the kernel may.
$(foreach v,plain asan tsan,build/$(v)/unit/test_loop_tun): \
  TEST_WRAP += -Wl,--wrap=io_uring_submit_and_wait_timeout

# The shared test vectors live beside the checkout (../shared/vectors).
VECTORS ?= $(abspath $(CURDIR)/../shared/vectors)
export DDPNET_VECTORS := $(VECTORS)

FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 10

# The version, from one place: the VERSION file, or `git describe` where
# the checkout has that version's tag (v0.4.0: then 0.4.0-3-gabc1234 three
# commits on, -dirty with uncommitted changes). overlay/base/version.c
# alone is built with it; build/version.txt changes only when it does, so
# a new version rebuilds that one object. The Debian package is
# VERSION's (dist/dist.mk), as dist/deb/changelog must name it.
VERSION_FILE := $(shell cat VERSION)
VERSION      := $(or $(shell git describe --tags --match 'v$(VERSION_FILE)' --dirty 2>/dev/null | \
                  sed 's/^v//'),$(VERSION_FILE))

# Everything but the CLI entry point is library code that tests link against.
MODULE_SRC  := $(wildcard crypto/*.c config/*.c tun/*.c) \
               $(filter-out overlay/cli/main.c,$(wildcard overlay/*/*.c overlay/*/*/*.c))
UNIT_TESTS  := $(wildcard tests/unit/test_*.c)
UNIT_HELP   := $(filter-out $(UNIT_TESTS),$(wildcard tests/unit/*.c))
FUZZ_SRC    := $(wildcard tests/fuzz/fuzz_*.c)

PLAIN_LIB   := build/plain/libddpnet.a
ASAN_LIB    := build/asan/libddpnet.a
PLAIN_TESTS := $(UNIT_TESTS:tests/unit/%.c=build/plain/unit/%)
ASAN_TESTS  := $(UNIT_TESTS:tests/unit/%.c=build/asan/unit/%)
# The tests whose threads share state (shards, their crypto jobs, the
# crypto workers, the I/O lanes) again under ThreadSanitizer.
TSAN_LIB    := build/tsan/libddpnet.a
TSAN_TESTS  := $(patsubst %,build/tsan/unit/%,test_shard test_deferred)
# The daemon under ThreadSanitizer, for the e2e script that runs shards
# with it (tests/e2e/tsan_shards.sh).
TSAN_DAEMON := build/tsan/ddpnet
FUZZERS     := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/bin/%)

# What `make`, `make install` and `make deb` need (make deps): the
# compiler, the libraries' headers (libssl-dev: the OpenSSL AEAD backend,
# optional: the build works without) and dpkg-shlibdeps for the
# package's Depends.
BUILD_DEB_PKGS := make gcc pkg-config libc6-dev libsodium-dev libmnl-dev \
                  liburing-dev libmicrohttpd-dev libcurl4-openssl-dev libjson-c-dev \
                  libssl-dev dpkg-dev
# What the tests and the demo add (make deps-test; make test and make demo
# install them). The unit tests and fuzzers: cmocka, clang. The
# end-to-end tests and the demo (tests/e2e), with --no-install-recommends
# as deps installs: wireguard-tools would pull a kernel. What
# tests/packaging.sh runs: man and its renderer (groff-base is enough for
# man pages on a terminal), lintian, systemd-analyze (systemd need not be
# PID 1). tests/e2e/systemd_boot.sh and slurm.sh: systemd-nspawn
# (systemd-container) and debootstrap, which makes the machines' Debian
# root once (Slurm, munge and torch go into slurm.sh's root, not here).
TEST_DEB_PKGS := clang libcmocka-dev \
                 iproute2 iperf3 nftables iptables wireguard-tools wireguard-go \
                 python3 python3-torch procps iputils-ping util-linux prometheus \
                 etcd-server etcd-client tmux \
                 man-db groff-base lintian systemd \
                 systemd-container debootstrap podman runc

.PHONY: all deps deps-test unit unit-plain unit-asan unit-tsan test fuzz fuzz-smoke clean check-layers
.PHONY: e2e demo install
.DELETE_ON_ERROR:

all: bin/ddpnet

bin/ddpnet: build/plain/overlay/cli/main.o $(PLAIN_LIB)
	$(call quiet,LD,$@)mkdir -p bin && $(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(TSAN_DAEMON): build/tsan/overlay/cli/main.o $(TSAN_LIB)
	$(call quiet,LD,$@)mkdir -p $(dir $@) && $(CC) $(CFLAGS) $(TSAN) -o $@ $^ $(LDLIBS)

PREFIX ?= /usr/local
install: bin/ddpnet
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/ddpnet $(DESTDIR)$(PREFIX)/bin/ddpnet

# The unit, man pages, bash completion and /etc/ddpnet; make deb.
include dist/dist.mk

# apt-get install of what of $(1) is missing; root only when something is.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make $@: need root to install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(BUILD_DEB_PKGS))

deps-test:
	$(call install_missing,$(BUILD_DEB_PKGS) $(TEST_DEB_PKGS))

# --- objects and libraries --------------------------------------------------

# Objects a pattern rule made on the way (a test's, a fuzzer's, a tool's)
# are kept: make would delete them at the end, rebuild them next time, and
# print a line naming every one (hundreds, burying a failure in CI's log).
.SECONDARY:

build/plain/%.o: %.c
	$(call quiet,CC,$<)mkdir -p $(dir $@) && $(CC) $(ALL_CFLAGS) -c $< -o $@

build/asan/%.o: %.c
	$(call quiet,CC-SAN,$<)mkdir -p $(dir $@) && $(CC) $(ALL_CFLAGS) $(SAN) -c $< -o $@

build/tsan/%.o: %.c
	$(call quiet,CC-TSAN,$<)mkdir -p $(dir $@) && $(CC) $(ALL_CFLAGS) $(TSAN) -c $< -o $@

build/version.txt: FORCE
	$(Q)mkdir -p build && { [ "$$(cat $@ 2>/dev/null)" = '$(VERSION)' ] || echo '$(VERSION)' > $@; }
build/%/overlay/base/version.o: build/version.txt
build/%/overlay/base/version.o: CSTD += -DDDPNET_VERSION='"$(VERSION)"'
.PHONY: FORCE version
FORCE:
# What the build would call itself (make version).
version:
	@echo '$(VERSION)'

$(PLAIN_LIB): $(MODULE_SRC:%.c=build/plain/%.o)
	$(call quiet,AR,$@)rm -f $@ && ar rcs $@ $^

$(ASAN_LIB): $(MODULE_SRC:%.c=build/asan/%.o)
	$(call quiet,AR,$@)rm -f $@ && ar rcs $@ $^

$(TSAN_LIB): $(MODULE_SRC:%.c=build/tsan/%.o)
	$(call quiet,AR,$@)rm -f $@ && ar rcs $@ $^

# --- unit tests ---------------------------------------------------------------

build/plain/unit/%: build/plain/tests/unit/%.o $(UNIT_HELP:%.c=build/plain/%.o) $(PLAIN_LIB)
	$(call quiet,LD,$@)mkdir -p $(dir $@) && $(CC) $(CFLAGS) $(TEST_WRAP) -o $@ $^ $(TEST_LDLIBS)

build/asan/unit/%: build/asan/tests/unit/%.o $(UNIT_HELP:%.c=build/asan/%.o) $(ASAN_LIB)
	$(call quiet,LD,$@)mkdir -p $(dir $@) && $(CC) $(CFLAGS) $(SAN) $(TEST_WRAP) -o $@ $^ $(TEST_LDLIBS)

build/tsan/unit/%: build/tsan/tests/unit/%.o $(UNIT_HELP:%.c=build/tsan/%.o) $(TSAN_LIB)
	$(call quiet,LD,$@)mkdir -p $(dir $@) && $(CC) $(CFLAGS) $(TSAN) $(TEST_WRAP) -o $@ $^ $(TEST_LDLIBS)

unit: unit-plain unit-asan unit-tsan

# The unit tests that start an etcd of their own and time its answers:
# tests/run-unit.sh never runs two of them at once.
export UNIT_SERIAL := test_etcd test_registry test_registry_flood test_registry_join test_vouch

unit-plain: $(PLAIN_TESTS)
	$(Q)tests/run-unit.sh plain $(PLAIN_TESTS)

unit-asan: $(ASAN_TESTS)
	$(Q)ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  tests/run-unit.sh asan $(ASAN_TESTS)

# A data race fails the test (exit status 66), as a failed assertion does.
unit-tsan: $(TSAN_TESTS)
	$(Q)TSAN_OPTIONS=halt_on_error=1:exitcode=66 tests/run-unit.sh tsan $(TSAN_TESTS)

# deps-test first: what the tests run is installed (root) where missing.
# Then each part in turn (tests/run-parts.sh): a failed part does not stop
# the others; each one's result and time are printed at the end.
TEST_PARTS := build-tests check-layers spdx-check docs-check unit packaging fuzz-smoke \
              mutants mutants-baseline e2e
test: deps-test
	$(Q)tests/run-parts.sh $(TEST_PARTS)

# Everything the parts run, built first on every core (the parts then
# find it built, and run one at a time).
NPROC := $(shell nproc 2>/dev/null || echo 1)
.PHONY: build-tests
build-tests:
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) bin/ddpnet $(PLAIN_TESTS) $(ASAN_TESTS) \
	  $(TSAN_TESTS) $(TSAN_DAEMON) $(FUZZERS) $(E2E_TOOLS)

# Every shell block of README.md and docs/*.md runs, or is marked an
# example (tests/docs_blocks.sh; the convention is in docs/testing.md).
.PHONY: docs-check
docs-check: bin/ddpnet
	$(Q)tests/docs_blocks.sh

# Each central check deleted in turn; the tests that must notice it
# (tests/mutants.list). About two minutes; fails if a mutant survives.
.PHONY: mutants mutants-baseline
mutants:
	$(Q)tests/mutants.sh

# The mutants of the files with CPU-specific paths again, with those paths
# off (DDPNET_CPU=baseline): as a CPU without AVX2 or AVX-512 would judge
# them. On such a CPU, the same as `make mutants` did for them.
mutants-baseline:
	$(Q)DDPNET_CPU=baseline MUTANTS_FILES='^(crypto/aead|tun/offload)\.c$$' tests/mutants.sh

# The shape of the tree: which folder may include which (HACKING.md).
# The call circles are read from the objects (tests/call_circles.py):
# they are built first.
check-layers: bin/ddpnet
	$(Q)tests/check_layers.sh

# Every source file's licence line (LICENSE: MIT): spdx-check fails naming
# each file without it; spdx adds it where it is missing.
.PHONY: spdx spdx-check
spdx-check:
	$(Q)tests/spdx.sh
spdx:
	$(Q)tests/spdx.sh --add

# --- the AEAD benchmark (bench/aead_bench.c; `make bench` builds and runs it) ----

build/bench/aead_bench: bench/aead_bench.c $(PLAIN_LIB)
	$(call quiet,LD,$@)mkdir -p $(dir $@) && $(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# --- end-to-end tests and the demo (root, network namespaces) -------------------

# Helpers the e2e scripts run (tests/e2e/tools: the handshake flooder).
E2E_TOOLS := $(patsubst tests/e2e/tools/%.c,build/tools/%,$(wildcard tests/e2e/tools/*.c))

build/tools/%: build/plain/tests/e2e/tools/%.o $(PLAIN_LIB)
	$(call quiet,LD,$@)mkdir -p $(dir $@) && $(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# Each script in tests/e2e under a time limit, E2E_JOBS of them side by
# side (tests/e2e/run.sh: a script that needs the machine to itself says
# so); skips itself (exit 77) where it cannot run. Once, on the daemon's
# default: shards, one per core (overlay/loop/shard.h); the scripts that
# must cover one loop pin DDPNET_SHARDS=1 themselves.
E2E_JOBS ?= 3
e2e: bin/ddpnet $(TSAN_DAEMON) $(E2E_TOOLS)
	$(Q)E2E_JOBS=$(E2E_JOBS) tests/e2e/run.sh

# deps-test first, so the build and the demo find what they need.
demo: deps-test
	$(Q)$(MAKE) --no-print-directory bin/ddpnet
	$(Q)tests/e2e/demo.sh

# --- fuzzing (clang, libFuzzer) --------------------------------------------------

FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer

build/fuzz/obj/%.o: %.c
	$(call quiet,CC-FUZZ,$<)mkdir -p $(dir $@) && \
	  $(FUZZ_CC) $(CSTD) -O1 -g $(WARN) -I. -MMD -MP $(FUZZ_FLAGS) -c $< -o $@

build/fuzz/libddpnet.a: $(MODULE_SRC:%.c=build/fuzz/obj/%.o)
	$(call quiet,AR,$@)rm -f $@ && ar rcs $@ $^

build/fuzz/bin/%: build/fuzz/obj/tests/fuzz/%.o build/fuzz/libddpnet.a
	$(call quiet,LD,$@)mkdir -p $(dir $@) && \
	  $(FUZZ_CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS)

fuzz: $(FUZZERS)
	$(Q)tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZERS)

# A short run of every harness, so that `make test` keeps them building and clean.
fuzz-smoke: $(FUZZERS)
	$(Q)tests/fuzz/run.sh $(FUZZ_SMOKE_SECONDS) $(FUZZERS)

clean:
	rm -rf build bin

# Not under build/systemd-root or build/image: Debian trees (rc2.d...) of
# the boot test and the image.
-include $(shell find build \( -path build/systemd-root -o -path build/image \) -prune -o \
  -name '*.d' -type f -print 2>/dev/null)

# --- benchmarks (root, network namespaces; not part of `make test`) ----------

# ddpnet side by side with the bare veth and other userspace WireGuards,
# two nodes, and what a training job sees on three (all_reduce, a relay);
# see bench/README.md (BENCH_ONLY, BENCH_ROUNDS, BENCH_SECONDS, BENCH_QUICK,
# BENCH_EXTRA). The delay line of the wan part is an e2e tool.
# The AEAD floor comes from build/bench/aead_bench, built here when its
# source exists; if it does not build, the bench says the floor is missing.
# The scale runs (bench/scale_series.sh, each bench/scale.sh): SCALE_SIZES
# ("64 128 256") nodes through etcd and 128 under an authority; time to
# full mesh, memory, idle CPU, etcd requests, the targets. Many minutes.
# With SCALE_NODES or SCALE_AUTHORITY given, that one run alone.
.PHONY: scale
scale: bin/ddpnet
	$(Q)if [ -n "$${SCALE_NODES:-}$${SCALE_AUTHORITY:-}" ]; then bench/scale.sh; \
	else bench/scale_series.sh; fi

.PHONY: bench
bench: bin/ddpnet build/tools/delayline
	$(Q)aead=build/bench/aead_bench; \
	if [ -f bench/aead_bench.c ] && ! $(MAKE) --no-print-directory $$aead; then \
	  echo "bench: $$aead did not build: no AEAD floor this run" >&2; aead=; \
	fi; \
	BENCH_AEAD_BIN=$$aead bash bench/bench.sh
