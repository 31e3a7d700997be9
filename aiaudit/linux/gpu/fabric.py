"""Each GPU's NVLink fabric registration, from ``nvidia-smi -q -x``'s ``fabric`` section.

On NVSwitch systems from Hopper on (HGX/DGX H100, H200, B200, GB200 NVL) a GPU joins the
NVLink fabric when Fabric Manager (or, on NVL72 racks, the NVLink subnet manager) has
programmed the switches and registered it; until then CUDA initialisation fails or
waits.  nvidia-smi prints NVML's ``nvmlGpuFabricInfo``:

- ``state``: ``Not Supported`` (N/A: no fabric, e.g. a PCIe GPU, or a GPU before Hopper),
  ``Not Started``, ``In Progress``, ``Completed`` (``NVML_GPU_FABRIC_STATE_*``);
- ``status``: the NVML return code of the registration once completed, ``Success`` or the
  error (``N/A`` before completion);
- ``cliqueId``, ``clusterUuid``: the NVLink partition (multi-node NVLink);
- ``health`` (v13 schema, drivers 550+): ``summary``, ``bandwidth`` (degraded bandwidth),
  ``route_recovery_in_progress``, ``route_unhealthy``, ``access_timeout_recovery``,
  ``incorrect_configuration`` (NVML's fabric health mask).

Real captures: GPUd's 8x H100 80GB HBM3 ``nvidia-smi -q`` (535.183.01: ``State: Completed``,
``Status: Success``), and the element names from the v12/v13 XML captures
(``tests/fixtures/gpu``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiaudit.core.startup.records import record
from aiaudit.linux.gpu.smidoc import gpu_label, text

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

HEALTH_FLAGS = ("route_recovery_in_progress", "route_unhealthy", "access_timeout_recovery",
                "incorrect_configuration")
"""Health elements that name a problem when their value is ``True``/``Yes``."""
_CORRECT = ("none", "no", "false", "correct configuration", "correct")


@record
class FabricState:
    """One GPU's fabric section (``None``: not reported)."""

    subject: str
    name: str
    state: str | None
    status: str | None
    clique: str | None = None
    cluster: str | None = None
    health: tuple[tuple[str, str], ...] = ()
    """``(element, value)`` of the reported ``health`` elements."""

    @property
    def on_fabric(self) -> bool:
        """The GPU takes part in an NVLink fabric (state reported, not Not Supported)."""
        return self.state is not None and self.state.lower() != "not supported"

    def problems(self) -> list[str]:
        """What is wrong with the registration (empty: registered and healthy).  Health
        values are judged only where they name a problem (NVML's health mask: degraded
        bandwidth, route recovery or unhealthy route, access timeout recovery, an
        incorrect configuration); other wordings pass."""
        out = []
        if self.state is not None and self.state.lower() != "completed":
            out.append(f"fabric state {self.state}")
        elif self.status is not None and self.status.lower() != "success":
            out.append(f"fabric registration failed: {self.status}")
        for k, v in self.health:
            low = v.lower()
            if (k == "bandwidth" and low in ("degraded", "true", "yes")) or \
                    (k == "summary" and low == "unhealthy") or \
                    (k in HEALTH_FLAGS[:3] and low in ("true", "yes", "in progress")) or \
                    (k == "incorrect_configuration" and low not in _CORRECT):
                out.append(f"health {k}: {v}")
        return out


def fabric_states(doc: ET.Element) -> list[FabricState]:
    """Every GPU's fabric section, in document order."""
    out = []
    for g in doc.findall("gpu"):
        subject, name = gpu_label(g)
        f = g.find("fabric")
        health = tuple((h.tag, v) for h in (f.findall("health/*") if f is not None else [])
                       for v in [text(h, ".")] if v is not None)[:16]
        out.append(FabricState(subject, name, text(f, "state"), text(f, "status"),
                               text(f, "cliqueId"), text(f, "clusterUuid"), health))
    return out
