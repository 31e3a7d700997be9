"""``gpu.cuda_driver``: the NVIDIA driver is new enough for each CUDA toolkit and each CUDA
build of PyTorch or JAX on the host.

Gathers the driver version (:func:`aiaudit.linux.gpu.driver.driver_version`), the
``/usr/local/cuda-*`` toolkits (``version.json`` / ``version.txt``, or for a toolkit
assembled from pip wheels the wheels' dist-info, ``cuda.h`` or the ``nvcc`` banner) and the
framework builds of the system, conda and venv site directories (``torch/version.py``
parsed with ``ast``, ``*.dist-info`` names): :mod:`aiaudit.linux.gpu.stack`; live on the
real ``/``, the CUDA version the running driver reports (``cuda_version`` of
``nvidia-smi -q -x``, shared with the other ``gpu.*`` rules).  Decides: the driver's own
CUDA version is authoritative where it is known (the release rule needs it at least the
toolkit's major.minor, minor-version compatibility at least its major); otherwise NVIDIA's
minimum driver per CUDA version (CUDA release notes, Table 2 "minor version compatibility"
or Table 3 "toolkit driver"; shipped in ``checks/data/cuda_drivers.json`` with its source
and date), accepting a newer forward-compatibility libcuda where
:mod:`aiaudit.linux.gpu.compat` allows it.  A CUDA release newer than the table is
"unknown, table from DATE" (skip), never an error.  Nothing from the scanned root is run or
imported.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from aiaudit.api import (
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Status,
    hookimpl,
)
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.gpu import compat, cuda, driver
from aiaudit.linux.gpu import stack as gs
from aiaudit.linux.pyenv import ENV_PARAMS


@record
class _Against:
    """What every CUDA user is compared with in one run of the rule."""

    host: Host
    params: Mapping[str, Any]
    table: cuda.DriverTable
    full: bool
    """Table 3 (the driver of each release) rather than minor-version compatibility."""
    drv: gs.Version | None
    driver_cuda: tuple[int, int] | None = None
    """The CUDA version the running driver supports, as nvidia-smi reports it (live)."""
    driver_cuda_ev: Evidence | None = None

    @property
    def table_name(self) -> str:
        """How messages name the table in use."""
        return "release driver table" if self.full else "minor-version compatibility table"


def _install(a: _Against, minimum: str, what: str) -> Remediation:
    """Install the driver branch of ``minimum``."""
    return driver.install_driver(a.host, cuda.vtuple(minimum)[0],
                                 f"{what} needs driver >= {minimum}")


def _via_compat(a: _Against, subject: str, what: str, minimum: str, basis: str,
                compat_lib: gs.Lib, ev: tuple[Evidence, ...], data: dict[str, Any]) -> Result:
    """The driver is too old, but a newer forward-compatibility libcuda may carry it."""
    assert a.drv is not None
    status, note = compat.forward_compat(a.params.get("forward_compat"),
                                         gs.gpus(a.host).models.values(), compat_lib,
                                         a.drv.version)
    data["forward_compat"] = compat_lib.version
    rem = _install(a, minimum, what) if status is Status.FAIL else None
    return Result(status, subject, f"{what} needs driver >= {minimum} ({basis}); the "
                  f"{a.drv.what} is {a.drv.version}; its CUDA programs {note}",
                  expected=f">= {minimum}", actual=a.drv.version,
                  evidence=(*ev, Evidence.file(compat_lib.path)), data=data, remediation=rem)


def _unknown(a: _Against, subject: str, cv: cuda.CudaVersion,
             evidence: tuple[Evidence, ...]) -> Result:
    """CUDA newer than the shipped table and no driver-reported CUDA version to decide:
    unknown (a stale table is never an error)."""
    return Result(Status.SKIP, subject,
                  f"unknown: CUDA {cv.text} is newer than the {a.table_name} (table from "
                  f"{a.table.read}, newest CUDA {cuda.vstr(a.table.newest())}); the driver's "
                  "own CUDA version decides, which nvidia-smi reports only when scanning the "
                  "real / live; refresh checks/data/cuda_drivers.json",
                  evidence=evidence, data={"cuda": cv.text, "table_read": a.table.read})


def _by_driver_cuda(a: _Against, subject: str, cv: cuda.CudaVersion,
                    evidence: tuple[Evidence, ...], compat_lib: gs.Lib | None,
                    what: str) -> Result | None:
    """The running driver's own CUDA version (nvidia-smi, live) decides: the release rule
    needs it at least ``cv``'s major.minor, minor-version compatibility at least its major.
    ``None`` (the table decides) without it, or when a forward-compatibility libcuda may
    carry what the driver does not."""
    dc = a.driver_cuda
    if dc is None:
        return None
    ok = (cv.major, cv.minor) <= dc if a.full else cv.major <= dc[0]
    if not ok and compat_lib is not None:
        return None
    shown = f"{dc[0]}.{dc[1]}"
    need = f"{cv.major}.{cv.minor}" if a.full else f"{cv.major}.x"
    ev = tuple(e for e in (a.driver_cuda_ev, *evidence) if e is not None)
    data = {"cuda": cv.text, "driver_cuda": shown, "basis": "driver-reported CUDA version",
            "driver": a.drv.version if a.drv else None}
    if ok:
        return Result(Status.PASS, subject, f"{what} needs a driver supporting CUDA {need}; "
                      f"the driver reports CUDA {shown} (nvidia-smi)", expected=f">= {need}",
                      actual=shown, evidence=ev, data=data)
    req = a.table.required(cv, a.full)
    rem = (_install(a, req[0], what) if req else Remediation(
        f"{what} needs a driver supporting CUDA {need}: install a newer driver branch."))
    return Result(Status.FAIL, subject, f"{what} needs a driver supporting CUDA {need} but "
                  f"the driver reports CUDA {shown} (nvidia-smi): CUDA calls fail with 'CUDA "
                  "driver version is insufficient for CUDA runtime version'",
                  expected=f">= {need}", actual=shown, evidence=ev, data=data,
                  remediation=rem)


def _decide(a: _Against, subject: str, cv: cuda.CudaVersion,
            evidence: tuple[Evidence, ...], compat_lib: gs.Lib | None, what: str) -> Result:
    """One CUDA user (``what``, built for ``cv``) against the driver: its own CUDA version
    where nvidia-smi reports it, else the shipped table."""
    by_driver = _by_driver_cuda(a, subject, cv, evidence, compat_lib, what)
    if by_driver is not None:
        return by_driver
    req = a.table.required(cv, a.full)
    if req is None:
        return _unknown(a, subject, cv, evidence)
    minimum, basis = req
    data: dict[str, Any] = {"cuda": cv.text, "required": minimum, "basis": basis,
                            "table_read": a.table.read}
    drv = a.drv
    if drv is None:
        return Result(Status.FAIL, subject, f"{what} needs driver >= {minimum} ({basis}) "
                      "but no NVIDIA driver is installed", expected=f">= {minimum}",
                      actual="none", evidence=evidence, data=data,
                      remediation=_install(a, minimum, what))
    ev = (drv.evidence, *evidence)
    data["driver"] = drv.version
    if cuda.driver_ge(drv.version, minimum):
        return Result(Status.PASS, subject, f"{what} needs driver >= {minimum} ({basis}); "
                      f"the {drv.what} is {drv.version}", expected=f">= {minimum}",
                      actual=drv.version, evidence=ev, data=data)
    if compat_lib and cuda.driver_ge(compat_lib.version, minimum) and \
            cuda.vtuple(compat_lib.version) > cuda.vtuple(drv.version):
        return _via_compat(a, subject, what, minimum, basis, compat_lib, ev, data)
    return Result(Status.FAIL, subject,
                  f"{what} needs driver >= {minimum} ({basis}) but the {drv.what} is "
                  f"{drv.version}: CUDA calls fail with 'CUDA driver version is "
                  "insufficient for CUDA runtime version'", expected=f">= {minimum}",
                  actual=drv.version, evidence=ev, data=data,
                  remediation=_install(a, minimum, what))


def _toolkit(a: _Against, t: gs.Toolkit, loader_compat: gs.Lib | None) -> Result:
    """One CUDA toolkit: its own compat libcuda, else one in the loader path, may help."""
    if t.problem or t.version is None:
        return Result(Status.ERROR, t.name, f"toolkit version unknown: {t.problem}")
    label = f"CUDA toolkit {t.version.text}" + (" (the /usr/local/cuda default)"
                                                if t.default else "")
    return _decide(a, t.name, t.version, (t.evidence,) if t.evidence else (),
                   t.compat or loader_compat, label)


def _framework(a: _Against, f: gs.Framework, loader_compat: gs.Lib | None) -> Result:
    """One framework build: CPU and ROCm builds need no NVIDIA driver; a build known only
    by its CUDA major is judged by minor-version compatibility."""
    if f.problem:
        return Result(Status.ERROR, f.subject, f"cannot tell how {f.name} was built: "
                      f"{f.problem}", evidence=(f.evidence,))
    if f.kind == "cpu":
        return Result(Status.SKIP, f.subject, f"{f.name} {f.version} is a CPU-only build "
                      "(torch.version.cuda is None): it needs no NVIDIA driver",
                      evidence=(f.evidence,))
    if f.kind == "rocm":
        return Result(Status.SKIP, f.subject, f"{f.name} {f.version} is a ROCm build (HIP "
                      f"{f.hip}): it uses AMD's ROCm stack, not the NVIDIA driver",
                      evidence=(f.evidence,))
    cv = f.cuda
    if cv is None and f.cuda_major is not None:
        if a.full:
            return Result(Status.SKIP, f.subject, f"{f.name} {f.version} is built for CUDA "
                          f"{f.cuda_major} but its CUDA minor version is unknown (no "
                          "nvidia-cuda-runtime wheel): only minor-version compatibility "
                          "applies", evidence=(f.evidence,))
        cv = cuda.CudaVersion(f.cuda_major, 0, None, str(f.cuda_major))
        label = f"CUDA {f.cuda_major}.x"
    else:
        assert cv is not None
        label = f"CUDA {cv.text}"
    wheels = ""
    if f.wheels:
        wheels = " with " + ", ".join(f"{n} {v}" for n, v in sorted(f.wheels.items())[:3])
    return _decide(a, f.subject, cv, (f.evidence,), loader_compat,
                   f"{f.name} {f.version} ({label}{wheels})")


def _driver_cuda(host: Host, timeout: float) -> tuple[tuple[int, int] | None,
                                                      Evidence | None]:
    """The CUDA version the running driver reports (``cuda_version`` of ``nvidia-smi -q
    -x``, the run every ``gpu.*`` rule shares); only when scanning the real / live."""
    if not host.allow_commands:
        return None, None
    from aiaudit.linux.gpu import nvsmi  # nvidia-smi's reader: only where it runs

    got = nvsmi.query(host, timeout)
    if isinstance(got, str) or got.cuda is None:
        return None, None
    return got.cuda, Evidence.command(" ".join(nvsmi.SMI_ARGV),
                                      f"driver {got.driver_version}, CUDA {got.cuda_text}")


def run(ctx: CheckContext) -> Iterator[Result]:
    """The driver is new enough for each CUDA toolkit and framework build."""
    host, p = ctx.host, ctx.params
    blocked = driver.gate(host, p, "cuda")
    if blocked:
        yield blocked
        return
    dc, dc_ev = _driver_cuda(host, float(p["timeout"]))
    a = _Against(host, p, gs.driver_table(), p["table"] == "release",
                 driver.driver_version(host), dc, dc_ev)
    tks = gs.toolkits(host) if "toolkits" in p["targets"] else []
    fws = (gs.frameworks(host, p["python_envs"], p["venv_roots"], p["search_homes"])
           if "frameworks" in p["targets"] else [])
    if not tks and not fws:
        yield Result(Status.SKIP, "cuda", "no CUDA toolkit (/usr/local/cuda-*) and no PyTorch "
                     "or JAX build in the Python environments found: nothing needs a driver")
        return
    loader_compat = next(iter(gs.user_side(host).compat_in_path), None)
    for t in tks:
        yield _toolkit(a, t, loader_compat)
    for f in fws:
        yield _framework(a, f, loader_compat)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.cuda_driver``."""
    return [CheckSpec(
        id="gpu.cuda_driver", title="The NVIDIA driver is new enough for each CUDA user",
        run=run,
        params_schema=driver.schema({
            "table": {"enum": ["minor_compat", "release"], "default": "minor_compat",
                      "description": "minor_compat: CUDA release notes Table 2 (per CUDA "
                                     "major); release: Table 3 (driver of each release)"},
            "targets": {"type": "array", "items": {"enum": ["toolkits", "frameworks"]},
                        "default": ["toolkits", "frameworks"], "uniqueItems": True},
            "forward_compat": compat.POLICY_PARAM,
            "timeout": {"type": "number", "minimum": 1, "maximum": 60, "default": 15,
                        "description": "seconds nvidia-smi may take (live, real / only)"},
            **ENV_PARAMS}),
        description=(
            "Live on the real /: the CUDA version the driver reports (nvidia-smi -q -x) "
            "decides for each /usr/local/cuda-* toolkit (version.json, version.txt, CUDA "
            "wheel dist-info, cuda.h or the nvcc banner, never run) and each PyTorch "
            "(torch/version.py, parsed) or JAX CUDA build in system, conda and venv site "
            "directories. Otherwise the driver (kernel module, else libcuda) against "
            "NVIDIA's minimum driver in checks/data/cuda_drivers.json; a CUDA release "
            "newer than that table is 'unknown, table from DATE' (skip), never an error."))]
