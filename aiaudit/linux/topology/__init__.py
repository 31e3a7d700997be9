"""Where devices sit relative to each other: PCIe paths, NUMA nodes, GPU-NIC affinity."""
