// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the in-kernel fabric. Every port of the device hangs off one
 * switch; a QP's send engine (a work item) moves each send WQE to its
 * destination(s) by DLID and QPN, applying the checks a real receiving
 * port applies (port state, partition, Q_Key), and completes both sides.
 *
 * Lock order: a QP's sq.lock -> its rq.lock -> its SRQ's lock -> cq.lock.
 * Each kind has its own lockdep class (verbs.c, softib_wq_init()). A QP's
 * work_lock is innermost: taken only by softib_qp_queue().
 * The sender holds no lock of its own while it delivers; every delivery
 * runs inside one RCU read-side section, which is what destroy_qp waits
 * for before it frees a QP.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/sched.h>
#include <net/checksum.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pack.h>

#include "softib.h"

void softib_cq_add(struct softib_cq *cq, const struct ib_wc *wc, bool solicited)
{
	struct softib_dev *sdev = to_sdev(cq->ibcq.device);
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->count == cq->size) {
		/* overrun: hardware reports a CQ error and loses the entry */
		if (!cq->overflow) {
			cq->overflow = true;
			queue_work(sdev->wq, &cq->err_work);
		}
		goto out_unlock;
	}
	cq->ring[cq->head] = *wc;
	cq->head = (cq->head + 1) % cq->size;
	cq->count++;
	if (cq->notify == IB_CQ_SOLICITED && solicited) {
		softib_cq_signal(cq);
	} else if (cq->notify == IB_CQ_NEXT_COMP) {
		cq->mod_pending++;
		if (cq->mod_count ? cq->mod_pending >= cq->mod_count :
				    !cq->mod_period)
			softib_cq_signal(cq);
		else if (cq->mod_period && cq->mod_pending == 1)
			hrtimer_start(&cq->mod_timer,
				      ns_to_ktime(cq->mod_period * NSEC_PER_USEC),
				      HRTIMER_MODE_REL);
	}
out_unlock:
	spin_unlock_irqrestore(&cq->lock, flags);
}

static void softib_drop(struct softib_port *port, enum softib_drop why)
{
	atomic64_inc(&port->cnt.drops[why]);
}

/* Complete every receive WQE of a QP (not its SRQ) with WR_FLUSH_ERR. */
void softib_flush_rq(struct softib_qp *qp)
{
	struct softib_wq *rq = &qp->rq;
	struct ib_wc wc = {
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = IB_WC_RECV,
		.qp = &qp->ibqp,
	};
	unsigned long flags;

	spin_lock_irqsave(&rq->lock, flags);
	while (softib_wq_used(rq)) {
		struct softib_rwqe *rwqe = softib_wq_entry(rq, rq->tail);

		wc.wr_id = rwqe->wr_id;
		softib_wrid_retire(rq, rwqe->wr_id);
		rq->tail++;
		softib_cq_add(qp->rcq, &wc, true);
	}
	spin_unlock_irqrestore(&rq->lock, flags);
}

static void *softib_sge_va(const struct ib_sge *sge)
{
	return (void *)(uintptr_t)sge->addr;
}

/*
 * softib_copy_sg(), also returning the checksum (csum_partial()) of the
 * message bytes [from, from + clen), summed chunk by chunk right after
 * each chunk is copied, while it is still in the cache.
 */
__wsum softib_copy_sg_csum(const struct ib_sge *dst, u32 ndst, u32 off,
			   const struct ib_sge *src, u32 nsrc, u32 len,
			   u32 from, u32 clen)
{
	u32 di = 0, si = 0, soff = 0, pos = 0, end = from + clen;
	__wsum sum = 0;

	while (di < ndst && off >= dst[di].length)
		off -= dst[di++].length;
	while (len && di < ndst && si < nsrc) {
		u32 n = min3(dst[di].length - off, src[si].length - soff, len);
		void *d = softib_sge_va(&dst[di]) + off;

		/* a chunk is summed whole or not at all */
		if (pos < from && pos + n > from)
			n = from - pos;
		else if (pos >= from && pos < end && pos + n > end)
			n = end - pos;
		memcpy(d, softib_sge_va(&src[si]) + soff, n);
		if (pos >= from && pos < end)
			sum = csum_block_add(sum, csum_partial(d, n, 0),
					     pos - from);
		len -= n;
		off += n;
		soff += n;
		pos += n;
		if (off == dst[di].length) {
			di++;
			off = 0;
		}
		if (soff == src[si].length) {
			si++;
			soff = 0;
		}
	}
	return sum;
}

/*
 * Copy "len" bytes from a gather list into a scatter list starting "off"
 * bytes into the scatter list. Both lists hold kernel virtual addresses.
 */
void softib_copy_sg(const struct ib_sge *dst, u32 ndst, u32 off,
		    const struct ib_sge *src, u32 nsrc, u32 len)
{
	/* nothing summed: "from" is past any message */
	softib_copy_sg_csum(dst, ndst, off, src, nsrc, len, U32_MAX, 0);
}

