// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the stateless offloads that mlx4 and mlx5 give IPoIB, for UD
 * QPs, when the module parameter "offloads" is on (off by default until
 * the whole suite has run with it):
 *
 *  - checksum insertion: a UD send flagged IB_SEND_IP_CSUM gets its TCP or
 *    UDP checksum computed (IPv4 or IPv6; the sender left the field as
 *    the stack does for CHECKSUM_PARTIAL);
 *  - LSO: on a QP created with IB_QP_CREATE_IPOIB_UD_LSO, an IB_WR_LSO
 *    send (header, hlen, mss) goes out as datagrams of at most mss payload
 *    bytes, each with its own IP and TCP header (length, IPv4 ID and
 *    checksum, sequence number, FIN/PSH only on the last, CWR only on the
 *    first) and TCP checksum;
 *  - IB_WC_IP_CSUM_OK on a receive completion when softib computed the
 *    TCP/UDP checksum for that datagram, or verified it (and the IPv4
 *    header checksum) on the way in.
 *
 * As on those HCAs, the message of such a send is an IPoIB frame: the
 * 4-byte IPoIB header (ethertype, reserved), then the IP packet. softib
 * never writes into a sender's buffers (an skb may be a TCP clone): a
 * segment's header is built in softib's own buffer, and checksums are
 * computed while the data is copied into the receiver's buffers and are
 * written there.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/moduleparam.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/checksum.h>
#include <net/ip6_checksum.h>

#include "softib.h"

/* on by default, as on mlx4/mlx5; offloads=0 keeps the software path */
bool softib_offloads = true;
module_param_named(offloads, softib_offloads, bool, 0444);
MODULE_PARM_DESC(offloads, "Offer IPoIB checksum offload and LSO on UD QPs, as mlx4/mlx5 do (default on)");

#define SOFTIB_IPOIB_HLEN	4	/* IPoIB header: ethertype, reserved */

/* Read "len" bytes at offset "off" of a scatter/gather list into "buf". */
bool softib_sg_read(const struct ib_sge *sg, u32 n, u32 off, void *buf,
		    u32 len)
{
	u32 i, c;

	for (i = 0; i < n && len; i++) {
		if (off >= sg[i].length) {
			off -= sg[i].length;
			continue;
		}
		c = min(sg[i].length - off, len);
		memcpy(buf, (void *)(uintptr_t)sg[i].addr + off, c);
		buf += c;
		len -= c;
		off = 0;
	}
	return !len;
}

static void softib_sg_write16(const struct ib_sge *sg, u32 n, u32 off,
			      __sum16 v)
{
	struct ib_sge src = { .addr = (uintptr_t)&v, .length = sizeof(v) };

	softib_copy_sg(sg, n, off, &src, 1, sizeof(v));
}

/*
 * What the checksum offload needs of an IPoIB frame: where its TCP/UDP
 * header starts and how long that segment is, the checksum field, and
 * the pseudo-header's addresses. False for anything else (ARP, IP
 * fragments, extension headers, short or inconsistent headers).
 */
bool softib_csum_parse(const struct ib_sge *sg, u32 nsge, u32 msglen,
		       struct softib_csum *cs)
{
	union {
		struct iphdr v4;
		struct ipv6hdr v6;
	} ip;
	u8 hdr4[60];		/* the IPv4 header, options too */
	__be16 proto[2];
	u32 ihl;

