// SPDX-License-Identifier: GPL-2.0
/*
 * softib: a link between softib nodes in different kernels.
 *
 * With link=<ifname>, softib0 of this kernel (node=K) talks to the
 * softib nodes at link_peers over UDP on that interface. An IB link is
 * lossless and in order (credit-based flow control), and IPoIB's
 * connected mode counts on it (in-tree asks for no retries), so this
 * link is too, whatever the network under it does:
 *
 * - every DATA frame is numbered and kept until acknowledged; the
 *   receiver delivers in order only and says in each ACK how many more
 *   it can hold (credits), so a slow receiver stops the sender instead
 *   of dropping; frames after a gap are kept until it fills, and the
 *   gap gets a NAK for its missing frame alone; silence gets a
 *   retransmission of all unacknowledged after the RTO;
 * - every frame carries a keyed BLAKE2s-128 tag. A handshake with fresh
 *   nonces from both ends (HELLO, HELLO_ACK, CONFIRM, all tagged with
 *   the fabric key) derives a key per direction, so a frame from
 *   outside the fabric, from an old session or sent back to its sender
 *   fails its tag; a replayed frame of this session is behind rcv_nxt.
 *   Both are dropped and counted, never delivered.
 *
 * Memory per peer is bounded: link_queue frames waiting or in flight
 * and link_rxq received frames waiting for the rx work or kept after a
 * gap. See
 * Documentation/softib.rst, "A fabric across kernels".
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/inet.h>
#include <linux/random.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <crypto/algapi.h>
#include <net/netfilter/nf_conntrack.h>
#include <net/udp_tunnel.h>
#include <net/route.h>
#include <net/ip.h>

#include "softib.h"
#include "link.h"

static char *softib_link_param = "";
module_param_named(link, softib_link_param, charp, 0444);
MODULE_PARM_DESC(link, "Network interface that joins this node to softib nodes in other kernels (default: none, a fabric of this kernel alone)");

static char *softib_link_peers_param = "";
module_param_named(link_peers, softib_link_peers_param, charp, 0444);
MODULE_PARM_DESC(link_peers, "IPv4 addresses of the other nodes, comma-separated (up to 8)");

static ushort softib_link_port = 17391;
module_param_named(link_port, softib_link_port, ushort, 0444);
MODULE_PARM_DESC(link_port, "UDP port of the link on every node (default 17391)");

/* perm 0: the key is never readable in sysfs; it is wiped once parsed */
static char *softib_fabric_key_param = "";
module_param_named(fabric_key, softib_fabric_key_param, charp, 0);
MODULE_PARM_DESC(fabric_key, "The fabric's key: 64 hex digits, the same on every node");

static uint softib_link_window = 128;
module_param_named(link_window, softib_link_window, uint, 0444);
MODULE_PARM_DESC(link_window, "DATA frames in flight to one peer at most (default 128)");

static uint softib_link_queue = 512;
module_param_named(link_queue, softib_link_queue, uint, 0444);
MODULE_PARM_DESC(link_queue, "DATA frames queued for one peer at most, in flight included (default 512)");

static uint softib_link_rxq = 256;
module_param_named(link_rxq, softib_link_rxq, uint, 0444);
MODULE_PARM_DESC(link_rxq, "Received frames of one peer waiting for delivery at most: the credits it gets (default 256)");

static uint softib_link_dead_ms = 3000;
module_param_named(link_dead_ms, softib_link_dead_ms, uint, 0444);
MODULE_PARM_DESC(link_dead_ms, "A peer heard nothing from for this long is down (default 3000)");

/* frames kept back for control messages when link_queue is full */
#define SOFTIB_LINK_RESERVE	64
#define SOFTIB_LINK_ACK_EVERY	16
#define SOFTIB_LINK_RTO_MIN	msecs_to_jiffies(20)
#define SOFTIB_LINK_RTO_MAX	msecs_to_jiffies(2000)
#define SOFTIB_LINK_RTO_INIT	msecs_to_jiffies(200)
#define SOFTIB_LINK_IDLE	msecs_to_jiffies(250)
#define SOFTIB_LINK_HS_RETRY	msecs_to_jiffies(500)
#define SOFTIB_LINK_HS_RETRY_MAX	msecs_to_jiffies(4000)
/* a CONFIRM goes again this often until the peer is heard in the session */
#define SOFTIB_LINK_CONFIRM_EVERY	msecs_to_jiffies(100)
#define SOFTIB_LINK_CONFIRM_TRIES	20
#define SOFTIB_LINK_TICK_BUSY	msecs_to_jiffies(10)
#define SOFTIB_LINK_TICK_IDLE	msecs_to_jiffies(100)
/* UDP/IP in front of the frame, and what the device itself adds */
#define SOFTIB_LINK_UDPIP	(sizeof(struct iphdr) + sizeof(struct udphdr))
#define SOFTIB_LINK_HEADROOM	(LL_MAX_HEADER + SOFTIB_LINK_UDPIP)
/* the IB headers a packet can carry: LRH, GRH, BTH, DETH, ImmDt */
#define SOFTIB_LINK_IB_HDRS	72

static const char * const softib_link_cnt_names[SOFTIB_LC_MAX] = {
	[SOFTIB_LC_TX_FRAMES] = "tx_frames",
	[SOFTIB_LC_TX_BYTES] = "tx_bytes",
	[SOFTIB_LC_RETRANSMITS] = "retransmits",
	[SOFTIB_LC_RTO] = "rto_expired",
	[SOFTIB_LC_TX_ACKS] = "tx_acks",
	[SOFTIB_LC_TX_NAKS] = "tx_naks",
	[SOFTIB_LC_TX_PROBES] = "tx_probes",
	[SOFTIB_LC_TX_ERRORS] = "tx_errors",
	[SOFTIB_LC_TX_BUSY] = "tx_busy",
	[SOFTIB_LC_WINDOW_ZERO] = "window_zero",
	[SOFTIB_LC_RX_FRAMES] = "rx_frames",
	[SOFTIB_LC_RX_DELIVERED] = "rx_delivered",
	[SOFTIB_LC_RX_DUP] = "rx_dup",
	[SOFTIB_LC_RX_OOO] = "rx_ooo",
	[SOFTIB_LC_RX_OVER_WINDOW] = "rx_over_window",
	[SOFTIB_LC_RX_NAKS] = "rx_naks",
	[SOFTIB_LC_RX_BAD_MAC] = "rx_bad_mac",
	[SOFTIB_LC_RX_STALE_SESSION] = "rx_stale_session",
	[SOFTIB_LC_RX_REPLAY] = "rx_replay",
	[SOFTIB_LC_RX_UNKNOWN_SRC] = "rx_unknown_src",
	[SOFTIB_LC_RX_MALFORMED] = "rx_malformed",
	[SOFTIB_LC_RX_NO_SESSION] = "rx_no_session",
	[SOFTIB_LC_HS_SENT] = "hs_sent",
	[SOFTIB_LC_HS_DONE] = "hs_done",
	[SOFTIB_LC_HS_BAD_MAC] = "hs_bad_mac",
	[SOFTIB_LC_HS_STALE] = "hs_stale",
	[SOFTIB_LC_HS_REFUSED] = "hs_refused",
	[SOFTIB_LC_PEER_UP] = "peer_up",
	[SOFTIB_LC_PEER_DOWN] = "peer_down",
	[SOFTIB_LC_TX_DROPPED_DOWN] = "tx_dropped_down",
	[SOFTIB_LC_TX_IB] = "tx_ib",
	[SOFTIB_LC_TX_IB_DROPPED] = "tx_ib_dropped",
	[SOFTIB_LC_RX_IB] = "rx_ib",
	[SOFTIB_LC_RX_IB_BAD] = "rx_ib_bad",
	[SOFTIB_LC_ECHO_OK] = "echo_ok",
	[SOFTIB_LC_ECHO_BAD] = "echo_bad",
	[SOFTIB_LC_FAULT_DROPPED] = "fault_dropped",
	[SOFTIB_LC_RC_TX_MSGS] = "rc_tx_msgs",
	[SOFTIB_LC_RC_RESENT] = "rc_resent",
	[SOFTIB_LC_RC_RETRY_EXC] = "rc_retry_exceeded",
	[SOFTIB_LC_RC_BUSY] = "rc_busy",
	[SOFTIB_LC_RC_TOO_LONG] = "rc_too_long",
	[SOFTIB_LC_RC_RX_ACKS] = "rc_rx_acks",
	[SOFTIB_LC_RC_RX_RNR] = "rc_rx_rnr",
	[SOFTIB_LC_RC_RX_NAKS] = "rc_rx_naks",
	[SOFTIB_LC_RC_RX_MSGS] = "rc_rx_msgs",
	[SOFTIB_LC_RC_TX_RNR] = "rc_tx_rnr",
	[SOFTIB_LC_RC_TX_NAKS] = "rc_tx_naks",
	[SOFTIB_LC_RC_DUP] = "rc_dup",
	[SOFTIB_LC_RC_OUT_OF_SEQ] = "rc_out_of_seq",
	[SOFTIB_LC_RC_NO_QP] = "rc_no_qp",
};

/* what a frame in txq remembers (skb->cb) */
struct softib_link_cb {
	u32 seq;
	u8 proto;		/* received DATA: what the payload is */
	u8 flags;		/* and its header's flags */
	unsigned long sent_at;	/* jiffies of the first transmission, 0: not yet */
	bool resent;		/* Karn: no RTT sample from it */
};

static struct softib_link_cb *softib_link_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct softib_link_cb) > sizeof(skb->cb));
	return (struct softib_link_cb *)skb->cb;
}

static void softib_link_count(struct softib_link *link,
			      enum softib_link_cnt c, u64 n)
{
	atomic64_add(n, &link->cnt[c]);
}

/* seq a is before seq b, in 32-bit serial arithmetic */
static bool softib_seq_before(u32 a, u32 b)
{
	return (s32)(a - b) < 0;
}

/*
 * The tag: keyed BLAKE2s-128 over the header up to the tag and "len"
 * payload bytes at "off" of skb, wherever they lie (frags included).
 */
static void softib_link_mac(const u8 *key, const struct softib_link_hdr *h,
			    struct sk_buff *skb, unsigned int off,
			    unsigned int len, u8 *tag)
{
	struct blake2s_state st;
	struct skb_seq_state seq;
	unsigned int consumed = 0, n;
	const u8 *data;

	blake2s_init_key(&st, BLAKE2S_128_HASH_SIZE, key, BLAKE2S_KEY_SIZE);
	blake2s_update(&st, (const u8 *)h, SOFTIB_LINK_MACED);
	if (len) {
		skb_prepare_seq_read(skb, off, off + len, &seq);
		while ((n = skb_seq_read(consumed, &data, &seq)) != 0) {
			blake2s_update(&st, data, n);
			consumed += n;
		}
	}
	blake2s_final(&st, tag);
}