/*
 * A GRH as an HCA sends it: the AV's traffic class, flow label, hop limit
 * and DGID, "paylen" bytes after it up to and with the ICRC, from "sgid".
 * Datagrams delivered inside a node (softib_write_grh()) and RC packets
 * to another node (rc_remote.c) both build theirs here.
 */
void softib_grh_fill(struct ib_grh *grh, const struct softib_av *av,
		     u32 paylen, const union ib_gid *sgid)
{
	grh->version_tclass_flow = cpu_to_be32((6 << 28) |
					       (av->traffic_class << 20) |
					       (av->flow_label & 0xfffff));
	grh->paylen = cpu_to_be16(paylen);
	grh->next_hdr = SOFTIB_GRH_NEXT_HDR;
	grh->hop_limit = av->hop_limit;
	grh->sgid = *sgid;
	grh->dgid = av->dgid;
}

static void softib_write_grh(const struct softib_pkt *pkt,
			     const struct ib_sge *dst, u32 ndst)
{
	struct ib_grh grh = {};
	union ib_gid sgid;
	struct ib_sge src = {
		.addr = (uintptr_t)&grh,
		.length = sizeof(grh),
	};

	if (pkt->sgid) {
		sgid = *pkt->sgid;	/* injected (inject.c) */
	} else if (pkt->sport) {
		softib_port_gid(pkt->sport, &sgid);
	} else {
		/* the SA's own answers carry no GRH; this is for safety */
		sgid.global.subnet_prefix = cpu_to_be64(SOFTIB_SUBNET_PREFIX);
		sgid.global.interface_id = softib_port_guid(pkt->slid);
	}
	softib_grh_fill(&grh, &pkt->wqe->av, pkt->wqe->length + IB_BTH_BYTES +
			IB_DETH_BYTES + 4 /* ICRC */, &sgid);
	softib_copy_sg(dst, ndst, 0, &src, 1, sizeof(grh));
}

/*
 * May a port send or receive this QP's packets now? Data needs an Active
 * port. Subnet management (QP0, VL15) passes in Init and Armed too, as it
 * must: that is how an SM brings the port up.
 */
static bool softib_port_passes(struct softib_port *port, struct softib_qp *qp)
{
	enum ib_port_state state = READ_ONCE(port->state);

	if (state == IB_PORT_ACTIVE)
		return true;
	return qp->ibqp.qp_type == IB_QPT_SMI &&
	       (state == IB_PORT_INIT || state == IB_PORT_ARMED);
}

/* Index of a matching P_Key in the receiving port's table, or -1. */
int softib_pkey_match(struct softib_port *port, u16 pkt_pkey, int only_index)
{
	int i;

	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++) {
		u16 p = READ_ONCE(port->pkeys[i]);

		if (only_index >= 0 && i != only_index)
			continue;
		if (!(p & 0x7fff) || (p & 0x7fff) != (pkt_pkey & 0x7fff))
			continue;
		/* limited members do not talk to limited members */
		if ((p & 0x8000) || (pkt_pkey & 0x8000))
			return i;
	}
	return -1;
}

/* The receive queue was consumed: fire the SRQ limit event if armed. */
static void softib_srq_check_limit(struct softib_srq *srq)
{
	lockdep_assert_held(&srq->rq.lock);
	if (srq->limit && softib_wq_used(&srq->rq) < srq->limit) {
		/* the limit event is one-shot until re-armed */
		srq->limit = 0;
		queue_work(to_sdev(srq->ibsrq.device)->wq, &srq->limit_work);
	}
}

/*
 * Copy a message into a receiver's buffers "dst": "hdr" bytes of GRH
 * space (40 for UD, 0 for RC) + payload, with the checksum offload, and
 * fill the completion in "wc" (all but wr_id, qp and opcode). Counts the
 * receiving port's packets. Returns 0, or -EMSGSIZE (the status says
 * so) if the message does not fit.
 */
