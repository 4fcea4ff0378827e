#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ipoib: both
# timeout: 300
# timeout-long: 900
#
# Multicast at scale: a process in ib0's namespace joins G IPv4 groups
# (239.2.0.0 on), and ib0 must join every one at the SA as full member.
# Measured for either driver: the time until the SA has them all (the
# join rate), then after a client reregister the MCMemberRecord joins
# the SA gets and the time until the broadcast group and every group
# were joined again, then the time until the SA has none of them after
# the process exits (the leave rate). The SA's view is softib's
# sa_members; its joins and leaves are stats sa_mc_joins and
# sa_mc_leaves.
#
# Both drivers: every group joined, joined again after the reregister
# (and the broadcast group with it), every group left, each within
# 60 s; ib1 still reaches ib0 over a group at the end. Ours joins at most
# max_full_groups (raised here to G + 64 when G is above its default).
# G=200 in make check, 1000 with LONG=1.

source "$(dirname "$0")/../lib.sh"

require_cmd python3

G=${G:-200}
[[ $LONG == 1 ]] && G=1000

ktap_header 5
ktap_diag "IPOIB=$IPOIB G=$G"

ipoib_fabric_up
ktap_result $? "ib0/ib1 up in two netns" || ktap_finish

if [[ $IPOIB == ours ]]; then
	P=/sys/module/ib_ipoib/parameters/max_full_groups
	if (($(<$P) < G + 64)); then
		old=$(<$P)
		echo $((G + 64)) >$P
		defer sh -c "echo $old >$P"
	fi
fi

GID1=fe80:0000:0000:0000:0211:0bff:0000:0001
BCAST=ff12:401b:ffff:0000:0000:0000:ffff:ffff
# sa_groups: the 239.2/16 groups port 1 is a full member of at the SA
# (an IPv4 group's MGID ends in its address without the top 4 bits)
sa_groups() {
	awk -v p="$GID1" '$3 == p && $2 ~ /^ff12:401b:ffff:0000:0000:0000:0f02:/ &&
		$4 ~ /^0x[13579bdf]$/ { n++ } END { print n + 0 }' "$SOFTIB_DBG/sa_members"
}
sa_bcast() {
	awk -v p="$GID1" -v b="$BCAST" '$2 == b && $3 == p { f = 1 } END { exit !f }' \
		"$SOFTIB_DBG/sa_members"
}
# elapsed T0: seconds since $EPOCHREALTIME was T0
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }'; }

# ---- joins ----
RET=0
ready=/tmp/68-ready.$$
rm -f "$ready"
t0=$EPOCHREALTIME
ip netns exec "$A" python3 -S - "$G" "$ready" <<'PY' &
import signal, socket, struct, sys
n, ready = int(sys.argv[1]), sys.argv[2]
idx = socket.if_nametoindex("ib0")
socks = []
for i in range(n):
    # a socket holds net.ipv4.igmp_max_memberships (20) groups at most
    if i % 20 == 0:
        socks.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    grp = socket.inet_aton("239.2.%d.%d" % (i >> 8, i & 255))
    socks[-1].setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                         struct.pack("4s4si", grp, b"\0" * 4, idx))
open(ready, "w").close()
signal.pause()
PY
member=$!
defer sh -c "kill $member 2>/dev/null"
slowwait 60 test -e "$ready" >/dev/null
check_err $? "the process did not join its $G groups"
slowwait_eq 60 "$G" sa_groups
(($? == 0)) || check_err 1 "the SA has $(sa_groups) of $G groups for ib0"
t=$(elapsed "$t0")
ktap_diag "figures: G=$G joined_after=${t}s join_rate=$(rate "$G" "$t")/s"
log_test "$G groups joined at the SA (${t}s)"

# ---- client reregister ----
RET=0
j0=$(softib_stat sa_mc_joins)
t0=$EPOCHREALTIME
echo client_reregister >"$SOFTIB_DBG/ports/1/event"
check_err $? "client_reregister on port 1"
# every group and the broadcast group asked for again
slowwait 60 stat_cmp "$SOFTIB_DBG/stats" sa_mc_joins -ge $((j0 + G + 1)) >/dev/null
(($? == 0)) || check_err 1 "$(($(softib_stat sa_mc_joins) - j0)) joins after the reregister, want at least $((G + 1))"
t=$(elapsed "$t0")
slowwait_eq 30 "$G" sa_groups && sa_bcast
(($? == 0)) || check_err 1 "after the reregister: broadcast member $(sa_bcast && echo yes || echo no), $(sa_groups) of $G groups"
ktap_diag "figures: G=$G rejoined_after=${t}s joins=$(($(softib_stat sa_mc_joins) - j0))"
log_test "after client_reregister the broadcast group and $G groups joined again (${t}s)"

# ---- leaves ----
RET=0
l0=$(softib_stat sa_mc_leaves)
t0=$EPOCHREALTIME
kill "$member"
wait "$member" 2>/dev/null
slowwait_eq 60 0 sa_groups
(($? == 0)) || check_err 1 "the SA still has $(sa_groups) groups for ib0"
t=$(elapsed "$t0")
ktap_diag "figures: G=$G left_after=${t}s leave_rate=$(rate "$G" "$t")/s leaves=$(($(softib_stat sa_mc_leaves) - l0))"
log_test "$G groups left at the SA (${t}s)"
rm -f "$ready"

# ---- the fabric still works ----
RET=0
sa_bcast
check_err $? "ib0 is no longer a member of the broadcast group"
ip netns exec "$B" ping -c 2 -i 0.2 -w 4 -W 2 192.0.2.1 >/dev/null
check_err $? "ib1 no longer reaches ib0"
log_test "ib0 stays in the broadcast group and reachable"

ktap_finish
