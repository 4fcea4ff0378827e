// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the fabric's own ceiling, measured with its verbs as a kernel
 * consumer calls them ("bench" in debugfs; make bench reports it).
 *
 * Write "ud SIZE COUNT" or "rc SIZE COUNT": a QP on port 1 sends COUNT
 * messages of SIZE bytes to a QP on port 2, keeping up to
 * SOFTIB_BENCH_WINDOW sends in flight and never more than half the
 * receiver's ring unreplenished (so UD loses nothing to an empty queue).
 * The writer polls both CQs itself and reposts every receive, so the
 * figure is softib's per-message cost (send engine, routing, copy,
 * completions), not an IPoIB driver's. Reading the file gives the last
 * result: messages, nanoseconds, messages/s and MB/s, and any lost.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

#define SOFTIB_BENCH_QKEY	0x0b0b0b0b
#define SOFTIB_BENCH_RING	256	/* receive slots */
#define SOFTIB_BENCH_WINDOW	64	/* sends in flight */
#define SOFTIB_BENCH_SIGNAL	16	/* one signalled send in this many */
#define SOFTIB_BENCH_MAX_COUNT	10000000
#define SOFTIB_BENCH_RC_MAX	65536	/* one RC SEND; UD: one MTU */

struct softib_bench {
	struct softib_dev *sdev;
	enum ib_qp_type type;
	u32 size, count;
	struct ib_pd *pd;
	struct ib_cq *scq, *rcq;
	struct ib_qp *tx, *rx;
	struct ib_ah *ah;
	u8 *rbuf;		/* SOFTIB_BENCH_RING slots of "slot" bytes */
	u8 *sbuf;
	u32 slot;
	u32 posted_sends, done_sends, received;
	ktime_t last;		/* the last completion polled */
};

/* RESET -> INIT -> RTR -> RTS; an RC QP is connected to "peer" */
static int softib_bench_connect(struct softib_bench *b, struct ib_qp *qp,
				u32 port, u32 peer_port, u32 peer_qpn)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = port,
		.qkey = SOFTIB_BENCH_QKEY,
	};
	int mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT;
	int ret;

	mask |= b->type == IB_QPT_UD ? IB_QP_QKEY : IB_QP_ACCESS_FLAGS;
	ret = ib_modify_qp(qp, &attr, mask);
	if (ret)
		return ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	mask = IB_QP_STATE;
	if (b->type == IB_QPT_RC) {
		attr.path_mtu = IB_MTU_4096;
		attr.dest_qp_num = peer_qpn;
		attr.ah_attr.type = RDMA_AH_ATTR_TYPE_IB;
		rdma_ah_set_dlid(&attr.ah_attr,
				 softib_port(b->sdev, peer_port)->lid);
		rdma_ah_set_port_num(&attr.ah_attr, port);
		attr.min_rnr_timer = 1;
		mask |= IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
			IB_QP_MIN_RNR_TIMER;
	}
	ret = ib_modify_qp(qp, &attr, mask);
	if (ret)
		return ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	mask = IB_QP_STATE | IB_QP_SQ_PSN;
	if (b->type == IB_QPT_RC) {
		attr.timeout = 14;
		attr.retry_cnt = 7;
		attr.rnr_retry = 7;
		mask |= IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			IB_QP_MAX_QP_RD_ATOMIC;
	}
	return ib_modify_qp(qp, &attr, mask);
}

static struct ib_qp *softib_bench_qp(struct softib_bench *b)
{
	struct ib_qp_init_attr init = {
		.send_cq = b->scq,
		.recv_cq = b->rcq,
		.cap = {
			.max_send_wr = SOFTIB_BENCH_WINDOW,
			.max_recv_wr = SOFTIB_BENCH_RING,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = b->type,
	};

