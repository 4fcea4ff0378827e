/work/main/drivers/softib/main.o
/work/main/drivers/softib/verbs.o
/work/main/drivers/softib/fabric.o
/work/main/drivers/softib/debugfs.o
