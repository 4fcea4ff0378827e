// SPDX-License-Identifier: GPL-2.0
/*
 * softib: self tests run through debugfs ("selftest"), with the device's
 * own verbs as a kernel consumer would call them.
 *
 *  purge  Two UD QPs share one CQ; both flush receives into it, one is
 *         destroyed without polling. The CQ must hold exactly the other
 *         QP's completions, in order, and purged_cqes must have grown.
 *  wrid   Posts one wr_id twice to a receive queue. With debug_wrid=1
 *         this must WARN (it checks the check); it fails the suite's
 *         "no kernel warning" rule, so only people run it.
 *  sa_cap Fills the SA's group table with joins up to sa_max_groups: the
 *         next new group is refused with status 0x0100 (no resources) and
 *         counted, a join to an existing group still works, and leaving
 *         a group makes room (its MLID is reused). Cleans up after itself.
 *  ud_to_rc  A UD datagram with Q_Key 0 addressed to an RC QP that has a
 *         receive posted: an RC QP takes no datagrams, so it must be
 *         dropped (drop_no_qp) and no receive completion appear.
 *  qpstate  Posting in each QP state, as on mlx4/mlx5: receives posted
 *         in RESET and sends posted in RESET, INIT and RTR are accepted
 *         and wait; once the sender is in RTS they all complete and the
 *         three datagrams land in those receives, in order. A send
 *         posted in ERR completes flushed.
 *  offload (offloads=1; passes at once without) An LSO send of 3000
 *         bytes, MSS 1000, from two odd gather entries into receive
 *         buffers that split the IP header: 3 datagrams with their own
 *         IPv4 length, ID and checksum, TCP sequence, FIN/PSH on the last
 *         only, CWR on the first only, good TCP checksums, the payload
 *         in order, IB_WC_IP_CSUM_OK, and the sender's buffers untouched.
 *         Then UDP of an odd length: a good checksum is reported OK, one
 *         asked for (IB_SEND_IP_CSUM, garbage in the field) is filled in
 *         and OK, a corrupted datagram arrives unflagged and unchanged.
 *         Last, LSO WRs to refuse: a UDP header, an hlen that is not the
 *         end of the TCP header, hlen + mss over the MTU; each completes
 *         in error (LOC_QP_OP_ERR, LOC_LEN_ERR) and delivers nothing.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/ip.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/checksum.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_sa.h>

#include "softib.h"

#define SOFTIB_ST_QKEY	0x12345678

/* a QP in RESET taking "send_wr" sends and 4 receives */
static struct ib_qp *softib_st_reset_qp(struct ib_pd *pd, struct ib_cq *cq,
					enum ib_qp_type type, u32 send_wr)
{
	struct ib_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {
			.max_send_wr = send_wr,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = type,
	};

	return ib_create_qp(pd, &init);
}

static struct ib_qp *softib_st_qp(struct ib_pd *pd, struct ib_cq *cq)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qkey = SOFTIB_ST_QKEY,
	};
	struct ib_qp *qp;
	int ret;

	qp = softib_st_reset_qp(pd, cq, IB_QPT_UD, 1);
	if (IS_ERR(qp))
		return qp;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_QKEY);
	if (ret) {
		ib_destroy_qp(qp);
		return ERR_PTR(ret);
	}
	return qp;
}

/* an address handle to LID 1 (port 1) */
static struct ib_ah *softib_st_ah(struct ib_pd *pd)
{
	struct rdma_ah_attr ah_attr = { .type = RDMA_AH_ATTR_TYPE_IB };

	rdma_ah_set_dlid(&ah_attr, 1);
	rdma_ah_set_port_num(&ah_attr, 1);
	return rdma_create_ah(pd, &ah_attr, RDMA_CREATE_AH_SLEEPABLE);
}

static int softib_st_recv(struct ib_qp *qp, u64 wr_id)
{
	const struct ib_recv_wr wr = { .wr_id = wr_id };

	return ib_post_recv(qp, &wr, NULL);
}

static int softib_st_to_err(struct ib_qp *qp)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	return ib_modify_qp(qp, &attr, IB_QP_STATE);
}

/*
 * CQ after the steps below: A0 A1 A2 B0 B1 A3 B2 (A = qp[0], B = qp[1]);
 * destroying A must leave B0 B1 B2.
 */
static int softib_st_purge(struct softib_dev *sdev, struct ib_pd *pd,
			   struct ib_cq *cq)
{
	struct ib_qp *qp[2] = {};
	struct ib_wc wc[8];
	s64 before;
	int ret, n, i;

	for (i = 0; i < 2; i++) {
		qp[i] = softib_st_qp(pd, cq);
		if (IS_ERR(qp[i])) {
			ret = PTR_ERR(qp[i]);
			qp[i] = NULL;
			goto out;
		}
	}
	ret = 0;
	for (i = 0; i < 3 && !ret; i++)
		ret = softib_st_recv(qp[0], 0xa0 + i);
	for (i = 0; i < 2 && !ret; i++)
		ret = softib_st_recv(qp[1], 0xb0 + i);
	ret = ret ?: softib_st_to_err(qp[0]);
	ret = ret ?: softib_st_to_err(qp[1]);
	/* a receive posted in ERR completes at once, flushed */
	ret = ret ?: softib_st_recv(qp[0], 0xa3);
	ret = ret ?: softib_st_recv(qp[1], 0xb2);
	if (ret)
		goto out;

