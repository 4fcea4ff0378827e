#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The debug test kernel of "make check-debug".
#
#   debug-kernel.sh build   build it unless cached; print its ABI
#   debug-kernel.sh abi     print the ABI of the cached build
#   debug-kernel.sh kdir    print its build tree (KDIR for our modules)
#
# Source: Debian's linux-source-6.1 package (installed by deps.sh),
# unpacked once per package version into $DK/src-<version>/. Config:
# "make defconfig" plus the fragment selftests/vm/debug-kernel.config
# (merge_config.sh); every option the fragment sets is checked to have
# survived olddefconfig. The build tree is $DK/<key>/, where <key> hashes
# the fragment and the package version: a change of either builds a new
# tree (the old one is removed once the new one is done); otherwise the
# cached build is used at once. The image and the installed modules go to
# $CACHE/kernels/<abi>/, the layout run-guest.sh boots, and
# $CACHE/kernels/debug.abi names it (kernels.sh abi debug).
#
# The build runs under "nice -n 19 make -j$DEBUG_KERNEL_JOBS" (default 2):
# the machine's cores are shared. Its log is $DK/<key>/build.log, its
# duration in seconds $DK/<key>/build-seconds.

set -euo pipefail

CACHE=${CACHE:-/var/cache/ipoib-ng}
DK=$CACHE/debug-kernel
KCACHE=$CACHE/kernels
VM=$(dirname "$(readlink -f "$0")")
FRAGMENT=$VM/debug-kernel.config
PKG=linux-source-6.1
TARBALL=/usr/src/linux-source-6.1.tar.xz
JOBS=${DEBUG_KERNEL_JOBS:-2}

die() { echo "debug-kernel: $*" >&2; exit 1; }

pkg_version() {
	dpkg-query -W -f='${Version}' "$PKG" 2>/dev/null
}

# key VERSION: the cache key of a build of the fragment from VERSION.
key() {
	{ cat "$FRAGMENT"; echo "$PKG $1"; } | sha256sum | cut -c1-12
}

# unpack VERSION: the package's source tree, once per version.
unpack() {
	local src=$DK/src-$1 tmp

	[[ -e $src/.ipoib-ng-done ]] && return 0
	[[ -r $TARBALL ]] || die "no $TARBALL although $PKG $1 is installed"
	echo "debug-kernel: unpacking $TARBALL" >&2
	rm -rf "$src"
	tmp=$(mktemp -d "$DK/.src.XXXXXX")
	tar -xf "$TARBALL" -C "$tmp"
	mv "$tmp/linux-source-6.1" "$src"
	rmdir "$tmp"
	touch "$src/.ipoib-ng-done"
}

# check_config CONFIG: every CONFIG_X=v and "# CONFIG_X is not set" of
# the fragment is what CONFIG holds (a dependency the fragment misses makes
# olddefconfig drop an option silently: say which).
check_config() {
	local cfg=$1 k v got bad=0

	while IFS='=' read -r k v; do
		got=$(sed -n "s/^$k=//p; s/^# $k is not set\$/n/p" "$cfg")
		[[ ${got:-n} == "$v" ]] && continue
		echo "debug-kernel: $k: the fragment wants '$v', the config has '${got:-n}'" >&2
		bad=1
	done < <(sed -nE 's/^(CONFIG_[A-Za-z0-9_]+=.*)$/\1/p;
		s/^# (CONFIG_[A-Za-z0-9_]+) is not set$/\1=n/p' "$FRAGMENT")
	return $bad
}

# install_kernel OBJ ABI: image and modules into $KCACHE/ABI/ (replaced
# whole, so a rebuild never leaves the modules of another build there).
install_kernel() {
	local obj=$1 abi=$2 dst=$KCACHE/$2 tmp

	mkdir -p "$KCACHE"
	tmp=$(mktemp -d "$KCACHE/.debug.XXXXXX")
	mkdir -p "$tmp/boot"
	cp "$obj/arch/x86/boot/bzImage" "$tmp/boot/vmlinuz-$abi"
	cp "$obj/System.map" "$tmp/boot/System.map-$abi"
	make -C "$obj" -s INSTALL_MOD_PATH="$tmp" modules_install >&2
	# the "build" link is the build tree (for a human; run.sh asks kdir)
	ln -sfn "$obj" "$tmp/lib/modules/$abi/build"
	basename "$obj" >"$tmp/.key"
	touch "$tmp/.done"
	rm -rf "$dst"
	mv "$tmp" "$dst"
}

build() {
	local ver k obj src abi t0 t1 d

	# linux-source-6.1 is in deps.sh's list already (make style needs
	# it); naming it makes this script's need explicit.
	"$VM/deps.sh" "$PKG" || die "cannot install $PKG"
	ver=$(pkg_version) || die "$PKG is not installed"
	[[ -r $FRAGMENT ]] || die "no config fragment $FRAGMENT"
	mkdir -p "$DK"
	exec 9>"$DK/.lock"
	flock 9

	k=$(key "$ver")
	obj=$DK/$k
	src=$DK/src-$ver
	if [[ -e $obj/.done ]]; then
		abi=$(<"$obj/.abi")
		if [[ $(cat "$KCACHE/$abi/.key" 2>/dev/null) != "$k" ]]; then
			install_kernel "$obj" "$abi"
		fi
		echo "$abi" >"$KCACHE/debug.abi"
		echo "debug-kernel: cached $abi ($PKG $ver, key $k)" >&2
		echo "$abi"
		return 0
	fi

	unpack "$ver"
	echo "debug-kernel: building $PKG $ver with $(basename "$FRAGMENT")" \
	     "(key $k) in $obj; log: $obj/build.log" >&2
	mkdir -p "$obj"
	t0=$(date +%s)
	{
		make -C "$src" O="$obj" defconfig &&
		"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" \
			"$obj/.config" "$FRAGMENT" &&
		make -C "$src" O="$obj" olddefconfig
	} >"$obj/config.log" 2>&1 || { tail -n 20 "$obj/config.log" >&2; die "configuration failed"; }
	check_config "$obj/.config" || die "the fragment does not apply (see above)"
	if ! nice -n 19 make -C "$src" O="$obj" -j"$JOBS" bzImage modules \
			>"$obj/build.log" 2>&1; then
		grep -E '(error|Error)' "$obj/build.log" | head -n 20 >&2 ||
			tail -n 20 "$obj/build.log" >&2
		die "build failed (log: $obj/build.log)"
	fi
	t1=$(date +%s)
	echo $((t1 - t0)) >"$obj/build-seconds"
	abi=$(make -C "$src" O="$obj" -s kernelrelease)
	echo "$abi" >"$obj/.abi"
	install_kernel "$obj" "$abi"
	touch "$obj/.done"
	echo "$abi" >"$KCACHE/debug.abi"
	# older builds (another fragment or package version) are not needed
	for d in "$DK"/*/; do
		d=${d%/}
		[[ $d == "$obj" || $d == "$src" ]] && continue
		[[ -e $d/.abi || $(basename "$d") == src-* ]] && rm -rf "$d"
	done
	echo "debug-kernel: built $abi in $((t1 - t0))s" >&2
	echo "$abi"
}

cached_abi() {
	[[ -s $KCACHE/debug.abi ]] || die "no debug kernel built; run: debug-kernel.sh build"
	cat "$KCACHE/debug.abi"
}

case ${1:-} in
build) build ;;
abi) cached_abi ;;
kdir) readlink -f "$KCACHE/$(cached_abi)/lib/modules/$(cached_abi)/build" ;;
*) die "usage: debug-kernel.sh build|abi|kdir" ;;
esac
