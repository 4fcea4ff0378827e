// SPDX-License-Identifier: GPL-2.0
/*
 * softib: virtual nodes, a fabric of thousands of IPoIB hosts inside one
 * machine, for scale tests. Load with vnodes=N: node i (0 <= i < N) has
 * LID SOFTIB_VNODE_LID + i, port GUID SOFTIB_VNODE_GUID + i (its GID is
 * fe80::<that GUID>), QPN SOFTIB_VNODE_QPN and the IPv4 address
 * vnode_ipv4 + i. It is a full member of every partition.
 *
 * A node has no QPs or memory of its own: softib_route_pkt() hands it the
 * datagrams addressed to its LID and those sent to an IPoIB broadcast
 * group, and it answers at once, through the same softib_route_pkt() a
 * real port's send takes (so the receiving port's P_Key and Q_Key checks
 * apply), as a minimal IPoIB host:
 *  - an ARP request for its address gets an ARP reply;
 *  - an ICMP echo request gets an echo reply;
 *  - a UDP datagram to port 7 (echo) comes back with ports and addresses
 *    swapped.
 * Everything else is counted and dropped. With vnode_cm (the default) its
 * hardware address offers connected mode, and it accepts connections
 * (vnode_cm.c); what comes over them is answered the same way, over UD.
 * The SA resolves a PathRecord to a node's GID like one to a port's
 * (sa.c), and every such query is counted (sa_path_queries,
 * sa_path_peak_per_sec in debugfs stats).
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/icmp.h>
#include <linux/if_arp.h>
#include <linux/inet.h>
#include <linux/ip.h>
#include <linux/slab.h>
#include <linux/udp.h>
#include <net/checksum.h>
#include <net/ip.h>

#include "softib.h"

unsigned int softib_vnodes;
module_param_named(vnodes, softib_vnodes, uint, 0444);
MODULE_PARM_DESC(vnodes, "Virtual IPoIB nodes on the fabric, for scale tests (0-32768, default 0); see Documentation/softib.rst");

static char *softib_vnode_ip_param = "10.224.0.1";
module_param_named(vnode_ipv4, softib_vnode_ip_param, charp, 0444);
MODULE_PARM_DESC(vnode_ipv4, "IPv4 address of virtual node 0; node i has this plus i (default 10.224.0.1)");

bool softib_vnode_cm = true;
module_param_named(vnode_cm, softib_vnode_cm, bool, 0444);
MODULE_PARM_DESC(vnode_cm, "Virtual nodes accept IPoIB connected-mode connections (default 1)");

static u32 softib_vnode_ip0;	/* host order */

/*
 * The Q_Key of the ARP request nodes answered last (the broadcast
 * group's; IPoIB's usual one until then): a node answers over UD what
 * comes over a connection, and RC packets carry no Q_Key. A peer ARPs
 * before it connects, so this is learned once per ARP, not per packet.
 */
u32 softib_vnode_qkey = 0x00000b1b;

#define SOFTIB_IPOIB_ALEN	20	/* flags + QPN, GID */
#define SOFTIB_UDP_ECHO_PORT	7

/* An IPoIB ARP packet: the addresses are 20 bytes, not 6. */
struct softib_arp {
	struct arphdr hdr;
	u8 sha[SOFTIB_IPOIB_ALEN];
	__be32 sip;
	u8 tha[SOFTIB_IPOIB_ALEN];
	__be32 tip;
} __packed;

int softib_vnode_setup(void)
{
	u8 a[4];

	if (softib_vnodes > SOFTIB_VNODES_MAX) {
		pr_err("vnodes=%u is out of range: load with vnodes=0..%u\n",
		       softib_vnodes, SOFTIB_VNODES_MAX);
		return -EINVAL;
	}
	if (!softib_vnode_ip_param || !in4_pton(softib_vnode_ip_param, -1, a, -1, NULL)) {
		pr_err("vnode_ipv4=%s is not an IPv4 address: load with vnode_ipv4=A.B.C.D\n",
		       softib_vnode_ip_param ?: "");
		return -EINVAL;
	}
	softib_vnode_ip0 = get_unaligned_be32(a);
	if (softib_vnodes &&
	    (u64)softib_vnode_ip0 + softib_vnodes - 1 > U32_MAX) {
		pr_err("vnode_ipv4=%s plus vnodes=%u runs past 255.255.255.255: load with a lower vnode_ipv4\n",
		       softib_vnode_ip_param, softib_vnodes);
		return -EINVAL;
	}
	return softib_vnode_cm_setup();
}

