"""``amdgpu.ras_errors``: no Instinct GPU logged uncorrectable errors since the driver loaded
(live).

Gathers each Instinct GPU's RAS counters (``/sys/bus/pci/devices/<bdf>/ras/<block>_err_count``
or, with ACA, ``ras/aca_<block>``: :mod:`aiaudit.linux.amdgpu.ras`).  Decides per GPU: the
uncorrectable (``ue``) counts of all blocks, plus the deferred (``de``) ones unless
``count_deferred`` is off (on MI300 an uncorrectable memory error is reported deferred),
above ``max_uncorrectable`` fail; correctable ones are reported, never judged.  A counter
that says "Query currently inaccessible" (a GPU reset under way) is an error; a GPU without
a ``ras`` directory is skipped (RAS off: ``amdgpu.ras_enable=0``, or not supported).  The
default 0 is AMD's Device Metrics Exporter's health threshold.
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
    from aiaudit.linux.amdgpu import ras as rs
    from aiaudit.linux.amdgpu.devices import AmdGpu

FIX = Remediation("Drain the node and look at `dmesg` (amdgpu RAS / CPER records) and "
                  "`amd-smi metric --ecc --ecc-blocks`; after an uncorrectable error the "
                  "GPU is reset by the driver, and a GPU that keeps logging them is replaced.")


def _counts(host: Host, g: AmdGpu, files: dict[str, str]
            ) -> tuple[dict[str, rs.Counts], list[str], list[Evidence]]:
    """(block -> counts, blocks whose query is inaccessible, evidence of unreadable files);
    ``files`` gets each block's file path."""
    from aiaudit.linux.amdgpu import ras as rs

    base = f"{g.sysfs}/ras"
    got: dict[str, rs.Counts] = {}
    busy: list[str] = []
    bad: list[Evidence] = []
    for name in host.listdir(base):
        block = rs.block_of(name)
        if block is None:
            continue
        path = f"{base}/{name}"
        try:
            c = rs.parse_counts(host.read_text(path, cap=4096))
        except (HostError, ParseError) as exc:
            bad.append(Evidence.runtime(path, str(exc)))
            continue
        if c is None:
            busy.append(block)
        elif block in got:  # both a legacy and an aca_ file: keep the larger counts
            o = got[block]
            got[block] = rs.Counts(max(o.ue, c.ue), max(o.ce, c.ce), max(o.de, c.de))
        else:
            got[block] = c
            files[block] = path
    return got, busy, bad


def _judge(host: Host, g: AmdGpu, p: Mapping[str, object]) -> Result:
    from aiaudit.linux.amdgpu import ras as rs

    base = f"{g.sysfs}/ras"
    if not host.is_dir(base):
        return Result(Status.SKIP, g.label, "no RAS interface (ras/ absent: RAS is off, "
                      "amdgpu.ras_enable=0, or not supported)", evidence=(Evidence.runtime(
                          base, "absent"),))
    files: dict[str, str] = {}
    got, busy, bad = _counts(host, g, files)
    if bad:
        return Result(Status.ERROR, g.label, "RAS counters cannot be read", evidence=tuple(bad))
    if busy and not got:
        return Result(Status.ERROR, g.label, "the RAS counters say 'Query currently "
                      "inaccessible': a GPU reset is under way", evidence=(
                          Evidence.runtime(base, rs.INACCESSIBLE),))
    deferred = bool(p["count_deferred"])
    bad_blocks = {b: c.ue + (c.de if deferred else 0) for b, c in got.items()
                  if c.ue + (c.de if deferred else 0)}
    total = sum(bad_blocks.values())
    ce = sum(c.ce for c in got.values())
    limit = int(str(p["max_uncorrectable"]))
    ev = tuple(Evidence.runtime(files[b], f"ue: {got[b].ue} ce: {got[b].ce} de: {got[b].de}")
               for b in sorted(bad_blocks)) or (Evidence.runtime(base, ", ".join(
                   f"{b} ue {c.ue}" for b, c in sorted(got.items())) or "no counters"),)
    data = {"uncorrectable": total, "correctable": ce, "blocks": {
        b: {"ue": c.ue, "ce": c.ce, "de": c.de} for b, c in sorted(got.items())}}
    note = f" (still querying: {', '.join(busy)})" if busy else ""
    what = "uncorrectable" + (" or deferred" if deferred else "")
    if total > limit:
        where = ", ".join(f"{b} {n}" for b, n in sorted(bad_blocks.items()))
        return Result(Status.FAIL, g.label, f"{total} {what} error(s) since the driver loaded "
                      f"({where}){note}", expected=f"<= {limit}", actual=str(total),
                      aspect=Aspect.RUNTIME, evidence=ev, data=data, remediation=FIX)
    return Result(Status.PASS, g.label, f"{total} {what} error(s) since the driver loaded "
                  f"({ce} correctable){note}", expected=f"<= {limit}", actual=str(total),
                  aspect=Aspect.RUNTIME, evidence=ev, data=data)


def run(ctx: CheckContext) -> Iterator[Result]:
    """Each Instinct GPU's uncorrectable error count is within the limit."""
    host, p = ctx.host, ctx.params
    blocked = presence.gate(host, p, "ras") or presence.datacenter_only(
        host, "RAS error counters exist on Instinct GPUs only", "ras")
    if blocked:
        yield blocked
        return
    if not host.live:
        yield Result(Status.SKIP, "ras", "RAS error counters are live state (since the driver "
                     "loaded); an offline scan cannot see them")
        return
    for g in presence.node(host).datacenter:
        yield _judge(host, g, p)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``amdgpu.ras_errors``."""
    return [CheckSpec(
        id="amdgpu.ras_errors", title="AMD GPUs logged no uncorrectable errors",
        run=run, modes=("live",),
        params_schema=presence.schema({
            "max_uncorrectable": {"type": "integer", "minimum": 0, "default": 0,
                                  "description": "most uncorrectable errors per GPU since "
                                                 "the driver loaded"},
            "count_deferred": {"type": "boolean", "default": True,
                               "description": "count deferred (poisoned, contained) errors "
                                              "as uncorrectable"}}),
        description="Live: ue (and de) of /sys/bus/pci/devices/<gpu>/ras/*_err_count and "
                    "ras/aca_* against max_uncorrectable.")]
