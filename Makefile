# SPDX-License-Identifier: GPL-2.0
#
# ipoib-ng top-level Makefile.
#
#   make                      build ib_ipoib.ko and softib.ko for the running kernel
#   make KVER=<abi>           build against /usr/src/linux-headers-<abi>
#   make check                full suite on Debian's 6.1 and 6.12 kernels in QEMU
#   make check KSER=6.12      one kernel series only; TESTS="a b" runs a subset
#   make check-enhanced       datagram, partition, multicast, netns, churn,
#                             hostile and connected-mode tests on softib's
#                             rdma_netdev (enhanced=1), both drivers
#   make check-pair           two guests, 6.1 and 6.12, on one fabric: a QEMU
#                             datagram link between them (selftests/pair/);
#                             PAIR_TESTS="a b" runs a subset
#   make bench                IPoIB against in-tree and veth in one guest per
#                             series, then (both series) across the link
#   make bench-pair           that cross-guest part alone: two guests, ours and
#                             in-tree across softib's link, next to the underlay
#   make check-debug          the suite on a KASAN/kmemleak/lockdep kernel built
#                             from Debian's linux-source-6.1 (cached; not in check);
#                             GUESTS=2 shares it between two guests
#   make shell KSER=6.12      interactive guest shell with the modules built
#   make style | sparse       checkpatch / sparse (C=2, endian checks)
#   make install | dkms-install | dkms-uninstall
#   make deb                  .build/deb/{ipoib-ng,softib}-dkms_<version>_all.deb
#                             (dh-dkms), checked with lintian
#   make fresh [FRESH=check]  README's "make demo" (or check) from a clone of
#                             HEAD in a new debootstrap'ed bookworm chroot
#
# Everything the suite needs (apt packages, test kernels) is installed by the
# "deps" and "kernels" targets, idempotently ("kernels" also unpacks the
# OpenSM that the suite runs on softib); "check" depends on both.

KVER ?= $(shell uname -r)
ifeq ($(origin KVER),command line)
KDIR ?= /usr/src/linux-headers-$(KVER)
else
KDIR ?= /lib/modules/$(KVER)/build
endif

