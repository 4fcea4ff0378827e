# SPDX-License-Identifier: GPL-2.0
#
# ipoib-ng top-level Makefile.
#
#   make                      build ib_ipoib.ko and softib.ko for the running kernel
#   make KVER=<abi>           build against /usr/src/linux-headers-<abi>
#   make check                full suite on Debian's 6.1 and 6.12 kernels in QEMU
#   make check KSER=6.12      one kernel series only; TESTS="a b" runs a subset
#   make check-debug          the suite on a KASAN/kmemleak/lockdep kernel built
#                             from Debian's linux-source-6.1 (cached; not in check);
#                             GUESTS=2 shares it between two guests
#   make shell KSER=6.12      interactive guest shell with the modules built
#   make style | sparse       checkpatch / sparse (C=2, endian checks)
#   make install | dkms-install | dkms-uninstall
#   make fresh [FRESH=check]  README's "make demo" (or check) from a clone of
#                             HEAD in a new debootstrap'ed bookworm chroot
#
# Everything the suite needs (apt packages, test kernels) is installed by the
# "deps" and "kernels" targets, idempotently; "check" depends on both.

KVER ?= $(shell uname -r)
ifeq ($(origin KVER),command line)
KDIR ?= /usr/src/linux-headers-$(KVER)
else
KDIR ?= /lib/modules/$(KVER)/build
endif

PACKAGE_NAME := ipoib-ng
VERSION := $(shell git -C $(CURDIR) describe --tags --always --dirty 2>/dev/null || \
	     sed -n 's/^\#define IPOIB_NG_VERSION "\(.*\)"/\1/p' include/version.h)

# Test kernels: Debian bookworm metapackage per kernel series.
KSER ?= 6.1 6.12
CACHE ?= /var/cache/ipoib-ng
VM := selftests/vm

SOURCES := $(shell find drivers include -name '*.[ch]' ! -name '*.mod.c')

.PHONY: all module clean style sparse install dkms-install dkms-uninstall \
	deps kernels check check-debug shell demo bench fresh

all: module

module:
	@test -d $(KDIR) || { echo "error: no kernel build tree at $(KDIR);" \
		"install linux-headers-$(KVER) or pass KVER=/KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

clean:
	@test ! -d $(KDIR) || $(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf .build

style:
	@$(VM)/checkpatch.sh $(SOURCES)

sparse:
	@test -d $(KDIR) || { echo "error: no kernel build tree at $(KDIR)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) C=2 CF="-D__CHECK_ENDIAN__" modules 2>&1 | \
		tee .sparse.log; ! grep -E '(warning|error):' .sparse.log

install: module
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates modules_install
	depmod -a $(KVER)

dkms-install:
	rm -rf /usr/src/$(PACKAGE_NAME)-$(VERSION)
	mkdir -p /usr/src/$(PACKAGE_NAME)-$(VERSION)
	cp -r Kbuild Makefile dkms.conf drivers include LICENSE /usr/src/$(PACKAGE_NAME)-$(VERSION)/
	sed -i 's/^PACKAGE_VERSION=.*/PACKAGE_VERSION="$(VERSION)"/' \
		/usr/src/$(PACKAGE_NAME)-$(VERSION)/dkms.conf
	sed -i 's/^#define IPOIB_NG_VERSION ".*"/#define IPOIB_NG_VERSION "$(VERSION)"/' \
		/usr/src/$(PACKAGE_NAME)-$(VERSION)/include/version.h
	dkms add -m $(PACKAGE_NAME) -v $(VERSION)
	dkms build -m $(PACKAGE_NAME) -v $(VERSION)
	dkms install -m $(PACKAGE_NAME) -v $(VERSION)

dkms-uninstall:
	dkms remove -m $(PACKAGE_NAME) -v $(VERSION) --all

deps:
	@$(VM)/deps.sh

kernels: deps
	@for s in $(KSER); do $(VM)/kernels.sh fetch $$s || exit 1; done

check: kernels
	@selftests/run.sh $(KSER)

# The debug kernel (selftests/vm/debug-kernel.sh) is built once per config
# fragment and linux-source version. It is several times slower under TCG:
# every timeout is scaled, and a warning does not end the guest (each
# KASAN/lockdep report is collected; any of them still fails the run).
DEBUG_TIMEOUT_SCALE ?= 4
check-debug: deps
	@$(VM)/kernels.sh fetch debug
	@TIMEOUT_SCALE=$(DEBUG_TIMEOUT_SCALE) \
		GUEST_APPEND="panic_on_warn=0 kasan_multi_shot" selftests/run.sh debug

shell: kernels
	@selftests/run.sh --shell $(firstword $(KSER))

# the demo needs one kernel: the newer series by default
DEMO_KSER ?= 6.12
demo:
	@$(MAKE) --no-print-directory kernels KSER=$(DEMO_KSER)
	@selftests/run.sh --demo $(DEMO_KSER)

# sockperf (latency rows) and linux-perf (the profile) only the bench needs
bench: kernels
	@$(VM)/deps.sh sockperf linux-perf
	@selftests/run.sh --bench $(KSER)

# developer target, not CI: a brand-new Debian 12 (selftests/vm/fresh.sh)
FRESH ?= demo
fresh:
	@$(VM)/fresh.sh $(FRESH)
