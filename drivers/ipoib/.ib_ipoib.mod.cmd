cmd_/work/main/drivers/ipoib/ib_ipoib.mod := printf '%s\n'   main.o | awk '!x[$$0]++ { print("/work/main/drivers/ipoib/"$$0) }' > /work/main/drivers/ipoib/ib_ipoib.mod
