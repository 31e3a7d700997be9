"""``irq.balance``: device interrupts are balanced by irqbalance or pinned to CPU subsets.

Gathers whether ``irqbalance.service`` is installed and enabled
(:mod:`aiaudit.linux.systemd.units`) and, live, whether an ``irqbalance`` process runs
(``/proc/<pid>/comm``), the online CPUs (``/sys/devices/system/cpu/online``,
Documentation/ABI/testing/sysfs-devices-system-cpu), the MSI interrupts of each GPU and
HCA (``/sys/bus/pci/devices/<BDF>/msi_irqs/``, sysfs-bus-pci) and their
``/proc/irq/<n>/smp_affinity_list`` (Documentation/core-api/irq/irq-affinity.rst).
Decides: irqbalance enabled (offline) or running (live) passes; otherwise, live, an
interrupt allowed on every online CPU fails (it lands on CPU 0's node by default).  A
container image is skipped (its host balances its interrupts); a root whose init is not
systemd is judged by irqbalance's runlevel links, and gets no unit as its fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.pci.devices import PCI, pci_devices
from aiaudit.linux.sysfs import parse_cpulist

if TYPE_CHECKING:
    from aiaudit.linux.systemd.units import Enablement

IRQBALANCE = "irqbalance.service"
EXPECTED = "irqbalance or pinned"


SYSV_LINKS = "/etc/rc[2345].d/S*irqbalance"
"""irqbalance's init script started in a multi-user runlevel (update-rc.d's links), for
a root whose init is not systemd."""


def _fix(host: Host) -> Remediation:
    """Enable irqbalance (install it first where it is not installed), or pin; a root
    that does not boot systemd gets no unit (it would be a file nothing reads)."""
    from aiaudit.linux.rootkind import image_followup, units_run
    from aiaudit.linux.systemd.units import load_unit

    if not units_run(host):
        return Remediation("Enable irqbalance's init script (update-rc.d irqbalance enable, "
                           "or the root's init system's equivalent), or pin each HCA/GPU "
                           "interrupt to CPUs of its NUMA node at boot.",
                           manual="this root's init is not systemd: enable irqbalance with "
                                  "the init system it has")

    try:
        installed = load_unit(host, IRQBALANCE).exists
    except (HostError, ParseError):
        installed = False
    from aiaudit.linux.packages.install import install_and_enable

    how, manual = ((Snippet.enable(IRQBALANCE, "spread interrupts at every boot"),), "") \
        if installed else install_and_enable(host, "irqbalance", "irqbalance",
                                            "install and enable it")
    return Remediation("Enable irqbalance, or pin each HCA/GPU interrupt to CPUs of its NUMA "
                       "node (e.g. Mellanox set_irq_affinity_bynode.sh) at boot.", how,
                       manual=manual, followup=image_followup(host))


def _offline(host: Host, en: Enablement, eev: tuple[Evidence, ...],
             fix: Remediation) -> Result:
    """Offline: irqbalance enabled at boot."""
    from aiaudit.linux.rootkind import NOT_BOOTED, boots, units_run
    from aiaudit.linux.systemd.units import unit_evidence

    if not boots(host):  # a bare configuration tree without an init
        return Result(Status.SKIP, "irq layout", NOT_BOOTED)
    if not units_run(host):  # its units and .wants links are read by nothing
        links = host.glob(SYSV_LINKS)
        if links:
            return Result(Status.PASS, "irq layout", f"irqbalance's init script starts at "
                          f"boot ({links[0].lstrip('/')})", expected=EXPECTED,
                          actual="irqbalance enabled", aspect=Aspect.PERSISTED,
                          evidence=(Evidence.file(links[0]),))
        return Result(Status.FAIL, "irq layout", "this root's init is not systemd and no "
                      f"runlevel starts irqbalance ({SYSV_LINKS.lstrip('/')}); a pinned IRQ "
                      "layout is recognised only in a live scan", aspect=Aspect.PERSISTED,
                      expected=EXPECTED, actual="neither",
                      evidence=(Evidence.default(f"irqbalance at boot: no "
                                                 f"{SYSV_LINKS.lstrip('/')}", "not started"),),
                      remediation=fix)
    if en.enabled:
        return Result(Status.PASS, "irq layout", f"{IRQBALANCE}: {en.reason}",
                      expected=EXPECTED, actual="irqbalance enabled",
                      aspect=Aspect.PERSISTED, evidence=eev)
    return Result(Status.FAIL, "irq layout", f"{IRQBALANCE}: {en.reason}; a pinned "
                  "IRQ layout is recognised only in a live scan", aspect=Aspect.PERSISTED,
                  expected=EXPECTED, actual="neither",
                  evidence=(unit_evidence(host, IRQBALANCE, en),), remediation=fix)


def _running(host: Host, comm: str) -> bool:
    """A process named ``comm`` runs (``/proc/<pid>/comm``)."""
    for pid in host.listdir("/proc")[:65536]:
        if pid.isdigit() and (host.try_read_text(f"/proc/{pid}/comm") or "").strip() == comm:
            return True
    return False


def _device_irqs(host: Host) -> list[str]:
    """The MSI interrupts of every GPU and HCA, each once, in numeric order."""
    irqs: list[str] = []
    for d in pci_devices(host):
        if d.kind in ("GPU", "HCA"):
            irqs += host.listdir(f"{PCI}/{d.bdf}/msi_irqs")
    return sorted(set(irqs), key=lambda s: s.zfill(8))


def _unpinned(host: Host, irqs: list[str], online: set[int]) -> list[str]:
    """The interrupts allowed on every online CPU (on a host with more than one)."""
    spread = []
    for irq in irqs:
        try:
            cpus = set(parse_cpulist(host.read_text(f"/proc/irq/{irq}/smp_affinity_list")))
        except (HostError, ParseError):
            continue
        if len(online) > 1 and cpus >= online:
            spread.append(irq)
    return spread


def _layout(host: Host, fix: Remediation) -> Result:
    """Live, irqbalance not running: are the device interrupts pinned?"""
    try:
        online = set(parse_cpulist(host.read_text("/sys/devices/system/cpu/online")))
    except (HostError, ParseError) as exc:
        return Result(Status.ERROR, "irq layout", f"online CPUs unknown: {exc}",
                      evidence=Evidence.unreadable(exc))
    irqs = _device_irqs(host)
    if not irqs:
        return Result(Status.SKIP, "irq layout", "irqbalance is not running and no GPU/HCA "
                      "has MSI interrupts to judge")
    spread = _unpinned(host, irqs, online)
    if spread:
        return Result(Status.FAIL, "irq layout", f"irqbalance is not running and "
                      f"{len(spread)} of {len(irqs)} GPU/HCA interrupts may run on any CPU "
                      f"(IRQ {', '.join(spread[:8])}): they land on CPU 0's node by default",
                      expected=EXPECTED, actual="unpinned", aspect=Aspect.RUNTIME,
                      evidence=(Evidence.runtime(f"/proc/irq/{spread[0]}/smp_affinity_list"),),
                      remediation=fix)
    return Result(Status.PASS, "irq layout", f"irqbalance is not running, and all "
                  f"{len(irqs)} GPU/HCA interrupts are pinned to CPU subsets",
                  expected=EXPECTED, actual="pinned", aspect=Aspect.RUNTIME)


def run(ctx: CheckContext) -> Iterator[Result]:
    """irqbalance runs, or the device interrupts are pinned to CPU subsets."""
    from aiaudit.linux.rootkind import container_skip
    from aiaudit.linux.systemd.units import is_enabled

    host = ctx.host
    skip = container_skip(host, "irq layout", "interrupt balancing")
    if skip is not None:
        yield skip
        return
    en = is_enabled(host, IRQBALANCE)
    eev = (Evidence.file(en.evidence),) if en.evidence else ()
    fix = _fix(host)
    if not host.live:
        yield _offline(host, en, eev, fix)
    elif _running(host, "irqbalance"):
        yield Result(Status.PASS, "irq layout", f"irqbalance is running ({en.reason})",
                     expected=EXPECTED, actual="irqbalance running",
                     aspect=Aspect.RUNTIME, evidence=eev)
    else:
        yield _layout(host, fix)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``irq.balance``."""
    return [CheckSpec(
        id="irq.balance", title="Device interrupts are balanced or pinned",
        run=run, params_schema={"type": "object", "additionalProperties": False},
        description="irqbalance enabled (offline) or running (live); otherwise, "
                    "live, every GPU/HCA MSI IRQ's smp_affinity_list is a proper "
                    "subset of the online CPUs.")]
