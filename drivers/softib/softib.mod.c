#include <linux/module.h>
#define INCLUDE_VERMAGIC
#include <linux/build-salt.h>
#include <linux/elfnote-lto.h>
#include <linux/export-internal.h>
#include <linux/vermagic.h>
#include <linux/compiler.h>

BUILD_SALT;
BUILD_LTO_INFO;

MODULE_INFO(vermagic, VERMAGIC_STRING);
MODULE_INFO(name, KBUILD_MODNAME);

__visible struct module __this_module
__section(".gnu.linkonce.this_module") = {
	.name = KBUILD_MODNAME,
	.init = init_module,
#ifdef CONFIG_MODULE_UNLOAD
	.exit = cleanup_module,
#endif
	.arch = MODULE_ARCH_INIT,
};

#ifdef CONFIG_RETPOLINE
MODULE_INFO(retpoline, "Y");
#endif


static const struct modversion_info ____versions[]
__used __section("__versions") = {
	{ 0x88db9f48, "__check_object_size" },
	{ 0x49cd25ed, "alloc_workqueue" },
	{ 0x91c14d8d, "param_ops_uint" },
	{ 0x13c49cc2, "_copy_from_user" },
	{ 0x8d522714, "__rcu_read_lock" },
	{ 0x656e4a6e, "snprintf" },
	{ 0xc5b6f236, "queue_work_on" },
	{ 0x222e7ce2, "sysfs_streq" },
	{ 0x73baf9a2, "ib_modify_qp_is_ok" },
	{ 0x69acdf38, "memcpy" },
	{ 0x37a0cba, "kfree" },
	{ 0xdef3fb11, "seq_lseek" },
	{ 0xcf29176e, "_ib_alloc_device" },
	{ 0x34db050b, "_raw_spin_lock_irqsave" },
	{ 0xba8fbd64, "_raw_spin_lock" },
	{ 0xcbd4898c, "fortify_panic" },
	{ 0xbdfb6dbb, "__fentry__" },
	{ 0x973d2e5e, "ib_unregister_device" },
	{ 0x65487097, "__x86_indirect_thunk_rax" },
	{ 0x92997ed8, "_printk" },
	{ 0x3aa40778, "ib_register_device" },
	{ 0xa19b956, "__stack_chk_fail" },
	{ 0xb2fcb56d, "queue_delayed_work_on" },
	{ 0xe46021ca, "_raw_spin_unlock_bh" },
	{ 0xa916b694, "strnlen" },
	{ 0x599fb41c, "kvmalloc_node" },
	{ 0xcad7eba7, "ib_dispatch_event" },
	{ 0x68f31cbd, "__list_add_valid" },
	{ 0x3ea1aad3, "simple_open" },
	{ 0x6091797f, "synchronize_rcu" },
	{ 0x2469810f, "__rcu_read_unlock" },
	{ 0xd0a75f7, "platform_device_unregister" },
	{ 0xa85a3e6d, "xa_load" },
	{ 0xb04a43ad, "__xa_alloc_cyclic" },
	{ 0x8c03d20c, "destroy_workqueue" },
	{ 0xedd0b017, "debugfs_remove" },
	{ 0xe1537255, "__list_del_entry_valid" },
	{ 0x3c3fce39, "__local_bh_enable_ip" },
	{ 0xd35cce70, "_raw_spin_unlock_irqrestore" },
	{ 0x7ad86aef, "default_llseek" },
	{ 0x5b8239ca, "__x86_return_thunk" },
	{ 0x50f21920, "ib_dealloc_device" },
	{ 0x745a981, "xa_erase" },
	{ 0x1db3ba77, "seq_read" },
	{ 0xdd64e639, "strscpy" },
	{ 0x4629334c, "__preempt_count" },
	{ 0x59edad5e, "debugfs_create_file" },
	{ 0xd3c5a7d8, "platform_device_register_full" },
	{ 0xbaf22757, "kvfree_call_rcu" },
	{ 0x9fa7184a, "cancel_delayed_work_sync" },
	{ 0xc6f46339, "init_timer_key" },
	{ 0xd9491c14, "xa_destroy" },
	{ 0x3c12dfe, "cancel_work_sync" },
	{ 0xf0949581, "seq_printf" },
	{ 0xffeedf6a, "delayed_work_timer_fn" },
	{ 0xc3690fc, "_raw_spin_lock_bh" },
	{ 0xc7c7a019, "single_release" },
	{ 0x606e9d01, "kmalloc_trace" },
	{ 0x60a13e90, "rcu_barrier" },
	{ 0x7aa1756e, "kvfree" },
	{ 0xc941a41a, "single_open" },
	{ 0xf4316fcd, "debugfs_create_dir" },
	{ 0xb5b54b34, "_raw_spin_unlock" },
	{ 0x619cb7dd, "simple_read_from_buffer" },
	{ 0xeb233a45, "__kmalloc" },
	{ 0xe2c17b5d, "__SCT__might_resched" },
	{ 0x7a7caba8, "kmalloc_caches" },
	{ 0xe0dc256d, "ib_set_device_ops" },
	{ 0x9060323f, "module_layout" },
};

MODULE_INFO(depends, "ib_core");


MODULE_INFO(srcversion, "072C7EBDFFF4D89F02D31BD");
