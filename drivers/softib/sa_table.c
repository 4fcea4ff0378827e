// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the built-in SA's GetTable queries, and the RMPP sender that
 * carries their answers.
 *
 * saquery and the other fabric tools ask the SA for whole tables:
 * NodeRecord, PortInfoRecord, PathRecord and MCMemberRecord GetTable.
 * The answer is one GetTableResp of any length, sent with RMPP (IBTA
 * 13.6) in segments of 200 bytes of records after the SA header; the
 * AttributeOffset says how long each record is (in 8-byte words).
 *
 * The receiver is ib_mad at the requester's port (mad_rmpp.c): it takes
 * segment 1, answers with an ACK that opens a window, and acks again
 * each time the window is full and when the last segment is in. So the
 * sender here sends segment 1, then on every ACK the segments up to the
 * window the ACK gives, and forgets the transfer when the last segment
 * is acked. A transfer with no ACK for SA_RMPP_TIMEOUT_MS has its
 * unacked segments sent again, SA_RMPP_RETRIES times at most, then it
 * is dropped (the requester times out and asks again).
 *
 * Transfers are bounded (SA_RMPP_MAX in flight, each at most
 * SA_TABLE_MAX_BYTES of records): a new one beyond the bound evicts the
 * oldest. debugfs stats counts them (sa_rmpp_*).
 *
 * Everything here runs in process context: the requester's send engine
 * (the request and the ACKs come from its QP1) or the retry work.
 * sa_rmpp_lock (a mutex) serialises the transfers and is held while
 * segments are sent; delivery takes only the receiving QP's spinlocks.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/slab.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_smi.h>

#include "softib.h"

#define SA_RMPP_MAX		16
#define SA_RMPP_TIMEOUT_MS	1000
#define SA_RMPP_RETRIES		5
#define SA_TABLE_MAX_BYTES	(1024 * 1024)
/* RespTimeValue of our segments: 2^18 x 4.096 us, about 1 s */
#define SA_RMPP_RESP_TIME	18

/* SA status: the table is larger than this SA hands out */
#define SA_ERR_NO_RESOURCES	0x0100

/* record sizes on the wire, and their AttributeOffset in 8-byte words */
#define NODE_REC_LEN		108
#define PORTINFO_REC_LEN	68
#define PATH_REC_LEN		64
#define MCMEMBER_REC_LEN	52

/* NodeRecord: LID, reserved, NodeInfo (40 bytes), NodeDescription */
#define NR_LID			0
#define NR_NODE_INFO		4
#define NR_DESC			44
/* PortInfoRecord: EndportLID, PortNum, Options, PortInfo (64 bytes) */
#define PIR_LID			0
#define PIR_PORT		2
#define PIR_PORT_INFO		4
#define PIR_CAP_MASK		(PIR_PORT_INFO + 20)

/* One field that a ComponentMask bit selects: bytes compared as they are */
struct sa_comp {
	u8 bit;
	u8 off;
	u8 len;
};

/*
 * The byte-aligned components of each record that a query may select
 * on (IBTA 15.2.5); the others are not compared.
 */
static const struct sa_comp node_comps[] = {
	{ 0, NR_LID, 2 },
	{ 4, NR_NODE_INFO + 2, 1 },	/* NodeType */
	{ 5, NR_NODE_INFO + 3, 1 },	/* NumPorts */
	{ 6, NR_NODE_INFO + 4, 8 },	/* SystemImageGUID */
	{ 7, NR_NODE_INFO + 12, 8 },	/* NodeGUID */
	{ 8, NR_NODE_INFO + 20, 8 },	/* PortGUID */
	{ 10, NR_NODE_INFO + 30, 2 },	/* DeviceID */
	{ 12, NR_NODE_INFO + 36, 1 },	/* LocalPortNum */
	{ 13, NR_NODE_INFO + 37, 3 },	/* VendorID */
	{ 14, NR_DESC, 64 },		/* NodeDescription */
};

static const struct sa_comp portinfo_comps[] = {
	{ 0, PIR_LID, 2 },
	{ 1, PIR_PORT, 1 },
	{ 4, PIR_PORT_INFO + 8, 8 },	/* GIDPrefix */
	{ 5, PIR_PORT_INFO + 16, 2 },	/* LID */
	{ 6, PIR_PORT_INFO + 18, 2 },	/* MasterSMLID */
};