/* A direction's session key, from the fabric key and both nonces. */
static void softib_link_derive(struct softib_link *link, u8 *out,
			       const u8 *init_nonce, const u8 *resp_nonce,
			       u64 from_guid, u64 to_guid)
{
	static const char label[] = "softib-link-1";
	struct blake2s_state st;
	__be64 g;

	blake2s_init_key(&st, BLAKE2S_HASH_SIZE, link->key, sizeof(link->key));
	blake2s_update(&st, label, sizeof(label));
	blake2s_update(&st, init_nonce, 16);
	blake2s_update(&st, resp_nonce, 16);
	g = cpu_to_be64(from_guid);
	blake2s_update(&st, (const u8 *)&g, sizeof(g));
	g = cpu_to_be64(to_guid);
	blake2s_update(&st, (const u8 *)&g, sizeof(g));
	blake2s_final(&st, out);
}

/*
 * A frame with room for UDP/IP and our header in front and "payload"
 * bytes after (wire.c and rc_remote.c build IB packets in it).
 */
struct sk_buff *softib_link_alloc(unsigned int payload, gfp_t gfp)
{
	struct sk_buff *skb;

	skb = alloc_skb(SOFTIB_LINK_HEADROOM + sizeof(struct softib_link_hdr) +
			payload, gfp);
	if (!skb)
		return NULL;
	skb_reserve(skb, SOFTIB_LINK_HEADROOM + sizeof(struct softib_link_hdr));
	return skb;
}

static struct softib_link_hdr *softib_link_push(struct sk_buff *skb, u8 type,
						u32 session)
{
	struct softib_link_hdr *h;
	unsigned int len = skb->len;

	h = skb_push(skb, sizeof(*h));
	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_be16(SOFTIB_LINK_MAGIC);
	h->ver = SOFTIB_LINK_VER;
	h->type = type;
	h->session = cpu_to_be32(session);
	h->len = cpu_to_be16(len);
	return h;
}

static void softib_link_seal(const u8 *key, struct sk_buff *skb)
{
	struct softib_link_hdr *h = (struct softib_link_hdr *)skb->data;

	softib_link_mac(key, h, skb, sizeof(*h), skb->len - sizeof(*h),
			h->tag);
}

/*
 * Put one sealed frame on the wire. Never called with a peer's lock
 * held: the device may hand the frame back to us on this CPU.
 */
static void softib_link_xmit(struct softib_link_peer *peer,
			     struct sk_buff *skb)
{
	struct softib_link *link = peer->link;
	struct sock *sk;
	struct rtable *rt;
	struct flowi4 fl4;
	__be32 saddr = 0;
	int err;

	if (READ_ONCE(link->fault_blackhole) ||
	    atomic_add_unless(&link->fault_drop_tx, -1, 0) ||
	    (atomic_read(&link->fault_drop_data) &&
	     ((struct softib_link_hdr *)skb->data)->type == SOFTIB_LT_DATA &&
	     atomic_add_unless(&link->fault_drop_data, -1, 0))) {
		softib_link_count(link, SOFTIB_LC_FAULT_DROPPED, 1);
		goto drop;
	}
	if (atomic_add_unless(&link->fault_bad_mac, -1, 0))
		((struct softib_link_hdr *)skb->data)->tag[0] ^= 0x5a;

	rcu_read_lock();
	sk = rcu_dereference(link->sk);
	if (!sk)
		goto out_unlock;
	local_bh_disable();
	rt = dst_cache_get_ip4(&peer->dst_cache, &saddr);
	if (!rt) {
		rt = ip_route_output_ports(link->net, &fl4, NULL, peer->addr, 0,
					   link->port, link->port, IPPROTO_UDP,
					   0, link->ifindex);
		if (IS_ERR(rt))
			goto out_error;
		saddr = fl4.saddr;
		dst_cache_set_ip4(&peer->dst_cache, &rt->dst, saddr);
	}
	err = skb_cow_head(skb, LL_RESERVED_SPACE(rt->dst.dev) +
			   SOFTIB_LINK_UDPIP);
	if (err) {
		ip_rt_put(rt);
		goto out_error;
	}
	softib_link_count(link, SOFTIB_LC_TX_FRAMES, 1);
	softib_link_count(link, SOFTIB_LC_TX_BYTES, skb->len);
	udp_tunnel_xmit_skb(rt, sk, skb, saddr, peer->addr, 0,
			    ip4_dst_hoplimit(&rt->dst), htons(IP_DF),
			    link->port, link->port, false, false);
	local_bh_enable();
	rcu_read_unlock();
	return;

out_error:
	local_bh_enable();
	softib_link_count(link, SOFTIB_LC_TX_ERRORS, 1);
out_unlock:
	rcu_read_unlock();
drop:
	kfree_skb(skb);
}

/*
 * Send what is waiting in the peer's xmitq, in order. Frames are put
 * there under the peer's lock as they are numbered, and one context at
 * a time sends them with the lock dropped: the others only add to the
 * queue. So DATA frames leave in sequence whoever made them (a send, an
 * ACK in softirq, the timer), and no reordering of ours costs a NAK.
 */
static void softib_link_kick(struct softib_link_peer *peer)
{
	struct sk_buff *skb;

	spin_lock_bh(&peer->lock);
	if (peer->xmitting) {
		spin_unlock_bh(&peer->lock);
		return;
	}
	peer->xmitting = true;
	while ((skb = __skb_dequeue(&peer->xmitq))) {
		spin_unlock_bh(&peer->lock);
		softib_link_xmit(peer, skb);
		spin_lock_bh(&peer->lock);
	}
	peer->xmitting = false;
	spin_unlock_bh(&peer->lock);
}

/* An ACK (or NAK, or probe) built now: they are not kept or resent. */
static struct sk_buff *softib_link_ack(struct softib_link_peer *peer, u8 flags)
{
	struct softib_link_hdr *h;
	struct sk_buff *skb;
	u32 qlen = skb_queue_len(&peer->rxq);

	lockdep_assert_held(&peer->lock);
	skb = softib_link_alloc(0, GFP_ATOMIC);
	if (!skb)
		return NULL;
	h = softib_link_push(skb, SOFTIB_LT_ACK, peer->tx_session);
	h->seq = cpu_to_be32(++peer->ack_serial_tx);
	h->ack = cpu_to_be32(peer->rcv_nxt);
	h->window = cpu_to_be16(qlen < softib_link_rxq ?
				softib_link_rxq - qlen : 0);
	peer->adv_edge = peer->rcv_nxt + be16_to_cpu(h->window);
	h->flags = flags;
	softib_link_seal(peer->tx_key, skb);
	peer->ack_due = 0;
	peer->last_tx = jiffies;
	softib_link_count(peer->link, flags & SOFTIB_LF_NAK ? SOFTIB_LC_TX_NAKS :
			  flags & SOFTIB_LF_PROBE ? SOFTIB_LC_TX_PROBES :
			  SOFTIB_LC_TX_ACKS, 1);
	return skb;
}

static void softib_link_queue_ack(struct softib_link_peer *peer, u8 flags,
				  struct sk_buff_head *out)
{
	struct sk_buff *skb = softib_link_ack(peer, flags);

	if (skb)
		__skb_queue_tail(out, skb);
}

/*
 * Copies of the DATA frames the window allows now, for the caller to
 * send once the lock is dropped. A frame's first copy sets its send
 * time; any later one is a retransmission.
 */
static void softib_link_pump(struct softib_link_peer *peer,
			     struct sk_buff_head *out)
{
	u32 limit = peer->snd_una + softib_link_window;
	struct softib_link_cb *cb;
	struct sk_buff *skb, *copy;

	lockdep_assert_held(&peer->lock);
	if (peer->state != SOFTIB_PEER_UP)
		return;
	if (softib_seq_before(peer->snd_limit, limit))
		limit = peer->snd_limit;
	while (peer->tx_next && softib_seq_before(peer->snd_nxt, limit)) {
		skb = peer->tx_next;
		cb = softib_link_cb(skb);
		copy = pskb_copy(skb, GFP_ATOMIC);
		if (!copy)
			break;
		if (cb->sent_at) {
			cb->resent = true;
			softib_link_count(peer->link, SOFTIB_LC_RETRANSMITS, 1);
		} else {
			cb->sent_at = jiffies;
		}
		if (peer->snd_nxt == peer->snd_una)
			peer->rto_at = jiffies + peer->rto;
		__skb_queue_tail(out, copy);
		peer->snd_nxt++;
		peer->tx_next = skb_queue_is_last(&peer->txq, skb) ? NULL :
				skb_queue_next(&peer->txq, skb);
		peer->last_tx = jiffies;
	}
	if (peer->tx_next && !softib_seq_before(peer->snd_nxt, peer->snd_limit) &&
	    !peer->was_zero) {
		/* the receiver's credits are used up: wait for its ACK */
		peer->was_zero = true;
		peer->probe_at = jiffies + peer->rto;
		softib_link_count(peer->link, SOFTIB_LC_WINDOW_ZERO, 1);
	}
}

/*
 * A NAK from a receiver that kept what came after the gap: only the
 * oldest unacknowledged frame, "seq", is missing. A copy of it goes
 * out again, ahead of anything new.
 */
static void softib_link_resend(struct softib_link_peer *peer, u32 seq,
			       struct sk_buff_head *out)
{
	struct sk_buff *skb = skb_peek(&peer->txq), *copy;

	lockdep_assert_held(&peer->lock);
	if (!skb || softib_link_cb(skb)->seq != seq)
		return;
	copy = pskb_copy(skb, GFP_ATOMIC);
	if (!copy)
		return;		/* the RTO sends it again */
	softib_link_cb(skb)->resent = true;
	softib_link_count(peer->link, SOFTIB_LC_RETRANSMITS, 1);
	__skb_queue_tail(out, copy);
	peer->last_tx = jiffies;
	/* its answer needs a round trip: no RTO before that */
	peer->rto_at = jiffies + peer->rto;
}

/* Go back: send again from the oldest unacknowledged frame. */
static void softib_link_rewind(struct softib_link_peer *peer, u32 from)
{
	struct sk_buff *skb;

	lockdep_assert_held(&peer->lock);
	skb_queue_walk(&peer->txq, skb) {
		if (softib_link_cb(skb)->seq == from) {
			peer->tx_next = skb;
			peer->snd_nxt = from;
			return;
		}
	}
}

static void softib_link_rtt(struct softib_link_peer *peer, unsigned long sent)
{
	u32 us = jiffies_to_usecs(jiffies - sent);
	unsigned long rto;

	if (!peer->srtt_us) {
		peer->srtt_us = us;
		peer->rttvar_us = us / 2;
	} else {
		u32 d = us > peer->srtt_us ? us - peer->srtt_us :
					      peer->srtt_us - us;

		peer->rttvar_us = (3 * peer->rttvar_us + d) / 4;
		peer->srtt_us = (7 * peer->srtt_us + us) / 8;
	}
	rto = usecs_to_jiffies(peer->srtt_us + 4 * peer->rttvar_us);
	peer->rto = clamp(rto, SOFTIB_LINK_RTO_MIN, SOFTIB_LINK_RTO_MAX / 2);
}

