"""``pci.link``: every GPU, NVSwitch and HCA links at the width and speed both ends support
(live).

Gathers the PCI functions (:mod:`aiaudit.linux.pci.devices`) and, for each and for the
bridge above it, ``current_link_speed``, ``max_link_speed``, ``current_link_width`` and
``max_link_width`` (Documentation/ABI/testing/sysfs-bus-pci; formats in
:mod:`aiaudit.linux.pci.sysfs`).  Decides: the link trains to the lower of the two ends'
maxima; a narrower link (or width 0, the link down) fails, and so does a slower one except
on an idle GPU, which lowers its link speed to save power (unless ``gpu_speed_strict``): the
NVIDIA driver does, and so does amdgpu (its PCIe DPM levels, ``pp_dpm_pcie``).  GPUs are
NVIDIA's and AMD's (:attr:`aiaudit.linux.pci.devices.PciDev.is_gpu`).
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
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.pci import sysfs
from aiaudit.linux.pci.devices import PCI, PciDev, pci_devices

FIX = Remediation("Reseat the device or its riser/cable, check the slot's BIOS "
                  "bifurcation and link-speed settings, and look for AER errors in "
                  "dmesg; a link that trains below its width halves (or worse) "
                  "host-device bandwidth.")


@record
class Link:
    """Width and speed of one PCIe link end."""

    cur_speed: float | None
    max_speed: float | None
    cur_width: int
    max_width: int


def _link(host: Host, path: str) -> Link | None:
    """The link attributes under ``path``; ``None`` when the function has none."""
    try:
        return Link(sysfs.parse_speed(host.read_text(f"{path}/current_link_speed")),
                    sysfs.parse_speed(host.read_text(f"{path}/max_link_speed")),
                    sysfs.parse_width(host.read_text(f"{path}/current_link_width")),
                    sysfs.parse_width(host.read_text(f"{path}/max_link_width")))
    except HostError:
        return None


def _gts(v: float | None) -> str:
    return "unknown" if v is None else f"{v:g} GT/s"


def expected(link: Link, port: Link | None) -> tuple[int, float | None]:
    """(width, speed) the link should train to: the lower of both ends' maxima."""
    want_w = min(link.max_width, port.max_width) if port and port.max_width else \
        link.max_width
    speeds = [s for s in (link.max_speed, port.max_speed if port else None) if s]
    return want_w, (min(speeds) if speeds else None)


def _evidence(d: PciDev, link: Link, port: Link | None) -> tuple[Evidence, ...]:
    ev = [Evidence.runtime(f"{PCI}/{d.bdf}/current_link_width", str(link.cur_width)),
          Evidence.runtime(f"{PCI}/{d.bdf}/max_link_width", str(link.max_width)),
          Evidence.runtime(f"{PCI}/{d.bdf}/current_link_speed", _gts(link.cur_speed)),
          Evidence.runtime(f"{PCI}/{d.bdf}/max_link_speed", _gts(link.max_speed))]
    if port is not None and d.upstream:
        up = d.upstream.rsplit("/", 1)[-1]
        ev.append(Evidence.runtime(f"{PCI}/{up}/max_link_width", str(port.max_width)))
        ev.append(Evidence.runtime(f"{PCI}/{up}/max_link_speed", _gts(port.max_speed)))
    return tuple(ev)


def _shortfalls(d: PciDev, link: Link, want_w: int, want_s: float | None, strict: bool
                ) -> tuple[list[str], str]:
    """(what falls short, a note on an idle GPU's lowered speed)."""
    problems = []
    if link.cur_width < want_w:
        problems.append(f"width x{link.cur_width} of x{want_w}")
    slow = want_s is not None and link.cur_speed is not None and link.cur_speed < want_s
    note = ""
    if slow and d.is_gpu and not strict:
        note = (f"; speed {_gts(link.cur_speed)} below {_gts(want_s)} is normal for an "
                "idle GPU (it lowers its link speed to save power; check under load)")
    elif slow:
        problems.append(f"speed {_gts(link.cur_speed)} of {_gts(want_s)}")
    return problems, note


def _judge(host: Host, d: PciDev, p: Mapping[str, Any]) -> Result:
    """One device's link against what both ends support."""
    subject = f"{d.kind} {d.bdf}"
    try:
        link = _link(host, d.path)
        port = _link(host, d.upstream) if d.upstream else None
    except ParseError as exc:
        return Result(Status.ERROR, subject, f"unreadable link attributes: {exc}")
    if link is None:
        return Result(Status.SKIP, subject, "no PCIe link attributes (not a PCIe device, or "
                      "an integrated function)", evidence=(Evidence.runtime(d.path),))
    want_w, want_s = expected(link, port)
    ev = _evidence(d, link, port)
    exp = f"x{want_w} at {_gts(want_s)}"
    actual = f"x{link.cur_width} at {_gts(link.cur_speed)}"
    data = {"current_width": link.cur_width, "max_width": link.max_width,
            "current_speed": link.cur_speed, "max_speed": link.max_speed,
            "expected_width": want_w, "expected_speed": want_s}
    if link.cur_width == 0:
        return Result(Status.FAIL, subject, "the PCIe link is down (width 0)", expected=exp,
                      actual=actual, aspect=Aspect.RUNTIME, evidence=ev, data=data,
                      remediation=FIX)
    problems, note = _shortfalls(d, link, want_w, want_s, p["gpu_speed_strict"])
    if problems:
        return Result(Status.FAIL, subject, f"the PCIe link runs at {' and '.join(problems)}"
                      + note, expected=exp, actual=actual, aspect=Aspect.RUNTIME,
                      evidence=ev, data=data, remediation=FIX)
    return Result(Status.PASS, subject, f"the PCIe link runs at {actual}{note}",
                  expected=exp, actual=actual, aspect=Aspect.RUNTIME, evidence=ev,
                  data=data)


def run(ctx: CheckContext) -> Iterator[Result]:
    """Every GPU, NVSwitch and HCA links at the width and speed both ends support."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield Result(Status.SKIP, "pcie links", "the negotiated PCIe link is live state; an "
                     "offline scan cannot see it")
        return
    devs = [d for d in pci_devices(host) if d.kind in p["devices"] and not d.virtfn]
    if not devs:
        yield Result(Status.SKIP, "pcie links", f"no {'/'.join(p['devices'])} on the PCI bus",
                     evidence=(Evidence.runtime(PCI),))
        return
    for d in devs:
        yield _judge(host, d, p)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``pci.link``."""
    return [CheckSpec(
        id="pci.link", title="PCIe links train at full width and speed",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False,
                       "properties": {
                           "devices": {"type": "array", "uniqueItems": True,
                                       "items": {"enum": ["GPU", "NVSwitch", "HCA"]},
                                       "default": ["GPU", "NVSwitch", "HCA"]},
                           "gpu_speed_strict": {
                               "type": "boolean", "default": False,
                               "description": "fail an idle GPU's lowered link "
                                              "speed too (it downtrains to save "
                                              "power)"}}},
        description="current_link_width/speed against the lower of the device's "
                    "and its upstream port's max_link_width/speed; GPUs are NVIDIA's "
                    "and AMD's (Radeon, Instinct).")]
