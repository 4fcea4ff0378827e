// SPDX-License-Identifier: GPL-2.0
/*
 * softib: reliable connected QPs between nodes of a fabric across kernels.
 *
 * Inside one node an RC SEND is one step: the requester's engine puts
 * the message into the responder's receive WQE and completes both sides
 * (fabric.c). To another node it travels as an HCA sends it: SEND FIRST,
 * MIDDLE... LAST packets (ONLY for one) of at most the path MTU, each
 * with the next PSN, the last asking for an acknowledgment. The
 * responder takes a receive WQE at the first packet, fills it packet by
 * packet and answers the last with an ACK, or with a NAK:
 *  - RNR: no receive WQE at the first packet. The requester sends the
 *    message again after the responder's RNR timer, rnr_retry times;
 *  - invalid request: the message does not fit the receive WQE (the
 *    responder's QP fails too), or a packet out of its message;
 *  - remote access or operation error (fault injection, as fabric.c).
 *
 * The link below is lossless and in order (link.c): nothing is resent
 * for loss on the way. What remains is what a lossless IB fabric leaves
 * to the transport: a responder that never answers (its node left, its
 * QP is gone or not connected to us, another partition). The requester
 * then sends the message again after the QP's local ACK timeout (4.096
 * us * 2^timeout; 0 is infinite, IBTA), retry_cnt times, and fails the
 * WQE with IB_WC_RETRY_EXC_ERR: the survivor of a node that vanishes
 * mid-connection fails in bounded time. A PSN before the one the
 * responder expects is a repeat: dropped, and a repeated last packet is
 * acknowledged again, so a message whose ACK was lost completes once.
 *
 * One message is in flight per QP: the engine leaves its WQE at the head
 * of the send queue (SOFTIB_PENDING) until the answer, or the timer,
 * runs the engine again. The packets of a message are queued on the link
 * all together or not at all (a full queue makes the engine try again a
 * jiffy later), and an acknowledgment may use the link's control
 * reserve: a full queue never loses part of a message or its answer,
 * which with in-tree IPoIB's retry_cnt 0 would tear a connection down.
 *
 * Locks: the requester's state is under rcr->lock (BH: its timer); the
 * responder's under the QP's rq.lock, as every delivery in fabric.c.
 * rcr->lock is innermost: modify_qp takes it inside sq.lock and rq.lock,
 * the engine inside sq.lock.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/skbuff.h>
#include <linux/timer.h>
#include <rdma/ib_pack.h>

#include "softib.h"
#include "link.h"

/* The headers of an RC packet, as IBTA 9.2 and 9.3 lay them out. */
struct softib_rc_lrh {
	u8 vl_lver;
	u8 sl_lnh;		/* SL(4) reserved(2) LNH(2) */
	__be16 dlid;
	__be16 len;		/* packet length in 4-byte words (11 bits) */
	__be16 slid;
} __packed;

struct softib_rc_bth {
	u8 opcode;
	u8 flags;		/* SE(1) MigReq(1) PadCnt(2) TVer(4) */
	__be16 pkey;
	__be32 dqpn;		/* reserved(8) destination QP(24) */
	__be32 apsn;		/* AckReq(1) reserved(7) PSN(24) */
} __packed;

#define SOFTIB_BTH_SE		0x80
#define SOFTIB_BTH_ACKREQ	0x80000000

/* AETH syndromes (IBTA 9.7.5.2.2): the top 3 bits say which kind */
#define SOFTIB_AETH_ACK		0x00	/* low 5 bits: credits */
#define SOFTIB_AETH_RNR		0x20	/* low 5 bits: the RNR timer */
#define SOFTIB_AETH_NAK		0x60	/* low 5 bits: the NAK code */
#define SOFTIB_AETH_KIND	0xe0
#define SOFTIB_AETH_CREDITS_INVALID 0x1f
#define SOFTIB_NAK_PSN_SEQ	0
#define SOFTIB_NAK_INV_REQ	1
#define SOFTIB_NAK_REM_ACCESS	2
#define SOFTIB_NAK_REM_OP	3

