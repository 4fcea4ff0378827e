/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place where differences between the supported kernels live.
 * Kbuild force-includes this header into every object of both modules, so
 * .c files read like upstream code. Supported window: Debian's 6.1 and
 * 6.12 series; anything else is refused at build time rather than half
 * working.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#ifndef IPOIB_NG_COMPAT_H
#define IPOIB_NG_COMPAT_H

#include <linux/version.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0) || \
	LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#error "ipoib-ng supports Linux 6.1 to 6.12 (Debian bookworm's two kernel series)"
#endif

/* the unaligned accessors moved from asm/ to linux/ in 6.12 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/*
 * ib_device_ops.create_cq: the third argument became the uverbs attribute
 * bundle in 6.11 (it was the udata). Kernel consumers pass NULL in both.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define COMPAT_CREATE_CQ_CTX struct uverbs_attr_bundle
#else
#define COMPAT_CREATE_CQ_CTX struct ib_udata
#endif

/*
 * ib_sa_path_rec_get()'s callback: the record count is an int in 6.1 and
 * an unsigned int in 6.12 (changed with the multi-path support in 6.3).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
#define COMPAT_NUM_PRS unsigned int
#else
#define COMPAT_NUM_PRS int
#endif

/*
 * Deleting devices of a dying network namespace before the core moves its
 * refundable ones to init_net. Since 6.9 the core does that in its
 * exit_batch_rtnl method, which runs (under rtnl) before every exit and
 * exit_batch method, so ours must be an exit_batch_rtnl too. Before 6.9
 * the core does it in exit_batch, and a module's pernet operations exit
 * before the core's: exit_batch is early enough there (later 6.1.y have
 * exit_batch_rtnl as well, but not all 6.1 kernels do). The arguments
 * differ: ipoib's netlink.c defines ipoib_net_exit for either.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
#define COMPAT_NET_EXIT_RTNL
#endif

#endif /* IPOIB_NG_COMPAT_H */

/*
 * Page pools: the API (alloc, put, create, destroy, skb_mark_for_recycle)
 * is the same in both; its header was split up in 6.6. A file that uses
 * them defines IPOIB_NG_PAGE_POOL and includes this header again: the
 * forced include comes before a file's own definitions (pr_fmt), so it
 * pulls in no headers of its own.
 */
#if defined(IPOIB_NG_PAGE_POOL) && !defined(IPOIB_NG_COMPAT_PAGE_POOL_H)
#define IPOIB_NG_COMPAT_PAGE_POOL_H
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
#include <net/page_pool/helpers.h>
#else
#include <net/page_pool.h>
#endif
#if !IS_ENABLED(CONFIG_PAGE_POOL)
/*
 * A kernel whose config selects nothing that needs PAGE_POOL (a minimal
 * debug kernel, say) declares the API without building it. There the
 * pool is never created and the receive buffers stay linear; the rest
 * maps to plain pages so that nothing refers to a missing symbol.
 */
static inline struct page_pool *
compat_page_pool_create(const struct page_pool_params *params)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static inline struct page *compat_page_pool_alloc(struct page_pool *pool)
{
	return NULL;
}

static inline void compat_page_pool_put(struct page_pool *pool,
					struct page *page, bool direct)
{
	put_page(page);
}

static inline void compat_skb_mark_for_recycle(struct sk_buff *skb)
{
}

#define page_pool_create compat_page_pool_create
#define page_pool_dev_alloc_pages compat_page_pool_alloc
#define page_pool_put_full_page compat_page_pool_put
#define skb_mark_for_recycle compat_skb_mark_for_recycle
#endif
#endif
