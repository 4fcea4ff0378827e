#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot a Debian test kernel in QEMU (TCG) and run one command in it.
#
#   run-guest.sh --abi ABI [--timeout SEC] [--boot-limit SEC] [--append ARGS]
#                [--mem SIZE] [--results DIR] [--shell] [--quiet]
#                [--fabric DIR --node K] -- CMD [ARG...]
#
# The guest sees this machine's / read-only over 9p under a tmpfs overlay,
# so every host tool and the work tree are there, at the same paths.
# /lib/modules/$ABI is the unpacked test kernel's module tree (writable
# through the overlay, depmod works). CMD runs as root, in the host's cwd,
# with IPOIB_NG_GUEST=1. Its output goes to the console and to the results
# directory (output, status, dmesg, console.log). --quiet prints CMD's
# output alone, live, without the kernel's console (make demo); the
# console still goes to console.log and is checked as always.
# --boot-limit SEC: a guest whose CMD has not started after SEC seconds
# is killed and booted again (early-boot stalls), three boots in all at
# most; each boot has the whole --timeout.
# --fabric DIR --node K (K 1 or 2): guest K of a pair (run.sh --pair).
# Its second NIC, a virtio-net with MAC 52:54:00:5b:00:0K and host_mtu
# $FABRIC_MTU (default 9000), is a QEMU datagram netdev whose ends are
# the unix sockets DIR/nK.sock (its own) and DIR/nO.sock (the other
# guest's, O = 3 - K): a link between the two guests that never leaves
# this machine (there is no other NIC). DIR/sync is shared with the guest
# over 9p (cache=none, both guests see each other's writes at once) at
# /run/fabsync. Before CMD the guest loads virtio_net, finds that NIC by
# its MAC and names it fab0 (down, no address); CMD gets IPOIB_NG_NODE=K,
# IPOIB_NG_FABSYNC=/run/fabsync, IPOIB_NG_FABDEV=fab0 and
# IPOIB_NG_FABMTU. DIR must be short: a unix socket's path is at most
# 107 bytes.
#
# Exit status: CMD's status; 3 if the kernel reported a problem (WARNING,
# BUG, Oops, KFENCE, slub corruption, KASAN, lockdep, ...) even when CMD
# succeeded; 2 if the guest died without reporting a status; 124 on
# timeout.

set -euo pipefail

CACHE=${CACHE:-/var/cache/ipoib-ng}
SELF=$(readlink -f "$0")

usage() {
	sed -n 's/^#   \{0,1\}//p' "$SELF" | sed -n '/^run-guest.sh/,/^$/p' >&2
	exit 1
}
die() { echo "run-guest: $*" >&2; exit 1; }

abi="" timeout=0 boot_limit=0 append="" mem=2G shell=0 results="" quiet=0
fabric="" node=""
while [[ $# -gt 0 ]]; do
	case $1 in
	--abi) abi=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--boot-limit) boot_limit=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--results) results=$2; shift 2 ;;
	--shell) shell=1; shift ;;
	--quiet) quiet=1; shift ;;
	--fabric) fabric=$2; shift 2 ;;
	--node) node=$2; shift 2 ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
