"""Every GPU rule's verdict on a live host made to look like each real capture of the corpus
(``tests/fixtures/gpu``, see PROVENANCE.md): the real ``aiaudit scan`` of ``/``, live, with
commands, in a private mount namespace (``unshare -m``, root only; nothing outside it
changes) where

- ``nvidia-smi`` on the real system's path (an overlay on ``/usr/sbin``) prints the capture
  for ``-q -x`` and refuses any other arguments (derived XML for the ``-q`` text captures);
- ``/proc/driver/nvidia`` has the module's ``version`` line for the capture's driver and one
  ``gpus/<bus>/information`` per GPU; ``/sys/bus/pci/devices`` one NVIDIA 3D controller per
  GPU; ``/sys/module`` nvidia (its version), nvidia_uvm and nvidia_modeset;
- ``/usr/local`` holds the user-space driver libraries of that version (``nvidia/lib64``,
  named in ``/etc/ld.so.conf``) and the capture's CUDA toolkits (``version.json``, or the
  pip-wheel layout); ``/etc/modprobe.d`` blacklists nouveau and ``/etc/systemd/system``
  enables nvidia-persistenced, as a driver installation does.

These environment files are hand-made (the version line uses the proprietary module's
format of the real banners in corpus.json); the GPU state all comes from the capture.  The
verdicts asserted are those recorded in ``corpus.json`` from each capture's facts: per GPU
for ECC, memory errors, clock slowdowns and persistence mode, per toolkit for the CUDA
rules, and what the environment implies for the others.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import AIAUDIT_SCRIPT
from tests.linux.gpu import corpus

pytestmark = pytest.mark.slow

SCAN = [c for c in corpus.captures() if c["scan"]]

NAMESPACE_EXPECT = {
    "GPU-DRIVER-LIBRARY-MATCH": "pass", "GPU-COUNT": "pass", "GPU-NOUVEAU-DISABLED": "pass",
    "GPU-NVIDIA-UVM-AVAILABLE": "pass", "GPU-FABRICMANAGER": "skip",
    "GPU-PEERMEM-LOADED": "skip", "GPU-CUDA-FORWARD-COMPAT": "skip"}
"""What the environment built here implies for the rules that do not read nvidia-smi."""

UNIT = ("[Unit]\nDescription=NVIDIA Persistence Daemon\n[Service]\nType=forking\n"
        "ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced\n"
        "[Install]\nWantedBy=multi-user.target\n")
NVCC = b"\x7fELF\0\0Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0\0"


def _need() -> None:
    why = None
    if os.geteuid() != 0:
        why = "needs root (a private mount namespace)"
    elif shutil.which("unshare") is None or shutil.which("mount") is None:
        why = "needs unshare and mount (util-linux)"
    elif not AIAUDIT_SCRIPT.exists():
        why = "aiaudit is not installed in the venv"
    elif not all(os.path.isdir(d) for d in ("/proc/driver", "/sys/bus/pci/devices",
                                            "/sys/module", "/usr/sbin", "/usr/local")):
        why = "needs /proc/driver, /sys/bus/pci/devices, /sys/module to mount over"
    else:
        probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
        if probe.returncode != 0:
            why = f"unshare -m fails: {probe.stderr.decode(errors='replace').strip()}"
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"{why}: CI must run this test")
        pytest.skip(why)


def _bdf(bus_id: str) -> str:
    """nvidia-smi's ``00000000:1B:00.0`` as sysfs and /proc name it: ``0000:1b:00.0``."""
    dom, rest = bus_id.split(":", 1)
    return f"{int(dom, 16):04x}:{rest.lower()}"


def _write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)


def _toolkit(local: Path, tk: dict) -> None:
    d = local / f"cuda-{tk['version']}"
    if tk["layout"] == "version.json":
        _write(d / "version.json", json.dumps(
            {"cuda": {"name": "CUDA SDK", "version": f"{tk['version']}.0"}}))
        return
    _write(d / "bin" / "nvcc", NVCC)
    major, minor = tk["version"].split(".")
    for name in (f"nvidia_cuda_runtime-{major}.{minor}.96", f"nvidia_cuda_nvcc-{major}.{minor}.88"):
        _write(d / "dist-info" / f"{name}.dist-info" / "METADATA", "Metadata-Version: 2.1\n")