static bool softib_vnode_ip(__be32 addr, u32 *i)
{
	u32 n = be32_to_cpu(addr) - softib_vnode_ip0;

	if (n >= softib_vnodes)
		return false;
	*i = n;
	return true;
}

/* The node of a LID; false for any other LID. */
bool softib_vnode_lid(u16 lid, u32 *i)
{
	u32 n = (u32)lid - SOFTIB_VNODE_LID;

	if (lid < SOFTIB_VNODE_LID || n >= softib_vnodes)
		return false;
	*i = n;
	return true;
}

/* The node of a GID (fe80::<its GUID>); false for any other GID. */
bool softib_vnode_gid(const union ib_gid *gid, u32 *i)
{
	u64 guid = be64_to_cpu(gid->global.interface_id);

	if (be64_to_cpu(gid->global.subnet_prefix) != SOFTIB_SUBNET_PREFIX ||
	    guid < SOFTIB_VNODE_GUID || guid - SOFTIB_VNODE_GUID >= softib_vnodes)
		return false;
	*i = guid - SOFTIB_VNODE_GUID;
	return true;
}

void softib_vnode_make_gid(u32 i, union ib_gid *gid)
{
	gid->global.subnet_prefix = cpu_to_be64(SOFTIB_SUBNET_PREFIX);
	gid->global.interface_id = cpu_to_be64(SOFTIB_VNODE_GUID + i);
}

/*
 * Send "len" bytes from (node i, QP src_qpn) to "to", in the partition
 * of the packet "req" it answers.
 */
void softib_vnode_send(const struct softib_pkt *req, u32 i, u32 src_qpn,
		       const struct softib_vnode_to *to, void *buf, u32 len)
{
	struct softib_dev *sdev = req->sdev;
	struct {
		struct softib_swqe wqe;
		struct ib_sge sge;
	} w = {};
	union ib_gid sgid;
	struct softib_pkt pkt = {
		.sdev = sdev,
		.wqe = &w.wqe,
		.src_qpn = src_qpn,
		.slid = SOFTIB_VNODE_LID + i,
		.pkey = req->pkey | 0x8000,
		.qkey = to->qkey,
		.sgid = &sgid,
	};

	softib_vnode_make_gid(i, &sgid);
	w.wqe.opcode = IB_WR_SEND;
	w.wqe.length = len;
	w.wqe.num_sge = 1;
	w.wqe.remote_qpn = to->qpn;
	w.wqe.remote_qkey = to->qkey;
	w.wqe.av.dlid = to->lid;
	w.sge.addr = (uintptr_t)buf;
	w.sge.length = len;
	atomic64_inc(&sdev->vnode_sent);
	softib_route_pkt(&pkt);
}

static void softib_vnode_hwaddr(u32 i, u8 *ha)
{
	union ib_gid gid;

	/* the flags byte offers connected mode when nodes accept it */
	ha[0] = softib_vnode_cm ? SOFTIB_IPOIB_FLAG_RC : 0;
	ha[1] = (SOFTIB_VNODE_QPN >> 16) & 0xff;
	ha[2] = (SOFTIB_VNODE_QPN >> 8) & 0xff;
	ha[3] = SOFTIB_VNODE_QPN & 0xff;
	softib_vnode_make_gid(i, &gid);
	memcpy(ha + 4, gid.raw, sizeof(gid.raw));
}

