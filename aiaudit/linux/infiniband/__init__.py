"""InfiniBand and RoCE ports as the kernel's RDMA core shows them in sysfs."""
