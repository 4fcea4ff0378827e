#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 120
#
# ib_ipoib attaches to softib and both unload in either order: ib_ipoib
# first, or softib first (the HCA is removed under ib_ipoib).

source "$(dirname "$0")/../lib.sh"

OBJ=/sys/kernel/debug/softib/softib0/objects

ports_active() {
	grep -q ACTIVE /sys/class/infiniband/softib0/ports/1/state &&
		grep -q ACTIVE /sys/class/infiniband/softib0/ports/2/state
}

refcnt() {
	cat "/sys/module/$1/refcnt"
}

ktap_header 6
ktap_diag "IPOIB=$IPOIB"

load_softib && slowwait 10 ports_active >/dev/null
ktap_result $? "softib up"
defer unload_softib
baseline=$(cat $OBJ)

load_ipoib
ktap_result $? "ib_ipoib loads ($(ipoib_module_path))"
defer unload_ipoib

# The in-tree driver creates one interface per port; ours does not yet.
if [[ $IPOIB == intree ]]; then
	slowwait 10 test -d /sys/class/net/ib1 >/dev/null
	ktap_result $? "one IPoIB interface per port"
else
	ktap_skip "one IPoIB interface per port" "datagram mode lands with issue 4"
fi

unload_ipoib
RET=0
[[ ! -d /sys/module/ib_ipoib ]]
check_err $? "ib_ipoib still loaded"
[[ $(cat $OBJ) == "$baseline" ]]
check_err $? "softib objects after unload: $(cat $OBJ | tr '\n' ' ') (before: $(tr '\n' ' ' <<<"$baseline"))"
[[ $(refcnt softib) -eq 0 ]]
check_err $? "softib refcnt $(refcnt softib)"
log_test "ib_ipoib unloads and releases every verbs object"

load_ipoib
slowwait 5 true
unload_softib
RET=0
[[ ! -d /sys/module/softib && ! -d /sys/class/infiniband/softib0 ]]
check_err $? "softib did not unload under ib_ipoib"
[[ ! -e /sys/class/net/ib0 ]]
check_err $? "ib0 survived the HCA"
log_test "softib unloads with ib_ipoib loaded (device removal)"

unload_ipoib
[[ ! -d /sys/module/ib_ipoib ]]
ktap_result $? "ib_ipoib unloads after its HCA is gone"

ktap_finish
