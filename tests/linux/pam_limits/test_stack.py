"""The PAM session stack walk and sshd's UsePAM (:mod:`aiaudit.linux.pam_limits.stack`,
:mod:`aiaudit.linux.pam_limits.stack`); the walk is compared with the real libpam in
``test_oracle.py``."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.pam_limits.stack import LimitsCall, not_applicable, pam_stack, simple_use_pam


def host(make_root, files: dict[str, str]) -> Host:
    return Host(str(make_root(files)), live=False)


def test_walk_follows_each_include_kind_for_session_lines_only(make_root) -> None:
    h = host(make_root, {
        "/etc/pam.d/svc": "@include common\nauth include auth-only\n"
                          "session substack sub\n-session optional pam_limits.so set_all\n",
        "/etc/pam.d/common": "session required pam_limits.so conf=/a conf=/b\n",
        "/etc/pam.d/auth-only": "session required pam_limits.so\n",
        "/usr/lib/pam.d/sub": "account required pam_limits.so\n"
                              "session [default=ignore] /lib/security/pam_limits.so\n"})
    st = pam_stack(h, "svc")
    assert st.file == "/etc/pam.d/svc" and not st.broken
    assert st.files == ["/etc/pam.d/svc", "/etc/pam.d/common", "/usr/lib/pam.d/sub"]
    assert [(c.file, c.line) for c in st.calls] == [
        ("/etc/pam.d/common", 1), ("/usr/lib/pam.d/sub", 2), ("/etc/pam.d/svc", 4)]
    common, sub, own = st.calls
    assert common.conf == "/b" and common.fatal and not common.set_all
    assert not sub.fatal and own.set_all and not own.fatal


def test_missing_includes_break_the_stack_and_loops_stop(make_root) -> None:
    h = host(make_root, {"/etc/pam.d/svc": "@include gone\nsession include /nope\n",
                         "/etc/pam.d/loop": "session include loop\n"})
    st = pam_stack(h, "svc")
    assert st.broken == ["/etc/pam.d/svc:1: @include gone not found",
                         "/etc/pam.d/svc:2: include /nope not found"]
    loop = pam_stack(h, "loop")
    assert loop.problems == ["/etc/pam.d/loop: includes nested too deeply"] and not loop.calls


def test_other_is_the_fallback_and_no_file_is_not_applicable(make_root) -> None:
    h = host(make_root, {"/etc/pam.d/other": "session required pam_limits.so\n"})
    assert pam_stack(h, "jupyterhub").file == "/etc/pam.d/other"
    bare = host(make_root, {"/etc/pam.d/login": "session required pam_unix.so\n"})
    assert pam_stack(bare, "svc").problems == ["no PAM configuration for svc (nor 'other')"]
    assert not_applicable(bare, "svc") == ("no PAM configuration for svc (neither "
                                           "/etc/pam.d/svc nor 'other')")
    assert not_applicable(bare, "login") is None
    assert not_applicable(bare, "sshd") == "sshd is not installed"


def test_fatal_controls() -> None:
    def call(control: str) -> LimitsCall:
        return LimitsCall("/f", 1, control, (), "")

    assert call("required").fatal and call("requisite").fatal
    assert not call("optional").fatal and not call("sufficient").fatal
    assert call("[success=ok default=bad]").fatal
    assert not call("[success=ok default=ignore]").fatal


def test_simple_use_pam(make_root) -> None:
    assert simple_use_pam(host(make_root, {})) == (None, None)
    use, ev = simple_use_pam(host(make_root, {"/etc/ssh/sshd_config": "Port 22\n"}))
    assert use is False and ev.kind == "default"
    # the first value wins, an Include is read where it stands, Match ends the search
    h = host(make_root, {"/etc/ssh/sshd_config": "Include conf.d/*.conf\nUsePAM no\n",
                         "/etc/ssh/conf.d/10-pam.conf": "usepam=yes # site\n"})
    use, ev = simple_use_pam(h)
    assert use is True and ev.source == "etc/ssh/conf.d/10-pam.conf:1"
    h = host(make_root, {"/etc/ssh/sshd_config": "Match User x\nUsePAM yes\n"})
    assert simple_use_pam(h)[0] is False
