// SPDX-License-Identifier: GPL-2.0
/*
 * softib: one subnet manager for a fabric across kernels.
 *
 * Every node loaded with the built-in SM runs one, at its switch's LID.
 * On a fabric of several nodes (link.c) one of them is master and the
 * others are standby, as IBTA 14.4 elects: the highest priority
 * (sm_priority=, 0..15), then the lowest GUID. The candidates are this
 * node and the nodes whose link is up; each node's handshake carries its
 * SM's priority (or that it runs none). A node elects again whenever a
 * link comes up or goes down, so a standby takes over as soon as the
 * master's node is gone: at once when it unloads (its CLOSE), after
 * link_dead_ms when it vanishes.
 *
 * The master's SA answers every port of the fabric; a standby's answers
 * nothing. When the master changes, every port of this node gets the
 * new master's LID as its SM LID and a client reregister, as a new
 * OpenSM's first sweep sets them (PortInfo SMLID and ClientReregister):
 * ib_sa moves to the new SA and IPoIB joins its groups there again. A
 * node that becomes standby forgets its SA's memberships (its policy's
 * groups stay, empty), as a standby OpenSM keeps none.
 *
 * The multicast forwarding table of a standby's switch is the master's
 * to program: on every join and leave the master sets the block of the
 * group's MLID at each other node's switch with a LID-routed SMP
 * (MulticastForwardingTable Set), with the ports of that node that are
 * members. Any change of master clears the table; the new master's
 * SMPs fill it as the ports join again.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "softib.h"

static unsigned int softib_sm_priority = SOFTIB_SM_PRIORITY;
module_param_named(sm_priority, softib_sm_priority, uint, 0444);
MODULE_PARM_DESC(sm_priority,
		 "the built-in SM's priority in the fabric's election, 0..15 (15)");

#define SOFTIB_SM_STATE_STANDBY	2

int softib_sm_check_params(void)
{
	if (softib_sm_priority > 15) {
		pr_err("sm_priority=%u is out of range: load with sm_priority=0..15\n",
		       softib_sm_priority);
		return -EINVAL;
	}
	return 0;
}

/* what this node's handshake says of its SM */
u8 softib_sm_hs_priority(void)
{
	return softib_builtin_sm ? softib_sm_priority : SOFTIB_SM_NONE;
}

/* Is this node's built-in SM the master (the only SM without a link)? */
bool softib_sm_is_master(struct softib_dev *sdev)
{
	return softib_builtin_sm &&
	       READ_ONCE(sdev->sm_master) == softib_node;
}

/* Node "node"'s switch LID, where its SM runs: the SM LID if master. */
static u16 softib_sm_switch_lid(u32 node)
{
	return node == softib_node ? softib_sm_lid : node * SOFTIB_NODE_LIDS;
}

/*
 * SMInfo at the switch's port 0, where the built-in SM runs (switch.c):
 * it answers Get as the SM of a managed switch does (sminfo, and an SM
 * that polls for a master), MASTER or STANDBY. Returns the MAD status.
 */
u16 softib_sm_info(struct softib_dev *sdev, const struct ib_smp *req,
		   struct ib_smp *resp)
{
	u8 *info = resp->data;

	if (req->method != IB_MGMT_METHOD_GET)
		return IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
	/* GUID, SM_Key (0: not shown), ActCount, Priority|SMState */
	put_unaligned_be64(softib_switch_guid, info);
	put_unaligned_be32(atomic_inc_return(&sdev->sm_act_count), info + 16);
	info[20] = softib_sm_priority << 4 |
		   (softib_sm_is_master(sdev) ? SOFTIB_SM_STATE_MASTER :
						SOFTIB_SM_STATE_STANDBY);
	return 0;
}

/*
 * The master's MFT block "block" at node "node"'s switch: for each of its
 * 32 MLIDs, the ports of that node that are members which receive.
 */
static void softib_sm_mft_send(struct softib_dev *sdev, u32 node, u32 block)
{
	u16 first = SOFTIB_MLID_BASE + block * SOFTIB_SW_MFT_BLOCK;
	struct ib_smp *smp;
	struct softib_mcg *g;
	__be16 *masks;
	u32 ports;

	lockdep_assert_held(&sdev->sa_lock);
	/* an SMP is a whole MAD, as softib_sm_send() sends it */
	static_assert(sizeof(*smp) == sizeof(struct ib_mad));
	smp = kzalloc(sizeof(*smp), GFP_KERNEL);
	if (!smp)
		return;	/* the next join or leave in the block sets it */
	masks = (__be16 *)smp->data;
	/* position 0: the masks of ports 0..15 */
	list_for_each_entry(g, &sdev->mcgs, list) {
		if (g->mlid < first || g->mlid >= first + SOFTIB_SW_MFT_BLOCK)
			continue;
		ports = softib_mcg_ports(sdev, g, node);
		masks[g->mlid - first] |= cpu_to_be16(lower_16_bits(ports));
	}
	smp->base_version = IB_MGMT_BASE_VERSION;
	smp->mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	smp->class_version = 1;
	smp->method = IB_MGMT_METHOD_SET;
	smp->tid = cpu_to_be64(atomic64_inc_return(&sdev->sm_mft_sets));
	smp->attr_id = IB_SMP_ATTR_MCAST_FORWARD_TABLE;
	smp->attr_mod = cpu_to_be32(block);	/* position 0 */
	softib_sm_send(sdev, softib_sm_lid, softib_sm_switch_lid(node), 0,
		       0xffff, smp);
	kfree(smp);
}

