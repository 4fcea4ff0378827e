cmd_/work/main/drivers/ipoib/ib_ipoib.o := ld -m elf_x86_64 -z noexecstack --no-warn-rwx-segments   -r -o /work/main/drivers/ipoib/ib_ipoib.o @/work/main/drivers/ipoib/ib_ipoib.mod 
