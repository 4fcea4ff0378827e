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
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_sa.h>

#include "softib.h"

#define SOFTIB_ST_QKEY	0x12345678

static struct ib_qp *softib_st_qp(struct ib_pd *pd, struct ib_cq *cq)
{
	struct ib_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {
			.max_send_wr = 1,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_UD,
	};
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qkey = SOFTIB_ST_QKEY,
	};
	struct ib_qp *qp;
	int ret;

	qp = ib_create_qp(pd, &init);
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
	struct ib_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {
			.max_send_wr = 1,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_RC,
	};
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

	qp = ib_create_qp(pd, &init);
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

/* Poll for up to "ms" milliseconds; count send and receive completions. */
static void softib_st_drain(struct ib_cq *cq, unsigned int ms, int *sends,
			    int *recvs)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);
	struct ib_wc wc;

	*sends = 0;
	*recvs = 0;
	do {
		while (ib_poll_cq(cq, 1, &wc) == 1) {
			if (wc.opcode & IB_WC_RECV)
				(*recvs)++;
			else
				(*sends)++;
		}
		usleep_range(500, 1000);
	} while (time_before(jiffies, end));
}

static int softib_st_ud_to_rc(struct softib_dev *sdev, struct ib_pd *pd,
			      struct ib_cq *cq)
{
	atomic64_t *no_qp = &softib_port(sdev, 1)->cnt.drops[SOFTIB_DROP_NO_QP];
	struct rdma_ah_attr ah_attr = { .type = RDMA_AH_ATTR_TYPE_IB };
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
	rdma_ah_set_dlid(&ah_attr, 1);
	rdma_ah_set_port_num(&ah_attr, 1);
	ah = rdma_create_ah(pd, &ah_attr, RDMA_CREATE_AH_SLEEPABLE);
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

#define SOFTIB_ST_SA_NO_RESOURCES	0x0100

static void softib_st_mgid(union ib_gid *mgid, u32 i)
{
	/* an IPv4 IPoIB multicast MGID of P_Key 0xffff, scope 2 */
	*mgid = (union ib_gid) { .raw = {
		0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0,
		0xef, (u8)(i >> 16), (u8)(i >> 8), (u8)i } };
}

static int softib_st_sa_join(struct softib_dev *sdev, u32 port, u8 method,
			     u32 i, u16 *mlid)
{
	union ib_gid mgid;
	u16 status;

	softib_st_mgid(&mgid, i);
	*mlid = softib_sa_mcmember_req(sdev, softib_port(sdev, port), method,
				       &mgid, 1, &status);
	return status;
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
	    strcmp(name, "ud_to_rc"))
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
	else
		ret = softib_st_wrid(sdev, pd, cq);
	ib_destroy_cq(cq);
out_pd:
	ib_dealloc_pd(pd);
out_log:
	pr_info("selftest %s: %s (%d)\n", name, ret ? "FAIL" : "ok", ret);
	return ret;
}
