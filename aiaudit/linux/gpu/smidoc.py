"""The ``nvidia-smi -q -x`` document as an element tree, for the sections that
:mod:`aiaudit.linux.gpu.nvsmi`'s :class:`~aiaudit.linux.gpu.nvsmi.SmiLog` does not carry:
``fabric`` (:mod:`aiaudit.linux.gpu.fabric`), ``processes`` and ``fb_memory_usage``
(:mod:`aiaudit.linux.gpu.processes`), ``mig_mode`` and ``mig_devices``
(:mod:`aiaudit.linux.gpu.mig`).

The command's output is the one :func:`aiaudit.linux.gpu.nvsmi.output` run shares with every
``gpu.*`` rule; it is parsed once more here (once per scan, memoised), with the same
guards: the size cap and no entity declarations (ElementTree never fetches the DTD).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from aiaudit.core.host import Host
from aiaudit.core.model import Evidence, Result, Status
from aiaudit.core.startup import lazy_pattern

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

_QUANTITY = lazy_pattern(r"([0-9]{1,12})\s*MiB")
SMI_COMMAND = "nvidia-smi -q -x"
"""The command these rules read (:data:`aiaudit.linux.gpu.nvsmi.SMI_ARGV`); nvsmi itself is
imported only once the command is to run (14 ms of import on a prolog that cannot run
it)."""


def parse(text: str) -> ET.Element:
    """The ``<nvidia_smi_log>`` element of ``text`` (:func:`aiaudit.linux.gpu.nvsmi.parse_root`)."""
    from aiaudit.linux.gpu import nvsmi

    return nvsmi.parse_root(text)


def document(host: Host, timeout: float) -> ET.Element | str:
    """The parsed document of this scan's ``nvidia-smi -q -x``
    (:func:`aiaudit.linux.gpu.nvsmi.tree`: run and parsed once per scan), or why there is
    none."""
    from aiaudit.linux.gpu import nvsmi

    return nvsmi.tree(host, timeout)


def text(el: ET.Element | None, path: str) -> str | None:
    """The value at ``path`` under ``el`` (``None``: absent or not reported, as
    :func:`aiaudit.linux.gpu.nvsmi.value` decides)."""
    from aiaudit.linux.gpu.nvsmi import value

    node = el.find(path) if el is not None else None
    return value(node.text) if node is not None else None


def mib(value: str | None) -> int | None:
    """``"576 MiB"`` -> 576; ``None`` when not reported or in another unit."""
    m = _QUANTITY().fullmatch(value) if value else None
    return int(m.group(1)) if m else None


def gpu_label(gpu: ET.Element) -> tuple[str, str]:
    """(``GPU <bus id>``, product name) of a ``<gpu>`` element."""
    return f"GPU {gpu.get('id', '?')}", text(gpu, "product_name") or "?"


def gather(host: Host, params: Mapping[str, Any], what: str) -> ET.Element | Result:
    """The document for a rule about ``what``, or the result that ends the rule: skip
    without an NVIDIA GPU or driver (fail with ``require_gpu``: :func:`driver.gate`), skip
    on a scanned root (nvidia-smi is never run from one), error when nvidia-smi fails."""
    from aiaudit.linux.gpu import driver

    blocked = driver.gate(host, params, what)
    if blocked:
        return blocked
    if not host.allow_commands:
        return Result(Status.SKIP, "nvidia-smi", f"{what} is read from nvidia-smi, which is "
                      "run only when scanning the real / live; it is never run from a "
                      "scanned root")
    doc = document(host, float(params["timeout"]))
    if isinstance(doc, str):
        return Result(Status.ERROR, "nvidia-smi", doc,
                      evidence=(Evidence.command(SMI_COMMAND),))
    if doc.find("gpu") is None:
        return Result(Status.ERROR, "nvidia-smi", "nvidia-smi -q -x listed no GPU",
                      evidence=(Evidence.command(SMI_COMMAND),))
    return doc


TIMEOUT_SCHEMA = {"type": "number", "minimum": 1, "maximum": 60, "default": 15,
                  "description": "seconds nvidia-smi may take (it runs once per scan)"}
"""The ``timeout`` param of every rule that reads the document."""


def smi_evidence(doc: ET.Element) -> Evidence:
    """The command, with the driver version it reported."""
    return Evidence.command(SMI_COMMAND, f"driver {text(doc, 'driver_version') or '?'}")