int softib_recv_copy(const struct softib_pkt *pkt, struct softib_qp *dqp,
		     struct softib_port *dport, const struct ib_sge *dst,
		     u32 ndst, int pkey_index, u32 hdr, struct ib_wc *wc)
{
	const struct softib_swqe *wqe = pkt->wqe;
	struct softib_csum cs;
	u32 space = 0;
	bool fill;
	__wsum sum;
	u32 i;

	for (i = 0; i < ndst; i++)
		space += dst[i].length;
	if (space < hdr + wqe->length) {
		wc->status = IB_WC_LOC_LEN_ERR;
		softib_drop(dport, SOFTIB_DROP_TOO_LONG);
		return -EMSGSIZE;
	}
	/* UD: the first 40 bytes are GRH space whether or not a GRH came */
	if (hdr && (pkt->mcast || wqe->av.grh)) {
		softib_write_grh(pkt, dst, ndst);
		wc->wc_flags |= IB_WC_GRH;
	}
	if (hdr && softib_offloads && dqp->ibqp.qp_type == IB_QPT_UD &&
	    softib_csum_parse(wqe->sge, wqe->num_sge, wqe->length, &cs)) {
		/* TCP/UDP in IPoIB: checksum it on the way in */
		sum = softib_copy_sg_csum(dst, ndst, hdr, wqe->sge,
					  wqe->num_sge, wqe->length, cs.l4off,
					  cs.l4len);
		fill = wqe->send_flags & IB_SEND_IP_CSUM;
		if (fill || cs.ip_ok)
			wc->wc_flags |= softib_csum_finish(&cs, dst, ndst, hdr,
							   sum, fill);
		atomic64_inc(fill ? &dqp->sdev->csum_filled :
			     wc->wc_flags & IB_WC_IP_CSUM_OK ?
			     &dqp->sdev->csum_verified :
			     &dqp->sdev->csum_unverified);
	} else {
		softib_copy_sg(dst, ndst, hdr, wqe->sge, wqe->num_sge,
			       wqe->length);
	}
	wc->status = IB_WC_SUCCESS;
	wc->byte_len = hdr + wqe->length;
	wc->src_qp = pkt->src_qpn;
	wc->slid = pkt->slid;
	wc->sl = wqe->av.sl;
	wc->port_num = dport->num;
	wc->pkey_index = pkey_index;
	if (wqe->opcode == IB_WR_SEND_WITH_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = wqe->imm;
	}
	atomic64_inc(&dport->cnt.rcv_packets);
	atomic64_add(wqe->length, &dport->cnt.rcv_bytes);
	if (pkt->mcast)
		atomic64_inc(&dport->cnt.mcast_rcv_packets);
	return 0;
}

/*
 * Consume one receive WQE of "rq" (the QP's own queue or its SRQ) for a
 * message, then the receive completion. The WQE is consumed only after
 * the data is in place, with the queue's lock held throughout, so a
 * poster cannot reuse its slot. Returns 0, SOFTIB_RNR (no receive WQE)
 * or -EMSGSIZE.
 */
static int softib_recv(const struct softib_pkt *pkt, struct softib_qp *dqp,
		       struct softib_port *dport, struct softib_wq *rq,
		       int pkey_index, u32 hdr)
{
	struct softib_rwqe *rwqe;
	struct ib_wc wc = {};
	int ret;

	lockdep_assert_held(&rq->lock);
	if (!softib_wq_used(rq)) {
		softib_drop(dport, SOFTIB_DROP_NO_RWQE);
		return SOFTIB_RNR;
	}
	rwqe = softib_wq_entry(rq, rq->tail);
	ret = softib_recv_copy(pkt, dqp, dport, rwqe->sge, rwqe->num_sge,
			       pkey_index, hdr, &wc);
	wc.wr_id = rwqe->wr_id;
	wc.qp = &dqp->ibqp;
	wc.opcode = IB_WC_RECV;
	softib_wrid_retire(rq, rwqe->wr_id);
	rq->tail++;
	softib_cq_add(dqp->rcq, &wc, pkt->wqe->send_flags & IB_SEND_SOLICITED);
	return ret;
}

static bool softib_rq_take_from(struct softib_wq *rq, struct softib_port *dport,
				struct softib_rwqe *copy)
{
	struct softib_rwqe *rwqe;

	lockdep_assert_held(&rq->lock);
	if (!softib_wq_used(rq)) {
		softib_drop(dport, SOFTIB_DROP_NO_RWQE);
		return false;
	}
	rwqe = softib_wq_entry(rq, rq->tail);
	copy->wr_id = rwqe->wr_id;
	copy->num_sge = rwqe->num_sge;
	memcpy(copy->sge, rwqe->sge, rwqe->num_sge * sizeof(rwqe->sge[0]));
	softib_wrid_retire(rq, rwqe->wr_id);
	rq->tail++;
	return true;
}

/*
 * Take the next receive WQE of a QP, from its own RQ or its SRQ, for a
 * message that comes in several packets (rc_remote.c): the WQE leaves
 * the ring now, as an HCA takes it at a message's first packet, and a
 * copy goes to "copy" (room for the queue's max_sge). False, counted,
 * if there is none. The caller holds dqp->rq.lock.
 */
bool softib_rq_take(struct softib_qp *dqp, struct softib_port *dport,
		    struct softib_rwqe *copy)
{
	bool ok;

	lockdep_assert_held(&dqp->rq.lock);
	if (!dqp->srq)
		return softib_rq_take_from(&dqp->rq, dport, copy);
	spin_lock(&dqp->srq->rq.lock);
	ok = softib_rq_take_from(&dqp->srq->rq, dport, copy);
	softib_srq_check_limit(dqp->srq);
	spin_unlock(&dqp->srq->rq.lock);
	return ok;
}

/*
 * Receive into a QP's own RQ or its SRQ; the caller holds dqp->rq.lock,
 * which keeps the QP's state stable.
 */
static int softib_recv_any(const struct softib_pkt *pkt, struct softib_qp *dqp,
			   struct softib_port *dport, int pkey_index, u32 hdr)
{
	int ret;