/* An ARP request (IPoIB header at buf) for a node's address: answer it. */
static bool softib_vnode_arp(const struct softib_pkt *req, u8 *buf, u32 len)
{
	struct softib_arp *arp = (struct softib_arp *)(buf + SOFTIB_IPOIB_HLEN);
	struct softib_vnode_to to = { .lid = req->slid, .qkey = req->qkey };
	u8 sha[SOFTIB_IPOIB_ALEN];
	__be32 sip;
	u32 i;

	if (len < SOFTIB_IPOIB_HLEN + sizeof(*arp) ||
	    arp->hdr.ar_hrd != htons(ARPHRD_INFINIBAND) ||
	    arp->hdr.ar_pro != htons(ETH_P_IP) ||
	    arp->hdr.ar_hln != SOFTIB_IPOIB_ALEN || arp->hdr.ar_pln != 4 ||
	    arp->hdr.ar_op != htons(ARPOP_REQUEST) ||
	    !softib_vnode_ip(arp->tip, &i))
		return false;

	memcpy(sha, arp->sha, sizeof(sha));
	sip = arp->sip;
	arp->hdr.ar_op = htons(ARPOP_REPLY);
	memcpy(arp->tha, sha, sizeof(sha));
	arp->sip = arp->tip;
	arp->tip = sip;
	softib_vnode_hwaddr(i, arp->sha);
	to.qpn = (sha[1] << 16) | (sha[2] << 8) | sha[3];
	if (READ_ONCE(softib_vnode_qkey) != req->qkey)
		WRITE_ONCE(softib_vnode_qkey, req->qkey);
	softib_vnode_send(req, i, SOFTIB_VNODE_QPN, &to, buf,
			  SOFTIB_IPOIB_HLEN + sizeof(*arp));
	atomic64_inc(&req->sdev->vnode_arp_replies);
	return true;
}

/*
 * IPv4 to node i: ICMP echo and UDP echo go back to "to" over UD (as
 * long as UD carries them), the rest is dropped.
 */
bool softib_vnode_ipv4(const struct softib_pkt *req, u32 i,
		       const struct softib_vnode_to *to, u8 *buf, u32 len)
{
	struct iphdr *iph = (struct iphdr *)(buf + SOFTIB_IPOIB_HLEN);
	u32 ihl, tot;
	__be32 addr;
	u32 dst;

	if (len < SOFTIB_IPOIB_HLEN + sizeof(*iph) || iph->version != 4)
		return false;
	ihl = iph->ihl * 4;
	tot = ntohs(iph->tot_len);
	if (ihl < sizeof(*iph) || tot < ihl || SOFTIB_IPOIB_HLEN + tot > len ||
	    (iph->frag_off & htons(IP_MF | IP_OFFSET)) ||
	    !softib_vnode_ip(iph->daddr, &dst) || dst != i)
		return false;

	if (iph->protocol == IPPROTO_ICMP) {
		struct icmphdr *icmp = (void *)iph + ihl;

		if (tot - ihl < sizeof(*icmp) || icmp->type != ICMP_ECHO)
			return false;
		icmp->type = ICMP_ECHOREPLY;
		icmp->checksum = 0;
		icmp->checksum = csum_fold(csum_partial(icmp, tot - ihl, 0));
	} else if (iph->protocol == IPPROTO_UDP) {
		struct udphdr *udp = (void *)iph + ihl;
		__be16 port;

		if (tot - ihl < sizeof(*udp) ||
		    udp->dest != htons(SOFTIB_UDP_ECHO_PORT))
			return false;
		port = udp->source;
		udp->source = udp->dest;
		udp->dest = port;
		udp->check = 0;	/* IPv4: "no checksum" */
	} else {
		return false;
	}
	addr = iph->saddr;
	iph->saddr = iph->daddr;
	iph->daddr = addr;
	iph->ttl = 64;
	iph->check = 0;
	iph->check = ip_fast_csum(iph, iph->ihl);
	softib_vnode_send(req, i, SOFTIB_VNODE_QPN, to, buf,
			  SOFTIB_IPOIB_HLEN + tot);
	atomic64_inc(&req->sdev->vnode_echo_replies);
	return true;
}

/*
 * The payload of a message (at most "max" bytes), copied: the node
 * rewrites it into its answer.
 */