/* Forget the session: what was queued either way is gone with it. */
static void softib_link_reset(struct softib_link_peer *peer)
{
	struct softib_link *link = peer->link;

	lockdep_assert_held(&peer->lock);
	softib_link_count(link, SOFTIB_LC_TX_DROPPED_DOWN,
			  skb_queue_len(&peer->txq));
	__skb_queue_purge(&peer->txq);
	__skb_queue_purge(&peer->rxq);
	__skb_queue_purge(&peer->ooq);
	peer->tx_next = NULL;
	peer->snd_una = 0;
	peer->snd_nxt = 0;
	peer->snd_end = 0;
	peer->snd_limit = softib_link_rxq;
	peer->ack_serial_rx = 0;
	peer->ack_serial_tx = 0;
	peer->rcv_nxt = 0;
	peer->adv_edge = 0;
	peer->nak_for = 0;
	peer->ack_due = 0;
	peer->was_zero = false;
	peer->rto = SOFTIB_LINK_RTO_INIT;
	peer->srtt_us = 0;
	peer->rttvar_us = 0;
	peer->echo_tx = 0;
	peer->echo_rx = 0;
}

static void softib_link_down(struct softib_link_peer *peer, const char *why)
{
	lockdep_assert_held(&peer->lock);
	if (peer->state != SOFTIB_PEER_UP)
		return;
	pr_info("link to %pI4 (node %u) down: %s\n", &peer->addr, peer->node,
		why);
	softib_link_reset(peer);
	kfree_skb(peer->confirm);
	peer->confirm = NULL;
	peer->gen++;
	WRITE_ONCE(peer->state, SOFTIB_PEER_DOWN);
	peer->hs_pending = false;
	peer->hs_retry = SOFTIB_LINK_HS_RETRY;
	softib_link_count(peer->link, SOFTIB_LC_PEER_DOWN, 1);
	wake_up_all(&peer->wait);
	softib_switch_link_port(peer->link->sdev, peer - peer->link->peers,
				false, 0, 0, 0);
	softib_sm_peers_changed(peer->link->sdev);
}

/* A handshake frame, tagged with the fabric key. */
static struct sk_buff *softib_link_hs_frame(struct softib_link_peer *peer,
					    u8 type, const u8 *nonce,
					    const u8 *echo, u32 session)
{
	struct softib_link *link = peer->link;
	struct softib_dev *sdev = link->sdev;
	struct softib_link_hs *hs;
	struct sk_buff *skb;

	skb = softib_link_alloc(sizeof(*hs), GFP_ATOMIC);
	if (!skb)
		return NULL;
	hs = skb_put_zero(skb, sizeof(*hs));
	hs->guid = cpu_to_be64(softib_node_guid);
	memcpy(hs->nonce, nonce, sizeof(hs->nonce));
	if (echo)
		memcpy(hs->echo, echo, sizeof(hs->echo));
	hs->session = cpu_to_be32(session);
	hs->node = cpu_to_be16(softib_node);
	hs->ib_mtu = cpu_to_be16(link->ib_mtu);
	hs->nports = sdev->nports;
	hs->sm_priority = softib_sm_hs_priority();
	hs->features = SOFTIB_HS_F_SWITCH_PORT;
	softib_link_push(skb, type, 0);
	softib_link_seal(link->key, skb);
	softib_link_count(link, SOFTIB_LC_HS_SENT, 1);
	return skb;
}

static u32 softib_link_new_session(u32 old)
{
	u32 s;

	do {
		s = get_random_u32();
	} while (!s || s == old);
	return s;
}

/*
 * The responder keeps no state for a HELLO: its nonce is a cookie, a
 * tag of the HELLO's nonce and GUID under a key of its own and a time
 * bucket. A CONFIRM proves the answer by echoing the cookie, which the
 * responder computes again. So no HELLO, repeated, late or replayed,
 * can overwrite a handshake in progress, and a CONFIRM is good for one
 * or two buckets (4-8 s) only.
 */
#define SOFTIB_LINK_COOKIE_SECS	4

static void softib_link_cookie(struct softib_link *link, const u8 *init_nonce,
			       u64 guid, u32 bucket, u8 *cookie)
{
	struct blake2s_state st;
	__be64 g = cpu_to_be64(guid);
	__be32 b = cpu_to_be32(bucket);

	blake2s_init_key(&st, 16, link->cookie_key, sizeof(link->cookie_key));
	blake2s_update(&st, init_nonce, 16);
	blake2s_update(&st, (const u8 *)&g, sizeof(g));
	blake2s_update(&st, (const u8 *)&b, sizeof(b));
	blake2s_final(&st, cookie);
}

static u32 softib_link_bucket(void)
{
	return (u32)(ktime_get_seconds() / SOFTIB_LINK_COOKIE_SECS);
}

/* the session id the responder receives on, from its cookie */
static u32 softib_link_cookie_session(const u8 *cookie)
{
	return get_unaligned_be32(cookie) ?: 1;
}

static void softib_link_hello(struct softib_link_peer *peer,
			      struct sk_buff_head *out)
{
	struct sk_buff *skb;

	lockdep_assert_held(&peer->lock);
	if (READ_ONCE(peer->link->mtu_short))
		return;
	/*
	 * The answer to the HELLO before this one may still be on its
	 * way (a long round trip): it stays good, and the retries slow
	 * down, so that some answer always finds its nonce.
	 */
	peer->hs_prev_valid = peer->hs_pending;
	memcpy(peer->hs_prev_nonce, peer->hs_nonce, sizeof(peer->hs_nonce));
	peer->hs_prev_session = peer->hs_session;
	get_random_bytes(peer->hs_nonce, sizeof(peer->hs_nonce));
	/* the session id we will receive on, if this handshake completes */
	peer->hs_session = softib_link_new_session(peer->rx_session);
	if (peer->hs_pending)
		peer->hs_retry = min(peer->hs_retry * 2, SOFTIB_LINK_HS_RETRY_MAX);
	peer->hs_pending = true;
	peer->hs_sent_at = jiffies;
	skb = softib_link_hs_frame(peer, SOFTIB_LT_HELLO, peer->hs_nonce, NULL,
				   peer->hs_session);
	if (skb)
		__skb_queue_tail(out, skb);
}

/* Time for a HELLO of ours? Not while one is in flight. */
static bool softib_link_hello_due(struct softib_link_peer *peer)
{
	lockdep_assert_held(&peer->lock);
	return !peer->hs_pending ||
	       time_after_eq(jiffies, peer->hs_sent_at + peer->hs_retry);
}

/* Has this initiator nonce made a session already (a replayed CONFIRM)? */
static bool softib_link_nonce_used(struct softib_link_peer *peer,
				   const u8 *nonce)
{
	u32 i;

	for (i = 0; i < ARRAY_SIZE(peer->used_nonces); i++)
		if (!memcmp(peer->used_nonces[i], nonce, 16))
			return true;
	return false;
}

/* Both ends agreed: the new session replaces any old one. */
static void softib_link_session_up(struct softib_link_peer *peer,
				   const struct softib_link_hs *hs,
				   const u8 *init_nonce, const u8 *resp_nonce,
				   u32 rx_session, u32 tx_session)
{
	struct softib_link *link = peer->link;
	u64 guid = be64_to_cpu(hs->guid);
	bool was_up = peer->state == SOFTIB_PEER_UP;

	lockdep_assert_held(&peer->lock);
	if (was_up)
		softib_link_reset(peer);
	softib_link_derive(link, peer->tx_key, init_nonce, resp_nonce,
			   softib_node_guid, guid);
	softib_link_derive(link, peer->rx_key, init_nonce, resp_nonce,
			   guid, softib_node_guid);
	memcpy(peer->used_nonces[peer->used_next], init_nonce, 16);
	peer->used_next = (peer->used_next + 1) % ARRAY_SIZE(peer->used_nonces);
	peer->rx_session = rx_session;
	peer->tx_session = tx_session;
	peer->guid = guid;
	peer->node = be16_to_cpu(hs->node);
	peer->ib_mtu = be16_to_cpu(hs->ib_mtu);
	peer->sm_priority = hs->sm_priority;
	peer->gen++;
	peer->refused_logged = false;
	WRITE_ONCE(peer->state, SOFTIB_PEER_UP);
	peer->hs_pending = false;
	peer->hs_prev_valid = false;
	peer->hs_retry = SOFTIB_LINK_HS_RETRY;
	peer->last_rx = jiffies;
	peer->last_tx = jiffies;
	softib_link_count(link, SOFTIB_LC_HS_DONE, 1);
	softib_link_count(link, SOFTIB_LC_PEER_UP, 1);
	pr_info("link to %pI4 up: node %u, GUID %016llx%s\n", &peer->addr,
		peer->node, guid, was_up ? " (new session)" : "");
	wake_up_all(&peer->wait);
	/*
	 * The switch's port to the peer trains (its cable is the session;
	 * a new session is a new cable: the port goes down first, so that
	 * an SM sees the change). A peer whose switch has no port to this
	 * one (an older softib) leaves it down: a directed route through
	 * it would lead nowhere.
	 */
	if (was_up)
		softib_switch_link_port(link->sdev, peer - link->peers, false,
					0, 0, 0);
	if (hs->features & SOFTIB_HS_F_SWITCH_PORT)
		softib_switch_link_port(link->sdev, peer - link->peers, true,
					link->ib_mtu, peer->node, hs->nports);
	/* a new SM on the fabric, or the same one reloaded: elect */
	softib_sm_peers_changed(link->sdev);
}

/* May this HELLO's sender be on the fabric with us? */
static bool softib_link_hs_ok(struct softib_link_peer *peer,
			      const struct softib_link_hs *hs)
{
	struct softib_link *link = peer->link;
	u64 guid = be64_to_cpu(hs->guid);

	/* one log line per peer until a session with it comes up */
	if (guid == softib_node_guid || be16_to_cpu(hs->node) == softib_node) {
		if (!peer->refused_logged)
			pr_warn("link: %pI4 is node %u too: give every node its own node= number\n",
				&peer->addr, softib_node);
		peer->refused_logged = true;
		return false;
	}
	if (be16_to_cpu(hs->ib_mtu) != link->ib_mtu) {
		if (!peer->refused_logged)
			pr_warn("link: %pI4 has IB MTU %u, this node %u: give the links the same MTU on every node\n",
				&peer->addr, be16_to_cpu(hs->ib_mtu),
				link->ib_mtu);
		peer->refused_logged = true;
		return false;
	}
	return true;
}

/* HELLO: answer with the cookie; nothing is kept. */
static void softib_link_rx_hello(struct softib_link_peer *peer,
				 const struct softib_link_hs *hs,
				 struct sk_buff_head *out)
{
	u8 cookie[16];
	struct sk_buff *reply;

