// SPDX-License-Identifier: GPL-2.0
/*
 * softib: connected mode of the virtual nodes (vnode.c), so that scale
 * tests can open thousands of IPoIB-CM connections (RFC 4755) inside one
 * machine.
 *
 * A node is the passive side of a connection as a host listening on its
 * IPoIB service ID is: a CM REQ to service IPOIB_CM_IETF_ID | its UD QPN
 * gets a REP at once, a DREQ a DREP, and an RTU needs nothing. The
 * node's end of a connection is one slot of a table of
 * SOFTIB_VNODE_CONNS, QPN SOFTIB_VNODE_RC_QPN + slot, taken in turn: when
 * the table wraps, the oldest connection's slot goes to the newest, and
 * the old one's sends are no longer acknowledged (its requester sees
 * "retry exceeded", as with a peer that lost the connection).
 *
 * What comes over a connection is answered as a datagram is (vnode.c),
 * over UD to the IPoIB QPN the REQ's private data named: a node never
 * opens a connection of its own. RFC 4755 allows that (each direction is
 * its own connection, and either may stay unconnected), and the host
 * under test only needs its own active side to be exercised.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/vmalloc.h>
#include <rdma/ib_mad.h>

#include "softib.h"

#define SOFTIB_CM_CLASS_VERSION	2
#define SOFTIB_CM_REQ		0x0010
#define SOFTIB_CM_REP		0x0013
#define SOFTIB_CM_RTU		0x0014
#define SOFTIB_CM_DREQ		0x0015
#define SOFTIB_CM_DREP		0x0016
#define SOFTIB_IPOIB_CM_ID	0x1000000000000000ULL	/* | the UD QPN */
/* what a node receives over a connection: IPoIB-CM's 64 KiB buffer */
#define SOFTIB_IPOIB_CM_BUF	(0x10000 - 0x10 + SOFTIB_IPOIB_HLEN)

/* Wire layout of the CM messages used, after the MAD header (IBTA 12.6) */
#define REQ_LOCAL_ID		0
#define REQ_SERVICE_ID		8
#define REQ_LOCAL_QPN		32	/* QPN(24) responder resources(8) */
#define REQ_PKEY		48
#define REQ_MTU_RNR		50	/* MTU(4) RDC(1) RNR retry count(3) */
#define REQ_PRIVATE		140	/* IPoIB: UD QPN, receive MTU */
#define REP_LOCAL_ID		0
#define REP_REMOTE_ID		4
#define REP_LOCAL_QPN		12	/* QPN(24) vendor(8) */
#define REP_START_PSN		20	/* PSN(24) vendor(8) */
#define REP_RNR_SRQ		27	/* RNR retry count(3) SRQ(1) rsvd(4) */
#define REP_CA_GUID		28
#define REP_PRIVATE		36
#define DREQ_LOCAL_ID		0
#define DREQ_REMOTE_ID		4
#define DREQ_REMOTE_QPN		8	/* QPN(24) rsvd(8) */
#define DREP_LOCAL_ID		0
#define DREP_REMOTE_ID		4

/* One connection: node's end in slot k, the requester's as the REQ said. */
struct softib_vnode_conn {
	u32 node;		/* node + 1; 0: the slot is free */
	u32 local_id;		/* our communication ID */
	u32 remote_id;		/* the requester's */
	u16 lid;		/* the requester's port */
	u16 pkey;
	u32 rc_qpn;		/* its RC QP */
	u32 ud_qpn;		/* its IPoIB (UD) QP */
};

static struct softib_vnode_conn *softib_vnode_conns;
static atomic_t softib_vnode_conn_next;

int softib_vnode_cm_setup(void)
{
	if (!softib_vnodes || !softib_vnode_cm)
		return 0;
	softib_vnode_conns = vzalloc(array_size(SOFTIB_VNODE_CONNS,
						sizeof(*softib_vnode_conns)));
	return softib_vnode_conns ? 0 : -ENOMEM;
}

void softib_vnode_cm_cleanup(void)
{
	vfree(softib_vnode_conns);
	softib_vnode_conns = NULL;
}

