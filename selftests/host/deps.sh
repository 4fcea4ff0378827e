#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side test of selftests/vm/deps.sh, run by "make check" before any
# guest. deps.sh runs against stub dpkg-query and apt-get on PATH: the
# stubs behave as Debian's do for a package list in which some packages
# are missing (dpkg-query prints nothing for a never-installed package
# and exits 1; "config-files" is a removed one), record their command
# lines, and can fail as apt does. KTAP on stdout; exit 1 on a failure.

set -uo pipefail

DEPS=${DEPS:-$(cd "$(dirname "$0")/../vm" && pwd)/deps.sh}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"

# dpkg-query -W -f=FMT PKG...: "installed PKG" for every package but the
# ones in $STUB_MISSING (never installed: no line, exit status 1) and in
# $STUB_REMOVED ("config-files PKG").
cat >"$work/bin/dpkg-query" <<'STUB'
#!/bin/bash
rc=0
for a in "$@"; do
	case $a in -*) continue ;; esac
	if [[ " $STUB_MISSING " == *" $a "* ]]; then
		echo "dpkg-query: no packages found matching $a" >&2
		rc=1
	elif [[ " $STUB_REMOVED " == *" $a "* ]]; then
		echo "config-files $a"
	else
		echo "installed $a"
	fi
done
exit $rc
STUB
# apt-get: logs its arguments; "install" fails like apt when a package
# named in $STUB_UNKNOWN is asked for.
cat >"$work/bin/apt-get" <<'STUB'
#!/bin/bash
echo "$*" >>"$STUB_LOG"
if [[ $* == *install* ]]; then
	for a in "$@"; do
		if [[ " $STUB_UNKNOWN " == *" $a "* ]]; then
			echo "Reading package lists..."
			echo "E: Unable to locate package $a"
			exit 100
		fi
	done
fi
exit 0
STUB
chmod +x "$work/bin/dpkg-query" "$work/bin/apt-get"

# shellcheck source=ktap.sh
source "$(dirname "$0")/ktap.sh"

# run_deps MISSING REMOVED UNKNOWN [ARGS...]: deps.sh with the stubs; sets
# RC, OUT (stdout and stderr) and LOG (the apt-get calls, one a line)
run_deps() {
	: >"$work/apt.log"
	OUT=$(env PATH="$work/bin:$PATH" STUB_LOG="$work/apt.log" \
	      STUB_MISSING="$1" STUB_REMOVED="$2" STUB_UNKNOWN="$3" \
	      timeout 30 bash "$DEPS" "${@:4}" 2>&1)
	RC=$?
	LOG=$(<"$work/apt.log")
}

# install_set: the package names "apt-get install" was asked for, sorted
install_set() {
	sed -n 's/.*install//p' <<<"$LOG" | tr ' ' '\n' | grep -v '^-' |
		grep . | sort | xargs
}

echo "TAP version 13"
echo "1..8"

run_deps "" "" ""
if ((RC == 0)) && [[ -z $LOG && -z $OUT ]]; then
	ok "deps: nothing missing: exit 0, no apt-get, silent"
else
	not_ok "deps: nothing missing: exit 0, no apt-get, silent" \
		"exit $RC" "apt-get: $LOG" "output: $OUT"
fi

run_deps "qemu-system-x86 sparse" "busybox-static" ""
want="busybox-static qemu-system-x86 sparse"
if ((RC == 0)) && [[ $(install_set) == "$want" ]] &&
   [[ $(grep -c update <<<"$LOG") == 1 ]]; then
	ok "deps: some missing (one never installed, one removed): installs exactly those"
else
	not_ok "deps: some missing (one never installed, one removed): installs exactly those" \
		"exit $RC" "asked to install: '$(install_set)', want '$want'" "apt-get: $LOG" "output: $OUT"
fi

if grep -q "installing 3 Debian package(s): .*qemu-system-x86" <<<"$OUT"; then
	ok "deps: says what it installs"
else
	not_ok "deps: says what it installs" "output: $OUT"
fi

run_deps "debootstrap" "" "" debootstrap
if ((RC == 0)) && [[ $(install_set) == debootstrap ]]; then
	ok "deps: an extra package named on the command line is installed when missing"
else
	not_ok "deps: an extra package named on the command line is installed when missing" \
		"exit $RC" "apt-get: $LOG"
fi

# dpkg-buildpackage wants build-essential:native; gcc and make do not
# provide it, so a machine with only those fails "make deb"
run_deps "build-essential" "" ""
if ((RC == 0)) && [[ $(install_set) == build-essential ]]; then
	ok "deps: build-essential is in the list (dpkg-buildpackage checks it)"
else
	not_ok "deps: build-essential is in the list (dpkg-buildpackage checks it)" \
		"exit $RC" "asked to install: '$(install_set)'"
fi

# --only: exactly the named packages, none of the test tool chain
run_deps "qemu-system-x86 debhelper" "" "" --only debhelper lintian
if ((RC == 0)) && [[ $(install_set) == debhelper ]]; then
	ok "deps --only: installs only the named packages that are missing"
else
	not_ok "deps --only: installs only the named packages that are missing" \
		"exit $RC" "asked to install: '$(install_set)', want 'debhelper'" "output: $OUT"
fi

run_deps "iperf3 no-such-pkg" "" "no-such-pkg" no-such-pkg
if ((RC != 0)) && grep -q "no-such-pkg" <<<"$OUT" &&
   grep -q "E: Unable to locate package no-such-pkg" <<<"$OUT"; then
	ok "deps: apt failure: non-zero exit, names the package and apt's error"
else
	not_ok "deps: apt failure: non-zero exit, names the package and apt's error" \
		"exit $RC" "output: $OUT"
fi

# the real dpkg-query, if the host has one: the listed packages exist
# for this system (the packages deps.sh just installed are all there)
if command -v dpkg-query >/dev/null && [[ -r /var/lib/dpkg/status ]]; then
	if OUT=$(timeout 60 bash "$DEPS" 2>&1) && [[ -z $OUT ]]; then
		ok "deps: on this host, every package is installed (idempotent run is silent)"
	else
		not_ok "deps: on this host, every package is installed (idempotent run is silent)" "output: $OUT"
	fi
else
	n=$((n + 1)); echo "ok $n deps: real host check # SKIP no dpkg"
fi

((fails == 0))
