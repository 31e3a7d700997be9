"""slurm.job_limits: slurmd's unit limits, DefaultLimit*, propagation, live slurmd."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Status
from tests.checks.limits.roots import DEBIAN
from tests.helpers import run_check

UNIT = "[Service]\nExecStart=/usr/sbin/slurmd -D\nLimitNOFILE=131072\nLimitMEMLOCK=infinity\n"
SLURM = {**DEBIAN, "/usr/lib/systemd/system/slurmd.service": UNIT,
         "/etc/slurm/slurm.conf": "ClusterName=c\nPropagateResourceLimitsExcept=MEMLOCK\n"}


def by_subject(results):
    return {r.subject: r for r in results}


def test_not_installed_skips(make_root) -> None:
    (r,) = run_check("slurm.job_limits", make_root(DEBIAN))
    assert r.status is Status.SKIP and "not installed" in r.message


def test_vendor_unit_and_except_memlock_pass(make_root) -> None:
    got = by_subject(run_check("slurm.job_limits", make_root(SLURM), user="alice"))
    mem = got["slurm job memlock"]
    assert mem.status is Status.PASS, mem.message
    assert any(e.source == "usr/lib/systemd/system/slurmd.service:4" for e in mem.evidence)
    assert any(e.source == "etc/slurm/slurm.conf:2" for e in mem.evidence)
    # NOFILE is still propagated: alice's SSH session soft nofile (1024, capped) wins
    nof = got["slurm job nofile"]
    assert nof.status is Status.FAIL and nof.data["soft"] == "1024"
    assert "PropagateResourceLimitsExcept=MEMLOCK,NOFILE" in nof.remediation.summary


def test_default_propagation_caps_memlock_to_login_shell(make_root) -> None:
    root = make_root({**SLURM, "/etc/slurm/slurm.conf": "ClusterName=c\n"})
    (mem,) = [r for r in run_check("slurm.job_limits", root) if "memlock" in r.subject]
    assert mem.status is Status.FAIL and mem.data["propagated"] is True
    assert mem.data["soft"] == str(8 * 1024 * 1024)  # systemd default login-shell memlock
    assert "PropagateResourceLimitsExcept=MEMLOCK" in mem.remediation.summary


def test_dropin_lowers_and_default_limits(make_root) -> None:
    root = make_root({
        **SLURM,
        "/etc/systemd/system/slurmd.service.d/override.conf": "[Service]\nLimitMEMLOCK=64K\n",
        "/usr/lib/systemd/system/slurmd.service": "[Service]\nExecStart=/usr/sbin/slurmd\n",
        "/etc/systemd/system.conf": "[Manager]\nDefaultLimitNOFILE=262144\n",
        "/etc/slurm/slurm.conf": "PropagateResourceLimits=NONE\n"})
    got = by_subject(run_check("slurm.job_limits", root))
    mem = got["slurm job memlock"]
    assert mem.status is Status.FAIL and mem.data["hard"] == "65536"
    assert mem.remediation.snippets[0].path == \
        "/etc/systemd/system/slurmd.service.d/zz-aiaudit-limits.conf"
    assert "LimitMEMLOCK=infinity" in mem.remediation.snippets[0].content
    nof = got["slurm job nofile"]
    assert nof.status is Status.PASS and nof.data["soft"] == "262144"
    assert any(e.source == "etc/systemd/system.conf:2" for e in nof.evidence)


def test_both_propagation_keys_is_an_error(make_root) -> None:
    root = make_root({**SLURM, "/etc/slurm-llnl/slurm.conf": "x=1\n",
                      "/etc/slurm/slurm.conf": "PropagateResourceLimits=ALL\n"
                                               "PropagateResourceLimitsExcept=MEMLOCK\n"})
    (r,) = run_check("slurm.job_limits", root)
    assert r.status is Status.ERROR and "both" in r.message


def test_live_slurmd_process(make_root) -> None:
    proc = ("Limit                     Soft Limit           Hard Limit           Units     \n"
            "Max open files            131072               131072               files     \n"
            "Max locked memory         65536                65536                bytes     \n")
    root = make_root({**SLURM, "/proc/1/comm": "systemd\n", "/proc/4242/comm": "slurmd\n",
                      "/proc/4242/limits": proc, "/proc/self/comm": "x\n"})
    got = by_subject(run_check("slurm.job_limits", root, live=True))
    mem = got["slurm job memlock"]
    assert mem.status is Status.FAIL and mem.evidence[0].source == "/proc/4242/limits"
    assert "running slurmd" in mem.message


# ------------------------------------------------------------------ which slurm.conf
REAL = "ClusterName=c\nPropagateResourceLimitsExcept=MEMLOCK,NOFILE\n"
"""The file slurmd really reads: nofile and memlock are not propagated, the node is fine."""
STALE = "ClusterName=c\n"
"""/etc/slurm/slurm.conf left behind: default propagation of everything."""


def _nofile(root, **kw):
    return by_subject(run_check("slurm.job_limits", root, user="alice", **kw))[
        "slurm job nofile"]


@pytest.mark.parametrize("files", [
    # SLURM_CONF from an EnvironmentFile in a drop-in, as Debian's unit reads /etc/default
    {"/etc/systemd/system/slurmd.service.d/conf.conf":
        "[Service]\nEnvironmentFile=-/etc/default/slurmd\n",
     "/etc/default/slurmd": 'SLURM_CONF="/opt/slurm/etc/slurm.conf"\n'},
    # -f in the options variable that ExecStart expands ($VAR splits into words)
    {"/usr/lib/systemd/system/slurmd.service":
        "[Service]\nEnvironmentFile=-/etc/default/slurmd\n"
        "ExecStart=/usr/sbin/slurmd -D -s $SLURMD_OPTIONS\nLimitNOFILE=131072\n"
        "LimitMEMLOCK=infinity\n",
     "/etc/default/slurmd": 'SLURMD_OPTIONS="-f /opt/slurm/etc/slurm.conf"\n'},
    # Environment= in the unit
    {"/etc/systemd/system/slurmd.service.d/env.conf":
        "[Service]\nEnvironment=SLURM_CONF=/opt/slurm/etc/slurm.conf\n"},
])
def test_offline_reads_the_conf_the_unit_gives_slurmd(make_root, files) -> None:
    root = make_root({**SLURM, "/etc/slurm/slurm.conf": STALE,
                      "/opt/slurm/etc/slurm.conf": REAL, **files})
    r = _nofile(root)
    assert r.status is Status.PASS, r.message
    assert r.data["slurm_conf"] == "/opt/slurm/etc/slurm.conf"
    assert "opt/slurm/etc/slurm.conf:2" in [e.source for e in r.evidence]


def test_without_unit_settings_the_default_path_is_read(make_root) -> None:
    r = _nofile(make_root({**SLURM, "/etc/slurm/slurm.conf": STALE,
                           "/opt/slurm/etc/slurm.conf": REAL}))
    assert r.status is Status.FAIL and r.data["slurm_conf"] == "/etc/slurm/slurm.conf"
    assert "default path" in r.data["slurm_conf_reason"]


@pytest.mark.parametrize("cmdline,environ", [
    ("/usr/sbin/slurmd\x00-D\x00-f\x00/opt/slurm/etc/slurm.conf\x00", "PATH=/bin\x00"),
    ("/usr/sbin/slurmd\x00-D\x00", "PATH=/bin\x00SLURM_CONF=/opt/slurm/etc/slurm.conf\x00"),
    # -f beats SLURM_CONF
    ("/usr/sbin/slurmd\x00-f/opt/slurm/etc/slurm.conf\x00",
     "SLURM_CONF=/etc/slurm/slurm.conf\x00"),
])
def test_live_reads_the_running_slurmds_conf(make_root, cmdline, environ) -> None:
    root = make_root({**SLURM, "/etc/slurm/slurm.conf": STALE,
                      "/opt/slurm/etc/slurm.conf": REAL, "/proc/1/comm": "systemd\n",
                      "/proc/4242/comm": "slurmd\n", "/proc/4242/cmdline": cmdline,
                      "/proc/4242/environ": environ, "/proc/self/comm": "x\n"})
    r = _nofile(root, live=True)
    assert r.data["slurm_conf"] == "/opt/slurm/etc/slurm.conf", r.data
    assert "running slurmd" in r.data["slurm_conf_reason"]


def test_submitting_shell_says_why_it_fell_back_to_systemds_default(make_root) -> None:
    """A job user the image's files lack while sssd would decide: the submitting shell is
    estimated with systemd's default, and the evidence says why (not "no user given")."""
    root = make_root({**SLURM, "/etc/slurm/slurm.conf": "ClusterName=c\n",
                      "/etc/nsswitch.conf": "passwd: files sss\n"})
    got = by_subject(run_check("slurm.job_limits", root, user="ldapuser"))
    ev = [e for e in got["slurm job memlock"].evidence if e.kind == "default"]
    assert ev[-1].source.startswith("login shell soft memlock (systemd default; could not "
                                    "look: training user ldapuser is not in the scanned "
                                    "root's etc/passwd"), ev
    got = by_subject(run_check("slurm.job_limits", make_root(
        {**SLURM, "/etc/slurm/slurm.conf": "ClusterName=c\n"})))
    ev = [e for e in got["slurm job memlock"].evidence if e.kind == "default"]
    assert ev[-1].source == "login shell soft memlock (systemd default; no training user given)"
