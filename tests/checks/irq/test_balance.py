"""``irq.balance``: irqbalance enabled or running, or device interrupts pinned."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.readiness_trees import DEV, gpu_host, pci
from tests.helpers import run_check


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
