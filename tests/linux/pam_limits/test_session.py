"""The pieces of a session's limits: the PAM build, the files pam_limits reads, the
starting values, and the session itself (:mod:`aiaudit.linux.pam_limits`)."""

from __future__ import annotations

import math

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.accounts.users import accounts
from aiaudit.linux.pam_limits import conf as lp
from aiaudit.linux.pam_limits.files import (
    PamBuild,
    limits_files,
    limits_search,
    pam_build,
    release_build,
)
from aiaudit.linux.pam_limits.session import effective, same_outcome
from aiaudit.linux.pam_limits.start import (
    SYSTEMD_DEFAULTS,
    daemon_limits,
    pid1_limits,
    proc_limits,
    service_limits,
)

DEBIAN12 = PamBuild(True, "1.5.2-6", (1, 5, 2), "Debian PAM 1.5.2-6")
UPSTREAM = PamBuild(False, None, (), "upstream")
PROC = ("Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max open files            4096                 8192                 files     \n"
        "Max locked memory         65536                65536                bytes     \n")


@pytest.mark.parametrize(("item", "value", "rlimit", "conf"), [
    ("nofile", 65536, 65536, 65536),
    ("memlock", 64, 65536, 64),
    ("cpu", 5, 300, 5),
    ("nofile", "unlimited", lp.RLIM_INFINITY, math.inf),
    ("nproc", "4096", 4096, 4096),
])
def test_units_round_trip(item: str, value: int | str, rlimit: int, conf: float) -> None:
    assert lp.rlimit_value(item, value) == rlimit
    assert lp.conf_units(item, rlimit) == conf


def test_build_flags_and_release_assumptions(make_root) -> None:
    assert DEBIAN12.kernel_start and DEBIAN12.nr_open and DEBIAN12.missing_conf_fatal
    assert not DEBIAN12.vendordir
    assert UPSTREAM.vendordir and UPSTREAM.nr_open and not UPSTREAM.missing_conf_fatal
    noble = release_build("ubuntu", "24.04")
    assert noble.vt == (1, 5, 3) and not noble.missing_conf_fatal and noble.debian
    assert "Ubuntu 24.04's PAM 1.5.3" in noble.note
    rocky = pam_build(Host(str(make_root({"/etc/os-release": 'PRETTY_NAME="Rocky 9"\n'
                                          'ID=rocky\n'})), live=False))
    assert rocky.note.startswith("Rocky 9: upstream") and not rocky.debian


def test_files_order_vendor_fallback_and_directories(make_root) -> None:
    h = Host(str(make_root({"/usr/lib/security/limits.conf": "* hard core 0\n",
                            "/usr/lib/security/limits.d/20-b.conf": "vendor\n",
                            "/usr/lib/security/limits.d/10-a.conf": "hidden by /etc\n",
                            "/etc/security/limits.d/10-a.conf": "etc\n",
                            "/etc/security/limits.d/Z.conf": "capital sorts first\n",
                            "/etc/security/limits.d/skip.txt": "not .conf\n"},
                           dirs=("/etc/security/limits.d/30-dir.conf",))), live=False)
    files, notes = limits_files(h, UPSTREAM, None)
    assert [p for p, _ in files] == ["/usr/lib/security/limits.conf",
                                     "/etc/security/limits.d/10-a.conf",
                                     "/usr/lib/security/limits.d/20-b.conf",
                                     "/etc/security/limits.d/30-dir.conf",
                                     "/etc/security/limits.d/Z.conf"]
    assert notes == ["/etc/security/limits.d/30-dir.conf is a directory: read as empty"]
    # Debian 12: no vendor directory, and a missing limits.conf refuses the session
    files, _ = limits_files(h, DEBIAN12, None)
    assert files == [("/etc/security/limits.conf", "no such file (PAM < 1.5.3 refuses every "
                      "session without it; limits.d is then not read)")]
    files, notes = limits_files(h, DEBIAN12, "/etc/security/limits.d/10-a.conf")
    assert len(files) == 1 and notes == ["conf=/etc/security/limits.d/10-a.conf: limits.d "
                                         "is not read"]
    assert "usr/lib/security/limits.d/*.conf" in limits_search(UPSTREAM)
    assert limits_search(DEBIAN12) == ("etc/security/limits.conf, "
                                       "etc/security/limits.d/*.conf")


def test_starting_values(make_root) -> None:
    root = make_root({"/proc/1/limits": PROC, "/proc/77/comm": "slurmd\n",
                      "/proc/77/limits": PROC, "/proc/self/comm": "x\n",
                      "/etc/systemd/system/slurmd.service": "[Service]\nLimitNOFILE=100:200\n"})
    live, offline = Host(str(root), live=True), Host(str(root), live=False)
    assert pid1_limits(live).values["nofile"] == (4096, 8192)
    assert proc_limits(offline, "1", "x") is None
    assert pid1_limits(offline).what == "PID 1's limits (offline: kernel defaults)"
    got = daemon_limits(live, "slurmd", ("slurmd.service",), "the running slurmd")
    assert got.what == "the running slurmd" and got.evidence[0].source == "/proc/77/limits"
    unit = daemon_limits(offline, "slurmd", ("slurmd.service",), "the running slurmd")
    assert unit.values["nofile"] == (100, 200) and unit.what == "slurmd.service's limits"
    assert unit.values["memlock"] == SYSTEMD_DEFAULTS["memlock"]
    su = service_limits(offline, "su")
    assert su.what.startswith("the caller's limits (the shell that ran su)")


def test_same_outcome_adopts_the_agreed_decision() -> None:
    line = lp.Line("/f", 1, "@x - nofile 5", "limit", "@x", "-", "nofile", "5")
    unknown = lp.Decision(uncertain=[line])
    a = lp.Decision(limits={"nofile": (lp.Side(5, lp.GROUP, line), lp.Side(5, lp.GROUP, line))})
    b = lp.Decision(limits={"nofile": (lp.Side(5, lp.USER), lp.Side(5, lp.USER))})
    assert same_outcome(unknown, [a, b]) and unknown.limits == a.limits
    c = lp.Decision(limits={"nofile": (lp.Side(6, lp.USER), lp.Side(6, lp.USER))})
    assert not same_outcome(lp.Decision(), [a, c])


def test_effective_is_memoized_per_user_and_service(make_root) -> None:
    h = Host(str(make_root({"/etc/passwd": "alice:x:1000:1000::/:/bin/sh\n",
                            "/etc/pam.d/su": "session required pam_limits.so\n",
                            "/etc/security/limits.conf": "alice - nofile 5000\n"})),
             live=False)
    acc = accounts(h)
    eff = effective(h, acc, acc.db.user("alice"), "su")
    assert eff.status == "ok" and eff.values["nofile"] == (5000, 5000)
    assert effective(h, acc, acc.db.user("alice"), "su") is eff
