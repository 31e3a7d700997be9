"""passwd / group / nsswitch parsers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.accounts import passwd as pw


def test_entries_and_lookups() -> None:
    users, compat = pw.parse_passwd("root:x:0:0:root:/root:/bin/bash\nbad:x:z:1::/:\n"
                                    "alice:x:1000:1000::/home/alice:/bin/sh\n"
                                    "alice:x:1001:1001::/:/bin/sh\n+::::::\n")
    groups, _ = pw.parse_group("gpu:x:2000:alice, bob\ngpu:x:2001:carol\nalice:x:1000:\n")
    assert compat and [u.name for u in users] == ["root", "alice", "alice"]
    db = pw.Database(tuple(users), tuple(groups))
    alice = db.user("alice")
    assert alice.uid == 1000 and alice.line == 3  # the first entry wins
    assert db.group("gpu").gid == 2000 and db.group("gpu").members == ("alice", "bob")
    assert db.supplementary_gids(alice) == {1000, 2000}
    assert db.group_by_gid(2001).name == "gpu"


def test_nsswitch_remote_sources() -> None:
    ns = pw.parse_nsswitch("passwd: files systemd\ngroup: files [NOTFOUND=return] sss # x\n")
    assert pw.remote_sources(ns, "passwd") == []
    assert pw.remote_sources(ns, "group") == ["sss"]
    assert pw.remote_sources({}, "group") == []


@given(st.text(max_size=2000))
def test_any_text(text: str) -> None:
    for fn in (pw.parse_passwd, pw.parse_group, pw.parse_nsswitch):
        try:
            fn(text)
        except ParseError:
            assert "\x00" in text