def _environment(d: Path, cap: dict) -> list[tuple[str, str, str]]:
    """Build the case's files under ``d``; the mounts as (kind, source, target)."""
    drv = cap["driver"]
    smi = d / "smi.xml"
    smi.write_text(corpus.smi_xml(cap))
    _write(d / "sbin" / "nvidia-smi", f'#!/bin/sh\necho "$*" >> {d}/smi.calls\n'
           f'[ "$*" = "-q -x" ] || {{ echo "Invalid combination of input arguments." >&2; '
           f'exit 2; }}\nexec /bin/cat {smi}\n')
    (d / "sbin" / "nvidia-smi").chmod(0o755)
    (d / "sbin-work").mkdir()
    _write(d / "proc" / "nvidia" / "version",
           f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {drv}  Thu Jan  1 00:00:00 UTC "
           "2026\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
    for g in cap["gpus"]:
        bdf = _bdf(g["bus_id"])
        _write(d / "proc" / "nvidia" / "gpus" / bdf / "information",
               f"Model: \t\t {g['name']}\nBus Location: \t {bdf}\n")
        _write(d / "pci" / bdf / "vendor", "0x10de\n")
        _write(d / "pci" / bdf / "class", "0x030200\n")
    _write(d / "module" / "nvidia" / "version", f"{drv}\n")
    for m in ("nvidia_uvm", "nvidia_modeset"):
        (d / "module" / m).mkdir(parents=True)
    lib = d / "local" / "nvidia" / "lib64"
    for stem in ("libcuda.so", "libnvidia-ml.so"):
        _write(lib / f"{stem}.{drv}", b"\x7fELF")
        (lib / f"{stem}.1").symlink_to(f"{stem}.{drv}")
    for tk in cap["toolkits"]:
        _toolkit(d / "local", tk)
    _write(d / "ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n/usr/local/nvidia/lib64\n")
    _write(d / "modprobe" / "nvidia-blacklists-nouveau.conf",
           "blacklist nouveau\noptions nouveau modeset=0\n")
    unit = d / "systemd" / "nvidia-persistenced.service"
    _write(unit, UNIT)
    (d / "systemd" / "multi-user.target.wants").mkdir()
    (d / "systemd" / "multi-user.target.wants" / unit.name).symlink_to(
        "/etc/systemd/system/nvidia-persistenced.service")
    return [("overlay", f"lowerdir=/usr/sbin,upperdir={d}/sbin,workdir={d}/sbin-work",
             "/usr/sbin"),
            ("bind", f"{d}/proc", "/proc/driver"), ("bind", f"{d}/pci", "/sys/bus/pci/devices"),
            ("bind", f"{d}/module", "/sys/module"), ("bind", f"{d}/local", "/usr/local"),
            ("bind", f"{d}/ld.so.conf", "/etc/ld.so.conf"),
            ("bind", f"{d}/modprobe", "/etc/modprobe.d"),
            ("bind", f"{d}/systemd", "/etc/systemd/system")]


def _scan(d: Path, mounts: list[tuple[str, str, str]]) -> dict:
    """``aiaudit scan`` of the live ``/`` inside a private mount namespace."""
    cmds = [(f"mount -t overlay overlay -o {src} {tgt}" if kind == "overlay" else
             f"mount --bind {src} {tgt}") for kind, src, tgt in mounts]
    scan = (f"exec {AIAUDIT_SCRIPT} scan --ruleset dl-training --only {' '.join(corpus.RULES)}"
            f" --format json --output json:{d}/report.json --timeout 120")
    res = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-ec",
                          " && ".join([*cmds, scan])], capture_output=True, text=True,
                         timeout=180, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                           "LC_ALL": "C", "HOME": str(d)})
    assert res.returncode in (0, 1), res.stderr[-2000:]
    return json.loads((d / "report.json").read_text())  # type: ignore[no-any-return]


def _by_rule(report: dict) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for r in report["results"]:
        out.setdefault(r["rule_id"], {})[r["subject"]] = r
    return out


@pytest.mark.parametrize("cap", SCAN, ids=[c["file"].split("/", 1)[1] for c in SCAN])
def test_gpu_rules_on_a_host_that_looks_like_the_capture(tmp_path: Path, cap: dict) -> None:
    _need()
    got = _by_rule(_scan(tmp_path, _environment(tmp_path, cap)))
    # one nvidia-smi run per scan, shared by every rule that reads it
    assert (tmp_path / "smi.calls").read_text().splitlines() == ["-q -x"]
    assert set(got) == set(corpus.RULES), sorted(set(corpus.RULES) ^ set(got))
    errors = [(rule, s, r["message"]) for rule, subs in got.items() for s, r in subs.items()
              if r["status"] == "error"]
    assert not errors, errors
    wrong = []
    for rule, want in NAMESPACE_EXPECT.items():
        wrong += [(rule, s, r["status"], r["message"]) for s, r in got[rule].items()
                  if r["status"] != want]
    for i, g in enumerate(cap["gpus"]):
        for prop, rule in corpus.PER_GPU.items():
            subject = (f"GPU {i} ({g['bus_id']})" if prop == "persistence"
                       else f"GPU {g['bus_id']}")
            r = got[rule].get(subject)
            if r is None or r["status"] != g["expect"][prop]:
                wrong.append((rule, subject, r and r["status"], g["expect"][prop],
                              r and r["message"]))
    for tk in cap["toolkits"]:
        name = (f"CUDA {tk['version']}.0 (/usr/local/cuda-{tk['version']})"
                if tk["layout"] == "version.json"
                else f"CUDA {tk['version']} (/usr/local/cuda-{tk['version']})")
        for rule, want in tk["expect"].items():
            r = got[rule].get(name)
            if r is None or r["status"] != want:
                wrong.append((rule, name, r and r["status"], want, r and r["message"],
                              sorted(got[rule])))
    if not cap["toolkits"]:
        for rule in ("GPU-DRIVER-CUDA-MINOR-COMPAT", "GPU-DRIVER-CUDA-RELEASE"):
            assert [r["status"] for r in got[rule].values()] == ["skip"]
    assert not wrong, "\n".join(map(str, wrong))
