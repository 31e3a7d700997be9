"""limits.pam_stack on fixture roots (and where it and limits.effective tell one story)."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.limits.roots import (
    DEBIAN,
    GOOD,
    NOFILE_SOFT,
    ROCKY,
    one,
    root,
)
from tests.helpers import run_check


def test_use_pam_no_and_missing_pam_limits(make_root) -> None:
    rt = root(make_root, DEBIAN, **{"/etc/ssh/sshd_config": "UsePAM no\n",
                                    "/etc/security/limits.d/90-train.conf": GOOD})
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.FAIL and "UsePAM no" in r.message
    s = one(run_check("limits.pam_stack", rt))
    assert s.status is Status.FAIL and s.evidence[0].source == "etc/ssh/sshd_config:1"
    rt = root(make_root, DEBIAN, **{"/etc/pam.d/sshd": "@include common-session\n",
                                    "/etc/security/limits.d/90-train.conf": GOOD})
    s = one(run_check("limits.pam_stack", rt))
    assert s.status is Status.FAIL and s.remediation.snippets
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.FAIL and "does not run" in r.message


def test_pam_stack_pass_through_include(make_root) -> None:
    s = one(run_check("limits.pam_stack", make_root(ROCKY)))
    assert s.status is Status.PASS and "password-auth:3" in s.message


def test_pam_stack_services_param_and_other_fallback(make_root) -> None:
    rt = root(make_root, DEBIAN, **{"/etc/pam.d/other": "session required pam_limits.so\n"})
    got = run_check("limits.pam_stack", rt, {"services": ["sshd", "jupyterhub"]})
    assert [(r.subject, r.status) for r in got] == [("sshd", Status.PASS),
                                                   ("jupyterhub", Status.PASS)]


def test_missing_include_breaks_the_stack(make_root) -> None:
    rt = root(make_root, DEBIAN, **{"/etc/pam.d/sshd": "@include common-gone\n"
                                                      "session required pam_limits.so\n",
                                    "/etc/security/limits.d/90-train.conf": GOOD})
    s = one(run_check("limits.pam_stack", rt))
    assert s.status is Status.FAIL and "common-gone" in s.message
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.FAIL and r.actual == "login refused"


def test_use_pam_from_the_sshd_model_when_installed(make_root, monkeypatch) -> None:
    import sys
    import types
    from dataclasses import dataclass

    @dataclass
    class Directive:
        file: str
        line: int
        raw: str

    @dataclass
    class Setting:
        value: str
        directive: Directive | None

    fake = types.ModuleType("aiaudit.linux.sshd.effective")
    fake.effective_setting = lambda host, kw: Setting(
        "no", Directive("/etc/ssh/sshd_config.d/50-x.conf", 3, "UsePAM no"))
    monkeypatch.setitem(sys.modules, "aiaudit.linux.sshd.effective", fake)
    s = one(run_check("limits.pam_stack", make_root(DEBIAN)))
    assert s.status is Status.FAIL
    assert s.evidence[0].source == "etc/ssh/sshd_config.d/50-x.conf:3"


def test_no_pam_stack_same_story_in_both_checks(make_root) -> None:
    no_pam = {k: v for k, v in DEBIAN.items() if not k.startswith("/etc/pam.d/")}
    no_pam["/etc/security/limits.d/90-train.conf"] = GOOD
    rt = make_root(no_pam)
    s = one(run_check("limits.pam_stack", rt))
    e = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert s.status is e.status is Status.SKIP
    assert s.message == e.message and "no PAM configuration for sshd" in s.message
    no_sshd = {k: v for k, v in no_pam.items() if "ssh" not in k}
    rt = make_root(no_sshd)
    s = one(run_check("limits.pam_stack", rt))
    e = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert s.status is e.status is Status.SKIP
    assert s.message == e.message == "sshd is not installed"
