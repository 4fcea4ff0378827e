// SPDX-License-Identifier: GPL-2.0
/*
 * softib: datagrams between nodes of a fabric across kernels, and the
 * door of every IB packet that comes from another node.
 *
 * A UD datagram (IPoIB's, a MAD of QP1) to another node's LID leaves on
 * the link (link.c) as the IB packet a wire carries: LRH, GRH when the
 * address vector has one (always for multicast), BTH, DETH, ImmDt, then
 * the payload. Padding and ICRC are left out: the link's tag covers the
 * whole frame. The receiving node routes it as its switch would route a
 * packet that came in on a cable: unicast to the port that owns the
 * DLID, multicast to its QPs attached to the GRH's MGID (the nodes'
 * SAs number their groups' MLIDs each on its own).
 *
 * LIDs and GUIDs are derived from the node number (main.c), so the
 * node behind a LID or GID is known without a table: LIDs 32*K..32*K+31
 * and GUIDs with K in bits 24-29 are node K's.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/skbuff.h>
#include <rdma/ib_pack.h>

#include "softib.h"
#include "link.h"

/*
 * The other node of the link that a packet to "lid" goes to, if any:
 * under the built-in SM the node whose LIDs hold it (node K has LIDs
 * 32K + 1 on), under an external SM the node that the switch's LFT
 * sends it to (switch.c).
 */
bool softib_wire_lid_node(struct softib_dev *sdev, u16 lid, u32 *node)
{
	u32 k = lid / SOFTIB_NODE_LIDS;

	if (!sdev->link)
		return false;
	/* an external SM gives any LIDs: its LFT knows where they are */
	if (!softib_builtin_sm)
		return softib_switch_lid_node(sdev, lid, node);
	if (lid >= SOFTIB_NODE_LIDS * (SOFTIB_NODE_MAX + 1) || !k ||
	    k == softib_node)
		return false;
	*node = k;
	return true;
}

/*
 * The node and port number behind a port GID of a fabric across kernels
 * (any node's, this one's too); false for a GID that is not one.
 */
bool softib_wire_gid_port(const union ib_gid *gid, u32 *node, u32 *num)
{
	u64 guid = be64_to_cpu(gid->global.interface_id);

	*node = (guid >> SOFTIB_GUID_NODE_SHIFT) & SOFTIB_NODE_MAX;
	*num = guid & 0xff;
	return be64_to_cpu(gid->global.subnet_prefix) == SOFTIB_SUBNET_PREFIX &&
	       (guid & ~(0xffULL | ((u64)SOFTIB_NODE_MAX << SOFTIB_GUID_NODE_SHIFT))) ==
	       SOFTIB_GUID_BASE && *node && *num >= 1 &&
	       *num < SOFTIB_NODE_LIDS;
}

/*
 * The LID of another node's port with this GID (a PathRecord's DLID),
 * if that node is on the link now.
 */
bool softib_wire_gid_lid(struct softib_dev *sdev, const union ib_gid *gid,
			 u16 *lid)
{
	u32 k, num;

	if (!sdev->link || !softib_wire_gid_port(gid, &k, &num) ||
	    k == softib_node || !softib_link_node_up(sdev, k))
		return false;
	*lid = k * SOFTIB_NODE_LIDS + num;
	return true;
}

/* the GID of the port behind another node's LID (a packet without GRH) */
void softib_wire_lid_gid(u16 lid, union ib_gid *gid)
{
	u64 k = lid / SOFTIB_NODE_LIDS;

	gid->global.subnet_prefix = cpu_to_be64(SOFTIB_SUBNET_PREFIX);
	gid->global.interface_id =
		cpu_to_be64(SOFTIB_GUID_BASE | (k << SOFTIB_GUID_NODE_SHIFT) |
			    (lid % SOFTIB_NODE_LIDS));
}

