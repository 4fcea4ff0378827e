// SPDX-License-Identifier: GPL-2.0
/*
 * softib: verbs objects (PD, AH, MR, CQ, SRQ, QP) and multicast attach.
 *
 * softib is a kernel-only provider: it registers no uverbs ops, so every
 * buffer it sees is kernel memory addressed by virtual address
 * (ib_uses_virt_dma()). Memory keys are therefore not translated; the DMA
 * MR every PD gets covers all of kernel memory, as on hardware.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "softib.h"

int softib_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
			struct ib_udata *udata)
{
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = 1;
	attr->sys_image_guid = cpu_to_be64(softib_node_guid);
	attr->max_mr_size = U64_MAX;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = SOFTIB_VENDOR_ID;
	attr->vendor_part_id = SOFTIB_DEVICE_ID;
	attr->hw_ver = SOFTIB_HW_REV;
	attr->max_qp = SOFTIB_MAX_QP;
	attr->max_qp_wr = SOFTIB_MAX_QP_WR;
	attr->device_cap_flags = IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_RC_RNR_NAK_GEN;
	/* what mlx4/mlx5 offer IPoIB: checksums and LSO on UD (offload.c) */
	if (softib_offloads) {
		attr->device_cap_flags |= IB_DEVICE_UD_IP_CSUM;
		attr->kernel_cap_flags |= IBK_UD_TSO;
	}
	attr->max_send_sge = SOFTIB_MAX_SGE;
	attr->max_recv_sge = SOFTIB_MAX_SGE;
	attr->max_sge_rd = SOFTIB_MAX_SGE;
	attr->max_cq = SOFTIB_MAX_CQ;
	attr->max_cqe = SOFTIB_MAX_CQE;
	/* modify_cq's range (ib_core passes u16s) */
	attr->cq_caps.max_cq_moderation_count = U16_MAX;
	attr->cq_caps.max_cq_moderation_period = U16_MAX;
	attr->max_mr = SOFTIB_MAX_MR;
	attr->max_pd = SOFTIB_MAX_PD;
	attr->max_mcast_grp = SOFTIB_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = SOFTIB_MAX_MCAST_ATTACH;
	attr->max_total_mcast_qp_attach = SOFTIB_MAX_MCAST_GRP *
					  SOFTIB_MAX_MCAST_ATTACH;
	attr->max_ah = SOFTIB_MAX_AH;
	if (softib_srq) {
		attr->max_srq = SOFTIB_MAX_QP;
		attr->max_srq_wr = SOFTIB_MAX_QP_WR;
		attr->max_srq_sge = SOFTIB_MAX_SGE;
	}
	attr->max_pkeys = SOFTIB_PKEY_TBL_LEN;
	attr->local_ca_ack_delay = 15;
	return 0;
}

/* Take one object out of a per-device budget; false when it is exhausted. */
static bool softib_get_budget(atomic_t *count, int max)
{
	return atomic_add_unless(count, 1, max);
}

int softib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct softib_dev *sdev = to_sdev(ibpd->device);

	if (udata)
		return -EOPNOTSUPP;
	if (!softib_get_budget(&sdev->n_pd, SOFTIB_MAX_PD))
		return -ENOMEM;
	return 0;
}

int softib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_sdev(ibpd->device)->n_pd);
	return 0;
}

int softib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		     struct ib_udata *udata)
{
	struct softib_dev *sdev = to_sdev(ibah->device);
	struct rdma_ah_attr *attr = init->ah_attr;
	struct softib_av *av = &to_sah(ibah)->av;

	if (udata)
		return -EOPNOTSUPP;
	if (attr->type != RDMA_AH_ATTR_TYPE_IB)
		return -EINVAL;
	if (rdma_ah_get_port_num(attr) < 1 ||
	    rdma_ah_get_port_num(attr) > sdev->nports)
		return -EINVAL;
	if (!softib_get_budget(&sdev->n_ah, SOFTIB_MAX_AH))
		return -ENOMEM;
	softib_av_from_attr(av, attr);
	return 0;
}

void softib_av_from_attr(struct softib_av *av, const struct rdma_ah_attr *attr)
{
	memset(av, 0, sizeof(*av));
	av->dlid = rdma_ah_get_dlid(attr);
	av->sl = rdma_ah_get_sl(attr);
	av->port_num = rdma_ah_get_port_num(attr);
	av->grh = rdma_ah_get_ah_flags(attr) & IB_AH_GRH;
	if (av->grh) {
		const struct ib_global_route *grh = rdma_ah_read_grh(attr);

		av->dgid = grh->dgid;
		av->sgid_index = grh->sgid_index;
		av->hop_limit = grh->hop_limit;
		av->traffic_class = grh->traffic_class;
		av->flow_label = grh->flow_label;
	}
}

int softib_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	struct softib_av *av = &to_sah(ibah)->av;

	memset(attr, 0, sizeof(*attr));
	attr->type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_dlid(attr, av->dlid);
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_port_num(attr, av->port_num);
	if (av->grh)
		rdma_ah_set_grh(attr, &av->dgid, av->flow_label, av->sgid_index,
				av->hop_limit, av->traffic_class);
	return 0;
}

int softib_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	atomic_dec(&to_sdev(ibah->device)->n_ah);
	return 0;
}

