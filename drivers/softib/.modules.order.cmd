cmd_/work/main/drivers/softib/modules.order := {   echo /work/main/drivers/softib/softib.ko; :; } > /work/main/drivers/softib/modules.order