#define PIR_COMP_CAP_MASK	7	/* CapabilityMask: the bits asked for set */

static const struct sa_comp path_comps[] = {
	{ 2, 8, 16 },		/* DGID */
	{ 3, 24, 16 },		/* SGID */
	{ 4, 40, 2 },		/* DLID */
	{ 5, 42, 2 },		/* SLID */
};

static bool sa_match(const struct sa_comp *c, size_t n, u64 comp,
		     const u8 *rec, const u8 *q)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((comp & BIT_ULL(c[i].bit)) &&
		    memcmp(rec + c[i].off, q + c[i].off, c[i].len))
			return false;
	return true;
}

/* room for one more record, zeroed; NULL beyond SA_TABLE_MAX_BYTES */
u8 *softib_sa_table_slot(struct softib_sa_table *t)
{
	u32 stride = ALIGN(t->rec_len, 8);
	u8 *buf;

	if (t->len + stride > t->cap) {
		u32 cap = max_t(u32, 2 * t->cap, 16 * stride);

		if (t->len + stride > SA_TABLE_MAX_BYTES)
			return NULL;
		cap = min_t(u32, cap, SA_TABLE_MAX_BYTES);
		buf = kvmalloc(cap, GFP_KERNEL);
		if (!buf)
			return NULL;
		if (t->len)
			memcpy(buf, t->buf, t->len);
		kvfree(t->buf);
		t->buf = buf;
		t->cap = cap;
	}
	buf = t->buf + t->len;
	memset(buf, 0, stride);
	t->len += stride;
	return buf;
}

/* take back the record softib_sa_table_slot() last gave: it did not match */
static void sa_table_unslot(struct softib_sa_table *t)
{
	t->len -= ALIGN(t->rec_len, 8);
}

/*
 * The fabric's nodes as the SA lists them: each CA port with a LID (a CA
 * port is a node record of its own, with its own LID), then the switch
 * through its port 0.
 */
struct sa_end {
	struct softib_port *port;
	bool is_switch;
	u16 lid;
	union ib_gid gid;
};

static u32 sa_ends(struct softib_dev *sdev, struct sa_end *e)
{
	u32 i, n = 0;

	for (i = 1; i <= sdev->nports + 1; i++) {
		bool sw = i > sdev->nports;
		struct softib_port *p = sw ? &sdev->sw.ports[0] :
					     softib_port(sdev, i);
		u16 lid = READ_ONCE(p->lid);

		if (!lid)
			continue;
		e[n].port = p;
		e[n].is_switch = sw;
		e[n].lid = lid;
		e[n].gid.global.subnet_prefix =
			cpu_to_be64(READ_ONCE(p->gid_prefix));
		e[n].gid.global.interface_id = sw ?
			cpu_to_be64(softib_switch_guid) :
			softib_port_guid(i);
		n++;
	}
	return n;
}

static int sa_node_table(struct softib_dev *sdev, const struct sa_end *e,
			 u32 n, u64 comp, const u8 *q,
			 struct softib_sa_table *t)
{
	struct ib_smp *smp;
	u32 i;
	u8 *r;

	smp = kzalloc(sizeof(*smp), GFP_KERNEL);
	if (!smp)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		r = softib_sa_table_slot(t);
		if (!r)
			goto out_full;
		put_unaligned_be16(e[i].lid, r + NR_LID);
		if (e[i].is_switch) {
			softib_sma_node_info(smp, RDMA_NODE_IB_SWITCH,
					     sdev->nports + sdev->link_ports,
					     softib_switch_guid,
					     softib_switch_guid,
					     SOFTIB_SW_DEVICE_ID, 0);
			memcpy(r + NR_DESC, sdev->sw.node_desc, 64);
		} else {
			softib_sma_node_info(smp, RDMA_NODE_IB_CA,
					     sdev->nports, softib_node_guid,
					     be64_to_cpu(e[i].gid.global.interface_id),
					     SOFTIB_DEVICE_ID, e[i].port->num);
			memcpy(r + NR_DESC, sdev->ibdev.node_desc, 64);
		}
		memcpy(r + NR_NODE_INFO, smp->data, 40);
		if (!sa_match(node_comps, ARRAY_SIZE(node_comps), comp, r, q))
			sa_table_unslot(t);
	}
	kfree(smp);
	return 0;

