"""``gpu.fabricmanager``: NVSwitch systems run an enabled Fabric Manager of exactly the
driver's version.

Gathers, live, the NVSwitches on the PCI bus (NVIDIA functions of class 0x0680, "other
bridge", as ``lspci`` lists them on HGX/DGX baseboards: :mod:`aiaudit.linux.pci.devices`),
the ``nvidia-fabricmanager`` package (dpkg status or the rpm database:
:func:`aiaudit.linux.gpu.stack.nvidia_packages`), the driver version and whether
``nvidia-fabricmanager.service`` is enabled (:mod:`aiaudit.linux.systemd.units`).
Decides as the Fabric Manager User Guide says: without it CUDA on an NVSwitch system
reports "system not yet initialized", and it refuses to start unless its version equals
the driver's; offline the NVSwitches are unknown, so the rule applies where the package is
installed.
"""

from __future__ import annotations

from typing import Iterator

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
from aiaudit.linux.gpu import driver
from aiaudit.linux.gpu import stack as gs
from aiaudit.linux.packages.dpkg import upstream_version
from aiaudit.linux.packages.installed import DPKG_STATUS, dpkg_installed
from aiaudit.linux.pci.devices import PCI, PciDev, pci_devices

FABRICMANAGER = "nvidia-fabricmanager.service"


def _fm_package(host: Host) -> tuple[str, str] | None:
    """(name, version) of the installed Fabric Manager package (not its -devel/-dev)."""
    for name, ver in sorted(gs.nvidia_packages(host).items()):
        if name.startswith(("nvidia-fabricmanager", "nvidia-fabric-manager")) and \
                "devel" not in name and "-dev" not in name:
            return name, ver
    return None


def _install(drv: gs.Version | None) -> Remediation:
    """Install the Fabric Manager of the driver's branch and version, and enable it."""
    branch = drv.version.split(".")[0] if drv else "<branch>"
    return Remediation(
        f"Install nvidia-fabricmanager-{branch} of exactly the driver's version and enable it "
        "(without it CUDA on an NVSwitch system reports 'system not yet initialized').", (
            Snippet.command(f"apt-get install nvidia-fabricmanager-{branch}"
                            + (f"={drv.version}-1" if drv else ""),
                            "install Fabric Manager matching the driver"),
            Snippet.command("systemctl enable --now nvidia-fabricmanager",
                            "start it now and at every boot")))


def _package_evidence(host: Host, name: str, ver: str) -> Evidence:
    """The package database that records ``name``."""
    try:
        in_dpkg = name in dpkg_installed(host, (name,))
    except (HostError, ParseError):
        in_dpkg = False
    return Evidence.file(DPKG_STATUS if in_dpkg else gs.RPMDB_SQLITE, None, f"{name} {ver}")


def _judge(host: Host, switches: list[PciDev], pkg: tuple[str, str] | None) -> Result:
    """Installed, of the driver's version, enabled."""
    from aiaudit.linux.systemd.units import is_enabled

    drv = driver.driver_version(host)
    where = (f"{len(switches)} NVSwitch(es) at {', '.join(d.bdf for d in switches[:8])}"
             if switches else "nvidia-fabricmanager is installed")
    sev = tuple(Evidence.runtime(f"{PCI}/{d.bdf}/class", f"0x{d.klass:06x}")
                for d in switches[:8])
    if pkg is None:
        return Result(Status.FAIL, "nvidia-fabricmanager", f"{where} but nvidia-fabricmanager "
                      "is not installed: the GPUs cannot use NVLink and CUDA initialisation "
                      "fails", expected="installed", actual="absent", evidence=sev,
                      remediation=_install(drv))
    name, ver = pkg
    pev = _package_evidence(host, name, ver)
    fm = upstream_version(ver)
    if drv is None:
        return Result(Status.ERROR, "nvidia-fabricmanager", f"{name} {fm} is installed but "
                      "the driver version cannot be determined", evidence=(pev, *sev))
    if fm != drv.version:
        return Result(Status.FAIL, "nvidia-fabricmanager", f"{name} is {fm} but the "
                      f"{drv.what} is {drv.version}: Fabric Manager refuses to start on a "
                      "version mismatch", expected=drv.version, actual=fm,
                      evidence=(pev, drv.evidence, *sev), remediation=_install(drv),
                      data={"fabricmanager": fm, "driver": drv.version})
    en = is_enabled(host, FABRICMANAGER)
    eev = (Evidence.file(en.evidence),) if en.evidence else ()
    if not en.enabled:
        return Result(Status.FAIL, "nvidia-fabricmanager", f"{name} {fm} matches the driver "
                      f"but {en.reason}: after a reboot the NVSwitch fabric is not set up",
                      expected="enabled", actual="disabled", aspect=Aspect.PERSISTED,
                      evidence=(pev, drv.evidence, *eev, *sev), remediation=Remediation(
                          "Enable nvidia-fabricmanager.", (
                              Snippet.enable(FABRICMANAGER, "start it at every boot"),)))
    return Result(Status.PASS, "nvidia-fabricmanager", f"{where}; {name} {fm} matches the "
                  f"driver and {en.reason}", expected=drv.version, actual=fm,
                  aspect=Aspect.PERSISTED, evidence=(pev, drv.evidence, *eev, *sev))


def run(ctx: CheckContext) -> Iterator[Result]:
    """NVSwitch systems run nvidia-fabricmanager of the driver's exact version."""
    host = ctx.host
    switches = [d for d in pci_devices(host) if d.is_nvswitch]
    pkg = _fm_package(host)
    if host.live and not switches:
        yield Result(Status.SKIP, "nvswitch", "no NVSwitch on the PCI bus (no NVIDIA device of "
                     "class 0x0680): Fabric Manager is not needed",
                     evidence=(Evidence.runtime(PCI),))
    elif not host.live and pkg is None:
        yield Result(Status.SKIP, "nvswitch", "NVSwitches are seen only live (PCI bus) and "
                     "nvidia-fabricmanager is not installed in this root")
    else:
        yield _judge(host, switches, pkg)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.fabricmanager``."""
    return [CheckSpec(
        id="gpu.fabricmanager", title="NVSwitch systems run a matching Fabric Manager",
        run=run, params_schema={"type": "object", "additionalProperties": False},
        description="NVSwitches: NVIDIA PCI functions of class 0x0680 (live). Then "
                    "the nvidia-fabricmanager package's upstream version equals the "
                    "driver version and nvidia-fabricmanager.service is enabled.")]
