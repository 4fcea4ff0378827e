// SPDX-License-Identifier: GPL-2.0
/*
 * softib: debug_wrid, a check of work request IDs.
 *
 * Consumers find their buffers by wr_id, so two outstanding WRs with the
 * same wr_id on one queue, or a completion of a wr_id that is not
 * outstanding, mean a buffer is lost, freed twice or handed back early.
 * With debug_wrid=1 every send queue, receive queue and SRQ keeps the
 * set of its outstanding wr_ids (posted, not yet completed or retired)
 * with a count each, and softib WARNs, once per queue, when
 *
 *  - a wr_id is posted while it is still outstanding on that queue, or
 *  - softib completes or retires a wr_id that is not outstanding there.
 *
 * A WR stops being outstanding when softib builds its completion, when
 * the send engine retires an unsignaled send, when a modify to RESET
 * discards it or when its QP (or SRQ) is destroyed.
 *
 * The set is a hash table over a pool of entries allocated with the
 * queue: a queue never holds more WRs than its size, so the pool cannot
 * run dry unless softib itself loses track. Every operation is O(1) and
 * runs under the queue's own lock. With debug_wrid=0 no queue has a set
 * and the post and completion paths only test a NULL pointer.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/hash.h>
#include <linux/log2.h>
#include <linux/slab.h>

#include "softib.h"

struct softib_wrid {
	struct hlist_node node;
	u64 wr_id;
	u32 count;	/* outstanding WRs with this wr_id */
};

struct softib_wrids {
	struct softib_dev *sdev;
	const char *kind;	/* "SQ", "RQ" or "SRQ" */
	u32 qpn;
	bool has_qpn;
	bool warned;
	unsigned int bits;
	struct hlist_head *buckets;
	struct hlist_head free;
	u32 npool;
	struct softib_wrid pool[];
};

int softib_wrids_init(struct softib_wq *wq, struct softib_dev *sdev,
		      const char *kind)
{
	struct softib_wrids *t;
	u32 i;

	wq->wrids = NULL;
	if (!softib_debug_wrid)
		return 0;
	t = kvzalloc(struct_size(t, pool, wq->size), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->bits = max(ilog2(wq->size), 1);
	t->buckets = kvcalloc(1U << t->bits, sizeof(*t->buckets), GFP_KERNEL);
	if (!t->buckets) {
		kvfree(t);
		return -ENOMEM;
	}
	t->sdev = sdev;
	t->kind = kind;
	t->npool = wq->size;
	INIT_HLIST_HEAD(&t->free);
	for (i = 0; i < t->npool; i++)
		hlist_add_head(&t->pool[i].node, &t->free);
	wq->wrids = t;
	return 0;
}

void softib_wrids_free(struct softib_wq *wq)
{
	struct softib_wrids *t = wq->wrids;

	if (!t)
		return;
	kvfree(t->buckets);
	kvfree(t);
	wq->wrids = NULL;
}

/* QPNs are allocated after the rings; reports name the QP once it has one. */
void softib_wrids_set_qpn(struct softib_wq *wq, u32 qpn)
{
	if (!wq->wrids)
		return;
	wq->wrids->qpn = qpn;
	wq->wrids->has_qpn = true;
}

static struct softib_wrid *softib_wrid_find(struct softib_wrids *t, u64 wr_id)
{
	struct softib_wrid *e;

	hlist_for_each_entry(e, &t->buckets[hash_64(wr_id, t->bits)], node)
		if (e->wr_id == wr_id)
			return e;
	return NULL;
}

/* A real kernel WARNING the first time per queue; every error is counted. */
static void softib_wrid_report(struct softib_wrids *t, u64 wr_id,
			       const char *what)
{
	atomic64_inc(&t->sdev->wrid_errors);
	if (t->warned)
		return;
	t->warned = true;
	if (t->has_qpn)
		WARN(1, "softib: %s of QP 0x%06x: wr_id 0x%llx %s\n",
		     t->kind, t->qpn, wr_id, what);
	else
		WARN(1, "softib: %s: wr_id 0x%llx %s\n", t->kind, wr_id, what);
}

void __softib_wrid_post(struct softib_wq *wq, u64 wr_id)
{
	struct softib_wrids *t = wq->wrids;
	struct softib_wrid *e;

	lockdep_assert_held(&wq->lock);
	e = softib_wrid_find(t, wr_id);
	if (e) {
		e->count++;
		softib_wrid_report(t, wr_id, "posted while still outstanding");
		return;
	}
	if (hlist_empty(&t->free)) {
		softib_wrid_report(t, wr_id,
				   "posted with more WRs outstanding than the queue holds");
		return;
	}
	e = hlist_entry(t->free.first, struct softib_wrid, node);
	hlist_del(&e->node);
	e->wr_id = wr_id;
	e->count = 1;
	hlist_add_head(&e->node, &t->buckets[hash_64(wr_id, t->bits)]);
}

void __softib_wrid_retire(struct softib_wq *wq, u64 wr_id)
{
	struct softib_wrids *t = wq->wrids;
	struct softib_wrid *e;

	lockdep_assert_held(&wq->lock);
	e = softib_wrid_find(t, wr_id);
	if (!e) {
		softib_wrid_report(t, wr_id, "completed but not outstanding");
		return;
	}
	if (--e->count)
		return;
	hlist_del(&e->node);
	hlist_add_head(&e->node, &t->free);
}

/* A modify to RESET discarded every WR of the queue. */
void __softib_wrids_clear(struct softib_wq *wq)
{
	struct softib_wrids *t = wq->wrids;
	struct hlist_node *tmp;
	struct softib_wrid *e;
	u32 i;

	lockdep_assert_held(&wq->lock);
	for (i = 0; i < (1U << t->bits); i++) {
		hlist_for_each_entry_safe(e, tmp, &t->buckets[i], node) {
			hlist_del(&e->node);
			hlist_add_head(&e->node, &t->free);
		}
	}
}
