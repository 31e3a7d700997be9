"""GPU node readiness checks: nouveau, nvidia-uvm, Fabric Manager, peermem, PCIe links,
IOMMU, ACS, RDMA ports, fabric MTU, IRQ layout and the nvidia-smi health rules."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess

import pytest
from aiaudit.checks import legacy_gpu_readiness as gr

from aiaudit.api import CheckContext
from aiaudit.core.host import CommandResult, Host
from aiaudit.core.model import Aspect, Status
from aiaudit.linux.gpu import nvsmi
from tests.helpers import run_check
from tests.linux.kmod.test_modinfo import make_ko

PROC = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 2024\n"
DEV = "/sys/devices/pci0000:00"


def pci(files: dict, links: dict, path: str, vendor: int, klass: int, speed: str = "",
        width: int = 0, cur_speed: str = "", cur_width: int | None = None) -> str:
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
    files = {"/proc/driver/nvidia/version": PROC, "/sys/module/nvidia/version": "535.161.08\n"}
    links: dict = {}
    files.update(over)
    return files, links


# ------------------------------------------------------------------ nouveau
def test_nouveau_blacklisted_not_loaded_passes_live(make_root) -> None:
    files, links = gpu_host(**{"/etc/modprobe.d/nv.conf": "blacklist nouveau\n"})
    [r] = run_check("gpu.nouveau", make_root(files, links), live=True)
    assert r.status is Status.PASS and r.aspect is Aspect.RUNTIME


def test_nouveau_loaded_fails_runtime(make_root) -> None:
    files, links = gpu_host(**{"/etc/modprobe.d/nv.conf": "blacklist nouveau\n"})
    [r] = run_check("gpu.nouveau", make_root(files, links, dirs=("/sys/module/nouveau",)),
                    live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME
    assert r.remediation and r.remediation.snippets[0].path.startswith("/etc/modprobe.d/")


def test_nouveau_etc_file_masks_vendor_blacklist(make_root) -> None:
    """Same basename: /etc wins, and a /dev/null link masks the /usr/lib file (kmod)."""
    files = {"/usr/lib/modprobe.d/nvidia.conf": "blacklist nouveau\n",
             "/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko": make_ko("535.161.08")}
    [r] = run_check("gpu.nouveau", make_root(files))
    assert r.status is Status.PASS and r.aspect is Aspect.PERSISTED
    [r] = run_check("gpu.nouveau", make_root(files, {"/etc/modprobe.d/nvidia.conf": "/dev/null"}))
    assert r.status is Status.FAIL


@pytest.mark.parametrize("how", ["install nouveau /bin/false\n", "options nouveau modeset=0\n"])
def test_nouveau_other_ways_to_disable(make_root, how: str) -> None:
    files = {"/etc/modprobe.d/x.conf": how,
             "/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko": make_ko("535.161.08")}
    [r] = run_check("gpu.nouveau", make_root(files))
    assert r.status is Status.PASS


def test_nouveau_kernel_cmdline_blacklist(make_root) -> None:
    files = {"/etc/kernel/cmdline": "root=/dev/sda1 modprobe.blacklist=foo,nouveau\n",
             "/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko": make_ko("535.161.08")}
    [r] = run_check("gpu.nouveau", make_root(files))
    assert r.status is Status.PASS and "kernel command line" in r.message


KO = {"/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko": make_ko("535.161.08")}
"""An offline root with an NVIDIA driver (so the GPU rules apply)."""
NO_CMDLINE = ("no kernel command line in boot/loader/entries/*.conf, boot/grub/grub.cfg, "
              "boot/grub2/grub.cfg, boot/efi/EFI/debian/grub.cfg, etc/kernel/cmdline, "
              "etc/default/grub, etc/default/grub.d/*.cfg")


def test_nouveau_offline_nothing_disables_it_names_what_was_looked_for(make_root) -> None:
    """No modprobe.d line and no command line: the kernel default (nouveau binds) decides;
    the evidence names the modprobe.d directories and command-line files looked at."""
    [r] = run_check("gpu.nouveau", make_root(KO))
    assert r.status is Status.FAIL and r.message.startswith(
        "no modprobe.d 'blacklist nouveau' and no modprobe.blacklist=nouveau: ")
    [ev] = r.evidence
    assert (ev.kind, ev.path) == ("default", None)
    assert ev.source == (
        "nouveau at boot: no blacklist, install or options modeset=0 for nouveau in "
        "etc/modprobe.d/*.conf, run/modprobe.d/*.conf, usr/local/lib/modprobe.d/*.conf, "
        "lib/modprobe.d/*.conf, usr/lib/modprobe.d/*.conf; no nouveau in modprobe.blacklist= "
        "or rd.driver.blacklist= or module_blacklist= and no nouveau.modeset=0 "
        f"({NO_CMDLINE})")
    assert ev.value.startswith("kernel default: nouveau loads")
    [r] = run_check("gpu.nouveau", make_root({**KO, "/etc/kernel/cmdline": "root=/dev/x\n"}))
    assert r.evidence[0].source.endswith(" and no nouveau.modeset=0 on etc/kernel/cmdline:1")
    # a line that decides is the evidence (file and line)
    [r] = run_check("gpu.nouveau", make_root({**KO, "/etc/modprobe.d/x.conf":
                                              "# keep\nblacklist nouveau\n"}))
    assert r.status is Status.PASS
    assert [(e.kind, e.path, e.line) for e in r.evidence] == [
        ("file", "/etc/modprobe.d/x.conf", 2)]


def test_iommu_offline_no_cmdline_names_what_was_looked_for(make_root) -> None:
    [r] = run_check("iommu.passthrough", make_root(KO))
    assert r.status is Status.FAIL and r.message.startswith(
        "at boot: no kernel command line found; ")
    [ev] = r.evidence
    assert (ev.kind, ev.source) == ("default", f"iommu=pt at boot: {NO_CMDLINE}")
    assert ev.value == "kernel default DMA domain (CONFIG_IOMMU_DEFAULT_*) unknown: " \
        "no boot/config-*"
    # a command line without iommu=pt: that file and line are the evidence, and the
    # kernel default that then applies
    [r] = run_check("iommu.passthrough", make_root(
        {**KO, "/etc/default/grub": 'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="quiet"\n'}))
    assert r.status is Status.FAIL
    assert [(e.kind, e.path, e.line) for e in r.evidence] == [
        ("file", "/etc/default/grub", 2), ("default", None, None)]


def test_no_gpu_skips(make_root) -> None:
    for check in ("gpu.nouveau", "gpu.uvm", "gpu.peermem", "iommu.passthrough"):
        [r] = run_check(check, make_root({"/etc/os-release": "ID=debian\n"}))
        assert r.status is Status.SKIP, check


# ------------------------------------------------------------------ uvm
def test_uvm_live_and_offline(make_root) -> None:
    files, links = gpu_host()
    [r] = run_check("gpu.uvm", make_root(files, links), live=True)
    assert r.status is Status.FAIL
    [r] = run_check("gpu.uvm", make_root(files, links, dirs=("/sys/module/nvidia_uvm",)),
                    live=True)
    assert r.status is Status.PASS
    d = "/lib/modules/6.1.0-18-amd64/updates/dkms"
    [r] = run_check("gpu.uvm", make_root({f"{d}/nvidia.ko": make_ko("535.161.08")}))
    assert r.status is Status.FAIL and r.aspect is Aspect.PERSISTED
    [r] = run_check("gpu.uvm", make_root({f"{d}/nvidia.ko": make_ko("535.161.08"),
                                          f"{d}/nvidia-uvm.ko": b"x"}))
    assert r.status is Status.PASS


# ------------------------------------------------------------------ fabric manager
DPKG = ("Package: nvidia-fabricmanager-535\nStatus: install ok installed\n"
        "Version: {v}\nArchitecture: amd64\n\n")


def nvswitch_host(fm: str | None, enabled: bool = True):
    files, links = gpu_host()
    pci(files, links, "0000:00:01.0", 0x8086, 0x060400, "16.0 GT/s PCIe", 4)
    pci(files, links, "0000:00:01.0/0000:01:00.0", 0x10DE, 0x068000, "16.0 GT/s PCIe", 2)
    if fm:
        files["/var/lib/dpkg/status"] = DPKG.format(v=fm)
        files["/lib/systemd/system/nvidia-fabricmanager.service"] = "[Service]\nExecStart=/x\n"
        if enabled:
            links["/etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service"] = \
                "/lib/systemd/system/nvidia-fabricmanager.service"
    return files, links


@pytest.mark.parametrize(("fm", "enabled", "status"), [
    ("535.161.08-1", True, Status.PASS),
    ("535.161.07-1", True, Status.FAIL),
    ("535.161.08-1", False, Status.FAIL),
    (None, True, Status.FAIL),
])
def test_fabricmanager(make_root, fm, enabled, status) -> None:
    [r] = run_check("gpu.fabricmanager", make_root(*nvswitch_host(fm, enabled)), live=True)
    assert r.status is status, r.message


def test_fabricmanager_skips_without_nvswitch(make_root) -> None:
    files, links = gpu_host()
    pci(files, links, "0000:00:01.0", 0x10DE, 0x030200, "16.0 GT/s PCIe", 16)
    [r] = run_check("gpu.fabricmanager", make_root(files, links), live=True)
    assert r.status is Status.SKIP


# ------------------------------------------------------------------ peermem
def test_peermem(make_root) -> None:
    files, links = gpu_host()
    dirs = ("/sys/class/infiniband/mlx5_0",)
    [r] = run_check("gpu.peermem", make_root(files, links, dirs), live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME
    dirs2 = (*dirs, "/sys/module/nvidia_peermem")
    [r] = run_check("gpu.peermem", make_root(files, links, dirs2), live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.DRIFT
    files["/etc/modprobe.d/peer.conf"] = "softdep nvidia post: nvidia-peermem\n"
    [r] = run_check("gpu.peermem", make_root(files, links, dirs2), live=True)
    assert r.status is Status.PASS
    [r] = run_check("gpu.peermem", make_root(files, links), live=True)
    assert r.status is Status.SKIP


def test_peermem_mentions_dmabuf_with_open_modules(make_root) -> None:
    files = {"/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX Open Kernel Module for "
             "x86_64  550.54.14  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Feb 22\n",
             "/proc/sys/kernel/osrelease": "6.1.0-18-amd64\n"}
    [r] = run_check("gpu.peermem", make_root(files, dirs=("/sys/class/infiniband/mlx5_0",)),
                    live=True)
    assert r.status is Status.FAIL and "DMA-BUF capable" in r.message
    files["/proc/sys/kernel/osrelease"] = "5.4.0-150-generic\n"
    [r] = run_check("gpu.peermem", make_root(files, dirs=("/sys/class/infiniband/mlx5_0",)),
                    live=True)
    assert "DMA-BUF capable" not in r.message


# ------------------------------------------------------------------ PCIe links
def test_link_width_and_speed_against_upstream_port(make_root) -> None:
    files, links = gpu_host()
    pci(files, links, "0000:00:01.0", 0x8086, 0x060400, "16.0 GT/s PCIe", 16)
    # a Gen5 HCA in a Gen4 slot at Gen4 x16: as good as the slot allows
    pci(files, links, "0000:00:01.0/0000:01:00.0", 0x15B3, 0x020700, "32.0 GT/s PCIe", 16,
        cur_speed="16.0 GT/s PCIe")
    pci(files, links, "0000:00:02.0", 0x8086, 0x060400, "32.0 GT/s PCIe", 16)
    pci(files, links, "0000:00:02.0/0000:02:00.0", 0x15B3, 0x020700, "32.0 GT/s PCIe", 16,
        cur_speed="8.0 GT/s PCIe")
    pci(files, links, "0000:00:03.0", 0x8086, 0x060400, "32.0 GT/s PCIe", 16)
    pci(files, links, "0000:00:03.0/0000:03:00.0", 0x10DE, 0x030200, "32.0 GT/s PCIe", 16,
        cur_speed="2.5 GT/s PCIe")
    pci(files, links, "0000:00:04.0", 0x8086, 0x060400, "32.0 GT/s PCIe", 16)
    pci(files, links, "0000:00:04.0/0000:04:00.0", 0x10DE, 0x030200, "32.0 GT/s PCIe", 16,
        cur_width=8)
    got = {r.subject: r for r in run_check("pci.link", make_root(files, links), live=True)}
    assert got["HCA 0000:01:00.0"].status is Status.PASS
    assert got["HCA 0000:02:00.0"].status is Status.FAIL
    assert got["GPU 0000:03:00.0"].status is Status.PASS
    assert "idle GPU" in got["GPU 0000:03:00.0"].message
    assert got["GPU 0000:04:00.0"].status is Status.FAIL
    assert got["GPU 0000:04:00.0"].expected == "x16 at 32 GT/s"
    strict = run_check("pci.link", make_root(files, links), {"gpu_speed_strict": True},
                       live=True)
    assert {r.subject: r.status for r in strict}["GPU 0000:03:00.0"] is Status.FAIL


def test_link_is_live_only(make_root) -> None:
    [r] = run_check("pci.link", make_root({}))
    assert r.status is Status.SKIP


# ------------------------------------------------------------------ IOMMU
def test_iommu_live(make_root) -> None:
    files, links = gpu_host()
    bdf = pci(files, links, "0000:00:01.0", 0x10DE, 0x030200, "32.0 GT/s PCIe", 16)
    links[f"{DEV}/0000:00:01.0/iommu_group"] = "../../../kernel/iommu_groups/7"
    files["/sys/kernel/iommu_groups/7/type"] = "DMA-FQ\n"
    dirs = ("/sys/class/iommu/dmar0",)
    [r] = run_check("iommu.passthrough", make_root(files, links, dirs), live=True)
    assert r.subject == f"GPU {bdf}" and r.status is Status.FAIL
    files["/sys/kernel/iommu_groups/7/type"] = "identity\n"
    [r] = run_check("iommu.passthrough", make_root(files, links, dirs), live=True)
    assert r.status is Status.PASS
    [r] = run_check("iommu.passthrough", make_root(files, links), live=True)
    assert r.status is Status.PASS and "no IOMMU" in r.message


def test_iommu_offline_from_cmdline(make_root) -> None:
    ko = {"/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko": make_ko("535.161.08")}
    [r] = run_check("iommu.passthrough", make_root(
        {**ko, "/etc/default/grub": 'GRUB_CMDLINE_LINUX="quiet iommu=pt"\n'}))
    assert r.status is Status.PASS
    [r] = run_check("iommu.passthrough", make_root(
        {**ko, "/etc/default/grub": 'GRUB_CMDLINE_LINUX="quiet"\n'}))
    assert r.status is Status.FAIL and r.remediation is not None


@pytest.mark.parametrize(("cmdline", "config", "ok"), [
    ("quiet", "CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y", True),    # the build default decides
    ("quiet", "# CONFIG_IOMMU_DEFAULT_PASSTHROUGH is not set\nCONFIG_IOMMU_DEFAULT_DMA_LAZY=y",
     False),
    ("iommu=pt iommu=nopt", "", False),                      # the last word wins
    ("iommu=nopt iommu.passthrough=1", "", True),
    ("iommu.passthrough=0", "CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y", False),
    ("iommu.passthrough=on", "", True),                      # kstrtobool
    ("iommu.passthrough=maybe", "CONFIG_IOMMU_DEFAULT_DMA_STRICT=y", False),  # ignored
    ("iommu=soft,pt", "", True),                             # comma-separated options
    ("intel_iommu=on,sm_on", "", False),
    ("amd_iommu=off", "CONFIG_IOMMU_DEFAULT_DMA_STRICT=y", True),   # no IOMMU: no translation
])
def test_iommu_offline_as_the_kernel_reads_it(make_root, cmdline: str, config: str,
                                              ok: bool) -> None:
    files = {**KO, "/etc/default/grub": f'GRUB_CMDLINE_LINUX="{cmdline}"\n'}
    if config:
        files["/boot/config-6.1.0-18-amd64"] = f"CONFIG_IOMMU=y\n{config}\n"
    [r] = run_check("iommu.passthrough", make_root(files))
    assert r.status is (Status.PASS if ok else Status.FAIL), r.message
    if "CONFIG_IOMMU_DEFAULT" in config and cmdline == "quiet":
        [_, e] = r.evidence  # the command line, then the config line that decided
        assert (e.kind, e.path, e.line) == ("file", "/boot/config-6.1.0-18-amd64",
                                            config.count("\n") + 2)


# ------------------------------------------------------------------ ACS
def config(acs: int | None) -> bytes:
    cfg = bytearray(4096)
    nxt = 0x148 if acs is not None else 0
    cfg[0x100:0x104] = struct.pack("<I", 0x0001 | (1 << 16) | (nxt << 20))
    if acs is not None:
        cfg[0x148:0x14C] = struct.pack("<I", 0x000D | (1 << 16))
        cfg[0x14E:0x150] = struct.pack("<H", acs)
    return bytes(cfg)


def test_acs_control_parser() -> None:
    assert gr.acs_control(config(0x1D)) == 0x1D
    assert gr.acs_control(config(None)) is None
    with pytest.raises(Exception, match="extended"):
        gr.acs_control(bytes(64))
    loop = bytearray(4096)
    loop[0x100:0x104] = struct.pack("<I", 0x0001 | (0x100 << 20))  # points at itself
    assert gr.acs_control(bytes(loop)) is None


def test_acs_redirect_fails_unreadable_is_error(make_root) -> None:
    files, links = gpu_host()
    for i, acs in ((1, 0x1D), (2, 0x00)):
        pci(files, links, f"0000:00:0{i}.0", 0x8086, 0x060400, "16.0 GT/s PCIe", 16)
        files[f"{DEV}/0000:00:0{i}.0/config"] = config(acs)
        pci(files, links, f"0000:00:0{i}.0/0000:0{i}:00.0", 0x10DE, 0x030000,
            "16.0 GT/s PCIe", 16)
    got = {r.subject: r.status for r in run_check("pci.acs", make_root(files, links),
                                                  live=True)}
    assert got == {"GPU 0000:01:00.0": Status.FAIL, "GPU 0000:02:00.0": Status.PASS}
    files[f"{DEV}/0000:00:02.0/config"] = bytes(64)  # what a non-root reader gets
    got = {r.subject: r.status for r in run_check("pci.acs", make_root(files, links),
                                                  live=True)}
    assert got["GPU 0000:02:00.0"] is Status.ERROR


# ------------------------------------------------------------------ RDMA ports, MTU
def port(files: dict, dev: str, n: int, state: str, rate: str, layer: str = "InfiniBand"):
    b = f"/sys/class/infiniband/{dev}/ports/{n}"
    files.update({f"{b}/state": state + "\n", f"{b}/rate": rate + "\n",
                  f"{b}/link_layer": layer + "\n"})


def test_ports(make_root) -> None:
    files: dict = {}
    port(files, "mlx5_0", 1, "4: ACTIVE", "400 Gb/sec (4X NDR)")
    port(files, "mlx5_1", 1, "4: ACTIVE", "200 Gb/sec (4X HDR)")
    port(files, "mlx5_2", 1, "1: DOWN", "10 Gb/sec (4X SDR)")
    got = {r.subject: r.status for r in run_check("rdma.ports", make_root(files), live=True)}
    assert got == {"mlx5_0/1": Status.PASS, "mlx5_1/1": Status.FAIL, "mlx5_2/1": Status.FAIL}
    got = {r.subject: r.status for r in run_check("rdma.ports", make_root(files),
                                                  {"min_rate_gbps": 200}, live=True)}
    assert got["mlx5_1/1"] is Status.PASS


def test_roce_mtu(make_root) -> None:
    files: dict = {"/sys/class/net/ens1f0np0/mtu": "1500\n", "/sys/class/net/eth9/mtu": "9000\n"}
    port(files, "mlx5_0", 1, "4: ACTIVE", "100 Gb/sec (4X EDR)", "Ethernet")
    files["/sys/devices/pci0000:00/0000:00:01.0/net/ens1f0np0/mtu"] = "1500\n"
    links = {"/sys/class/infiniband/mlx5_0/device": "../../../devices/pci0000:00/0000:00:01.0"}
    got = {r.subject: r for r in run_check("network.fabric_mtu", make_root(files, links),
                                           {"interfaces": ["eth*"]}, live=True)}
    assert got["ens1f0np0"].status is Status.FAIL and "1024-byte IB MTU" in \
        got["ens1f0np0"].message
    assert got["eth9"].status is Status.PASS


# ------------------------------------------------------------------ IRQ layout
def test_irq_pinned_or_spread(make_root) -> None:
    files, links = gpu_host()
    pci(files, links, "0000:00:01.0", 0x10DE, 0x030200, "16.0 GT/s PCIe", 16)
    files[f"{DEV}/0000:00:01.0/msi_irqs/90"] = "msix\n"
    files["/sys/devices/system/cpu/online"] = "0-7\n"
    files["/proc/irq/90/smp_affinity_list"] = "0-7\n"
    [r] = run_check("irq.balance", make_root(files, links), live=True)
    assert r.status is Status.FAIL
    files["/proc/irq/90/smp_affinity_list"] = "4-7\n"
    [r] = run_check("irq.balance", make_root(files, links), live=True)
    assert r.status is Status.PASS
    files["/proc/irq/90/smp_affinity_list"] = "0-7\n"
    files["/proc/321/comm"] = "irqbalance\n"
    [r] = run_check("irq.balance", make_root(files, links), live=True)
    assert r.status is Status.PASS


def test_irq_offline_failure_names_the_unit_that_decided(make_root) -> None:
    """Offline, irqbalance not enabled: the unit file installed but not enabled is the
    evidence; not installed, a default names where the unit was looked for."""
    init = {"/usr/lib/systemd/systemd": "", "/etc/os-release": "ID=debian\n"}
    unit = "/usr/lib/systemd/system/irqbalance.service"
    root = make_root({**init, unit: "[Service]\nExecStart=/usr/sbin/irqbalance\n"
                      "[Install]\nWantedBy=multi-user.target\n"})
    [r] = run_check("irq.balance", root, live=False)
    assert r.status is Status.FAIL
    assert [(e.kind, e.path) for e in r.evidence] == [("file", unit)]
    [r] = run_check("irq.balance", make_root(init), live=False)
    assert r.status is Status.FAIL
    [e] = r.evidence
    assert e.kind == "default" and "irqbalance.service" in e.source and \
        "usr/lib/systemd/system" in e.source and e.value == "not installed"


# ------------------------------------------------------------------ nvidia-smi -q -x
SMI = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log><driver_version>535.161.08</driver_version>
<gpu id="00000000:18:00.0"><product_name>NVIDIA H100 80GB HBM3</product_name>
<clocks_event_reasons>
 <clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>
 <clocks_event_reason_applications_clocks_setting>Not Active
 </clocks_event_reason_applications_clocks_setting>
 <clocks_event_reason_sw_power_cap>Not Active</clocks_event_reason_sw_power_cap>
</clocks_event_reasons>
<ecc_mode><current_ecc>Enabled</current_ecc><pending_ecc>Enabled</pending_ecc></ecc_mode>
<retired_pages><pending_blacklist>N/A</pending_blacklist><pending_retirement>N/A</pending_retirement></retired_pages>
<remapped_rows><remapped_row_corr>0</remapped_row_corr><remapped_row_unc>0</remapped_row_unc>
<remapped_row_pending>No</remapped_row_pending><remapped_row_failure>No</remapped_row_failure></remapped_rows>
<gpu_power_readings><current_power_limit>700.00 W</current_power_limit>
<default_power_limit>700.00 W</default_power_limit></gpu_power_readings>
</gpu>
<gpu id="00000000:2A:00.0"><product_name>Tesla V100-SXM2-32GB</product_name>
<clocks_throttle_reasons>
 <clocks_throttle_reason_sw_thermal_slowdown>Active</clocks_throttle_reason_sw_thermal_slowdown>
</clocks_throttle_reasons>
<ecc_mode><current_ecc>Disabled</current_ecc><pending_ecc>Enabled</pending_ecc></ecc_mode>
<retired_pages><pending_blacklist>Yes</pending_blacklist><pending_retirement>No</pending_retirement></retired_pages>
<power_readings><current_power_limit>250.00 W</current_power_limit>
<default_power_limit>300.00 W</default_power_limit></power_readings>
</gpu></nvidia_smi_log>
"""


