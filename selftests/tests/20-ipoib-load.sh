#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 120
#
# ib_ipoib attaches to softib and both unload in either order: ib_ipoib
# first, or softib first (the HCA is removed under ib_ipoib).

source "$(dirname "$0")/../lib.sh"

OBJ=/sys/kernel/debug/softib/softib0/objects

refcnt() {
	cat "/sys/module/$1/refcnt"
}

ktap_header 6
ktap_diag "IPOIB=$IPOIB"

load_softib && slowwait 10 softib_ports_active >/dev/null
ktap_result $? "softib up"
defer unload_softib
baseline=$(cat $OBJ)

load_ipoib
ktap_result $? "ib_ipoib loads ($(ipoib_module_path))"
defer unload_ipoib

RET=0
slowwait 10 test -d /sys/class/net/ib1 >/dev/null
check_err $? "no ib1"
for p in 0 1; do
	[[ $(cat /sys/class/net/ib$p/type) == 32 && $(cat /sys/class/net/ib$p/dev_port) == $p &&
	   $(cat /sys/class/net/ib$p/addr_len) == 20 ]]
	check_err $? "ib$p: type/dev_port/addr_len"
	[[ $(cat /sys/class/net/ib$p/address) == ??:??:??:??:fe:80:00:00:00:00:00:00:02:11:0b:ff:00:00:00:0$((p + 1)) ]]
	(($? == 0)) || check_err 1 "ib$p address $(cat /sys/class/net/ib$p/address) does not end in the port GID"
	[[ $(cat /sys/class/net/ib$p/broadcast) == 00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff ]]
	(($? == 0)) || check_err 1 "ib$p broadcast $(cat /sys/class/net/ib$p/broadcast)"
	[[ $(ethtool -i ib$p | sed -n 's/^driver: //p') == ib_ipoib ]]
	check_err $? "ib$p ethtool driver"
	ip -d link show ib$p | grep -q "ipoib pkey 0xffff mode datagram"
	(($? == 0)) || check_err 1 "ib$p: ip -d link: $(ip -d link show ib$p | grep ipoib)"
done
log_test "one IPoIB interface per port with the in-tree identity"

unload_ipoib
RET=0
[[ ! -d /sys/module/ib_ipoib ]]
check_err $? "ib_ipoib still loaded"
[[ $(cat $OBJ) == "$baseline" ]]
(($? == 0)) || check_err 1 "softib objects after unload: $(cat $OBJ | tr '\n' ' ') (before: $(tr '\n' ' ' <<<"$baseline"))"
[[ $(refcnt softib) -eq 0 ]]
(($? == 0)) || check_err 1 "softib refcnt $(refcnt softib)"
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
