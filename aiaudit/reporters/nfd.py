"""``nfd`` reporter: a node-feature-discovery feature file (``features.d``, local source).

nfd-worker reads every file in ``/etc/kubernetes/node-feature-discovery/features.d/``
(files whose name starts with ``.`` are skipped: a temporary file is never read half
written) and turns each ``name=value`` line into a node label (source/local/local.go of
kubernetes-sigs/node-feature-discovery).  A name must be a Kubernetes qualified name and a
value at most 63 characters of ``[A-Za-z0-9._-]`` starting and ending alphanumeric
(k8s.io/apimachinery ``IsQualifiedName``, ``IsValidLabelValue``), else nfd-worker drops
the line; names carry the ``aiaudit.feature.node.kubernetes.io/`` namespace (nfd-master
accepts ``*.feature.node.kubernetes.io`` without an ``-extra-label-ns`` flag).

Lines: ``ready`` (``true`` when no unwaived failure at or above ``--fail-on``),
``failures.<severity>`` and ``errors`` counts, ``ruleset``, and the class facts the
``inventory.facts`` rule recorded (GPU model and count, driver, toolkit, HCA count, memory,
kernel...; per-device facts as the lowest value or the one value all devices share).  A
``# +expiry-time`` directive makes the labels lapse :data:`EXPIRY` after the scan, so a
node whose timer stopped loses ``ready=true`` instead of keeping it.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, Mapping

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.core.model import Severity, Status

NAMESPACE = "aiaudit.feature.node.kubernetes.io"
EXPIRY = timedelta(hours=6)
"""How long the labels stay after the scan (run the timer well inside it)."""
MAX_VALUE = 63
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_BAD = re.compile(r"[^-A-Za-z0-9_.]+")
FACTS = ("gpu.nvidia.count", "gpu.nvidia.model", "gpu.nvidia.driver", "gpu.amd.count",
         "gpu.amd.model", "gpu.amd.driver", "rocm.release",
         "gpu.pcie.width", "gpu.pcie.gen", "cuda.toolkit", "hca.count", "hca.port_rate",
         "memory.total_gib", "cpu.model", "cpu.sockets", "numa.nodes", "nvme.count",
         "kernel.release", "dmi.product_name")
"""The class facts that become labels (packages and command lines are too long)."""


def label_value(value: object) -> str:
    """``value`` as a valid label value: other characters become ``-``, at most 63
    characters, alphanumeric at both ends (``""`` if nothing is left)."""
    text = _BAD.sub("-", str(value))[:MAX_VALUE]
    return text.strip("-_.")


_LEADING = re.compile(r"\d+(?:\.\d+)?")


def _summary(value: Any) -> object:
    """A per-device fact as one value: the value all devices share, else the lowest one
    where the values are (or start with) numbers (``200 Gb/sec (4X HDR)``), else
    ``mixed``."""
    if not isinstance(value, Mapping):
        return value
    values = list(value.values())
    if len(set(map(str, values))) <= 1:
        return values[0] if values else ""
    numbers = [(float(m.group()), v) for v in values if (m := _LEADING.match(str(v)))]
    if len(numbers) == len(values):
        return min(numbers, key=lambda nv: nv[0])[1]
    return "mixed"


def _facts(run: RunResult) -> Mapping[str, Any]:
    for f in run.findings:
        if f.check == "inventory.facts":
            return f.result.data.get("facts") or {}
    return {}


def features(run: RunResult) -> dict[str, str]:
    """Label name (without namespace) -> value."""
    fails = {s.value: 0 for s in Severity}
    errors = 0
    for f in run.findings:
        if f.status is Status.FAIL:
            fails[f.severity.value] += 1
        elif f.status is Status.ERROR:
            errors += 1
    blocking = sum(n for s, n in fails.items() if Severity(s).rank >= run.fail_on.rank)
    out = {"ready": "true" if blocking == 0 else "false"}
    out.update({f"failures.{s}": str(n) for s, n in fails.items() if s != "info"})
    out["errors"] = str(errors)
    out["ruleset"] = label_value(run.ruleset)
    facts = _facts(run)
    for name in FACTS:
        if name in facts:
            out[name] = label_value(_summary(facts[name]))
    return {k: v for k, v in out.items() if _NAME.fullmatch(k)}


def render(run: RunResult, options: Mapping[str, Any]) -> str:
    """The feature file."""
    try:
        started = datetime.fromisoformat(run.started.replace("Z", "+00:00"))
    except ValueError:
        started = None
    hours = EXPIRY.total_seconds() / 3600
    lines = [f"# aiaudit {run.tool_version} scan of {label_value(run.host.hostname)} with "
             f"{label_value(run.ruleset)}; labels lapse {hours:g} h after the scan"]
    if started is not None:
        expiry = (started + EXPIRY).strftime("%Y-%m-%dT%H:%M:%SZ")
        lines.append(f"# +expiry-time={expiry}")
    lines += [f"{NAMESPACE}/{k}={v}" for k, v in features(run).items()]
    return "\n".join(lines) + "\n"


@hookimpl
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Register the ``nfd`` format."""
    return [ReporterSpec("nfd", render, "node-feature-discovery feature file (features.d): "
                         "readiness, failure counts and class facts as node labels", "nfd")]
