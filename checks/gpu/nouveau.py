"""``gpu.nouveau``: the nouveau driver cannot bind the NVIDIA GPUs.

Gathers modprobe.d as kmod reads it (:func:`aiaudit.linux.kmod.config.modprobe_config`:
kmod's directories, first basename wins, ``/dev/null`` masks), the kernel command line the
host boots with (:mod:`aiaudit.linux.boot.cmdline`) and, live, ``/sys/module/nouveau``
(exists while the module is loaded: Documentation/ABI/testing/sysfs-module).  Decides:
nouveau is kept from loading by ``blacklist nouveau``, an ``install nouveau`` to
``/bin/false`` or ``/bin/true``, ``options nouveau modeset=0`` (modprobe.d(5)), or on the
command line by ``modprobe.blacklist=`` (kmod), ``rd.driver.blacklist=`` (dracut),
``module_blacklist=`` (kernel/module) or ``nouveau.modeset=0``; otherwise the kernel
loads it for an NVIDIA GPU through its PCI modalias.  Live, a loaded nouveau fails now and
an unloaded one that nothing disables fails as drift.
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
from aiaudit.linux.boot import cmdline as boot
from aiaudit.linux.gpu import driver
from aiaudit.linux.kmod import config as kmod
from aiaudit.linux.kmod import modprobe

NOUVEAU_CMDLINE = ("modprobe.blacklist", "rd.driver.blacklist", "module_blacklist")
"""Kernel parameters whose comma list keeps a module from loading (kmod, dracut, the
kernel's own module loader)."""

NOUVEAU_FIX = Remediation(
    "Blacklist nouveau so the NVIDIA driver can bind the GPUs, rebuild the initramfs (it "
    "carries its own copy of modprobe.d) and reboot.",
    (Snippet.file("/etc/modprobe.d/blacklist-nouveau.conf",
                  "blacklist nouveau\noptions nouveau modeset=0\n",
                  "keep nouveau from loading"),
     Snippet.command("update-initramfs -u  # or: dracut --force",
                     "rebuild the initramfs with the blacklist")))

Decision = tuple[bool, str, tuple[Evidence, ...]]
"""(nouveau disabled at boot?, how, evidence)."""


def _by_modprobe(commands: list[modprobe.Command]) -> Decision | None:
    """The first modprobe.d command that disables nouveau, if any."""
    for c in commands:
        if not c.args or modprobe.norm(c.args[0]) != "nouveau":
            continue
        ev = (Evidence.file(c.file, c.line, f"{c.command} {' '.join(c.args)}"),)
        if c.command == "blacklist":
            return True, f"blacklisted ({c.file}:{c.line})", ev
        if c.command == "install" and len(c.args) > 1 and c.args[1].endswith(
                ("/false", "/true")):
            return True, f"install is {c.args[1]} ({c.file}:{c.line})", ev
        if c.command == "options" and any(a.replace("-", "_") == "modeset=0"
                                          for a in c.args[1:]):
            return True, f"options nouveau modeset=0 ({c.file}:{c.line})", ev
    return None


def _by_cmdline(cl: boot.CmdlineSource) -> Decision | None:
    """The kernel command line word that disables nouveau, if any."""
    for name in NOUVEAU_CMDLINE:
        p = cl.get(name)
        if p and p.value and "nouveau" in [modprobe.norm(v) for v in p.value.split(",")]:
            return True, f"{p} on the kernel command line ({cl.where()})", (cl.evidence(name),)
    p = cl.get("nouveau.modeset")
    if p and p.value == "0":
        return True, f"nouveau.modeset=0 on the kernel command line ({cl.where()})", (
            cl.evidence("nouveau.modeset"),)
    return None


def _nothing_disables(cl: boot.CmdlineSource | None) -> Decision:
    """Nothing keeps nouveau away: the kernel default, with what was looked at."""
    where = f"on {cl.where()}" if cl is not None else f"({boot.not_found()})"
    dirs = ", ".join(f"{d.lstrip('/')}/*.conf" for d in kmod.MODPROBE_DIRS)
    return False, "no modprobe.d 'blacklist nouveau' and no modprobe.blacklist=nouveau", (
        Evidence.default(f"nouveau at boot: no blacklist, install or options modeset=0 for "
                         f"nouveau in {dirs}; no nouveau in "
                         f"{' or '.join(n + '=' for n in NOUVEAU_CMDLINE)} and no "
                         f"nouveau.modeset=0 {where}",
                         "kernel default: nouveau loads for an NVIDIA GPU (its PCI modalias)"),)


def _booted_cmdline(host: Host) -> boot.CmdlineSource | None:
    try:
        return boot.load(host).booted
    except (HostError, ParseError):
        return None


def _disabled(host: Host) -> Decision:
    """Is nouveau kept from binding at boot?  modprobe.d first, then the command line."""
    found = _by_modprobe(kmod.modprobe_config(host))
    if found:
        return found
    cl = _booted_cmdline(host)
    found = _by_cmdline(cl) if cl is not None else None
    return found or _nothing_disables(cl)


def _live(ok: bool, how: str, ev: tuple[Evidence, ...], loaded: bool) -> Result:
    """Live: loaded now fails; not loaded but not disabled is drift."""
    rev = (Evidence.runtime("/sys/module/nouveau", "loaded" if loaded else "absent"), *ev)
    if loaded:
        return Result(Status.FAIL, "nouveau", f"the nouveau module is loaded; at boot: {how}",
                      expected="not loaded", actual="loaded", aspect=Aspect.RUNTIME,
                      evidence=rev, remediation=NOUVEAU_FIX)
    if not ok:
        return Result(Status.FAIL, "nouveau", f"nouveau is not loaded now, but {how}: it "
                      "can bind the GPUs at the next boot", expected="blacklisted",
                      actual="not blacklisted", aspect=Aspect.DRIFT, evidence=rev,
                      remediation=NOUVEAU_FIX)
    return Result(Status.PASS, "nouveau", f"nouveau is not loaded and is {how}",
                  expected="not loaded", actual="not loaded", aspect=Aspect.RUNTIME,
                  evidence=rev)


def run(ctx: CheckContext) -> Iterator[Result]:
    """nouveau is blacklisted (persisted) and not loaded (runtime)."""
    host = ctx.host
    blocked = driver.gate(host, ctx.params, "nouveau")
    if blocked:
        yield blocked
        return
    ok, how, ev = _disabled(host)
    if host.live:
        yield _live(ok, how, ev, kmod.is_loaded(host, "nouveau"))
    elif ok:
        yield Result(Status.PASS, "nouveau", f"nouveau is {how}", expected="blacklisted",
                     actual="blacklisted", aspect=Aspect.PERSISTED, evidence=ev)
    else:
        yield Result(Status.FAIL, "nouveau", f"{how}: nouveau binds the GPUs at boot before "
                     "the NVIDIA driver", expected="blacklisted", actual="not blacklisted",
                     aspect=Aspect.PERSISTED, evidence=ev, remediation=NOUVEAU_FIX)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.nouveau``."""
    return [CheckSpec(
        id="gpu.nouveau", title="nouveau cannot bind the NVIDIA GPUs",
        run=run, params_schema=driver.schema({}),
        description="Live: /sys/module/nouveau absent. At boot: modprobe.d "
                    "(kmod's directories, first basename wins) has 'blacklist "
                    "nouveau', an install to /bin/false or 'options nouveau "
                    "modeset=0', or the kernel command line has "
                    "modprobe.blacklist=nouveau / nouveau.modeset=0.")]