	lockdep_assert_held(&dqp->rq.lock);
	if (!dqp->srq)
		return softib_recv(pkt, dqp, dport, &dqp->rq, pkey_index, hdr);
	spin_lock(&dqp->srq->rq.lock);
	ret = softib_recv(pkt, dqp, dport, &dqp->srq->rq, pkey_index, hdr);
	softib_srq_check_limit(dqp->srq);
	spin_unlock(&dqp->srq->rq.lock);
	return ret;
}

/*
 * Deliver one datagram into one receiving QP, as its port would: port
 * state, partition, Q_Key, then a receive WQE. Called under rcu_read_lock().
 */
static void softib_deliver_ud(const struct softib_pkt *pkt,
			      struct softib_qp *dqp)
{
	struct softib_port *dport = softib_port(dqp->sdev, dqp->port_num);
	unsigned long flags;
	int pkey_index;

	if (!softib_port_passes(dport, dqp)) {
		softib_drop(dport, SOFTIB_DROP_PORT_DOWN);
		return;
	}
	switch (dqp->ibqp.qp_type) {
	case IB_QPT_SMI:
		pkey_index = 0;
		break;
	case IB_QPT_GSI:
		pkey_index = softib_pkey_match(dport, pkt->pkey, -1);
		break;
	default:
		pkey_index = softib_pkey_match(dport, pkt->pkey,
					       READ_ONCE(dqp->pkey_index));
		break;
	}
	if (pkey_index < 0) {
		softib_drop(dport, SOFTIB_DROP_PKEY);
		return;
	}
	if (dqp->ibqp.qp_type != IB_QPT_SMI &&
	    pkt->qkey != READ_ONCE(dqp->qkey)) {
		softib_drop(dport, SOFTIB_DROP_QKEY);
		return;
	}

	/* the QP's rq.lock keeps its state stable while we deliver */
	spin_lock_irqsave(&dqp->rq.lock, flags);
	if (!softib_qp_can_recv(dqp->state))
		softib_drop(dport, SOFTIB_DROP_NO_QP);
	else if (dqp->rn)	/* an rdma_netdev's: into its receive rings */
		softib_rn_recv(pkt, dqp, dport, pkey_index);
	else	/* UD has no RNR: without a receive WQE the datagram is lost */
		softib_recv_any(pkt, dqp, dport, pkey_index, IB_GRH_BYTES);
	spin_unlock_irqrestore(&dqp->rq.lock, flags);
}

/*
 * The port that owns a unicast LID: its base LID with the LMC's low bits
 * masked. Only for packets that do not come from a CA port (the SA's
 * answers, the virtual nodes'): the switch routes the rest
 * (softib_switch_unicast()). The built-in SM gives port N LID N, which
 * is found at once; an SM may give any LIDs, so the rest are searched
 * (at most 16 ports).
 */
static struct softib_port *softib_lid_to_port(struct softib_dev *sdev, u16 lid)
{
	struct softib_port *port;
	u32 i;

	if (lid > softib_lid_base && lid <= softib_lid_base + sdev->nports) {
		port = softib_port(sdev, lid - softib_lid_base);
		if (READ_ONCE(port->lid) == lid)
			return port;
	}
	for (i = 0; i < sdev->nports; i++) {
		port = &sdev->ports[i];
		if (softib_port_owns_lid(port, lid))
			return port;
	}
	return NULL;
}

/*
 * The CA port a unicast packet to "dlid" reaches, or NULL (the discard
 * is counted). *vnode is set, and NULL returned, for a virtual node's
 * LID (vnode.c), which keeps its own path. From a CA port the packet
 * goes through the switch by its forwarding table (switch.c); from
 * elsewhere (the SA at the switch, a virtual node) by LID ownership.
 */
static struct softib_port *softib_unicast_dest(const struct softib_pkt *pkt,
					       u16 dlid, bool smp, u32 *vnode)
{
	struct softib_port *dport;

	*vnode = U32_MAX;
	if (unlikely(dlid >= SOFTIB_VNODE_LID) && softib_vnode_lid(dlid, vnode))
		return NULL;
	if (likely(pkt->sport) &&
	    dlid != READ_ONCE(pkt->sdev->sw.ports[0].lid))
		return softib_switch_unicast(pkt, dlid, smp);
	dport = softib_lid_to_port(pkt->sdev, dlid);
	if (!dport && pkt->sport)
		softib_drop(pkt->sport, SOFTIB_DROP_NO_DEST);
	else if (!dport && pkt->from_link)
		/* no port here owns it: packets do not pass through a node */
		softib_switch_unrouted(pkt->sdev, pkt->in_port);
	return dport;
}

/*
 * Multicast: the sending port's own QPs attached to the group hear it
 * inside the HCA (unless the sending QP blocks its loopback); the other
 * ports hear it if the switch puts it out of theirs (its MFT entry),
 * each delivering to the QPs attached on that port only. A datagram
 * that comes from no CA port (a virtual node's) reaches every attached
 * QP, as it did before the switch forwarded multicast.
 * Called under rcu_read_lock().
 */
