"""``gpu.nouveau``: nouveau is blacklisted (modprobe.d as kmod reads it, or the kernel
command line) and not loaded."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Aspect, Status
from tests.checks.readiness_trees import KO, NO_CMDLINE, gpu_host
from tests.helpers import run_check
from tests.linux.kmod.test_modinfo import make_ko


def test_nouveau_blacklisted_not_loaded_passes_live(make_root) -> None:
    files, links = gpu_host(**{"/etc/modprobe.d/nv.conf": "blacklist nouveau\n"})
    [r] = run_check("gpu.nouveau", make_root(files, links), live=True)
    assert r.status is Status.PASS and r.aspect is Aspect.RUNTIME


def test_nouveau_loaded_fails_runtime(make_root) -> None:
    files, links = gpu_host(**{"/etc/modprobe.d/nv.conf": "blacklist nouveau\n"})
    [r] = run_check("gpu.nouveau", make_root(files, links, dirs=("/sys/module/nouveau",)),
                    live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME
    assert r.remediation and r.remediation.snippets[0].path.startswith("/etc/modprobe.d/")


def test_nouveau_etc_file_masks_vendor_blacklist(make_root) -> None:
    """Same basename: /etc wins, and a /dev/null link masks the /usr/lib file (kmod)."""
    files = {"/usr/lib/modprobe.d/nvidia.conf": "blacklist nouveau\n",
             "/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko": make_ko("535.161.08")}
    [r] = run_check("gpu.nouveau", make_root(files))
    assert r.status is Status.PASS and r.aspect is Aspect.PERSISTED
    [r] = run_check("gpu.nouveau", make_root(files, {"/etc/modprobe.d/nvidia.conf": "/dev/null"}))
    assert r.status is Status.FAIL


@pytest.mark.parametrize("how", ["install nouveau /bin/false\n", "options nouveau modeset=0\n"])
def test_nouveau_other_ways_to_disable(make_root, how: str) -> None:
    files = {"/etc/modprobe.d/x.conf": how,
             "/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko": make_ko("535.161.08")}
    [r] = run_check("gpu.nouveau", make_root(files))
    assert r.status is Status.PASS


def test_nouveau_kernel_cmdline_blacklist(make_root) -> None:
    files = {"/etc/kernel/cmdline": "root=/dev/sda1 modprobe.blacklist=foo,nouveau\n",
             "/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko": make_ko("535.161.08")}
    [r] = run_check("gpu.nouveau", make_root(files))
    assert r.status is Status.PASS and "kernel command line" in r.message


def test_nouveau_offline_nothing_disables_it_names_what_was_looked_for(make_root) -> None:
    """No modprobe.d line and no command line: the kernel default (nouveau binds) decides;
    the evidence names the modprobe.d directories and command-line files looked at."""
    [r] = run_check("gpu.nouveau", make_root(KO))
    assert r.status is Status.FAIL and r.message.startswith(
        "no modprobe.d 'blacklist nouveau' and no modprobe.blacklist=nouveau: ")
    [ev] = r.evidence
    assert (ev.kind, ev.path) == ("default", None)
    assert ev.source == (
        "nouveau at boot: no blacklist, install or options modeset=0 for nouveau in "
        "etc/modprobe.d/*.conf, run/modprobe.d/*.conf, usr/local/lib/modprobe.d/*.conf, "
        "lib/modprobe.d/*.conf, usr/lib/modprobe.d/*.conf; no nouveau in modprobe.blacklist= "
        "or rd.driver.blacklist= or module_blacklist= and no nouveau.modeset=0 "
        f"({NO_CMDLINE})")
    assert ev.value.startswith("kernel default: nouveau loads")
    [r] = run_check("gpu.nouveau", make_root({**KO, "/etc/kernel/cmdline": "root=/dev/x\n"}))
    assert r.evidence[0].source.endswith(" and no nouveau.modeset=0 on etc/kernel/cmdline:1")
    # a line that decides is the evidence (file and line)
    [r] = run_check("gpu.nouveau", make_root({**KO, "/etc/modprobe.d/x.conf":
                                              "# keep\nblacklist nouveau\n"}))
    assert r.status is Status.PASS
    assert [(e.kind, e.path, e.line) for e in r.evidence] == [
        ("file", "/etc/modprobe.d/x.conf", 2)]