	before = atomic64_read(&sdev->purged_cqes);
	ib_destroy_qp(qp[0]);
	qp[0] = NULL;
	n = ib_poll_cq(cq, ARRAY_SIZE(wc), wc);
	ret = -EIO;
	if (n != 3) {
		pr_err("selftest purge: %d completions left, expected 3\n", n);
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (wc[i].qp != qp[1] || wc[i].wr_id != 0xb0 + i ||
		    wc[i].status != IB_WC_WR_FLUSH_ERR) {
			pr_err("selftest purge: completion %d is wr_id 0x%llx status %d of %s QP\n",
			       i, wc[i].wr_id, wc[i].status,
			       wc[i].qp == qp[1] ? "the remaining" : "another");
			goto out;
		}
	}
	if (atomic64_read(&sdev->purged_cqes) - before != 4) {
		pr_err("selftest purge: purged_cqes grew by %lld, expected 4\n",
		       atomic64_read(&sdev->purged_cqes) - before);
		goto out;
	}
	ret = 0;
out:
	for (i = 0; i < 2; i++)
		if (qp[i])
			ib_destroy_qp(qp[i]);
	return ret;
}

/* Deliberately wrong: the same wr_id posted twice to one receive queue. */
static int softib_st_wrid(struct softib_dev *sdev, struct ib_pd *pd,
			  struct ib_cq *cq)
{
	struct ib_qp *qp = softib_st_qp(pd, cq);
	s64 before = atomic64_read(&sdev->wrid_errors);
	int ret;

	if (IS_ERR(qp))
		return PTR_ERR(qp);
	ret = softib_st_recv(qp, 0x77);
	ret = ret ?: softib_st_recv(qp, 0x77);
	ib_destroy_qp(qp);
	if (!ret && softib_debug_wrid &&
	    atomic64_read(&sdev->wrid_errors) == before) {
		pr_err("selftest wrid: a duplicate wr_id went unnoticed\n");
		ret = -EIO;
	}
	return ret;
}

/* An RC QP in RTR, "connected" to nobody, with one receive posted. */
static struct ib_qp *softib_st_rc_qp(struct ib_pd *pd, struct ib_cq *cq,
				     struct ib_sge *sge)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
	};
	struct ib_recv_wr wr = {
		.wr_id = 0xc0,
		.sg_list = sge,
		.num_sge = 1,
	};
	struct ib_qp *qp;
	int ret;

	qp = softib_st_reset_qp(pd, cq, IB_QPT_RC, 1);
	if (IS_ERR(qp))
		return qp;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		goto err_destroy;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_4096;
	attr.dest_qp_num = 0xffffff;
	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_dlid(&attr.ah_attr, 2);
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	attr.min_rnr_timer = 1;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	ret = ret ?: ib_post_recv(qp, &wr, NULL);
	if (ret)
		goto err_destroy;
	return qp;

err_destroy:
	ib_destroy_qp(qp);
	return ERR_PTR(ret);
}

static int softib_st_to_rts(struct ib_qp *qp)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RTR };
	int ret;

	ret = ib_modify_qp(qp, &attr, IB_QP_STATE);
	attr.qp_state = IB_QPS_RTS;
	return ret ?: ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
}

/*
 * Poll for up to "ms" milliseconds; count send and receive completions
 * (from zero) and keep the last send's in *last.
 */
static void softib_st_drain_one(struct ib_cq *cq, unsigned int ms,
				struct ib_wc *last, int *sends, int *recvs)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);
	struct ib_wc wc;

	*sends = 0;
	*recvs = 0;
	do {
		while (ib_poll_cq(cq, 1, &wc) == 1) {
			if (wc.opcode & IB_WC_RECV) {
				(*recvs)++;
			} else {
				(*sends)++;
				*last = wc;
			}
		}
		usleep_range(500, 1000);
	} while (time_before(jiffies, end));
}

static void softib_st_drain(struct ib_cq *cq, unsigned int ms, int *sends,
			    int *recvs)
{
	struct ib_wc last;

	softib_st_drain_one(cq, ms, &last, sends, recvs);
}

static int softib_st_ud_to_rc(struct softib_dev *sdev, struct ib_pd *pd,
			      struct ib_cq *cq)
{
	atomic64_t *no_qp = &softib_port(sdev, 1)->cnt.drops[SOFTIB_DROP_NO_QP];
	struct ib_qp *rc = NULL, *ud = NULL;
	struct ib_sge rsge, ssge;
	struct ib_ud_wr wr = {};
	struct ib_ah *ah = NULL;
	int sends, recvs, ret;
	s64 before;
	void *buf;

