"""The AMD GPU stack as the kernel, udev and ROCm decide it, read from files and sysfs (nothing
of the scanned system is executed offline): GPUs on the PCI bus and in the KFD topology
(:mod:`.devices`), RAS error counters and retired VRAM pages (:mod:`.ras`), the amdgpu
driver, ROCm releases and frameworks' ROCm builds (:mod:`.stack`), AMD's compatibility table
(:mod:`.table`), ``amd-smi`` JSON (:mod:`.smi`, live only), who can open ``/dev/kfd`` and the
render nodes (:mod:`.access`), whether the AMD rules apply (:mod:`.presence`) and the facts a
node-class baseline pins (:mod:`.facts`)."""