def test_nvsmi_parser_reads_both_reason_spellings() -> None:
    a, b = nvsmi.parse(SMI)
    assert a.bus_id == "00000000:18:00.0" and dict(a.reasons)["gpu_idle"] is True
    assert dict(b.reasons) == {"sw_thermal_slowdown": True}
    assert b.power_limit_w == 250.0 and b.default_power_limit_w == 300.0


def test_nvsmi_parser_refuses_entities_and_bad_xml() -> None:
    with pytest.raises(Exception, match="entities"):
        nvsmi.parse('<!DOCTYPE x [<!ENTITY a "aaaa">]><nvidia_smi_log/>')
    with pytest.raises(Exception, match="well-formed"):
        nvsmi.parse("<nvidia_smi_log><gpu>")
    with pytest.raises(Exception, match="root element"):
        nvsmi.parse("<html/>")


class _SmiHost(Host):
    def __init__(self, root: str, out: str, rc: int = 0) -> None:
        super().__init__(root, live=True, allow_commands=True)
        self.out, self.rc, self.calls = out, rc, 0

    def run(self, argv, *, timeout=None):  # type: ignore[override]
        self.calls += 1
        return CommandResult(tuple(argv), self.rc, self.out, "")


@pytest.mark.parametrize(("prop", "want"), [
    ("ecc", [Status.PASS, Status.FAIL]),
    ("memory_errors", [Status.PASS, Status.FAIL]),
    ("throttle", [Status.PASS, Status.FAIL]),
])
def test_smi_health(make_root, prop, want) -> None:
    from aiaudit.core.plugins import registry
    from aiaudit.core.ruleset import _with_defaults

    files, links = gpu_host()
    host = _SmiHost(str(make_root(files, links)), SMI)
    spec = registry().checks["gpu.smi_health"]
    ctx = CheckContext(host=host, params=_with_defaults({"property": prop},
                                                        spec.params_schema))
    got = list(spec.run(ctx))
    assert [r.status for r in got] == want
    assert all(r.remediation for r in got if r.status is Status.FAIL)
    list(spec.run(ctx))
    assert host.calls == 1, "nvidia-smi runs once per scan"


