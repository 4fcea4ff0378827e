#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dkms-prebuild.sh ABI KDIR OUT: dkms build of this tree's two DKMS
# modules (ipoib-ng, softib) for kernel ABI on this machine, into a
# private DKMS tree OUT/tree with their sources in OUT/src, plus each
# build as a DKMS tarball (OUT/tree/MODULE/VER/tarball/), for the install
# test (15-install) to seed its guest with.
#
# A DKMS build in a TCG guest takes 10-17 minutes; here it takes one. The
# guest then runs everything that decides what a site gets (make
# dkms-install, dpkg -i, dkms's version check, depmod, modprobe) on this
# build; LONG=1 builds in the guest too. The host's own DKMS state is not
# touched: --dkmstree/--sourcetree point under OUT, and so does the module
# signing key, which dkms would otherwise make in /var/lib/dkms (dkms
# takes mok_signing_key and mok_certificate from the environment when
# its framework.conf does not set them). No mount namespace: a chroot,
# such as make fresh's, cannot make its / private.

set -euo pipefail

[[ $# -eq 3 ]] || { echo "usage: dkms-prebuild.sh ABI KDIR OUT" >&2; exit 1; }
abi=$1 kdir=$2 out=$(realpath -m -- "$3")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
command -v dkms >/dev/null || { echo "dkms-prebuild: dkms is not installed (make deps)" >&2; exit 1; }
ver=$(sed -n 's/^PACKAGE_VERSION="\([^"]*\)"$/\1/p' dkms.conf)
[[ -n $ver ]] || { echo "dkms-prebuild: no PACKAGE_VERSION in dkms.conf" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/tree" "$out/key"
for m in ipoib-ng softib; do
	# the files make dkms-install and the packages give DKMS
	scripts/dkms-tree "$m" "$out/src/$m-$ver"
	mok_signing_key=$out/key/mok.key mok_certificate=$out/key/mok.pub \
	bash -euo pipefail -c '
		dkms build -m "$5" -v "$1" -k "$2" --kernelsourcedir "$3" \
			--dkmstree "$4/tree" --sourcetree "$4/src"
		# the same build as a DKMS tarball (sources and modules), the
		# form a package hands its postinst prebuilt modules in
		dkms mktarball -m "$5" -v "$1" -k "$2" --dkmstree "$4/tree" \
			--sourcetree "$4/src" --archive "$5-$1.dkms.tar.gz"
	' _ "$ver" "$abi" "$kdir" "$out" "$m" >>"$out/build.log" 2>&1 || {
		tail -n 20 "$out/build.log" >&2
		echo "dkms-prebuild: dkms build of $m for $abi failed (log: $out/build.log)" >&2
		exit 1
	}
	ls "$out/tree/$m/$ver/$abi/"*/module/ >/dev/null
done