struct ib_mr *softib_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct softib_dev *sdev = to_sdev(ibpd->device);
	static atomic_t next_key = ATOMIC_INIT(0);
	struct softib_mr *mr;
	u32 key;

	if (!softib_get_budget(&sdev->n_mr, SOFTIB_MAX_MR))
		return ERR_PTR(-ENOMEM);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		atomic_dec(&sdev->n_mr);
		return ERR_PTR(-ENOMEM);
	}
	/* index in the upper 24 bits, a "key" byte below, as hardware does */
	key = ((u32)atomic_inc_return(&next_key) << 8) | 0x5b;
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	return &mr->ibmr;
}

struct ib_mr *softib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				 u64 virt, int access, struct ib_udata *udata)
{
	/* kernel-only provider: there is no user verbs support */
	return ERR_PTR(-EOPNOTSUPP);
}

int softib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	atomic_dec(&to_sdev(ibmr->device)->n_mr);
	kfree(container_of(ibmr, struct softib_mr, ibmr));
	return 0;
}

/* Completion notification runs in our workqueue, never in a poster's context. */
static void softib_cq_comp_work(struct work_struct *work)
{
	struct softib_cq *cq = container_of(work, struct softib_cq, comp_work);

	/*
	 * Consumers such as IPoIB schedule NAPI from their handler; with
	 * bottom halves disabled around it the softirq runs on enable.
	 */
	local_bh_disable();
	if (cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	local_bh_enable();
}

static void softib_cq_err_work(struct work_struct *work)
{
	struct softib_cq *cq = container_of(work, struct softib_cq, err_work);
	struct ib_event ev = {
		.device = cq->ibcq.device,
		.event = IB_EVENT_CQ_ERR,
		.element.cq = &cq->ibcq,
	};

	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
}

/* Raise the armed completion event now; under cq->lock. */
void softib_cq_signal(struct softib_cq *cq)
{
	lockdep_assert_held(&cq->lock);
	cq->notify = 0;
	cq->mod_pending = 0;
	/* a timer still running for this batch finds nothing armed */
	hrtimer_try_to_cancel(&cq->mod_timer);
	queue_work(to_sdev(cq->ibcq.device)->wq, &cq->comp_work);
}

/* The moderation period ended: what came since the CQ was armed is due. */
static enum hrtimer_restart softib_cq_mod_timer(struct hrtimer *timer)
{
	struct softib_cq *cq = container_of(timer, struct softib_cq, mod_timer);
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->notify == IB_CQ_NEXT_COMP && cq->mod_pending)
		softib_cq_signal(cq);
	spin_unlock_irqrestore(&cq->lock, flags);
	return HRTIMER_NORESTART;
}

/*
 * ib_core's rdma_set_cq_moderation(): takes effect from the next
 * completion. Completions already waiting are signalled by the old rule
 * or, if it was stricter, by the next completion or the new period.
 */
int softib_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period)
{
	struct softib_cq *cq = to_scq(ibcq);
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	cq->mod_count = cq_count;
	cq->mod_period = cq_period;
	spin_unlock_irqrestore(&cq->lock, flags);
	return 0;
}

int softib_create_cq_common(struct ib_cq *ibcq,
			    const struct ib_cq_init_attr *attr, bool user)
{
	struct softib_dev *sdev = to_sdev(ibcq->device);
	struct softib_cq *cq = to_scq(ibcq);

	if (user)
		return -EOPNOTSUPP;
	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > SOFTIB_MAX_CQE ||
	    attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	if (!softib_get_budget(&sdev->n_cq, SOFTIB_MAX_CQ))
		return -ENOMEM;

	cq->ring = kvcalloc(attr->cqe, sizeof(*cq->ring), GFP_KERNEL);
	if (!cq->ring) {
		atomic_dec(&sdev->n_cq);
		return -ENOMEM;
	}
	cq->size = attr->cqe;
	ibcq->cqe = attr->cqe;
	spin_lock_init(&cq->lock);
	INIT_WORK(&cq->comp_work, softib_cq_comp_work);
	INIT_WORK(&cq->err_work, softib_cq_err_work);
	hrtimer_init(&cq->mod_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	cq->mod_timer.function = softib_cq_mod_timer;
	return 0;
}

int softib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct softib_cq *cq = to_scq(ibcq);

	/* every QP using this CQ is gone (ib_core counts them) */
	hrtimer_cancel(&cq->mod_timer);
	cancel_work_sync(&cq->comp_work);
	cancel_work_sync(&cq->err_work);
	kvfree(cq->ring);
	atomic_dec(&to_sdev(ibcq->device)->n_cq);
	return 0;
}

int softib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct softib_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int n;

	spin_lock_irqsave(&cq->lock, flags);
	for (n = 0; n < num && cq->count; n++) {
		u32 tail = (cq->head + cq->size - cq->count) % cq->size;

		wc[n] = cq->ring[tail];
		cq->count--;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int softib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct softib_cq *cq = to_scq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* NEXT_COMP is the wider condition: it wins over SOLICITED */
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->count)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/*
 * One lockdep class per kind of queue. All rings are set up by
 * softib_wq_init(), so without these every queue lock would share the
 * class of that one spin_lock_init() site, and the nestings below (two
 * locks of one class held at once) would be reported as recursive
 * locking. The order, outermost first (see also fabric.c):
 *
 *   SQ lock -> RQ lock      modify_qp, qp_to_error (same QP)
 *   RQ lock -> SRQ lock     receive into an SRQ-attached QP (fabric.c)
 *   RQ/SRQ lock -> CQ lock  a receive or flush completion (softib_cq_add)
 *   SQ lock -> work_lock    post_send kicks the send engine
 *
 * No path holds two queues of the same kind (two QPs' RQs, say) at once:
 * the fabric delivers into one receiving QP at a time and drops the
 * sender's SQ lock before it delivers.
 */