static void softib_route_mcast(struct softib_pkt *pkt, u16 mlid)
{
	struct softib_dev *sdev = pkt->sdev;
	struct softib_mcast_attach *a;
	struct softib_mcast *mc;
	u32 s = 0, ports = U32_MAX;
	struct softib_qp *qp;

	pkt->mcast = true;
	list_for_each_entry_rcu(mc, &sdev->mcast, list) {
		if (mc->mlid != mlid)
			continue;
		if (pkt->sport) {
			s = pkt->sport->num;
			ports = softib_switch_mcast(pkt, mlid) | BIT(s);
		}
		list_for_each_entry_rcu(a, &mc->attached, list) {
			qp = a->qp;
			if (!(ports & BIT(qp->port_num)))
				continue;
			if (qp == pkt->src && qp->block_mcast_loopback)
				continue;
			softib_deliver_ud(pkt, qp);
		}
		if (softib_vnodes)
			softib_vnode_recv_mcast(pkt, &mc->mgid);
		break;
	}
}

/*
 * A multicast datagram from another node: its GRH names the group, whose
 * MLID is this node's own (each node's SA numbers its groups). It
 * reaches every QP attached here. Called under rcu_read_lock().
 */
static void softib_route_mcast_mgid(struct softib_pkt *pkt)
{
	struct softib_mcast *mc;

	list_for_each_entry_rcu(mc, &pkt->sdev->mcast, list) {
		if (!memcmp(&mc->mgid, &pkt->wqe->av.dgid, sizeof(mc->mgid))) {
			softib_route_mcast(pkt, mc->mlid);
			return;
		}
	}
}

/* Route one datagram by DLID and deliver it. */
void softib_route_pkt(struct softib_pkt *pkt)
{
	struct softib_dev *sdev = pkt->sdev;
	const struct softib_swqe *wqe = pkt->wqe;
	u16 dlid = wqe->av.dlid;
	struct softib_port *dport;
	struct softib_qp *dqp;
	u16 sw_lid;
	u32 vnode, node;

	/*
	 * Subnet management from a port's QP0 to the permissive LID (a
	 * directed route) or to the switch's LID goes to the switch at the
	 * other end of the port's cable.
	 */
	sw_lid = READ_ONCE(sdev->sw.ports[0].lid);
	if (pkt->src && pkt->src->ibqp.qp_type == IB_QPT_SMI &&
	    (dlid == SOFTIB_LID_PERMISSIVE || (sw_lid && dlid == sw_lid))) {
		softib_switch_recv(pkt, pkt->sport->num);
		return;
	}
	/*
	 * The same from another node: a directed route that its switch put
	 * out of its port to this node, or a LID-routed SMP to this
	 * switch's LID (an SM there polling this one's SMInfo, smpquery
	 * -L). It enters the switch at the link's port to that node.
	 */
	if (pkt->from_link && wqe->remote_qpn == 0 &&
	    (dlid == SOFTIB_LID_PERMISSIVE || (sw_lid && dlid == sw_lid))) {
		softib_switch_recv(pkt, pkt->in_port);
		return;
	}

	/*
	 * The built-in subnet administrator answers at (SM LID, QP1), to
	 * this node's ports and, as the fabric's master, to the other
	 * nodes'; an external SM's SA is a port's QP1 like any other.
	 */
	if (softib_builtin_sm && dlid == softib_sm_lid) {
		if (wqe->remote_qpn == 1 && pkt->qkey == SOFTIB_QP1_QKEY &&
		    (pkt->sport || pkt->from_link))
			softib_sa_recv(pkt);
		else if (pkt->sport)
			softib_drop(pkt->sport, SOFTIB_DROP_NO_QP);
		return;
	}

	/* another node's LID: out on the link to that node (wire.c) */
	if (!pkt->from_link && softib_wire_lid_node(sdev, dlid, &node)) {
		softib_wire_send(pkt, node);
		return;
	}

	rcu_read_lock();
	if (dlid >= SOFTIB_MLID_BASE && dlid != SOFTIB_LID_PERMISSIVE) {
		if (pkt->from_link) {
			softib_route_mcast_mgid(pkt);
		} else {
			softib_route_mcast(pkt, dlid);
			/* and to the other nodes, whose members hear it too */
			if (sdev->link && pkt->sport)
				softib_wire_send(pkt, 0);
		}
		goto out_unlock;
	}

	dport = softib_unicast_dest(pkt, dlid,
				    pkt->src &&
				    pkt->src->ibqp.qp_type == IB_QPT_SMI,
				    &vnode);
	if (!dport) {
		if (vnode != U32_MAX)
			softib_vnode_recv(pkt, vnode);
		goto out_unlock;
	}
	if (wqe->remote_qpn <= 1)
		dqp = rcu_dereference(dport->special[wqe->remote_qpn]);
	else
		dqp = xa_load(&sdev->qps, wqe->remote_qpn);
	/*
	 * Only datagram QPs take datagrams. An RC QP's Q_Key reads as 0 (RC
	 * cannot set one), so without this a UD send with Q_Key 0 would land
	 * in its receive queue, GRH space and all.
	 */
	if (!dqp || dqp->port_num != dport->num ||
	    (dqp->ibqp.qp_type != IB_QPT_UD &&
	     dqp->ibqp.qp_type != IB_QPT_GSI &&
	     dqp->ibqp.qp_type != IB_QPT_SMI)) {
		softib_drop(dport, SOFTIB_DROP_NO_QP);
		goto out_unlock;
	}
	softib_deliver_ud(pkt, dqp);
out_unlock:
	rcu_read_unlock();
}

