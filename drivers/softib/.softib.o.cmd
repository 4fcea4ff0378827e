cmd_/work/main/drivers/softib/softib.o := ld -m elf_x86_64 -z noexecstack --no-warn-rwx-segments   -r -o /work/main/drivers/softib/softib.o @/work/main/drivers/softib/softib.mod 
