"""What every ``gpu.*`` rule shares: whether GPU rules apply to the scanned root at all
(:func:`gate`), the driver version CUDA will meet (:func:`driver_version`) and how to
install a driver branch on the scanned distribution (:func:`install_driver`).

The parts of the stack come from :mod:`aiaudit.linux.gpu.stack` (read once per run); the
package names per distribution follow NVIDIA's CUDA installation guide ("Driver
Installation": ``cuda-drivers-<branch>``, the ``nvidia-driver:<branch>-dkms`` module
stream) and Ubuntu's ``nvidia-driver-<branch>-server`` packages.
"""

from __future__ import annotations

from typing import Any, Mapping

from aiaudit.core.host import Host
from aiaudit.core.model import Evidence, Remediation, Result, Snippet, Status
from aiaudit.linux import ldconf
from aiaudit.linux.gpu import stack as gs
from aiaudit.linux.packages.installed import DPKG_STATUS

REQUIRE_GPU: dict[str, Any] = {
    "type": "boolean", "default": False,
    "description": "fail instead of skip when there is no NVIDIA GPU and driver"}
"""The ``require_gpu`` param every rule behind :func:`gate` has."""

DEFAULT_BRANCH = 535
"""Driver branch a remediation names when nothing says which (an LTS branch)."""


def schema(props: Mapping[str, Any]) -> dict[str, Any]:
    """The params schema of a rule behind :func:`gate`: ``require_gpu`` and ``props``."""
    return {"type": "object", "additionalProperties": False,
            "properties": {"require_gpu": REQUIRE_GPU, **props}}


def distro(host: Host) -> str:
    """The scanned root's distribution family: :func:`aiaudit.linux.packages.install.family`."""
    from aiaudit.linux.packages.install import family

    return family(host)


def _install_how(family: str, branch: int) -> tuple[str, str]:
    """(command, explanation) installing driver ``branch`` on distro ``family``; no
    command where the family is unknown."""
    if family == "ubuntu":
        return (f"apt-get install nvidia-driver-{branch}-server",
                f"install driver branch {branch} or newer: Ubuntu's "
                f"nvidia-driver-{branch}-server (or cuda-drivers-{branch} from NVIDIA's CUDA "
                "repository)")
    if family == "debian":
        return (f"apt-get install cuda-drivers-{branch}",
                f"install driver branch {branch} or newer: cuda-drivers-{branch} from "
                "NVIDIA's CUDA repository (Debian's own nvidia-driver package carries one "
                "branch per release)")
    if family == "rhel":
        return (f"dnf module reset -y nvidia-driver && "
                f"dnf module install -y nvidia-driver:{branch}-dkms",
                f"install driver branch {branch} or newer: the nvidia-driver:{branch}-dkms "
                "module stream of NVIDIA's CUDA repository (:{branch}-open for open modules)")
    if family == "suse":
        return (f"zypper install cuda-drivers-{branch}",
                f"install driver branch {branch} or newer: cuda-drivers-{branch} (NVIDIA "
                "repository)")
    return "", (f"install an NVIDIA driver of branch {branch} or newer (package "
                f"cuda-drivers-{branch} in NVIDIA's CUDA repository)")


def install_driver(host: Host, branch: int, why: str) -> Remediation:
    """How to install driver branch ``branch`` (or newer) on the scanned distro."""
    cmd, how = _install_how(distro(host), branch)
    snippets = (Snippet.command(cmd, f"install driver branch {branch}"),) if cmd else ()
    return Remediation(f"{why}: {how}, then reboot.", snippets)


def _absent_reason(host: Host) -> str:
    if host.live:
        return ("no NVIDIA GPU on the PCI bus and no NVIDIA driver (nvidia module not loaded, "
                "no libcuda.so in the loader path)")
    return ("no NVIDIA driver in this root (no nvidia.ko under /lib/modules, no libcuda.so in "
            "the loader path, no driver package); a container image gets it from its host")


def _absent_evidence(host: Host, ks: gs.KernelSide, us: gs.UserSide
                     ) -> tuple[Evidence, ...]:
    """Where no NVIDIA driver was found: the module directories, the loader path, the
    package databases (file evidence where they exist) and, live, the PCI bus."""
    libs = " or ".join(f"{lib}.<version>" for lib in gs.LIBS)
    dirs = ", ".join(d.lstrip("/") for d in us.dirs) or (
        "no directory exists of etc/ld.so.conf's and "
        + ", ".join(d.lstrip("/") for d in ldconf.DEFAULT_DIRS))
    out = [gs.module_search_evidence(ks),
           Evidence.default(f"{libs} in the loader path: {dirs}", "none found")]
    dbs = [db for db in (DPKG_STATUS, gs.RPMDB_SQLITE) if host.is_file(db)]
    out += [Evidence.file(db, None, "no NVIDIA driver package") for db in dbs]
    if not dbs:
        out.append(Evidence.default("package databases: " + ", ".join(
            db.lstrip("/") for db in (DPKG_STATUS, gs.RPMDB_SQLITE)), "no such file"))
    if host.live:
        out.append(Evidence.runtime("/sys/bus/pci/devices", "no NVIDIA device"))
    return tuple(out)


def gate(host: Host, params: Mapping[str, Any], subject: str = "gpu") -> Result | None:
    """A SKIP (or, with ``require_gpu``, a FAIL) when there is neither an NVIDIA GPU nor an
    NVIDIA driver; ``None`` when the GPU rules apply."""
    ks, us, g = gs.kernel_side(host), gs.user_side(host), gs.gpus(host)
    if ks.effective or us.effective or us.package or g.driver or g.pci or ks.problems:
        return None
    why = _absent_reason(host)
    if params.get("require_gpu"):
        return Result(Status.FAIL, subject, f"{why}, but this ruleset requires GPUs",
                      expected="an NVIDIA GPU with its driver", actual="none",
                      evidence=_absent_evidence(host, ks, us),
                      remediation=install_driver(host, DEFAULT_BRANCH,
                                                 "This host must have GPUs"))
    return Result(Status.SKIP, subject, f"{why}: GPU rules do not apply")


def driver_version(host: Host) -> gs.Version | None:
    """The driver version that CUDA will meet: the kernel module (loaded, else installed),
    else the user-space libcuda, else the package database."""
    ks, us = gs.kernel_side(host), gs.user_side(host)
    if ks.effective:
        return ks.effective
    lib = us.effective.get("libcuda.so") or us.effective.get("libnvidia-ml.so")
    if lib:
        return gs.Version(lib.version, Evidence.file(lib.path, None, lib.version),
                          "user-space library")
    return us.package
