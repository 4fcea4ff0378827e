// SPDX-License-Identifier: GPL-2.0
/*
 * softib: device registration, ports and the subnet manager's port view.
 *
 * One IB device, softib0, with "ports" IB-link-layer ports that all hang
 * off one in-kernel switch (fabric.c). The device is a kernel verbs
 * provider: ib_mad, ib_sa, ib_cm and IPoIB attach to it as to hardware.
 *
 * Copyright (C) 2026 The ipoib-ng authors
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <rdma/ib_mad.h>

#include "softib.h"

static unsigned int ports = 2;
module_param(ports, uint, 0444);
MODULE_PARM_DESC(ports, "Number of IB ports of softib0 (1-16, default 2)");

/* HCAs without SRQs exist; ULPs (IPoIB connected mode) must cope */
bool softib_srq = true;
module_param_named(srq, softib_srq, bool, 0444);
MODULE_PARM_DESC(srq, "Offer shared receive queues (default 1; 0 behaves like an HCA without SRQ support)");

/* a consumer (or softib) bug check, not a hardware behaviour: see wrid.c */
bool softib_debug_wrid;
module_param_named(debug_wrid, softib_debug_wrid, bool, 0444);
MODULE_PARM_DESC(debug_wrid, "WARN when a wr_id is posted while still outstanding on its queue, or completed while not outstanding (default 0)");

/*
 * Who manages the subnet. "builtin": the SM and SA in this module (sa.c)
 * bring every port up at once. "none": the ports train to Init with LID
 * 0 and wait, as on a fabric without an SM, until an SM such as OpenSM,
 * started on one of them, configures the subnet through the SMAs.
 */
static char *softib_sm_param = "builtin";
module_param_named(sm, softib_sm_param, charp, 0444);
MODULE_PARM_DESC(sm, "Subnet manager: builtin (default) or none (the ports wait in Init for an SM such as OpenSM)");
bool softib_builtin_sm = true;
/*
 * The IB MTU of the fabric's paths between nodes (enum ib_mtu): the
 * link's when one is configured (its underlay decides, softib_link_*),
 * else the ports' own. Set before the device exists, so that even the
 * policy's first broadcast groups follow it.
 */
u8 softib_fabric_mtu = SOFTIB_MTU;

/*
 * This node's number on a fabric of several kernels (link.c): it picks
 * the GUIDs and LIDs, so it must differ between the nodes.
 */
u32 softib_node;
module_param_named(node, softib_node, uint, 0444);
MODULE_PARM_DESC(node, "This node's number on a fabric across kernels (1-63, different on every node; default 0: a fabric of this kernel alone)");
u64 softib_node_guid = SOFTIB_GUID_BASE;
u64 softib_switch_guid = SOFTIB_GUID_BASE | SOFTIB_SWITCH_GUID_BIT;
u16 softib_sm_lid = SOFTIB_SM_LID_SINGLE;
u16 softib_lid_base;

static struct softib_dev *softib_dev;

/* what OpenSM does with no partitions.conf: every port a full member of 0x7fff */
static const char softib_default_policy[] = "Default=0x7fff, ipoib : ALL=full;\n";

static int softib_query_port(struct ib_device *ibdev, u32 port_num,
			     struct ib_port_attr *attr)
{
	struct softib_port *port = softib_port(to_sdev(ibdev), port_num);
	unsigned long flags;

	/* ib_core zeroes *attr before calling us; PortInfo says the same */
	spin_lock_irqsave(&port->lock, flags);
	attr->state = port->state;
	attr->phys_state = port->phys_state;
	attr->port_cap_flags = port->cap_flags;
	attr->lid = port->lid;
	attr->lmc = port->lmc;
	attr->sm_lid = port->sm_lid;
	attr->sm_sl = port->sm_sl;
	attr->subnet_prefix = port->gid_prefix;
	attr->subnet_timeout = port->subnet_timeout;
	attr->active_mtu = min_t(u8, port->neighbor_mtu, SOFTIB_MTU);
	spin_unlock_irqrestore(&port->lock, flags);