u8 *softib_vnode_copy(const struct softib_pkt *req, u32 max, u32 *len)
{
	const struct softib_swqe *wqe = req->wqe;
	struct ib_sge sge;
	u8 *buf;

	if (wqe->length < SOFTIB_IPOIB_HLEN || wqe->length > max)
		return NULL;
	/* under the router's RCU read lock */
	buf = kmalloc(wqe->length, GFP_ATOMIC);
	if (!buf)
		return NULL;
	sge.addr = (uintptr_t)buf;
	sge.length = wqe->length;
	softib_copy_sg(&sge, 1, 0, wqe->sge, wqe->num_sge, wqe->length);
	*len = wqe->length;
	return buf;
}

/* A unicast datagram to node i's LID. */
void softib_vnode_recv(const struct softib_pkt *req, u32 i)
{
	struct softib_vnode_to to = {
		.lid = req->slid, .qpn = req->src_qpn, .qkey = req->qkey,
	};
	struct softib_dev *sdev = req->sdev;
	bool answered = false;
	u8 *buf;
	u32 len;

	if (req->wqe->remote_qpn == 1 && req->qkey == SOFTIB_QP1_QKEY) {
		softib_vnode_cm_recv(req, i);
		return;
	}
	if (req->wqe->remote_qpn != SOFTIB_VNODE_QPN ||
	    req->qkey & 0x80000000 || !(req->pkey & 0x7fff)) {
		atomic64_inc(&sdev->vnode_dropped);
		return;
	}
	buf = softib_vnode_copy(req, SOFTIB_MTU_BYTES, &len);
	if (buf) {
		__be16 proto = *(__be16 *)buf;

		if (proto == htons(ETH_P_IP))
			answered = softib_vnode_ipv4(req, i, &to, buf, len);
		else if (proto == htons(ETH_P_ARP))	/* a unicast probe */
			answered = softib_vnode_arp(req, buf, len);
		kfree(buf);
	}
	if (!answered)
		atomic64_inc(&sdev->vnode_dropped);
}

/* Is this an IPoIB broadcast MGID, ff1x:401b:<P_Key>::ffff:ffff? */
static bool softib_vnode_bcast(const union ib_gid *mgid)
{
	const u8 *g = mgid->raw;
	static const u8 tail[] = { 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };

	BUILD_BUG_ON(6 + sizeof(tail) != sizeof(mgid->raw));
	return g[0] == 0xff && (g[1] & 0xf0) == 0x10 && g[2] == 0x40 &&
	       g[3] == 0x1b && !memcmp(g + 6, tail, sizeof(tail));
}

/* A datagram sent to a multicast group: the nodes hear ARP requests. */
void softib_vnode_recv_mcast(const struct softib_pkt *req,
			     const union ib_gid *mgid)
{
	u8 *buf;
	u32 len;

	if (!softib_vnode_bcast(mgid))
		return;
	buf = softib_vnode_copy(req, SOFTIB_MTU_BYTES, &len);
	if (!buf)
		return;
	if (*(__be16 *)buf == htons(ETH_P_ARP))
		softib_vnode_arp(req, buf, len);
	kfree(buf);
}

int softib_vnode_show(struct seq_file *m, struct softib_dev *sdev)
{
	seq_printf(m, "count %u\nlid_first 0x%04x\nguid_first 0x%016llx\nqpn 0x%06x\nipv4_first %pI4h\n",
		   softib_vnodes, SOFTIB_VNODE_LID, SOFTIB_VNODE_GUID,
		   SOFTIB_VNODE_QPN, &softib_vnode_ip0);
	seq_printf(m, "arp_replies %lld\necho_replies %lld\nsent %lld\ndropped %lld\n",
		   atomic64_read(&sdev->vnode_arp_replies),
		   atomic64_read(&sdev->vnode_echo_replies),
		   atomic64_read(&sdev->vnode_sent),
		   atomic64_read(&sdev->vnode_dropped));
	seq_printf(m, "cm %s\ncm_accepted %lld\ncm_closed %lld\nrc_received %lld\n",
		   softib_vnode_cm ? "on" : "off",
		   atomic64_read(&sdev->vnode_cm_accepted),
		   atomic64_read(&sdev->vnode_cm_closed),
		   atomic64_read(&sdev->vnode_rc_received));
	return 0;
}