	buf = kzalloc(2 * 256, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	rsge = (struct ib_sge) {
		.addr = (uintptr_t)buf,
		.length = 256,
		.lkey = pd->local_dma_lkey,
	};
	ssge = (struct ib_sge) {
		.addr = (uintptr_t)buf + 256,
		.length = 64,
		.lkey = pd->local_dma_lkey,
	};
	rc = softib_st_rc_qp(pd, cq, &rsge);
	if (IS_ERR(rc)) {
		ret = PTR_ERR(rc);
		rc = NULL;
		goto out;
	}
	ud = softib_st_qp(pd, cq);
	if (IS_ERR(ud)) {
		ret = PTR_ERR(ud);
		ud = NULL;
		goto out;
	}
	ret = softib_st_to_rts(ud);
	if (ret)
		goto out;
	ah = softib_st_ah(pd);
	if (IS_ERR(ah)) {
		ret = PTR_ERR(ah);
		ah = NULL;
		goto out;
	}

	before = atomic64_read(no_qp);
	wr.wr.wr_id = 0xd0;
	wr.wr.sg_list = &ssge;
	wr.wr.num_sge = 1;
	wr.wr.opcode = IB_WR_SEND;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.ah = ah;
	wr.remote_qpn = rc->qp_num;
	wr.remote_qkey = 0;	/* what an RC QP's (unset) Q_Key reads as */
	ret = ib_post_send(ud, &wr.wr, NULL);
	if (ret)
		goto out;
	softib_st_drain(cq, 100, &sends, &recvs);
	ret = -EIO;
	if (sends != 1) {
		pr_err("selftest ud_to_rc: %d send completions, expected 1\n",
		       sends);
		goto out;
	}
	if (recvs) {
		pr_err("selftest ud_to_rc: the RC QP received a UD datagram\n");
		goto out;
	}
	if (atomic64_read(no_qp) - before != 1) {
		pr_err("selftest ud_to_rc: drop_no_qp grew by %lld, expected 1\n",
		       atomic64_read(no_qp) - before);
		goto out;
	}
	ret = 0;
out:
	if (ah)
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	if (ud)
		ib_destroy_qp(ud);
	if (rc)
		ib_destroy_qp(rc);
	kfree(buf);
	return ret;
}

/* ---- qpstate: WRs posted in each state ---- */

static int softib_st_to_state(struct ib_qp *qp, enum ib_qp_state state)
{
	struct ib_qp_attr attr = {
		.qp_state = state,
		.pkey_index = 0,
		.port_num = 1,
		.qkey = SOFTIB_ST_QKEY,
	};
	int mask = IB_QP_STATE;

	if (state == IB_QPS_INIT)
		mask |= IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY;
	else if (state == IB_QPS_RTS)
		mask |= IB_QP_SQ_PSN;
	return ib_modify_qp(qp, &attr, mask);
}

/*
 * Poll up to "ms" milliseconds for "want" completions; each must have
 * the next wr_id of "ids" and "status". Returns 0 or -EIO (logged).
 */
static int softib_st_expect(struct ib_cq *cq, unsigned int ms, const u64 *ids,
			    int want, enum ib_wc_status status,
			    const char *what)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);
	struct ib_wc wc;
	int n = 0;

	do {
		while (ib_poll_cq(cq, 1, &wc) == 1) {
			if (n >= want || wc.wr_id != ids[n] ||
			    wc.status != status) {
				pr_err("selftest qpstate: %s: completion %d: wr_id 0x%llx status %d, expected %s\n",
				       what, n, wc.wr_id, wc.status,
				       n >= want ? "none" : "another");
				return -EIO;
			}
			n++;
		}
		usleep_range(500, 1000);
	} while (time_before(jiffies, end));
	if (n == want)
		return 0;
	pr_err("selftest qpstate: %s: %d completions, expected %d\n", what, n,
	       want);
	return -EIO;
}

static int softib_st_qpstate(struct softib_dev *sdev, struct ib_pd *pd,
			     struct ib_cq *cq)
{
	static const u64 none[1], flushed[] = { 0xf3 };
	static const u64 sent[] = { 0xe0, 0xf0, 0xe1, 0xf1, 0xe2, 0xf2 };
	struct ib_qp *tx = NULL, *rx = NULL;
	struct ib_sge rsge[3], ssge;
	struct ib_ah *ah = NULL;
	struct ib_ud_wr wr = {};
	struct ib_recv_wr rwr = { .num_sge = 1 };
	u8 *buf;
	int ret, i;

	buf = kzalloc(4 * 256, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < 3; i++)
		rsge[i] = (struct ib_sge) {
			.addr = (uintptr_t)buf + i * 256,
			.length = 256,
			.lkey = pd->local_dma_lkey,
		};
	ssge = (struct ib_sge) {
		.addr = (uintptr_t)buf + 3 * 256,
		.length = 64,
		.lkey = pd->local_dma_lkey,
	};
	rx = softib_st_reset_qp(pd, cq, IB_QPT_UD, 4);
	tx = IS_ERR(rx) ? NULL : softib_st_reset_qp(pd, cq, IB_QPT_UD, 4);
	if (IS_ERR_OR_NULL(rx) || IS_ERR(tx)) {
		ret = IS_ERR(rx) ? PTR_ERR(rx) : PTR_ERR(tx);
		goto out_null;
	}
	ah = softib_st_ah(pd);
	if (IS_ERR(ah)) {
		ret = PTR_ERR(ah);
		ah = NULL;
		goto out;
	}

	/* three receives in RESET, then the receiver to RTS */
	for (i = 0, ret = 0; i < 3 && !ret; i++) {
		rwr.wr_id = 0xe0 + i;
		rwr.sg_list = &rsge[i];
		ret = ib_post_recv(rx, &rwr, NULL);
	}
	if (ret) {
		pr_err("selftest qpstate: receive posted in RESET: %d\n", ret);
		goto out;
	}
	ret = softib_st_to_state(rx, IB_QPS_INIT);
	ret = ret ?: softib_st_to_rts(rx);
	if (ret)
		goto out;