	attr->max_mtu = SOFTIB_MTU;
	attr->phys_mtu = SOFTIB_MTU_BYTES;
	attr->gid_tbl_len = SOFTIB_GID_TBL_LEN;
	attr->pkey_tbl_len = SOFTIB_PKEY_TBL_LEN;
	attr->max_msg_sz = SOFTIB_MAX_MSG;
	attr->bad_pkey_cntr =
		(u32)atomic64_read(&port->cnt.drops[SOFTIB_DROP_PKEY]);
	attr->qkey_viol_cntr =
		(u32)atomic64_read(&port->cnt.drops[SOFTIB_DROP_QKEY]);
	attr->max_vl_num = 1;
	attr->active_width = IB_WIDTH_4X;
	attr->active_speed = IB_SPEED_EDR;
	return 0;
}

static int softib_modify_port(struct ib_device *ibdev, u32 port_num, int mask,
			      struct ib_port_modify *modify)
{
	struct softib_port *port = softib_port(to_sdev(ibdev), port_num);
	unsigned long flags;

	if (mask & ~(IB_PORT_SHUTDOWN | IB_PORT_INIT_TYPE |
		     IB_PORT_RESET_QKEY_CNTR))
		return -EOPNOTSUPP;

	spin_lock_irqsave(&port->lock, flags);
	port->cap_flags |= modify->set_port_cap_mask;
	port->cap_flags &= ~modify->clr_port_cap_mask;
	spin_unlock_irqrestore(&port->lock, flags);

	if (mask & IB_PORT_RESET_QKEY_CNTR)
		atomic64_set(&port->cnt.drops[SOFTIB_DROP_QKEY], 0);
	if (mask & IB_PORT_SHUTDOWN)
		softib_port_set_state(port, IB_PORT_DOWN);
	return 0;
}

static int softib_modify_device(struct ib_device *ibdev, int mask,
				struct ib_device_modify *modify)
{
	if (mask & ~(IB_DEVICE_MODIFY_SYS_IMAGE_GUID |
		     IB_DEVICE_MODIFY_NODE_DESC))
		return -EOPNOTSUPP;

	if (mask & IB_DEVICE_MODIFY_NODE_DESC)
		memcpy(ibdev->node_desc, modify->node_desc,
		       IB_DEVICE_NODE_DESC_MAX);
	/* the system image GUID is fixed: it is the node GUID */
	return 0;
}

static int softib_get_port_immutable(struct ib_device *ibdev, u32 port_num,
				     struct ib_port_immutable *immutable)
{
	immutable->pkey_tbl_len = SOFTIB_PKEY_TBL_LEN;
	immutable->gid_tbl_len = SOFTIB_GID_TBL_LEN;
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_IB;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer softib_get_link_layer(struct ib_device *ibdev,
						  u32 port_num)
{
	return IB_LINK_LAYER_INFINIBAND;
}

static int softib_query_pkey(struct ib_device *ibdev, u32 port_num, u16 index,
			     u16 *pkey)
{
	struct softib_port *port = softib_port(to_sdev(ibdev), port_num);
	unsigned long flags;

	if (index >= SOFTIB_PKEY_TBL_LEN)
		return -EINVAL;
	spin_lock_irqsave(&port->lock, flags);
	*pkey = port->pkeys[index];
	spin_unlock_irqrestore(&port->lock, flags);
	return 0;
}

static int softib_query_gid(struct ib_device *ibdev, u32 port_num, int index,
			    union ib_gid *gid)
{
	struct softib_port *port = softib_port(to_sdev(ibdev), port_num);

	if (index != 0)
		return -EINVAL;
	softib_port_gid(port, gid);
	return 0;
}

static void softib_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%s", IPOIB_NG_VERSION);
}

/* Tell the consumers of one port that something changed on it. */
void softib_port_event(struct softib_port *port, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &port->sdev->ibdev,
		.event = type,
		.element.port_num = port->num,
	};

	ib_dispatch_event(&ev);
}