static struct lock_class_key softib_sq_key;
static struct lock_class_key softib_rq_key;
static struct lock_class_key softib_srq_key;

static int softib_wq_init(struct softib_wq *wq, struct lock_class_key *key,
			  u32 max_wr, u32 max_sge, size_t hdr)
{
	spin_lock_init(&wq->lock);
	lockdep_set_class(&wq->lock, key);
	wq->size = roundup_pow_of_two(max(max_wr, 1U));
	wq->max_sge = max_sge;
	wq->stride = hdr + max_sge * sizeof(struct ib_sge);
	wq->head = 0;
	wq->tail = 0;
	wq->wrids = NULL;
	wq->buf = kvcalloc(wq->size, wq->stride, GFP_KERNEL);
	return wq->buf ? 0 : -ENOMEM;
}

static void softib_wq_free(struct softib_wq *wq)
{
	softib_wrids_free(wq);
	kvfree(wq->buf);
	wq->buf = NULL;
}

/* Copy a receive WR into a ring; the caller holds the ring's lock. */
static int softib_wq_post_recv(struct softib_wq *wq, const struct ib_recv_wr *wr)
{
	struct softib_rwqe *rwqe;

	lockdep_assert_held(&wq->lock);
	if (wr->num_sge < 0 || wr->num_sge > wq->max_sge)
		return -EINVAL;
	if (softib_wq_used(wq) == wq->size)
		return -ENOMEM;
	softib_wrid_post(wq, wr->wr_id);
	rwqe = softib_wq_entry(wq, wq->head);
	rwqe->wr_id = wr->wr_id;
	rwqe->num_sge = wr->num_sge;
	memcpy(rwqe->sge, wr->sg_list, wr->num_sge * sizeof(struct ib_sge));
	wq->head++;
	return 0;
}

static void softib_srq_limit_work(struct work_struct *work)
{
	struct softib_srq *srq = container_of(work, struct softib_srq,
					      limit_work);
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
		.element.srq = &srq->ibsrq,
	};

	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

int softib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		      struct ib_udata *udata)
{
	struct softib_dev *sdev = to_sdev(ibsrq->device);
	struct softib_srq *srq = to_ssrq(ibsrq);
	struct ib_srq_attr *attr = &init->attr;
	int ret;

	if (udata)
		return -EOPNOTSUPP;
	if (!softib_srq)
		return -EOPNOTSUPP;
	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!attr->max_wr || attr->max_wr > SOFTIB_MAX_QP_WR ||
	    attr->max_sge > SOFTIB_MAX_SGE || attr->srq_limit > attr->max_wr)
		return -EINVAL;
	if (!softib_get_budget(&sdev->n_srq, SOFTIB_MAX_QP))
		return -ENOMEM;

	ret = softib_wq_init(&srq->rq, &softib_srq_key, attr->max_wr,
			     max(attr->max_sge, 1U), sizeof(struct softib_rwqe));
	if (!ret)
		ret = softib_wrids_init(&srq->rq, sdev, "SRQ");
	if (ret) {
		softib_wq_free(&srq->rq);
		atomic_dec(&sdev->n_srq);
		return ret;
	}
	srq->limit = attr->srq_limit;
	INIT_WORK(&srq->limit_work, softib_srq_limit_work);
	attr->max_wr = srq->rq.size;
	return 0;
}

int softib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		      enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct softib_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;

	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;	/* no resize */
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->rq.size)
			return -EINVAL;
		spin_lock_irqsave(&srq->rq.lock, flags);
		srq->limit = attr->srq_limit;
		spin_unlock_irqrestore(&srq->rq.lock, flags);
	}
	return 0;
}

int softib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct softib_srq *srq = to_ssrq(ibsrq);

	attr->max_wr = srq->rq.size;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

int softib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct softib_srq *srq = to_ssrq(ibsrq);

	cancel_work_sync(&srq->limit_work);
	softib_wq_free(&srq->rq);
	atomic_dec(&to_sdev(ibsrq->device)->n_srq);
	return 0;
}