out_full:
	kfree(smp);
	return -ENOSPC;
}

/* one PortInfoRecord of "p", port "num" of the node at "lid" */
static int sa_portinfo_rec(struct softib_port *p, u16 lid, u32 num,
			   struct ib_smp *smp, u64 comp, const u8 *q,
			   struct softib_sa_table *t)
{
	unsigned long flags;
	u32 cap, want;
	u8 *r;

	r = softib_sa_table_slot(t);
	if (!r)
		return -ENOSPC;
	spin_lock_irqsave(&p->lock, flags);
	/* as a Get without the M_Key: the SA shows no key */
	softib_sma_port_info(p, num, false, smp);
	spin_unlock_irqrestore(&p->lock, flags);
	put_unaligned_be16(lid, r + PIR_LID);
	r[PIR_PORT] = num;
	memcpy(r + PIR_PORT_INFO, smp->data, 64);
	cap = get_unaligned_be32(r + PIR_CAP_MASK);
	want = get_unaligned_be32(q + PIR_CAP_MASK);
	if (!sa_match(portinfo_comps, ARRAY_SIZE(portinfo_comps), comp, r, q) ||
	    ((comp & BIT_ULL(PIR_COMP_CAP_MASK)) && (cap & want) != want))
		sa_table_unslot(t);
	return 0;
}

static int sa_portinfo_table(struct softib_dev *sdev, const struct sa_end *e,
			     u32 n, u64 comp, const u8 *q,
			     struct softib_sa_table *t)
{
	struct ib_smp *smp;
	int ret = 0;
	u32 i, k;

	smp = kzalloc(sizeof(*smp), GFP_KERNEL);
	if (!smp)
		return -ENOMEM;
	for (i = 0; i < n && !ret; i++) {
		if (!e[i].is_switch) {
			ret = sa_portinfo_rec(e[i].port, e[i].lid,
					      e[i].port->num, smp, comp, q, t);
			continue;
		}
		/* a switch has a record for each of its ports, all at its LID */
		for (k = 0; k <= sdev->nports && !ret; k++)
			ret = sa_portinfo_rec(&sdev->sw.ports[k], e[i].lid, k,
					      smp, comp, q, t);
	}
	kfree(smp);
	return ret;
}

/*
 * The P_Key of a path between two ends: the one asked for, else, as
 * OpenSM picks it, the lowest P_Key the two ends share
 * (softib_shared_pkey()). 0 if there is none.
 */
static u16 sa_path_pkey(struct softib_port *s, struct softib_port *d,
			bool given, u16 want)
{
	u16 best = 0, pkey;
	int i;

	if (given)
		return softib_shared_pkey(s, d, want);
	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++) {
		pkey = softib_shared_pkey(s, d, READ_ONCE(s->pkeys[i]));
		if (pkey && (!best || (pkey & 0x7fff) < (best & 0x7fff)))
			best = pkey;
	}
	return best;
}

static int sa_path_table(struct softib_dev *sdev, const struct sa_end *e,
			 u32 n, u64 comp, const u8 *q,
			 struct softib_sa_table *t)
{
	bool given = comp & BIT_ULL(13);	/* PKey */
	u16 want = get_unaligned_be16(q + 50);
	u32 i, j;
	u16 pkey;
	u8 *r;

	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++) {
			pkey = sa_path_pkey(e[i].port, e[j].port, given, want);
			if (!pkey)
				continue;
			r = softib_sa_table_slot(t);
			if (!r)
				return -ENOSPC;
			softib_sa_path_fill(r, &e[i].gid, &e[j].gid, e[i].lid,
					    e[j].lid, pkey, 0, SOFTIB_MTU);
			if (!sa_match(path_comps, ARRAY_SIZE(path_comps), comp,
				      r, q))
				sa_table_unslot(t);
		}
	}
	return 0;
}

/* One transfer: a GetTableResp on its way to a requester. */
struct sa_rmpp {
	struct list_head list;		/* sdev->sa_rmpp, oldest first */
	u16 dlid;			/* the requester: LID, P_Key, TID */
	u16 pkey;
	__be64 tid;
	struct ib_sa_mad hdr;		/* MAD and SA headers of each segment */
	u8 *data;			/* the records */
	u32 len;
	u32 nseg;
	u32 last_ack;			/* segments acked */
	u32 sent;			/* segments sent */
	u32 window;			/* the receiver takes up to this one */
	unsigned int retries;
	unsigned long deadline;		/* jiffies: no ACK by then, resend */
};