enum softib_rcr_state {
	SOFTIB_RCR_IDLE,	/* nothing in flight: the head WQE goes next */
	SOFTIB_RCR_WAIT,	/* the head WQE is out, no answer yet */
	SOFTIB_RCR_DONE,	/* answered: "status" completes it */
};

struct softib_rcr {
	struct softib_qp *qp;
	spinlock_t lock;	/* the requester's fields */
	enum softib_rcr_state state;
	int status;		/* DONE: an ib_wc_status, or SOFTIB_RNR */
	u32 rnr_usec;		/* SOFTIB_RNR: the responder's timer */
	u32 first_psn, last_psn;	/* of the message in flight */
	u8 tries;		/* local ACK timeouts of that message */
	u32 gen;		/* +1 on every reset: what was in flight is void */
	struct timer_list timer;
	/* the responder's, under qp->rq.lock */
	bool busy;		/* "rwqe" is taken and being filled */
	u32 off;		/* bytes of the message in it so far */
	u32 msn;		/* messages completed */
	struct softib_rwqe *rwqe;	/* a copy of the WQE, max_sge entries */
};

static u32 softib_psn_add(u32 psn, u32 n)
{
	return (psn + n) & SOFTIB_PSN_MASK;
}

/* how far "psn" is past "from", as a signed 24-bit distance */
static s32 softib_psn_diff(u32 psn, u32 from)
{
	return (s32)((psn - from) << 8) >> 8;
}

/*
 * LRH, GRH when the address vector has one, and BTH of a packet with
 * "tail" bytes after the BTH, into a new frame; NULL if out of memory.
 */
static struct sk_buff *softib_rc_headers(const struct softib_av *av,
					 struct softib_port *sport, u16 pkey,
					 u32 dqpn, u8 opcode, u8 bth_flags,
					 u32 apsn, u32 tail, gfp_t gfp)
{
	u32 hlen = sizeof(struct softib_rc_lrh) +
		   (av->grh ? sizeof(struct ib_grh) : 0) +
		   sizeof(struct softib_rc_bth);
	struct softib_rc_lrh *lrh;
	struct softib_rc_bth *bth;
	struct sk_buff *skb;

	skb = softib_link_alloc(hlen + tail, gfp);
	if (!skb)
		return NULL;
	lrh = skb_put(skb, sizeof(*lrh));
	lrh->vl_lver = 0;
	lrh->sl_lnh = (av->sl << 4) |
		      (av->grh ? IB_LNH_IBA_GLOBAL : IB_LNH_IBA_LOCAL);
	lrh->dlid = cpu_to_be16(av->dlid);
	/* LRH to the ICRC, in words; no padding: the link frames the bytes */
	lrh->len = cpu_to_be16(DIV_ROUND_UP(hlen + tail + 4, 4) & 0x7ff);
	lrh->slid = cpu_to_be16(READ_ONCE(sport->lid));
	if (av->grh) {
		union ib_gid sgid;

		softib_port_gid(sport, &sgid);
		softib_grh_fill(skb_put(skb, sizeof(struct ib_grh)), av,
				sizeof(*bth) + tail + 4 /* ICRC */, &sgid);
	}
	bth = skb_put(skb, sizeof(*bth));
	bth->opcode = opcode;
	bth->flags = bth_flags;
	bth->pkey = cpu_to_be16(pkey);
	bth->dqpn = cpu_to_be32(dqpn & 0xffffff);
	bth->apsn = cpu_to_be32(apsn);
	return skb;
}

/* The opcode of packet "i" of "n" of a SEND, with or without ImmDt. */
static u8 softib_rc_send_opcode(u32 i, u32 n, bool imm)
{
	if (n == 1)
		return imm ? IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE :
			     IB_OPCODE_RC_SEND_ONLY;
	if (i == 0)
		return IB_OPCODE_RC_SEND_FIRST;
	if (i < n - 1)
		return IB_OPCODE_RC_SEND_MIDDLE;
	return imm ? IB_OPCODE_RC_SEND_LAST_WITH_IMMEDIATE :
		     IB_OPCODE_RC_SEND_LAST;
}