int softib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr)
{
	struct softib_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;
	int ret = 0;

	if (softib_fault_post_srq(to_sdev(ibsrq->device))) {
		*bad_wr = wr;
		return -ENOMEM;
	}
	spin_lock_irqsave(&srq->rq.lock, flags);
	for (; wr; wr = wr->next) {
		ret = softib_wq_post_recv(&srq->rq, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&srq->rq.lock, flags);
	return ret;
}

static const enum ib_event_type softib_qp_ev_type[SOFTIB_EV_MAX] = {
	[SOFTIB_EV_FATAL] = IB_EVENT_QP_FATAL,
	[SOFTIB_EV_REQ_ERR] = IB_EVENT_QP_REQ_ERR,
	[SOFTIB_EV_ACCESS_ERR] = IB_EVENT_QP_ACCESS_ERR,
	[SOFTIB_EV_LAST_WQE] = IB_EVENT_QP_LAST_WQE_REACHED,
};

/* Deliver the QP's pending affiliated events, in enum softib_qp_ev order. */
static void softib_qp_event_work(struct work_struct *work)
{
	struct softib_qp *qp = container_of(work, struct softib_qp, event_work);
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
	};
	int i;

	for (i = 0; i < SOFTIB_EV_MAX; i++) {
		if (!test_and_clear_bit(i, &qp->pending_events))
			continue;
		atomic64_inc(&qp->sdev->qp_events[i]);
		ev.event = softib_qp_ev_type[i];
		if (qp->ibqp.event_handler)
			qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
}

int softib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		     struct ib_udata *udata)
{
	struct softib_dev *sdev = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);
	struct ib_qp_cap *cap = &init->cap;
	struct softib_port *port = NULL;
	u32 qpn;
	int ret;

	if (udata)
		return -EOPNOTSUPP;
	switch (init->qp_type) {
	case IB_QPT_SMI:
	case IB_QPT_GSI:
		if (init->port_num < 1 || init->port_num > sdev->nports)
			return -EINVAL;
		port = softib_port(sdev, init->port_num);
		break;
	case IB_QPT_UD:
	case IB_QPT_RC:
		break;
	default:
		/* UC, XRC and raw QPs are not implemented */
		return -EOPNOTSUPP;
	}
	if (init->create_flags & ~(IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK |
				   IB_QP_CREATE_IPOIB_UD_LSO))
		return -EOPNOTSUPP;
	/* LSO is an offload of UD QPs, and only when offloads are offered */
	if ((init->create_flags & IB_QP_CREATE_IPOIB_UD_LSO) &&
	    (!softib_offloads || init->qp_type != IB_QPT_UD))
		return -EOPNOTSUPP;
	if (cap->max_send_wr > SOFTIB_MAX_QP_WR ||
	    cap->max_recv_wr > SOFTIB_MAX_QP_WR ||
	    cap->max_send_sge > SOFTIB_MAX_SGE ||
	    cap->max_recv_sge > SOFTIB_MAX_SGE || cap->max_inline_data)
		return -EINVAL;
	if (softib_fault_create_qp(sdev))
		return -ENOMEM;
	if (!softib_get_budget(&sdev->n_qp, SOFTIB_MAX_QP))
		return -ENOMEM;

	qp->sdev = sdev;
	qp->state = IB_QPS_RESET;
	qp->port_num = init->port_num;
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->block_mcast_loopback = init->create_flags &
				   IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK;
	qp->scq = to_scq(init->send_cq);
	qp->rcq = to_scq(init->recv_cq);
	qp->srq = init->srq ? to_ssrq(init->srq) : NULL;
	if (init->qp_type == IB_QPT_GSI)
		qp->qkey = SOFTIB_QP1_QKEY;
	spin_lock_init(&qp->work_lock);
	qp->dying = false;
	INIT_DELAYED_WORK(&qp->send_work, softib_send_worker);
	INIT_WORK(&qp->err_work, softib_qp_err_work);
	INIT_WORK(&qp->event_work, softib_qp_event_work);

	/* an LSO QP's ring entries carry the header (softib_swqe_lso_hdr) */
	ret = softib_wq_init(&qp->sq, &softib_sq_key, cap->max_send_wr,
			     max(cap->max_send_sge, 1U),
			     sizeof(struct softib_swqe) +
			     (init->create_flags & IB_QP_CREATE_IPOIB_UD_LSO ?
			      SOFTIB_LSO_HDR_MAX : 0));
	if (!ret)
		ret = softib_wrids_init(&qp->sq, sdev, "SQ");
	if (!ret && (init->create_flags & IB_QP_CREATE_IPOIB_UD_LSO))
		ret = softib_lso_init(qp);
	if (ret)
		goto err_free_sq;
	ret = softib_wq_init(&qp->rq, &softib_rq_key,
			     qp->srq ? 0 : cap->max_recv_wr,
			     max(cap->max_recv_sge, 1U),
			     sizeof(struct softib_rwqe));
	/* with an SRQ the QP's own RQ stays empty: nothing to track */
	if (!ret && !qp->srq)
		ret = softib_wrids_init(&qp->rq, sdev, "RQ");
	if (ret)
		goto err_free_rq;
	/* RC to other nodes: a copy of the receive WQE being filled */
	if (init->qp_type == IB_QPT_RC && sdev->link) {
		ret = softib_rcr_create(qp, qp->srq ? qp->srq->rq.max_sge :
						     qp->rq.max_sge);
		if (ret)
			goto err_free_rq;
	}
	cap->max_send_wr = qp->sq.size;
	cap->max_send_sge = qp->sq.max_sge;
	if (!qp->srq) {
		cap->max_recv_wr = qp->rq.size;
		cap->max_recv_sge = qp->rq.max_sge;
	}

	/* Publish last: from here on the fabric can find the QP. */
	if (port) {
		struct softib_qp *none = NULL;
		int idx = init->qp_type == IB_QPT_SMI ? 0 : 1;

		if (!try_cmpxchg((struct softib_qp **)&port->special[idx],
				 &none, qp)) {
			ret = -EBUSY;
			goto err_free_rq;
		}
		ibqp->qp_num = idx;
	} else {
		ret = xa_alloc_cyclic(&sdev->qps, &qpn, qp,
				      XA_LIMIT(2, 0xfffffe), &sdev->next_qpn,
				      GFP_KERNEL);
		if (ret < 0)
			goto err_free_rcr;
		ibqp->qp_num = qpn;
	}
	softib_wrids_set_qpn(&qp->sq, ibqp->qp_num);
	softib_wrids_set_qpn(&qp->rq, ibqp->qp_num);
	return 0;