[[ -n $abi ]] || usage
((shell)) || [[ $# -gt 0 ]] || usage
if [[ -n $fabric || -n $node ]]; then
	[[ -n $fabric && $node =~ ^[12]$ ]] || die "--fabric DIR and --node 1|2 go together"
	fabric_mtu=${FABRIC_MTU:-9000}
	if [[ ! $fabric_mtu =~ ^[1-9][0-9]*$ ]] || ((fabric_mtu < 68 || fabric_mtu > 65535)); then
		die "FABRIC_MTU='$fabric_mtu': want 68-65535"
	fi
	fabric=$(readlink -f "$fabric")
	[[ -d $fabric ]] || die "--fabric $fabric: no such directory"
	# sun_path holds 108 bytes with the terminating NUL
	((${#fabric} + 8 <= 107)) || die "--fabric $fabric: too long for a unix socket's path"
	mkdir -p "$fabric/sync"
fi

kdir=$CACHE/kernels/$abi
vmlinuz=$kdir/boot/vmlinuz-$abi
moddir=$kdir/lib/modules/$abi
[[ -r $vmlinuz && -d $moddir ]] ||
	die "no kernel $abi in $kdir (run selftests/vm/kernels.sh fetch SERIES)"

# Modules the initramfs needs to mount its root; the rest of their
# dependency chain comes from modules.dep.
ROOT_MODS=(virtio_pci 9pnet_virtio 9p overlay)

# The guest's /init (busybox sh). @ABI@ is replaced at build time.
# shellcheck disable=SC2016
INIT='#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules.list); do
	insmod /mods/$m || echo "init: insmod $m failed"
done

fail() { echo "init: $*"; echo o >/proc/sysrq-trigger; sleep 10; }
R=/newroot
mkdir -p /lower /rw $R
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 \
	hostroot /lower || fail "cannot mount hostroot"
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work \
	overlay $R || fail "cannot mount overlay"
mkdir -p $R/results
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=262144 \
	results $R/results || fail "cannot mount results"
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts devpts $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm
mount -t tmpfs -o mode=0755 tmpfs $R/run
mount -t debugfs debugfs $R/sys/kernel/debug
mount -t configfs configfs $R/sys/kernel/config 2>/dev/null
# The test kernel modules, writable through the overlay (for depmod).
M=$(cat /moddir)
mkdir -p $R/lib/modules/@ABI@
mount --bind $R$M $R/lib/modules/@ABI@
hostname ipoib-ng-guest

cat /proc/uptime >$R/results/started
if [ -e $R/results/shell ]; then
	chroot $R /usr/bin/setsid -c /bin/bash /results/cmd.sh \
		</dev/ttyS0 >/dev/ttyS0 2>&1
else
	chroot $R /bin/bash -c "/bin/bash /results/cmd.sh 2>&1 |
		tee /results/output; echo \${PIPESTATUS[0]} >/results/status"
fi
dmesg >$R/results/dmesg
sync
umount $R/results
echo o >/proc/sysrq-trigger
sleep 10
'

build_initramfs() {
	local key out tmp m line path name

	key=$(printf '%s\n' "$INIT" "${ROOT_MODS[*]}" "$abi" |
	      cat - /bin/busybox | sha256sum | cut -c1-16)
	out=$CACHE/initramfs/$abi-$key.cpio.gz
	if [[ -s $out ]]; then
		echo "$out"
		return
	fi
	# Guests of one kernel started together (run.sh GUESTS=N) build it
	# once: the others wait here, then find it (a guest booted from a
	# half-written archive hangs in early boot).
	mkdir -p "$CACHE/initramfs"
	exec 8>"$CACHE/initramfs/.lock-$abi"
	flock 8
	if [[ -s $out ]]; then
		exec 8>&-
		echo "$out"
		return
	fi

	tmp=$(mktemp -d)
	mkdir -p "$tmp"/{bin,mods,proc,sys,dev}
	cp /bin/busybox "$tmp/bin/busybox"
	printf '%s' "${INIT//@ABI@/$abi}" >"$tmp/init"
	chmod +x "$tmp/init"
	echo "$moddir" >"$tmp/moddir"
	: >"$tmp/modules.list"
	for m in "${ROOT_MODS[@]}"; do
		modprobe -d "$kdir" -S "$abi" --show-depends "$m" |
		while read -r line; do
			[[ $line == insmod\ * ]] || continue   # "builtin MOD"
			path=${line#insmod }
			path=${path%% *}
			name=$(basename "$path")
			name=${name%.xz}
			grep -qxF "$name" "$tmp/modules.list" && continue
			case $path in
			*.xz) xz -dc "$path" >"$tmp/mods/$name" ;;
			*) cp "$path" "$tmp/mods/$name" ;;
			esac
			echo "$name" >>"$tmp/modules.list"
		done
	done
	rm -f "$CACHE/initramfs/$abi"-*.cpio.gz
	(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
	mv "$out.tmp" "$out"
	exec 8>&-
	rm -rf "$tmp"
	echo "$out"
}

initrd=$(build_initramfs)

keep_results=1
if [[ -z $results ]]; then
	results=$(mktemp -d /tmp/ipoib-ng-guest.XXXXXX)
	keep_results=0
else
	mkdir -p "$results"
	rm -f "$results"/{cmd.sh,shell,started,output,status,dmesg,console.log} \
		"$results"/{boot-stalled,console-stalled-*.log}
fi
results=$(readlink -f "$results")
cleanup() { ((keep_results)) || rm -rf "$results"; }
trap cleanup EXIT

# The command, with cwd and environment, as a script on the results share.
{
	echo '#!/bin/bash'
	printf 'cd %q || exit 1\n' "$PWD"
	echo 'export IPOIB_NG_GUEST=1 HOME=/root LANG=C.UTF-8'
	echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
	if [[ -n $fabric ]]; then
		# the pair's sync share and the fabric NIC (see --fabric)
		printf 'export IPOIB_NG_NODE=%d IPOIB_NG_FABSYNC=/run/fabsync' "$node"
		printf ' IPOIB_NG_FABDEV=fab0 IPOIB_NG_FABMTU=%d\n' "$fabric_mtu"
		printf 'fabric_mac=52:54:00:5b:00:0%d\n' "$node"
		# shellcheck disable=SC2016
		echo 'fabric() {
	local d i

	mkdir -p "$IPOIB_NG_FABSYNC" &&
		mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=262144 \
			fabsync "$IPOIB_NG_FABSYNC" || { echo "cannot mount the sync share"; return 1; }
	modprobe virtio_net || { echo "cannot load virtio_net"; return 1; }
	for ((i = 0; i < 100; i++)); do
		for d in /sys/class/net/*; do
			[[ $(<"$d/address") == "$fabric_mac" ]] || continue
			[[ ${d##*/} == "$IPOIB_NG_FABDEV" ]] ||
				ip link set dev "${d##*/}" name "$IPOIB_NG_FABDEV" || return 1
			return 0
		done
		sleep 0.1
	done
	echo "no NIC with MAC $fabric_mac after 10 s"
	return 1
}
fabric || { echo "run-guest: fabric node $IPOIB_NG_NODE: set-up failed"; exit 1; }'
	fi
	if ((shell)); then
		printf 'export TERM=%q\n' "${TERM:-linux}"
		if size=$(stty size 2>/dev/null); then
			echo "stty rows ${size% *} cols ${size#* }"
		fi
		echo 'echo "ipoib-ng guest: $(uname -r); poweroff with: exit"'
		if [[ $# -gt 0 ]]; then
			printf 'exec'; printf ' %q' "$@"; echo
		else
			echo 'exec /bin/bash -l'
		fi
	else
		printf 'exec'; printf ' %q' "$@"; echo
	fi
} >"$results/cmd.sh"
((shell)) && touch "$results/shell"

cmdline="console=ttyS0 panic=-1 oops=panic panic_on_warn=1 slub_debug=FZP"
cmdline+=" kfence.sample_interval=100 printk.time=1 loglevel=5"
# no5lvl: -cpu max offers LA57, and 6.1's identify_boot_cpu() clears the
# boot CPU's feature bits and sets them again with interrupts on; until
# alternatives are applied pgtable_l5_enabled() reads that LA57 bit, so an
# interrupt in the window computes direct-map addresses for 4-level
# paging. On the debug kernel that is thousands of KASAN "wild-memory-
# access" reports from start_kernel, or a guest that hangs before the
# secondary CPU comes up: what a guest booting beside a busy one hit.
cmdline+=" no5lvl"
cmdline+=" ${append}"

# One host thread emulates both vCPUs (thread=single). Multi-threaded TCG
# lets one vCPU run a translation of kernel text that another vCPU is
# patching (static keys, jump labels, alternatives: text_poke_bp's int3),
# so the guest can take "Oops: int3" in code no driver owns; holding one
# static key only moved the race to another. With one thread a patch is
# seen by every vCPU before either runs again. The guest still has two
# CPUs (preemption, IPIs, concurrent NAPI and work items interleave), and
# two guests side by side still use both host cores.
# GUEST_TCG_THREAD=multi (a bench's scaling over the vCPUs, one guest on
# the machine) gives each vCPU a host thread, with that race back.
tcg_thread=${GUEST_TCG_THREAD:-single}
[[ $tcg_thread == single || $tcg_thread == multi ]] ||
	{ echo "run-guest.sh: GUEST_TCG_THREAD='$tcg_thread': single or multi" >&2; exit 1; }
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -no-reboot
	-accel tcg,thread="$tcg_thread" -cpu max -smp 2 -m "$mem" -display none -nic none
	-kernel "$vmlinuz" -initrd "$initrd" -append "$cmdline"
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$results,mount_tag=results,security_model=none")
if [[ -n $fabric ]]; then
	# romfile=: no option ROM (no network boot; the ipxe-qemu package
	# that has it is not installed)
	qemu+=(-netdev "dgram,id=fab,local.type=unix,local.path=$fabric/n$node.sock,remote.type=unix,remote.path=$fabric/n$((3 - node)).sock"
		-device "virtio-net-pci,netdev=fab,mac=52:54:00:5b:00:0$node,host_mtu=$fabric_mtu,romfile="
		-virtfs "local,path=$fabric/sync,mount_tag=fabsync,security_model=none")
fi

if ((shell)); then
	"${qemu[@]}" -serial mon:stdio
	exit 0
fi

# boot_watch QPID: a guest whose command has not started after
# $boot_limit seconds, or whose console stayed silent for a third of that
# (at least 60 s; a good debug-kernel boot is silent for 40 s at most,
# in ACPI), is stuck in early boot. Seen with debug-kernel guests beside
# a busy one (GUESTS=2), before no5lvl (above): the guest sat idle (QEMU
# asleep) between lockdep's banner and the secondary CPU's bring-up, and
# would have held its share of the suite until the suite's whole
# timeout. Any other early hang gets the same treatment. Kill it and
# leave a mark: the guest is booted again ($BOOT_TRIES boots in all).
BOOT_TRIES=5
boot_watch() {
	local i size last=-1 quiet=0 silent=$((boot_limit / 3))

	((silent >= 60)) || silent=60
	for ((i = 0; i < boot_limit * 2; i++)); do
		[[ -e $results/started ]] && return 0
		kill -0 "$1" 2>/dev/null || return 0
		size=$(stat -c %s "$results/console.log" 2>/dev/null || echo 0)
		if ((size == last)); then
			((++quiet < silent * 2)) || break
		else
			last=$size quiet=0
		fi
		sleep 0.5
	done
	: >"$results/boot-stalled"
	kill "$1" 2>/dev/null
}

limit=()
((timeout > 0)) && limit=(timeout -k 5 "$timeout")
t0=$(date +%s.%N)
set +e
for ((try = 1; ; try++)); do
	rm -f "$results"/{started,output,status,dmesg,boot-stalled}
	# QEMU binds its end of the fabric anew (a stalled boot's is left)
	[[ -z $fabric ]] || rm -f "$fabric/n$node.sock"
	"${limit[@]}" "${qemu[@]}" -serial stdio </dev/null >"$results/console.log" &
	qpid=$!
	wpid=
	if ((boot_limit > 0)); then
		boot_watch "$qpid" &
		wpid=$!
	fi
	# the command's output as the guest writes it (results share, no
	# cache); without --quiet the console as well
	if ((quiet)); then
		tail -n +1 -F --pid="$qpid" "$results/output" 2>/dev/null
	else
		tail -n +1 -F --pid="$qpid" "$results/console.log" 2>/dev/null
	fi
	wait "$qpid"
	qrc=$?
	[[ -n $wpid ]] && { kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null; }
	[[ -e $results/boot-stalled ]] || break
	mv "$results/console.log" "$results/console-stalled-$try.log"
	if ((try == BOOT_TRIES)); then
		echo "run-guest: $abi: stalled in early boot $try times (no command after ${boot_limit}s, or a silent console; consoles: $results/console-stalled-*.log)" >&2
		exit 2
	fi
	echo "run-guest: $abi: stalled in early boot (no command after ${boot_limit}s, or a silent console: $results/console-stalled-$try.log); booting again" >&2
done
set -e
t1=$(date +%s.%N)

if [[ -e $results/started ]]; then
	boot=$(stat -c %.3Y "$results/started")
	printf 'run-guest: %s: command started after %.1fs, total %.1fs\n' \
		"$abi" "$(bc <<<"$boot - $t0")" "$(bc <<<"$t1 - $t0")" >&2
fi

# Kernel problem reports: in the console only kernel lines count (they
# carry a printk timestamp), so CMD printing "WARNING:" is not an error.
PROBLEMS='WARNING:|BUG:|BUG [a-zA-Z0-9_-]+ \(|kernel BUG|Oops|KFENCE|'
PROBLEMS+='general protection|refcount_t:|Object corrupt|Redzone|'
PROBLEMS+='Poison overwritten|Kernel panic|UBSAN|list_add corruption|'
PROBLEMS+='list_del corruption|=====|soft lockup|hard LOCKUP|'
PROBLEMS+='blocked for more than|rcu: INFO|self-detected stall|'
PROBLEMS+='Call Trace:|stack-protector|detected buffer overflow|'
# lockdep ("WARNING: possible recursive locking detected" is covered
# above; older and rarer reports say INFO:), KASAN ("BUG: KASAN:" above),
# kmemleak's objects where it prints them. Its "N new suspected memory
# leaks" line is not a verdict: the periodic scan is off, and the scans
# that log it are guest-suite.sh's final one, whose "kmemleak" result
# tells ours and the RDMA stack's from the rest, and lib.sh's
# intree_debugfs_leaks, which names in-tree's known debugfs leak.
PROBLEMS+='INFO: possible|INFO: trying to register non-static key|'
PROBLEMS+='unreferenced object'
found=$( {
	# a stalled boot's console too: what the kernel reported there counts
	cat "$results/console.log" "$results"/console-stalled-*.log 2>/dev/null |
		tr -d '\r' | grep -E '^\[ *[0-9]+\.[0-9]+\]' || true
	[[ -e $results/dmesg ]] && cat "$results/dmesg"
} | grep -E "$PROBLEMS" | awk '!seen[$0]++' | head -n 40 || true)

rc=0
if [[ -n $found ]]; then
	echo "run-guest: KERNEL PROBLEM REPORTED on $abi:" >&2
	sed 's/^/run-guest: KERNEL: /' <<<"$found" >&2
	rc=3
elif ((qrc == 124 || qrc == 137)) && [[ ! -e $results/status ]]; then
	echo "run-guest: TIMEOUT after ${timeout}s on $abi" >&2
	rc=124
elif [[ ! -s $results/status ]]; then
	echo "run-guest: guest died without a status (qemu exit $qrc)" >&2
	rc=2
else
	rc=$(<"$results/status")
fi
exit "$rc"