/*
 * A group's members changed (sa.c): the master sets the group's MFT
 * block at every other node's switch. The answers come back to this
 * switch, which drops them (switch.c).
 */
void softib_sm_mft_update(struct softib_dev *sdev, u16 mlid)
{
	u64 nodes;
	u32 k;

	lockdep_assert_held(&sdev->sa_lock);
	if (!sdev->link || !softib_sm_is_master(sdev) ||
	    mlid < SOFTIB_MLID_BASE || mlid >= SOFTIB_LID_PERMISSIVE)
		return;
	nodes = softib_link_sm_nodes(sdev);
	for (k = 1; k <= SOFTIB_NODE_MAX; k++)
		if (nodes & BIT_ULL(k))
			softib_sm_mft_send(sdev, k,
					   (mlid - SOFTIB_MLID_BASE) /
					   SOFTIB_SW_MFT_BLOCK);
}

/*
 * Elect: the master after a link came up or went down. Runs on the
 * device's workqueue, one at a time.
 */
static void softib_sm_elect_work(struct work_struct *work)
{
	struct softib_dev *sdev = container_of(work, struct softib_dev,
					       sm_work);
	u32 old = READ_ONCE(sdev->sm_master), master, gen, i;
	u64 nodes, gone;
	u16 lid;

	if (softib_link_closing(sdev))
		return;
	master = softib_link_sm_master(sdev, softib_sm_priority,
				       softib_node_guid, &gen);
	/*
	 * The master forgets the ports of the nodes that left: their
	 * groups would hold MLIDs, and their bits go into the MFT blocks
	 * it sets when they come back.
	 */
	nodes = softib_link_sm_nodes(sdev);
	gone = sdev->sm_nodes & ~nodes;
	sdev->sm_nodes = nodes;
	if (master == softib_node && old == softib_node)
		for (i = 1; i <= SOFTIB_NODE_MAX; i++)
			if (gone & BIT_ULL(i))
				softib_sa_forget_members(sdev, i);
	/* the same master, unless it reloaded (a new link session) */
	if (master == old && gen == sdev->sm_master_gen)
		return;
	sdev->sm_master_gen = gen;

	/*
	 * The MFT is the new master's to fill. A node that becomes master
	 * clears it before its SA answers (another node may have elected it
	 * already and join); one that no longer is stops answering and
	 * programming first, forgets its memberships (after any request in
	 * progress: both hold sa_lock), then clears it. Only then do the
	 * ports learn the new SM LID and join again, so that no join of
	 * theirs meets the old state.
	 */
	if (master == softib_node) {
		softib_switch_sm_mft_clear(sdev);
		WRITE_ONCE(sdev->sm_master, master);
	} else {
		WRITE_ONCE(sdev->sm_master, master);
		if (old == softib_node)
			softib_sa_forget_members(sdev, 0);
		softib_switch_sm_mft_clear(sdev);
	}
	atomic64_inc(&sdev->sm_master_changes);
	lid = softib_sm_switch_lid(master);
	pr_info("subnet manager: node %u is master (SM LID %u), this node %s\n",
		master, lid, master == softib_node ? "master" : "standby");

	softib_switch_sm_set_lid(sdev, lid);
	for (i = 1; i <= sdev->nports; i++) {
		struct softib_port *port = softib_port(sdev, i);
		unsigned long flags;

		spin_lock_irqsave(&port->lock, flags);
		port->sm_lid = lid;
		spin_unlock_irqrestore(&port->lock, flags);
		softib_port_event(port, IB_EVENT_SM_CHANGE);
		softib_port_event(port, IB_EVENT_CLIENT_REREGISTER);
	}
}

/* A link came up or went down (link.c, any context). */
void softib_sm_peers_changed(struct softib_dev *sdev)
{
	if (sdev && softib_builtin_sm)
		queue_work(sdev->wq, &sdev->sm_work);
}

void softib_sm_init(struct softib_dev *sdev)
{
	sdev->sm_master = softib_node;
	INIT_WORK(&sdev->sm_work, softib_sm_elect_work);
}

/* Before the ports go: no election touches them after this. */
void softib_sm_stop(struct softib_dev *sdev)
{
	cancel_work_sync(&sdev->sm_work);
}