/*
 * Move a port between DOWN and ACTIVE the way a subnet manager's sweep
 * does, and report the edge as PORT_ERR / PORT_ACTIVE.
 */
void softib_port_set_state(struct softib_port *port,
			   enum ib_port_state state)
{
	enum ib_port_state old;
	unsigned long flags;

	spin_lock_irqsave(&port->lock, flags);
	old = port->state;
	port->state = state;
	spin_unlock_irqrestore(&port->lock, flags);

	if (old == state)
		return;
	if (state == IB_PORT_ACTIVE)
		softib_port_event(port, IB_EVENT_PORT_ACTIVE);
	else if (old == IB_PORT_ACTIVE)
		softib_port_event(port, IB_EVENT_PORT_ERR);
}

/*
 * The physical link of a port: LinkUp after training, Polling without a
 * peer, Disabled by the SM. A link that is up has trained to Init; the
 * built-in SM configures such a port at once, so it goes on to Active.
 * Without it the port stays in Init until an SM arms and activates it.
 */
void softib_port_phys(struct softib_port *port, u8 phys_state)
{
	struct softib_dev *sdev = port->sdev;
	unsigned long flags;

	/* a link whose switch port is disabled cannot train */
	if (phys_state == IB_PORT_PHYS_STATE_LINK_UP &&
	    !softib_switch_port_enabled(sdev, port->num))
		phys_state = IB_PORT_PHYS_STATE_POLLING;

	spin_lock_irqsave(&port->lock, flags);
	if (port->phys_state == IB_PORT_PHYS_STATE_LINK_UP &&
	    phys_state != IB_PORT_PHYS_STATE_LINK_UP)
		atomic64_inc(&port->cnt.link_downed);
	port->phys_state = phys_state;
	spin_unlock_irqrestore(&port->lock, flags);

	/* both ends of the cable: the switch port, then the CA port */
	softib_switch_link(sdev, port->num,
			   phys_state == IB_PORT_PHYS_STATE_LINK_UP);
	if (phys_state != IB_PORT_PHYS_STATE_LINK_UP)
		softib_port_set_state(port, IB_PORT_DOWN);
	else
		softib_port_set_state(port, softib_builtin_sm ? IB_PORT_ACTIVE :
							       IB_PORT_INIT);
}

/* A link that polls finds its peer after a while: LinkUp. */
static void softib_link_work(struct work_struct *work)
{
	struct softib_port *port = container_of(to_delayed_work(work),
						struct softib_port, link_work);

	if (READ_ONCE(port->cabled) &&
	    READ_ONCE(port->phys_state) == IB_PORT_PHYS_STATE_POLLING)
		softib_port_phys(port, IB_PORT_PHYS_STATE_LINK_UP);
}

/*
 * Take a port's link down and let it train again (an SM's Set of
 * PortState Down, or of Polling on a disabled port, at either end of the
 * cable): Polling now, LinkUp SOFTIB_LINK_TRAIN_MS later if still cabled.
 */
void softib_port_retrain(struct softib_port *port)
{
	softib_port_phys(port, IB_PORT_PHYS_STATE_POLLING);
	queue_delayed_work(port->sdev->wq, &port->link_work,
			   msecs_to_jiffies(SOFTIB_LINK_TRAIN_MS));
}

/*
 * Ports register DOWN and come up in a "sweep" after registration, so that
 * every client sees the PORT_ACTIVE edge (ib_sa fetches ClassPortInfo from
 * its event handler only).
 */
static void softib_sweep(struct work_struct *work)
{
	struct softib_dev *sdev = container_of(to_delayed_work(work),
					       struct softib_dev, sweep);
	u32 i;

	for (i = 0; i < sdev->nports; i++)
		if (READ_ONCE(sdev->ports[i].cabled))
			softib_port_phys(&sdev->ports[i],
					 IB_PORT_PHYS_STATE_LINK_UP);
}

