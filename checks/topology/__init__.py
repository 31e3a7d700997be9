"""Device topology checks: GPU NUMA nodes and GPU-NIC affinity."""