	/* a send posted in RESET, INIT and RTR each: they wait */
	wr.wr.sg_list = &ssge;
	wr.wr.num_sge = 1;
	wr.wr.opcode = IB_WR_SEND;
	wr.ah = ah;
	wr.remote_qpn = rx->qp_num;
	wr.remote_qkey = SOFTIB_ST_QKEY;
	for (i = 0; i < 3; i++) {
		static const enum ib_qp_state next[] = { IB_QPS_INIT,
							  IB_QPS_RTR };

		buf[3 * 256] = i;
		wr.wr.wr_id = 0xf0 + i;
		ret = ib_post_send(tx, &wr.wr, NULL);
		if (ret) {
			pr_err("selftest qpstate: send posted in state %d: %d\n",
			       i, ret);
			goto out;
		}
		ret = i < 2 ? softib_st_to_state(tx, next[i]) : 0;
		if (ret)
			goto out;
	}
	ret = softib_st_expect(cq, 50, none, 0, IB_WC_SUCCESS,
			       "below RTS");
	if (ret)
		goto out;

	/* RTS: the three sends go, in order, into the three receives */
	ret = softib_st_to_state(tx, IB_QPS_RTS) ?:
	      softib_st_expect(cq, 200, sent, ARRAY_SIZE(sent),
			       IB_WC_SUCCESS, "at RTS");
	if (ret)
		goto out;

	/* ERR: a send posted now completes flushed */
	ret = softib_st_to_err(tx);
	wr.wr.wr_id = 0xf3;
	ret = ret ?: ib_post_send(tx, &wr.wr, NULL);
	ret = ret ?: softib_st_expect(cq, 50, flushed, 1, IB_WC_WR_FLUSH_ERR,
				      "in ERR");
out:
	if (ah)
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	ib_destroy_qp(tx);
	ib_destroy_qp(rx);
	kfree(buf);
	return ret;
out_null:
	if (!IS_ERR_OR_NULL(rx))
		ib_destroy_qp(rx);
	kfree(buf);
	return ret;
}

/* ---- offload: LSO and checksums (offload.c) ---- */

#define SOFTIB_ST_NRECV		8
#define SOFTIB_ST_HEAD		54	/* GRH 40 + 14: splits the IP header */
#define SOFTIB_ST_TAIL		4096
#define SOFTIB_ST_PAYLOAD	3000
#define SOFTIB_ST_MSS		1000

struct softib_st_off {
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *tx, *rx;
	struct ib_ah *ah;
	u8 *rbuf;		/* SOFTIB_ST_NRECV x (HEAD + TAIL) */
	u8 *frame;		/* a received frame, linear, without the GRH */
	u8 *pay;		/* the sender's payload */
	u8 *hdr;		/* the sender's header */
};

static int softib_st_off_post_recvs(struct softib_st_off *t)
{
	struct ib_sge sge[2];
	struct ib_recv_wr wr = { .sg_list = sge, .num_sge = 2 };
	int i, ret = 0;

	for (i = 0; i < SOFTIB_ST_NRECV && !ret; i++) {
		u8 *b = t->rbuf + i * (SOFTIB_ST_HEAD + SOFTIB_ST_TAIL);

		sge[0] = (struct ib_sge) { (uintptr_t)b, SOFTIB_ST_HEAD,
					   t->pd->local_dma_lkey };
		sge[1] = (struct ib_sge) { (uintptr_t)b + SOFTIB_ST_HEAD,
					   SOFTIB_ST_TAIL,
					   t->pd->local_dma_lkey };
		wr.wr_id = i;
		ret = ib_post_recv(t->rx, &wr, NULL);
	}
	return ret;
}

/* Wait for "want" receives; copy each frame out; returns how many came. */
static int softib_st_off_recv(struct softib_st_off *t, struct ib_wc *wc,
			      int want)
{
	unsigned long end = jiffies + msecs_to_jiffies(500);
	struct ib_wc w;
	int n = 0;

	while (n < want && time_before(jiffies, end)) {
		if (ib_poll_cq(t->cq, 1, &w) != 1) {
			usleep_range(500, 1000);
			continue;
		}
		if (!(w.opcode & IB_WC_RECV))
			continue;
		wc[n++] = w;
	}
	return n;
}

/* The frame (without GRH space) of receive completion "wc", linear. */
static u32 softib_st_off_frame(struct softib_st_off *t, const struct ib_wc *wc)
{
	u8 *b = t->rbuf + wc->wr_id * (SOFTIB_ST_HEAD + SOFTIB_ST_TAIL);
	u32 len = wc->byte_len - IB_GRH_BYTES;

	memcpy(t->frame, b + IB_GRH_BYTES, SOFTIB_ST_HEAD - IB_GRH_BYTES);
	memcpy(t->frame + SOFTIB_ST_HEAD - IB_GRH_BYTES, b + SOFTIB_ST_HEAD,
	       len - (SOFTIB_ST_HEAD - IB_GRH_BYTES));
	return len;
}

