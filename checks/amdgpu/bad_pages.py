"""``amdgpu.bad_pages``: no Instinct GPU has retired more VRAM pages than the threshold, or
pages still pending or impossible to retire (live).

Gathers each Instinct GPU's retired-page table (``/sys/bus/pci/devices/<bdf>/ras/
gpu_vram_bad_pages``, kept in the board's EEPROM across reboots: :mod:`aiaudit.linux.amdgpu.
ras`) and the threshold: the rule's ``max_bad_pages``, else the driver's, from ``amd-smi
static --ras`` where installed (real ``/`` only, with a timeout, run once per scan:
:mod:`aiaudit.linux.amdgpu.smi`), else derived as amdgpu does from its
``bad_page_threshold`` parameter (``/sys/module/amdgpu/parameters/bad_page_threshold``;
the default gives 128 pages on MI200/MI300) and the VRAM size.  Decides per GPU: more
reserved pages than the threshold (amd-smi's "bad page threshold exceeded"; the driver then
flags the GPU for replacement, an RMA CPER), a page pending reservation (``P``: retired at
the next reset) or one the driver could not reserve (``F``) fail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Mapping

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
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.amdgpu import presence

if TYPE_CHECKING:  # imported once the AMD rules apply (prolog start-up cost)
    from aiaudit.linux.amdgpu.devices import AmdGpu

PARAM = "/sys/module/amdgpu/parameters/bad_page_threshold"
FIX = {"over": Remediation("The GPU has retired more memory than AMD allows: drain the node "
                           "and have the GPU replaced (RMA); `amd-smi bad-pages` lists the "
                           "pages."),
       "pending": Remediation("Drain the node and reset the GPU (`amd-smi reset -G -g N`) or "
                              "reboot, so the pending pages are reserved; check `dmesg` for "
                              "the uncorrectable errors that retired them.")}


def _threshold(host: Host, g: AmdGpu, p: Mapping[str, object],
               smi: dict[str, tuple[int | None, bool | None]]) -> tuple[int | None, str,
                                                                         Evidence]:
    """(threshold or ``None`` when retirement is off, how it was decided, evidence)."""
    from aiaudit.linux.amdgpu import ras as rs

    if p["max_bad_pages"] is not None:
        n = int(str(p["max_bad_pages"]))
        return n, "the rule's max_bad_pages", Evidence.default("max_bad_pages", str(n))
    if g.bdf in smi and smi[g.bdf][0] is not None:
        n = smi[g.bdf][0] or 0
        return n, "amd-smi's bad page threshold", Evidence.command(
            "amd-smi static --ras --bus --json", f"bad_page_threshold {n}")
    raw = host.try_read_text(PARAM) if host.live else None
    try:
        param = int(raw.strip()) if raw and raw.strip() else None
    except ValueError:
        param = None
    vram = host.try_read_text(f"{g.sysfs}/mem_info_vram_total")
    size = int(vram.strip()) if vram and vram.strip().isdigit() else None
    n2, how = rs.driver_threshold(param, size)
    ev = (Evidence.runtime(PARAM, raw.strip()) if raw else
          Evidence.default("amdgpu bad_page_threshold", "-1 (the default; parameter not "
                           "readable)"))
    return n2, how, ev


def _judge(host: Host, g: AmdGpu, p: Mapping[str, object],
           smi: dict[str, tuple[int | None, bool | None]]) -> Result:
    from aiaudit.linux.amdgpu import ras as rs

    path = f"{g.sysfs}/ras/gpu_vram_bad_pages"
    try:
        pages = rs.parse_bad_pages(host.read_text(path, cap=8 * 1024 * 1024))
    except HostError as exc:
        if host.is_dir(f"{g.sysfs}/ras"):
            why = ("absent: bad page retirement is off (bad_page_threshold=0)"
                   if not host.exists(path) else str(exc))
            return Result(Status.SKIP if not host.exists(path) else Status.ERROR, g.label,
                          f"no retired-page table: {why}", evidence=(
                              Evidence.runtime(path, why),))
        return Result(Status.SKIP, g.label, "no RAS interface (ras/ absent)",
                      evidence=(Evidence.runtime(f"{g.sysfs}/ras", "absent"),))
    except ParseError as exc:
        return Result(Status.ERROR, g.label, f"{path}: {exc}",
                      evidence=(Evidence.runtime(path, str(exc)),))
    limit, how, tev = _threshold(host, g, p, smi)
    shown = "; ".join(pages.first) or "empty"
    ev = (Evidence.runtime(path, f"{pages.reserved} R, {pages.pending} P, {pages.failed} F"
                           f" ({shown})"), tev)
    data = {"reserved": pages.reserved, "pending": pages.pending, "failed": pages.failed,
            "threshold": limit}
    exceeded = smi.get(g.bdf, (None, None))[1]
    over = limit is not None and pages.reserved > limit
    if over or exceeded:
        return Result(Status.FAIL, g.label, f"{pages.reserved} retired VRAM pages, more than "
                      f"the threshold {limit} ({how}): the GPU is due for replacement",
                      expected=f"<= {limit}", actual=str(pages.reserved),
                      aspect=Aspect.RUNTIME, evidence=ev, data=data, remediation=FIX["over"])
    if pages.pending or pages.failed:
        return Result(Status.FAIL, g.label, f"{pages.pending} page(s) pending retirement and "
                      f"{pages.failed} that could not be reserved: memory with uncorrectable "
                      "errors is still in use until the GPU is reset",
                      expected="no P or F pages", actual=f"{pages.pending} P, {pages.failed} F",
                      aspect=Aspect.RUNTIME, evidence=ev, data=data,
                      remediation=FIX["pending"])
    return Result(Status.PASS, g.label, f"{pages.reserved} retired VRAM page(s), threshold "
                  f"{limit} ({how})", expected=f"<= {limit}", actual=str(pages.reserved),
                  aspect=Aspect.RUNTIME, evidence=ev, data=data)


def _smi(host: Host, p: Mapping[str, object]) -> dict[str, tuple[int | None, bool | None]]:
    """BDF -> (threshold, exceeded) from amd-smi, where it runs (``{}`` otherwise)."""
    if not p["use_amd_smi"] or p["max_bad_pages"] is not None or not host.allow_commands:
        return {}
    from aiaudit.linux.amdgpu import smi

    got = smi.query(host, float(str(p["smi_timeout"])))
    if isinstance(got, str):
        return {}
    return {g.bdf: (g.threshold, g.exceeded) for g in got if g.bdf}


def run(ctx: CheckContext) -> Iterator[Result]:
    """Each Instinct GPU's retired pages are within the threshold and none is pending."""
    host, p = ctx.host, ctx.params
    blocked = presence.gate(host, p, "bad pages") or presence.datacenter_only(
        host, "retired VRAM pages exist on Instinct GPUs only", "bad pages")
    if blocked:
        yield blocked
        return
    if not host.live:
        yield Result(Status.SKIP, "bad pages", "the retired-page table is read from the "
                     "running driver (sysfs); an offline scan cannot see it")
        return
    smi = _smi(host, p)
    for g in presence.node(host).datacenter:
        yield _judge(host, g, p, smi)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``amdgpu.bad_pages``."""
    return [CheckSpec(
        id="amdgpu.bad_pages", title="AMD GPUs' retired VRAM pages are within the threshold",
        run=run, modes=("live",),
        params_schema=presence.schema({
            "max_bad_pages": {"type": ["integer", "null"], "minimum": 0, "default": None,
                              "description": "most retired pages per GPU (null: the "
                                             "driver's threshold)"},
            "use_amd_smi": {"type": "boolean", "default": True,
                            "description": "ask amd-smi for the driver's threshold (real / "
                                           "live only)"},
            "smi_timeout": {"type": "number", "minimum": 1, "maximum": 120, "default": 15,
                            "description": "seconds amd-smi may take"}}),
        description="Live: ras/gpu_vram_bad_pages of each Instinct GPU (R/P/F pages) "
                    "against max_bad_pages or the driver's threshold (amd-smi static "
                    "--ras, else amdgpu's bad_page_threshold parameter).")]
