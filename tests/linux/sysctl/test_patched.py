"""Kernel defaults a distribution patches (issue 27): known only for the kernel that
boots, from its builder; an unknown default is unknown, never a failure, never a drift
claim.  The Debian values were read from Debian 12's and 13's kernel images
(:mod:`tests.linux.sysctl.vmlinux_oracle`; ``tests/checks/sysctl/test_debian13_root.py``
repeats it on a debootstrap root when it can build one)."""

from __future__ import annotations

import pytest

from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Status
from aiaudit.linux.sysctl import boot as sysctl_boot
from aiaudit.linux.sysctl import patched
from tests.helpers import run_check

REL = "6.12.117+deb13-amd64"
DEBIAN_KERNEL = (f"Package: linux-image-{REL}\nStatus: install ok installed\n"
                 "Maintainer: Debian Kernel Team <debian-kernel@lists.debian.org>\n"
                 "Architecture: amd64\nSource: linux-signed-amd64 (6.12.117+1)\n"
                 "Version: 6.12.117-1\n")
"""The stanza of Debian 13's kernel as debootstrap installs it (abridged)."""
UBUNTU_KERNEL = ("Package: linux-image-6.8.0-45-generic\nStatus: install ok installed\n"
                 "Maintainer: Canonical Kernel Team <kernel-team@lists.ubuntu.com>\n"
                 "Version: 6.8.0-45.45\n")
SYSTEMD = {"/usr/lib/systemd/systemd": ""}
SYMLINKS = {"key": "fs.protected_symlinks", "op": "eq", "value": 1, "kernel_default": 0}
PTRACE = {"key": "kernel.yama.ptrace_scope", "min": 1, "max": 3, "kernel_default": 1}


def _debian13(make_root, **extra):
    return make_root({**SYSTEMD, f"/boot/vmlinuz-{REL}": "", f"/boot/config-{REL}": "",
                      "/var/lib/dpkg/status": DEBIAN_KERNEL, **extra})


def _one(results):
    [r] = results
    return r


def test_debian_kernel_starts_link_protection_on(make_root) -> None:
    r = _one(run_check("kernel.sysctl", _debian13(make_root), SYMLINKS))
    assert (r.status, r.aspect, r.actual) == (Status.PASS, Aspect.PERSISTED, "1")
    assert "Debian's kernel patch" in r.message and REL in r.message
    assert any(e.path == "/var/lib/dpkg/status" for e in r.evidence)


def test_debian_kernel_has_yama_off_so_ptrace_rule_fails(make_root) -> None:
    r = _one(run_check("kernel.sysctl", _debian13(make_root), PTRACE))
    assert r.status is Status.FAIL and "kernel default 0" in r.message
    assert r.expected != r.actual


@pytest.mark.parametrize("files,why", [
    pytest.param({}, "no kernel in the root", id="no-kernel"),
    pytest.param({"/boot/vmlinuz-6.8.0-45-generic": "",
                  "/var/lib/dpkg/status": UBUNTU_KERNEL},
                 "Canonical Kernel Team", id="other-builder"),
    pytest.param({"/boot/vmlinuz-6.1.0-1": "", "/boot/vmlinuz-6.2.0-1": ""},
                 "the 2 kernels in the root", id="which-boots-unknown"),
    pytest.param({"/usr/lib/modules/6.9.0-custom/modules.order": ""},
                 "no package linux-image-6.9.0-custom", id="no-package"),
    pytest.param({"/boot/vmlinuz-5.10.0-30-amd64": "", "/var/lib/dpkg/status":
                  DEBIAN_KERNEL.replace(REL, "5.10.0-30-amd64")},
                 "not one whose patches aiaudit knows", id="older-debian-series"),
])
def test_unknown_builder_is_an_error_offline_never_a_failure(make_root, files, why) -> None:
    r = _one(run_check("kernel.sysctl", make_root({**SYSTEMD, **files}), SYMLINKS))
    assert r.status is Status.ERROR and r.actual is None
    assert "kernel default unknown" in r.message and why in r.message
    assert "(Debian: 1, upstream: 0)" in r.message


def test_a_file_still_decides_before_any_default(make_root) -> None:
    root = make_root({**SYSTEMD, "/usr/lib/sysctl.d/99-protect-links.conf":
                      "fs.protected_symlinks = 1\n"})
    r = _one(run_check("kernel.sysctl", root, SYMLINKS))
    assert r.status is Status.PASS and "99-protect-links.conf:1" in r.message


