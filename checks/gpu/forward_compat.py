"""``gpu.forward_compat``: each cuda-compat (forward-compatibility) package helps rather
than harms.

Gathers every ``/usr/local/cuda-*/compat/libcuda.so.<version>`` and every ``compat``
directory in the loader path (:mod:`aiaudit.linux.gpu.stack`) and the driver version
(:func:`aiaudit.linux.gpu.driver.driver_version`).  Decides per package: older than the
driver fails (CUDA then reports ``CUDA_ERROR_SYSTEM_DRIVER_MISMATCH``), the same version
passes (it changes nothing), newer is forward compatibility, judged by
:func:`aiaudit.linux.gpu.compat.forward_compat` (Data Center GPUs only: NVIDIA's CUDA
Compatibility guide, "Forward Compatibility").
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from aiaudit.api import (
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.host import Host
from aiaudit.linux.gpu import compat, cuda, driver
from aiaudit.linux.gpu import stack as gs


def _packages(host: Host) -> list[tuple[str, gs.Lib, bool]]:
    """(subject, compat libcuda, in the loader path?) of each toolkit's compat directory,
    then of each compat directory in the loader path that belongs to no toolkit."""
    us = gs.user_side(host)
    found: list[tuple[str, gs.Lib, bool]] = []
    for t in gs.toolkits(host):
        if t.compat:
            in_path = any(c.path == t.compat.path for c in us.compat_in_path)
            found.append((t.name, t.compat, in_path))
    for c in us.compat_in_path:
        if not any(c.path == lib.path for _, lib, _ in found):
            found.append((c.path.rsplit("/", 1)[0], c, True))
    return found


def _compat_package(subject: str) -> tuple[str, tuple[Snippet, ...]]:
    """(`` cuda-compat-X-Y`` or ``""``, the command removing it) for a toolkit subject."""
    m = re.search(r"cuda-(\d+)\.(\d+)", subject)
    if not m:
        return "", ()
    pkg = f"cuda-compat-{m.group(1)}-{m.group(2)}"
    return f" {pkg}", (Snippet.command(f"apt-get remove {pkg}  # or: dnf remove {pkg}",
                                       f"remove {pkg}"),)


def _judge(host: Host, policy: Any, subject: str, lib: gs.Lib, in_path: bool,
           drv: gs.Version) -> Result:
    """One compat libcuda against the driver."""
    use = ("it is in the loader path, so every process loads it" if in_path else
           "only processes that put its directory on LD_LIBRARY_PATH load it")
    ev = (drv.evidence, Evidence.file(lib.path, None, lib.version))
    data = {"compat": lib.version, "driver": drv.version, "in_loader_path": in_path}
    if cuda.vtuple(lib.version) < cuda.vtuple(drv.version):
        pkg = _compat_package(subject)
        return Result(Status.FAIL, subject,
                      f"forward-compatibility libcuda {lib.version} is older than the "
                      f"{drv.what} {drv.version}; {use}, and it then fails with "
                      "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: it only does harm",
                      expected=f"> {drv.version}", actual=lib.version, evidence=ev,
                      data=data, remediation=Remediation(
                          f"Remove the stale forward-compatibility package{pkg[0]} (and any "
                          "ld.so.conf.d or LD_LIBRARY_PATH entry pointing at it).", pkg[1]))
    if cuda.vtuple(lib.version) == cuda.vtuple(drv.version):
        return Result(Status.PASS, subject, f"forward-compatibility libcuda {lib.version} "
                      f"is the same version as the {drv.what}: it changes nothing",
                      expected=f">= {drv.version}", actual=lib.version, evidence=ev,
                      data=data)
    status, note = compat.forward_compat(policy, gs.gpus(host).models.values(), lib,
                                         drv.version)
    return Result(status, subject, f"CUDA programs that load it ({use}) {note}",
                  expected=f"> {drv.version}", actual=lib.version, evidence=ev, data=data,
                  remediation=None if status is Status.PASS else Remediation(
                      "Upgrade the driver instead of relying on forward compatibility on "
                      "this GPU, or remove the cuda-compat package."))


def run(ctx: CheckContext) -> Iterator[Result]:
    """What each cuda-compat package changes, and whether it only does harm."""
    host, p = ctx.host, ctx.params
    blocked = driver.gate(host, p, "cuda-compat")
    if blocked:
        yield blocked
        return
    found = _packages(host)
    if not found:
        yield Result(Status.SKIP, "cuda-compat", "no forward-compatibility package "
                     "(no /usr/local/cuda-*/compat/libcuda.so.* and none in the loader path)")
        return
    drv = driver.driver_version(host)
    for subject, lib, in_path in found:
        if drv is None:
            yield Result(Status.SKIP, subject, f"forward-compatibility libcuda {lib.version}; "
                         "no NVIDIA driver to compare with",
                         evidence=(Evidence.file(lib.path, None, lib.version),))
            continue
        yield _judge(host, p.get("forward_compat"), subject, lib, in_path, drv)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.forward_compat``."""
    return [CheckSpec(
        id="gpu.forward_compat", title="cuda-compat packages help rather than harm",
        run=run, params_schema=driver.schema({"forward_compat": compat.POLICY_PARAM}),
        description=(
            "For each /usr/local/cuda-*/compat/libcuda.so.<ver> and compat directory in the "
            "loader path: newer than the driver = forward compatibility (Data Center GPUs "
            "only); older = stale, breaks CUDA for whoever loads it."))]
