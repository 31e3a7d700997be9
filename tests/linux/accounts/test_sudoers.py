"""sudoers(5) parsing; the policy decision is tested in tests/linux/accounts/test_sudo.py
and, against the real sudo, in tests/checks/accounts/test_sudo_nopasswd.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.accounts import sudoers as sp


def test_entries_and_tag_inheritance() -> None:
    text = ("Defaults env_reset\nDefaults:alice !authenticate\n"
            "User_Alias ADMINS = alice, %wheel : OPS = bob\nCmnd_Alias ALLC = ALL\n"
            "alice ALL = (root) NOPASSWD: /usr/bin/apt update, PASSWD: ALL : gpu1 = ALL\n"
            "#1000 ALL=(ALL:ALL) NOPASSWD:ALL  # uid, then a comment\n"
            "@includedir /etc/sudoers.d\n#include \"/etc/sudoers.local\"\n"
            "bob ALL=(ALL) sha256:abc /bin/ls, !/bin/su, /bin/a\\,b\n"
            "carol ALL = (ALL) TIMEOUT=5m NOPASSWD: \\\n    ALL\n")
    e = sp.parse(text)
    assert e[0] == sp.Default("", (), ("env_reset",), 1)
    assert e[1] == sp.Default(":", ("alice",), ("!authenticate",), 2)
    assert [a.name for a in e[2:5]] == ["ADMINS", "OPS", "ALLC"]
    alice = e[5]
    assert [(c.hosts, c.runas_users, c.tags, c.command) for c in alice.cmnds] == [
        (("ALL",), ("root",), ("NOPASSWD",), "/usr/bin/apt update"),
        (("ALL",), ("root",), ("PASSWD",), "ALL"),
        (("gpu1",), None, (), "ALL"),  # tags and runas do not cross ':'
    ]
    assert e[6].users == ("#1000",) and e[6].cmnds[0].tags == ("NOPASSWD",)
    assert e[7] == sp.Include("/etc/sudoers.d", True, 7)
    assert e[8] == sp.Include("/etc/sudoers.local", False, 8)
    assert [(c.command, c.negated) for c in e[9].cmnds] == [
        ("/bin/ls", False), ("/bin/su", True), ("/bin/a\\,b", False)]
    assert e[10].cmnds[0].tags == ("NOPASSWD",) and e[10].cmnds[0].command == "ALL"
    assert e[10].line == 10


@pytest.mark.parametrize("bad", ["alice ALL", "User_Alias lower = x", "alice ALL = (root /x"])
def test_refused_with_line(bad: str) -> None:
    with pytest.raises(ParseError) as exc:
        sp.parse("# ok\n" + bad + "\n", "etc/sudoers")
    assert exc.value.line == 2


def test_includedir_names() -> None:
    assert sp.include_files(["b", "a", "README.md", "x~", "90-cloud"]) == ["90-cloud", "a", "b"]


@given(st.text(max_size=400))
def test_any_text(text: str) -> None:
    try:
        sp.parse(text)
    except ParseError:
        pass
