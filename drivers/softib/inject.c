// SPDX-License-Identifier: GPL-2.0
/*
 * softib: a test-only UD packet injector, debugfs ports/<N>/inject (root,
 * write only). One write() puts one datagram (or a generated batch) on the
 * fabric as if it had arrived at port N from the wire: it is routed and
 * delivered by softib_route_pkt(), the path every real UD send takes, so
 * the receiving port applies its P_Key and Q_Key checks, the GRH goes in
 * the first 40 bytes of the receive buffer and the completion carries
 * src_qp, slid, sl, pkey_index and IB_WC_GRH as for any datagram. The
 * format is in Documentation/softib.rst ("inject").
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/prandom.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "softib.h"

#define SOFTIB_INJECT_MAX	8192	/* payload bytes; above the MTU drops */
#define SOFTIB_INJECT_WRITE_MAX	(3 * SOFTIB_INJECT_MAX)	/* hex= is 2/byte */
#define SOFTIB_INJECT_COUNT_MAX	1000000
#define SOFTIB_INJECT_WAIT_MAX	1000	/* ms */
/*
 * One write holds a debugfs reference, which device removal waits for:
 * however large count and wait are, a write ends after this long.
 */
#define SOFTIB_INJECT_SECS_MAX	60

struct softib_inject {
	u32 qpn;
	bool qpn_set;
	u16 dlid;
	u32 qkey;
	u16 pkey;
	bool pkey_set;
	u32 pkey_index;
	bool pkey_index_set;
	u16 slid;
	u32 sqpn;
	u8 sl;
	bool grh;
	union ib_gid sgid;
	bool sgid_set;
	union ib_gid dgid;
	u8 tclass;
	u8 hop_limit;
	u32 flow_label;
	u32 count;
	u64 seed;
	u32 len_min;
	u32 len_max;
	bool len_set;
	u32 keep;
	bool keep_set;
	u32 wait_ms;
	/* the template payload: binary after the header line, or hex= */
	u8 *payload;
	u32 plen;
	bool hex;
};

#define inject_err(port, ret, fmt, ...) ({				\
	pr_info("port %u inject: " fmt "; see Documentation/softib.rst\n", \
		(port)->num, ##__VA_ARGS__);				\
	(ret);								\
})

static int softib_inject_num(struct softib_port *port, const char *key,
			     const char *val, u64 max, u64 *out)
{
	int ret = kstrtou64(val, 0, out);

	if (ret)
		return inject_err(port, ret, "%s=%s is not a number", key, val);
	if (*out > max)
		return inject_err(port, -ERANGE, "%s=%s is above %llu", key,
				  val, max);
	return 0;
}

static int softib_inject_gid(struct softib_port *port, const char *key,
			     const char *val, union ib_gid *gid)
{
	if (!in6_pton(val, -1, gid->raw, -1, NULL))
		return inject_err(port, -EINVAL,
				  "%s=%s is not a GID (IPv6 notation)", key, val);
	return 0;
}

/* len=A or len=A-B */
static int softib_inject_len(struct softib_port *port, char *val,
			     struct softib_inject *in)
{
	char *dash = strchr(val, '-');
	u64 a, b;
	int ret;

	if (dash)
		*dash++ = '\0';
	ret = softib_inject_num(port, "len", val, SOFTIB_INJECT_MAX, &a);
	if (!ret && dash)
		ret = softib_inject_num(port, "len", dash, SOFTIB_INJECT_MAX,
					&b);
	else
		b = a;
	if (ret)
		return ret;
	if (b < a)
		return inject_err(port, -EINVAL, "len=%s-%s: the range is empty",
				  val, dash);
	in->len_min = a;
	in->len_max = b;
	in->len_set = true;
	return 0;
}

static int softib_inject_hex(struct softib_port *port, const char *val,
			     struct softib_inject *in)
{
	size_t n = strlen(val);