	/*
	 * Both ends opened at once: the lower GUID's handshake goes on,
	 * the higher one answers it (and its own HELLO goes unanswered).
	 */
	if (peer->hs_pending && softib_node_guid < be64_to_cpu(hs->guid))
		return;
	softib_link_cookie(peer->link, hs->nonce, be64_to_cpu(hs->guid),
			   softib_link_bucket(), cookie);
	reply = softib_link_hs_frame(peer, SOFTIB_LT_HELLO_ACK, cookie,
				     hs->nonce,
				     softib_link_cookie_session(cookie));
	if (reply)
		__skb_queue_tail(out, reply);
}

/*
 * HELLO_ACK: the answer to our HELLO now or the one before. The session
 * is ours from here; the CONFIRM is sent again until the peer's first
 * frame of the session shows that it has it too.
 */
static void softib_link_rx_hello_ack(struct softib_link_peer *peer,
				     const struct softib_link_hs *hs,
				     struct sk_buff_head *out)
{
	struct softib_link *link = peer->link;
	u8 init_nonce[16];
	struct sk_buff *reply;
	u32 rx_session;

	if (peer->hs_pending &&
	    !crypto_memneq(hs->echo, peer->hs_nonce, sizeof(hs->echo))) {
		memcpy(init_nonce, peer->hs_nonce, sizeof(init_nonce));
		rx_session = peer->hs_session;
	} else if (peer->hs_pending && peer->hs_prev_valid &&
		   !crypto_memneq(hs->echo, peer->hs_prev_nonce,
				  sizeof(hs->echo))) {
		memcpy(init_nonce, peer->hs_prev_nonce, sizeof(init_nonce));
		rx_session = peer->hs_prev_session;
	} else {
		softib_link_count(link, SOFTIB_LC_HS_STALE, 1);
		return;
	}
	reply = softib_link_hs_frame(peer, SOFTIB_LT_CONFIRM, init_nonce,
				     hs->nonce, rx_session);
	softib_link_session_up(peer, hs, init_nonce, hs->nonce, rx_session,
			       be32_to_cpu(hs->session));
	if (!reply)
		return;
	kfree_skb(peer->confirm);
	peer->confirm = skb_copy(reply, GFP_ATOMIC);
	peer->confirm_left = SOFTIB_LINK_CONFIRM_TRIES;
	peer->confirm_at = jiffies + SOFTIB_LINK_CONFIRM_EVERY;
	__skb_queue_tail(out, reply);
}

/* CONFIRM: the echo must be our cookie of its nonce, of now or before. */
static void softib_link_rx_confirm(struct softib_link_peer *peer,
				   const struct softib_link_hs *hs)
{
	struct softib_link *link = peer->link;
	u64 guid = be64_to_cpu(hs->guid);
	u32 bucket = softib_link_bucket();
	u8 cookie[16];
	u32 i;

	for (i = 0; i < 2; i++) {
		softib_link_cookie(link, hs->nonce, guid, bucket - i, cookie);
		if (!crypto_memneq(cookie, hs->echo, sizeof(cookie)))
			break;
	}
	if (i == 2) {
		softib_link_count(link, SOFTIB_LC_HS_STALE, 1);
		return;
	}
	/* a CONFIRM sent again, or replayed: that session exists already */
	if (softib_link_nonce_used(peer, hs->nonce)) {
		softib_link_count(link, SOFTIB_LC_HS_STALE, 1);
		return;
	}
	softib_link_session_up(peer, hs, hs->nonce, cookie,
			       softib_link_cookie_session(cookie),
			       be32_to_cpu(hs->session));
}

static void softib_link_rx_hs(struct softib_link_peer *peer,
			      const struct softib_link_hdr *h,
			      struct sk_buff *skb, unsigned int off,
			      struct sk_buff_head *out)
{
	struct softib_link *link = peer->link;
	struct softib_link_hs hs;

	if (be16_to_cpu(h->len) != sizeof(hs) ||
	    skb_copy_bits(skb, off, &hs, sizeof(hs))) {
		softib_link_count(link, SOFTIB_LC_RX_MALFORMED, 1);
		return;
	}
	if (!softib_link_hs_ok(peer, &hs)) {
		softib_link_count(link, SOFTIB_LC_HS_REFUSED, 1);
		return;
	}
	switch (h->type) {
	case SOFTIB_LT_HELLO:
		softib_link_rx_hello(peer, &hs, out);
		break;
	case SOFTIB_LT_HELLO_ACK:
		softib_link_rx_hello_ack(peer, &hs, out);
		break;
	case SOFTIB_LT_CONFIRM:
		softib_link_rx_confirm(peer, &hs);
		break;
	}
}

/* An ACK: free what it acknowledges, take its credits, resend on NAK. */
static void softib_link_rx_ack(struct softib_link_peer *peer,
			       const struct softib_link_hdr *h,
			       struct sk_buff_head *out)
{
	struct softib_link *link = peer->link;
	u32 serial = be32_to_cpu(h->seq);
	u32 ack = be32_to_cpu(h->ack);
	struct sk_buff *skb;
	bool freed = false;

	/* serials only grow in a session: an older one is a replay */
	if (!softib_seq_before(peer->ack_serial_rx, serial)) {
		softib_link_count(link, SOFTIB_LC_RX_REPLAY, 1);
		return;
	}
	peer->ack_serial_rx = serial;
	if (softib_seq_before(peer->snd_end, ack)) {
		/* it acknowledges frames never sent: a broken peer */
		softib_link_count(link, SOFTIB_LC_RX_MALFORMED, 1);
		return;
	}
	while ((skb = skb_peek(&peer->txq)) &&
	       softib_seq_before(softib_link_cb(skb)->seq, ack)) {
		struct softib_link_cb *cb = softib_link_cb(skb);

		if (cb->seq + 1 == ack && !cb->resent && cb->sent_at)
			softib_link_rtt(peer, cb->sent_at);
		if (peer->tx_next == skb)
			peer->tx_next = skb_queue_is_last(&peer->txq, skb) ?
					NULL : skb_queue_next(&peer->txq, skb);
		__skb_unlink(skb, &peer->txq);
		kfree_skb(skb);
		freed = true;
	}
	if (softib_seq_before(peer->snd_una, ack)) {
		peer->snd_una = ack;
		if (softib_seq_before(peer->snd_nxt, ack))
			peer->snd_nxt = ack;
		peer->rto_at = jiffies + peer->rto;
	}
	peer->snd_limit = ack + be16_to_cpu(h->window);
	if (be16_to_cpu(h->window))
		peer->was_zero = false;
	if (h->flags & SOFTIB_LF_NAK) {
		softib_link_count(link, SOFTIB_LC_RX_NAKS, 1);
		if (!softib_seq_before(ack, peer->snd_nxt))
			;	/* nothing sent from there yet */
		else if (h->flags & SOFTIB_LF_KEPT)
			softib_link_resend(peer, ack, out);
		else
			softib_link_rewind(peer, ack);
	}
	if (h->flags & SOFTIB_LF_PROBE)
		softib_link_queue_ack(peer, 0, out);
	softib_link_pump(peer, out);
	if (freed)
		wake_up_all(&peer->wait);
}

/*
 * A DATA frame after a gap: kept in sequence order until the gap fills,
 * so that a frame the underlay reordered or lost costs one resend, not
 * the resend of all that followed it. What the receive queue and this
 * one hold together stays within link_rxq, the credits granted; a frame
 * beyond that (or a second copy of one kept) is not kept, and the
 * sender sends it again. Returns true when kept (the queue owns it).
 */
static bool softib_link_keep(struct softib_link_peer *peer, u32 seq,
			     struct sk_buff *skb)
{
	struct softib_link *link = peer->link;
	struct sk_buff *pos;
	u32 s;

	if (seq - peer->rcv_nxt >= softib_link_rxq ||
	    skb_queue_len(&peer->rxq) + skb_queue_len(&peer->ooq) >=
	    softib_link_rxq) {
		softib_link_count(link, SOFTIB_LC_RX_OOO, 1);
		return false;
	}
	/* from the tail: after a gap, frames mostly arrive in order */
	skb_queue_reverse_walk(&peer->ooq, pos) {
		s = softib_link_cb(pos)->seq;
		if (s == seq) {
			softib_link_count(link, SOFTIB_LC_RX_DUP, 1);
			return false;
		}
		if (softib_seq_before(s, seq))
			break;
	}
	softib_link_count(link, SOFTIB_LC_RX_OOO, 1);
	softib_link_cb(skb)->seq = seq;
	/* it waits: nothing of the stack's stays with it */
	skb_dst_drop(skb);
	nf_reset_ct(skb);
	if (pos == (struct sk_buff *)&peer->ooq)
		__skb_queue_head(&peer->ooq, skb);
	else
		__skb_queue_after(&peer->ooq, pos, skb);
	return true;
}

/*
 * A DATA frame: the next in order is queued for the rx work (*queued),
 * and so is what was kept after it; a later one is kept (*kept). Either
 * way the frame is no longer the caller's.
 */
static void softib_link_rx_data(struct softib_link_peer *peer,
				const struct softib_link_hdr *h,
				struct sk_buff *skb, struct sk_buff_head *out,
				bool *queued, bool *kept)
{
	struct softib_link *link = peer->link;
	u32 seq = be32_to_cpu(h->seq);

	if (seq != peer->rcv_nxt) {
		if (softib_seq_before(seq, peer->rcv_nxt)) {
			/* a duplicate or a replay: it was delivered already */
			softib_link_count(link, SOFTIB_LC_RX_DUP, 1);
			softib_link_queue_ack(peer, 0, out);
			return;
		}
		*kept = softib_link_keep(peer, seq, skb);
		/*
		 * A gap: ask once per gap for a resend of rcv_nxt alone,
		 * or of all from there if this frame could not be kept
		 * (only a sender beyond its credits gets there)
		 */
		if (peer->nak_for != peer->rcv_nxt + 1) {
			peer->nak_for = peer->rcv_nxt + 1;
			softib_link_queue_ack(peer, SOFTIB_LF_NAK |
					      (*kept ? SOFTIB_LF_KEPT : 0), out);
		}
		return;
	}
	if (skb_queue_len(&peer->rxq) + skb_queue_len(&peer->ooq) >=
	    softib_link_rxq) {
		/* beyond the credits we gave: the sender sends it again */
		softib_link_count(link, SOFTIB_LC_RX_OVER_WINDOW, 1);
		softib_link_queue_ack(peer, 0, out);
		return;
	}
	peer->rcv_nxt++;
	/* it waits for the rx work: nothing of the stack's stays with it */
	skb_dst_drop(skb);
	nf_reset_ct(skb);
	__skb_queue_tail(&peer->rxq, skb);
	*queued = true;
	peer->ack_due++;
	/* the gap filled: what was kept after it follows, up to the next */
	while ((skb = skb_peek(&peer->ooq)) &&
	       softib_link_cb(skb)->seq == peer->rcv_nxt) {
		__skb_unlink(skb, &peer->ooq);
		__skb_queue_tail(&peer->rxq, skb);
		peer->rcv_nxt++;
		peer->ack_due++;
	}
	peer->rx_peak = max(peer->rx_peak, skb_queue_len(&peer->rxq));
	if (!skb_queue_empty(&peer->ooq) && peer->nak_for != peer->rcv_nxt + 1) {
		/* another gap behind it */
		peer->nak_for = peer->rcv_nxt + 1;
		softib_link_queue_ack(peer, SOFTIB_LF_NAK | SOFTIB_LF_KEPT,
				      out);
	} else if (peer->ack_due >= SOFTIB_LINK_ACK_EVERY) {
		softib_link_queue_ack(peer, 0, out);
	}
}