/* The packets of one SEND into "list", PSNs from "psn" on. */
static int softib_rcr_build(struct softib_qp *qp, const struct softib_swqe *wqe,
			    u16 pkey, u32 pmtu, u32 n, u32 psn,
			    struct sk_buff_head *list)
{
	struct softib_port *sport = softib_port(qp->sdev, qp->port_num);
	bool imm = wqe->opcode == IB_WR_SEND_WITH_IMM;
	u32 i, off = 0, len;
	struct sk_buff *skb;
	u8 flags;

	for (i = 0; i < n; i++, off += len) {
		bool last = i == n - 1;

		len = min(pmtu, wqe->length - off);
		flags = last && (wqe->send_flags & IB_SEND_SOLICITED) ?
			SOFTIB_BTH_SE : 0;
		skb = softib_rc_headers(&qp->av, sport, pkey, qp->dest_qpn,
					softib_rc_send_opcode(i, n, imm), flags,
					softib_psn_add(psn, i) |
					(last ? SOFTIB_BTH_ACKREQ : 0),
					len + (last && imm ? 4 : 0),
					GFP_KERNEL);
		if (!skb) {
			__skb_queue_purge(list);
			return -ENOMEM;
		}
		if (last && imm)
			skb_put_data(skb, &wqe->imm, sizeof(wqe->imm));
		softib_sg_read(wqe->sge, wqe->num_sge, off, skb_put(skb, len),
			       len);
		__skb_queue_tail(list, skb);
	}
	return 0;
}

/* the local ACK timeout: 4.096 us * 2^timeout (0: none, IBTA) */
static unsigned long softib_rcr_timeout_jiffies(u8 timeout)
{
	return nsecs_to_jiffies64(4096ULL << min_t(u8, timeout, 31));
}

/*
 * Send the head WQE of an RC QP's send queue to node "node", or report
 * what became of it: SOFTIB_PENDING while it is out (the engine returns
 * and is run again by the answer or the timer), then the WQE's
 * completion status, or SOFTIB_RNR with *rnr_usec. Called by the QP's
 * send engine only, one at a time.
 */
