"""``gpu.persistence``: GPU persistence mode is on now and survives a reboot.

Gathers, at boot, ``nvidia-persistenced.service`` (installed, masked, enabled, its
``ExecStart`` options: :mod:`aiaudit.linux.systemd.units`) and, only when scanning the
real ``/`` live, each GPU's ``persistence_mode`` from ``nvidia-smi -q -x`` (the one run
per scan every ``gpu.*`` rule shares, :func:`aiaudit.linux.gpu.nvsmi.query`, with a
timeout; never from a scanned root).  Decides: the daemon
enables persistence mode for every GPU unless run with ``--no-persistence-mode``
(nvidia-persistenced(1)); live, each GPU's mode must be ``Enabled`` and, with ``persist``,
the daemon configured so it stays so (``nvidia-smi -pm 1`` alone reverts at reboot).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

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
from aiaudit.linux.gpu import driver, nvidia

PERSISTENCED = "nvidia-persistenced.service"


def _persistenced(host: Host) -> tuple[bool | None, str, tuple[Evidence, ...]]:
    """(configured at boot?, why, evidence) for nvidia-persistenced."""
    from aiaudit.linux.systemd.units import is_enabled, load_unit, unit_evidence

    try:
        unit = load_unit(host, PERSISTENCED)
    except (HostError, ParseError) as exc:
        return None, f"{PERSISTENCED} cannot be read: {exc}", (
            Evidence.default(f"unit {PERSISTENCED}", f"cannot be read: {exc}"),)
    if not unit.exists:
        # the mask, or (a default) where the unit file was looked for
        return False, (f"{PERSISTENCED} is masked" if unit.masked else
                       f"{PERSISTENCED} is not installed"), (unit_evidence(host, PERSISTENCED),)
    en = is_enabled(host, PERSISTENCED)
    ev = [Evidence.file(en.evidence)] if en.evidence else []
    for a in unit.get_all("Service", "ExecStart"):
        if "--no-persistence-mode" in a.value:
            return False, (f"{PERSISTENCED} runs with --no-persistence-mode "
                           f"({a.file}:{a.line})"), (*ev, Evidence.file(a.file, a.line, a.value))
    if not en.enabled:
        return False, f"{PERSISTENCED}: {en.reason}", (*ev, Evidence.file(unit.path or ""))
    return True, f"{PERSISTENCED} is enabled ({en.reason})", tuple(ev)


APPLY_BOOT = Remediation(
    "Restart nvidia-persistenced: it turns persistence mode on for every GPU when it starts, "
    "as at boot (a stopped daemon starts; a running one re-applies it); the boot "
    "configuration is already right.",
    (Snippet.command(f"systemctl restart {PERSISTENCED}",
                     "persistence mode on for every GPU, as at boot"),))
"""The fix for drift: the daemon is enabled and configured right, a GPU's mode is off."""


def _fix(host: Host, installed: bool) -> Remediation:
    """Enable the daemon; where it is not installed, install its package first."""
    if installed:
        return Remediation("Enable nvidia-persistenced (it turns persistence mode on for all "
                           "GPUs by default).", (
                               Snippet.enable(PERSISTENCED, "start it at every boot"),
                               Snippet.command("systemctl start nvidia-persistenced",
                                               "start it now")))
    # not installed: the unit only exists once the package is in, so enabling is part of
    # the same command sequence (a unit that does not exist cannot be enabled offline)
    snippets = [Snippet.command("systemctl enable --now nvidia-persistenced",
                                "start the daemon now and at every boot")]
    d = driver.distro(host)
    drv = driver.driver_version(host)
    branch = str(nvidia.branch(drv.version)) if drv else "<branch>"
    pkg = {"ubuntu": f"nvidia-compute-utils-{branch}-server", "debian": "nvidia-persistenced",
           "rhel": "nvidia-persistenced", "suse": "nvidia-persistenced"}.get(
               d, "nvidia-persistenced")
    from aiaudit.linux.packages.install import install_command

    snippets.insert(0, Snippet.command(install_command(host, pkg), f"install {pkg}"))
    return Remediation(f"Install {pkg} and enable nvidia-persistenced.", tuple(snippets))


def _at_boot_only(host: Host, boot: bool | None, why: str, bev: tuple[Evidence, ...],
                  installed: bool) -> Result:
    """Without nvidia-smi (a scanned root, or offline): the daemon's configuration."""
    note = "" if not host.live else " (nvidia-smi is run only when scanning the real / live)"
    if boot is None:
        return Result(Status.ERROR, "nvidia-persistenced", why + note, evidence=bev)
    if boot:
        return Result(Status.PASS, "nvidia-persistenced", why + note, expected="enabled",
                      actual="enabled", aspect=Aspect.PERSISTED, evidence=bev)
    return Result(Status.FAIL, "nvidia-persistenced", f"{why}: persistence mode will be "
                  f"off after boot{note}", expected="enabled", actual="disabled",
                  aspect=Aspect.PERSISTED, evidence=bev, remediation=_fix(host, installed))