static struct softib_link_peer *softib_link_peer_by_addr(struct softib_link *link,
							 __be32 addr)
{
	u32 i;

	for (i = 0; i < link->npeers; i++)
		if (link->peers[i].addr == addr)
			return &link->peers[i];
	return NULL;
}

/*
 * One received frame, in softirq context. Returns true when the link
 * took the frame: queued for the rx work, or kept after a gap.
 */
static bool softib_link_rx_one(struct softib_link *link, struct sk_buff *skb,
			       __be32 saddr)
{
	struct softib_link_peer *peer;
	struct softib_link_hdr h;
	u8 tag[BLAKE2S_128_HASH_SIZE];
	bool queued = false, kept = false;
	unsigned int len;
	const u8 *key;

	/* whatever it is, a frame from off the fabric is that first */
	peer = softib_link_peer_by_addr(link, saddr);
	if (!peer) {
		softib_link_count(link, SOFTIB_LC_RX_UNKNOWN_SRC, 1);
		return false;
	}
	if (skb_copy_bits(skb, 0, &h, sizeof(h)) ||
	    be16_to_cpu(h.magic) != SOFTIB_LINK_MAGIC ||
	    h.ver != SOFTIB_LINK_VER) {
		softib_link_count(link, SOFTIB_LC_RX_MALFORMED, 1);
		return false;
	}
	len = be16_to_cpu(h.len);
	if (skb->len < sizeof(h) + len || h.type < SOFTIB_LT_DATA ||
	    h.type > SOFTIB_LT_CLOSE) {
		softib_link_count(link, SOFTIB_LC_RX_MALFORMED, 1);
		return false;
	}
	softib_link_count(link, SOFTIB_LC_RX_FRAMES, 1);

	spin_lock_bh(&peer->lock);
	if (h.type == SOFTIB_LT_HELLO || h.type == SOFTIB_LT_HELLO_ACK ||
	    h.type == SOFTIB_LT_CONFIRM) {
		softib_link_mac(link->key, &h, skb, sizeof(h), len, tag);
		if (crypto_memneq(tag, h.tag, sizeof(tag))) {
			softib_link_count(link, SOFTIB_LC_HS_BAD_MAC, 1);
			goto unlock;
		}
		softib_link_rx_hs(peer, &h, skb, sizeof(h), &peer->xmitq);
		goto unlock;
	}

	/* everything else belongs to a session */
	if (peer->state != SOFTIB_PEER_UP) {
		softib_link_count(link, SOFTIB_LC_RX_NO_SESSION, 1);
		/* the peer thinks it is up with us: make it shake hands */
		if (softib_link_hello_due(peer))
			softib_link_hello(peer, &peer->xmitq);
		goto unlock;
	}
	if (be32_to_cpu(h.session) != peer->rx_session) {
		softib_link_count(link, SOFTIB_LC_RX_STALE_SESSION, 1);
		goto unlock;
	}
	key = peer->rx_key;
	softib_link_mac(key, &h, skb, sizeof(h), len, tag);
	if (crypto_memneq(tag, h.tag, sizeof(tag))) {
		softib_link_count(link, SOFTIB_LC_RX_BAD_MAC, 1);
		goto unlock;
	}
	peer->last_rx = jiffies;
	/* the peer sends in the session: it has our CONFIRM */
	if (peer->confirm) {
		kfree_skb(peer->confirm);
		peer->confirm = NULL;
	}

	switch (h.type) {
	case SOFTIB_LT_DATA:
		if (!pskb_pull(skb, sizeof(h)) || pskb_trim(skb, len)) {
			softib_link_count(link, SOFTIB_LC_RX_MALFORMED, 1);
			break;
		}
		softib_link_cb(skb)->proto = h.proto;
		softib_link_cb(skb)->flags = h.flags;
		softib_link_rx_data(peer, &h, skb, &peer->xmitq, &queued,
				    &kept);
		break;
	case SOFTIB_LT_ACK:
		softib_link_rx_ack(peer, &h, &peer->xmitq);
		break;
	case SOFTIB_LT_CLOSE:
		softib_link_down(peer, "the peer closed the link");
		break;
	}
unlock:
	spin_unlock_bh(&peer->lock);
	if (queued)
		queue_work(link->sdev->wq, &peer->rx_work);
	softib_link_kick(peer);
	return queued || kept;
}

/* The UDP socket's receive hook: skb->data is at the UDP header. */
static int softib_link_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct softib_link *link = rcu_dereference_sk_user_data(sk);
	__be32 saddr = ip_hdr(skb)->saddr;
	struct sk_buff *copy = NULL;

	if (!link || READ_ONCE(link->closing))
		goto drop;
	if (!pskb_pull(skb, sizeof(struct udphdr)))
		goto drop;
	if (READ_ONCE(link->fault_blackhole) ||
	    atomic_add_unless(&link->fault_drop_rx, -1, 0)) {
		softib_link_count(link, SOFTIB_LC_FAULT_DROPPED, 1);
		goto drop;
	}
	/* fault/replay: the same frame again, right after the original */
	if (atomic_add_unless(&link->fault_replay, -1, 0))
		copy = skb_copy(skb, GFP_ATOMIC);
	if (!softib_link_rx_one(link, skb, saddr))
		kfree_skb(skb);
	if (copy && !softib_link_rx_one(link, copy, saddr))
		kfree_skb(copy);
	return 0;
drop:
	kfree_skb(skb);
	return 0;
}

/* Control messages: ECHO checks that frames arrive whole and in order. */
static void softib_link_rx_ctrl(struct softib_link_peer *peer,
				struct sk_buff *skb)
{
	struct softib_link *link = peer->link;
	unsigned int i;
	__be64 ctr;
	u8 type, b;
	u64 n;

	if (skb_copy_bits(skb, 0, &type, 1) || type != SOFTIB_LC_ECHO ||
	    skb_copy_bits(skb, 1, &ctr, sizeof(ctr))) {
		softib_link_count(link, SOFTIB_LC_RX_MALFORMED, 1);
		return;
	}
	n = be64_to_cpu(ctr);
	if (n != peer->echo_rx) {
		softib_link_count(link, SOFTIB_LC_ECHO_BAD, 1);
		peer->echo_rx = n + 1;
		return;
	}
	peer->echo_rx++;
	for (i = 1 + sizeof(ctr); i < skb->len; i++) {
		if (skb_copy_bits(skb, i, &b, 1) || b != (u8)(n * 7 + i)) {
			softib_link_count(link, SOFTIB_LC_ECHO_BAD, 1);
			return;
		}
	}
	softib_link_count(link, SOFTIB_LC_ECHO_OK, 1);
}

/*
 * Deliver what came in order, in process context as the send engines
 * run. It never waits for the transmit side, so the two directions of
 * a link cannot hold each other up.
 */
static void softib_link_rx_work(struct work_struct *work)
{
	struct softib_link_peer *peer =
		container_of(work, struct softib_link_peer, rx_work);
	struct softib_link *link = peer->link;
	struct sk_buff *skb;

	for (;;) {
		spin_lock_bh(&peer->lock);
		if (time_before(jiffies, peer->stall_until) &&
		    !READ_ONCE(link->closing)) {
			/* fault/rx_stall_ms: the consumer is slow */
			if (peer->ack_due)
				softib_link_queue_ack(peer, 0, &peer->xmitq);
			spin_unlock_bh(&peer->lock);
			softib_link_kick(peer);
			usleep_range(5000, 10000);
			continue;
		}
		skb = __skb_dequeue(&peer->rxq);
		/*
		 * Tell the sender when the queue drained with frames not
		 * acknowledged yet, and when we can grant a quarter of the
		 * queue more than it knows (a window it saw closed opens).
		 */
		if (skb) {
			u32 known = peer->adv_edge - peer->rcv_nxt;
			u32 free = softib_link_rxq - skb_queue_len(&peer->rxq);

			if ((skb_queue_empty(&peer->rxq) && peer->ack_due) ||
			    (free > known &&
			     free - known >= softib_link_rxq / 4))
				softib_link_queue_ack(peer, 0, &peer->xmitq);
		}
		spin_unlock_bh(&peer->lock);
		softib_link_kick(peer);
		if (!skb)
			break;
		if (softib_link_cb(skb)->proto == SOFTIB_LP_CTRL) {
			softib_link_rx_ctrl(peer, skb);
		} else if (softib_link_cb(skb)->proto == SOFTIB_LP_IB) {
			softib_link_count(link, SOFTIB_LC_RX_IB, 1);
			if (!softib_wire_recv(link->sdev, skb,
					      softib_link_cb(skb)->flags,
					      peer - link->peers))
				softib_link_count(link, SOFTIB_LC_RX_IB_BAD, 1);
		} else {
			softib_link_count(link, SOFTIB_LC_RX_MALFORMED, 1);
		}
		softib_link_count(link, SOFTIB_LC_RX_DELIVERED, 1);
		consume_skb(skb);
		cond_resched();
	}
}