int softib_rcr_send(struct softib_qp *qp, const struct softib_swqe *wqe,
		    u16 pkey, u32 node, u32 *rnr_usec)
{
	struct softib_rcr *r = qp->rcr;
	struct softib_dev *sdev = qp->sdev;
	u32 pmtu, n, gen, psn = READ_ONCE(qp->sq_psn);
	struct sk_buff_head list;
	unsigned long flags;
	int status, ret;
	bool live;

	spin_lock_bh(&r->lock);
	switch (r->state) {
	case SOFTIB_RCR_WAIT:
		spin_unlock_bh(&r->lock);
		return SOFTIB_PENDING;
	case SOFTIB_RCR_DONE:
		status = r->status;
		r->state = SOFTIB_RCR_IDLE;
		if (status == SOFTIB_RNR)
			*rnr_usec = r->rnr_usec;
		if (status == IB_WC_SUCCESS) {
			/* the next message starts after this one's PSNs */
			WRITE_ONCE(qp->sq_psn, softib_psn_add(r->last_psn, 1));
		}
		r->tries = status == SOFTIB_RNR ? r->tries : 0;
		spin_unlock_bh(&r->lock);
		return status;
	case SOFTIB_RCR_IDLE:
		break;
	}
	gen = r->gen;
	spin_unlock_bh(&r->lock);

	pmtu = min_t(u32, ib_mtu_enum_to_int(qp->path_mtu ?: SOFTIB_MTU),
		     softib_link_path_mtu(sdev));
	n = max(DIV_ROUND_UP(wqe->length, pmtu), 1U);
	if (n > softib_link_queue_max() / 2) {
		/* more than the link queues at once: see softib.rst */
		softib_link_stat(sdev, SOFTIB_LC_RC_TOO_LONG);
		return IB_WC_LOC_LEN_ERR;
	}
	__skb_queue_head_init(&list);
	if (softib_rcr_build(qp, wqe, pkey, pmtu, n, psn, &list)) {
		/* no memory now: try again shortly, as on a full queue */
		softib_qp_queue(qp, SOFTIB_QPW_SEND, 1);
		return SOFTIB_PENDING;
	}

	/*
	 * In flight from before the first packet leaves (its answer may be
	 * quick), unless a reset came since this WQE was picked: under
	 * sq.lock, which modify_qp holds, the WQE is still the head of a
	 * QP in RTS of the same generation, or it is not sent at all.
	 */
	spin_lock_irqsave(&qp->sq.lock, flags);
	spin_lock(&r->lock);
	live = qp->state == IB_QPS_RTS && r->gen == gen &&
		  softib_wq_entry(&qp->sq, qp->sq.tail) == wqe;
	if (live) {
		r->state = SOFTIB_RCR_WAIT;
		r->first_psn = psn;
		r->last_psn = softib_psn_add(psn, n - 1);
	}
	spin_unlock(&r->lock);
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	if (!live) {
		__skb_queue_purge(&list);
		return SOFTIB_PENDING;
	}

	ret = softib_link_send_ib_list(sdev, node, &list, false);
	__skb_queue_purge(&list);
	spin_lock_bh(&r->lock);
	if (ret == -EAGAIN) {
		/* the link's queue to that node is full: try again soon */
		if (r->state == SOFTIB_RCR_WAIT && r->gen == gen)
			r->state = SOFTIB_RCR_IDLE;
		spin_unlock_bh(&r->lock);
		softib_link_stat(sdev, SOFTIB_LC_RC_BUSY);
		softib_qp_queue(qp, SOFTIB_QPW_SEND, 1);
		return SOFTIB_PENDING;
	}
	/* sent, or the node is gone (-ENOTCONN): the timer fails the WQE */
	if (r->state == SOFTIB_RCR_WAIT && r->gen == gen && qp->timeout)
		mod_timer(&r->timer,
			  jiffies + softib_rcr_timeout_jiffies(qp->timeout));
	spin_unlock_bh(&r->lock);
	softib_link_stat(sdev, SOFTIB_LC_RC_TX_MSGS);
	if (!ret) {
		struct softib_port *sport = softib_port(sdev, qp->port_num);

		atomic64_add(n, &sport->cnt.xmit_packets);
		atomic64_add(wqe->length, &sport->cnt.xmit_bytes);
	}
	return SOFTIB_PENDING;
}

/* The local ACK timeout of the message in flight. */
static void softib_rcr_timeout(struct timer_list *t)
{
	struct softib_rcr *r = from_timer(r, t, timer);
	struct softib_qp *qp = r->qp;
	bool run = false;

	spin_lock(&r->lock);
	if (r->state == SOFTIB_RCR_WAIT) {
		if (r->tries < qp->retry_cnt) {
			/* send the message again, same PSNs */
			r->tries++;
			r->state = SOFTIB_RCR_IDLE;
			softib_link_stat(qp->sdev, SOFTIB_LC_RC_RESENT);
		} else {
			r->state = SOFTIB_RCR_DONE;
			r->status = IB_WC_RETRY_EXC_ERR;
			softib_link_stat(qp->sdev, SOFTIB_LC_RC_RETRY_EXC);
		}
		run = true;
	}
	spin_unlock(&r->lock);
	if (run)
		softib_qp_queue(qp, SOFTIB_QPW_SEND_NOW, 0);
}

