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
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/string.h>

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

int softib_selftest(struct softib_dev *sdev, const char *name)
{
	struct ib_cq_init_attr cq_attr = { .cqe = 16 };
	struct ib_pd *pd;
	struct ib_cq *cq;
	int ret;

	if (strcmp(name, "purge") && strcmp(name, "wrid"))
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
	else
		ret = softib_st_wrid(sdev, pd, cq);
	ib_destroy_cq(cq);
out_pd:
	ib_dealloc_pd(pd);
	pr_info("selftest %s: %s (%d)\n", name, ret ? "FAIL" : "ok", ret);
	return ret;
}
