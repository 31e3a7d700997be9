"""``fabric.manager``: on an NVSwitch system Fabric Manager is running (live) and its
configuration asks for the expected fabric mode (files, live and offline).

Gathers the NVSwitches on the PCI bus (:mod:`aiaudit.linux.pci.devices`, live), the
``nv-fabricmanager`` process (``/proc/<pid>/comm``), and
``/usr/share/nvidia/nvswitch/fabricmanager.cfg`` (:mod:`aiaudit.linux.gpu.fabricmanager`).
Decides: with NVSwitches and no Fabric Manager process the GPUs stay registered from boot
while new NVLink paths cannot be set up and a GPU reset leaves its GPU out of the fabric:
NVLink jobs hang while every GPU looks healthy; ``FABRIC_MODE`` other than the rule's
``fabric_mode`` (default 0, bare metal) makes Fabric Manager wait for a hypervisor's
partition requests.  Installation, version and enablement are ``gpu.fabricmanager``'s.
Offline the NVSwitches are unknown: the configuration is judged where Fabric Manager's
configuration is installed.
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
from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.linux.gpu import fabricmanager as fm

START = Remediation("Start Fabric Manager and find why it stopped "
                    "(/var/log/fabricmanager.log); the GPUs may need a reset or the node "
                    "a reboot to rejoin the fabric.", (
                        Snippet.command("systemctl restart nvidia-fabricmanager",
                                        "start Fabric Manager"),))


def _config(host: Host, want: int) -> Result:
    """The configuration's FABRIC_MODE against ``want``."""
    try:
        cfg = fm.config(host)
    except HostError as exc:
        return Result(Status.ERROR, fm.CONFIG, f"cannot read it: {exc}")
    if cfg is None:
        return Result(Status.FAIL, fm.CONFIG, "Fabric Manager has no configuration file: "
                      "the nvidia-fabricmanager package is incomplete", expected="present",
                      actual="missing", aspect=Aspect.PERSISTED,
                      evidence=(Evidence.file(fm.CONFIG),),
                      remediation=Remediation(
                          "Reinstall the nvidia-fabricmanager package of the driver's version "
                          f"(it ships {fm.CONFIG}), then restart nvidia-fabricmanager."))
    got = cfg.get("FABRIC_MODE")
    digits = got is not None and got.value.isascii() and got.value.isdigit()
    mode = int(got.value) if got and digits else (0 if got is None else -1)
    ev = (Evidence.file(fm.CONFIG, got.line if got else None,
                        f"FABRIC_MODE={got.value}" if got else "FABRIC_MODE unset (0)"),)
    what = fm.FABRIC_MODES.get(mode, f"invalid ({got.value if got else ''})")
    if mode != want:
        return Result(Status.FAIL, fm.CONFIG, f"FABRIC_MODE is {what}, expected "
                      f"{fm.FABRIC_MODES.get(want, want)}", expected=str(want),
                      actual=got.value if got else "0", aspect=Aspect.PERSISTED, evidence=ev,
                      remediation=Remediation(f"Set FABRIC_MODE={want} in {fm.CONFIG} and "
                                              "restart nvidia-fabricmanager."))
    return Result(Status.PASS, fm.CONFIG, f"FABRIC_MODE is {what}", expected=str(want),
                  actual=str(mode), aspect=Aspect.PERSISTED, evidence=ev)


def run(ctx: CheckContext) -> Iterator[Result]:
    """Running (live, with NVSwitches) and configured for the expected mode."""
    from aiaudit.linux.pci.devices import PCI, pci_devices

    host, want = ctx.host, int(ctx.params["fabric_mode"])
    if not host.live:
        if not host.exists(fm.CONFIG):
            yield Result(Status.SKIP, "nvidia-fabricmanager", "NVSwitches are seen only live "
                         f"and Fabric Manager is not installed in this root (no {fm.CONFIG})")
            return
        yield _config(host, want)
        return
    switches = [d for d in pci_devices(host) if d.is_nvswitch]
    if not switches:
        yield Result(Status.SKIP, "nvswitch", "no NVSwitch on the PCI bus (no NVIDIA device "
                     "of class 0x0680): Fabric Manager is not needed",
                     evidence=(Evidence.runtime(PCI),))
        return
    sev = tuple(Evidence.runtime(f"{PCI}/{d.bdf}/class", f"0x{d.klass:06x}")
                for d in switches[:4])
    pid = fm.running_pid(host)
    if pid is None:
        yield Result(Status.FAIL, "nv-fabricmanager", f"{len(switches)} NVSwitch(es) but "
                     "Fabric Manager is not running: NVLink jobs hang while the GPUs look "
                     "healthy", expected="running", actual="no nv-fabricmanager process",
                     aspect=Aspect.RUNTIME, evidence=(Evidence.runtime("/proc/*/comm"), *sev),
                     remediation=START)
    else:
        yield Result(Status.PASS, "nv-fabricmanager", f"Fabric Manager runs (pid {pid}) for "
                     f"{len(switches)} NVSwitch(es)", expected="running", actual=f"pid {pid}",
                     aspect=Aspect.RUNTIME,
                     evidence=(Evidence.runtime(f"/proc/{pid}/comm", fm.COMM), *sev))
    if ctx.params["config"]:
        yield _config(host, want)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``fabric.manager``."""
    return [CheckSpec(
        id="fabric.manager", title="Fabric Manager runs on NVSwitch systems, in the "
        "expected fabric mode", run=run,
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "config": {"type": "boolean", "default": True,
                       "description": "live: also judge the configuration file (a prolog "
                                      "judges runtime state only: false)"},
            "fabric_mode": {"enum": [0, 1, 2], "default": 0,
                            "description": "FABRIC_MODE of fabricmanager.cfg: 0 bare metal, "
                                           "1 shared NVSwitch, 2 vGPU"}}},
        description="Live with NVSwitches (NVIDIA PCI class 0x0680): an nv-fabricmanager "
                    "process (comm nv-fabricmanage); live and offline: "
                    "/usr/share/nvidia/nvswitch/fabricmanager.cfg FABRIC_MODE = "
                    "fabric_mode (unset: 0).")]
