"""Whether the AMD rules apply, and what deciding it costs on a node without AMD GPUs: the
kernel's one-file PCI list (``/proc/bus/pci/devices``) answers "no AMD function" with one
read, so a Slurm prolog on an NVIDIA or CPU node walks no sysfs PCI tree and reads no
package database for the AMD family.

The ``/proc/bus/pci/devices`` lines here are hand-made in the kernel's format
(drivers/pci/proc.c ``show_device``: ``%02x%02x\\t%04x%04x\\t%x`` then the resources); the
first list is this project's build VM's own (virtio devices), captured 2026-12-02."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.host import Host
from aiaudit.linux.amdgpu import presence
from tests.checks.amdgpu.trees import amd_node

PAD = "\t" + "\t".join(["               0"] * 3)
VM_LIST = "".join(f"{bus}\t{ids}\t0{PAD}\n" for bus, ids in (
    ("0000", "80860d57"), ("0008", "1af41045"), ("0010", "1af41042"), ("0018", "1af41041")))
"""This build VM's list (resources shortened): an Intel host bridge and virtio devices."""
AMD_LINE = f"0500\t100274a1\t0{PAD}\tamdgpu\n"


def _many_functions(n: int) -> tuple[dict[str, str], dict[str, str]]:
    """``n`` Intel bridges on the sysfs PCI bus (a large node without AMD GPUs)."""
    files, links = {}, {}
    for i in range(n):
        bdf = f"0000:{i // 32:02x}:{i % 32:02x}.0"
        base = f"/sys/devices/pci0000:00/{bdf}"
        files.update({f"{base}/vendor": "0x8086\n", f"{base}/class": "0x060400\n",
                      f"{base}/device": "0x1234\n"})
        links[f"/sys/bus/pci/devices/{bdf}"] = f"../../../devices/pci0000:00/{bdf}"
    return files, links


def test_no_amd_function_in_the_kernel_list_reads_nothing_else(make_root) -> None:
    files, links = _many_functions(512)
    files["/proc/bus/pci/devices"] = VM_LIST
    files["/var/lib/dpkg/status"] = "Package: rocm-core\nStatus: install ok installed\n"
    host = Host(str(make_root(files, links)), live=True)
    n = presence.node(host)
    assert not n.applies and n.gpus == () and n.rocm is None and n.dkms is None
    assert host.reads == 1  # the list itself: no sysfs walk, no package database
    r = presence.gate(host, {})
    assert r is not None and r.status.value == "skip" and "no AMD GPU" in r.message
    assert r.evidence == ()
    r = presence.gate(host, {"require_gpu": True})
    assert r is not None and r.status.value == "fail"
    assert [e.source for e in r.evidence] == ["/proc/bus/pci/devices"]


def test_without_the_kernel_list_the_sysfs_walk_decides(make_root) -> None:
    files, links = _many_functions(64)
    host = Host(str(make_root(files, links)), live=True)
    n = presence.node(host)
    assert not n.applies and n.gpus == () and n.bus == "/sys/bus/pci/devices"
    assert host.reads >= 128  # vendor and class of every function


def test_an_amd_line_makes_the_walk_find_the_gpus(make_root) -> None:
    files, links = amd_node(2)
    files["/proc/bus/pci/devices"] = VM_LIST + AMD_LINE
    n = presence.node(Host(str(make_root(files, links)), live=True))
    assert n.applies and len(n.datacenter) == 2 and n.rocm is None  # Instinct: no package read


def test_a_list_that_lies_costs_only_the_shortcut(make_root) -> None:
    """The list is the kernel's and matches sysfs; a root whose list says "no AMD" while its
    sysfs has one is not a real host, and the list is believed (documented behaviour)."""
    files, links = amd_node(1)
    files["/proc/bus/pci/devices"] = VM_LIST
    assert not presence.node(Host(str(make_root(files, links)), live=True)).applies
    files["/proc/bus/pci/devices"] = "not the kernel's format\n"
    assert presence.node(Host(str(make_root(files, links)), live=True)).applies
    files["/proc/bus/pci/devices"] = ""
    assert presence.node(Host(str(make_root(files, links)), live=True)).applies


def test_a_radeon_reads_rocm_and_dkms(make_root) -> None:
    files, links = amd_node(1, klass=0x030000, device=0x687F, rocm=None)
    files["/proc/bus/pci/devices"] = VM_LIST + AMD_LINE
    n = presence.node(Host(str(make_root(files, links)), live=True))
    assert n.gpus and not n.datacenter and n.rocm is False and n.dkms is False
    assert not n.applies
    files["/opt/rocm-6.4.4/.info/version"] = "6.4.4-129\n"
    n = presence.node(Host(str(make_root(files, links)), live=True))
    assert n.applies and n.rocm is True and n.dkms is None


def test_offline_rocm_files_answer_before_the_package_database(make_root) -> None:
    host = Host(str(make_root({"/opt/rocm-6.2.0/.info/version": "6.2.0-66\n",
                               "/var/lib/dpkg/status": "Package: x\n"})))
    n = presence.node(host)
    assert n.applies and n.rocm is True and n.dkms is None
    host = Host(str(make_root({"/var/lib/dpkg/status": (
        "Package: amdgpu-dkms\nStatus: install ok installed\nVersion: 1:6.12.12.60404-1\n")})))
    n = presence.node(host)
    assert n.applies and n.rocm is False and n.dkms is True


@given(st.text(max_size=400))
def test_the_list_reader_never_raises(text: str) -> None:
    class _H:
        def read_text(self, path: str, cap: int = 0) -> str:
            return text

    got = presence.amd_on_bus(_H())  # type: ignore[arg-type]
    assert got in (True, False, None)
    if "\t1002" in text:
        assert got is True


PROLOG_PROBE = """
import sys
from aiaudit.api import CheckContext
from aiaudit.core import plugins
from aiaudit.core.host import Host
from aiaudit.core.ruleset import _with_defaults

before = set(sys.modules)
checks = plugins.registry().checks
host = Host(sys.argv[1], live=True)
for rule in ("stack_compat", "count", "device_access", "ras_errors", "bad_pages"):
    spec = checks["amdgpu." + rule]
    ctx = CheckContext(host=host, params=_with_defaults({}, spec.params_schema),
                       rule_id="T", user="root", settings={})
    assert [r.status.value for r in spec.run(ctx)] == ["skip"]
print("\\n".join(sorted(set(sys.modules) - before)))
"""


def test_the_prolog_rules_import_no_amd_knowledge_on_a_node_without_amd(make_root) -> None:
    """The five AMD rules of slurm-preflight, on a live node whose PCI list has no AMD
    function, import their check modules and :mod:`presence` only (each module ~0.3-1 M
    instructions of every prolog scan)."""
    import subprocess
    import sys

    root = make_root({"/proc/bus/pci/devices": VM_LIST, "/etc/os-release": "ID=debian\n"})
    out = subprocess.run([sys.executable, "-c", PROLOG_PROBE, str(root)], capture_output=True,
                         text=True, check=True).stdout.split()
    amd = {m for m in out if "amdgpu" in m}
    assert amd == {"aiaudit.linux.amdgpu", "aiaudit.linux.amdgpu.presence",
                   "aiaudit.checks.amdgpu", *(f"aiaudit.checks.amdgpu.{n}" for n in (
                       "stack_compat", "count", "device_access", "ras_errors", "bad_pages"))}
    assert not {m for m in out if m.startswith(("aiaudit.linux.pci", "aiaudit.linux.packages",
                                                 "aiaudit.linux.udev"))}