/* An ACK or NAK to our requester "qp", for the message in flight. */
static void softib_rcr_answer(struct softib_qp *qp, u32 psn, u8 syndrome)
{
	struct softib_rcr *r = qp->rcr;
	struct softib_dev *sdev = qp->sdev;
	bool run = true;

	spin_lock_bh(&r->lock);
	if (r->state != SOFTIB_RCR_WAIT ||
	    softib_psn_diff(psn, r->first_psn) < 0 ||
	    softib_psn_diff(psn, r->last_psn) > 0) {
		/* late: of a message completed or given up already */
		spin_unlock_bh(&r->lock);
		softib_link_stat(sdev, SOFTIB_LC_RC_DUP);
		return;
	}
	switch (syndrome & SOFTIB_AETH_KIND) {
	case SOFTIB_AETH_ACK:
		softib_link_stat(sdev, SOFTIB_LC_RC_RX_ACKS);
		/* coalesced ACKs are not sent: only the last packet's counts */
		if (psn != r->last_psn) {
			run = false;
			break;
		}
		r->status = IB_WC_SUCCESS;
		break;
	case SOFTIB_AETH_RNR:
		softib_link_stat(sdev, SOFTIB_LC_RC_RX_RNR);
		r->status = SOFTIB_RNR;
		r->rnr_usec = softib_rnr_timer_usec(syndrome & 0x1f);
		break;
	default:
		softib_link_stat(sdev, SOFTIB_LC_RC_RX_NAKS);
		switch (syndrome & 0x1f) {
		case SOFTIB_NAK_PSN_SEQ:
			/* the responder lost its place: send it all again */
			r->state = SOFTIB_RCR_IDLE;
			del_timer(&r->timer);
			spin_unlock_bh(&r->lock);
			softib_qp_queue(qp, SOFTIB_QPW_SEND_NOW, 0);
			return;
		case SOFTIB_NAK_REM_ACCESS:
			r->status = IB_WC_REM_ACCESS_ERR;
			break;
		case SOFTIB_NAK_REM_OP:
			r->status = IB_WC_REM_OP_ERR;
			break;
		default:
			r->status = IB_WC_REM_INV_REQ_ERR;
			break;
		}
		break;
	}
	if (run) {
		r->state = SOFTIB_RCR_DONE;
		del_timer(&r->timer);
	}
	spin_unlock_bh(&r->lock);
	if (run)
		softib_qp_queue(qp, SOFTIB_QPW_SEND_NOW, 0);
}

/*
 * Answer the requester connected to responder "dqp": an ACK or NAK
 * (AETH "syndrome") for "psn". A node that is not up loses it, and the
 * requester's timer runs out, as behind a dead cable.
 */
static void softib_rcr_ack(struct softib_qp *dqp, struct softib_port *dport,
			   u16 pkey, u32 psn, u8 syndrome, u32 msn)
{
	struct softib_dev *sdev = dqp->sdev;
	struct sk_buff_head list;
	struct sk_buff *skb;
	struct softib_av av;
	__be32 aeth;
	u32 node;

	av = dqp->av;
	if (!softib_wire_lid_node(sdev, av.dlid, &node))
		return;
	skb = softib_rc_headers(&av, dport, pkey, READ_ONCE(dqp->dest_qpn),
				IB_OPCODE_RC_ACKNOWLEDGE, 0, psn, sizeof(aeth),
				GFP_ATOMIC);
	if (!skb) {
		softib_link_stat(sdev, SOFTIB_LC_TX_IB_DROPPED);
		return;
	}
	aeth = cpu_to_be32((u32)syndrome << 24 | (msn & SOFTIB_PSN_MASK));
	skb_put_data(skb, &aeth, sizeof(aeth));
	__skb_queue_head_init(&list);
	__skb_queue_tail(&list, skb);
	/*
	 * The node is down, or even the control reserve is full: the
	 * requester's timer resends and a repeated last packet is ACKed
	 * again, so the answer is counted as a lost datagram is.
	 */
	if (softib_link_send_ib_list(sdev, node, &list, true)) {
		__skb_queue_purge(&list);
		softib_link_stat(sdev, SOFTIB_LC_TX_IB_DROPPED);
		return;
	}
	if ((syndrome & SOFTIB_AETH_KIND) == SOFTIB_AETH_RNR)
		softib_link_stat(sdev, SOFTIB_LC_RC_TX_RNR);
	else if ((syndrome & SOFTIB_AETH_KIND) == SOFTIB_AETH_NAK)
		softib_link_stat(sdev, SOFTIB_LC_RC_TX_NAKS);
}

/* what the responder answers a packet with, decided under rq.lock */
struct softib_rcr_reply {
	bool send;
	u8 syndrome;
	u32 psn;
	u32 msn;
};

