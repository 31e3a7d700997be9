"""Builders of /sys and /proc trees (as ``make_root`` file and link dicts) for the GPU node
readiness checks: PCI functions with their links, RDMA ports, config spaces."""

from __future__ import annotations

import struct

from tests.linux.kmod.test_modinfo import make_ko

PROC = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 2024\n"
DEV = "/sys/devices/pci0000:00"


def pci(files: dict, links: dict, path: str, vendor: int, klass: int, speed: str = "",
        width: int = 0, cur_speed: str = "", cur_width: int | None = None) -> str:
    """A PCI function at ``path`` under /sys/devices/pci0000:00 (with its link attributes
    when ``speed`` is given) and its /sys/bus/pci/devices link; returns its BDF."""
    bdf = path.rsplit("/", 1)[-1]
    base = f"{DEV}/{path}"
    files[f"{base}/vendor"] = f"0x{vendor:04x}\n"
    files[f"{base}/class"] = f"0x{klass:06x}\n"
    if speed:
        files[f"{base}/max_link_speed"] = speed + "\n"
        files[f"{base}/current_link_speed"] = (cur_speed or speed) + "\n"
        files[f"{base}/max_link_width"] = f"{width}\n"
        files[f"{base}/current_link_width"] = f"{width if cur_width is None else cur_width}\n"
    links[f"/sys/bus/pci/devices/{bdf}"] = "../../.." + base[len("/sys"):]
    return bdf


def gpu_host(**over):
    """(files, links) of a live host with the NVIDIA driver loaded, plus ``over``."""
    files = {"/proc/driver/nvidia/version": PROC, "/sys/module/nvidia/version": "535.161.08\n"}
    links: dict = {}
    files.update(over)
    return files, links


KO = {"/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko": make_ko("535.161.08")}
"""An offline root with an NVIDIA driver (so the GPU rules apply)."""


NO_CMDLINE = ("no kernel command line in boot/loader/entries/*.conf, boot/grub/grub.cfg, "
              "boot/grub2/grub.cfg, boot/efi/EFI/debian/grub.cfg, etc/kernel/cmdline, "
              "etc/default/grub, etc/default/grub.d/*.cfg")


def config(acs: int | None) -> bytes:
    """A 4096-byte PCIe config space: one extended capability, then (unless ``acs`` is
    ``None``) an ACS capability whose control register is ``acs``."""
    cfg = bytearray(4096)
    nxt = 0x148 if acs is not None else 0
    cfg[0x100:0x104] = struct.pack("<I", 0x0001 | (1 << 16) | (nxt << 20))
    if acs is not None:
        cfg[0x148:0x14C] = struct.pack("<I", 0x000D | (1 << 16))
        cfg[0x14E:0x150] = struct.pack("<H", acs)
    return bytes(cfg)


def port(files: dict, dev: str, n: int, state: str, rate: str, layer: str = "InfiniBand"):
    """Port ``n`` of RDMA device ``dev`` in ``files``."""
    b = f"/sys/class/infiniband/{dev}/ports/{n}"
    files.update({f"{b}/state": state + "\n", f"{b}/rate": rate + "\n",
                  f"{b}/link_layer": layer + "\n"})