/* enhanced=1: IPoIB gets softib's rdma_netdev (rdma_netdev.c) */
static const struct ib_device_ops softib_rn_ops = {
	.rdma_netdev_get_params = softib_rn_get_params,
};

const struct ib_device_ops softib_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = 1,

	.alloc_hw_port_stats = softib_alloc_hw_port_stats,
	.attach_mcast = softib_attach_mcast,
	.create_ah = softib_create_ah,
	.create_qp = softib_create_qp,
	.create_srq = softib_create_srq,
	.dealloc_pd = softib_dealloc_pd,
	.dereg_mr = softib_dereg_mr,
	.destroy_ah = softib_destroy_ah,
	.destroy_cq = softib_destroy_cq,
	.destroy_qp = softib_destroy_qp,
	.destroy_srq = softib_destroy_srq,
	.detach_mcast = softib_detach_mcast,
	.get_dev_fw_str = softib_get_dev_fw_str,
	.get_dma_mr = softib_get_dma_mr,
	.get_hw_stats = softib_get_hw_stats,
	.get_link_layer = softib_get_link_layer,
	.get_port_immutable = softib_get_port_immutable,
	.modify_device = softib_modify_device,
	.modify_port = softib_modify_port,
	.modify_qp = softib_modify_qp,
	.modify_srq = softib_modify_srq,
	.poll_cq = softib_poll_cq,
	.post_recv = softib_post_recv,
	.post_send = softib_post_send,
	.post_srq_recv = softib_post_srq_recv,
	.process_mad = softib_process_mad,
	.query_ah = softib_query_ah,
	.query_device = softib_query_device,
	.query_gid = softib_query_gid,
	.query_pkey = softib_query_pkey,
	.query_port = softib_query_port,
	.query_qp = softib_query_qp,
	.query_srq = softib_query_srq,
	.reg_user_mr = softib_reg_user_mr,
	.req_notify_cq = softib_req_notify_cq,
	.modify_cq = softib_modify_cq,
	.alloc_pd = softib_alloc_pd,

	INIT_RDMA_OBJ_SIZE(ib_ah, softib_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, softib_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, softib_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, softib_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, softib_srq, ibsrq),
};

static int softib_create_cq(struct ib_cq *ibcq,
			    const struct ib_cq_init_attr *attr,
			    COMPAT_CREATE_CQ_CTX *ctx)
{
	return softib_create_cq_common(ibcq, attr, !!ctx);
}

static const struct ib_device_ops softib_cq_ops = {
	.create_cq = softib_create_cq,
};

static void softib_init_port(struct softib_dev *sdev, u32 num)
{
	struct softib_port *port = softib_port(sdev, num);

	port->sdev = sdev;
	port->num = num;
	spin_lock_init(&port->lock);
	port->state = IB_PORT_DOWN;
	port->cabled = true;
	INIT_DELAYED_WORK(&port->link_work, softib_link_work);
	softib_sma_init_port(port);
	/*
	 * Power-up: no LID, no SM, the default partition as full member
	 * (what an HCA's firmware holds before an SM writes the table).
	 */
	port->pkeys[0] = 0xffff;
	/* the built-in SM's addressing: LID base + N for port N, the SM at its own */
	if (softib_builtin_sm) {
		port->lid = softib_lid_base + num;
		port->sm_lid = softib_sm_lid;
	}
}

static struct softib_dev *softib_create(u32 nports, u32 link_ports)
{
	struct softib_dev *sdev;
	u32 i;
	int ret;

	sdev = ib_alloc_device(softib_dev, ibdev);
	if (!sdev)
		return ERR_PTR(-ENOMEM);

	ret = -ENOMEM;
	sdev->ports = kcalloc(nports, sizeof(*sdev->ports), GFP_KERNEL);
	if (!sdev->ports)
		goto err_dealloc;
	sdev->nports = nports;
	sdev->link_ports = link_ports;
	for (i = 1; i <= nports; i++)
		softib_init_port(sdev, i);

