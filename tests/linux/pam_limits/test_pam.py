"""PAM service file parser."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.pam_limits import pam


def test_rules_includes_comments_and_brackets() -> None:
    text = ("#%PAM-1.0\n@include common-auth\n"
            "session [success=ok default=bad] pam_selinux.so close\n"
            "Session   Required  pam_limits.so conf=/etc/x.conf # trailing\n"
            "-session optional pam_systemd.so\n"
            "session include common-session\n"
            "auth required pam_env.so [envfile=/a b]\n"
            "bogus required pam_x.so\nsession required\n"
            "session required \\\n  pam_mkhomedir.so\n")
    got = pam.parse(text)
    assert [(r.type, r.control, r.module) for r in got] == [
        ("@include", "", "common-auth"),
        ("session", "[success=ok default=bad]", "pam_selinux.so"),
        ("session", "required", "pam_limits.so"),
        ("session", "optional", "pam_systemd.so"),
        ("session", "include", "common-session"),
        ("auth", "required", "pam_env.so"),
        ("session", "required", "pam_mkhomedir.so"),
    ]
    assert got[2].args == ("conf=/etc/x.conf",) and got[2].line == 4
    assert got[3].silent and got[5].args == ("envfile=/a b",)
    assert got[6].line == 10


@given(st.text(max_size=2000))
def test_any_text(text: str) -> None:
    try:
        pam.parse(text)
    except ParseError:
        assert "\x00" in text