/* Complete the receive WQE of the message just received, or failed. */
static void softib_rcr_complete(struct softib_qp *dqp,
				struct softib_port *dport, int pkey_index,
				enum ib_wc_status status, const __be32 *imm,
				bool se)
{
	struct softib_rcr *r = dqp->rcr;
	struct ib_wc wc = {
		.wr_id = r->rwqe->wr_id,
		.status = status,
		.opcode = IB_WC_RECV,
		.qp = &dqp->ibqp,
		.byte_len = r->off,
		.src_qp = READ_ONCE(dqp->dest_qpn),
		.slid = dqp->av.dlid,
		.sl = dqp->av.sl,
		.port_num = dport->num,
		.pkey_index = pkey_index,
	};

	lockdep_assert_held(&dqp->rq.lock);
	if (imm) {
		wc.wc_flags |= IB_WC_WITH_IMM;
		wc.ex.imm_data = *imm;
	}
	r->busy = false;
	if (status == IB_WC_SUCCESS) {
		atomic64_inc(&dport->cnt.rcv_packets);
		atomic64_add(r->off, &dport->cnt.rcv_bytes);
	}
	softib_cq_add(dqp->rcq, &wc, se);
}

/*
 * One packet of a SEND to responder "dqp" (its rq.lock held): in order
 * by PSN, into the receive WQE taken at the first packet. Fills "reply".
 */
static void softib_rcr_respond(struct softib_qp *dqp, struct softib_port *dport,
			       int pkey_index, u8 opcode, u8 bth_flags,
			       u32 psn, const __be32 *immdt, const u8 *data,
			       u32 len, struct softib_rcr_reply *reply)
{
	struct softib_rcr *r = dqp->rcr;
	struct softib_dev *sdev = dqp->sdev;
	bool first, last;
	struct ib_sge src;
	s32 d;
	u8 fault;
	u32 space, i;

	lockdep_assert_held(&dqp->rq.lock);
	first = opcode == IB_OPCODE_RC_SEND_FIRST ||
		opcode == IB_OPCODE_RC_SEND_ONLY ||
		opcode == IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE;
	last = opcode != IB_OPCODE_RC_SEND_FIRST &&
	       opcode != IB_OPCODE_RC_SEND_MIDDLE;

	d = softib_psn_diff(psn, dqp->rq_psn);
	if (d < 0) {
		/* a repeat: acknowledge its message's end again */
		softib_link_stat(sdev, SOFTIB_LC_RC_DUP);
		if (last) {
			*reply = (struct softib_rcr_reply) {
				.send = true, .syndrome = SOFTIB_AETH_ACK |
					SOFTIB_AETH_CREDITS_INVALID,
				.psn = psn, .msn = r->msn,
			};
		}
		return;
	}
	if (d > 0) {
		/* the rest of a message NAKed at its first packet (RNR) */
		softib_link_stat(sdev, SOFTIB_LC_RC_OUT_OF_SEQ);
		return;
	}

	if (first != !r->busy) {
		/* a FIRST inside a message, or a MIDDLE/LAST outside one */
		*reply = (struct softib_rcr_reply) {
			.send = true, .psn = psn, .msn = r->msn,
			.syndrome = SOFTIB_AETH_NAK | SOFTIB_NAK_INV_REQ,
		};
		goto fail_qp;
	}
	if (first) {
		fault = READ_ONCE(dqp->resp_fault);
		if (unlikely(fault)) {
			/* fault/rem_inv_req, fault/rem_access (fabric.c) */
			WRITE_ONCE(dqp->resp_fault, 0);
			set_bit(fault == IB_WC_REM_ACCESS_ERR ?
				SOFTIB_EV_ACCESS_ERR : SOFTIB_EV_REQ_ERR,
				&dqp->fail_events);
			*reply = (struct softib_rcr_reply) {
				.send = true, .psn = psn, .msn = r->msn,
				.syndrome = SOFTIB_AETH_NAK |
					(fault == IB_WC_REM_ACCESS_ERR ?
					 SOFTIB_NAK_REM_ACCESS :
					 SOFTIB_NAK_INV_REQ),
			};
			softib_qp_queue(dqp, SOFTIB_QPW_ERR, 0);
			return;
		}
		if (unlikely(READ_ONCE(dqp->rnr_stuck)) ||
		    !softib_rq_take(dqp, dport, r->rwqe)) {
			/* the CM's default timer (code 0) when stuck */
			*reply = (struct softib_rcr_reply) {
				.send = true, .psn = psn, .msn = r->msn,
				.syndrome = SOFTIB_AETH_RNR |
					(READ_ONCE(dqp->rnr_stuck) ? 0 :
					 READ_ONCE(dqp->min_rnr_timer) & 0x1f),
			};
			return;
		}
		r->busy = true;
		r->off = 0;
	}

	for (space = 0, i = 0; i < r->rwqe->num_sge; i++)
		space += r->rwqe->sge[i].length;
	if (len > space - r->off) {
		/* the message does not fit: both QPs fail (fabric.c) */
		atomic64_inc(&dport->cnt.drops[SOFTIB_DROP_TOO_LONG]);
		softib_rcr_complete(dqp, dport, pkey_index, IB_WC_LOC_LEN_ERR,
				    NULL, false);
		*reply = (struct softib_rcr_reply) {
			.send = true, .psn = psn, .msn = r->msn,
			.syndrome = SOFTIB_AETH_NAK | SOFTIB_NAK_INV_REQ,
		};
		goto fail_qp;
	}
	src.addr = (uintptr_t)data;
	src.length = len;
	softib_copy_sg(r->rwqe->sge, r->rwqe->num_sge, r->off, &src, 1, len);
	r->off += len;
	dqp->rq_psn = softib_psn_add(psn, 1);
	if (!last)
		return;
	r->msn = (r->msn + 1) & SOFTIB_PSN_MASK;
	softib_rcr_complete(dqp, dport, pkey_index, IB_WC_SUCCESS, immdt,
			    bth_flags & SOFTIB_BTH_SE);
	softib_link_stat(sdev, SOFTIB_LC_RC_RX_MSGS);
	*reply = (struct softib_rcr_reply) {
		.send = true, .psn = psn, .msn = r->msn,
		.syndrome = SOFTIB_AETH_ACK | SOFTIB_AETH_CREDITS_INVALID,
	};
	return;

fail_qp:
	/* a WQE still taken ("busy") is flushed when the QP enters ERR */
	softib_qp_queue(dqp, SOFTIB_QPW_ERR, 0);
}

