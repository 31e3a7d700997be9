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


def test_nsswitch_last_line_of_a_database_counts() -> None:
    """glibc 2.36 (checked with getent and libnss-extrausers): a database named twice takes
    its last line; names are case-sensitive (``PASSWD:`` is no passwd line)."""
    text = ("# site\npasswd: files\ngroup: files # local\npasswd:  files sss [NOTFOUND=return]"
            " ldap # directory\nPASSWD: files\n")
    assert pw.parse_nsswitch(text)["passwd"] == ["files", "sss", "ldap"]
    assert pw.nsswitch_line(text, "passwd") == (
        4, "passwd:  files sss [NOTFOUND=return] ldap")
    assert pw.nsswitch_line(text, "group") == (3, "group: files")
    assert pw.nsswitch_line(text, "shadow") is None
    assert pw.remote_sources(pw.parse_nsswitch(text), "passwd") == ["sss", "ldap"]


def test_database_with_a_directory_asks_it() -> None:
    """A live database answers lookups from the system's directory (NSS); the files'
    entries stay what can be listed."""
    alice = pw.Account("alice", 5001, 5001)
    gpu = pw.Group("gpu", 5002, ("alice",))

    class Directory:
        def passwd(self, name: str) -> pw.Account | None:
            return alice if name == "alice" else None

        def group(self, name: str) -> pw.Group | None:
            return gpu if name == "gpu" else None

        def group_by_gid(self, gid: int) -> pw.Group | None:
            return gpu if gid == 5002 else None

        def grouplist(self, name: str, gid: int) -> frozenset[int]:
            return frozenset({gid, 5002})

    files, _ = pw.parse_passwd("root:x:0:0::/root:/bin/sh\n")
    db = pw.Database(tuple(files), (), nss=Directory())
    assert db.user("alice") == alice and db.user("root") is None  # NSS, not the files
    assert db.group("gpu") == gpu and db.group_by_gid(5002) == gpu
    assert db.supplementary_gids(alice) == {5001, 5002}
    assert [a.name for a in db.accounts] == ["root"]
