"""limits.effective on fixture roots: the limits a login of the training user gets."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.limits.roots import (
    DEBIAN,
    DPKG,
    GOOD,
    MEMLOCK_HARD,
    NOFILE_HARD,
    NOFILE_SOFT,
    ROCKY,
    one,
    root,
)
from tests.helpers import run_check


def test_no_user_skips_with_how_to(make_root) -> None:
    """Another root: only --user and settings.user name its user (the CLI ignores
    $SUDO_USER there, so the message must not suggest it); the real /: every source."""
    r = one(run_check("limits.effective", root(make_root, DEBIAN), NOFILE_SOFT))
    assert r.status is Status.SKIP
    assert r.message.startswith("no training user given: pass --user NAME")
    assert "settings.user" in r.message and "SLURM_JOB_USER" not in r.message
    assert "SUDO_USER is not used for another root" in r.message
    for live in (True, False):  # the real /: live or --offline, sudo's caller counts
        r = one(run_check("limits.effective", "/", NOFILE_SOFT, live=live))
        assert r.status is Status.SKIP
        assert "SLURM_JOB_USER" in r.message and "sudo (SUDO_USER)" in r.message


def test_unknown_user_is_an_error(make_root) -> None:
    r = one(run_check("limits.effective", root(make_root, DEBIAN), NOFILE_SOFT, user="carol"))
    assert r.status is Status.ERROR and "does not exist in etc/passwd" in r.message


def test_unknown_user_with_sssd_is_could_not_look(make_root) -> None:
    """Offline, a user the image's files lack while NSS names a directory: an error saying
    which sources would decide, with the nsswitch line; never a silent skip."""
    rt = root(make_root, DEBIAN, **{"/etc/nsswitch.conf":
                                    "# site\npasswd:  files sss [NOTFOUND=return] ldap\n"})
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="carol"))
    assert r.status is Status.ERROR
    assert r.message.startswith("could not look: training user carol is not in the scanned "
                                "root's etc/passwd, and NSS sources beyond the files "
                                "(sss, ldap) would decide")
    assert [(e.source, e.value) for e in r.evidence] == [
        ("etc/nsswitch.conf:2", "passwd:  files sss [NOTFOUND=return] ldap")]
    # NIS compat entries in passwd: the file itself says more users may exist
    rt = root(make_root, DEBIAN, **{"/etc/passwd": "root:x:0:0::/root:/bin/sh\n+::::::\n",
                                    "/etc/nsswitch.conf": "passwd: compat\n"})
    r = one(run_check("limits.effective", rt, NOFILE_SOFT, user="carol"))
    assert r.status is Status.ERROR and "(nis (compat))" in r.message
    assert "etc/passwd" in [e.source for e in r.evidence]


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


def test_clamped_soft_names_the_hard_line(make_root) -> None:
    """soft above hard: pam_limits clamps soft to hard (oracle: tests/linux/pam_limits/
    test_oracle.py::test_clamped_soft_names_the_hard_line); the result cites the line that
    set the hard value and says the soft one was clamped."""
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
    from aiaudit.core.host import Host
    from aiaudit.linux.pam_limits.files import pam_build

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


def test_effective_min_and_max(make_root) -> None:
    """limits.effective takes a max beside its min (a range of one training user)."""
    import jsonschema
    from aiaudit.checks.limits.effective import SCHEMA as EFFECTIVE_SCHEMA

    rt = make_root({**DEBIAN, "/etc/security/limits.d/90-train.conf":
                    "alice - nofile 1048576\n"})
    params = {"item": "nofile", "type": "hard", "min": 65536, "max": 524288}
    jsonschema.Draft202012Validator(EFFECTIVE_SCHEMA).validate(params)
    [r] = run_check("limits.effective", rt, params, user="alice")
    assert r.status is Status.FAIL and r.expected == ">= 65536 and <= 524288"
    [ok] = run_check("limits.effective", rt, {**params, "max": "unlimited"}, user="alice")
    assert ok.status is Status.PASS
