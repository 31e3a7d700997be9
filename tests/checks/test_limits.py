"""limits.effective, limits.pam_stack and user.not_root on fixture roots."""

from __future__ import annotations

from pathlib import Path

from aiaudit.core.model import Status
from tests.helpers import run_check

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


def root(make_root, base: dict, **extra: str) -> Path:
    return make_root({**base, **extra})


def one(results):
    assert len(results) == 1, results
    return results[0]


def test_no_user_skips_with_how_to(make_root) -> None:
    r = one(run_check("limits.effective", root(make_root, DEBIAN), NOFILE_SOFT))
    assert r.status is Status.SKIP
    assert "--user NAME" in r.message and "SLURM_JOB_USER" in r.message
    assert "settings.user" in r.message


def test_unknown_user_is_an_error(make_root) -> None:
    r = one(run_check("limits.effective", root(make_root, DEBIAN), NOFILE_SOFT, user="carol"))
    assert r.status is Status.ERROR and "does not exist in etc/passwd" in r.message


def test_unknown_user_with_sssd_is_skipped(make_root) -> None:
    rt = root(make_root, DEBIAN, **{"/etc/nsswitch.conf": "passwd: files sss\n"})
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="carol"))
    assert r.status is Status.SKIP and "sss" in r.message


def test_pass_with_evidence_line(make_root) -> None:
    rt = root(make_root, DEBIAN, **{"/etc/security/limits.d/90-train.conf": GOOD})
    for params in (NOFILE_SOFT, NOFILE_HARD, MEMLOCK_HARD):
        r = one(run_check("limits.effective", rt, params, user="alice"))
        assert r.status is Status.PASS, r.message
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.actual == "1048576"
    assert any(e.source == "etc/security/limits.d/90-train.conf:1" for e in r.evidence)
    assert any(e.source == "etc/pam.d/sshd:4" for e in r.evidence)


def test_fail_offline_defaults_and_remediation(make_root) -> None:
    r = one(run_check("limits.effective", root(make_root, DEBIAN), NOFILE_SOFT, user="alice"))
    assert r.status is Status.FAIL and r.actual == "1024"
    assert "PID 1" in r.message
    snip = r.remediation.snippets[0]
    assert snip.path == "/etc/security/limits.d/zz-aiaudit-training.conf"
    assert snip.content == "alice soft nofile 65536\n"
    # without systemd, PID 1 keeps the kernel's hard limit 4096: the fix raises hard too
    base = {k: v for k, v in DEBIAN.items() if k != "/lib/systemd/systemd"}
    r = one(run_check("limits.effective", make_root(base), NOFILE_SOFT, user="alice"))
    assert r.remediation.snippets[0].content == ("alice soft nofile 65536\n"
                                                 "alice hard nofile 65536\n")


def test_later_star_does_not_override_user_line(make_root) -> None:
    rt = root(make_root, DEBIAN, **{
        "/etc/security/limits.conf": "alice soft nofile 4096\n",
        "/etc/security/limits.d/99-site.conf": "* - nofile 1048576\n"})
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.FAIL and r.actual == "4096"
    assert any(e.source == "etc/security/limits.conf:1" for e in r.evidence)
    # ... and the '-' line was blocked on its soft side, so hard stays PID 1's
    h = one(run_check("limits.effective", rt, NOFILE_HARD, user="alice"))
    assert h.actual == "1073741816"


def test_nolimits_line(make_root) -> None:
    rt = root(make_root, DEBIAN, **{"/etc/security/limits.conf": GOOD,
                                    "/etc/security/limits.d/00-x.conf": "@gpu -\n"})
    r = one(run_check("limits.effective", rt, MEMLOCK_HARD, user="alice"))
    assert r.status is Status.FAIL and "no limits at all" in r.message
    assert "Remove the 'no limits' line" in r.remediation.summary


def test_missing_limits_conf_refuses_logins_on_debian_not_rocky(make_root) -> None:
    base = {k: v for k, v in DEBIAN.items() if k != "/etc/security/limits.conf"}
    base["/etc/security/limits.d/90-train.conf"] = GOOD
    r = one(run_check("limits.effective", make_root(base), NOFILE_SOFT, user="alice"))
    assert r.status is Status.FAIL and r.actual == "login refused"
    rk = {**ROCKY, "/etc/security/limits.d/90-train.conf": GOOD}
    r = one(run_check("limits.effective", make_root(rk), NOFILE_SOFT, user="alice"))
    assert r.status is Status.PASS, r.message


