"""``amdgpu.stack_compat``: the amdgpu kernel driver supports the ROCm releases installed and
those frameworks' ROCm builds were made for.

Gathers (:mod:`aiaudit.linux.amdgpu.stack`) the driver (live ``/sys/module/amdgpu/version``;
offline the amdgpu-dkms package, else its module file, else the distribution kernel's
amdgpu), each ROCm release (``/opt/rocm*/.info/version``, else the ``rocm-core`` package)
and PyTorch's ROCm builds (``torch/version.py`` ``hip``, never imported).  Decides with AMD's
"User and kernel-space support matrix" (``checks/data/amd_rocm.json``, dated, with its
sources; :mod:`aiaudit.linux.amdgpu.table`): each ROCm user space must be in the tested
list of the driver's release.  PyTorch's ROCm wheels bundle their own ROCm libraries, so
only the driver matters for them, not ``/opt/rocm``.  The distribution kernel's own amdgpu
and driver versions newer than the table cannot be judged (skip, saying why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

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
from aiaudit.linux.amdgpu import presence
from aiaudit.linux.pyenv import ENV_PARAMS

if TYPE_CHECKING:  # imported in run(), once the AMD rules apply (prolog start-up cost)
    from aiaudit.linux.amdgpu import stack
    from aiaudit.linux.amdgpu import table as tb

def _fix(t: tb.Table, kmd: stack.Kmd, user: str) -> Remediation:
    """Install a ROCm release the driver supports, or a driver that supports ``user``."""
    from aiaudit.linux.amdgpu import table as tb
    ln = tb.line(user) or user
    drivers = sorted((k for k, rows in t.kmd.items() if ln in rows), key=tb.line_key)
    return Remediation(
        f"Use a ROCm user space the driver supports ({', '.join(t.kmd[kmd.line or ''])}), or "
        f"install an AMD GPU driver release whose tested user space includes {ln} ("
        f"{', '.join(drivers) or 'none in the table'}) with amdgpu-install / the "
        "amdgpu-dkms package, then reboot.")


def _judge(t: tb.Table, kmd: stack.Kmd, subject: str, version: str | None, ev: Evidence,
           aspect: Aspect) -> Result:
    """One ROCm user (an install or a framework build) against the driver's row."""
    from aiaudit.linux.amdgpu import table as tb
    if version is None or tb.line(version) is None:
        return Result(Status.ERROR, subject, "its ROCm release cannot be read", evidence=(ev,))
    row = t.kmd[kmd.line or ""]
    ok = tb.supports(t, kmd.line or "", version)
    exp = f"ROCm {', '.join(row)}"
    evs = (kmd.evidence, ev, Evidence.default(
        f"AMD user and kernel-space support matrix (checks/data/amd_rocm.json, read {t.read})",
        f"KMD {kmd.line}: {', '.join(row)}"))
    data = {"driver": kmd.version, "driver_line": kmd.line, "rocm": version}
    if ok:
        return Result(Status.PASS, subject, f"ROCm {tb.line(version)} is supported by "
                      f"{kmd.display}", expected=exp, actual=f"ROCm {version}", aspect=aspect,
                      evidence=evs, data=data)
    return Result(Status.FAIL, subject, f"ROCm {version} is not among the user-space releases "
                  f"AMD supports with {kmd.display} ({', '.join(row)}): the "
                  "runtime may fail to start or misbehave against this driver", expected=exp,
                  actual=f"ROCm {version}", aspect=aspect, evidence=evs, data=data,
                  remediation=_fix(t, kmd, version))


def _driver_unjudgeable(kmd: stack.Kmd, t: tb.Table, host: Host, users: list[str]
                        ) -> Result | None:
    """A result when the driver cannot be compared with the table, else ``None``."""
    who = ", ".join(users) or "no ROCm user space"
    if kmd.kind == "none":
        if host.live:
            return Result(Status.FAIL, "amdgpu", "AMD GPUs are present but the amdgpu kernel "
                          "module is not loaded: ROCm cannot open any GPU", expected="loaded",
                          actual="not loaded", aspect=Aspect.RUNTIME, evidence=(kmd.evidence,),
                          remediation=Remediation(
                              "Load the driver (`modprobe amdgpu`); if it fails, check "
                              "`dmesg` and reinstall amdgpu-dkms for the running kernel."))
        return Result(Status.SKIP, "amdgpu", "no amdgpu kernel module in this root (a "
                      f"container image gets it from its host); users: {who}",
                      evidence=(kmd.evidence,))
    if kmd.kind == "inbox":
        return Result(Status.SKIP, "amdgpu", f"{kmd.display}: AMD's support matrix covers "
                      "its own driver releases (amdgpu-dkms), not a distribution kernel's "
                      f"amdgpu, so {who} cannot be judged against it",
                      evidence=(kmd.evidence,))
    if kmd.line is None:
        return Result(Status.SKIP, "amdgpu", f"amdgpu {kmd.version or '(version unreadable)'} "
                      f"is not in AMD's table (checks/data/amd_rocm.json, read {t.read}); "
                      "add its release to judge it", evidence=(kmd.evidence,))
    return None


def run(ctx: CheckContext) -> Iterator[Result]:
    """The driver supports every ROCm user space on the node."""
    host, p = ctx.host, ctx.params
    blocked = presence.gate(host, p, "rocm")
    if blocked:
        yield blocked
        return
    from aiaudit.linux.amdgpu import stack
    from aiaudit.linux.amdgpu import table as tb

    t = tb.table()
    kmd = stack.kmd(host)
    installs = stack.rocm_installs(host)
    fws = stack.rocm_frameworks(host, tuple(p["python_envs"]), tuple(p["venv_roots"]),
                                p["search_homes"])
    users = [i.name for i in installs] + [f.subject for f in fws]
    early = _driver_unjudgeable(kmd, t, host, users)
    if early is not None:
        yield early
        return
    if not users:
        yield Result(Status.SKIP, "rocm", f"{kmd.display} is installed but no ROCm user space "
                     "(/opt/rocm*, rocm-core) and no ROCm build of PyTorch was found",
                     evidence=(kmd.evidence,))
        return
    aspect = Aspect.RUNTIME if host.live else Aspect.PERSISTED
    for i in installs:
        if i.problem:
            yield Result(Status.ERROR, i.name, i.problem, evidence=(i.evidence,))
            continue
        yield _judge(t, kmd, i.name, i.version, i.evidence, aspect)
    for f in fws:
        yield _judge(t, kmd, f.subject, f.rocm, f.evidence, aspect)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``amdgpu.stack_compat``."""
    return [CheckSpec(
        id="amdgpu.stack_compat",
        title="The amdgpu driver supports the installed ROCm and frameworks' ROCm builds",
        run=run, params_schema=presence.schema(ENV_PARAMS),
        description="amdgpu driver (loaded module, else amdgpu-dkms package or module "
                    "file) against each /opt/rocm*/.info/version and each torch ROCm "
                    "build (torch/version.py hip), with AMD's user and kernel-space "
                    "support matrix (checks/data/amd_rocm.json).")]
