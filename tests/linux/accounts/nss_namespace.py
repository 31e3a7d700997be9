"""A directory user for tests: libnss-extrausers (a real NSS module, as sssd/LDAP are to
glibc) configured inside a private mount namespace, so that the machine's ``/etc`` is never
touched.  ``ldapuser`` (uid 5001) exists only there, in its primary group ``ldapgrp`` and the
directory groups ``gpu`` and ``hpc`` (hand-made entries, in the shape getent prints).

Needs root, ``unshare`` (util-linux) and libnss-extrausers (Debian package of that name):
:func:`need_namespace` skips without them, and fails under CI (``CI`` set).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

EXTRAUSERS = ("/usr/lib/libnss_extrausers.so.2",
              "/usr/lib/x86_64-linux-gnu/libnss_extrausers.so.2")
NSSWITCH = "passwd: files extrausers\ngroup: files extrausers\nshadow: files\n"
PASSWD = "ldapuser:x:5001:5001:LDAP user:/home/ldapuser:/bin/sh\n"
GROUP = "ldapgrp:x:5001:\ngpu:x:5002:ldapuser\nhpc:x:5003:ldapuser\n"
SSHD_STACK = "session required pam_limits.so\n"


def why_not() -> str | None:
    """Why a namespace with the directory user cannot be made here, or ``None``."""
    if os.geteuid() != 0:
        return "needs root (mount namespace)"
    if shutil.which("unshare") is None:
        return "needs unshare (util-linux)"
    if not any(Path(p).exists() for p in EXTRAUSERS):
        return "needs libnss-extrausers (an NSS module for directory users)"
    if not Path("/var/lib/extrausers").is_dir():
        return "needs /var/lib/extrausers (libnss-extrausers) to bind over"
    return None


def need_namespace() -> None:
    """Skip (fail under CI) where :func:`why_not` says so."""
    why = why_not()
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)


def tree(base: Path, *, fifo: tuple[str, ...] = (), group: str = GROUP,
         etc_group: str | None = None, limits: str | None = None,
         slurm_conf: str | None = None) -> dict[str, Path]:
    """Files to bind, ``{path on this machine: its replacement under base}``: nsswitch.conf
    and the extrausers folder (``group``: its group file); ``fifo``: extrausers files made
    FIFOs (a lookup that reads one blocks, as a directory server that does not answer);
    ``etc_group``: /etc/group;
    ``limits``: limits.conf, with an sshd PAM stack that loads pam_limits and an sshd_config
    with ``UsePAM yes`` (what limits.effective reads); ``slurm_conf``: /etc/slurm."""
    ex = base / "extrausers"
    ex.mkdir(parents=True)
    for name, text in (("passwd", PASSWD), ("group", group)):
        if name in fifo:
            os.mkfifo(ex / name)
        else:
            (ex / name).write_text(text)
    (base / "nsswitch.conf").write_text(NSSWITCH)
    binds = {"/etc/nsswitch.conf": base / "nsswitch.conf", "/var/lib/extrausers": ex}
    if etc_group is not None:
        (base / "group").write_text(etc_group)
        binds["/etc/group"] = base / "group"
    dirs = []
    if limits is not None:
        dirs += [("security", "limits.conf", limits), ("pam.d", "sshd", SSHD_STACK),
                 ("ssh", "sshd_config", "UsePAM yes\n")]
    if slurm_conf is not None:
        dirs.append(("slurm", "slurm.conf", slurm_conf))
    for sub, name, text in dirs:
        (base / sub).mkdir()
        (base / sub / name).write_text(text)
        binds[f"/etc/{sub}"] = base / sub
    return binds


def wrap(binds: dict[str, Path], argv: list[str]) -> list[str]:
    """``argv`` run in a new private mount namespace where ``binds`` cover the machine's
    files (for ``subprocess``; the process is ``argv`` itself once the binds are made)."""
    mounts = " && ".join(f"mount --bind {shlex.quote(str(src))} {shlex.quote(dst)}"
                         for dst, src in binds.items())
    return ["unshare", "-m", "sh", "-c", mounts + ' && exec "$@"', "sh", *argv]


def run(binds: dict[str, Path], argv: list[str], timeout: float = 120,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """:func:`wrap` ``argv`` and run it to its end."""
    return subprocess.run(wrap(binds, argv), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=env)
