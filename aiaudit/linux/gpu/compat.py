"""CUDA forward compatibility: when a ``cuda-compat`` libcuda newer than the driver lets
CUDA programs run, for ``gpu.cuda_driver`` and ``gpu.forward_compat``.

Source: NVIDIA's CUDA Compatibility guide, "Forward Compatibility": the compat package
works only on NVIDIA Data Center GPUs, select NGC Server Ready RTX GPUs and Jetson; on any
other GPU CUDA fails with ``CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE``.  The GPU models
come from ``/proc/driver/nvidia/gpus/*/information`` (``Model:``, see
:func:`aiaudit.linux.gpu.stack.gpus`).
"""

from __future__ import annotations

from typing import Any, Iterable

from aiaudit.core.model import Status
from aiaudit.core.startup import lazy_pattern
from aiaudit.linux.gpu.stack import Lib

FORWARD_COMPAT_CAVEAT = (
    "forward compatibility works only on NVIDIA Data Center GPUs, select NGC Server Ready "
    "RTX GPUs and Jetson (CUDA Compatibility guide, 'Forward Compatibility')"
)

POLICY_PARAM: dict[str, Any] = {
    "enum": ["datacenter", "never"], "default": "datacenter",
    "description": "accept a cuda-compat libcuda newer than the driver (only on Data Center "
                   "GPUs) or never"}
"""The ``forward_compat`` param of the rules that may accept forward compatibility."""

_DATACENTER = lazy_pattern(
    r"\b(Tesla|DGX|HGX|[ABH]\d{2,3}[A-Z]?|GH200|GB\d00|B\d00|L4|L40S?|L20|T4|V100|P100|P40|"
    r"K80|A2|RTX PRO \d+ Blackwell Server)\b")
"""GPU models (``/proc/driver/nvidia/gpus/*/information`` ``Model:``) that are Data Center
products: A100/A30/A10/H100/H200/B200/L4/L40S/T4/V100... (a heuristic on the name)."""


def is_datacenter(model: str) -> bool:
    """A Data Center GPU by its model name (a heuristic, see :data:`_DATACENTER`)."""
    return bool(_DATACENTER().search(model))


def forward_compat(policy: str | None, models: Iterable[str], lib: Lib, driver: str
                   ) -> tuple[Status, str]:
    """(status, text) for relying on the forward-compatibility libcuda ``lib``, newer than
    ``driver``, under the rule's ``policy`` on GPUs of ``models``; the text completes
    "CUDA programs ...": "run on driver X through ..."."""
    where = f"forward-compatibility libcuda {lib.version} ({lib.path})"
    if policy == "never":
        return Status.FAIL, (f"would need {where}, which this ruleset does not accept "
                             "(forward_compat: never)")
    seen = set(models)
    bad = sorted(m for m in seen if not is_datacenter(m))
    if bad:
        return Status.FAIL, (f"would need {where}, but {', '.join(bad)} is not a Data Center "
                             "GPU, so they fail with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE; "
                             + FORWARD_COMPAT_CAVEAT)
    known = (f"GPU models: {', '.join(sorted(seen))}" if seen
             else "the GPU model is not known here, so this holds only on a supported GPU")
    return Status.PASS, f"run on driver {driver} through {where}; {FORWARD_COMPAT_CAVEAT}; {known}"