	xa_init_flags(&sdev->qps, XA_FLAGS_ALLOC);
	sdev->next_qpn = 2;
	spin_lock_init(&sdev->mcast_lock);
	INIT_LIST_HEAD(&sdev->mcast);
	mutex_init(&sdev->bench_lock);
	INIT_DELAYED_WORK(&sdev->sweep, softib_sweep);
	ret = softib_switch_init(sdev);
	if (ret)
		goto err_free_ports;
	/* the SA allocates nothing until it answers */
	softib_sa_init(sdev);
	softib_sa_table_init(sdev);
	softib_sm_init(sdev);
	if (softib_builtin_sm) {
		softib_switch_sm(sdev);
		ret = softib_policy_set(sdev, softib_default_policy,
					strlen(softib_default_policy));
		if (ret)
			goto err_sa_switch_cleanup;
	}

	/*
	 * The send engine and completion notification run here, never in
	 * the poster's context: ib_mad posts with a spinlock held and IRQs
	 * off, and consumers re-post from their completion handlers.
	 */
	ret = -ENOMEM;
	sdev->wq = alloc_workqueue("softib", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!sdev->wq)
		goto err_sa_switch_cleanup;

	sdev->pdev = platform_device_register_simple("softib", PLATFORM_DEVID_AUTO,
						     NULL, 0);
	if (IS_ERR(sdev->pdev)) {
		ret = PTR_ERR(sdev->pdev);
		goto err_destroy_wq;
	}

	sdev->ibdev.node_type = RDMA_NODE_IB_CA;
	sdev->ibdev.phys_port_cnt = nports;
	sdev->ibdev.num_comp_vectors = 1;
	sdev->ibdev.node_guid = cpu_to_be64(softib_node_guid);
	sdev->ibdev.dev.parent = &sdev->pdev->dev;
	strscpy(sdev->ibdev.node_desc, "softib software HCA",
		sizeof(sdev->ibdev.node_desc));
	ib_set_device_ops(&sdev->ibdev, &softib_dev_ops);
	ib_set_device_ops(&sdev->ibdev, &softib_cq_ops);
	if (softib_enhanced)
		ib_set_device_ops(&sdev->ibdev, &softib_rn_ops);

	/* No DMA device: ib_uses_virt_dma(), every SGE address is a kernel VA. */
	ret = ib_register_device(&sdev->ibdev, "softib%d", NULL);
	if (ret)
		goto err_unregister_pdev;

	softib_debugfs_init(sdev);
	queue_delayed_work(sdev->wq, &sdev->sweep, msecs_to_jiffies(10));
	return sdev;

err_unregister_pdev:
	platform_device_unregister(sdev->pdev);
err_destroy_wq:
	destroy_workqueue(sdev->wq);
err_sa_switch_cleanup:
	/* the SA's groups first: freeing one clears its MFT entry */
	softib_sa_cleanup(sdev);
	softib_switch_cleanup(sdev);
err_free_ports:
	kfree(sdev->ports);
err_dealloc:
	ib_dealloc_device(&sdev->ibdev);
	return ERR_PTR(ret);
}

static void softib_destroy(struct softib_dev *sdev)
{
	u32 i;

	/*
	 * 1. Remove the control files, stop the sweep and drop the SA
	 *    answers fault/sa_delay_ms holds back, so no port event or late
	 *    MAD races with unregistration.
	 * 2. Unregister: ib_core removes every client, which destroys all of
	 *    their QPs, CQs and AHs through our ops (cancelling their work).
	 * 3. Only then is the workqueue idle and safe to destroy.
	 */
	softib_debugfs_cleanup(sdev);
	softib_sm_stop(sdev);
	cancel_delayed_work_sync(&sdev->sweep);
	softib_sa_drop_delayed(sdev);
	ib_unregister_device(&sdev->ibdev);
	/* no QP is left to ask for a table: the last transfers go */
	softib_sa_table_cleanup(sdev);
	/* no SMP can take a link down any more: its retrain is the last */
	for (i = 0; i < sdev->nports; i++)
		cancel_delayed_work_sync(&sdev->ports[i].link_work);
	softib_mcast_cleanup(sdev);
	WARN_ON(!xa_empty(&sdev->qps));
	xa_destroy(&sdev->qps);
	destroy_workqueue(sdev->wq);
	softib_sa_cleanup(sdev);
	softib_switch_cleanup(sdev);
	platform_device_unregister(sdev->pdev);
	kfree(sdev->ports);
	ib_dealloc_device(&sdev->ibdev);
}