def test_root_and_star_debian_vs_rocky(make_root) -> None:
    conf = {"/etc/security/limits.conf": "* - nofile 1048576\n* - memlock unlimited\n"}
    deb = one(run_check("limits.effective", make_root({**DEBIAN, **conf}), NOFILE_SOFT,
                        user="root"))
    assert deb.status is Status.FAIL, deb.message  # '*' does not apply to root on Debian
    rk = one(run_check("limits.effective", make_root({**ROCKY, **conf}), NOFILE_SOFT,
                       user="root"))
    assert rk.status is Status.PASS, rk.message  # upstream: '*' includes root
    assert any(e.source == "etc/pam.d/password-auth:3" for e in rk.evidence)


def test_rocky_unset_limits_come_from_sshd_unit(make_root) -> None:
    rk = {**ROCKY, "/usr/lib/systemd/system/sshd.service": "[Service]\nExecStart=/usr/sbin/sshd\n",
          "/etc/systemd/system/sshd.service.d/limits.conf": "[Service]\nLimitNOFILE=65536\n",
          "/etc/security/limits.conf": "alice hard memlock unlimited\n"}
    r = one(run_check("limits.effective", make_root(rk), NOFILE_SOFT, user="alice"))
    assert r.status is Status.PASS and r.actual == "65536", r.message
    assert any(e.source == "etc/systemd/system/sshd.service.d/limits.conf:2"
               for e in r.evidence)


def test_conf_argument_redirects_remediation(make_root) -> None:
    rt = root(make_root, DEBIAN, **{
        "/etc/pam.d/sshd": "session required pam_limits.so conf=/etc/security/train.conf\n",
        "/etc/security/train.conf": "alice - nofile 2048\n",
        "/etc/security/limits.d/90-train.conf": GOOD})
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.FAIL and r.actual == "2048"
    assert r.remediation.snippets[0].path == "/etc/security/train.conf"


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


def test_nss_group_membership_is_unknown(make_root) -> None:
    rt = root(make_root, DEBIAN, **{"/etc/nsswitch.conf": "passwd: files\ngroup: files sss\n",
                                    "/etc/security/limits.conf": "@hpc - nofile 1048576\n"})
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.ERROR and "@hpc" in r.message
    # an unknown membership that cannot change the outcome does not block the verdict
    rt = root(make_root, DEBIAN, **{"/etc/nsswitch.conf": "group: files sss\n",
                                    "/etc/security/limits.conf": "alice - nofile 1048576\n"
                                                                 "@hpc - nofile 4096\n"})
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.PASS and r.actual == "1048576", r.message


def test_dangling_limits_d_link_refuses_logins(make_root) -> None:
    rt = make_root(DEBIAN, links={"/etc/security/limits.d/50-x.conf": "/nonexistent"})
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.FAIL and r.actual == "login refused"


def test_unreadable_limits_d_file_as_host_error(make_root, monkeypatch) -> None:
    from aiaudit.core.errors import HostError
    from aiaudit.core.host import Host

    rt = root(make_root, DEBIAN, **{"/etc/security/limits.d/50-x.conf": GOOD})
    real = Host.read_bytes

    def deny(self, path, **kw):
        if path.endswith("50-x.conf"):
            raise HostError(f"{path}: Permission denied")
        return real(self, path, **kw)

    monkeypatch.setattr(Host, "read_bytes", deny)
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.FAIL and "Permission denied" in r.message


def test_live_reads_pid1_limits(make_root) -> None:
    proc = ("Limit                     Soft Limit           Hard Limit           Units     \n"
            "Max open files            1048576              1048576              files     \n"
            "Max locked memory         8388608              8388608              bytes     \n")
    rt = root(make_root, DEBIAN, **{"/proc/1/limits": proc, "/proc/sys/fs/nr_open": "1048576\n"})
    soft = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice", live=True))
    assert soft.status is Status.FAIL and soft.actual == "1024"  # capped at FD_SETSIZE
    hard = one(run_check("limits.effective", rt, NOFILE_HARD, user="alice", live=True))
    assert hard.status is Status.PASS and hard.evidence[-1].source == "/proc/1/limits"


def test_not_root(make_root) -> None:
    rt = make_root(DEBIAN)
    r = one(run_check("user.not_root", rt, user="root"))
    assert r.status is Status.FAIL and r.remediation is not None
    assert one(run_check("user.not_root", rt, user="alice")).status is Status.PASS
    assert one(run_check("user.not_root", rt)).status is Status.SKIP