def _query(host: Host, timeout: float) -> list[nvidia.GpuPersistence] | Result:
    """Each GPU's persistence mode (``nvidia-smi -q -x``, shared), or an error result;
    ``[N/A]`` where the platform has none (Windows, vGPU guests)."""
    from aiaudit.linux.gpu import nvsmi  # nvidia-smi's reader: only past the GPU gate

    got = nvsmi.query(host, timeout)
    if isinstance(got, str):
        return Result(Status.ERROR, "nvidia-smi", f"persistence mode cannot be read: {got}",
                      evidence=(Evidence.command(" ".join(nvsmi.SMI_ARGV)),))
    if not got.gpus:
        return Result(Status.ERROR, "nvidia-smi", "nvidia-smi -q -x listed no GPU",
                      evidence=(Evidence.command(" ".join(nvsmi.SMI_ARGV)),))
    return [nvidia.GpuPersistence(str(i), g.bus_id, g.persistence or "[N/A]")
            for i, g in enumerate(got.gpus)]


def _gpu(host: Host, p: Mapping[str, Any], row: nvidia.GpuPersistence,
         boot: bool | None, why: str, bev: tuple[Evidence, ...], installed: bool) -> Result:
    """One GPU's persistence mode now, and whether it lasts."""
    from aiaudit.linux.gpu.nvsmi import SMI_ARGV

    subject = f"GPU {row.index} ({row.bus_id})"
    ev = (Evidence.command(" ".join(SMI_ARGV), f"persistence_mode {row.mode}"), *bev)
    if row.mode not in ("Enabled", "Disabled"):
        return Result(Status.SKIP, subject, f"persistence mode is {row.mode} on this GPU "
                      "(not supported on this platform)", evidence=ev)
    if row.mode == "Disabled" and boot:
        return Result(Status.FAIL, subject, f"persistence mode is off now, but the boot "
                      f"configuration ({why}) is right: the daemon is not running or was "
                      "told to turn it off", expected="Enabled", actual="Disabled",
                      aspect=Aspect.DRIFT, evidence=ev, remediation=APPLY_BOOT)
    if row.mode == "Disabled":
        return Result(Status.FAIL, subject, f"persistence mode is off now; at boot: {why}",
                      expected="Enabled", actual="Disabled", aspect=Aspect.RUNTIME,
                      evidence=ev, remediation=_fix(host, installed))
    if p["persist"] and boot is False:
        return Result(Status.FAIL, subject, f"persistence mode is on now, but {why}: it "
                      "reverts at reboot (set with `nvidia-smi -pm 1`?)", expected="Enabled",
                      actual="Enabled", aspect=Aspect.DRIFT, evidence=ev,
                      remediation=_fix(host, installed))
    return Result(Status.PASS, subject, f"persistence mode is on; at boot: {why}",
                  expected="Enabled", actual="Enabled", aspect=Aspect.RUNTIME, evidence=ev)


def run(ctx: CheckContext) -> Iterator[Result]:
    """Persistence mode on: live from nvidia-smi, at boot from nvidia-persistenced."""
    host, p = ctx.host, ctx.params
    blocked = driver.gate(host, p, "persistence mode")
    if blocked:
        yield blocked
        return
    boot, why, bev = _persistenced(host)
    installed = "not installed" not in why
    if not host.allow_commands:
        yield _at_boot_only(host, boot, why, bev, installed)
        return
    rows = _query(host, float(p["timeout"]))
    if isinstance(rows, Result):
        yield rows
        return
    for row in rows:
        yield _gpu(host, p, row, boot, why, bev, installed)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.persistence``."""
    return [CheckSpec(
        id="gpu.persistence", title="GPU persistence mode is on and survives reboot",
        run=run,
        params_schema=driver.schema({
            "timeout": {"type": "number", "minimum": 1, "maximum": 60, "default": 10,
                        "description": "seconds nvidia-smi may take"},
            "persist": {"type": "boolean", "default": True,
                        "description": "also require nvidia-persistenced enabled at boot"}}),
        description=(
            "Live (real /): persistence_mode of each GPU in nvidia-smi -q -x (run once "
            "per scan with a timeout; a hung or missing nvidia-smi is an error result). "
            "At boot: "
            "nvidia-persistenced.service enabled and not run with --no-persistence-mode."))]