/*
 * An RC packet from another node (wire.c): "bth" bytes of LRH and GRH
 * before its BTH. A SEND goes to its responder QP here, an ACK or NAK to
 * its requester. False when it is not an RC packet we take (counted by
 * the link as rx_ib_bad); packets for a QP that cannot take them are
 * dropped and counted here, unanswered, as an HCA drops them.
 */
bool softib_rcr_recv(struct softib_dev *sdev, struct sk_buff *skb,
		     unsigned int bth)
{
	const struct softib_rc_lrh *lrh = (const void *)skb->data;
	const struct softib_rc_bth *b = (const void *)(skb->data + bth);
	struct softib_rcr_reply reply = {};
	struct softib_port *dport;
	struct softib_qp *qp;
	unsigned int hdr = bth + sizeof(*b);
	unsigned long flags;
	u32 psn, len, dqpn;
	int pkey_index;
	u16 slid, pkey;
	bool imm;
	u8 op;

	op = b->opcode;
	if (skb->len < hdr)
		return false;
	slid = be16_to_cpu(lrh->slid);
	pkey = be16_to_cpu(b->pkey);
	dqpn = be32_to_cpu(b->dqpn) & 0xffffff;
	psn = be32_to_cpu(b->apsn) & SOFTIB_PSN_MASK;
	imm = op == IB_OPCODE_RC_SEND_LAST_WITH_IMMEDIATE ||
	      op == IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE;
	if (op == IB_OPCODE_RC_ACKNOWLEDGE) {
		if (skb->len < hdr + sizeof(__be32))
			return false;
	} else if (op > IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE ||
		   skb->len < hdr + (imm ? sizeof(__be32) : 0)) {
		/* RDMA and atomics are not offered (softib.rst) */
		return false;
	}
	len = skb->len - hdr - (imm ? sizeof(__be32) : 0);
	if (len > SOFTIB_MTU_BYTES)
		return false;

	rcu_read_lock();
	qp = xa_load(&sdev->qps, dqpn);
	if (!qp || qp->ibqp.qp_type != IB_QPT_RC || !qp->rcr ||
	    READ_ONCE(qp->av.dlid) != slid) {
		softib_link_stat(sdev, SOFTIB_LC_RC_NO_QP);
		goto out_unlock;
	}
	if (op == IB_OPCODE_RC_ACKNOWLEDGE) {
		softib_rcr_answer(qp, psn, skb->data[hdr]);
		goto out_unlock;
	}

	dport = softib_port(sdev, qp->port_num);
	if (READ_ONCE(dport->state) != IB_PORT_ACTIVE) {
		atomic64_inc(&dport->cnt.drops[SOFTIB_DROP_PORT_DOWN]);
		goto out_unlock;
	}
	pkey_index = softib_pkey_match(dport, pkey, READ_ONCE(qp->pkey_index));
	if (pkey_index < 0) {
		atomic64_inc(&dport->cnt.drops[SOFTIB_DROP_PKEY]);
		goto out_unlock;
	}
	spin_lock_irqsave(&qp->rq.lock, flags);
	if (!softib_qp_can_recv(qp->state)) {
		spin_unlock_irqrestore(&qp->rq.lock, flags);
		atomic64_inc(&dport->cnt.drops[SOFTIB_DROP_NO_QP]);
		goto out_unlock;
	}
	/* ImmDt, when there is one, comes between the BTH and the payload */
	softib_rcr_respond(qp, dport, pkey_index, op, b->flags, psn,
			   imm ? (const __be32 *)(skb->data + hdr) : NULL,
			   skb->data + hdr + (imm ? sizeof(__be32) : 0), len,
			   &reply);
	spin_unlock_irqrestore(&qp->rq.lock, flags);
	if (reply.send)
		softib_rcr_ack(qp, dport, pkey, reply.psn, reply.syndrome,
			       reply.msn);
out_unlock:
	rcu_read_unlock();
	return true;
}