/* The connection a node's QPN stands for; NULL when it is not open. */
static struct softib_vnode_conn *softib_vnode_conn(u32 i, u32 qpn)
{
	struct softib_vnode_conn *c;
	u32 k = qpn - SOFTIB_VNODE_RC_QPN;

	if (!softib_vnode_conns || qpn < SOFTIB_VNODE_RC_QPN ||
	    k >= SOFTIB_VNODE_CONNS)
		return NULL;
	c = &softib_vnode_conns[k];
	/* the fields were written before node (softib_vnode_cm_req) */
	return smp_load_acquire(&c->node) == i + 1 ? c : NULL;
}

/*
 * Turn the request at "mad" into an empty CM message "attr": the header
 * stays the request's (its TID, class and version), the body is cleared.
 */
static void softib_vnode_cm_answer(u8 *mad, u16 attr)
{
	struct ib_mad_hdr *hdr = (struct ib_mad_hdr *)mad;

	hdr->method = IB_MGMT_METHOD_SEND;
	hdr->status = 0;
	hdr->class_specific = 0;
	hdr->attr_id = cpu_to_be16(attr);
	hdr->attr_mod = 0;
	memset(mad + IB_MGMT_MAD_HDR, 0, IB_MGMT_MAD_DATA);
}

/* Send the CM message at "mad" from node i's QP1 to the asker's. */
static void softib_vnode_cm_send(const struct softib_pkt *req, u32 i, u8 *mad)
{
	struct softib_vnode_to to = {
		.lid = req->slid, .qpn = 1, .qkey = SOFTIB_QP1_QKEY,
	};

	softib_vnode_send(req, i, 1, &to, mad, IB_MGMT_MAD_SIZE);
}

/* A REQ: take the next slot and answer with a REP. */
static void softib_vnode_cm_req(const struct softib_pkt *req, u32 i, u8 *mad)
{
	u8 *m = mad + IB_MGMT_MAD_HDR;
	struct softib_vnode_conn *c;
	u32 id, rnr, k;

	if (!softib_vnode_conns ||
	    get_unaligned_be64(m + REQ_SERVICE_ID) !=
	    (SOFTIB_IPOIB_CM_ID | SOFTIB_VNODE_QPN)) {
		/* no listener: a real host rejects, here the REQ times out */
		atomic64_inc(&req->sdev->vnode_dropped);
		return;
	}
	/* IDs start at 1: ib_cm reads 0 as "none" */
	id = atomic_inc_return(&softib_vnode_conn_next);
	k = id % SOFTIB_VNODE_CONNS;
	c = &softib_vnode_conns[k];
	WRITE_ONCE(c->node, 0);
	/* a reader sees the old connection or none, never half of this one */
	smp_wmb();
	c->local_id = id;
	c->remote_id = get_unaligned_be32(m + REQ_LOCAL_ID);
	c->lid = req->slid;
	c->pkey = get_unaligned_be16(m + REQ_PKEY);
	c->rc_qpn = get_unaligned_be32(m + REQ_LOCAL_QPN) >> 8;
	c->ud_qpn = get_unaligned_be32(m + REQ_PRIVATE) & 0xffffff;
	rnr = m[REQ_MTU_RNR] & 7;
	/* publishes the fields above to softib_vnode_conn() */
	smp_store_release(&c->node, i + 1);

	softib_vnode_cm_answer(mad, SOFTIB_CM_REP);
	put_unaligned_be32(c->local_id, m + REP_LOCAL_ID);
	put_unaligned_be32(c->remote_id, m + REP_REMOTE_ID);
	put_unaligned_be32((SOFTIB_VNODE_RC_QPN + k) << 8, m + REP_LOCAL_QPN);
	put_unaligned_be32((id & 0xffffff) << 8, m + REP_START_PSN);
	m[REP_RNR_SRQ] = rnr << 5 | 1 << 4;
	put_unaligned_be64(SOFTIB_VNODE_GUID + i, m + REP_CA_GUID);
	put_unaligned_be32(SOFTIB_VNODE_QPN, m + REP_PRIVATE);
	put_unaligned_be32(SOFTIB_IPOIB_CM_BUF, m + REP_PRIVATE + 4);
	softib_vnode_cm_send(req, i, mad);
	atomic64_inc(&req->sdev->vnode_cm_accepted);
}