err_free_rcr:
	softib_rcr_destroy(qp);
err_free_rq:
	softib_wq_free(&qp->rq);
err_free_sq:
	softib_lso_free(qp);
	softib_wq_free(&qp->sq);
	atomic_dec(&sdev->n_qp);
	return ret;
}

static void softib_qp_entered_error(struct softib_qp *qp);

int softib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		     struct ib_udata *udata)
{
	struct softib_qp *qp = to_sqp(ibqp);
	struct softib_dev *sdev = qp->sdev;
	enum ib_qp_state cur, new;
	unsigned long flags;
	bool to_err = false;
	int ret = 0;

	if (udata)
		return -EOPNOTSUPP;

	spin_lock_irqsave(&qp->sq.lock, flags);
	spin_lock(&qp->rq.lock);

	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, new, ibqp->qp_type, mask)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if ((mask & IB_QP_PORT) &&
	    (attr->port_num < 1 || attr->port_num > sdev->nports ||
	     (qp->ibqp.qp_type <= IB_QPT_GSI && attr->port_num != qp->port_num))) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= SOFTIB_PKEY_TBL_LEN) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if ((mask & IB_QP_AV) &&
	    (attr->ah_attr.type != RDMA_AH_ATTR_TYPE_IB ||
	     rdma_ah_get_port_num(&attr->ah_attr) < 1 ||
	     rdma_ah_get_port_num(&attr->ah_attr) > sdev->nports)) {
		ret = -EINVAL;
		goto out_unlock;
	}

	if (mask & IB_QP_PORT)
		qp->port_num = attr->port_num;
	if (mask & IB_QP_PKEY_INDEX)
		WRITE_ONCE(qp->pkey_index, attr->pkey_index);
	if ((mask & IB_QP_QKEY) && ibqp->qp_type != IB_QPT_GSI)
		WRITE_ONCE(qp->qkey, attr->qkey);
	if (mask & IB_QP_AV)
		softib_av_from_attr(&qp->av, &attr->ah_attr);
	if (mask & IB_QP_DEST_QPN)
		WRITE_ONCE(qp->dest_qpn, attr->dest_qp_num);
	if (mask & IB_QP_RNR_RETRY) {
		qp->rnr_retry = attr->rnr_retry;
		qp->rnr_left = attr->rnr_retry;
	}
	if (mask & IB_QP_MIN_RNR_TIMER)
		WRITE_ONCE(qp->min_rnr_timer, attr->min_rnr_timer);
	if (mask & IB_QP_RETRY_CNT)
		qp->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_TIMEOUT)
		qp->timeout = attr->timeout;
	if (mask & IB_QP_PATH_MTU)
		qp->path_mtu = attr->path_mtu;
	if (mask & IB_QP_SQ_PSN)
		WRITE_ONCE(qp->sq_psn, attr->sq_psn & SOFTIB_PSN_MASK);
	if (mask & IB_QP_RQ_PSN)
		qp->rq_psn = attr->rq_psn & SOFTIB_PSN_MASK;

	if (mask & IB_QP_STATE) {
		qp->state = new;
		switch (new) {
		case IB_QPS_RESET:
			/*
			 * back to a fresh QP: WRs are discarded, not
			 * completed, and a stall (fault/stall_sends) ends, as
			 * a reset recovers a hung queue on an HCA; so does
			 * a receiver stuck by fault/rnr_stuck
			 */
			WRITE_ONCE(qp->sends_stalled, false);
			WRITE_ONCE(qp->rnr_stuck, false);
			WRITE_ONCE(qp->resp_fault, 0);
			qp->sq.tail = qp->sq.head;
			qp->rq.tail = qp->rq.head;
			softib_wrids_clear(&qp->sq);
			softib_wrids_clear(&qp->rq);
			softib_rcr_reset(qp, false);
			break;
		case IB_QPS_ERR:
			to_err = cur != IB_QPS_ERR;
			if (to_err)
				softib_rcr_reset(qp, true);
			break;
		default:
			break;
		}
	}

out_unlock:
	spin_unlock(&qp->rq.lock);
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	if (ret)
		return ret;

	if (to_err)
		softib_qp_entered_error(qp);
	else if ((mask & IB_QP_STATE) && new == IB_QPS_RTS)
		softib_qp_queue(qp, SOFTIB_QPW_SEND_NOW, 0);
	return 0;
}

/*
 * Receives flush now; sends flush, in order, in the send engine. An
 * SRQ-attached QP's last WQE event follows the error's own (if any).
 */
static void softib_qp_entered_error(struct softib_qp *qp)
{
	softib_flush_rq(qp);
	if (qp->srq)
		set_bit(SOFTIB_EV_LAST_WQE, &qp->pending_events);
	if (READ_ONCE(qp->pending_events))
		softib_qp_queue(qp, SOFTIB_QPW_EVENT, 0);
	softib_qp_queue(qp, SOFTIB_QPW_SEND_NOW, 0);
}

/*
 * The HCA fails the QP: it moves to ERR and, if it was not there (nor in
 * RESET) already, raises the affiliated events in "events" (bits of enum
 * softib_qp_ev; 0 when an error completion reports the failure).
 */