static void sa_rmpp_free(struct softib_dev *sdev, struct sa_rmpp *x)
{
	lockdep_assert_held(&sdev->sa_rmpp_lock);
	list_del(&x->list);
	sdev->n_sa_rmpp--;
	kvfree(x->data);
	kfree(x);
}

/* Send segment "seg" (1-based) of a transfer. */
static void sa_rmpp_send_seg(struct softib_dev *sdev, struct sa_rmpp *x,
			     u32 seg, struct ib_sa_mad *mad)
{
	u32 off = (seg - 1) * IB_MGMT_SA_DATA;
	u32 n = min_t(u32, x->len - min(off, x->len), IB_MGMT_SA_DATA);
	u8 flags = IB_MGMT_RMPP_FLAG_ACTIVE;
	u32 paylen = 0;

	*mad = x->hdr;
	memset(mad->data, 0, sizeof(mad->data));
	memcpy(mad->data, x->data + off, n);
	mad->rmpp_hdr.rmpp_version = IB_MGMT_RMPP_VERSION;
	mad->rmpp_hdr.rmpp_type = IB_MGMT_RMPP_TYPE_DATA;
	/*
	 * PayloadLength counts the SA header of every segment: in the first
	 * the whole transfer's, in the last its own (mad_rmpp.c, 13.6.2.3)
	 */
	if (seg == 1) {
		flags |= IB_MGMT_RMPP_FLAG_FIRST;
		paylen = x->nseg * IB_MGMT_RMPP_DATA -
			 (x->nseg * IB_MGMT_SA_DATA - x->len);
	}
	if (seg == x->nseg) {
		flags |= IB_MGMT_RMPP_FLAG_LAST;
		paylen = IB_MGMT_RMPP_DATA - IB_MGMT_SA_DATA + n;
	}
	ib_set_rmpp_flags(&mad->rmpp_hdr, flags);
	ib_set_rmpp_resptime(&mad->rmpp_hdr, SA_RMPP_RESP_TIME);
	mad->rmpp_hdr.seg_num = cpu_to_be32(seg);
	mad->rmpp_hdr.paylen_newwin = cpu_to_be32(paylen);
	softib_sm_send(sdev, softib_sm_lid, x->dlid, 1, x->pkey, mad);
}

/* Send what the window allows; the transfer's clock starts again. */
static void sa_rmpp_push(struct softib_dev *sdev, struct sa_rmpp *x,
			 struct ib_sa_mad *mad)
{
	u32 end = min(x->window, x->nseg);

	lockdep_assert_held(&sdev->sa_rmpp_lock);
	while (x->sent < end) {
		x->sent++;
		sa_rmpp_send_seg(sdev, x, x->sent, mad);
		atomic64_inc(&sdev->sa_rmpp_segments);
	}
	x->deadline = jiffies + msecs_to_jiffies(SA_RMPP_TIMEOUT_MS);
}

static void sa_rmpp_work(struct work_struct *work)
{
	struct softib_dev *sdev = container_of(to_delayed_work(work),
					       struct softib_dev,
					       sa_rmpp_work);
	struct sa_rmpp *x, *tmp;
	struct ib_sa_mad *mad;

	mad = kmalloc(sizeof(*mad), GFP_KERNEL);
	mutex_lock(&sdev->sa_rmpp_lock);
	list_for_each_entry_safe(x, tmp, &sdev->sa_rmpp, list) {
		if (time_before(jiffies, x->deadline))
			continue;
		if (!mad || ++x->retries > SA_RMPP_RETRIES) {
			atomic64_inc(&sdev->sa_rmpp_aborted);
			sa_rmpp_free(sdev, x);
			continue;
		}
		/* go back to the last ACK: what followed it was lost */
		x->sent = x->last_ack;
		sa_rmpp_push(sdev, x, mad);
	}
	if (!list_empty(&sdev->sa_rmpp))
		queue_delayed_work(sdev->wq, &sdev->sa_rmpp_work,
				   msecs_to_jiffies(SA_RMPP_TIMEOUT_MS / 2));
	mutex_unlock(&sdev->sa_rmpp_lock);
	kfree(mad);
}

