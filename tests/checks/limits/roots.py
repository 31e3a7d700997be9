"""Fixture roots shared by the limits, user and Slurm check tests: a Debian 12 host (PAM
1.5.2, sshd with pam_limits through its own file) and a Rocky 9 host (upstream PAM, sshd
reaching pam_limits through ``password-auth``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

DPKG = ("Package: libpam-modules\nStatus: install ok installed\n"
        "Version: 1.5.2-6+deb12u3\n\n")
PASSWD = ("root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n"
          "bob:x:1001:1001::/home/bob:/bin/bash\n")
GROUP = "root:x:0:\nalice:x:1000:\nbob:x:1001:\ngpu:x:2000:alice\n"
DEBIAN = {
    "/etc/os-release": 'ID=debian\nVERSION_ID="12"\n',
    "/var/lib/dpkg/status": DPKG,
    "/etc/passwd": PASSWD,
    "/etc/group": GROUP,
    "/etc/ssh/sshd_config": "Include /etc/ssh/sshd_config.d/*.conf\nUsePAM yes\n",
    "/usr/sbin/sshd": "",
    "/etc/pam.d/sshd": "@include common-auth\nsession required pam_loginuid.so\n"
                       "@include common-session\nsession    required     pam_limits.so\n",
    "/etc/pam.d/common-session": "session required pam_unix.so\n",
    "/etc/pam.d/common-auth": "auth required pam_unix.so\n",
    "/etc/security/limits.conf": "# defaults\n",
    "/lib/systemd/systemd": "",
}
ROCKY = {
    "/etc/os-release": 'ID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\n',
    "/etc/passwd": PASSWD, "/etc/group": GROUP,
    "/etc/ssh/sshd_config": "UsePAM yes\n", "/usr/sbin/sshd": "",
    "/etc/pam.d/sshd": "auth substack password-auth\nsession include password-auth\n",
    "/etc/pam.d/password-auth": "auth required pam_env.so\n"
                                "session optional pam_keyinit.so revoke\n"
                                "session required pam_limits.so\n",
}
GOOD = "alice - nofile 1048576\nalice - memlock unlimited\n"
NOFILE_SOFT = {"item": "nofile", "type": "soft"}
NOFILE_HARD = {"item": "nofile", "type": "hard"}
MEMLOCK_HARD = {"item": "memlock", "type": "hard"}


def root(make_root: Callable[..., Path], base: dict, **extra: str) -> Path:
    """``base`` with ``extra`` files added, as a fixture root."""
    return make_root({**base, **extra})


def one(results: list[Any]) -> Any:
    """The only result of a check run."""
    assert len(results) == 1, results
    return results[0]
