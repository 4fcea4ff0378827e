/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softib: the link between softib nodes in different kernels (link.c).
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#ifndef SOFTIB_LINK_H
#define SOFTIB_LINK_H

#include <linux/types.h>
#include <linux/skbuff.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <linux/wait.h>
#include <linux/notifier.h>
#include <linux/netdevice.h>
#include <net/dst_cache.h>
#include <crypto/blake2s.h>

/*
 * The frame header, in front of every UDP payload (40 bytes). The tag is
 * a keyed BLAKE2s-128 over the 24 bytes before it and the payload.
 */
struct softib_link_hdr {
	__be16 magic;
	u8 ver;
	u8 type;
	__be32 session;		/* the receiver's session id (0: handshake) */
	__be32 seq;		/* DATA: sequence number; ACK: serial */
	__be32 ack;		/* ACK: the next DATA sequence number expected */
	__be16 window;		/* ACK: frames the receiver can still take */
	u8 flags;
	u8 proto;		/* DATA: what the payload is */
	__be16 len;		/* payload bytes */
	__be16 rsvd;
	u8 tag[BLAKE2S_128_HASH_SIZE];
} __packed;

#define SOFTIB_LINK_MAGIC	0x5342
#define SOFTIB_LINK_VER		1
#define SOFTIB_LINK_MACED	offsetof(struct softib_link_hdr, tag)

enum softib_link_type {
	SOFTIB_LT_DATA = 1,
	SOFTIB_LT_ACK,
	SOFTIB_LT_HELLO,
	SOFTIB_LT_HELLO_ACK,
	SOFTIB_LT_CONFIRM,
	SOFTIB_LT_CLOSE,
};

#define SOFTIB_LF_NAK		0x01	/* ACK: resend from "ack" on */
#define SOFTIB_LF_PROBE		0x02	/* ACK: answer with an ACK now */
/*
 * NAK: the receiver keeps the frames after the gap, so "ack" alone is
 * missing; a sender that does not know the flag goes back to "ack" all
 * the same (correct, only slower)
 */
#define SOFTIB_LF_KEPT		0x08
/* IB DATA: the sender asked for IB_SEND_IP_CSUM, still to be filled */
#define SOFTIB_LF_CSUM		0x04

enum softib_link_proto {
	SOFTIB_LP_IB = 1,	/* an IB packet (LRH on) */
	SOFTIB_LP_CTRL,		/* softib's own control messages */
};

/* control messages (SOFTIB_LP_CTRL): the first byte says which */
#define SOFTIB_LC_ECHO		1

/* The handshake's payload: HELLO, HELLO_ACK and CONFIRM. */
struct softib_link_hs {
	__be64 guid;		/* the sender's node GUID */
	u8 nonce[16];		/* the sender's, fresh for this handshake */
	u8 echo[16];		/* the nonce this answers (HELLO: zero) */
	__be32 session;		/* the session id the sender will receive on */
	__be16 node;
	__be16 ib_mtu;		/* bytes */
	u8 nports;
	u8 sm_priority;		/* its built-in SM's, or SOFTIB_SM_NONE */
	u8 features;		/* SOFTIB_HS_F_*; 0 from an older softib */
	u8 rsvd[5];
} __packed;

/*
 * The sender's switch has a port to each node of the link, and takes
 * directed routes and, under an external SM, routes by its LFT through
 * it: the switches' ports to each other train only if both ends say so.
 */
#define SOFTIB_HS_F_SWITCH_PORT	0x01

enum softib_link_state {
	SOFTIB_PEER_DOWN,
	SOFTIB_PEER_UP,
};

/* Counters of the link: debugfs fabric/stats names them. */
enum softib_link_cnt {
	SOFTIB_LC_TX_FRAMES,
	SOFTIB_LC_TX_BYTES,
	SOFTIB_LC_RETRANSMITS,
	SOFTIB_LC_RTO,
	SOFTIB_LC_TX_ACKS,
	SOFTIB_LC_TX_NAKS,
	SOFTIB_LC_TX_PROBES,
	SOFTIB_LC_TX_ERRORS,
	SOFTIB_LC_TX_BUSY,
	SOFTIB_LC_WINDOW_ZERO,
	SOFTIB_LC_RX_FRAMES,
	SOFTIB_LC_RX_DELIVERED,
	SOFTIB_LC_RX_DUP,
	SOFTIB_LC_RX_OOO,
	SOFTIB_LC_RX_OVER_WINDOW,
	SOFTIB_LC_RX_NAKS,
	SOFTIB_LC_RX_BAD_MAC,
	SOFTIB_LC_RX_STALE_SESSION,
	SOFTIB_LC_RX_REPLAY,
	SOFTIB_LC_RX_UNKNOWN_SRC,
	SOFTIB_LC_RX_MALFORMED,
	SOFTIB_LC_RX_NO_SESSION,
	SOFTIB_LC_HS_SENT,
	SOFTIB_LC_HS_DONE,
	SOFTIB_LC_HS_BAD_MAC,
	SOFTIB_LC_HS_STALE,
	SOFTIB_LC_HS_REFUSED,
	SOFTIB_LC_PEER_UP,
	SOFTIB_LC_PEER_DOWN,
	SOFTIB_LC_TX_DROPPED_DOWN,
	SOFTIB_LC_TX_IB,
	SOFTIB_LC_TX_IB_DROPPED,
	SOFTIB_LC_RX_IB,
	SOFTIB_LC_RX_IB_BAD,
	SOFTIB_LC_ECHO_OK,
	SOFTIB_LC_ECHO_BAD,
	SOFTIB_LC_FAULT_DROPPED,
	/* RC across the link (rc_remote.c) */
	SOFTIB_LC_RC_TX_MSGS,
	SOFTIB_LC_RC_RESENT,
	SOFTIB_LC_RC_RETRY_EXC,
	SOFTIB_LC_RC_BUSY,
	SOFTIB_LC_RC_TOO_LONG,
	SOFTIB_LC_RC_RX_ACKS,
	SOFTIB_LC_RC_RX_RNR,
	SOFTIB_LC_RC_RX_NAKS,
	SOFTIB_LC_RC_RX_MSGS,
	SOFTIB_LC_RC_TX_RNR,
	SOFTIB_LC_RC_TX_NAKS,
	SOFTIB_LC_RC_DUP,
	SOFTIB_LC_RC_OUT_OF_SEQ,
	SOFTIB_LC_RC_NO_QP,
	SOFTIB_LC_MAX
};