/* The peer's clock: retransmission, probes, keepalive, handshake, death. */
static void softib_link_timer(struct timer_list *t)
{
	struct softib_link_peer *peer = from_timer(peer, t, timer);
	struct softib_link *link = peer->link;
	unsigned long now = jiffies, next;

	spin_lock_bh(&peer->lock);
	if (READ_ONCE(link->closing)) {
		spin_unlock_bh(&peer->lock);
		return;
	}
	if (peer->state == SOFTIB_PEER_UP && READ_ONCE(link->mtu_short))
		softib_link_down(peer, "the interface's MTU is below the IB MTU's");
	if (peer->state != SOFTIB_PEER_UP) {
		if (softib_link_hello_due(peer))
			softib_link_hello(peer, &peer->xmitq);
		next = SOFTIB_LINK_TICK_IDLE;
		goto unlock;
	}
	if (time_after(now, peer->last_rx +
		       msecs_to_jiffies(softib_link_dead_ms))) {
		softib_link_down(peer, "nothing heard within link_dead_ms");
		softib_link_hello(peer, &peer->xmitq);
		next = SOFTIB_LINK_TICK_IDLE;
		goto unlock;
	}
	if (peer->snd_una != peer->snd_nxt && time_after(now, peer->rto_at)) {
		/* nothing acknowledged for an RTO: all of it again, slower */
		softib_link_count(link, SOFTIB_LC_RTO, 1);
		peer->rto = min(peer->rto * 2, SOFTIB_LINK_RTO_MAX);
		softib_link_rewind(peer, peer->snd_una);
		peer->rto_at = now + peer->rto;
		softib_link_pump(peer, &peer->xmitq);
	} else if (peer->tx_next && peer->snd_una == peer->snd_nxt &&
		   time_after(now, peer->probe_at)) {
		/*
		 * No credits and nothing in flight: is the window open yet?
		 * Timed from when it closed, not from our last frame: the
		 * ACKs we send for the other direction must not hold it.
		 */
		softib_link_queue_ack(peer, SOFTIB_LF_PROBE, &peer->xmitq);
		peer->probe_at = now + peer->rto;
	} else if (time_after(now, peer->last_tx + SOFTIB_LINK_IDLE)) {
		/* keepalive: the peer answers, so both know the other lives */
		softib_link_queue_ack(peer, SOFTIB_LF_PROBE, &peer->xmitq);
	}
	if (peer->ack_due)
		softib_link_queue_ack(peer, 0, &peer->xmitq);
	if (peer->confirm && time_after(now, peer->confirm_at)) {
		struct sk_buff *copy = skb_copy(peer->confirm, GFP_ATOMIC);

		if (copy)
			__skb_queue_tail(&peer->xmitq, copy);
		peer->confirm_at = now + SOFTIB_LINK_CONFIRM_EVERY;
		if (!--peer->confirm_left) {
			kfree_skb(peer->confirm);
			peer->confirm = NULL;
		}
	}
	next = skb_queue_empty(&peer->txq) && !peer->confirm ?
	       SOFTIB_LINK_TICK_IDLE : SOFTIB_LINK_TICK_BUSY;
unlock:
	spin_unlock_bh(&peer->lock);
	softib_link_kick(peer);
	if (!READ_ONCE(link->closing))
		mod_timer(&peer->timer, now + next);
}

/*
 * Queue the payloads of "list" (each with headroom from
 * softib_link_alloc()) as the next DATA frames to "peer", all of them or
 * none: the packets of one RC message go together. Control messages may
 * use the reserve above link_queue. -ENOTCONN: no session; -EAGAIN: no
 * room. On an error the list is left as it was.
 */
static int softib_link_send(struct softib_link_peer *peer, u8 proto,
			    u8 flags, struct sk_buff_head *list, bool control)
{
	u32 cap = softib_link_queue + (control ? SOFTIB_LINK_RESERVE : 0);
	struct softib_link_hdr *h;
	struct sk_buff *skb;

	spin_lock_bh(&peer->lock);
	if (peer->state != SOFTIB_PEER_UP) {
		spin_unlock_bh(&peer->lock);
		return -ENOTCONN;
	}
	if (skb_queue_len(&peer->txq) + skb_queue_len(list) > cap) {
		spin_unlock_bh(&peer->lock);
		softib_link_count(peer->link, SOFTIB_LC_TX_BUSY, 1);
		return -EAGAIN;
	}
	while ((skb = __skb_dequeue(list))) {
		h = softib_link_push(skb, SOFTIB_LT_DATA, peer->tx_session);
		h->seq = cpu_to_be32(peer->snd_end);
		h->proto = proto;
		h->flags = flags;
		softib_link_seal(peer->tx_key, skb);
		softib_link_cb(skb)->seq = peer->snd_end++;
		softib_link_cb(skb)->sent_at = 0;
		softib_link_cb(skb)->resent = false;
		__skb_queue_tail(&peer->txq, skb);
		if (!peer->tx_next)
			peer->tx_next = skb;
	}
	peer->tx_peak = max(peer->tx_peak, skb_queue_len(&peer->txq));
	softib_link_pump(peer, &peer->xmitq);
	spin_unlock_bh(&peer->lock);
	softib_link_kick(peer);
	return 0;
}

/* softib_link_send() of one frame; on success the skb is the link's */
static int softib_link_send_skb(struct softib_link_peer *peer, u8 proto,
				u8 flags, struct sk_buff *skb, bool control)
{
	struct sk_buff_head one;

	int ret;

	__skb_queue_head_init(&one);
	__skb_queue_tail(&one, skb);
	ret = softib_link_send(peer, proto, flags, &one, control);
	if (ret)
		__skb_unlink(skb, &one);
	return ret;
}

static struct softib_link_peer *softib_link_peer_of(struct softib_link *link,
						    u32 node)
{
	u32 i;

	for (i = 0; i < link->npeers; i++)
		if (READ_ONCE(link->peers[i].state) == SOFTIB_PEER_UP &&
		    READ_ONCE(link->peers[i].node) == node)
			return &link->peers[i];
	return NULL;
}

/*
 * The fabric's master SM (sm.c): of this node's SM (priority "prio",
 * node GUID "guid") and those of the nodes on the link now, the highest
 * priority, then the lowest GUID (IBTA 14.4.1.1). Returns its node, and
 * in *gen its link's session count (0 for this node): a master that
 * reloaded is a new SM with an empty SA.
 */
u32 softib_link_sm_master(struct softib_dev *sdev, u8 prio, u64 guid,
			  u32 *gen)
{
	struct softib_link *link = sdev->link;
	struct softib_link_peer *peer;
	u32 i, master = softib_node;

	*gen = 0;
	for (i = 0; link && i < link->npeers; i++) {
		peer = &link->peers[i];
		spin_lock_bh(&peer->lock);
		if (peer->state == SOFTIB_PEER_UP &&
		    peer->sm_priority != SOFTIB_SM_NONE &&
		    (peer->sm_priority > prio ||
		     (peer->sm_priority == prio && peer->guid < guid))) {
			prio = peer->sm_priority;
			guid = peer->guid;
			master = peer->node;
			*gen = peer->gen;
		}
		spin_unlock_bh(&peer->lock);
	}
	return master;
}

/*
 * The nodes on the link now that run the built-in SM (the fabric's SM
 * manages their switches), bit K for node K.
 */
u64 softib_link_sm_nodes(struct softib_dev *sdev)
{
	struct softib_link *link = sdev->link;
	struct softib_link_peer *peer;
	u64 nodes = 0;
	u32 i;

	for (i = 0; link && i < link->npeers; i++) {
		peer = &link->peers[i];
		if (READ_ONCE(peer->state) == SOFTIB_PEER_UP &&
		    READ_ONCE(peer->sm_priority) != SOFTIB_SM_NONE)
			nodes |= BIT_ULL(READ_ONCE(peer->node) &
					 SOFTIB_NODE_MAX);
	}
	return nodes;
}

/* The link is going away (softib_link_stop()): no more elections. */
bool softib_link_closing(struct softib_dev *sdev)
{
	return sdev->link && READ_ONCE(sdev->link->closing);
}

/*
 * The node at the other end of the switch's link port "idx" (the
 * link_peers entry idx), while its link is up; else 0.
 */
u32 softib_link_port_node(struct softib_dev *sdev, u32 idx)
{
	struct softib_link *link = sdev->link;

	if (!link || idx >= link->npeers ||
	    READ_ONCE(link->peers[idx].state) != SOFTIB_PEER_UP)
		return 0;
	return READ_ONCE(link->peers[idx].node);
}

/* The nodes link_peers names: the switch has a port for each. */
u32 softib_link_npeers(const struct softib_link *link)
{
	return link->npeers;
}

/* Is node "node" on the link now? */
bool softib_link_node_up(struct softib_dev *sdev, u32 node)
{
	return sdev->link && softib_link_peer_of(sdev->link, node);
}

static void softib_link_send_one(struct softib_link_peer *peer, u8 flags,
				 struct sk_buff *skb)
{
	struct softib_link *link = peer->link;

	if (softib_link_send_skb(peer, SOFTIB_LP_IB, flags, skb, false)) {
		kfree_skb(skb);
		softib_link_count(link, SOFTIB_LC_TX_IB_DROPPED, 1);
		return;
	}
	softib_link_count(link, SOFTIB_LC_TX_IB, 1);
}

/*
 * An IB packet (wire.c) to node "node", or to every node that is up for
 * node 0 (multicast). Takes the skb. A node that is not up, or whose
 * queue is full, loses it, as a switch port that is down or congested
 * would, counted in tx_ib_dropped; so is a packet its sender could not
 * build (skb NULL).
 */
void softib_link_send_ib(struct softib_dev *sdev, u32 node,
			 struct sk_buff *skb, u8 flags)
{
	struct softib_link *link = sdev->link;
	struct softib_link_peer *peer, *last = NULL;
	struct sk_buff *copy;
	u32 i;

	if (!skb) {
		softib_link_count(link, SOFTIB_LC_TX_IB_DROPPED, 1);
		return;
	}
	if (node) {
		peer = softib_link_peer_of(link, node);
		if (peer) {
			softib_link_send_one(peer, flags, skb);
			return;
		}
		kfree_skb(skb);
		softib_link_count(link, SOFTIB_LC_TX_IB_DROPPED, 1);
		return;
	}
	for (i = 0; i < link->npeers; i++) {
		peer = &link->peers[i];
		if (READ_ONCE(peer->state) != SOFTIB_PEER_UP)
			continue;
		if (last) {
			copy = skb_copy(skb, GFP_ATOMIC);
			if (copy)
				softib_link_send_one(last, flags, copy);
			else
				softib_link_count(link,
						  SOFTIB_LC_TX_IB_DROPPED, 1);
		}
		last = peer;
	}
	if (last)
		softib_link_send_one(last, flags, skb);
	else
		kfree_skb(skb);
}

/*
 * The packets of one RC message, or an RC acknowledgment ("control":
 * it may use the reserve above link_queue, so that a full queue never
 * loses one), to node "node" (rc_remote.c). All or none of them are
 * queued: -ENOTCONN if the node is not up, -EAGAIN if its queue has no
 * room now; then the list is left to the caller.
 */
int softib_link_send_ib_list(struct softib_dev *sdev, u32 node,
			     struct sk_buff_head *list, bool control)
{
	struct softib_link *link = sdev->link;
	struct softib_link_peer *peer = softib_link_peer_of(link, node);
	u32 n = skb_queue_len(list);
	int ret;

	if (!peer)
		return -ENOTCONN;
	ret = softib_link_send(peer, SOFTIB_LP_IB, 0, list, control);
	if (!ret)
		softib_link_count(link, SOFTIB_LC_TX_IB, n);
	return ret;
}

/* The IB MTU of the link in bytes: what an RC packet may carry. */
u32 softib_link_path_mtu(struct softib_dev *sdev)
{
	return sdev->link->ib_mtu;
}

