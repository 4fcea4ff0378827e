/work/main/drivers/ipoib/main.o
