"""Builders of small AMD /sys trees (``make_root`` file and link dicts) for the amdgpu checks."""

from __future__ import annotations

DEV = "/sys/devices/pci0000:00"
UDEV = ('SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="render", MODE="0660"\n'
        'SUBSYSTEM=="kfd", GROUP="render", MODE="0660"\n')


def amd_node(n: int = 1, *, klass: int = 0x120000, device: int = 0x74A1, kfd: int | None = None,
             module: str | None = "6.12.12", rocm: str | None = "6.4.4-129",
             render: str = "trainer") -> tuple[dict, dict]:
    """(files, links) of a live AMD node: ``n`` GPUs on the bus, ``kfd`` of them (default
    all) in the KFD topology, amdgpu ``module`` loaded, ROCm ``rocm`` installed."""
    files: dict = {"/etc/passwd": "root:x:0:0::/root:/bin/sh\ntrainer:x:1001:1001::/h:/bin/sh\n",
                   "/etc/group": f"root:x:0:\nvideo:x:44:\nrender:x:109:{render}\n"
                                 "trainer:x:1001:\n",
                   "/usr/lib/udev/rules.d/50-udev-default.rules": UDEV,
                   "/dev/kfd": "", "/sys/class/kfd/kfd/dev": "235:0\n"}
    links: dict = {}
    if module:
        files["/sys/module/amdgpu/version"] = module + "\n"
    if rocm:
        files[f"/opt/rocm-{rocm.split('-')[0]}/.info/version"] = rocm + "\n"
    kfd = n if kfd is None else kfd
    for i in range(n):
        bdf = f"0000:{0x10 + i:02x}:00.0"
        base = f"{DEV}/{bdf}"
        files.update({f"{base}/vendor": "0x1002\n", f"{base}/device": f"0x{device:04x}\n",
                      f"{base}/class": f"0x{klass:06x}\n",
                      f"{base}/drm/renderD{128 + i}/dev": "", f"{base}/ras/umc_err_count":
                      "ue: 0\nce: 0\n", f"{base}/ras/gpu_vram_bad_pages": ""})
        links[f"{base}/driver"] = "../../../bus/pci/drivers/amdgpu"
        links[f"/sys/bus/pci/devices/{bdf}"] = "../../../devices/pci0000:00/" + bdf
        if i < kfd:
            files[f"/sys/class/kfd/kfd/topology/nodes/{i + 1}/properties"] = (
                f"simd_count 304\ndevice_id {device}\nlocation_id {(0x10 + i) << 8}\n"
                f"domain 0\ngfx_target_version 90402\ndrm_render_minor {128 + i}\n")
    return files, links