def test_smi_never_runs_for_a_scanned_root(make_root) -> None:
    files, links = gpu_host()
    [r] = run_check("gpu.smi_health", make_root(files, links), {"property": "ecc"}, live=True)
    assert r.status is Status.SKIP and "never run from a scanned root" in r.message


def test_smi_failure_is_an_error(make_root) -> None:
    from aiaudit.core.plugins import registry
    from aiaudit.core.ruleset import _with_defaults

    files, links = gpu_host()
    host = _SmiHost(str(make_root(files, links)), "NVIDIA-SMI has failed", rc=9)
    spec = registry().checks["gpu.smi_health"]
    ctx = CheckContext(host=host, params=_with_defaults({"property": "ecc"}, spec.params_schema))
    [r] = list(spec.run(ctx))
    assert r.status is Status.ERROR and "exited 9" in r.message


# ------------------------------------------------------------------ modprobe.d vs kmod
KMOD_CASES = {
    "lib-only": ({"/lib/modprobe.d/nvidia.conf": "blacklist nouveau\n"}, {}, True),
    "etc-overrides-lib": ({"/lib/modprobe.d/nvidia.conf": "blacklist nouveau\n",
                           "/etc/modprobe.d/nvidia.conf": "# emptied by the admin\n"}, {}, False),
    "etc-masks-lib": ({"/lib/modprobe.d/nvidia.conf": "blacklist nouveau\n"},
                      {"/etc/modprobe.d/nvidia.conf": "/dev/null"}, False),
    "not-a-conf-file": ({"/etc/modprobe.d/nvidia.txt": "blacklist nouveau\n"}, {}, False),
    "run-overrides-lib": ({"/lib/modprobe.d/a.conf": "blacklist nouveau\n",
                           "/run/modprobe.d/a.conf": "options foo bar=1\n"}, {}, False),
    "continued-line": ({"/etc/modprobe.d/b.conf": "# x\nblacklist \\\nnouveau\n"}, {}, True),
}


