"""``gpu.cuda_driver``: the NVIDIA driver is new enough for each CUDA toolkit and each CUDA
build of PyTorch or JAX on the host.

Gathers the driver version (:func:`aiaudit.linux.gpu.driver.driver_version`), the
``/usr/local/cuda-*`` toolkits (``version.json`` / ``version.txt``) and the framework
builds of the system, conda and venv site directories (``torch/version.py`` parsed with
``ast``, ``*.dist-info`` names): :mod:`aiaudit.linux.gpu.stack`.  Decides against NVIDIA's
minimum driver per CUDA version (CUDA release notes, Table 2 "minor version compatibility"
or Table 3 "toolkit driver"; shipped in ``checks/data/cuda_drivers.json`` with its source
and date), accepting a newer forward-compatibility libcuda where
:mod:`aiaudit.linux.gpu.compat` allows it.  Nothing from the scanned root is run or
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

ENVS: dict[str, Any] = {
    "python_envs": {"type": "array", "items": {"type": "string", "pattern": "^/"},
                    "default": [],
                    "description": "Python env prefixes or site-packages dirs to inspect "
                                   "(besides system, conda and venv locations)"},
    "venv_roots": {"type": "array", "items": {"type": "string", "pattern": "^/"},
                   "default": ["/opt/venvs", "/opt/venv"],
                   "description": "directories holding venvs (<root>/<name>/lib/python3*)"},
    "search_homes": {"type": "boolean", "default": True,
                     "description": "look for ~/miniconda3, ~/anaconda3, ~/miniforge3 of "
                                    "(at most 64) users under /home; turn off where /home "
                                    "is an automounter"},
}


@record
class _Against:
    """What every CUDA user is compared with in one run of the rule."""

    host: Host
    params: Mapping[str, Any]
    table: cuda.DriverTable
    full: bool
    """Table 3 (the driver of each release) rather than minor-version compatibility."""
    drv: gs.Version | None

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


def _decide(a: _Against, subject: str, cv: cuda.CudaVersion,
            evidence: tuple[Evidence, ...], compat_lib: gs.Lib | None, what: str) -> Result:
    """One CUDA user (``what``, built for ``cv``) against the driver."""
    req = a.table.required(cv, a.full)
    if req is None:
        return Result(Status.ERROR, subject,
                      f"CUDA {cv.text} is not in the {a.table_name} (read {a.table.read}, "
                      f"newest {cuda.vstr(a.table.newest())}); extend "
                      "checks/data/cuda_drivers.json", evidence=evidence)
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


def run(ctx: CheckContext) -> Iterator[Result]:
    """The driver is new enough for each CUDA toolkit and framework build."""
    host, p = ctx.host, ctx.params
    blocked = driver.gate(host, p, "cuda")
    if blocked:
        yield blocked
        return
    a = _Against(host, p, gs.driver_table(), p["table"] == "release",
                 driver.driver_version(host))
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
            "forward_compat": compat.POLICY_PARAM, **ENVS}),
        description=(
            "Compares the driver (kernel module, else libcuda) with NVIDIA's minimum "
            "driver for each /usr/local/cuda-* toolkit (version.json/version.txt) and each "
            "PyTorch (torch/version.py, parsed) or JAX CUDA build in system, conda and venv "
            "site directories; table shipped in checks/data/cuda_drivers.json."))]
