"""What decides a sysctl at boot besides the files (:mod:`aiaudit.linux.sysctl.boot`): the
applier, procps' init script, kernel defaults of the running kernel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiaudit.core.host import Host


def test_sbin_init_decides_applier(make_root) -> None:
    from aiaudit.linux.sysctl import boot as sysctl_boot

    sysv = make_root({"/sbin/init": "", "/usr/lib/systemd/systemd": ""})
    assert sysctl_boot.applier(Host(str(sysv), live=False)).name == "procps"
    sd = make_root({"/lib/systemd/systemd": ""}, links={"/sbin/init": "/lib/systemd/systemd"})
    assert sysctl_boot.applier(Host(str(sd), live=False)).name == "systemd-sysctl"


def test_numa_balancing_on_this_kernel() -> None:
    """The running kernel: what its own config says is what the check takes as default."""
    if not os.path.exists("/proc/config.gz") or not os.path.exists(
            "/proc/sys/kernel/numa_balancing"):
        pytest.skip("kernel without /proc/config.gz or NUMA balancing")
    import gzip

    text = gzip.decompress(open("/proc/config.gz", "rb").read()).decode()
    from aiaudit.linux.sysctl import boot as sysctl_boot

    kd = sysctl_boot.kernel_default(Host("/", live=True), "kernel/numa_balancing")
    assert kd is not None
    if "CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y" not in text:
        assert kd.value == "0"


def test_procps_init_script_runs_sysctl_system() -> None:
    """What the procps applier models: Debian's /etc/init.d/procps runs `sysctl --system`
    (whose order the oracle tests above check against the real program)."""
    script = Path("/etc/init.d/procps")
    if not script.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail("procps' init script is missing")
        pytest.skip("procps' init script is not installed")
    lines = [ln.split("#", 1)[0] for ln in script.read_text().splitlines()]
    assert any("$DAEMON" in ln and "--system" in ln for ln in lines)
    assert any(ln.strip().startswith("DAEMON=") and ln.strip().endswith("sysctl")
               for ln in lines)
