"""Software facts: kernel, GPU driver, CUDA toolkit and the packages that matter.

The kernel release and command line are runtime facts (``/proc/sys/kernel/osrelease``,
``/proc/cmdline``); offline the release is the image's one kernel (``/lib/modules/<rel>``)
when there is exactly one.  The driver is the loaded module's version live and the
installed one offline (:func:`aiaudit.linux.gpu.stack.kernel_side`); the toolkit is the
one ``/usr/local/cuda`` selects (:func:`aiaudit.linux.gpu.stack.toolkits`, read, never
run).  Packages come from the dpkg status file and the SQLite rpm database, files both.
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.inventory.hardware import text
from aiaudit.linux.inventory.model import Fact, Scalar, fact

PACKAGE_PREFIXES = (
    "nvidia-driver", "nvidia-dkms", "nvidia-kernel-open", "nvidia-open", "kmod-nvidia",
    "libnvidia-compute", "cuda-drivers", "cuda-toolkit", "cuda-compat", "libnccl",
    "nvidia-container-toolkit", "nvidia-fabricmanager", "nvidia-imex", "datacenter-gpu-manager",
    "mlnx-ofed", "ofed-scripts", "rdma-core", "rocm-core", "amdgpu-dkms",
)
"""Packages whose version a node class pins: the driver, toolkit, NCCL, container
toolkit, Fabric Manager and IMEX, DCGM, OFED, ROCm and amdgpu."""
MAX_PACKAGES = 256
"""Most packages recorded (a class with more is pinned on the first ones by name)."""
_BOOT_WORDS = ("BOOT_IMAGE=", "initrd=")
"""Command-line words that name files of one boot, not the class (the release is pinned
on its own)."""


def kernel_facts(host: Host) -> list[Fact]:
    """Kernel release and command line."""
    if host.live:
        out: list[Fact] = []
        if rel := text(host, "/proc/sys/kernel/osrelease"):
            out.append(fact("kernel.release", rel,
                            "/proc/sys/kernel/osrelease"))
        if cmd := text(host, "/proc/cmdline"):
            words = [w for w in cmd.split() if not w.startswith(_BOOT_WORDS)]
            out.append(fact("kernel.cmdline", " ".join(words), "/proc/cmdline"))
        return out
    releases = [r for r in host.listdir("/lib/modules") if host.is_dir(f"/lib/modules/{r}")]
    if len(releases) == 1:
        return [fact("kernel.release", releases[0],
                     f"/lib/modules/{releases[0]}", live=False)]
    return []


def driver_facts(host: Host) -> list[Fact]:
    """The NVIDIA driver version and the default CUDA toolkit."""
    from aiaudit.linux.gpu import stack

    out: list[Fact] = []
    try:
        ver = stack.kernel_side(host).effective
    except (HostError, ParseError):
        ver = None
    if ver is not None:
        out.append(fact("gpu.nvidia.driver", ver.version,
                        ver.evidence.path or ver.evidence.source, live=host.live))
    try:
        kits = [t for t in stack.toolkits(host) if t.default and t.version]
    except (HostError, ParseError):
        kits = []
    if kits and kits[0].version:
        kit = kits[0]
        ev = kit.evidence
        out.append(fact("cuda.toolkit", kit.version.text if kit.version else "",
                        (ev.path or ev.source) if ev else kit.path, live=False))
    return out


def package_facts(host: Host) -> list[Fact]:
    """Versions of the packages that matter (dpkg, or the rpm database)."""
    from aiaudit.linux.gpu import stack
    from aiaudit.linux.packages.installed import dpkg_installed

    found: dict[str, Scalar] = {}
    source = "/var/lib/dpkg/status"
    try:
        for name, info in dpkg_installed(host, PACKAGE_PREFIXES).items():
            found[name] = info.get("Version", "")
    except (HostError, ParseError):
        pass
    if not found:
        source = stack.RPMDB_SQLITE
        found = {n: v for n, v in stack.rpm_packages(host).items()
                 if n.startswith(PACKAGE_PREFIXES)}
    if not found:
        return []
    pinned = dict(sorted(found.items())[:MAX_PACKAGES])
    return [fact("packages", pinned, source, live=False)]


_AMD_PER_GPU = {"vbios": "gpu.amd.vbios", "compute_partition": "gpu.amd.compute_partition",
                "memory_partition": "gpu.amd.memory_partition"}
"""Per-GPU AMD facts of :func:`aiaudit.linux.amdgpu.facts.baseline_facts` kept by the class
(the PCIe link is ``gpu.pcie.*`` for both vendors)."""


def amd_facts(host: Host) -> list[Fact]:
    """The AMD facts (:func:`aiaudit.linux.amdgpu.facts.baseline_facts`: count, model, each
    GPU's VBIOS and partition modes live; the amdgpu driver and ROCm release, offline too)
    under the class's names."""
    from aiaudit.linux.amdgpu.facts import baseline_facts

    out: list[Fact] = []
    per_gpu: dict[str, dict[str, Scalar]] = {}
    sources: dict[str, str] = {}
    for f in baseline_facts(host):
        path = f.evidence.path or f.evidence.source
        if f.name == "amd.gpu.count":
            out.append(fact("gpu.amd.count", int(f.value), path))
        elif f.name == "amd.gpu.model":
            out.append(fact("gpu.amd.model", f.value, path))
        elif f.name == "amd.driver":
            out.append(fact("gpu.amd.driver", f.value, path, live=host.live))
        elif f.name == "amd.rocm":
            out.append(fact("rocm.release", f.value, path, live=False))
        else:
            bdf, _, attr = f.name.removeprefix("amd.gpu.").rpartition(".")
            if attr in _AMD_PER_GPU:
                per_gpu.setdefault(_AMD_PER_GPU[attr], {})[bdf] = f.value
                sources[_AMD_PER_GPU[attr]] = path.rsplit("/", 1)[-1]
    for name, values in per_gpu.items():
        out.append(fact(name, values, f"/sys/bus/pci/devices/<BDF>/{sources[name]}"))
    return out