void softib_qp_fail(struct softib_qp *qp, unsigned long events)
{
	unsigned long flags;
	bool entered;
	int i;

	spin_lock_irqsave(&qp->sq.lock, flags);
	spin_lock(&qp->rq.lock);
	entered = qp->state != IB_QPS_ERR && qp->state != IB_QPS_RESET;
	if (entered) {
		qp->state = IB_QPS_ERR;
		softib_rcr_reset(qp, true);
		for_each_set_bit(i, &events, SOFTIB_EV_MAX)
			set_bit(i, &qp->pending_events);
	}
	spin_unlock(&qp->rq.lock);
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	if (entered)
		softib_qp_entered_error(qp);
}

/* The transport failed the QP (e.g. RNR or retry exceeded): move it to ERR. */
void softib_qp_to_error(struct softib_qp *qp)
{
	softib_qp_fail(qp, 0);
}

/* A responder or a fault failed the QP, maybe with events (fail_events). */
void softib_qp_err_work(struct work_struct *work)
{
	struct softib_qp *qp = container_of(work, struct softib_qp, err_work);

	softib_qp_fail(qp, xchg(&qp->fail_events, 0));
}

int softib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_qp_init_attr *init)
{
	struct softib_qp *qp = to_sqp(ibqp);
	unsigned long flags;

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	spin_lock_irqsave(&qp->sq.lock, flags);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->port_num = qp->port_num;
	attr->pkey_index = qp->pkey_index;
	attr->qkey = qp->qkey;
	attr->dest_qp_num = qp->dest_qpn;
	attr->rnr_retry = qp->rnr_retry;
	attr->min_rnr_timer = qp->min_rnr_timer;
	attr->retry_cnt = qp->retry_cnt;
	attr->timeout = qp->timeout;
	attr->sq_psn = READ_ONCE(qp->sq_psn);
	attr->rq_psn = READ_ONCE(qp->rq_psn);
	if (ibqp->qp_type == IB_QPT_RC) {
		attr->ah_attr.type = RDMA_AH_ATTR_TYPE_IB;
		rdma_ah_set_dlid(&attr->ah_attr, qp->av.dlid);
		rdma_ah_set_sl(&attr->ah_attr, qp->av.sl);
		rdma_ah_set_port_num(&attr->ah_attr, qp->av.port_num);
	}
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	attr->path_mtu = qp->path_mtu ?: SOFTIB_MTU;
	attr->cap.max_send_wr = qp->sq.size;
	attr->cap.max_send_sge = qp->sq.max_sge;
	if (!qp->srq) {
		attr->cap.max_recv_wr = qp->rq.size;
		attr->cap.max_recv_sge = qp->rq.max_sge;
	}

	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->port_num = qp->port_num;
	return 0;
}

/*
 * Queue one of a QP's work items. This is the only place that queues
 * them: once destroy_qp has set "dying" nothing is queued any more, so
 * each item, once cancelled synchronously, stays idle. Any context.
 * Returns whether the item was queued.
 */
bool softib_qp_queue(struct softib_qp *qp, enum softib_qp_work which,
		     unsigned long delay)
{
	struct workqueue_struct *wq = qp->sdev->wq;
	unsigned long flags;
	bool queued = false;

	spin_lock_irqsave(&qp->work_lock, flags);
	if (qp->dying)
		goto out_unlock;
	switch (which) {
	case SOFTIB_QPW_SEND:
		queued = queue_delayed_work(wq, &qp->send_work, delay);
		break;
	case SOFTIB_QPW_SEND_NOW:
		queued = mod_delayed_work(wq, &qp->send_work, 0);
		break;
	case SOFTIB_QPW_ERR:
		queued = queue_work(wq, &qp->err_work);
		break;
	case SOFTIB_QPW_EVENT:
		queued = queue_work(wq, &qp->event_work);
		break;
	}
out_unlock:
	spin_unlock_irqrestore(&qp->work_lock, flags);
	return queued;
}

/*
 * Remove every completion naming "qp" from a CQ, keeping the order of the
 * others, as mlx4/mlx5 do for kernel QPs: consumers (in-tree IPoIB CM)
 * take wc->qp->qp_context for each completion, which would be freed.
 * Returns how many were removed.
 */
static u32 softib_cq_purge_qp(struct softib_cq *cq, struct softib_qp *qp)
{
	unsigned long flags;
	u32 i, src, dst, tail, kept = 0;

	spin_lock_irqsave(&cq->lock, flags);
	tail = (cq->head + cq->size - cq->count) % cq->size;
	dst = tail;
	for (i = 0; i < cq->count; i++) {
		src = (tail + i) % cq->size;
		if (cq->ring[src].qp == &qp->ibqp)
			continue;
		if (src != dst)
			cq->ring[dst] = cq->ring[src];
		dst = (dst + 1) % cq->size;
		kept++;
	}
	i = cq->count - kept;
	cq->count = kept;
	cq->head = dst;
	spin_unlock_irqrestore(&cq->lock, flags);
	return i;
}

static void softib_mcast_detach_qp(struct softib_dev *sdev, struct softib_qp *qp);