	if (msglen < SOFTIB_IPOIB_HLEN + sizeof(struct iphdr) ||
	    !softib_sg_read(sg, nsge, 0, proto, sizeof(proto)))
		return false;
	memset(cs, 0, sizeof(*cs));
	if (proto[0] == htons(ETH_P_IP)) {
		if (!softib_sg_read(sg, nsge, SOFTIB_IPOIB_HLEN, &ip.v4,
				    sizeof(ip.v4)))
			return false;
		ihl = ip.v4.ihl * 4;
		if (ip.v4.version != 4 || ihl < sizeof(ip.v4) ||
		    ntohs(ip.v4.tot_len) < ihl ||
		    SOFTIB_IPOIB_HLEN + ntohs(ip.v4.tot_len) > msglen ||
		    (ip.v4.frag_off & htons(IP_MF | IP_OFFSET)))
			return false;
		cs->v6 = false;
		cs->ip_ok = softib_sg_read(sg, nsge, SOFTIB_IPOIB_HLEN, hdr4,
					   ihl) && !ip_fast_csum(hdr4, ihl / 4);
		cs->saddr4 = ip.v4.saddr;
		cs->daddr4 = ip.v4.daddr;
		cs->proto = ip.v4.protocol;
		cs->l4off = SOFTIB_IPOIB_HLEN + ihl;
		cs->l4len = ntohs(ip.v4.tot_len) - ihl;
	} else if (proto[0] == htons(ETH_P_IPV6)) {
		if (!softib_sg_read(sg, nsge, SOFTIB_IPOIB_HLEN, &ip.v6,
				    sizeof(ip.v6)) ||
		    ip.v6.version != 6 ||
		    SOFTIB_IPOIB_HLEN + sizeof(ip.v6) +
		    ntohs(ip.v6.payload_len) > msglen)
			return false;
		cs->v6 = true;
		cs->ip_ok = true;	/* IPv6 has no header checksum */
		cs->saddr6 = ip.v6.saddr;
		cs->daddr6 = ip.v6.daddr;
		cs->proto = ip.v6.nexthdr;
		cs->l4off = SOFTIB_IPOIB_HLEN + sizeof(ip.v6);
		cs->l4len = ntohs(ip.v6.payload_len);
	} else {
		return false;
	}
	if (cs->proto == IPPROTO_TCP && cs->l4len >= sizeof(struct tcphdr))
		cs->field = offsetof(struct tcphdr, check);
	else if (cs->proto == IPPROTO_UDP &&
		 cs->l4len >= sizeof(struct udphdr))
		cs->field = offsetof(struct udphdr, check);
	else
		return false;
	return true;
}

static __sum16 softib_csum_magic(const struct softib_csum *cs, __wsum sum)
{
	if (cs->v6)
		return csum_ipv6_magic(&cs->saddr6, &cs->daddr6, cs->l4len,
				       cs->proto, sum);
	return csum_tcpudp_magic(cs->saddr4, cs->daddr4, cs->l4len,
				 cs->proto, sum);
}

/*
 * The receiver's copy of a TCP/UDP datagram is in place and "sum" is the
 * checksum of its L4 bytes as they arrived: fill the checksum field in
 * (fill), or check it. Returns IB_WC_IP_CSUM_OK when the checksum is
 * known good, else 0 (the receiver's stack checks it then).
 */
int softib_csum_finish(const struct softib_csum *cs, const struct ib_sge *dst,
		       u32 ndst, u32 off, __wsum sum, bool fill)
{
	__sum16 old, v;

	if (!softib_sg_read(dst, ndst, off + cs->l4off + cs->field, &old,
			    sizeof(old)))
		return 0;
	if (!fill) {
		/* an IPv4 UDP datagram without a checksum has nothing to check */
		if (cs->proto == IPPROTO_UDP && !cs->v6 && !old)
			return IB_WC_IP_CSUM_OK;
		return softib_csum_magic(cs, sum) ? 0 : IB_WC_IP_CSUM_OK;
	}
	/* the field holds whatever the sender left there: take it out */
	sum = csum_sub(sum, (__force __wsum)(__force u16)old);
	v = softib_csum_magic(cs, sum);
	if (cs->proto == IPPROTO_UDP && !v)
		v = CSUM_MANGLED_0;
	softib_sg_write16(dst, ndst, off + cs->l4off + cs->field, v);
	return IB_WC_IP_CSUM_OK;
}

/*
 * Post time: keep an LSO WR's header (it need not outlive the post, as
 * on an HCA that copies it into the WQE) and its MSS.
 */
int softib_lso_post(struct softib_qp *qp, struct softib_swqe *wqe,
		    const struct ib_ud_wr *ud)
{
	/* post_send took IB_WR_LSO only on an LSO QP */
	if (ud->hlen <= 0 || ud->hlen > SOFTIB_LSO_HDR_MAX ||
	    ud->mss <= 0 || !ud->header)
		return -EINVAL;
	wqe->lso_hlen = ud->hlen;
	wqe->lso_mss = ud->mss;
	memcpy(softib_swqe_lso_hdr(qp, wqe), ud->header, ud->hlen);
	wqe->length += ud->hlen;
	return 0;
}

/*
 * The segment of payload bytes [off, off + len) of an LSO WQE: "seg" gets
 * the header in sge[0] (hdr, patched) and the slice of the WQE's payload
 * list after it.
 */
static void softib_lso_slice(const struct softib_swqe *wqe,
			     struct softib_swqe *seg, void *hdr, u32 off,
			     u32 len)
{
	u32 i, n = 1;

	seg->sge[0].addr = (uintptr_t)hdr;
	seg->sge[0].length = wqe->lso_hlen;
	seg->sge[0].lkey = 0;
	for (i = 0; i < wqe->num_sge && len; i++) {
		const struct ib_sge *s = &wqe->sge[i];
		u32 c;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		c = min(s->length - off, len);
		seg->sge[n].addr = s->addr + off;
		seg->sge[n].length = c;
		seg->sge[n].lkey = s->lkey;
		n++;
		len -= c;
		off = 0;
	}
	seg->num_sge = n;
}