def test_two_pam_limits_calls_each_run(make_root) -> None:
    # Debian: every call starts again from PID 1, so the last successful one decides
    rt = root(make_root, DEBIAN, **{
        "/etc/pam.d/common-session": "session required pam_limits.so "
                                     "conf=/etc/security/first.conf\n",
        "/etc/security/first.conf": "alice - nofile 2048\n",
        "/etc/security/limits.conf": "alice - nofile 1048576\n"})
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.PASS and r.actual == "1048576", r.message
    # upstream: the second call starts from what the first one set
    rk = make_root({**ROCKY,
                    "/etc/pam.d/sshd": "session required pam_limits.so conf=/etc/security/a\n"
                                       "session include password-auth\n",
                    "/etc/security/a": "alice hard nofile 70000\nalice soft nofile 70000\n",
                    "/etc/security/limits.conf": "alice hard memlock unlimited\n"})
    r = one(run_check("limits.effective", rk, NOFILE_SOFT, user="alice"))
    assert r.status is Status.PASS and r.actual == "70000", r.message
    assert any(e.source == "etc/security/a:2" for e in r.evidence)


def test_user_from_slurm_job_user_via_cli() -> None:
    from tests.helpers import ROOTS, cli

    root = str(ROOTS / "limits-debian-root-star" / "root")
    res = cli("scan", "--ruleset", "dl-training", "--root", root, "--only",
              "TRAINING-USER-NOT-ROOT", env={"SLURM_JOB_USER": "root"})
    assert res.code == 1 and "from $SLURM_JOB_USER" in res.out, res.out + res.err
    res = cli("scan", "--ruleset", "dl-training", "--root", root, "--only",
              "LIMITS-NOFILE-SOFT")
    assert "--user NAME" in res.out


def test_live_on_this_host_reads_proc() -> None:
    from pathlib import Path

    if not Path("/etc/pam.d").is_dir() or not Path("/proc/1/limits").exists():
        return
    (r,) = run_check("limits.effective", "/", {**NOFILE_HARD, "services": ["login"]},
                     live=True, user="root")
    assert r.status in (Status.PASS, Status.FAIL, Status.ERROR), r
    if r.status is not Status.ERROR and r.data.get("pam_limits"):
        assert r.actual is not None and any(e.kind in ("runtime", "file", "default")
                                            for e in r.evidence)


def test_debian_pam_17_inherits_from_sshd_unit(make_root) -> None:
    # Debian 1.7.0-1 dropped the implicit set_all: unset limits stay sshd's (#995236)
    base = {**DEBIAN, "/var/lib/dpkg/status": DPKG.replace("1.5.2-6+deb12u3", "1.7.0-5"),
            "/lib/systemd/system/ssh.service": "[Service]\nExecStart=/usr/sbin/sshd -D\n",
            "/etc/systemd/system/ssh.service.d/nofile.conf": "[Service]\nLimitNOFILE=131072\n"}
    r = one(run_check("limits.effective", make_root(base), NOFILE_SOFT, user="alice"))
    assert r.status is Status.PASS and r.actual == "131072", r.message
    assert "ssh.service" in r.message
    # ... unless the module is given set_all
    base["/etc/pam.d/sshd"] = "session required pam_limits.so set_all\n"
    r = one(run_check("limits.effective", make_root(base), NOFILE_SOFT, user="alice"))
    assert r.status is Status.PASS and r.actual == "1073741816", r.message  # PID 1, no cap


def test_vendordir_on_upstream(make_root) -> None:
    rk = {**ROCKY,
          "/usr/lib/security/limits.conf": "alice - nofile 70000\n",
          "/usr/lib/security/limits.d/50-a.conf": "alice - memlock 64\n",
          "/etc/security/limits.d/50-a.conf": "alice - memlock unlimited\n"}
    r = one(run_check("limits.effective", make_root(rk), NOFILE_SOFT, user="alice"))
    assert r.status is Status.PASS and r.actual == "70000", r.message  # /etc file absent
    r = one(run_check("limits.effective", make_root(rk), MEMLOCK_HARD, user="alice"))
    assert r.status is Status.PASS, r.message  # the /etc file hides the vendor one
    rk["/etc/security/limits.conf"] = "# empty\n"
    r = one(run_check("limits.effective", make_root(rk), NOFILE_SOFT, user="alice"))
    assert r.actual == "1024", r.message  # /etc exists: the vendor limits.conf is not read


