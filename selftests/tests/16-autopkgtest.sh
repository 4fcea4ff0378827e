#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: none
# timeout: 60
# timeout-long: 2700
#
# The packages' autopkgtest, as Debian's CI runs it. debian/control says
# "Testsuite: autopkgtest-pkg-dkms", for which autodep8 generates one
# test: /usr/lib/dkms/dkms-autopkgtest in the source tree (needs-root,
# breaks-testbed). For each -dkms package of debian/control it installs
# the package with apt, checks that the package depends on dkms (by
# trying to remove dkms), and builds and installs its module for each
# kernel with headers, whose dkms status must end "installed".
#
# apt here sees a local repository holding the two packages of make deb
# and nothing else; the installed dkms and headers satisfy the test's
# Depends. Only the running kernel is built: ADT_TEST_TRIGGERS names its
# linux-meta, as Debian's test matrix does for one kernel ABI. LONG=1
# only: two DKMS builds in a TCG guest take 20-30 minutes; 15-install
# covers the packages' install and removal in make check.

source "$(dirname "$0")/../lib.sh"

require_cmd apt-get dpkg-scanpackages grep-dctrl dkms openssl

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ABI=$(uname -r)
VER=$(sed -n 's/^PACKAGE_VERSION="\([^"]*\)"$/\1/p' "$ROOT/dkms.conf")
REPO=/tmp/ipoib-ng-adt

ktap_header 3

if ((!LONG)); then
	for t in "the autopkgtest's apt sees both packages" \
		"dkms-autopkgtest: ipoib-ng-dkms and softib-dkms install, build and install for $ABI" \
		"the packages are removed again"; do
		ktap_skip "$t" "LONG=1 only (two DKMS builds under TCG)"
	done
	ktap_finish
fi

cleanup() {
	APT_CONFIG=$REPO/apt.conf apt-get purge -yq ipoib-ng-dkms softib-dkms >/dev/null 2>&1
	rm -rf "$REPO" /etc/dkms/no-autoinstall
}
defer cleanup

# ---- a repository of the two packages, and nothing else ----------------
RET=0
mkdir -p "$REPO/lists/partial" "$REPO/cache/archives/partial" &&
	cp "$ROOT"/.build/deb/ipoib-ng-dkms_"$VER"_all.deb \
		"$ROOT"/.build/deb/softib-dkms_"$VER"_all.deb "$REPO/" &&
	(cd "$REPO" && dpkg-scanpackages . >Packages 2>/dev/null)
(($? == 0)) || check_err 1 "cannot make the repository (make deb: $(tail -n 3 "$ROOT/.build/deb.log" 2>&1))"
echo "deb [trusted=yes] file:$REPO ./" >"$REPO/sources.list"
cat >"$REPO/apt.conf" <<-EOF
	Dir::Etc::SourceList "$REPO/sources.list";
	Dir::Etc::SourceParts "$REPO/none";
	Dir::State::Lists "$REPO/lists";
	Dir::Cache "$REPO/cache";
	APT::Sandbox::User "root";
EOF
export APT_CONFIG=$REPO/apt.conf
out=$(apt-get update 2>&1) &&
	apt-cache show ipoib-ng-dkms softib-dkms >/dev/null 2>&1
(($? == 0)) || check_err 1 "apt does not see the packages: $(tail -n 3 <<<"$out")"
log_test "the autopkgtest's apt sees both packages"

# ---- the test autodep8 generates, run as autopkgtest runs it -----------
RET=0
# dkms needs /dev/fd for its <(...) (udev or systemd make it on a real
# system; this guest's devtmpfs has none)
[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
# the guest's module tree is the test kernel's, unpacked: its headers are
# the host's, installed
[[ -e /lib/modules/$ABI/build ]] || ln -s "/usr/src/linux-headers-$ABI" "/lib/modules/$ABI/build"
abistem=$(sed 's/-[a-z]*$//' <<<"$ABI")
out=$(cd "$ROOT" && ADT_TEST_TRIGGERS="linux-meta/$abistem" AUTOPKGTEST_ARTIFACTS=$REPO \
	/usr/lib/dkms/dkms-autopkgtest 2>&1)
rc=$?
check_err $rc "dkms-autopkgtest: exit $rc: $(grep -E '^(E|I: (PASS|FAIL|SKIP))' <<<"$out" | head -n 6)"
for p in ipoib-ng-dkms softib-dkms; do
	grep -q "^I: Testing binary package $p$" <<<"$out"
	check_err $? "dkms-autopkgtest did not test $p"
done
[[ $(grep -c "^I: PASS $ABI$" <<<"$out") == 2 ]] && ! grep -q "^I: FAIL" <<<"$out"
(($? == 0)) || check_err 1 "not two passes for $ABI: $(grep -E '^I: (PASS|FAIL|SKIP)' <<<"$out" | tr '\n' ' ')"
ktap_diag "$(grep -E '^I: (PASS|FAIL|SKIP)' <<<"$out" | tr '\n' ' ')"
((RET)) && ktap_diag "$(tail -n 25 <<<"$out")"
log_test "dkms-autopkgtest: ipoib-ng-dkms and softib-dkms install, build and install for $ABI"

RET=0
apt-get purge -yq ipoib-ng-dkms softib-dkms >/dev/null 2>&1
check_err $? "apt-get purge failed"
[[ -z $(dkms status -m ipoib-ng; dkms status -m softib) ]] &&
	[[ $(modinfo -n ib_ipoib 2>/dev/null) == /lib/modules/$ABI/kernel/* ]]
(($? == 0)) || check_err 1 "left behind: $(dkms status) $(modinfo -n ib_ipoib 2>&1)"
log_test "the packages are removed again"

ktap_finish