	return ib_create_qp(b->pd, &init);
}

static int softib_bench_post_recv(struct softib_bench *b, u32 i)
{
	struct ib_sge sge = {
		.addr = (uintptr_t)(b->rbuf + (size_t)i * b->slot),
		.length = b->slot,
		.lkey = b->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = i,
		.sg_list = &sge,
		.num_sge = 1,
	};

	return ib_post_recv(b->rx, &wr, NULL);
}

static int softib_bench_post_send(struct softib_bench *b)
{
	struct ib_sge sge = {
		.addr = (uintptr_t)b->sbuf,
		.length = b->size,
		.lkey = b->pd->local_dma_lkey,
	};
	struct ib_ud_wr wr = {
		.wr = {
			.wr_id = b->posted_sends,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IB_WR_SEND,
		},
		.ah = b->ah,
		.remote_qpn = b->rx->qp_num,
		.remote_qkey = SOFTIB_BENCH_QKEY,
	};

	/* the last one too: its completion ends the run */
	if (!((b->posted_sends + 1) % SOFTIB_BENCH_SIGNAL) ||
	    b->posted_sends + 1 == b->count)
		wr.wr.send_flags = IB_SEND_SIGNALED;
	return ib_post_send(b->tx, &wr.wr, NULL);
}

/*
 * The measured loop. A signalled completion retires every send before it
 * (one QP, in order). Gives up after 10 s without progress.
 */
static int softib_bench_loop(struct softib_bench *b)
{
	unsigned long stall = jiffies + 10 * HZ;
	struct ib_wc wc[16];
	int n, i, ret;

	while (b->done_sends < b->count || b->received < b->count) {
		bool progress = false;

		while (b->posted_sends < b->count &&
		       b->posted_sends - b->done_sends < SOFTIB_BENCH_WINDOW &&
		       b->posted_sends - b->received < SOFTIB_BENCH_RING / 2) {
			ret = softib_bench_post_send(b);
			if (ret)
				return ret;
			b->posted_sends++;
			progress = true;
		}
		while ((n = ib_poll_cq(b->scq, ARRAY_SIZE(wc), wc)) > 0) {
			for (i = 0; i < n; i++) {
				if (wc[i].status != IB_WC_SUCCESS)
					return -EIO;
				b->done_sends = wc[i].wr_id + 1;
			}
			b->last = ktime_get();
			progress = true;
		}
		while ((n = ib_poll_cq(b->rcq, ARRAY_SIZE(wc), wc)) > 0) {
			for (i = 0; i < n; i++) {
				if (wc[i].status != IB_WC_SUCCESS)
					return -EIO;
				b->received++;
				ret = softib_bench_post_recv(b, wc[i].wr_id);
				if (ret)
					return ret;
			}
			b->last = ktime_get();
			progress = true;
		}
		/*
		 * UD may lose a datagram: then the last send's completion is
		 * the end (a second without a receive after it)
		 */
		if (b->type == IB_QPT_UD && b->done_sends == b->count &&
		    ktime_ms_delta(ktime_get(), b->last) > 1000)
			break;
		if (progress)
			stall = jiffies + 10 * HZ;
		else if (time_after(jiffies, stall))
			return -ETIMEDOUT;
		/* the send engine is a work item: let it have this CPU */
		cond_resched();
	}
	return 0;
}

static int softib_bench_run(struct softib_bench *b, u64 *ns)
{
	struct ib_cq_init_attr cq_attr = {
		.cqe = SOFTIB_BENCH_RING + SOFTIB_BENCH_WINDOW,
	};
	struct rdma_ah_attr ah_attr = { .type = RDMA_AH_ATTR_TYPE_IB };
	ktime_t start;
	int ret;
	u32 i;

	b->slot = b->size + (b->type == IB_QPT_UD ? sizeof(struct ib_grh) : 0);
	b->rbuf = kvzalloc((size_t)SOFTIB_BENCH_RING * b->slot, GFP_KERNEL);
	b->sbuf = kvzalloc(b->size, GFP_KERNEL);
	if (!b->rbuf || !b->sbuf) {
		ret = -ENOMEM;
		goto out_free;
	}
	b->pd = ib_alloc_pd(&b->sdev->ibdev, 0);
	if (IS_ERR(b->pd)) {
		ret = PTR_ERR(b->pd);
		goto out_free;
	}
	b->scq = ib_create_cq(&b->sdev->ibdev, NULL, NULL, NULL, &cq_attr);
	if (IS_ERR(b->scq)) {
		ret = PTR_ERR(b->scq);
		goto out_pd;
	}
	b->rcq = ib_create_cq(&b->sdev->ibdev, NULL, NULL, NULL, &cq_attr);
	if (IS_ERR(b->rcq)) {
		ret = PTR_ERR(b->rcq);
		goto out_scq;
	}
	b->tx = softib_bench_qp(b);
	if (IS_ERR(b->tx)) {
		ret = PTR_ERR(b->tx);
		goto out_rcq;
	}
	b->rx = softib_bench_qp(b);
	if (IS_ERR(b->rx)) {
		ret = PTR_ERR(b->rx);
		goto out_tx;
	}
	ret = softib_bench_connect(b, b->tx, 1, 2, b->rx->qp_num) ?:
	      softib_bench_connect(b, b->rx, 2, 1, b->tx->qp_num);
	if (ret)
		goto out_rx;
	if (b->type == IB_QPT_UD) {
		rdma_ah_set_dlid(&ah_attr, softib_port(b->sdev, 2)->lid);
		rdma_ah_set_port_num(&ah_attr, 1);
		b->ah = rdma_create_ah(b->pd, &ah_attr,
				       RDMA_CREATE_AH_SLEEPABLE);
		if (IS_ERR(b->ah)) {
			ret = PTR_ERR(b->ah);
			goto out_rx;
		}
	}
	for (i = 0; i < SOFTIB_BENCH_RING; i++) {
		ret = softib_bench_post_recv(b, i);
		if (ret)
			goto out_ah;
	}

	start = ktime_get();
	b->last = start;
	ret = softib_bench_loop(b);
	*ns = ktime_to_ns(ktime_sub(b->last, start));

out_ah:
	if (b->ah)
		rdma_destroy_ah(b->ah, RDMA_DESTROY_AH_SLEEPABLE);
out_rx:
	ib_destroy_qp(b->rx);
out_tx:
	ib_destroy_qp(b->tx);
out_rcq:
	ib_destroy_cq(b->rcq);
out_scq:
	ib_destroy_cq(b->scq);
out_pd:
	ib_dealloc_pd(b->pd);
out_free:
	kvfree(b->sbuf);
	kvfree(b->rbuf);
	return ret;
}

/*
 * "TYPE SIZE COUNT": exactly three words. The numbers are parsed whole
 * (kstrtou32: junk is -EINVAL, a value past 32 bits -ERANGE, never
 * truncated into range); their limits are checked by the caller.
 */
static int softib_bench_parse(struct softib_bench *b, char *cmd)
{
	char *word[3];
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(word); i++) {
		if (!cmd)
			return -EINVAL;
		cmd = skip_spaces(cmd);
		/* the white space skip_spaces() skips */
		word[i] = strsep(&cmd, " \t\n\v\f\r");
		if (!*word[i])
			return -EINVAL;
	}
	if (cmd && *skip_spaces(cmd))
		return -EINVAL;
	if (!strcmp(word[0], "ud"))
		b->type = IB_QPT_UD;
	else if (!strcmp(word[0], "rc"))
		b->type = IB_QPT_RC;
	else
		return -EINVAL;
	ret = kstrtou32(word[1], 0, &b->size);
	return ret ?: kstrtou32(word[2], 0, &b->count);
}