def test_missing_include_breaks_the_stack(make_root) -> None:
    rt = root(make_root, DEBIAN, **{"/etc/pam.d/sshd": "@include common-gone\n"
                                                      "session required pam_limits.so\n",
                                    "/etc/security/limits.d/90-train.conf": GOOD})
    s = one(run_check("limits.pam_stack", rt))
    assert s.status is Status.FAIL and "common-gone" in s.message
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.FAIL and r.actual == "login refused"


def test_nofile_above_nr_open(make_root) -> None:
    conf = {"/etc/security/limits.conf": "alice - nofile 2000000\n"}
    base = {k: v for k, v in DEBIAN.items() if k != "/lib/systemd/systemd"}  # nr_open 1048576
    r = one(run_check("limits.effective", make_root({**base, **conf}), NOFILE_SOFT,
                      user="alice"))
    # Debian ignores the EPERM: nofile stays what sshd had (systemd's default 1024:524288)
    assert r.status is Status.FAIL and r.actual == "1024" and "fs.nr_open" in r.message
    r = one(run_check("limits.effective", make_root({**ROCKY, **conf}), NOFILE_SOFT,
                      user="alice"))
    assert r.status is Status.FAIL and r.actual == "login refused", r.message


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


# ------------------------------------------------------------------ issue 17
def test_clamped_soft_names_the_hard_line(make_root) -> None:
    """soft above hard: pam_limits clamps soft to hard (oracle:
    test_limits_oracle.test_clamped_soft_names_the_hard_line); the result cites the line
    that set the hard value and says the soft one was clamped."""
    rt = root(make_root, DEBIAN, **{"/etc/security/limits.conf":
                                    "alice soft nofile 200000\nalice hard nofile 65536\n"})
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.PASS and r.actual == "65536", r.message
    assert "clamped to the hard limit from etc/security/limits.conf:2" in r.message
    assert "etc/security/limits.conf:1 is higher" in r.message
    ev = r.evidence[-1]
    assert ev.source == "etc/security/limits.conf:2" and "soft clamped" in ev.value
    h = one(run_check("limits.effective", rt, NOFILE_HARD, user="alice"))
    assert "clamped" not in h.message and h.evidence[-1].source == "etc/security/limits.conf:2"


def test_unknown_pam_version_assumption_is_stated_and_applied(make_root) -> None:
    from aiaudit.checks.legacy_limits import pam_build

    from aiaudit.core.host import Host

    base = {k: v for k, v in DEBIAN.items()
            if k not in ("/var/lib/dpkg/status", "/etc/security/limits.conf")}
    base["/etc/security/limits.d/90-train.conf"] = GOOD
    rt = make_root(base)
    b = pam_build(Host(str(rt), live=False))
    assert b.note.endswith("assuming Debian 12's PAM 1.5.2") and b.vt == (1, 5, 2)
    # PAM 1.5.2 refuses a session without limits.conf: the assumption is applied
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.actual == "login refused", r.message
    # Debian 13 ships PAM 1.7.0: a missing limits.conf is not fatal there
    rt = make_root({**base, "/etc/os-release": 'ID=debian\nVERSION_ID="13"\n'})
    b = pam_build(Host(str(rt), live=False))
    assert "Debian 13's PAM 1.7.0" in b.note and not b.missing_conf_fatal
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="alice"))
    assert r.status is Status.PASS, r.message
    rt = make_root({**base, "/etc/os-release": 'ID=debian\n'})
    assert "Debian 12's; release unknown not known" in pam_build(Host(str(rt),
                                                                      live=False)).note


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


def test_nolimits_line_for_su_keeps_the_callers_limits(make_root) -> None:
    """'<domain> -': the session keeps what the process had (the oracle's "child" limits,
    see tests/oracle/pam_limits_corpus.predict); for su that is the caller's shell."""
    rt = root(make_root, DEBIAN, **{"/etc/security/limits.conf": "@gpu -\n",
                                    "/etc/pam.d/su": "session required pam_limits.so\n"})
    r = one(run_check("limits.effective", rt, {**NOFILE_SOFT, "services": ["su"]},
                      user="alice"))
    assert "the session keeps the caller's limits (the shell that ran su)" in r.message
    assert "systemd's default service limits\"" not in r.message


def test_missing_passwd_error_names_it(make_root) -> None:
    base = {k: v for k, v in DEBIAN.items() if k != "/etc/passwd"}
    r = one(run_check("limits.effective", root(make_root, base), MEMLOCK_HARD, user="alice"))
    assert r.status is Status.ERROR and "etc/passwd is missing" in r.message
    assert [(e.kind, e.source, e.value) for e in r.evidence] == [
        ("default", "accounts: etc/passwd", "no such file")]
