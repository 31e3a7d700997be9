"""``fabric.nvlink_links``: every GPU's NVLink links are up, as many as its peers', at the
speed of its fastest link (live, real ``/``).

Gathers ``nvidia-smi nvlink --status`` (run once per scan, :mod:`aiaudit.linux.gpu.nvlink`)
and, live, whether NVSwitches sit on the PCI bus (NVIDIA class 0x0680,
:mod:`aiaudit.linux.pci.devices`).  Decides per GPU:

- active links: at least ``expected_links`` when set; by default as many as the best GPU
  of the same model (a PCIe card with an NVLink bridge shows 12 active and 6 inactive on
  both GPUs, and passes); on an NVSwitch system also no link inactive that is active on a
  peer of the same model (each link goes to a switch: a down link slows or hangs NCCL);
- speed: no active link slower than ``min_speed_gbps``, by default than the GPU's fastest
  link (a link that trained at a lower rate);
- a link state nvidia-smi prints that this reader does not know is ``error``.

No NVLink at all (nvidia-smi prints nothing, or NVML's "all links are inActive" / "does not
support Nvlink" on every GPU) is not applicable, unless NVSwitches are present or
``expected_links`` is set: then every GPU without links fails.  A loss every GPU shares (a
whole NVSwitch down) is seen only with ``expected_links``: peers are the default because
some parts ship with links fused off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

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

if TYPE_CHECKING:
    from aiaudit.core.host import Host
    from aiaudit.linux.gpu.nvlink import GpuLinks

CMD = "nvidia-smi nvlink --status"
FIX = Remediation("Drain the node and look at the link: `nvidia-smi nvlink -s` and `-e` "
                  "(error counters), Xid 74 in the kernel log; reset the GPU or reboot the "
                  "node (on NVSwitch systems Fabric Manager retrains the links); a link that "
                  "stays down or slow needs the baseboard, NVSwitch tray or NVLink bridge "
                  "serviced.", (Snippet.command("nvidia-smi nvlink -s",
                                                "show each link's state and rate"),))
REQUIRE_GPU: dict[str, Any] = {
    "type": "boolean", "default": False,
    "description": "fail instead of skip when there is no NVIDIA GPU and driver"}
"""As :data:`aiaudit.linux.gpu.driver.REQUIRE_GPU` (not imported: registering the rule
must not import the GPU stack)."""
SPEED_TOLERANCE = 0.0005
"""nvidia-smi prints rates with three decimals."""


def gate(host: Host, params: Mapping[str, Any], what: str) -> Result | None:
    """The result that ends the rule before nvidia-smi runs: no NVIDIA GPU or driver
    (skip, or fail with ``require_gpu``), or a scanned root (commands never run there)."""
    from aiaudit.linux.gpu import driver

    blocked = driver.gate(host, params, what)
    if blocked:
        return blocked
    if not host.allow_commands:
        return Result(Status.SKIP, "nvidia-smi", f"{what} is read from nvidia-smi nvlink, "
                      "which is run only when scanning the real / live; it is never run "
                      "from a scanned root or a --live snapshot")
    return None


def nvswitches(host: Host) -> int:
    """NVSwitches on the PCI bus (live)."""
    from aiaudit.linux.pci.devices import pci_devices

    return sum(1 for d in pci_devices(host) if d.is_nvswitch)


def _indices(links: Any) -> str:
    return ", ".join(str(ln.index) for ln in links)


def _problems(g: GpuLinks, want: int, peers_active: set[int], floor: float | None
              ) -> list[str]:
    """What is wrong with one GPU's links."""
    out: list[str] = []
    active = g.active
    down = [ln for ln in g.links if ln.active is False]
    if len(active) < want:
        why = f" ({g.note})" if g.note and not g.links else ""
        out.append(f"{len(active)} of {want} links active{why}"
                   + (f"; inactive: link {_indices(down)}" if down else ""))
    missing = sorted(peers_active - {ln.index for ln in active})
    if missing and len(active) >= want:
        out.append("link " + ", ".join(map(str, missing)) + " inactive while active on its "
                   "peers (NVSwitch system)")
    fastest = max((ln.speed_gbps or 0.0 for ln in active), default=0.0)
    limit = floor if floor is not None else fastest
    slow = [ln for ln in active if (ln.speed_gbps or 0.0) < limit - SPEED_TOLERANCE]
    if slow:
        out.append("slow: " + ", ".join(f"link {ln.index} at {ln.speed_gbps:g} GB/s"
                                        for ln in slow) + f" (expected {limit:g} GB/s)")
    return out


