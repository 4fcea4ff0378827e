#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side test: warnings are errors in developer and CI builds, never in
# the build DKMS runs on a node. A copy of the sources gets one file with
# an unused variable, then that object is built twice against a test
# kernel's build tree: with the command dkms.conf gives DKMS (it must
# succeed and show the warning) and as "make module" builds
# (IPOIB_NG_WERROR=1: it must fail). KTAP on stdout; exit 1 on a failure
# (both skipped, exit 0, when no test kernel's build tree is there).

set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OBJ=drivers/ipoib/param.o

kdir=""
for s in 6.12 6.1; do
	k=$("$ROOT/selftests/vm/kernels.sh" kdir "$s" 2>/dev/null) && [[ -d $k ]] &&
		{ kdir=$k; break; }
done
echo "TAP version 13"
echo "1..2"
if [[ -z $kdir ]]; then
	echo "ok 1 werror # SKIP no test kernel build tree (make kernels)"
	echo "ok 2 werror # SKIP no test kernel build tree (make kernels)"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ipoib-ng's tree as DKMS lays it out: $dkms_tree/NAME/VERSION/build
ver=$(sed -n 's/^PACKAGE_VERSION="\([^"]*\)"$/\1/p' "$ROOT/dkms.conf")
b=$work/dkms/ipoib-ng/$ver/build
"$ROOT/scripts/dkms-tree" ipoib-ng "$b"
cat >>"$b/${OBJ%.o}.c" <<'EOF'

int ipoib_werror_probe(void);
int ipoib_werror_probe(void)
{
	int unused_by_design;

	return 0;
}
EOF

# shellcheck source=ktap.sh
source "$(dirname "$0")/ktap.sh"

# DKMS's own command line, from dkms.conf, for the one object
dkms_cmd=$(kernel_source_dir=$kdir dkms_tree=$work/dkms bash -c \
	'source "$1"; echo "${MAKE[0]}"' - "$b/dkms.conf")
if [[ $dkms_cmd != *" modules" ]]; then
	not_ok "dkms.conf's MAKE: $dkms_cmd" "does not end in the modules target"
else
	out=$(timeout 300 ${dkms_cmd% modules} "$OBJ" 2>&1)
	rc=$?
	((rc == 0)) && grep -q "warning: unused variable" <<<"$out"
	result $? "the DKMS build warns and goes on (no -Werror on a node)" \
		"exit $rc" "$(tail -n 5 <<<"$out")"
fi
rm -f "$b/$OBJ"

out=$(timeout 300 make -C "$kdir" M="$b" IPOIB_NG_WERROR=1 "$OBJ" 2>&1)
rc=$?
((rc != 0)) && grep -q "Werror=unused-variable" <<<"$out"
result $? "the developer and CI build (IPOIB_NG_WERROR=1) fails on the warning" \
	"exit $rc" "$(tail -n 5 <<<"$out")"

((fails == 0))