int softib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct softib_qp *qp = to_sqp(ibqp);
	struct softib_dev *sdev = qp->sdev;
	unsigned long flags;
	u32 purged;

	/*
	 * 1. "dying": from now on softib_qp_queue() refuses to queue any of
	 *    the QP's work items, whoever asks: its own engine (RNR back-off,
	 *    budget, flush after an error), its error work, a consumer's
	 *    event handler posting a WR from our event work (IPoIB CM posts
	 *    its drain WR on LAST_WQE_REACHED), or another QP's engine
	 *    failing this responder. WRs posted from here on stay in the
	 *    ring and are dropped with it, as on hardware.
	 * 2. Unpublish, so the fabric can no longer find the QP, and detach
	 *    it from every multicast group.
	 * 3. Wait for deliveries already in flight: they run under RCU. After
	 *    this no other QP's engine holds a pointer to this QP, so none
	 *    adds a receive completion for it or asks for its error work.
	 *    An expedited grace period: ULPs destroy QPs one after another
	 *    (IPoIB-CM closes thousands of connections in a loop), and a
	 *    normal one each, tens of milliseconds in a guest, made closing
	 *    10,000 connections take minutes.
	 * 4. Cancel the work items synchronously. Their order does not
	 *    matter: none can be queued again (1), so each is idle once its
	 *    cancel returns, even if another one was running meanwhile.
	 * 5. Now nothing can add a completion naming the QP: purge them from
	 *    its CQs (the consumer no longer calls us for this QP).
	 * 6. The rings (and their outstanding WRs) go last.
	 */
	spin_lock_irqsave(&qp->work_lock, flags);
	qp->dying = true;
	spin_unlock_irqrestore(&qp->work_lock, flags);

	if (ibqp->qp_type == IB_QPT_SMI || ibqp->qp_type == IB_QPT_GSI) {
		struct softib_port *port = softib_port(sdev, qp->port_num);

		RCU_INIT_POINTER(port->special[ibqp->qp_num], NULL);
	} else {
		xa_erase(&sdev->qps, ibqp->qp_num);
	}
	softib_mcast_detach_qp(sdev, qp);
	synchronize_rcu_expedited();

	cancel_work_sync(&qp->err_work);
	cancel_delayed_work_sync(&qp->send_work);
	cancel_work_sync(&qp->event_work);
	/* after the engine: only the engine arms the RC timer */
	softib_rcr_destroy(qp);

	purged = softib_cq_purge_qp(qp->scq, qp);
	if (qp->rcq != qp->scq)
		purged += softib_cq_purge_qp(qp->rcq, qp);
	if (purged)
		atomic64_add(purged, &sdev->purged_cqes);

	softib_wq_free(&qp->rq);
	softib_lso_free(qp);
	softib_wq_free(&qp->sq);
	atomic_dec(&sdev->n_qp);
	return 0;
}

int softib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr)
{
	struct softib_qp *qp = to_sqp(ibqp);
	struct softib_wq *sq = &qp->sq;
	unsigned long flags;
	int ret = 0;

	/*
	 * As on mlx4/mlx5, the QP's state is not checked: a WR is queued in
	 * any state and the state decides what becomes of it (the send
	 * engine runs in RTS, flushes in SQE and ERR, waits otherwise; see
	 * softib.rst). Nor is IB_WR_LSO checked against the QP: the engine
	 * fails it on a QP that has no LSO, as hardware fails the WQE.
	 */
	spin_lock_irqsave(&sq->lock, flags);
	for (; wr; wr = wr->next) {
		bool rc = ibqp->qp_type == IB_QPT_RC;
		struct softib_swqe *wqe;
		int i;

		/* only UD WRs are struct ib_ud_wr; RC sends need no address */
		if ((wr->opcode != IB_WR_SEND &&
		     wr->opcode != IB_WR_SEND_WITH_IMM &&
		     wr->opcode != IB_WR_LSO) ||
		    wr->num_sge < 0 || wr->num_sge > sq->max_sge ||
		    (wr->send_flags & IB_SEND_INLINE) ||
		    (!rc && !ud_wr(wr)->ah)) {
			ret = -EINVAL;
			break;
		}
		if (softib_wq_used(sq) == sq->size) {
			ret = -ENOMEM;
			break;
		}
		wqe = softib_wq_entry(sq, sq->head);
		wqe->wr_id = wr->wr_id;
		wqe->opcode = wr->opcode;
		wqe->send_flags = wr->send_flags;
		wqe->imm = wr->ex.imm_data;
		wqe->num_sge = wr->num_sge;
		wqe->length = 0;
		for (i = 0; i < wr->num_sge; i++) {
			wqe->sge[i] = wr->sg_list[i];
			wqe->length += wr->sg_list[i].length;
		}
		if (!rc) {
			const struct ib_ud_wr *ud = ud_wr(wr);

			wqe->av = to_sah(ud->ah)->av;
			wqe->remote_qpn = ud->remote_qpn;
			wqe->remote_qkey = ud->remote_qkey;
			wqe->pkey_index = ud->pkey_index;
			wqe->lso_hlen = 0;
			if (wr->opcode == IB_WR_LSO && qp->lso) {
				ret = softib_lso_post(qp, wqe, ud);
				if (ret)
					break;
			}
		}
		softib_wrid_post(sq, wr->wr_id);
		sq->head++;
	}
	if (ret)
		*bad_wr = wr;
	/*
	 * A pending RNR back-off is not cut short by new posts. Below RTS
	 * (and in SQD) the WRs wait: the move to RTS starts the engine.
	 */
	if (softib_qp_sq_runs(qp->state))
		softib_qp_queue(qp, SOFTIB_QPW_SEND, 0);
	spin_unlock_irqrestore(&sq->lock, flags);
	return ret;
}