/*
 * An SMP from the switch into the QP0 of the CA port at the other end
 * of its cable (switch.c).
 */
void softib_deliver_smi(const struct softib_pkt *pkt,
			struct softib_port *dport)
{
	struct softib_qp *dqp;

	rcu_read_lock();
	dqp = rcu_dereference(dport->special[0]);
	if (dqp)
		softib_deliver_ud(pkt, dqp);
	else
		softib_drop(dport, SOFTIB_DROP_NO_QP);
	rcu_read_unlock();
}

/*
 * A copy of a MAD-sized datagram, with room for the answer after it:
 * what the SA and the switch, which answer in software, work on. NULL
 * if the datagram is not one MAD or there is no memory (the requester
 * times out and retries). kfree() it.
 */
struct ib_mad *softib_pkt_mad(const struct softib_pkt *pkt)
{
	const struct softib_swqe *wqe = pkt->wqe;
	struct ib_mad *req;
	struct ib_sge sge;

	if (wqe->length != sizeof(*req))
		return NULL;
	req = kzalloc(2 * sizeof(*req), GFP_KERNEL);
	if (!req)
		return NULL;
	sge.addr = (uintptr_t)req;
	sge.length = sizeof(*req);
	softib_copy_sg(&sge, 1, 0, wqe->sge, wqe->num_sge, wqe->length);
	return req;
}

/* A packet as QP "qp" sends it from its port; returns that port. */
static struct softib_port *softib_pkt_init(struct softib_pkt *pkt,
					   struct softib_qp *qp,
					   const struct softib_swqe *wqe)
{
	struct softib_port *sport = softib_port(qp->sdev, qp->port_num);

	*pkt = (struct softib_pkt) {
		.sdev = qp->sdev,
		.src = qp,
		.sport = sport,
		.wqe = wqe,
		.src_qpn = qp->ibqp.qp_num,
		.slid = sport->lid,
	};
	return sport;
}

/* Put one UD message on the wire; returns the sender's completion status. */
static enum ib_wc_status softib_send_ud_one(struct softib_qp *qp,
					    const struct softib_swqe *wqe)
{
	struct softib_pkt pkt;
	struct softib_port *sport = softib_pkt_init(&pkt, qp, wqe);

	if (wqe->length > SOFTIB_MTU_BYTES)
		return IB_WC_LOC_LEN_ERR;

	switch (qp->ibqp.qp_type) {
	case IB_QPT_SMI:
		pkt.pkey = 0xffff;
		/* a port without a LID yet sends its SMPs from the permissive LID */
		if (!pkt.slid)
			pkt.slid = SOFTIB_LID_PERMISSIVE;
		break;
	case IB_QPT_GSI:
		if (wqe->pkey_index >= SOFTIB_PKEY_TBL_LEN)
			return IB_WC_LOC_QP_OP_ERR;
		pkt.pkey = READ_ONCE(sport->pkeys[wqe->pkey_index]);
		break;
	default:
		pkt.pkey = READ_ONCE(sport->pkeys[READ_ONCE(qp->pkey_index)]);
		break;
	}
	/* bit 31 of the WR's Q_Key means "use the QP's own Q_Key" */
	pkt.qkey = (wqe->remote_qkey & 0x80000000) ? READ_ONCE(qp->qkey) :
						     wqe->remote_qkey;

	/* a port that is down loses what is sent; the send still completes */
	if (!softib_port_passes(sport, qp)) {
		softib_drop(sport, SOFTIB_DROP_PORT_DOWN);
		return IB_WC_SUCCESS;
	}
	atomic64_inc(&sport->cnt.xmit_packets);
	atomic64_add(wqe->length, &sport->cnt.xmit_bytes);
	if (wqe->av.dlid >= SOFTIB_MLID_BASE &&
	    wqe->av.dlid != SOFTIB_LID_PERMISSIVE)
		atomic64_inc(&sport->cnt.mcast_xmit_packets);
	softib_route_pkt(&pkt);
	return IB_WC_SUCCESS;
}

/*
 * An LSO WQE goes out as one message per segment (offload.c), built in
 * "buf": the QP's own for a posted WQE, a send queue's of the
 * rdma_netdev (rdma_netdev.c), which sends from several CPUs at once.
 */