	if (n % 2)
		return inject_err(port, -EINVAL,
				  "hex= needs two digits per byte");
	if (n / 2 > SOFTIB_INJECT_MAX)
		return inject_err(port, -EMSGSIZE,
				  "hex= payload above %u bytes",
				  SOFTIB_INJECT_MAX);
	if (hex2bin(in->payload, val, n / 2))
		return inject_err(port, -EINVAL, "hex= has a non-hex digit");
	in->plen = n / 2;
	in->hex = true;
	return 0;
}

/* the plain numeric keys: name, maximum, where they go */
static const struct softib_inject_num {
	const char *key;
	u64 max;
	size_t off;
	u8 size;
} softib_inject_nums[] = {
	{ "dlid", 0xffff, offsetof(struct softib_inject, dlid),
	  sizeof_field(struct softib_inject, dlid) },
	{ "qkey", U32_MAX, offsetof(struct softib_inject, qkey),
	  sizeof_field(struct softib_inject, qkey) },
	{ "slid", 0xffff, offsetof(struct softib_inject, slid),
	  sizeof_field(struct softib_inject, slid) },
	{ "sqpn", 0xffffff, offsetof(struct softib_inject, sqpn),
	  sizeof_field(struct softib_inject, sqpn) },
	{ "sl", 15, offsetof(struct softib_inject, sl),
	  sizeof_field(struct softib_inject, sl) },
	{ "tclass", 0xff, offsetof(struct softib_inject, tclass),
	  sizeof_field(struct softib_inject, tclass) },
	{ "hop", 0xff, offsetof(struct softib_inject, hop_limit),
	  sizeof_field(struct softib_inject, hop_limit) },
	{ "flow", 0xfffff, offsetof(struct softib_inject, flow_label),
	  sizeof_field(struct softib_inject, flow_label) },
	{ "seed", U64_MAX, offsetof(struct softib_inject, seed),
	  sizeof_field(struct softib_inject, seed) },
	{ "wait", SOFTIB_INJECT_WAIT_MAX, offsetof(struct softib_inject, wait_ms),
	  sizeof_field(struct softib_inject, wait_ms) },
};

static int softib_inject_token(struct softib_port *port, char *tok,
			       struct softib_inject *in)
{
	char *val = strchr(tok, '=');
	unsigned int i;
	u64 v;
	int ret;

	if (!val)
		return inject_err(port, -EINVAL, "'%s' is not key=value", tok);
	*val++ = '\0';

	for (i = 0; i < ARRAY_SIZE(softib_inject_nums); i++) {
		const struct softib_inject_num *n = &softib_inject_nums[i];
		void *field = (void *)in + n->off;

		if (strcmp(tok, n->key))
			continue;
		ret = softib_inject_num(port, tok, val, n->max, &v);
		if (ret)
			return ret;
		switch (n->size) {
		case 1:
			*(u8 *)field = v;
			break;
		case 2:
			*(u16 *)field = v;
			break;
		case 4:
			*(u32 *)field = v;
			break;
		default:
			*(u64 *)field = v;
			break;
		}
		return 0;
	}
	if (!strcmp(tok, "qpn")) {
		in->qpn_set = true;
		ret = softib_inject_num(port, tok, val, 0xffffff, &v);
		in->qpn = v;
		return ret;
	}
	if (!strcmp(tok, "pkey")) {
		in->pkey_set = true;
		ret = softib_inject_num(port, tok, val, 0xffff, &v);
		in->pkey = v;
		return ret;
	}
	if (!strcmp(tok, "pkey_index")) {
		in->pkey_index_set = true;
		ret = softib_inject_num(port, tok, val,
					SOFTIB_PKEY_TBL_LEN - 1, &v);
		in->pkey_index = v;
		return ret;
	}
	if (!strcmp(tok, "count")) {
		ret = softib_inject_num(port, tok, val,
					SOFTIB_INJECT_COUNT_MAX, &v);
		if (!ret && !v)
			ret = inject_err(port, -ERANGE, "count=0");
		in->count = v;
		return ret;
	}
	if (!strcmp(tok, "keep")) {
		in->keep_set = true;
		ret = softib_inject_num(port, tok, val, SOFTIB_INJECT_MAX, &v);
		in->keep = v;
		return ret;
	}
	if (!strcmp(tok, "grh")) {
		ret = softib_inject_num(port, tok, val, 1, &v);
		in->grh = v;
		return ret;
	}
	if (!strcmp(tok, "sgid")) {
		in->grh = true;
		in->sgid_set = true;
		return softib_inject_gid(port, tok, val, &in->sgid);
	}
	if (!strcmp(tok, "dgid")) {
		in->grh = true;
		return softib_inject_gid(port, tok, val, &in->dgid);
	}
	if (!strcmp(tok, "len"))
		return softib_inject_len(port, val, in);
	if (!strcmp(tok, "hex"))
		return softib_inject_hex(port, val, in);
	return inject_err(port, -EINVAL, "unknown key '%s'", tok);
}