/* The link's frames in its queue to "node" may not exceed this. */
u32 softib_link_queue_max(void)
{
	return softib_link_queue;
}

void softib_link_stat(struct softib_dev *sdev, enum softib_link_cnt c)
{
	softib_link_count(sdev->link, c, 1);
}

static bool softib_link_room(struct softib_link_peer *peer)
{
	return skb_queue_len_lockless(&peer->txq) < softib_link_queue ||
	       READ_ONCE(peer->state) != SOFTIB_PEER_UP;
}

static bool softib_link_drained(struct softib_link_peer *peer, u32 upto,
				u32 gen)
{
	bool ret;

	spin_lock_bh(&peer->lock);
	ret = peer->gen != gen || !softib_seq_before(peer->snd_una, upto);
	spin_unlock_bh(&peer->lock);
	return ret;
}

/*
 * fabric/echo: "COUNT SIZE [PEER]" sends COUNT numbered, patterned
 * control frames of SIZE bytes to the first peer (or peer index PEER)
 * and waits until they are all acknowledged; the receiver checks them
 * (echo_ok, echo_bad in its stats).
 */
static int softib_link_echo(struct softib_link *link, u32 count, u32 size,
			    u32 idx)
{
	unsigned long deadline = jiffies + 60 * HZ;
	struct softib_link_peer *peer;
	struct sk_buff *skb;
	u32 i, j, upto, gen;
	__be64 ctr;
	u8 *p;
	int ret;

	if (idx >= link->npeers)
		return -ENODEV;
	if (size < 1 + sizeof(ctr) ||
	    size > link->dev_mtu - SOFTIB_LINK_UDPIP -
		   sizeof(struct softib_link_hdr))
		return -EMSGSIZE;
	peer = &link->peers[idx];
	for (i = 0; i < count; i++) {
		skb = softib_link_alloc(size, GFP_KERNEL);
		if (!skb)
			return -ENOMEM;
		p = skb_put(skb, size);
		p[0] = SOFTIB_LC_ECHO;
		ctr = cpu_to_be64(peer->echo_tx);
		memcpy(p + 1, &ctr, sizeof(ctr));
		for (j = 1 + sizeof(ctr); j < size; j++)
			p[j] = (u8)(peer->echo_tx * 7 + j);
		for (;;) {
			ret = softib_link_send_skb(peer, SOFTIB_LP_CTRL, 0, skb,
						   false);
			if (ret != -EAGAIN)
				break;
			ret = wait_event_interruptible_timeout(peer->wait,
							       softib_link_room(peer),
							       HZ);
			if (ret < 0 || time_after(jiffies, deadline)) {
				kfree_skb(skb);
				return ret < 0 ? ret : -ETIMEDOUT;
			}
		}
		if (ret) {
			kfree_skb(skb);
			return ret;
		}
		peer->echo_tx++;
	}
	spin_lock_bh(&peer->lock);
	upto = peer->snd_end;
	gen = peer->gen;
	spin_unlock_bh(&peer->lock);
	ret = wait_event_interruptible_timeout(peer->wait,
					       softib_link_drained(peer, upto, gen),
					       max_t(long, deadline - jiffies, 1));
	if (ret < 0)
		return ret;
	if (!ret)
		return -ETIMEDOUT;
	return READ_ONCE(peer->gen) == gen ? 0 : -ENOTCONN;
}

static ssize_t softib_link_echo_write(struct file *file,
				      const char __user *ubuf, size_t len,
				      loff_t *ppos)
{
	struct softib_link *link = file_inode(file)->i_private;
	u32 count, size, idx = 0;
	char buf[64];
	int ret, n;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	n = sscanf(buf, "%u %u %u", &count, &size, &idx);
	if (n < 2 || count > 1000000)
		return -EINVAL;
	if (mutex_lock_interruptible(&link->echo_lock))
		return -EINTR;
	ret = softib_link_echo(link, count, size, idx);
	mutex_unlock(&link->echo_lock);
	return ret ? ret : len;
}

static const struct file_operations softib_link_echo_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = softib_link_echo_write,
	.llseek = noop_llseek,
};

/*
 * fabric/fault: "drop_tx N", "drop_rx N", "drop_data N" (the next N DATA
 * frames sent are lost), "bad_mac N" (the next N frames
 * sent leave with a broken tag), "replay N" (the next N frames received
 * are received twice), "stale N" (N probes with a wrong session id),
 * "blackhole 0|1", "rx_stall_ms MS" (the rx work delivers nothing for
 * that long).
 */
static ssize_t softib_link_fault_write(struct file *file,
				       const char __user *ubuf, size_t len,
				       loff_t *ppos)
{
	struct softib_link *link = file_inode(file)->i_private;
	struct softib_link_peer *peer;
	struct sk_buff *skb;
	char buf[48], what[24];
	u32 n, i, k;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	if (sscanf(buf, "%23s %u", what, &n) != 2)
		return -EINVAL;
	if (!strcmp(what, "stale") && n > 1000)
		return -EINVAL;
	if (!strcmp(what, "drop_tx")) {
		atomic_set(&link->fault_drop_tx, n);
	} else if (!strcmp(what, "drop_data")) {
		atomic_set(&link->fault_drop_data, n);
	} else if (!strcmp(what, "drop_rx")) {
		atomic_set(&link->fault_drop_rx, n);
	} else if (!strcmp(what, "bad_mac")) {
		atomic_set(&link->fault_bad_mac, n);
	} else if (!strcmp(what, "replay")) {
		atomic_set(&link->fault_replay, n);
	} else if (!strcmp(what, "blackhole")) {
		WRITE_ONCE(link->fault_blackhole, !!n);
	} else if (!strcmp(what, "rx_stall_ms")) {
		for (i = 0; i < link->npeers; i++) {
			peer = &link->peers[i];
			spin_lock_bh(&peer->lock);
			peer->stall_until = jiffies + msecs_to_jiffies(n);
			spin_unlock_bh(&peer->lock);
		}
	} else if (!strcmp(what, "stale")) {
		for (i = 0; i < link->npeers; i++) {
			peer = &link->peers[i];
					spin_lock_bh(&peer->lock);
			for (k = 0; k < n && peer->state == SOFTIB_PEER_UP; k++) {
				skb = softib_link_ack(peer, SOFTIB_LF_PROBE);
				if (!skb)
					break;
				((struct softib_link_hdr *)skb->data)->session =
					cpu_to_be32(peer->tx_session ^ 0x80000001);
				__skb_queue_tail(&peer->xmitq, skb);
			}
			spin_unlock_bh(&peer->lock);
			softib_link_kick(peer);
		}
	} else {
		return -EINVAL;
	}
	return len;
}

static const struct file_operations softib_link_fault_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = softib_link_fault_write,
	.llseek = noop_llseek,
};