enum ib_wc_status softib_send_ud(struct softib_qp *qp,
				 const struct softib_swqe *wqe,
				 const struct softib_lso_buf *buf)
{
	if (wqe->opcode == IB_WR_LSO)
		return softib_lso_send(qp, wqe, buf, softib_send_ud_one);
	return softib_send_ud_one(qp, wqe);
}

/* IBA RNR NAK timer codes (table 45), in microseconds */
static const u32 softib_rnr_usec[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

u32 softib_rnr_timer_usec(u8 code)
{
	return softib_rnr_usec[code & 31];
}

/*
 * Put one RC SEND into the connected QP. Returns the sender's completion
 * status, or SOFTIB_RNR with *rnr_usec set when the responder has no
 * receive WQE. A responder that is gone, not connected to us, or outside
 * our partition never acknowledges: the requester's retries run out.
 */
static int softib_send_rc(struct softib_qp *qp, const struct softib_swqe *wqe,
			  u32 *rnr_usec)
{
	struct softib_pkt pkt;
	struct softib_port *sport = softib_pkt_init(&pkt, qp, wqe);
	struct softib_port *dport;
	struct softib_qp *dqp;
	unsigned long flags;
	int pkey_index;
	u32 vnode, node;
	u8 fault;
	int ret;

	if (READ_ONCE(sport->state) != IB_PORT_ACTIVE) {
		softib_drop(sport, SOFTIB_DROP_PORT_DOWN);
		return IB_WC_RETRY_EXC_ERR;
	}
	pkt.pkey = READ_ONCE(sport->pkeys[READ_ONCE(qp->pkey_index)]);

	/* another node's LID: the message crosses the link (rc_remote.c) */
	if (qp->rcr && softib_wire_lid_node(qp->sdev, qp->av.dlid, &node))
		return softib_rcr_send(qp, wqe, pkt.pkey, node, rnr_usec);

	rcu_read_lock();
	ret = IB_WC_RETRY_EXC_ERR;
	dport = softib_unicast_dest(&pkt, qp->av.dlid, false, &vnode);
	if (!dport && vnode != U32_MAX) {
		ret = softib_vnode_rc_recv(&pkt, vnode, qp->dest_qpn);
		if (ret == IB_WC_SUCCESS) {
			atomic64_inc(&sport->cnt.xmit_packets);
			atomic64_add(wqe->length, &sport->cnt.xmit_bytes);
		}
		goto out_unlock;
	}
	if (!dport)
		goto out_unlock;
	dqp = xa_load(&qp->sdev->qps, qp->dest_qpn);
	if (!dqp || dqp->port_num != dport->num ||
	    dqp->ibqp.qp_type != IB_QPT_RC ||
	    READ_ONCE(dqp->dest_qpn) != qp->ibqp.qp_num) {
		softib_drop(dport, SOFTIB_DROP_NO_QP);
		goto out_unlock;
	}
	if (READ_ONCE(dport->state) != IB_PORT_ACTIVE) {
		softib_drop(dport, SOFTIB_DROP_PORT_DOWN);
		goto out_unlock;
	}
	pkey_index = softib_pkey_match(dport, pkt.pkey,
				       READ_ONCE(dqp->pkey_index));
	if (pkey_index < 0) {
		softib_drop(dport, SOFTIB_DROP_PKEY);
		goto out_unlock;
	}

	spin_lock_irqsave(&dqp->rq.lock, flags);
	if (!softib_qp_can_recv(dqp->state)) {
		spin_unlock_irqrestore(&dqp->rq.lock, flags);
		softib_drop(dport, SOFTIB_DROP_NO_QP);
		goto out_unlock;
	}
	fault = READ_ONCE(dqp->resp_fault);
	if (unlikely(fault)) {
		/*
		 * fault/rem_inv_req, fault/rem_access: the responder finds
		 * the request invalid, or an access violation. No receive
		 * WQE is consumed, so an affiliated event on the responder
		 * reports it (it goes to ERR), and a NAK to the requester.
		 */
		WRITE_ONCE(dqp->resp_fault, 0);
		spin_unlock_irqrestore(&dqp->rq.lock, flags);
		set_bit(fault == IB_WC_REM_ACCESS_ERR ? SOFTIB_EV_ACCESS_ERR :
			SOFTIB_EV_REQ_ERR, &dqp->fail_events);
		softib_qp_queue(dqp, SOFTIB_QPW_ERR, 0);
		ret = fault;
		goto out_unlock;
	}
	if (unlikely(READ_ONCE(dqp->rnr_stuck))) {
		/* fault/rnr_stuck: as if the receive queue stayed empty */
		softib_drop(dport, SOFTIB_DROP_NO_RWQE);
		ret = SOFTIB_RNR;
	} else {
		ret = softib_recv_any(&pkt, dqp, dport, pkey_index, 0);
	}
	spin_unlock_irqrestore(&dqp->rq.lock, flags);

	if (ret == SOFTIB_RNR && unlikely(READ_ONCE(dqp->rnr_stuck))) {
		/* the CM's default timer (code 0), which in-tree keeps */
		*rnr_usec = softib_rnr_usec[0];
	} else if (ret == SOFTIB_RNR) {
		*rnr_usec = softib_rnr_usec[READ_ONCE(dqp->min_rnr_timer) & 31];
	} else if (ret == -EMSGSIZE) {
		/* the responder's QP fails too (NAK: invalid request) */
		softib_qp_queue(dqp, SOFTIB_QPW_ERR, 0);
		ret = IB_WC_REM_INV_REQ_ERR;
	} else {
		atomic64_inc(&sport->cnt.xmit_packets);
		atomic64_add(wqe->length, &sport->cnt.xmit_bytes);
		ret = IB_WC_SUCCESS;
	}
out_unlock:
	rcu_read_unlock();
	return ret;
}

/*
 * The send engine of one QP. It runs in the device workqueue, one instance
 * per QP at a time, so WQEs leave in posting order. The WQE stays in the
 * ring (tail not advanced) while it is being delivered: the poster cannot
 * reuse the slot before its completion is built.
 */
void softib_send_worker(struct work_struct *work)
{
	struct softib_qp *qp = container_of(to_delayed_work(work),
					    struct softib_qp, send_work);
	bool rc = qp->ibqp.qp_type == IB_QPT_RC;
	u32 rnr_usec;
	int ret;
	struct softib_wq *sq = &qp->sq;
	unsigned int budget = 256;
	struct ib_wc wc = {
		.qp = &qp->ibqp,
		.opcode = IB_WC_SEND,
	};
	const struct softib_swqe *wqe;
	unsigned long flags;
	bool signaled;
	u32 idx;

	for (;;) {
		spin_lock_irqsave(&sq->lock, flags);
		if (!softib_wq_used(sq) || READ_ONCE(qp->sends_stalled) ||
		    !softib_qp_sq_runs(qp->state)) {
			spin_unlock_irqrestore(&sq->lock, flags);
			return;
		}
		idx = sq->tail;
		wqe = softib_wq_entry(sq, idx);
		if (qp->state != IB_QPS_RTS) {
			/* ERR, or a UD QP's send queue error (SQE) */
			wc.status = IB_WC_WR_FLUSH_ERR;
			signaled = true;
		} else {
			spin_unlock_irqrestore(&sq->lock, flags);
			if (unlikely(wqe->opcode == IB_WR_LSO && !qp->lso)) {
				/*
				 * An LSO WQE on a QP without LSO (an RC QP, or
				 * UD created without IPOIB_UD_LSO): hardware
				 * posts it and fails it with a local QP
				 * operation error; RC goes to ERR below
				 */
				wc.status = IB_WC_LOC_QP_OP_ERR;
			} else if (!rc) {
				struct softib_lso_buf buf = {
					.tmpl = softib_swqe_lso_hdr(qp, wqe),
					.seg = qp->lso_seg,
					.hdr = qp->lso_hdr,
				};

				wc.status = softib_send_ud(qp, wqe, &buf);
			} else {
				ret = softib_send_rc(qp, wqe, &rnr_usec);
				/* on another node: its answer runs us again */
				if (ret == SOFTIB_PENDING)
					return;
				if (ret == SOFTIB_RNR && (qp->rnr_retry == 7 ||
							  qp->rnr_left)) {
					/* RNR NAK: try the same WQE again later */
					if (qp->rnr_retry != 7)
						qp->rnr_left--;
					softib_qp_queue(qp, SOFTIB_QPW_SEND,
							usecs_to_jiffies(rnr_usec));
					return;
				}
				wc.status = ret == SOFTIB_RNR ?
					    IB_WC_RNR_RETRY_EXC_ERR : ret;
				qp->rnr_left = qp->rnr_retry;
			}
			signaled = qp->sig_all ||
				   (wqe->send_flags & IB_SEND_SIGNALED) ||
				   wc.status != IB_WC_SUCCESS;
			spin_lock_irqsave(&sq->lock, flags);
			if (sq->tail != idx) {
				/* a reset to RESET discarded the ring meanwhile */
				spin_unlock_irqrestore(&sq->lock, flags);
				continue;
			}
		}
		wc.wr_id = wqe->wr_id;
		wc.byte_len = wqe->length;
		/* completed, or retired without a completion when unsignaled */
		softib_wrid_retire(sq, wqe->wr_id);
		sq->tail++;
		spin_unlock_irqrestore(&sq->lock, flags);

		if (signaled)
			softib_cq_add(qp->scq, &wc, false);
		/* an RC error completion takes the QP to ERR; the rest flush */
		if (rc && wc.status != IB_WC_SUCCESS &&
		    wc.status != IB_WC_WR_FLUSH_ERR)
			softib_qp_to_error(qp);

		if (!--budget) {
			/* let other QPs' engines run; we come back */
			softib_qp_queue(qp, SOFTIB_QPW_SEND, 0);
			return;
		}
	}
}
