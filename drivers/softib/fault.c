// SPDX-License-Identifier: GPL-2.0
/*
 * softib: fault injection under debugfs softib/<device>/fault/, for tests
 * of how consumers handle what real HCAs do rarely and on their own.
 * Documented in Documentation/softib.rst.
 *
 *  qp_error       (write a QPN) the HCA fails the QP, as after a transport
 *                 or local error: it goes to ERR, its receives flush and
 *                 a QP on an SRQ gets IB_EVENT_QP_LAST_WQE_REACHED, with
 *                 no error completion and nothing the consumer asked for.
 *  stall_sends    (write a QPN) the QP's send queue hangs: nothing posted
 *                 to it is sent, completed or flushed, in any state, until
 *                 the QP is reset or destroyed (which discard it). For
 *                 consumers' teardown timeouts and transmit watchdogs.
 *  rnr_stuck      (write a QPN) the RC QP's receiver acts as one whose
 *                 receive queue stays empty: every message sent to it is
 *                 RNR NAKed, with the longest NAK timer (655 ms, the
 *                 CM's default), until the QP is reset or destroyed.
 *                 Senders retry as their rnr_retry says (7: for ever).
 *  rnr_clear      (write a QPN) the RC QP's receiver takes messages again
 *                 after rnr_stuck: a receiver that was slow, not dead.
 *  qp_fatal       (write a QPN) a local catastrophic error of the QP:
 *                 it goes to ERR with IB_EVENT_QP_FATAL (then, on an
 *                 SRQ, IB_EVENT_QP_LAST_WQE_REACHED), no error completion.
 *  rem_inv_req    (write an RC QPN) the next message to that responder
 *                 is an invalid request: the responder goes to ERR with
 *                 IB_EVENT_QP_REQ_ERR, the requester's WQE completes
 *                 with IB_WC_REM_INV_REQ_ERR (and it goes to ERR).
 *  rem_access     (write an RC QPN) the same as an access violation:
 *                 IB_EVENT_QP_ACCESS_ERR, IB_WC_REM_ACCESS_ERR.
 *  fail_post_srq  (write N) the Nth ib_post_srq_recv() from now fails
 *                 with -ENOMEM, once, as on an SRQ that is full; reads
 *                 how many calls are left (0: disarmed).
 *  fail_create_qp (write N) the Nth ib_create_qp() from now fails with
 *                 -ENOMEM, once, as on an HCA out of QP memory; reads
 *                 how many calls are left (0: disarmed).
 *  sa_delay_ms    (0-60000) the SA answers each request this late, as a
 *                 busy SM does: path queries and joins stay in flight
 *                 (sa.c). Answers still held back when the device goes
 *                 are dropped, as lost MADs.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/debugfs.h>
#include <linux/uaccess.h>

#include "softib.h"

/* Whether this ib_post_srq_recv() is the one fail_post_srq picked. */
bool softib_fault_post_srq(struct softib_dev *sdev)
{
	/* counts down to 0 once; at 0 (disarmed) it stays there */
	return atomic_dec_if_positive(&sdev->fault_post_srq) == 0;
}

/* Whether this ib_create_qp() is the one fail_create_qp picked. */
bool softib_fault_create_qp(struct softib_dev *sdev)
{
	return atomic_dec_if_positive(&sdev->fault_create_qp) == 0;
}

/*
 * Apply fn to QP number val of the device, for the knob "name": QP0/QP1
 * are per port and not in the table, so they cannot be picked here.
 * destroy_qp erases the QPN, then waits for RCU readers like us.
 */
static int softib_fault_on_qp(struct softib_dev *sdev, u64 val,
			      const char *name,
			      void (*fn)(struct softib_qp *qp))
{
	struct softib_qp *qp;

	if (val < 2 || val > U32_MAX) {
		pr_info("softib: fault/%s: write the number of an RC or UD QP (2 or more)\n",
			name);
		return -EINVAL;
	}
	rcu_read_lock();
	qp = xa_load(&sdev->qps, val);
	if (qp)
		fn(qp);
	rcu_read_unlock();
	if (!qp) {
		pr_info("softib: fault/%s: no QP 0x%06llx on %s (see rdma res show qp)\n",
			name, val, dev_name(&sdev->ibdev.dev));
		return -ENOENT;
	}
	return 0;
}

static void softib_fault_qp_error(struct softib_qp *qp)
{
	softib_qp_queue(qp, SOFTIB_QPW_ERR, 0);
}

static int softib_fault_qp_error_set(void *data, u64 val)
{
	return softib_fault_on_qp(data, val, "qp_error", softib_fault_qp_error);
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_fault_qp_error_fops, NULL,
			 softib_fault_qp_error_set, "%llu\n");

/* as an HCA's local catastrophic error of the QP: QP_FATAL, no completion */
static void softib_fault_qp_fatal(struct softib_qp *qp)
{
	set_bit(SOFTIB_EV_FATAL, &qp->fail_events);
	softib_qp_queue(qp, SOFTIB_QPW_ERR, 0);
}

static int softib_fault_qp_fatal_set(void *data, u64 val)
{
	return softib_fault_on_qp(data, val, "qp_fatal", softib_fault_qp_fatal);
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_fault_qp_fatal_fops, NULL,
			 softib_fault_qp_fatal_set, "%llu\n");

/* fabric.c takes it at the next message to the responder */
static void softib_fault_rem_inv_req(struct softib_qp *qp)
{
	WRITE_ONCE(qp->resp_fault, IB_WC_REM_INV_REQ_ERR);
}