/*
 * Build the IB packet of one datagram: headers, then the payload
 * gathered from the send WQE's buffers. NULL if out of memory.
 */
static struct sk_buff *softib_wire_build(const struct softib_pkt *pkt,
					 bool grh)
{
	const struct softib_swqe *wqe = pkt->wqe;
	bool imm = wqe->opcode == IB_WR_SEND_WITH_IMM;
	struct ib_ud_header h;
	struct sk_buff *skb;
	struct ib_sge dst;
	int hlen;

	/* ip_version 0: an IB GRH, not RoCE's IP header */
	if (ib_ud_header_init(wqe->length, 1, 0, 0, grh, 0, 0, imm, &h))
		return NULL;
	h.lrh.service_level = wqe->av.sl;
	h.lrh.destination_lid = cpu_to_be16(wqe->av.dlid);
	h.lrh.source_lid = cpu_to_be16(pkt->slid);
	if (grh) {
		h.grh.traffic_class = wqe->av.traffic_class;
		h.grh.flow_label = cpu_to_be32(wqe->av.flow_label & 0xfffff);
		h.grh.hop_limit = wqe->av.hop_limit;
		h.grh.destination_gid = wqe->av.dgid;
		if (pkt->sgid)
			h.grh.source_gid = *pkt->sgid;
		else
			softib_port_gid(pkt->sport, &h.grh.source_gid);
	}
	h.bth.opcode = imm ? IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE :
			     IB_OPCODE_UD_SEND_ONLY;
	h.bth.solicited_event = !!(wqe->send_flags & IB_SEND_SOLICITED);
	h.bth.pkey = cpu_to_be16(pkt->pkey);
	h.bth.destination_qpn = cpu_to_be32(wqe->remote_qpn);
	h.deth.qkey = cpu_to_be32(pkt->qkey);
	h.deth.source_qpn = cpu_to_be32(pkt->src_qpn);
	if (imm)
		h.immediate_data = wqe->imm;

	skb = softib_link_alloc(SOFTIB_WIRE_HDR_MAX + wqe->length, GFP_ATOMIC);
	if (!skb)
		return NULL;
	hlen = ib_ud_header_pack(&h, skb->data);
	skb_put(skb, hlen);
	dst.addr = (uintptr_t)skb_put(skb, wqe->length);
	dst.length = wqe->length;
	softib_copy_sg(&dst, 1, 0, wqe->sge, wqe->num_sge, wqe->length);
	return skb;
}

/*
 * Send a datagram to another node ("node"), or to every node for
 * multicast (node 0). A multicast datagram without a GRH names no group
 * another node knows: it stays here. A full link queue loses the
 * datagram, as a congested switch would, and counts it.
 */
void softib_wire_send(const struct softib_pkt *pkt, u32 node)
{
	struct sk_buff *skb;
	u8 flags = 0;

	if (node == 0 && !pkt->wqe->av.grh)
		return;
	skb = softib_wire_build(pkt, pkt->wqe->av.grh || node == 0);
	/* the checksum the sender left to the HCA is filled at the far end */
	if (skb && (pkt->wqe->send_flags & IB_SEND_IP_CSUM))
		flags |= SOFTIB_LF_CSUM;
	softib_link_send_ib(pkt->sdev, node, skb, flags);
}

/*
 * A datagram from another node (link.c's rx work): route it here as a
 * packet that came in on a cable. Returns false when it is not one.
 */