/*
 * Send an LSO WQE as datagrams through "xmit" (softib_send_ud's routing
 * of one message). Returns the sender's completion status.
 */
enum ib_wc_status softib_lso_send(struct softib_qp *qp,
				  const struct softib_swqe *wqe,
				  const struct softib_lso_buf *buf,
				  enum ib_wc_status (*xmit)(struct softib_qp *,
							    const struct softib_swqe *))
{
	const u8 *tmpl = buf->tmpl;
	u32 hlen = wqe->lso_hlen, mss = wqe->lso_mss;
	u32 total = wqe->length - hlen, off, n, i;
	struct softib_swqe *seg = buf->seg;
	u8 *hdr = buf->hdr;
	struct softib_csum cs;
	struct ib_sge tsge = {
		.addr = (uintptr_t)tmpl,
		.length = hlen,
	};
	const struct tcphdr *tth;	/* the template's */
	struct tcphdr *th;		/* the segment's */
	enum ib_wc_status st;
	u32 seq;
	u16 id = 0;

	/* the header must be IPoIB + IP + TCP, exactly, with no payload */
	if (!softib_csum_parse(&tsge, 1, U32_MAX, &cs) ||
	    cs.proto != IPPROTO_TCP)
		return IB_WC_LOC_QP_OP_ERR;
	th = (struct tcphdr *)(hdr + cs.l4off);
	tth = (const struct tcphdr *)(tmpl + cs.l4off);
	if (cs.l4off + sizeof(*th) > hlen || cs.l4off + tth->doff * 4 != hlen)
		return IB_WC_LOC_QP_OP_ERR;
	if (hlen + mss > SOFTIB_MTU_BYTES)
		return IB_WC_LOC_LEN_ERR;

	atomic64_inc(&qp->sdev->lso_sends);
	*seg = *wqe;
	seg->opcode = IB_WR_SEND;
	/* every segment's TCP checksum is computed at delivery */
	seg->send_flags |= IB_SEND_IP_CSUM;
	seq = ntohl(tth->seq);
	if (!cs.v6)
		id = ntohs(((struct iphdr *)(tmpl + SOFTIB_IPOIB_HLEN))->id);

	for (off = 0, i = 0; off < total || (!total && !i); off += n, i++) {
		n = min(total - off, mss);
		memcpy(hdr, tmpl, hlen);
		if (cs.v6) {
			struct ipv6hdr *ip6 = (void *)(hdr + SOFTIB_IPOIB_HLEN);

			ip6->payload_len = htons(hlen - cs.l4off + n);
		} else {
			struct iphdr *ip4 = (void *)(hdr + SOFTIB_IPOIB_HLEN);

			ip4->tot_len = htons(hlen - SOFTIB_IPOIB_HLEN + n);
			ip4->id = htons(id + i);
			ip4->check = 0;
			ip4->check = ip_fast_csum(ip4, ip4->ihl);
		}
		th->seq = htonl(seq + off);
		if (off + n < total) {
			th->fin = 0;
			th->psh = 0;
		}
		if (i)
			th->cwr = 0;
		th->check = 0;
		softib_lso_slice(wqe, seg, hdr, off, n);
		seg->length = hlen + n;
		st = xmit(qp, seg);
		if (st != IB_WC_SUCCESS)
			return st;
		atomic64_inc(&qp->sdev->lso_segments);
		if (!total)
			break;
	}
	return IB_WC_SUCCESS;
}

/* Create time: the per-QP buffers an LSO engine builds segments in. */
int softib_lso_init(struct softib_qp *qp)
{
	qp->lso_seg = kzalloc(struct_size(qp->lso_seg, sge, qp->sq.max_sge + 1),
			      GFP_KERNEL);
	qp->lso_hdr = kzalloc(SOFTIB_LSO_HDR_MAX, GFP_KERNEL);
	if (!qp->lso_seg || !qp->lso_hdr) {
		softib_lso_free(qp);
		return -ENOMEM;
	}
	qp->lso = true;
	return 0;
}

void softib_lso_free(struct softib_qp *qp)
{
	kfree(qp->lso_seg);
	kfree(qp->lso_hdr);
	qp->lso_seg = NULL;
	qp->lso_hdr = NULL;
}