int softib_rcr_create(struct softib_qp *qp, u32 max_recv_sge)
{
	struct softib_rcr *r;

	r = kzalloc(sizeof(*r) + struct_size(r->rwqe, sge, max_recv_sge),
		    GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->rwqe = (struct softib_rwqe *)(r + 1);
	r->qp = qp;
	spin_lock_init(&r->lock);
	timer_setup(&r->timer, softib_rcr_timeout, 0);
	qp->rcr = r;
	return 0;
}

/*
 * The QP goes to RESET, or to ERR ("to_err"); modify_qp and
 * softib_qp_fail() hold its sq.lock and rq.lock. Nothing is in flight
 * any more: a late answer finds the requester idle and is dropped. A
 * receive WQE being filled is flushed into the CQ on ERR and discarded
 * with the rest of the queue on RESET.
 */
void softib_rcr_reset(struct softib_qp *qp, bool to_err)
{
	struct softib_rcr *r = qp->rcr;

	if (!r)
		return;
	lockdep_assert_held(&qp->rq.lock);
	spin_lock(&r->lock);
	r->state = SOFTIB_RCR_IDLE;
	r->tries = 0;
	r->gen++;
	del_timer(&r->timer);
	spin_unlock(&r->lock);
	if (r->busy && to_err) {
		struct ib_wc wc = {
			.wr_id = r->rwqe->wr_id,
			.status = IB_WC_WR_FLUSH_ERR,
			.opcode = IB_WC_RECV,
			.qp = &qp->ibqp,
		};

		softib_cq_add(qp->rcq, &wc, true);
	}
	r->busy = false;
	if (!to_err)
		r->msn = 0;
}

/* destroy_qp, once the QP's engine can no longer run */
void softib_rcr_destroy(struct softib_qp *qp)
{
	if (!qp->rcr)
		return;
	timer_shutdown_sync(&qp->rcr->timer);
	kfree(qp->rcr);
	qp->rcr = NULL;
}