bool softib_wire_recv(struct softib_dev *sdev, struct sk_buff *skb,
		      u8 flags, u32 link_idx)
{
	struct softib_swqe_one w = {};
	struct softib_pkt pkt = {
		.sdev = sdev,
		.wqe = &w.wqe,
		.from_link = true,
		.in_port = sdev->nports + 1 + link_idx,
	};
	union ib_gid sgid;
	struct ib_ud_header h;
	unsigned int hlen;
	u8 *p;

	if (skb_linearize(skb) || skb->len < IB_LRH_BYTES + IB_BTH_BYTES)
		return false;
	p = skb->data;
	/*
	 * What ib_ud_header_unpack() would refuse with a log line is
	 * refused here first, quietly: the link counts it.
	 */
	if ((p[1] & 0x3) != IB_LNH_IBA_LOCAL && (p[1] & 0x3) != IB_LNH_IBA_GLOBAL)
		return false;
	hlen = IB_LRH_BYTES + ((p[1] & 0x3) == IB_LNH_IBA_GLOBAL ?
			       IB_GRH_BYTES : 0);
	if (skb->len < hlen + IB_BTH_BYTES || (p[0] & 0xf0) != 0 ||
	    (hlen > IB_LRH_BYTES && ((p[IB_LRH_BYTES] >> 4) != 6 ||
				     p[IB_LRH_BYTES + 6] != SOFTIB_GRH_NEXT_HDR)))
		return false;
	/* reliable connected: its requester or responder (rc_remote.c) */
	if ((p[hlen] & 0xe0) == IB_OPCODE_RC)
		return softib_rcr_recv(sdev, skb, hlen);
	if (skb->len < hlen + IB_BTH_BYTES + IB_DETH_BYTES ||
	    (p[hlen] != IB_OPCODE_UD_SEND_ONLY &&
	     p[hlen] != IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE) ||
	    (p[hlen + 1] & 0xf) != 0)
		return false;
	if (ib_ud_header_unpack(p, &h))
		return false;
	hlen += IB_BTH_BYTES + IB_DETH_BYTES +
		(h.immediate_present ? sizeof(__be32) : 0);
	if (skb->len < hlen || skb->len - hlen > SOFTIB_MTU_BYTES)
		return false;

	w.wqe.opcode = h.immediate_present ? IB_WR_SEND_WITH_IMM : IB_WR_SEND;
	w.wqe.imm = h.immediate_data;
	if (h.bth.solicited_event)
		w.wqe.send_flags |= IB_SEND_SOLICITED;
	if (flags & SOFTIB_LF_CSUM)
		w.wqe.send_flags |= IB_SEND_IP_CSUM;
	w.wqe.length = skb->len - hlen;
	w.wqe.remote_qpn = be32_to_cpu(h.bth.destination_qpn) & 0xffffff;
	w.wqe.remote_qkey = be32_to_cpu(h.deth.qkey);
	w.wqe.num_sge = 1;
	w.sge.addr = (uintptr_t)(skb->data + hlen);
	w.sge.length = w.wqe.length;
	w.wqe.av.dlid = be16_to_cpu(h.lrh.destination_lid);
	w.wqe.av.sl = h.lrh.service_level;
	w.wqe.av.grh = h.grh_present;
	if (h.grh_present) {
		w.wqe.av.dgid = h.grh.destination_gid;
		w.wqe.av.traffic_class = h.grh.traffic_class;
		w.wqe.av.flow_label = be32_to_cpu(h.grh.flow_label);
		w.wqe.av.hop_limit = h.grh.hop_limit;
		sgid = h.grh.source_gid;
	} else {
		softib_wire_lid_gid(be16_to_cpu(h.lrh.source_lid), &sgid);
	}
	pkt.sgid = &sgid;
	pkt.src_qpn = be32_to_cpu(h.deth.source_qpn) & 0xffffff;
	pkt.slid = be16_to_cpu(h.lrh.source_lid);
	pkt.pkey = be16_to_cpu(h.bth.pkey);
	pkt.qkey = w.wqe.remote_qkey;
	/* a multicast datagram names its group by the GRH's MGID */
	if (w.wqe.av.dlid >= SOFTIB_MLID_BASE &&
	    w.wqe.av.dlid != SOFTIB_LID_PERMISSIVE && !h.grh_present)
		return false;
	softib_route_pkt(&pkt);
	return true;
}