static int softib_link_stats_show(struct seq_file *m, void *v)
{
	struct softib_link *link = m->private;
	int i;

	for (i = 0; i < SOFTIB_LC_MAX; i++)
		seq_printf(m, "%s %lld\n", softib_link_cnt_names[i],
			   (long long)atomic64_read(&link->cnt[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_link_stats);

static int softib_link_peers_show(struct seq_file *m, void *v)
{
	struct softib_link *link = m->private;
	struct softib_link_peer *peer;
	u32 i;

	seq_printf(m, "self node %u guid 0x%016llx dev %s mtu %u ib_mtu %u port %u\n",
		   softib_node, softib_node_guid, link->ifname, link->dev_mtu,
		   link->ib_mtu, ntohs(link->port));
	for (i = 0; i < link->npeers; i++) {
		peer = &link->peers[i];
		spin_lock_bh(&peer->lock);
		seq_printf(m, "peer %pI4 state %s node %u guid 0x%016llx ib_mtu %u snd_una %u snd_nxt %u snd_end %u snd_limit %u rcv_nxt %u txq %u tx_peak %u rxq %u rx_peak %u rto_ms %u srtt_us %u\n",
			   &peer->addr,
			   peer->state == SOFTIB_PEER_UP ? "up" : "down",
			   peer->node, peer->guid, peer->ib_mtu, peer->snd_una,
			   peer->snd_nxt, peer->snd_end, peer->snd_limit,
			   peer->rcv_nxt, skb_queue_len(&peer->txq),
			   peer->tx_peak, skb_queue_len(&peer->rxq),
			   peer->rx_peak, jiffies_to_msecs(peer->rto),
			   peer->srtt_us);
		spin_unlock_bh(&peer->lock);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_link_peers);

/* the interface's MTU that IB MTU "ib_mtu" needs */
static u32 softib_link_mtu_for(u32 ib_mtu)
{
	return SOFTIB_LINK_UDPIP + sizeof(struct softib_link_hdr) +
	       SOFTIB_LINK_IB_HDRS + ib_mtu;
}

/* The largest IB MTU whose packets, with every header, fit one frame. */
static u32 softib_link_ib_mtu(u32 dev_mtu)
{
	u32 mtu;

	for (mtu = SOFTIB_MTU_BYTES; mtu >= 256; mtu /= 2)
		if (softib_link_mtu_for(mtu) <= dev_mtu)
			return mtu;
	return 0;
}

static int softib_link_parse_key(u8 *key, const char *hex)
{
	if (strlen(hex) != 2 * BLAKE2S_KEY_SIZE)
		return -EINVAL;
	return hex2bin(key, hex, BLAKE2S_KEY_SIZE);
}

static int softib_link_parse_peers(struct softib_link *link)
{
	char *s = softib_link_peers_param, *tok;
	char buf[SOFTIB_LINK_PEERS_MAX * 17];
	__be32 addr;
	u32 i;

	if (strscpy(buf, s, sizeof(buf)) < 0)
		return -EINVAL;
	s = buf;
	while ((tok = strsep(&s, ",")) != NULL) {
		if (!*tok)
			continue;
		if (link->npeers == SOFTIB_LINK_PEERS_MAX ||
		    !in4_pton(tok, -1, (u8 *)&addr, -1, NULL) ||
		    ipv4_is_multicast(addr) || ipv4_is_zeronet(addr) ||
		    ipv4_is_lbcast(addr))
			return -EINVAL;
		for (i = 0; i < link->npeers; i++)
			if (link->peers[i].addr == addr)
				return -EINVAL;
		link->peers[link->npeers++].addr = addr;
	}
	return link->npeers ? 0 : -EINVAL;
}

static struct softib_link *softib_link_prepare_checked(const char *hex)
{
	struct softib_link *link;
	struct net_device *dev;
	int ret = -EINVAL;

	if (!*softib_link_param)
		return NULL;
	if (!softib_node) {
		pr_err("link=%s needs this node's number: load with node=1..%u, a different one on every node\n",
		       softib_link_param, SOFTIB_NODE_MAX);
		return ERR_PTR(-EINVAL);
	}
	if (softib_vnodes) {
		pr_err("link=%s and vnodes=%u: virtual nodes live on one kernel's fabric; load with vnodes=0\n",
		       softib_link_param, softib_vnodes);
		return ERR_PTR(-EINVAL);
	}
	if (!softib_link_window || softib_link_window > 4096 ||
	    softib_link_queue < softib_link_window ||
	    softib_link_queue > 16384 || softib_link_rxq < 1 ||
	    softib_link_rxq > 4096 || softib_link_dead_ms < 1000 ||
	    softib_link_dead_ms > 600000 || !softib_link_port) {
		pr_err("link sizes out of range: want 1 <= link_window <= link_queue <= 16384, link_window <= 4096, link_rxq 1..4096, link_dead_ms 1000..600000, link_port 1..65535\n");
		return ERR_PTR(-EINVAL);
	}

	link = kzalloc(sizeof(*link), GFP_KERNEL);
	if (!link)
		return ERR_PTR(-ENOMEM);
	if (softib_link_parse_key(link->key, hex)) {
		pr_err("link=%s needs fabric_key=<64 hex digits>, the same on every node (e.g. from: od -An -tx1 -N32 /dev/urandom | tr -d ' \\n')\n",
		       softib_link_param);
		goto err_free;
	}
	if (softib_link_parse_peers(link)) {
		pr_err("link_peers=%s: want 1 to %u distinct unicast IPv4 addresses, comma-separated\n",
		       softib_link_peers_param, SOFTIB_LINK_PEERS_MAX);
		goto err_free;
	}

	/* the interface of the host's namespace, by name, as an admin gives it */
	link->net = &init_net;
	dev = dev_get_by_name(link->net, softib_link_param);
	if (!dev) {
		pr_err("link=%s: no such network interface; name one that exists before softib loads\n",
		       softib_link_param);
		ret = -ENODEV;
		goto err_free;
	}
	link->ifindex = dev->ifindex;
	link->dev_mtu = READ_ONCE(dev->mtu);
	strscpy(link->ifname, dev->name, sizeof(link->ifname));
	dev_put(dev);
	link->ib_mtu = softib_link_ib_mtu(link->dev_mtu);
	if (!link->ib_mtu) {
		pr_err("link=%s: MTU %u is too small for IB packets; give it at least %u\n",
		       link->ifname, link->dev_mtu, softib_link_mtu_for(256));
		goto err_free;
	}
	link->port = htons(softib_link_port);
	softib_fabric_mtu = ib_mtu_int_to_enum(link->ib_mtu);
	return link;

err_free:
	kfree_sensitive(link);
	return ERR_PTR(ret);
}

/*
 * Check the link's parameters before anything is made, so that a bad
 * one fails the load with nothing left behind. Returns NULL (no link),
 * a link to start with softib_link_start(), or an ERR_PTR.
 */
struct softib_link *softib_link_prepare(void)
{
	char hex[2 * BLAKE2S_KEY_SIZE + 2];
	struct softib_link *link;

	/*
	 * The key leaves the parameter's memory at once, whatever comes
	 * next (the module's argument string keeps its copy, which only
	 * root can read, in /proc/kcore and the like).
	 */
	strscpy(hex, softib_fabric_key_param, sizeof(hex));
	memzero_explicit(softib_fabric_key_param,
			 strlen(softib_fabric_key_param));
	link = softib_link_prepare_checked(hex);
	memzero_explicit(hex, sizeof(hex));
	return link;
}

/*
 * The link's interface changed under it: say what that does. The
 * socket stays bound to the ifindex, which the kernel does not reuse;
 * without the interface every send fails (tx_errors) and the peers go
 * down after link_dead_ms, until softib is loaded again.
 */
static int softib_link_netdev_event(struct notifier_block *nb,
				    unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct softib_link *link = container_of(nb, struct softib_link, nb);
	bool short_now;

	if (dev->ifindex != link->ifindex || !net_eq(dev_net(dev), link->net))
		return NOTIFY_DONE;
	switch (event) {
	case NETDEV_UNREGISTER:
		/*
		 * softib_link_stop()'s unregister_netdevice_notifier() replays
		 * an UNREGISTER for every device that is still registered:
		 * only one that is going away is news
		 */
		if (dev->reg_state != NETREG_UNREGISTERING)
			break;
		pr_warn("link: %s went away: no link to the other nodes until softib is loaded again\n",
			link->ifname);
		break;
	case NETDEV_CHANGEMTU:
		/*
		 * Frames are sealed at the old size and sent with DF: they
		 * would be resent forever. The link stays down until the
		 * MTU is back (the timer takes the peers down).
		 */
		short_now = dev->mtu < softib_link_mtu_for(link->ib_mtu);
		if (short_now && !READ_ONCE(link->mtu_short))
			pr_warn("link: %s has MTU %u now, below the %u that IB MTU %u needs: the link is down until the MTU is back\n",
				dev->name, dev->mtu,
				softib_link_mtu_for(link->ib_mtu), link->ib_mtu);
		else if (!short_now && READ_ONCE(link->mtu_short))
			pr_info("link: %s has MTU %u again: the link comes back\n",
				dev->name, dev->mtu);
		WRITE_ONCE(link->mtu_short, short_now);
		break;
	}
	return NOTIFY_DONE;
}

static void softib_link_debugfs(struct softib_link *link)
{
	struct softib_dev *sdev = link->sdev;

	link->debugfs = debugfs_create_dir("fabric", sdev->debugfs);
	debugfs_create_file("peers", 0444, link->debugfs, link,
			    &softib_link_peers_fops);
	debugfs_create_file("stats", 0444, link->debugfs, link,
			    &softib_link_stats_fops);
	debugfs_create_file("echo", 0200, link->debugfs, link,
			    &softib_link_echo_fops);
	debugfs_create_file("fault", 0200, link->debugfs, link,
			    &softib_link_fault_fops);
}

/* Open the socket and start shaking hands with every peer. */
int softib_link_start(struct softib_dev *sdev, struct softib_link *link)
{
	struct udp_tunnel_sock_cfg tcfg = {};
	struct udp_port_cfg cfg = {};
	struct softib_link_peer *peer;
	int ret;
	u32 i;

	link->sdev = sdev;
	mutex_init(&link->echo_lock);
	get_random_bytes(link->cookie_key, sizeof(link->cookie_key));
	for (i = 0; i < link->npeers; i++) {
		peer = &link->peers[i];
		peer->link = link;
		spin_lock_init(&peer->lock);
		skb_queue_head_init(&peer->txq);
		skb_queue_head_init(&peer->rxq);
		skb_queue_head_init(&peer->ooq);
		skb_queue_head_init(&peer->xmitq);
		peer->stall_until = jiffies;
		peer->hs_retry = SOFTIB_LINK_HS_RETRY;
		INIT_WORK(&peer->rx_work, softib_link_rx_work);
		init_waitqueue_head(&peer->wait);
		timer_setup(&peer->timer, softib_link_timer, 0);
		ret = dst_cache_init(&peer->dst_cache, GFP_KERNEL);
		if (ret)
			goto err_dst_caches;
		spin_lock_bh(&peer->lock);
		softib_link_reset(peer);
		spin_unlock_bh(&peer->lock);
	}

	cfg.family = AF_INET;
	cfg.local_ip.s_addr = htonl(INADDR_ANY);
	cfg.local_udp_port = link->port;
	cfg.bind_ifindex = link->ifindex;
	ret = udp_sock_create(link->net, &cfg, &link->sock);
	if (ret) {
		pr_err("link=%s: cannot bind UDP port %u (%d); is another softib or service on it? choose one with link_port=\n",
		       link->ifname, ntohs(link->port), ret);
		goto err_dst_caches;
	}
	tcfg.sk_user_data = link;
	tcfg.encap_type = 1;
	tcfg.encap_rcv = softib_link_rcv;
	setup_udp_tunnel_sock(link->net, link->sock, &tcfg);
	rcu_assign_pointer(link->sk, link->sock->sk);

	link->nb.notifier_call = softib_link_netdev_event;
	ret = register_netdevice_notifier(&link->nb);
	if (ret)
		goto err_release_sock;

	sdev->link = link;
	softib_link_debugfs(link);
	for (i = 0; i < link->npeers; i++)
		mod_timer(&link->peers[i].timer, jiffies + 1);
	/* a peer may have come up before sdev->link was set: elect now */
	softib_sm_peers_changed(sdev);
	pr_info("link on %s (MTU %u, IB MTU %u), node %u, GUID %016llx, %u peer(s)\n",
		link->ifname, link->dev_mtu, link->ib_mtu, softib_node,
		softib_node_guid, link->npeers);
	return 0;

err_release_sock:
	udp_tunnel_sock_release(link->sock);
	link->sock = NULL;
err_dst_caches:
	while (i--)
		dst_cache_destroy(&link->peers[i].dst_cache);
	return ret;
}

/*
 * Say goodbye to every peer that is up (so that it need not wait out
 * link_dead_ms), then close the socket: after the release no receive
 * hook runs. Timers and rx work go last, with their queues. The link
 * stays, closed, with every peer down, until softib_link_discard():
 * the device's teardown still sends into it (and loses what it sends).
 */
void softib_link_stop(struct softib_dev *sdev)
{
	struct softib_link *link = sdev->link;
	struct softib_link_peer *peer;
	struct sk_buff *skb;
	u32 i;

	if (!link)
		return;
	debugfs_remove(link->debugfs);
	unregister_netdevice_notifier(&link->nb);
	for (i = 0; i < link->npeers; i++) {
		peer = &link->peers[i];
		skb = NULL;
		spin_lock_bh(&peer->lock);
		if (peer->state == SOFTIB_PEER_UP) {
			skb = softib_link_alloc(0, GFP_ATOMIC);
			if (skb) {
				softib_link_push(skb, SOFTIB_LT_CLOSE,
						 peer->tx_session);
				softib_link_seal(peer->tx_key, skb);
			}
		}
		spin_unlock_bh(&peer->lock);
		if (skb)
			softib_link_xmit(peer, skb);
	}
	/*
	 * No transmit uses the socket after the grace period; no receive
	 * hook runs after the release, which waits for one too.
	 */
	WRITE_ONCE(link->closing, true);
	RCU_INIT_POINTER(link->sk, NULL);
	synchronize_rcu();
	udp_tunnel_sock_release(link->sock);
	link->sock = NULL;
	for (i = 0; i < link->npeers; i++) {
		peer = &link->peers[i];
		timer_shutdown_sync(&peer->timer);
		cancel_work_sync(&peer->rx_work);
		spin_lock_bh(&peer->lock);
		softib_link_reset(peer);
		__skb_queue_purge(&peer->xmitq);
		kfree_skb(peer->confirm);
		peer->confirm = NULL;
		WRITE_ONCE(peer->state, SOFTIB_PEER_DOWN);
		spin_unlock_bh(&peer->lock);
		dst_cache_destroy(&peer->dst_cache);
	}
}

/* Free a link that never started, or has stopped. */
void softib_link_discard(struct softib_link *link)
{
	kfree_sensitive(link);
}
