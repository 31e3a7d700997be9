"""modprobe.d as kmod reads it (:mod:`aiaudit.linux.kmod.config`), against kmod itself."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.kmod import config as kmodconfig

KMOD_CASES = {
    "lib-only": ({"/lib/modprobe.d/nvidia.conf": "blacklist nouveau\n"}, {}, True),
    "etc-overrides-lib": ({"/lib/modprobe.d/nvidia.conf": "blacklist nouveau\n",
                           "/etc/modprobe.d/nvidia.conf": "# emptied by the admin\n"}, {}, False),
    "etc-masks-lib": ({"/lib/modprobe.d/nvidia.conf": "blacklist nouveau\n"},
                      {"/etc/modprobe.d/nvidia.conf": "/dev/null"}, False),
    "not-a-conf-file": ({"/etc/modprobe.d/nvidia.txt": "blacklist nouveau\n"}, {}, False),
    "run-overrides-lib": ({"/lib/modprobe.d/a.conf": "blacklist nouveau\n",
                           "/run/modprobe.d/a.conf": "options foo bar=1\n"}, {}, False),
    "continued-line": ({"/etc/modprobe.d/b.conf": "# x\nblacklist \\\nnouveau\n"}, {}, True),
}


def _kmod_blacklists_nouveau(root) -> bool:
    mounts = ["mount -t tmpfs none /etc", "mkdir -p /etc/modprobe.d",
              f"mount --bind {root}/etc/modprobe.d /etc/modprobe.d",
              "mount -t tmpfs none /run", "mkdir -p /run/modprobe.d",
              f"mount --bind {root}/run/modprobe.d /run/modprobe.d",
              f"mount --bind {root}/lib/modprobe.d /usr/lib/modprobe.d",
              "modprobe -c"]
    res = subprocess.run(["unshare", "-m", "sh", "-ec", " && ".join(mounts)],
                         capture_output=True, text=True, timeout=30, check=False)
    assert res.returncode == 0, res.stderr
    return "blacklist nouveau" in res.stdout.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KMOD_CASES))
def test_modprobe_d_order_matches_kmod(make_root, name: str) -> None:
    """Which modprobe.d files count (first basename wins across /etc, /run, /lib; /dev/null
    masks; only *.conf) as kmod's ``modprobe -c`` shows it, in a private mount namespace."""
    missing = [p for p in ("modprobe", "unshare") if shutil.which(p) is None]
    why = "needs root" if os.geteuid() != 0 else (f"needs {', '.join(missing)}" if missing
                                                  else None)
    if why is None and not os.path.isdir("/usr/lib/modprobe.d"):
        why = "needs /usr/lib/modprobe.d to mount over"
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"{why}: CI must run this test")
        pytest.skip(why)
    files, links, want = KMOD_CASES[name]
    root = make_root(files, links, dirs=("/etc/modprobe.d", "/run/modprobe.d",
                                         "/lib/modprobe.d"))
    ours = any(c.command == "blacklist" and c.args and c.args[0] == "nouveau"
               for c in kmodconfig.modprobe_config(Host(str(root))))
    assert ours == _kmod_blacklists_nouveau(root) == want


def test_conf_files_first_basename_wins_and_masks(make_root) -> None:
    root = make_root({"/etc/modprobe.d/a.conf": "", "/usr/lib/modprobe.d/a.conf": "",
                      "/usr/lib/modprobe.d/b.conf": "", "/lib/modprobe.d/c.conf": "",
                      "/lib/modprobe.d/readme.txt": ""},
                     {"/run/modprobe.d/c.conf": "/dev/null"})
    got = kmodconfig.conf_files(Host(str(root)), kmodconfig.MODPROBE_DIRS)
    assert got == ["/etc/modprobe.d/a.conf", "/usr/lib/modprobe.d/b.conf"]


def test_modules_loaded_at_boot_and_loaded_now(make_root) -> None:
    root = make_root({"/usr/lib/modules-load.d/nv.conf": "# x\nnvidia-peermem\n",
                      "/etc/modules-load.d/nv.conf": "nvidia_uvm\n",
                      "/etc/modules": "# Debian\nloop\n",
                      "/etc/modprobe.d/bad.conf": "blacklist \x00\n",
                      "/etc/modprobe.d/ok.conf": "softdep nvidia post: nvidia-uvm\n"},
                     dirs=("/sys/module/nvidia_uvm",))
    host = Host(str(root), live=True)
    boot = kmodconfig.modules_loaded_at_boot(host)
    assert sorted(boot) == ["loop", "nvidia_uvm"]  # /etc hides the vendor file of one name
    assert (boot["loop"].path, boot["loop"].line) == ("/etc/modules", 2)
    assert [c.command for c in kmodconfig.modprobe_config(host)] == ["softdep"]  # NUL: skipped
    assert kmodconfig.is_loaded(host, "nvidia-uvm") and not kmodconfig.is_loaded(host, "loop")