int softib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr)
{
	struct softib_qp *qp = to_sqp(ibqp);
	unsigned long flags;
	bool flush;
	int ret = 0;

	if (qp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}
	/*
	 * Any state, as on mlx4/mlx5: receives posted before RTR wait for
	 * it (the fabric delivers from RTR on), in ERR they flush.
	 */
	spin_lock_irqsave(&qp->rq.lock, flags);
	for (; wr; wr = wr->next) {
		ret = softib_wq_post_recv(&qp->rq, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	flush = qp->state == IB_QPS_ERR;
	spin_unlock_irqrestore(&qp->rq.lock, flags);
	/* a receive posted to a QP in ERR completes at once, flushed */
	if (flush)
		softib_flush_rq(qp);
	return ret;
}

/* Multicast groups are found by MLID; writers hold mcast_lock. */
static struct softib_mcast *softib_mcast_find(struct softib_dev *sdev,
					      u16 mlid)
{
	struct softib_mcast *mc;

	list_for_each_entry_rcu(mc, &sdev->mcast, list,
				lockdep_is_held(&sdev->mcast_lock))
		if (mc->mlid == mlid)
			return mc;
	return NULL;
}

int softib_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct softib_dev *sdev = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);
	struct softib_mcast_attach *att, *a;
	struct softib_mcast *mc, *new_mc;
	int ret = 0;

	if (ibqp->qp_type != IB_QPT_UD || lid < SOFTIB_MLID_BASE ||
	    lid == SOFTIB_LID_PERMISSIVE || gid->raw[0] != 0xff)
		return -EINVAL;

	/* allocate outside the lock; most attaches join an existing group */
	att = kzalloc(sizeof(*att), GFP_KERNEL);
	new_mc = kzalloc(sizeof(*new_mc), GFP_KERNEL);
	if (!att || !new_mc) {
		ret = -ENOMEM;
		goto out_free;
	}
	att->qp = qp;

	spin_lock_bh(&sdev->mcast_lock);
	mc = softib_mcast_find(sdev, lid);
	if (!mc) {
		if (sdev->n_mcast >= SOFTIB_MAX_MCAST_GRP) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		mc = new_mc;
		new_mc = NULL;
		mc->mlid = lid;
		mc->mgid = *gid;
		INIT_LIST_HEAD(&mc->attached);
		list_add_rcu(&mc->list, &sdev->mcast);
		sdev->n_mcast++;
	} else if (memcmp(&mc->mgid, gid, sizeof(*gid))) {
		ret = -EINVAL;	/* one MLID carries one MGID */
		goto out_unlock;
	}
	list_for_each_entry(a, &mc->attached, list) {
		if (a->qp == qp)
			goto out_unlock;	/* attaching twice is harmless */
	}
	if (mc->n_attached >= SOFTIB_MAX_MCAST_ATTACH) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	list_add_rcu(&att->list, &mc->attached);
	mc->n_attached++;
	att = NULL;
out_unlock:
	spin_unlock_bh(&sdev->mcast_lock);
out_free:
	kfree(att);
	kfree(new_mc);
	return ret;
}

/* Drop one attachment; frees the group with its last member. */
static void softib_mcast_unlink(struct softib_dev *sdev,
				struct softib_mcast *mc,
				struct softib_mcast_attach *a)
{
	lockdep_assert_held(&sdev->mcast_lock);
	list_del_rcu(&a->list);
	kfree_rcu(a, rcu);
	if (--mc->n_attached)
		return;
	list_del_rcu(&mc->list);
	sdev->n_mcast--;
	kfree_rcu(mc, rcu);
}

int softib_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct softib_dev *sdev = to_sdev(ibqp->device);
	struct softib_mcast_attach *a;
	struct softib_mcast *mc;
	int ret = -EINVAL;

	spin_lock_bh(&sdev->mcast_lock);
	mc = softib_mcast_find(sdev, lid);
	if (!mc || memcmp(&mc->mgid, gid, sizeof(*gid)))
		goto out_unlock;
	list_for_each_entry(a, &mc->attached, list) {
		if (a->qp == to_sqp(ibqp)) {
			softib_mcast_unlink(sdev, mc, a);
			ret = 0;
			break;
		}
	}
out_unlock:
	spin_unlock_bh(&sdev->mcast_lock);
	return ret;
}

static void softib_mcast_detach_qp(struct softib_dev *sdev, struct softib_qp *qp)
{
	struct softib_mcast_attach *a, *atmp;
	struct softib_mcast *mc, *mtmp;

	spin_lock_bh(&sdev->mcast_lock);
	list_for_each_entry_safe(mc, mtmp, &sdev->mcast, list)
		list_for_each_entry_safe(a, atmp, &mc->attached, list)
			if (a->qp == qp)
				softib_mcast_unlink(sdev, mc, a);
	spin_unlock_bh(&sdev->mcast_lock);
}

/* Called after unregistration; every QP detached itself when destroyed. */
void softib_mcast_cleanup(struct softib_dev *sdev)
{
	WARN_ON(!list_empty(&sdev->mcast));
	rcu_barrier();	/* kfree_rcu() callbacks of groups and attachments */
}