/* A DREQ: close the connection if it is ours, and answer with a DREP. */
static void softib_vnode_cm_dreq(const struct softib_pkt *req, u32 i, u8 *mad)
{
	u8 *m = mad + IB_MGMT_MAD_HDR;
	u32 local = get_unaligned_be32(m + DREQ_REMOTE_ID);
	u32 remote = get_unaligned_be32(m + DREQ_LOCAL_ID);
	struct softib_vnode_conn *c;

	c = softib_vnode_conn(i, get_unaligned_be32(m + DREQ_REMOTE_QPN) >> 8);
	if (c && c->local_id == local && c->remote_id == remote &&
	    c->lid == req->slid) {
		WRITE_ONCE(c->node, 0);
		atomic64_inc(&req->sdev->vnode_cm_closed);
	}
	/* as ib_cm does, a DREQ for no known connection gets its DREP too */
	softib_vnode_cm_answer(mad, SOFTIB_CM_DREP);
	put_unaligned_be32(local, m + DREP_LOCAL_ID);
	put_unaligned_be32(remote, m + DREP_REMOTE_ID);
	softib_vnode_cm_send(req, i, mad);
}

/* A MAD to node i's QP1: the CM messages of a passive side. */
void softib_vnode_cm_recv(const struct softib_pkt *req, u32 i)
{
	struct ib_mad_hdr *hdr;
	u8 *mad;
	u32 len;

	mad = softib_vnode_copy(req, IB_MGMT_MAD_SIZE, &len);
	if (!mad || len != IB_MGMT_MAD_SIZE)
		goto out_drop;
	hdr = (struct ib_mad_hdr *)mad;
	if (hdr->base_version != IB_MGMT_BASE_VERSION ||
	    hdr->mgmt_class != IB_MGMT_CLASS_CM ||
	    hdr->class_version != SOFTIB_CM_CLASS_VERSION ||
	    hdr->method != IB_MGMT_METHOD_SEND)
		goto out_drop;

	switch (be16_to_cpu(hdr->attr_id)) {
	case SOFTIB_CM_REQ:
		softib_vnode_cm_req(req, i, mad);
		break;
	case SOFTIB_CM_RTU:
		break;
	case SOFTIB_CM_DREQ:
		softib_vnode_cm_dreq(req, i, mad);
		break;
	default:
		goto out_drop;
	}
	kfree(mad);
	return;

out_drop:
	kfree(mad);
	atomic64_inc(&req->sdev->vnode_dropped);
}

/*
 * An RC SEND from the requester's QP to node i's QPN "dqpn" (under the
 * router's RCU read lock). Returns the requester's completion status:
 * success once the node took it (an answer, if any, goes over UD), retry
 * exceeded when no such connection is open (nothing acknowledges).
 */
int softib_vnode_rc_recv(const struct softib_pkt *pkt, u32 i, u32 dqpn)
{
	struct softib_dev *sdev = pkt->sdev;
	struct softib_vnode_conn *c = softib_vnode_conn(i, dqpn);
	struct softib_vnode_to to;
	bool answered = false;
	u8 *buf;
	u32 len;

	if (!c || c->lid != pkt->slid || c->rc_qpn != pkt->src_qpn ||
	    (c->pkey & 0x7fff) != (pkt->pkey & 0x7fff)) {
		atomic64_inc(&sdev->vnode_dropped);
		return IB_WC_RETRY_EXC_ERR;
	}
	if (pkt->wqe->length > SOFTIB_IPOIB_CM_BUF)
		return IB_WC_REM_INV_REQ_ERR;
	atomic64_inc(&sdev->vnode_rc_received);
	to = (struct softib_vnode_to) {
		.lid = c->lid, .qpn = c->ud_qpn,
		.qkey = READ_ONCE(softib_vnode_qkey),
	};
	/* only what fits a datagram can be answered */
	buf = softib_vnode_copy(pkt, SOFTIB_MTU_BYTES, &len);
	if (buf && *(__be16 *)buf == htons(ETH_P_IP))
		answered = softib_vnode_ipv4(pkt, i, &to, buf, len);
	kfree(buf);
	if (!answered)
		atomic64_inc(&sdev->vnode_dropped);
	return IB_WC_SUCCESS;
}