/*
 * "ud|rc SIZE COUNT" (modified in place); the result goes to "out" (the
 * bench file's text). Needs both ports active: a port that is down loses
 * every message.
 */
int softib_bench(struct softib_dev *sdev, char *cmd, char *out, size_t len)
{
	struct softib_bench b = { .sdev = sdev };
	const char *type;
	u32 max_size;
	u64 ns = 0;
	int ret;

	ret = softib_bench_parse(&b, cmd);
	if (ret) {
		pr_info("bench: write \"ud|rc SIZE COUNT\" (%s)\n",
			ret == -ERANGE ? "a number past 32 bits" :
					 "three words, numbers in C syntax");
		return ret;
	}
	type = b.type == IB_QPT_UD ? "ud" : "rc";
	max_size = b.type == IB_QPT_UD ? SOFTIB_MTU_BYTES : SOFTIB_BENCH_RC_MAX;
	if (!b.size || b.size > max_size ||
	    !b.count || b.count > SOFTIB_BENCH_MAX_COUNT) {
		pr_info("bench: SIZE 1-%u (%s) and COUNT 1-%u\n",
			max_size, type, SOFTIB_BENCH_MAX_COUNT);
		return -ERANGE;
	}
	if (sdev->nports < 2 ||
	    READ_ONCE(softib_port(sdev, 1)->state) != IB_PORT_ACTIVE ||
	    READ_ONCE(softib_port(sdev, 2)->state) != IB_PORT_ACTIVE) {
		pr_info("bench: ports 1 and 2 must be active\n");
		return -ENETDOWN;
	}

	ret = softib_bench_run(&b, &ns);
	if (ret) {
		pr_info("bench %s %u %u: failed (%d) after %u sends, %u received\n",
			type, b.size, b.count, ret, b.done_sends, b.received);
		return ret;
	}
	ns = max_t(u64, ns, 1);
	scnprintf(out, len,
		  "%s size %u messages %u ns %llu msg/s %llu MB/s %llu lost %u\n",
		  type, b.size, b.count, ns,
		  div64_u64((u64)b.received * NSEC_PER_SEC, ns),
		  div64_u64((u64)b.received * b.size * 1000, ns),
		  b.count - b.received);
	return 0;
}
