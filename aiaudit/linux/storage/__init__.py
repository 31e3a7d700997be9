"""Storage: fstab, mounts and swaps; the disks the tuning checks audit and what the next
boot writes to their queue attributes; the size of /dev/shm; the swap the next boot turns
on."""
