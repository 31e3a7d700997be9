"""``amdgpu.cmdline``: the kernel command line has what AMD's Instinct tuning guides ask for:
``iommu=pt`` and, on MI300-series nodes, ``pci=realloc=off``.

Gathers the running kernel's command line (``/proc/cmdline``, live) and the one the boot
loader passes at the next boot (:mod:`aiaudit.linux.boot.cmdline`: BLS entries, grub.cfg,
``/etc/kernel/cmdline``, ``/etc/default/grub`` and its drop-ins).  Decides as the kernel
does: the IOMMU part holds with ``iommu=pt`` / ``iommu.passthrough=1``, an IOMMU switched
off on the command line, no active IOMMU live (``/sys/class/iommu`` empty: off in the BIOS,
which AMD's MI200 guide allows) or a kernel built for passthrough by default
(``CONFIG_IOMMU_DEFAULT_PASSTHROUGH``) (:mod:`aiaudit.linux.pci.iommu`); ``pci=realloc=off``
by the ``pci=`` words, the last ``realloc`` one winning (:mod:`aiaudit.linux.pci.realloc`).
Sources: AMD GPU Driver docs, system optimization for MI300X ("GRUB settings":
``pci=realloc=off``, ``iommu=pt``) and MI200 ("IOMMU configuration": ``iommu=pt``).
Live, a command line that is right now but not at the next boot fails as drift.
"""

from __future__ import annotations

from typing import Iterator, Mapping

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Status,
    hookimpl,
)
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.amdgpu import presence
from aiaudit.linux.boot import cmdline as boot
from aiaudit.linux.pci import iommu, realloc

Verdict = tuple[list[str], list[str], list[Evidence]]
"""(what is right, what is missing, evidence) for one command line."""


def _iommu(host: Host, src: boot.CmdlineSource, live: bool) -> tuple[bool, str, Evidence]:
    """Whether DMA of the GPUs bypasses translation with this command line."""
    got = iommu.cmdline_mode(src.params)
    if got is not None:
        mode, prm = got
        return mode != iommu.TRANSLATED, str(prm), src.evidence(prm.name)
    if live and not host.listdir("/sys/class/iommu"):
        return True, "no IOMMU active", Evidence.runtime("/sys/class/iommu", "")
    from aiaudit.linux.kernel.config import kernel_config

    kc = kernel_config(host)
    found = iommu.default_domain(kc[1]) if kc else None
    if kc and found and found[0]:
        return True, "the kernel defaults to passthrough", Evidence.file(kc[0], found[1],
                                                                         found[2])
    return False, "no iommu=pt", src.evidence()


def _judge(host: Host, src: boot.CmdlineSource, p: Mapping[str, object], mi300: bool,
           live: bool) -> Verdict:
    ok: list[str] = []
    bad: list[str] = []
    ev: list[Evidence] = []
    if p["iommu_pt"]:
        good, how, e = _iommu(host, src, live)
        (ok if good else bad).append(how if good else "iommu=pt")
        ev.append(e)
    want = p["pci_realloc_off"] == "always" or (p["pci_realloc_off"] == "mi300" and mi300)
    if want:
        got = realloc.realloc(src.params)
        if got is not None and got[0] == "off":
            ok.append(str(got[1]))
            ev.append(src.evidence(got[1].name))
        else:
            bad.append("pci=realloc=off")
            ev.append(src.evidence(got[1].name) if got else src.evidence())
    return ok, bad, ev


def _unique(ev: list[Evidence]) -> tuple[Evidence, ...]:
    return tuple(dict.fromkeys(ev))


def _mi300(host: Host) -> bool | None:
    """Whether an MI300-series GPU (gfx94x, or a processing-accelerator class) is present;
    ``None`` offline (not known)."""
    if not host.live:
        return None
    return any(g.dev.klass == 0x120000 for g in presence.node(host).datacenter)


@record
class _Ctx:
    """What the verdicts of one run share."""

    words: str
    """The parameters asked for (``iommu=pt pci=realloc=off``)."""
    fix: Remediation
    nxt: boot.CmdlineSource | None
    later: Verdict | None
    """The next boot's verdict."""