static bool softib_st_l4_ok(const u8 *frame, u8 proto)
{
	const struct iphdr *ip = (const void *)(frame + 4);
	u32 l4len = ntohs(ip->tot_len) - ip->ihl * 4;
	const u8 *l4 = (const u8 *)ip + ip->ihl * 4;

	return !ip_fast_csum(ip, ip->ihl) &&
	       !csum_tcpudp_magic(ip->saddr, ip->daddr, l4len, proto,
				  csum_partial(l4, l4len, 0));
}

static void softib_st_ipv4(u8 *f, u8 proto, u16 l4len)
{
	struct iphdr *ip = (void *)(f + 4);

	f[0] = 0x08;	/* IPoIB header: ETH_P_IP, reserved */
	f[1] = 0x00;
	f[2] = 0;
	f[3] = 0;
	memset(ip, 0, sizeof(*ip));
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(sizeof(*ip) + l4len);
	ip->id = htons(0x1234);
	ip->ttl = 64;
	ip->protocol = proto;
	ip->saddr = htonl(0x0a000001);
	ip->daddr = htonl(0x0a000002);
	ip->check = ip_fast_csum(ip, ip->ihl);
}

/* One LSO send of SOFTIB_ST_PAYLOAD bytes in two odd gather entries. */
static int softib_st_off_lso(struct softib_st_off *t)
{
	int nseg = DIV_ROUND_UP(SOFTIB_ST_PAYLOAD, SOFTIB_ST_MSS);
	struct ib_wc wc[SOFTIB_ST_NRECV];
	u8 *keep_hdr = t->frame + 8192, *keep_pay = keep_hdr + 64;
	struct tcphdr *th = (void *)(t->hdr + 24);
	struct ib_sge sge[2] = {
		{ (uintptr_t)t->pay, 1001, t->pd->local_dma_lkey },
		{ (uintptr_t)t->pay + 1001, SOFTIB_ST_PAYLOAD - 1001,
		  t->pd->local_dma_lkey },
	};
	struct ib_ud_wr wr = {
		.wr = {
			.wr_id = 0xe0, .sg_list = sge, .num_sge = 2,
			.opcode = IB_WR_LSO,
			.send_flags = IB_SEND_SIGNALED | IB_SEND_IP_CSUM,
		},
		.ah = t->ah, .remote_qpn = t->rx->qp_num,
		.remote_qkey = SOFTIB_ST_QKEY,
		.header = t->hdr, .hlen = 44, .mss = SOFTIB_ST_MSS,
	};
	int i, n, ret;

	softib_st_ipv4(t->hdr, IPPROTO_TCP, 20 + SOFTIB_ST_PAYLOAD);
	memset(th, 0, sizeof(*th));
	th->source = htons(5001);
	th->dest = htons(5002);
	th->seq = htonl(1000);
	th->doff = 5;
	th->ack = 1;
	th->psh = 1;
	th->fin = 1;
	th->cwr = 1;
	th->check = (__force __sum16)htons(0xdead);	/* the stack's partial sum: replaced */
	for (i = 0; i < SOFTIB_ST_PAYLOAD; i++)
		t->pay[i] = i * 7 + 3;
	memcpy(keep_hdr, t->hdr, 44);
	memcpy(keep_pay, t->pay, SOFTIB_ST_PAYLOAD);

	ret = ib_post_send(t->tx, &wr.wr, NULL);
	if (ret)
		return ret;
	n = softib_st_off_recv(t, wc, nseg);
	if (n != nseg) {
		pr_err("selftest offload: LSO of %d bytes, MSS %d: %d datagrams, expected %d\n",
		       SOFTIB_ST_PAYLOAD, SOFTIB_ST_MSS, n, nseg);
		return -EIO;
	}
	for (i = 0; i < n; i++) {
		u32 len = softib_st_off_frame(t, &wc[i]);
		u32 plen = min(SOFTIB_ST_PAYLOAD - i * SOFTIB_ST_MSS,
			       SOFTIB_ST_MSS);
		struct iphdr *ip = (void *)(t->frame + 4);
		struct tcphdr *rth = (void *)(t->frame + 24);
		bool last = i == n - 1;

		if (wc[i].status != IB_WC_SUCCESS || len != 44 + plen ||
		    ntohs(ip->tot_len) != 40 + plen ||
		    ntohs(ip->id) != 0x1234 + i ||
		    ntohl(rth->seq) != 1000 + i * SOFTIB_ST_MSS ||
		    rth->fin != last || rth->psh != last || rth->cwr != !i ||
		    !rth->ack || memcmp(t->frame + 44,
					keep_pay + i * SOFTIB_ST_MSS, plen)) {
			pr_err("selftest offload: LSO segment %d: status %d, %u bytes, IP length %u id 0x%x, seq %u, fin %d psh %d cwr %d, payload %s\n",
			       i, wc[i].status, len, ntohs(ip->tot_len),
			       ntohs(ip->id), ntohl(rth->seq), rth->fin,
			       rth->psh, rth->cwr,
			       memcmp(t->frame + 44, keep_pay + i * SOFTIB_ST_MSS,
				      plen) ? "differs" : "same");
			return -EIO;
		}
		if (!softib_st_l4_ok(t->frame, IPPROTO_TCP) ||
		    !(wc[i].wc_flags & IB_WC_IP_CSUM_OK)) {
			pr_err("selftest offload: LSO segment %d: checksums %s, IP_CSUM_OK %s\n",
			       i, softib_st_l4_ok(t->frame, IPPROTO_TCP) ?
			       "good" : "bad",
			       wc[i].wc_flags & IB_WC_IP_CSUM_OK ? "set" : "not set");
			return -EIO;
		}
	}
	if (memcmp(keep_hdr, t->hdr, 44) ||
	    memcmp(keep_pay, t->pay, SOFTIB_ST_PAYLOAD)) {
		pr_err("selftest offload: LSO wrote into the sender's buffers\n");
		return -EIO;
	}
	return 0;
}