# the one version of modules, DKMS and package (see dkms.conf)
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\([^"]*\)"$$/\1/p' dkms.conf)
# the DKMS modules (scripts/dkms-tree) and Debian packages (<module>-dkms)
DKMS_MODULES := ipoib-ng softib
UDEV_RULE := udev/76-ipoib-ng.rules
KERNEL_HOOK := /etc/kernel/postinst.d/ipoib-ng
MODPROBE_CONF := /lib/modprobe.d/ipoib-ng.conf
MODPROBE_CMD := /usr/lib/ipoib-ng/modprobe-ib_ipoib

# Test kernels: Debian bookworm metapackage per kernel series.
KSER ?= 6.1 6.12
CACHE ?= /var/cache/ipoib-ng
VM := selftests/vm

SOURCES := $(shell find drivers include -name '*.[ch]' ! -name '*.mod.c')

.PHONY: all module clean style sparse install dkms-install dkms-uninstall \
	deb deps kernels check check-enhanced check-pair check-debug shell demo \
	bench bench-pair fresh

all: module

module:
	@test -d $(KDIR) || { echo "error: no kernel build tree at $(KDIR);" \
		"install linux-headers-$(KVER) or pass KVER=/KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) IPOIB_NG_WERROR=1 modules

clean:
	@test ! -d $(KDIR) || $(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf .build

style:
	@$(VM)/checkpatch.sh $(SOURCES)

sparse:
	@test -d $(KDIR) || { echo "error: no kernel build tree at $(KDIR)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) C=2 CF="-D__CHECK_ENDIAN__" IPOIB_NG_WERROR=1 modules 2>&1 | \
		tee .sparse.log; ! grep -E '(warning|error):' .sparse.log

install: module
	$(MAKE) -C $(KDIR) M=$(CURDIR) IPOIB_NG_WERROR=1 INSTALL_MOD_DIR=updates modules_install
	depmod -a $(KVER)

# dkms-install is idempotent: the same sources keep their builds, changed
# sources replace them. dkms builds for the running kernel (and, through
# its kernel hook, for every kernel installed later). Two DKMS modules,
# as the two Debian packages: ipoib-ng (ib_ipoib) and softib.
dkms-install:
	@command -v dkms >/dev/null || { echo "error: dkms is not installed:" \
		"apt-get install dkms linux-headers-$$(uname -r)" >&2; exit 1; }
	@set -e; for m in $(DKMS_MODULES); do \
		tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
		src=/usr/src/$$m-$(VERSION); scripts/dkms-tree $$m $$tmp; \
		if [ -d $$src ] && ! diff -r -q $$tmp $$src >/dev/null; then \
			echo "$$src differs from this tree: replacing it and its builds"; \
			dkms remove -m $$m -v $(VERSION) --all >/dev/null 2>&1 || true; \
			rm -rf $$src; \
		fi; \
		if [ ! -d $$src ]; then mkdir -p $$src; cp -a $$tmp/. $$src/; fi; \
		rm -rf "$$tmp"; \
		dkms status -m $$m -v $(VERSION) | grep -q . || dkms add -m $$m -v $(VERSION); \
		echo "dkms install -m $$m -v $(VERSION)"; \
		dkms install -m $$m -v $(VERSION); \
	done
	install -D -m 644 $(UDEV_RULE) /etc/udev/rules.d/$(notdir $(UDEV_RULE))
	install -D -m 755 scripts/kernel-postinst $(KERNEL_HOOK)
	install -D -m 644 scripts/ipoib-ng-modprobe.conf $(MODPROBE_CONF)
	install -D -m 755 scripts/modprobe-ib_ipoib $(MODPROBE_CMD)
	-@udevadm control --reload 2>/dev/null

dkms-uninstall:
	@command -v dkms >/dev/null || { echo "error: dkms is not installed" >&2; exit 1; }
	rm -f /etc/udev/rules.d/$(notdir $(UDEV_RULE)) $(KERNEL_HOOK) \
		$(MODPROBE_CONF) $(MODPROBE_CMD)
	-@rmdir $(dir $(MODPROBE_CMD)) 2>/dev/null
	@for m in $(DKMS_MODULES); do \
		if dkms status -m $$m -v $(VERSION) | grep -q .; then \
			echo "dkms remove -m $$m -v $(VERSION) --all"; \
			dkms remove -m $$m -v $(VERSION) --all || exit 1; \
		else echo "$$m $(VERSION) is not in dkms: nothing to remove"; fi; \
		rm -rf /usr/src/$$m-$(VERSION); \
	done

# The package is built from the committed tree (git archive) when there is
# one, else from this directory's files: never from local objects.
DEB_DIR := .build/deb
DEBS := $(foreach m,$(DKMS_MODULES),$(DEB_DIR)/$(m)-dkms_$(VERSION)_all.deb)
deb:
	@$(VM)/deps.sh --only build-essential debhelper dh-dkms lintian git
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/src
	@if git -C $(CURDIR) rev-parse --git-dir >/dev/null 2>&1; then \
		git -C $(CURDIR) archive HEAD | tar -x -C $(DEB_DIR)/src; \
	else \
		tar -c --exclude=./.build --exclude='*.o' --exclude='*.ko' . | tar -x -C $(DEB_DIR)/src; \
	fi
	cd $(DEB_DIR)/src && dpkg-buildpackage -us -uc -b >../build.log 2>&1 || \
		{ tail -n 30 ../build.log; exit 1; }
	lintian --fail-on error,warning --info $(DEBS)
	@echo "built $(DEBS)"

deps:
	@$(VM)/deps.sh

kernels: deps
	@for s in $(KSER); do $(VM)/kernels.sh fetch $$s || exit 1; done
	@$(VM)/opensm.sh fetch

check: kernels
	@selftests/run.sh $(KSER)

# Enhanced IPoIB, as on ConnectX-4 and later: every IPoIB netdev on the
# provider's datapath. Ours keeps connected mode there; in-tree's
# connected-mode tests check its EINVAL and skip the rest.
ENHANCED_TESTS ?= 40-datagram 43-enhanced 45-connected 46-connected-children \
	47-mode-flip 48-connected-nonsrq 49-cm-faults 49-cm-qp-error \
	49-cm-qp-events 49-cm-rnr 49-cm-stop 50-partitions 52-mcast-groups \
	54-umcast 55-pkey-change 57-forged-arp 65-hostile-ud 68-mcast-scale \
	89-isolation 90-netns-children 96-churn-traffic
check-enhanced: kernels
	@SOFTIB_PARAMS=enhanced=1 TESTS="$(ENHANCED_TESTS)" selftests/run.sh $(KSER)

# Two guests at once, node 1 on the first series and node 2 on the second,
# joined by a QEMU datagram network that never leaves this machine
# (run.sh --pair, Documentation/testing.rst). Not part of check yet.
PAIR_KSER ?= 6.1 6.12
check-pair:
	@$(MAKE) --no-print-directory kernels KSER="$(PAIR_KSER)"
	@selftests/run.sh --pair $(PAIR_KSER)

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

# sockperf (latency rows) and linux-perf (the profile) only the bench needs;
# with both series it ends with the cross-guest bench (bench-pair)
bench: kernels
	@$(VM)/deps.sh sockperf linux-perf
	@selftests/run.sh --bench $(KSER)

bench-pair:
	@$(MAKE) --no-print-directory kernels KSER="$(PAIR_KSER)"
	@$(VM)/deps.sh sockperf
	@selftests/run.sh --pair-bench $(PAIR_KSER)

# developer target, not CI: a brand-new Debian 12 (selftests/vm/fresh.sh)
FRESH ?= demo
fresh:
	@$(VM)/fresh.sh $(FRESH)
