cmd_/work/main/drivers/softib/softib.mod := printf '%s\n'   main.o verbs.o fabric.o debugfs.o | awk '!x[$$0]++ { print("/work/main/drivers/softib/"$$0) }' > /work/main/drivers/softib/softib.mod