/*
 * LSO WRs softib must refuse (the in-tree driver never posts them, a
 * broken consumer might): a header that is not IPoIB + IPv4 + TCP exactly
 * fails with LOC_QP_OP_ERR, segments larger than the MTU with
 * LOC_LEN_ERR; in each case nothing reaches the fabric.
 */
static int softib_st_off_lso_bad(struct softib_st_off *t)
{
	static const struct {
		const char *what;
		u8 proto;
		u16 hlen, mss;
		enum ib_wc_status want;
	} bad[] = {
		{ "a UDP header", IPPROTO_UDP, 32, 1000, IB_WC_LOC_QP_OP_ERR },
		{ "hlen past the TCP header", IPPROTO_TCP, 48, 1000,
		  IB_WC_LOC_QP_OP_ERR },
		{ "hlen inside the TCP header", IPPROTO_TCP, 40, 1000,
		  IB_WC_LOC_QP_OP_ERR },
		{ "hlen + mss over the MTU", IPPROTO_TCP, 44,
		  SOFTIB_MTU_BYTES - 43, IB_WC_LOC_LEN_ERR },
	};
	struct ib_sge sge = {
		(uintptr_t)t->pay, SOFTIB_ST_PAYLOAD, t->pd->local_dma_lkey,
	};
	struct ib_ud_wr wr = {
		.wr = {
			.sg_list = &sge, .num_sge = 1, .opcode = IB_WR_LSO,
			.send_flags = IB_SEND_SIGNALED,
		},
		.ah = t->ah, .remote_qpn = t->rx->qp_num,
		.remote_qkey = SOFTIB_ST_QKEY, .header = t->hdr,
	};
	int sends, recvs, i, ret;
	struct ib_wc wc;

	/* the UDP cases' send completions may still be coming */
	softib_st_drain_one(t->cq, 100, &wc, &sends, &recvs);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		softib_st_ipv4(t->hdr, bad[i].proto, 20 + SOFTIB_ST_PAYLOAD);
		((struct tcphdr *)(t->hdr + 24))->doff = 5;
		wr.wr.wr_id = 0xf0 + i;
		wr.hlen = bad[i].hlen;
		wr.mss = bad[i].mss;
		ret = ib_post_send(t->tx, &wr.wr, NULL);
		if (ret)
			return ret;
		sends = 0;
		recvs = 0;
		memset(&wc, 0, sizeof(wc));
		softib_st_drain_one(t->cq, 100, &wc, &sends, &recvs);
		if (sends != 1 || wc.status != bad[i].want || recvs) {
			pr_err("selftest offload: LSO with %s: %d send completions (status %d, expected %d), %d datagrams delivered\n",
			       bad[i].what, sends, wc.status, bad[i].want,
			       recvs);
			return -EIO;
		}
	}
	return 0;
}

/*
 * UDP datagrams: "fill" asks softib for the checksum (garbage in the
 * field); otherwise the sender's checksum is checked, "corrupt" spoils it.
 */
static int softib_st_off_udp(struct softib_st_off *t, bool fill, bool corrupt)
{
	struct udphdr *uh = (void *)(t->hdr + 24);
	struct ib_sge sge = { (uintptr_t)t->hdr, 32 + 101,
			      t->pd->local_dma_lkey };
	struct ib_ud_wr wr = {
		.wr = {
			.wr_id = 0xe1, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_SEND,
			.send_flags = IB_SEND_SIGNALED |
				      (fill ? IB_SEND_IP_CSUM : 0),
		},
		.ah = t->ah, .remote_qpn = t->rx->qp_num,
		.remote_qkey = SOFTIB_ST_QKEY,
	};
	struct ib_wc wc;
	bool want_ok = !corrupt;
	int i, ret;

	softib_st_ipv4(t->hdr, IPPROTO_UDP, 8 + 101);
	uh->source = htons(7);
	uh->dest = htons(9);
	uh->len = htons(8 + 101);
	for (i = 0; i < 101; i++)
		t->hdr[32 + i] = i ^ 0x5a;	/* odd length */
	uh->check = 0;
	uh->check = csum_tcpudp_magic(htonl(0x0a000001), htonl(0x0a000002),
				      8 + 101, IPPROTO_UDP,
				      csum_partial(uh, 8 + 101, 0));
	if (fill)
		uh->check = (__force __sum16)htons(0xbeef);
	if (corrupt)
		t->hdr[40] ^= 0x01;
	ret = ib_post_send(t->tx, &wr.wr, NULL);
	if (ret)
		return ret;
	if (softib_st_off_recv(t, &wc, 1) != 1) {
		pr_err("selftest offload: UDP (fill %d, corrupt %d): nothing received\n",
		       fill, corrupt);
		return -EIO;
	}
	softib_st_off_frame(t, &wc);
	if (!!(wc.wc_flags & IB_WC_IP_CSUM_OK) != want_ok ||
	    softib_st_l4_ok(t->frame, IPPROTO_UDP) != want_ok) {
		pr_err("selftest offload: UDP (fill %d, corrupt %d): IP_CSUM_OK %s, checksum %s\n",
		       fill, corrupt,
		       wc.wc_flags & IB_WC_IP_CSUM_OK ? "set" : "not set",
		       softib_st_l4_ok(t->frame, IPPROTO_UDP) ? "good" : "bad");
		return -EIO;
	}
	return 0;
}