static void softib_fault_rem_access(struct softib_qp *qp)
{
	WRITE_ONCE(qp->resp_fault, IB_WC_REM_ACCESS_ERR);
}

static int softib_fault_rem_inv_req_set(void *data, u64 val)
{
	return softib_fault_on_qp(data, val, "rem_inv_req",
				  softib_fault_rem_inv_req);
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_fault_rem_inv_req_fops, NULL,
			 softib_fault_rem_inv_req_set, "%llu\n");

static int softib_fault_rem_access_set(void *data, u64 val)
{
	return softib_fault_on_qp(data, val, "rem_access",
				  softib_fault_rem_access);
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_fault_rem_access_fops, NULL,
			 softib_fault_rem_access_set, "%llu\n");

/* the engine reads it at each WQE: the one in flight still goes */
static void softib_fault_stall_sends(struct softib_qp *qp)
{
	WRITE_ONCE(qp->sends_stalled, true);
}

static int softib_fault_stall_sends_set(void *data, u64 val)
{
	return softib_fault_on_qp(data, val, "stall_sends",
				  softib_fault_stall_sends);
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_fault_stall_sends_fops, NULL,
			 softib_fault_stall_sends_set, "%llu\n");

/* fabric.c reads it at each message to the QP */
static void softib_fault_rnr_stuck(struct softib_qp *qp)
{
	WRITE_ONCE(qp->rnr_stuck, true);
}

static int softib_fault_rnr_stuck_set(void *data, u64 val)
{
	return softib_fault_on_qp(data, val, "rnr_stuck",
				  softib_fault_rnr_stuck);
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_fault_rnr_stuck_fops, NULL,
			 softib_fault_rnr_stuck_set, "%llu\n");

static void softib_fault_rnr_clear(struct softib_qp *qp)
{
	WRITE_ONCE(qp->rnr_stuck, false);
}

static int softib_fault_rnr_clear_set(void *data, u64 val)
{
	return softib_fault_on_qp(data, val, "rnr_clear",
				  softib_fault_rnr_clear);
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_fault_rnr_clear_fops, NULL,
			 softib_fault_rnr_clear_set, "%llu\n");

static int softib_fault_post_srq_get(void *data, u64 *val)
{
	struct softib_dev *sdev = data;

	*val = atomic_read(&sdev->fault_post_srq);
	return 0;
}

static int softib_fault_post_srq_set(void *data, u64 val)
{
	struct softib_dev *sdev = data;

	if (val > INT_MAX)
		return -ERANGE;
	atomic_set(&sdev->fault_post_srq, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_fault_post_srq_fops, softib_fault_post_srq_get,
			 softib_fault_post_srq_set, "%llu\n");

static int softib_fault_create_qp_get(void *data, u64 *val)
{
	struct softib_dev *sdev = data;

	*val = atomic_read(&sdev->fault_create_qp);
	return 0;
}

static int softib_fault_create_qp_set(void *data, u64 val)
{
	struct softib_dev *sdev = data;

	if (val > INT_MAX)
		return -ERANGE;
	atomic_set(&sdev->fault_create_qp, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_fault_create_qp_fops,
			 softib_fault_create_qp_get,
			 softib_fault_create_qp_set, "%llu\n");

static int softib_fault_sa_delay_get(void *data, u64 *val)
{
	struct softib_dev *sdev = data;

	*val = READ_ONCE(sdev->sa_delay_ms);
	return 0;
}

static int softib_fault_sa_delay_set(void *data, u64 val)
{
	struct softib_dev *sdev = data;

	if (val > SOFTIB_SA_DELAY_MAX_MS) {
		pr_info("softib: fault/sa_delay_ms: at most %u (ms)\n",
			SOFTIB_SA_DELAY_MAX_MS);
		return -ERANGE;
	}
	/* answers already held back keep their time */
	WRITE_ONCE(sdev->sa_delay_ms, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_fault_sa_delay_fops, softib_fault_sa_delay_get,
			 softib_fault_sa_delay_set, "%llu\n");

void softib_fault_init(struct softib_dev *sdev)
{
	struct dentry *dir = debugfs_create_dir("fault", sdev->debugfs);

	atomic_set(&sdev->fault_post_srq, 0);
	atomic_set(&sdev->fault_create_qp, 0);
	debugfs_create_file_unsafe("qp_error", 0200, dir, sdev,
				   &softib_fault_qp_error_fops);
	debugfs_create_file_unsafe("qp_fatal", 0200, dir, sdev,
				   &softib_fault_qp_fatal_fops);
	debugfs_create_file_unsafe("rem_inv_req", 0200, dir, sdev,
				   &softib_fault_rem_inv_req_fops);
	debugfs_create_file_unsafe("rem_access", 0200, dir, sdev,
				   &softib_fault_rem_access_fops);
	debugfs_create_file_unsafe("stall_sends", 0200, dir, sdev,
				   &softib_fault_stall_sends_fops);
	debugfs_create_file_unsafe("rnr_stuck", 0200, dir, sdev,
				   &softib_fault_rnr_stuck_fops);
	debugfs_create_file_unsafe("rnr_clear", 0200, dir, sdev,
				   &softib_fault_rnr_clear_fops);
	debugfs_create_file_unsafe("fail_post_srq", 0644, dir, sdev,
				   &softib_fault_post_srq_fops);
	debugfs_create_file_unsafe("fail_create_qp", 0644, dir, sdev,
				   &softib_fault_create_qp_fops);
	debugfs_create_file_unsafe("sa_delay_ms", 0644, dir, sdev,
				   &softib_fault_sa_delay_fops);
}