/*
 * Start sending a table to the requester of "req" at "dlid": the answer's
 * headers are in "resp" (status, AttributeOffset). Takes t->buf.
 */
static void sa_rmpp_start(struct softib_dev *sdev, u16 dlid, u16 pkey,
			  const struct ib_sa_mad *resp,
			  struct softib_sa_table *t)
{
	struct sa_rmpp *x, *old;
	struct ib_sa_mad *mad;

	x = kzalloc(sizeof(*x), GFP_KERNEL);
	mad = kmalloc(sizeof(*mad), GFP_KERNEL);
	if (!x || !mad) {
		kfree(x);
		kfree(mad);
		kvfree(t->buf);
		return;	/* a lost answer: the requester asks again */
	}
	x->dlid = dlid;
	x->pkey = pkey;
	x->tid = resp->mad_hdr.tid;
	x->hdr = *resp;
	x->data = t->buf;
	x->len = t->len;
	x->nseg = max_t(u32, 1, DIV_ROUND_UP(t->len, IB_MGMT_SA_DATA));
	/* segment 1 alone: its ACK opens the receiver's window */
	x->window = 1;
	t->buf = NULL;

	mutex_lock(&sdev->sa_rmpp_lock);
	/* the same request again (the requester timed out): start over */
	list_for_each_entry(old, &sdev->sa_rmpp, list) {
		if (old->tid == x->tid && old->dlid == dlid) {
			sa_rmpp_free(sdev, old);
			break;
		}
	}
	if (sdev->n_sa_rmpp >= SA_RMPP_MAX) {
		old = list_first_entry(&sdev->sa_rmpp, struct sa_rmpp, list);
		sa_rmpp_free(sdev, old);
		atomic64_inc(&sdev->sa_rmpp_evicted);
	}
	list_add_tail(&x->list, &sdev->sa_rmpp);
	sdev->n_sa_rmpp++;
	atomic64_inc(&sdev->sa_rmpp_started);
	sa_rmpp_push(sdev, x, mad);
	/* a one-segment answer needs no ACK: done */
	if (x->nseg == 1)
		sa_rmpp_free(sdev, x);
	else
		queue_delayed_work(sdev->wq, &sdev->sa_rmpp_work,
				   msecs_to_jiffies(SA_RMPP_TIMEOUT_MS / 2));
	mutex_unlock(&sdev->sa_rmpp_lock);
	kfree(mad);
}

/*
 * An RMPP ACK, STOP or ABORT from a requester's ib_mad for one of our
 * transfers (the same TID, from the requester's LID). Returns false if
 * "req" is no such MAD.
 */
bool softib_sa_rmpp_recv(struct softib_dev *sdev, u16 slid,
			 const struct ib_sa_mad *req)
{
	const struct ib_rmpp_hdr *h = &req->rmpp_hdr;
	struct ib_sa_mad *mad;
	struct sa_rmpp *x;
	u32 seg, win;

	if (!(ib_get_rmpp_flags((struct ib_rmpp_hdr *)h) &
	      IB_MGMT_RMPP_FLAG_ACTIVE) ||
	    h->rmpp_type == IB_MGMT_RMPP_TYPE_DATA)
		return false;

	mad = kmalloc(sizeof(*mad), GFP_KERNEL);
	mutex_lock(&sdev->sa_rmpp_lock);
	list_for_each_entry(x, &sdev->sa_rmpp, list)
		if (x->tid == req->mad_hdr.tid && x->dlid == slid)
			goto found;
	goto out_unlock;
found:
	if (h->rmpp_type != IB_MGMT_RMPP_TYPE_ACK) {
		/* the receiver gave up (STOP, ABORT) */
		atomic64_inc(&sdev->sa_rmpp_aborted);
		sa_rmpp_free(sdev, x);
		goto out_unlock;
	}
	seg = be32_to_cpu(h->seg_num);
	win = be32_to_cpu(h->paylen_newwin);
	/* an old or impossible ACK changes nothing (13.6.3.3) */
	if (seg < x->last_ack || seg > x->sent || win < seg)
		goto out_unlock;
	x->last_ack = seg;
	x->window = max(x->window, win);
	x->retries = 0;
	if (x->last_ack == x->nseg) {
		atomic64_inc(&sdev->sa_rmpp_done);
		sa_rmpp_free(sdev, x);
	} else if (mad) {
		sa_rmpp_push(sdev, x, mad);
	}
out_unlock:
	mutex_unlock(&sdev->sa_rmpp_lock);
	kfree(mad);
	return true;
}