static int __init softib_init(void)
{
	struct softib_link *link;
	struct softib_dev *sdev;
	int ret;

	if (ports < 1 || ports > SOFTIB_MAX_PORTS) {
		pr_err("ports=%u is out of range: load with ports=1..%u\n",
		       ports, SOFTIB_MAX_PORTS);
		return -EINVAL;
	}
	if (softib_sa_max_groups < 1 ||
	    softib_sa_max_groups > SOFTIB_MLID_LAST - SOFTIB_MLID_FIRST + 1) {
		pr_err("sa_max_groups=%u is out of range: load with sa_max_groups=1..%u\n",
		       softib_sa_max_groups,
		       SOFTIB_MLID_LAST - SOFTIB_MLID_FIRST + 1);
		return -EINVAL;
	}

	if (sysfs_streq(softib_sm_param, "none")) {
		softib_builtin_sm = false;
	} else if (!sysfs_streq(softib_sm_param, "builtin")) {
		pr_err("sm=%s is not a subnet manager mode: load with sm=builtin or sm=none\n",
		       softib_sm_param);
		return -EINVAL;
	}
	ret = softib_sm_check_params();
	if (ret)
		return ret;
	if (softib_node > SOFTIB_NODE_MAX) {
		pr_err("node=%u is out of range: load with node=1..%u (0: no fabric across kernels)\n",
		       softib_node, SOFTIB_NODE_MAX);
		return -EINVAL;
	}
	if (softib_node) {
		softib_node_guid = SOFTIB_GUID_BASE |
				   ((u64)softib_node << SOFTIB_GUID_NODE_SHIFT);
		softib_switch_guid = softib_node_guid | SOFTIB_SWITCH_GUID_BIT;
		softib_lid_base = softib_node * SOFTIB_NODE_LIDS;
		softib_sm_lid = softib_lid_base;
	}
	if (!softib_builtin_sm && softib_vnodes) {
		pr_err("vnodes=%u needs the built-in SM's SA: load with sm=builtin or vnodes=0\n",
		       softib_vnodes);
		return -EINVAL;
	}

	link = softib_link_prepare();
	if (IS_ERR(link))
		return PTR_ERR(link);

	ret = softib_vnode_setup();
	if (ret)
		goto out_link;

	sdev = softib_create(ports, link ? softib_link_npeers(link) : 0);
	if (IS_ERR(sdev)) {
		ret = PTR_ERR(sdev);
		goto out_vnodes;
	}
	if (link) {
		ret = softib_link_start(sdev, link);
		if (ret)
			goto out_destroy;
	}
	softib_dev = sdev;
	return 0;

out_destroy:
	softib_destroy(sdev);
out_vnodes:
	softib_vnode_cm_cleanup();
out_link:
	softib_link_discard(link);
	return ret;
}

static void __exit softib_exit(void)
{
	struct softib_link *link = softib_dev->link;

	/*
	 * The link stops first: nothing comes in from the other nodes while
	 * the device goes. It is freed last: destroying the ULPs' QPs still
	 * finds it, closed (an RC message in flight fails, rc_remote.c).
	 */
	softib_link_stop(softib_dev);
	softib_destroy(softib_dev);
	softib_link_discard(link);
	softib_vnode_cm_cleanup();
}

module_init(softib_init);
module_exit(softib_exit);

MODULE_AUTHOR("The ipoib-ng authors");
MODULE_DESCRIPTION("softib: software InfiniBand HCA with an in-kernel fabric");
MODULE_LICENSE("GPL");
MODULE_VERSION(IPOIB_NG_VERSION);