def _kmod_blacklists_nouveau(root) -> bool:
    mounts = ["mount -t tmpfs none /etc", "mkdir -p /etc/modprobe.d",
              f"mount --bind {root}/etc/modprobe.d /etc/modprobe.d",
              "mount -t tmpfs none /run", "mkdir -p /run/modprobe.d",
              f"mount --bind {root}/run/modprobe.d /run/modprobe.d",
              f"mount --bind {root}/lib/modprobe.d /usr/lib/modprobe.d",
              "modprobe -c"]
    res = subprocess.run(["unshare", "-m", "sh", "-ec", " && ".join(mounts)],
                         capture_output=True, text=True, timeout=30, check=False)
    assert res.returncode == 0, res.stderr
    return "blacklist nouveau" in res.stdout.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KMOD_CASES))
def test_modprobe_d_order_matches_kmod(make_root, name: str) -> None:
    """Which modprobe.d files count (first basename wins across /etc, /run, /lib; /dev/null
    masks; only *.conf) as kmod's ``modprobe -c`` shows it, in a private mount namespace."""
    missing = [p for p in ("modprobe", "unshare") if shutil.which(p) is None]
    why = "needs root" if os.geteuid() != 0 else (f"needs {', '.join(missing)}" if missing
                                                  else None)
    if why is None and not os.path.isdir("/usr/lib/modprobe.d"):
        why = "needs /usr/lib/modprobe.d to mount over"
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"{why}: CI must run this test")
        pytest.skip(why)
    files, links, want = KMOD_CASES[name]
    root = make_root(files, links, dirs=("/etc/modprobe.d", "/run/modprobe.d",
                                         "/lib/modprobe.d"))
    ours = any(c.command == "blacklist" and c.args and c.args[0] == "nouveau"
               for c in gr.modprobe_config(Host(str(root))))
    assert ours == _kmod_blacklists_nouveau(root) == want