def test_several_debian_kernels_agree(make_root) -> None:
    other = DEBIAN_KERNEL.replace(REL, "6.12.100+deb13-amd64")
    root = make_root({**SYSTEMD, f"/boot/vmlinuz-{REL}": "",
                      "/boot/vmlinuz-6.12.100+deb13-amd64": "",
                      "/var/lib/dpkg/status": DEBIAN_KERNEL + "\n" + other})
    pd = patched.patched_default(Host(str(root)), "fs/protected_hardlinks")
    assert pd is not None and pd.value == "1" and "one of the 2 kernels" in pd.text


def _live(make_root, proc_value: str, version: str, **files):
    return make_root({**SYSTEMD, "/proc/sys/fs/protected_symlinks": proc_value,
                      "/proc/sys/kernel/osrelease": "6.1.0-28-amd64\n",
                      "/proc/version": version, **files})


DEBIAN_PROC_VERSION = ("Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org) "
                       "(gcc-12 (Debian 12.2.0-14) 12.2.0) #1 SMP PREEMPT_DYNAMIC Debian "
                       "6.1.119-1 (2024-11-22)\n")


def test_live_debian_host_at_1_is_not_told_it_drifts(make_root) -> None:
    """The issue's report: both at 1 on a live Debian 13 host were "drift: reverts at
    reboot" with expected 1 and actual 1."""
    root = _live(make_root, "1\n", DEBIAN_PROC_VERSION)
    r = _one(run_check("kernel.sysctl", root, SYMLINKS, live=True))
    assert (r.status, r.aspect) == (Status.PASS, Aspect.RUNTIME)
    assert "Debian's kernel patch" in r.message


def test_live_unknown_kernel_passes_without_a_drift_claim(make_root) -> None:
    root = _live(make_root, "1\n", "Linux version 6.18.44-custom (builder@host) #1 SMP\n")
    r = _one(run_check("kernel.sysctl", root, SYMLINKS, live=True))
    assert (r.status, r.aspect) == (Status.PASS, Aspect.RUNTIME)
    assert "reboot may change it" in r.message and "drift" not in r.message


def test_drift_failure_names_both_values(make_root) -> None:
    """A real drift (a file sets 0, the runtime is 1): the actual value says both, so a FAIL
    never shows expected 1 and actual 1."""
    root = _live(make_root, "1\n", DEBIAN_PROC_VERSION,
                 **{"/etc/sysctl.d/50-x.conf": "fs.protected_symlinks = 0\n"})
    r = _one(run_check("kernel.sysctl", root, SYMLINKS, live=True))
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT)
    assert r.actual == "1 now, 0 at boot" and r.expected != r.actual


def test_patched_keys_have_their_upstream_values() -> None:
    assert set(patched.PATCHED) == set(patched.UPSTREAM)
    for key, by in patched.PATCHED.items():
        assert all(v != patched.UPSTREAM[key] for v, _ in by.values()), key


@pytest.mark.parametrize("line,value", [("CONFIG_BPF_UNPRIV_DEFAULT_OFF=y", "2"),
                                        ("# CONFIG_BPF_UNPRIV_DEFAULT_OFF is not set", "0")])
def test_unprivileged_bpf_default_from_config(make_root, line, value) -> None:
    root = make_root({f"/boot/config-{REL}": f"CONFIG_X=y\n{line}\n"})
    kd = sysctl_boot.kernel_default(Host(str(root)), "kernel/unprivileged_bpf_disabled")
    assert kd is not None and kd.value == value
    assert kd.evidence[0].source == f"boot/config-{REL}:2"


@pytest.mark.parametrize("possible,value", [("0-3", "32768"), ("0-127", "131072"),
                                            ("0-8191", "4194304")])
def test_pid_max_default_live_from_possible_cpus(make_root, possible, value) -> None:
    root = make_root({"/sys/devices/system/cpu/possible": possible + "\n"})
    kd = sysctl_boot.kernel_default(Host(str(root), live=True), "kernel/pid_max")
    assert kd is not None and kd.value == value


def test_pid_max_default_unknown_offline(make_root) -> None:
    kd = sysctl_boot.kernel_default(Host(str(make_root({}))), "kernel/pid_max")
    assert kd is not None and kd.value is None and "not known offline" in kd.text