struct softib_link;
struct softib_dev;

void softib_link_stat(struct softib_dev *sdev, enum softib_link_cnt c);

/*
 * One node at the other end of the link. DATA frames are numbered and
 * kept in txq until acknowledged; the receiver takes only the next one
 * in order (go-back-N) and grants credits: its free receive slots.
 */
struct softib_link_peer {
	struct softib_link *link;
	__be32 addr;
	spinlock_t lock;		/* everything below */
	enum softib_link_state state;
	u32 gen;			/* +1 on every session change */
	bool refused_logged;		/* its handshake refused, said so */
	u64 guid;
	u32 node;
	u32 ib_mtu;
	u8 sm_priority;			/* its SM's, or SOFTIB_SM_NONE */
	/* handshake: our HELLO in flight (hs_pending), and the one before */
	bool hs_pending;
	u8 hs_nonce[16];
	u32 hs_session;			/* offered in our HELLO */
	bool hs_prev_valid;
	u8 hs_prev_nonce[16];
	u32 hs_prev_session;
	unsigned long hs_sent_at, hs_retry;
	/* our CONFIRM, sent again until the peer is heard in the session */
	struct sk_buff *confirm;
	unsigned long confirm_at;
	u32 confirm_left;
	/* initiator nonces of the last sessions: a CONFIRM makes one once */
	u8 used_nonces[4][16];
	u32 used_next;
	/* the session */
	u32 rx_session, tx_session;	/* ours (in frames to us), theirs */
	u8 tx_key[BLAKE2S_KEY_SIZE];
	u8 rx_key[BLAKE2S_KEY_SIZE];
	/* sender: txq holds seq snd_una .. snd_end-1, sent up to snd_nxt */
	struct sk_buff_head txq;
	struct sk_buff *tx_next;	/* the frame with seq snd_nxt, or NULL */
	u32 snd_una, snd_nxt, snd_end;
	u32 snd_limit;			/* ack + window of the last ACK */
	u32 ack_serial_rx;		/* the last ACK serial accepted */
	u32 tx_peak;
	unsigned long rto;		/* jiffies */
	unsigned long rto_at;		/* when the oldest frame times out */
	u32 srtt_us, rttvar_us;
	unsigned long last_tx, last_rx;
	bool was_zero;
	unsigned long probe_at;		/* next zero-window probe */
	/* frames to send, in order; one context at a time sends them */
	struct sk_buff_head xmitq;
	bool xmitting;
	/* receiver */
	struct sk_buff_head rxq;
	/* frames after a gap, in sequence order, until it fills */
	struct sk_buff_head ooq;
	u32 rcv_nxt;
	u32 nak_for;			/* rcv_nxt we sent a NAK for, +1 */
	u32 ack_due;
	u32 ack_serial_tx;
	u32 adv_edge;			/* rcv_nxt + the window last granted */
	u32 rx_peak;
	struct work_struct rx_work;
	unsigned long stall_until;	/* fault: rx work waits till then */
	u64 echo_tx, echo_rx;		/* ECHO counters each way */
	struct timer_list timer;
	wait_queue_head_t wait;		/* space in txq, everything acked */
	struct dst_cache dst_cache;
};

struct softib_link {
	struct softib_dev *sdev;
	struct net *net;
	int ifindex;
	char ifname[IFNAMSIZ];
	u32 dev_mtu;
	u32 ib_mtu;
	__be16 port;
	struct socket *sock;
	struct sock __rcu *sk;		/* what transmits use, NULL at stop */
	bool closing;
	bool mtu_short;			/* the interface's MTU is too small now */
	u8 cookie_key[BLAKE2S_KEY_SIZE];	/* the responder's cookies */
	u8 key[BLAKE2S_KEY_SIZE];
	u32 npeers;
	struct softib_link_peer peers[SOFTIB_LINK_PEERS_MAX];
	/* debugfs fabric/fault */
	atomic_t fault_drop_tx, fault_drop_rx, fault_drop_data, fault_bad_mac;
	atomic_t fault_replay, fault_stale;
	bool fault_blackhole;
	struct mutex echo_lock;		/* one fabric/echo at a time */
	char echo_result[96];
	struct dentry *debugfs;
	struct notifier_block nb;	/* the interface's changes */
	atomic64_t cnt[SOFTIB_LC_MAX];
};

#endif