static int softib_st_offload(struct softib_dev *sdev, struct ib_pd *pd,
			     struct ib_cq *cq)
{
	struct ib_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = SOFTIB_ST_NRECV,
			.max_send_sge = 2,
			.max_recv_sge = 2,
		},
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_UD,
		.create_flags = IB_QP_CREATE_IPOIB_UD_LSO,
	};
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.port_num = 1,
		.qkey = SOFTIB_ST_QKEY,
	};
	struct softib_st_off t = { .pd = pd, .cq = cq };
	int ret, i;

	if (!softib_offloads)
		return 0;	/* nothing offered: nothing to test */
	t.rbuf = kzalloc(SOFTIB_ST_NRECV * (SOFTIB_ST_HEAD + SOFTIB_ST_TAIL),
			 GFP_KERNEL);
	t.frame = kzalloc(8192 + 64 + SOFTIB_ST_PAYLOAD, GFP_KERNEL);
	t.pay = kzalloc(SOFTIB_ST_PAYLOAD, GFP_KERNEL);
	t.hdr = kzalloc(256, GFP_KERNEL);
	ret = -ENOMEM;
	if (!t.rbuf || !t.frame || !t.pay || !t.hdr)
		goto out;
	for (i = 0; i < 2; i++) {
		struct ib_qp *qp = ib_create_qp(pd, &init);

		if (IS_ERR(qp)) {
			ret = PTR_ERR(qp);
			goto out;
		}
		if (i)
			t.rx = qp;
		else
			t.tx = qp;
		init.create_flags = 0;
		ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
				   IB_QP_PORT | IB_QP_QKEY);
		ret = ret ?: softib_st_to_rts(qp);
		if (ret)
			goto out;
	}
	t.ah = softib_st_ah(pd);
	if (IS_ERR(t.ah)) {
		ret = PTR_ERR(t.ah);
		t.ah = NULL;
		goto out;
	}
	ret = softib_st_off_post_recvs(&t);
	ret = ret ?: softib_st_off_lso(&t);
	ret = ret ?: softib_st_off_udp(&t, false, false);
	ret = ret ?: softib_st_off_udp(&t, true, false);
	ret = ret ?: softib_st_off_udp(&t, false, true);
	ret = ret ?: softib_st_off_lso_bad(&t);
out:
	if (t.ah)
		rdma_destroy_ah(t.ah, RDMA_DESTROY_AH_SLEEPABLE);
	if (t.rx)
		ib_destroy_qp(t.rx);
	if (t.tx)
		ib_destroy_qp(t.tx);
	kfree(t.hdr);
	kfree(t.pay);
	kfree(t.frame);
	kfree(t.rbuf);
	return ret;
}

#define SOFTIB_ST_SA_NO_RESOURCES	0x0100
#define SOFTIB_ST_SA_REQ_INVALID	0x0200

static void softib_st_mgid(union ib_gid *mgid, u32 i)
{
	/* an IPv4 IPoIB multicast MGID of P_Key 0xffff, scope 2 */
	*mgid = (union ib_gid) { .raw = {
		0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0,
		0xef, (u8)(i >> 16), (u8)(i >> 8), (u8)i } };
}

/* port "from" joins or leaves group "i" for port "member" */
static int softib_st_sa_req(struct softib_dev *sdev, u32 from, u32 member,
			    u8 method, u32 i, u16 *mlid)
{
	union ib_gid mgid;
	u16 status;

	softib_st_mgid(&mgid, i);
	*mlid = softib_sa_mcmember_req(sdev, softib_port(sdev, from),
				       softib_port(sdev, member), method,
				       &mgid, 1, &status);
	return status;
}

static int softib_st_sa_join(struct softib_dev *sdev, u32 port, u8 method,
			     u32 i, u16 *mlid)
{
	return softib_st_sa_req(sdev, port, port, method, i, mlid);
}