def _judge(g: GpuLinks, want: int, peers_active: set[int], floor: float | None,
           switches: int) -> Result:
    """One GPU's result."""
    active = g.active
    speeds = sorted({ln.speed_gbps for ln in active if ln.speed_gbps is not None})
    data = {"active": len(active), "links": len(g.links), "expected": want,
            "inactive": [ln.index for ln in g.links if ln.active is False],
            "speeds_gbps": speeds, "nvswitches": switches, "note": g.note}
    ev = (Evidence.command(CMD, f"GPU {g.index}: {len(active)} active of {len(g.links)}"
                           + (f", {g.note}" if g.note else "")),)
    if g.unknown:
        return Result(Status.ERROR, g.subject, f"{g.name}: link state not understood: "
                      + "; ".join(f"link {ln.index}: {ln.raw!r}" for ln in g.unknown[:4]),
                      evidence=ev, data=data)
    if want == 0 and not active:
        return Result(Status.SKIP, g.subject, f"{g.name}: no NVLink ({g.note or 'no link'}"
                      ", as on its peers)", aspect=Aspect.RUNTIME, evidence=ev, data=data)
    bad = _problems(g, want, peers_active, floor)
    rate = "/".join(f"{s:g}" for s in speeds) + " GB/s" if speeds else "no rate"
    act = f"{len(active)} active at {rate}"
    if bad:
        return Result(Status.FAIL, g.subject, f"{g.name}: {'; '.join(bad)}",
                      expected=f"{want} links active" + (f" at {floor:g} GB/s" if floor
                                                          else " at one rate"),
                      actual=act, aspect=Aspect.RUNTIME, evidence=ev, data=data,
                      remediation=FIX)
    extra = (f" ({len(g.links) - len(active)} inactive, as on its peers)"
             if len(g.links) > len(active) else "")
    return Result(Status.PASS, g.subject, f"{g.name}: {act}{extra}",
                  expected=f"{want} links active", actual=act, aspect=Aspect.RUNTIME,
                  evidence=ev, data=data)


def judge(gpus: tuple[GpuLinks, ...], switches: int, expected: int | None,
          floor: float | None) -> Iterator[Result]:
    """Every GPU's links against its peers' (pure: what :func:`run` decides)."""
    no_links = all(not g.links for g in gpus)
    if no_links and not switches and expected is None:
        notes = sorted({g.note or "no link listed" for g in gpus})
        why = ("printed nothing" if not gpus else "lists no link ("
               + "; ".join(notes)[:200] + ")")
        yield Result(Status.SKIP, "nvlink", f"no NVLink on this host: {CMD} {why}",
                     evidence=(Evidence.command(CMD, why),))
        return
    if not gpus:
        yield Result(Status.FAIL, "nvlink", f"{CMD} lists no GPU although "
                     + (f"{switches} NVSwitch(es) are on the PCI bus" if switches else
                        f"expected_links is {expected}"), evidence=(Evidence.command(CMD),),
                     remediation=FIX)
        return
    best: dict[str, int] = {}
    union: dict[str, set[int]] = {}
    for g in gpus:
        best[g.name] = max(best.get(g.name, 0), len(g.active))
        union.setdefault(g.name, set()).update(ln.index for ln in g.active)
    for g in gpus:
        want = expected if expected is not None else best[g.name]
        peers = union[g.name] if switches and expected is None else set()
        if switches and expected is None and want == 0:
            want = 1  # an NVSwitch GPU with no active link is never "as its peers"
        yield _judge(g, want, peers, floor, switches)


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per GPU (or one skip when there is no NVLink)."""
    host, p = ctx.host, ctx.params
    blocked = gate(host, p, "the NVLink link state")
    if blocked:
        yield blocked
        return
    from aiaudit.linux.gpu import nvlink

    got = nvlink.status(host, float(p["timeout"]))
    if isinstance(got, str):
        yield Result(Status.ERROR, "nvidia-smi nvlink", got, evidence=(Evidence.command(CMD),))
        return
    floor = p.get("min_speed_gbps")
    yield from judge(got, nvswitches(host), p.get("expected_links"),
                     float(floor) if floor is not None else None)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``fabric.nvlink_links``."""
    return [CheckSpec(
        id="fabric.nvlink_links",
        title="Every GPU's NVLink links are up, as many as its peers', at full speed",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "require_gpu": REQUIRE_GPU,
            "expected_links": {"type": "integer", "minimum": 0, "maximum": 64,
                               "description": "active links each GPU must have (default: "
                                              "as many as the best GPU of the same model)"},
            "min_speed_gbps": {"type": "number", "exclusiveMinimum": 0, "maximum": 10000,
                               "description": "slowest per-link rate accepted, GB/s "
                                              "(default: the GPU's fastest link)"},
            "timeout": {"type": "number", "minimum": 1, "maximum": 60, "default": 15,
                        "description": "seconds nvidia-smi nvlink may take (run once per "
                                       "scan)"}}},
        description="Live on the real / only: nvidia-smi nvlink --status per GPU; fewer "
                    "active links than expected_links (default: the best GPU of the same "
                    "model; on NVSwitch systems also a link inactive where its peers have "
                    "it active) or a link slower than min_speed_gbps (default: the GPU's "
                    "fastest link) fails; no NVLink at all skips.")]
