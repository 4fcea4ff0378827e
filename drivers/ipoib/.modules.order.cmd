cmd_/work/main/drivers/ipoib/modules.order := {   echo /work/main/drivers/ipoib/ib_ipoib.ko; :; } > /work/main/drivers/ipoib/modules.order