def _live(c: _Ctx, now: boot.CmdlineSource, verdict: Verdict) -> Result:
    """The running kernel's command line, with the next boot's as drift."""
    ok, bad, ev = verdict
    nxt, later = c.nxt, c.later
    if bad:
        if later is None or nxt is None:
            nb = ""
        elif later[1]:
            nb = f", nor does the next boot ({nxt.where()})"
            ev = ev + later[2]
        else:
            nb = f" (the next boot, {nxt.where()}, has it: reboot)"
        return Result(Status.FAIL, "cmdline", f"the running kernel lacks {', '.join(bad)}{nb}",
                      expected=c.words, actual=now.text[:200], aspect=Aspect.RUNTIME,
                      evidence=_unique(ev), remediation=c.fix)
    if later is not None and nxt is not None and later[1]:
        return Result(Status.FAIL, "cmdline", f"the running kernel has {', '.join(ok)}, but "
                      f"the next boot ({nxt.where()}) lacks {', '.join(later[1])}",
                      expected=c.words, actual=nxt.text[:200], aspect=Aspect.DRIFT,
                      evidence=_unique(ev + later[2]), remediation=c.fix)
    return Result(Status.PASS, "cmdline", f"the running kernel has {', '.join(ok)}",
                  expected=c.words, actual=now.text[:200], aspect=Aspect.RUNTIME,
                  evidence=_unique(ev))


def _offline(c: _Ctx, cfg: boot.BootConfig, note: str) -> Result:
    """The next boot's command line."""
    nxt, later = c.nxt, c.later
    if nxt is None or later is None:
        why = cfg.unknown or boot.not_found()
        return Result(Status.SKIP if cfg.unknown else Status.FAIL, "cmdline",
                      f"the next boot's kernel command line is not known: {why}",
                      evidence=(*cfg.problem_evidence, Evidence.default(
                          "kernel command line", boot.not_found())), remediation=c.fix)
    ok, bad, ev = later
    if bad:
        return Result(Status.FAIL, "cmdline", f"the next boot ({nxt.where()}) lacks "
                      f"{', '.join(bad)}{note}", expected=c.words, actual=nxt.text[:200],
                      aspect=Aspect.PERSISTED, evidence=_unique(ev), remediation=c.fix)
    return Result(Status.PASS, "cmdline", f"the next boot has {', '.join(ok)}{note}",
                  expected=c.words, actual=nxt.text[:200], aspect=Aspect.PERSISTED,
                  evidence=_unique(ev))


def run(ctx: CheckContext) -> Iterator[Result]:
    """The command line AMD's tuning guides ask for."""
    host, p = ctx.host, ctx.params
    blocked = presence.gate(host, p, "cmdline") or presence.datacenter_only(
        host, "AMD's kernel command line is for Instinct nodes", "cmdline")
    if blocked:
        yield blocked
        return
    mi300 = _mi300(host)
    cfg = boot.load(host)
    words = ["iommu=pt"] if p["iommu_pt"] else []
    if p["pci_realloc_off"] == "always" or (p["pci_realloc_off"] == "mi300" and mi300):
        words.append("pci=realloc=off")
    fix = boot.params_remediation(host, cfg, words, lead="AMD's tuning guide: ")
    # the IOMMU off in the BIOS (nothing active live) stays off at the next boot
    later = _judge(host, cfg.booted, p, bool(mi300), host.live) if cfg.booted else None
    c = _Ctx(" ".join(words), fix, cfg.booted, later)
    now = boot.proc_cmdline(host) if host.live else None
    if now is not None:
        yield _live(c, now, _judge(host, now, p, bool(mi300), True))
        return
    note = ("" if mi300 is not None or p["pci_realloc_off"] != "mi300" else
            "; pci=realloc=off (MI300-series only) is not judged offline: the GPU model is "
            "not known")
    yield _offline(c, cfg, note)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``amdgpu.cmdline``."""
    return [CheckSpec(
        id="amdgpu.cmdline", title="The kernel command line has AMD's Instinct settings",
        run=run,
        params_schema=presence.schema({
            "iommu_pt": {"type": "boolean", "default": True,
                         "description": "require iommu=pt (or the IOMMU off)"},
            "pci_realloc_off": {"enum": ["always", "mi300", "never"], "default": "mi300",
                                "description": "require pci=realloc=off: always, only "
                                               "with MI300-series GPUs (live), or never"}}),
        description="Live /proc/cmdline and the next boot's command line (BLS, grub.cfg, "
                    "/etc/default/grub) for iommu=pt and pci=realloc=off, as AMD's MI300X "
                    "and MI200 tuning guides ask.")]