/*
 * Parse the header line "buf" (NUL-terminated) into "in"; "bin" bytes of
 * binary payload follow it and are already in in->payload.
 */
static int softib_inject_parse(struct softib_port *port, char *buf, u32 bin,
			       struct softib_inject *in)
{
	char *tok;
	int ret;

	while ((tok = strsep(&buf, " \t\r")) != NULL) {
		if (!*tok)
			continue;
		ret = softib_inject_token(port, tok, in);
		if (ret)
			return ret;
	}
	if (in->hex && bin)
		return inject_err(port, -EINVAL,
				  "hex= and a binary payload after the header line");
	if (!in->qpn_set)
		return inject_err(port, -EDESTADDRREQ, "qpn= is required");
	if (in->pkey_set && in->pkey_index_set)
		return inject_err(port, -EINVAL,
				  "pkey= and pkey_index= are exclusive");
	if (!in->len_set) {
		in->len_min = in->plen;
		in->len_max = in->plen;
	}
	if (!in->keep_set)
		in->keep = in->plen;
	if (in->keep > in->plen)
		return inject_err(port, -EINVAL,
				  "keep=%u is above the payload's %u bytes",
				  in->keep, in->plen);
	return 0;
}

/* Does QP "qpn" behind "dlid" have a receive posted? (true if no such QP) */
static bool softib_inject_can_recv(struct softib_dev *sdev, u16 dlid, u32 qpn)
{
	struct softib_port *dport;
	struct softib_wq *rq;
	struct softib_qp *qp;
	bool ret = true;

	if (dlid <= softib_lid_base || dlid > softib_lid_base + sdev->nports)
		return true;
	dport = softib_port(sdev, dlid - softib_lid_base);
	rcu_read_lock();
	if (qpn <= 1)
		qp = rcu_dereference(dport->special[qpn]);
	else
		qp = xa_load(&sdev->qps, qpn);
	if (qp && READ_ONCE(qp->rn)) {
		/* an rdma_netdev's QP receives into the netdev's rings */
		ret = softib_rn_can_recv(qp);
	} else if (qp) {
		/* a racy peek is fine: this only paces the injector */
		rq = qp->srq ? &qp->srq->rq : &qp->rq;
		ret = READ_ONCE(rq->head) != READ_ONCE(rq->tail);
	}
	rcu_read_unlock();
	return ret;
}

static void softib_inject_wait(struct softib_dev *sdev,
			       const struct softib_inject *in)
{
	unsigned long end = jiffies + msecs_to_jiffies(in->wait_ms);

	while (!softib_inject_can_recv(sdev, in->dlid, in->qpn) &&
	       time_before(jiffies, end) && !fatal_signal_pending(current))
		usleep_range(50, 200);
}

