"""PCI and RDMA devices as sysfs shows them: attribute formats (:mod:`.sysfs`), the device
inventory (:mod:`.devices`), RDMA devices and ports (:mod:`.rdma`), the ACS capability in
configuration space (:mod:`.acs`) and how the kernel command line sets the IOMMU
(:mod:`.iommu`)."""