static int softib_st_sa_cap(struct softib_dev *sdev)
{
	unsigned long start = jiffies;
	u32 base, cap, n = 0, i;
	int ret = -EIO;
	s64 refused;
	u16 st, mlid, mlid0 = 0;

	mutex_lock(&sdev->sa_lock);
	base = sdev->sa_groups;
	mutex_unlock(&sdev->sa_lock);
	cap = sdev->sa_max_groups;
	refused = atomic64_read(&sdev->sa_groups_refused);

	for (; base + n < cap; n++) {
		st = softib_st_sa_join(sdev, 1, IB_MGMT_METHOD_SET, n, &mlid);
		if (st) {
			pr_err("selftest sa_cap: join %u of %u refused, status 0x%04x\n",
			       n, cap - base, st);
			goto out;
		}
		if (!n)
			mlid0 = mlid;
	}
	st = softib_st_sa_join(sdev, 1, IB_MGMT_METHOD_SET, n, &mlid);
	if (st != SOFTIB_ST_SA_NO_RESOURCES) {
		pr_err("selftest sa_cap: a join beyond sa_max_groups=%u got status 0x%04x, expected 0x%04x\n",
		       cap, st, SOFTIB_ST_SA_NO_RESOURCES);
		if (!st)
			n++;
		goto out;
	}
	if (atomic64_read(&sdev->sa_groups_refused) != refused + 1) {
		pr_err("selftest sa_cap: sa_groups_refused did not count the refusal\n");
		goto out;
	}
	if (n) {
		/* the cap refuses new groups, not members */
		st = softib_st_sa_join(sdev, 2, IB_MGMT_METHOD_SET, 0, &mlid);
		if (st) {
			pr_err("selftest sa_cap: joining an existing group at the cap got status 0x%04x\n",
			       st);
			goto out;
		}
		softib_st_sa_join(sdev, 2, IB_SA_METHOD_DELETE, 0, &mlid);
		softib_st_sa_join(sdev, 1, IB_SA_METHOD_DELETE, 0, &mlid);
		st = softib_st_sa_join(sdev, 1, IB_MGMT_METHOD_SET, n, &mlid);
		if (st || mlid != mlid0) {
			pr_err("selftest sa_cap: after a leave the join got status 0x%04x MLID 0x%04x, expected 0 and 0x%04x\n",
			       st, mlid, mlid0);
			if (!st)
				softib_st_sa_join(sdev, 1, IB_SA_METHOD_DELETE,
						  n, &mlid);
			goto out;
		}
		softib_st_sa_join(sdev, 1, IB_SA_METHOD_DELETE, n, &mlid);
	}
	if (sdev->nports > 1) {
		/* a port joins and leaves for itself only */
		st = softib_st_sa_req(sdev, 2, 1, IB_MGMT_METHOD_SET, 0, &mlid);
		if (st != SOFTIB_ST_SA_REQ_INVALID) {
			pr_err("selftest sa_cap: port 2 joined for port 1: status 0x%04x, expected 0x%04x\n",
			       st, SOFTIB_ST_SA_REQ_INVALID);
			if (!st)
				softib_st_sa_join(sdev, 1, IB_SA_METHOD_DELETE,
						  0, &mlid);
			goto out;
		}
		softib_st_sa_join(sdev, 1, IB_MGMT_METHOD_SET, 0, &mlid);
		st = softib_st_sa_req(sdev, 2, 1, IB_SA_METHOD_DELETE, 0,
				      &mlid);
		softib_st_sa_join(sdev, 1, IB_SA_METHOD_DELETE, 0, &mlid);
		if (st != SOFTIB_ST_SA_REQ_INVALID) {
			pr_err("selftest sa_cap: port 2 left for port 1: status 0x%04x, expected 0x%04x\n",
			       st, SOFTIB_ST_SA_REQ_INVALID);
			goto out;
		}
	}
	ret = 0;
out:
	/* a leave of a group we are not in is refused harmlessly */
	for (i = 0; i < n; i++)
		softib_st_sa_join(sdev, 1, IB_SA_METHOD_DELETE, i, &mlid);
	mutex_lock(&sdev->sa_lock);
	if (!ret && sdev->sa_groups != base) {
		pr_err("selftest sa_cap: %u groups left, expected %u\n",
		       sdev->sa_groups, base);
		ret = -EIO;
	}
	mutex_unlock(&sdev->sa_lock);
	pr_info("selftest sa_cap: %u joins up to sa_max_groups=%u in %u ms\n",
		n, cap, jiffies_to_msecs(jiffies - start));
	return ret;
}

int softib_selftest(struct softib_dev *sdev, const char *name)
{
	struct ib_cq_init_attr cq_attr = { .cqe = 16 };
	struct ib_pd *pd;
	struct ib_cq *cq;
	int ret;

	if (!strcmp(name, "sa_cap")) {
		ret = softib_st_sa_cap(sdev);
		goto out_log;
	}
	if (strcmp(name, "purge") && strcmp(name, "wrid") &&
	    strcmp(name, "ud_to_rc") && strcmp(name, "offload") &&
	    strcmp(name, "qpstate"))
		return -EINVAL;
	pd = ib_alloc_pd(&sdev->ibdev, 0);
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	cq = ib_create_cq(&sdev->ibdev, NULL, NULL, NULL, &cq_attr);
	if (IS_ERR(cq)) {
		ret = PTR_ERR(cq);
		goto out_pd;
	}
	if (!strcmp(name, "purge"))
		ret = softib_st_purge(sdev, pd, cq);
	else if (!strcmp(name, "ud_to_rc"))
		ret = softib_st_ud_to_rc(sdev, pd, cq);
	else if (!strcmp(name, "offload"))
		ret = softib_st_offload(sdev, pd, cq);
	else if (!strcmp(name, "qpstate"))
		ret = softib_st_qpstate(sdev, pd, cq);
	else
		ret = softib_st_wrid(sdev, pd, cq);
	ib_destroy_cq(cq);
out_pd:
	ib_dealloc_pd(pd);
out_log:
	pr_info("selftest %s: %s (%d)\n", name, ret ? "FAIL" : "ok", ret);
	return ret;
}