static int softib_inject_send(struct softib_port *port,
			      const struct softib_inject *in, u8 *frame)
{
	struct softib_dev *sdev = port->sdev;
	struct rnd_state rnd;
	struct softib_swqe_one w = {};
	struct softib_pkt pkt = {
		.sdev = sdev,
		.sport = port,
		.wqe = &w.wqe,
		.src_qpn = in->sqpn,
		.slid = in->slid,
		.qkey = in->qkey,
		.sgid = in->sgid_set ? &in->sgid : NULL,
	};
	unsigned long stop = jiffies + SOFTIB_INJECT_SECS_MAX * HZ;
	u32 i, len, keep;

	if (in->pkey_set)
		pkt.pkey = in->pkey;
	else
		pkt.pkey = READ_ONCE(port->pkeys[in->pkey_index]);
	w.wqe.opcode = IB_WR_SEND;
	w.wqe.num_sge = 1;
	w.wqe.remote_qpn = in->qpn;
	w.wqe.remote_qkey = in->qkey;
	w.wqe.av.dlid = in->dlid;
	w.wqe.av.sl = in->sl;
	w.wqe.av.port_num = port->num;
	w.wqe.av.grh = in->grh;
	w.wqe.av.dgid = in->dgid;
	w.wqe.av.hop_limit = in->hop_limit;
	w.wqe.av.traffic_class = in->tclass;
	w.wqe.av.flow_label = in->flow_label;
	w.sge.addr = (uintptr_t)frame;

	prandom_seed_state(&rnd, in->seed);
	for (i = 0; i < in->count; i++) {
		len = in->len_min;
		if (in->len_max > in->len_min)
			len += prandom_u32_state(&rnd) %
			       (in->len_max - in->len_min + 1);
		keep = min(len, in->keep);
		memcpy(frame, in->payload, keep);
		if (len > keep)
			prandom_bytes_state(&rnd, frame + keep, len - keep);

		/* the receiving port's MTU check: the link layer drops it */
		if (len > SOFTIB_MTU_BYTES) {
			atomic64_inc(&port->cnt.drops[SOFTIB_DROP_TOO_LONG]);
			continue;
		}
		if (in->wait_ms)
			softib_inject_wait(sdev, in);
		w.wqe.length = len;
		w.sge.length = len;
		pkt.mcast = false;
		softib_route_pkt(&pkt);

		if (fatal_signal_pending(current))
			return -EINTR;
		if (time_after(jiffies, stop))
			return inject_err(port, -ETIME,
					  "stopped after %u of %u frames (%d s); write smaller batches",
					  i + 1, in->count, SOFTIB_INJECT_SECS_MAX);
		cond_resched();
	}
	return 0;
}

static ssize_t softib_inject_write(struct file *file, const char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	struct softib_port *port = file->private_data;
	struct softib_inject in = {
		.dlid = port->lid,
		.slid = port->lid,
		.sqpn = 0xfffffe,
		.hop_limit = 64,
		.count = 1,
	};
	char *buf, *nl;
	u8 *frame;
	u32 bin = 0;
	int ret;

	if (count > SOFTIB_INJECT_WRITE_MAX)
		return inject_err(port, -EMSGSIZE,
				  "a write of %zu bytes is above %u", count,
				  SOFTIB_INJECT_WRITE_MAX);
	buf = memdup_user_nul(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	in.payload = kmalloc(SOFTIB_INJECT_MAX, GFP_KERNEL);
	frame = kmalloc(SOFTIB_INJECT_MAX, GFP_KERNEL);
	ret = -ENOMEM;
	if (!in.payload || !frame)
		goto out_free;

	/* "header\n" then binary payload; no newline: a header only */
	nl = memchr(buf, '\n', count);
	if (nl) {
		bin = count - (nl + 1 - buf);
		*nl = '\0';
		if (bin > SOFTIB_INJECT_MAX) {
			ret = inject_err(port, -EMSGSIZE,
					 "payload of %u bytes is above %u", bin,
					 SOFTIB_INJECT_MAX);
			goto out_free;
		}
		memcpy(in.payload, nl + 1, bin);
		in.plen = bin;
	}
	if (strlen(buf) != (nl ? nl - buf : count)) {
		ret = inject_err(port, -EINVAL, "a NUL byte in the header line");
		goto out_free;
	}
	ret = softib_inject_parse(port, buf, bin, &in);
	if (!ret)
		ret = softib_inject_send(port, &in, frame);
out_free:
	kfree(frame);
	kfree(in.payload);
	kfree(buf);
	return ret ?: count;
}

const struct file_operations softib_inject_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = softib_inject_write,
	.llseek = noop_llseek,
};