/* the tables built from the fabric's nodes; MCMemberRecord's from sa.c */
static const struct {
	u16 attr;
	u32 rec_len;
	int (*fill)(struct softib_dev *sdev, const struct sa_end *e, u32 n,
		    u64 comp, const u8 *q, struct softib_sa_table *t);
} sa_tables[] = {
	{ IB_SA_ATTR_NODE_REC, NODE_REC_LEN, sa_node_table },
	{ IB_SA_ATTR_PORT_INFO_REC, PORTINFO_REC_LEN, sa_portinfo_table },
	{ IB_SA_ATTR_PATH_REC, PATH_REC_LEN, sa_path_table },
};

/*
 * A GetTable request at the built-in SA: the table goes back by RMPP,
 * or a one-segment answer with an error status.
 */
void softib_sa_get_table(struct softib_dev *sdev, const struct softib_pkt *pkt,
			 const struct ib_sa_mad *req, struct ib_sa_mad *resp)
{
	struct softib_sa_table t = {};
	u64 comp = be64_to_cpu((__force __be64)req->sa_hdr.comp_mask);
	struct sa_end *ends;
	u16 attr, status = 0;
	u32 i, n;
	int ret;

	resp->mad_hdr = req->mad_hdr;
	resp->mad_hdr.method = IB_SA_METHOD_GET_TABLE_RESP;
	resp->mad_hdr.status = 0;
	memset(&resp->rmpp_hdr, 0, sizeof(resp->rmpp_hdr));
	resp->sa_hdr = req->sa_hdr;
	resp->sa_hdr.sm_key = 0;
	atomic64_inc(&sdev->sa_requests);

	ends = kcalloc(sdev->nports + 1, sizeof(*ends), GFP_KERNEL);
	if (!ends)
		return;
	n = sa_ends(sdev, ends);
	attr = be16_to_cpu(req->mad_hdr.attr_id);
	for (i = 0; i < ARRAY_SIZE(sa_tables) && sa_tables[i].attr != attr; i++)
		;
	if (i < ARRAY_SIZE(sa_tables)) {
		t.rec_len = sa_tables[i].rec_len;
		ret = sa_tables[i].fill(sdev, ends, n, comp, req->data, &t);
	} else if (attr == IB_SA_ATTR_MC_MEMBER_REC) {
		t.rec_len = MCMEMBER_REC_LEN;
		ret = softib_sa_mc_table(sdev, pkt->sport, req, &t);
	} else {
		ret = 0;
		status = IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
	}
	kfree(ends);
	if (ret == -ENOMEM) {
		kvfree(t.buf);
		return;	/* no answer: the requester asks again */
	}
	if (ret) {
		status = SA_ERR_NO_RESOURCES;
		t.len = 0;
	}
	resp->mad_hdr.status = cpu_to_be16(status);
	resp->sa_hdr.attr_offset = cpu_to_be16(ALIGN(t.rec_len, 8) / 8);
	if (status)
		t.len = 0;
	sa_rmpp_start(sdev, pkt->slid, pkt->pkey, resp, &t);
}

void softib_sa_table_init(struct softib_dev *sdev)
{
	mutex_init(&sdev->sa_rmpp_lock);
	INIT_LIST_HEAD(&sdev->sa_rmpp);
	INIT_DELAYED_WORK(&sdev->sa_rmpp_work, sa_rmpp_work);
}

/* Drop every transfer: before the ports go. */
void softib_sa_table_cleanup(struct softib_dev *sdev)
{
	struct sa_rmpp *x, *tmp;

	/* the work re-arms itself only while transfers exist */
	mutex_lock(&sdev->sa_rmpp_lock);
	list_for_each_entry_safe(x, tmp, &sdev->sa_rmpp, list)
		sa_rmpp_free(sdev, x);
	mutex_unlock(&sdev->sa_rmpp_lock);
	cancel_delayed_work_sync(&sdev->sa_rmpp_work);
}
