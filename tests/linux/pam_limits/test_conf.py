"""pam_limits parsing and decision (pure), including SEMANTICS §1.11 edge cases.

The expected values here were confirmed with the real module (Debian 1.5.2-6); the broad
comparison is ``tests/linux/pam_limits/test_oracle.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.pam_limits import conf as lp

INF = lp.RLIM_INFINITY
GROUPS = {"alice": {"alice", "gpu"}, "root": {"root", "wheel"}, "bob": {"gpu"}}
GIDS = {"alice": {1000, 2000}, "root": {0, 10}, "bob": {2000}}
UIDS = {"alice": (1000, 1000), "root": (0, 0), "bob": (1001, 2000)}


def who(name: str, unknown: bool = False) -> lp.Subject:
    uid, gid = UIDS[name]
    return lp.Subject(name, uid, gid,
                      in_group=lambda g: (g in GROUPS[name]) or (None if unknown else False),
                      in_gid=lambda g: g in GIDS[name])


def start(kind: int = lp.KERNEL) -> dict:
    return {"nofile": (lp.Side(1024, kind), lp.Side(20000, kind)),
            "memlock": (lp.Side(65536, kind), lp.Side(65536, kind))}


def run(files: dict[str, str], name: str = "alice", *, debian: bool = True,
        kind: int = lp.KERNEL, unknown: bool = False) -> lp.Decision:
    parsed = [(p, lp.parse(t, p)) for p, t in files.items()]
    return lp.decide(parsed, who(name, unknown), start(kind),
                     lp.Variant(debian_root=debian, nr_open=1048576))


def val(dec: lp.Decision, item: str = "nofile") -> tuple[int, int]:
    s, h = dec.limits[item]
    return s.value, h.value


def test_line_kinds() -> None:
    lines = lp.parse("* soft nofile 4096\n  @gpu - memlock unlimited # c\nalice -\n"
                     "1000x: - nofile 1\nbad line\n\n# only a comment\n", "/f")
    assert [ln.kind for ln in lines] == ["limit", "limit", "nolimits", "badrange", "invalid"]
    assert lines[1].raw == "@gpu - memlock unlimited" and lines[1].line == 2
    assert lines[0].where == "f:1"


def test_user_line_beats_later_star_across_files() -> None:
    dec = run({"/etc/security/limits.conf": "alice - nofile 4096\n",
               "/etc/security/limits.d/z.conf": "* - nofile 8192\n"})
    assert val(dec) == (4096, 4096)
    assert dec.limits["nofile"][0].line.file == "/etc/security/limits.conf"


def test_two_star_lines_last_wins() -> None:
    assert val(run({"a": "* - nofile 4096\n* - nofile 8192\n"})) == (8192, 8192)


def test_group_beats_star_and_uid_range_beats_group() -> None:
    assert val(run({"a": "@gpu - nofile 4096\n* - nofile 8192\n"})) == (4096, 4096)
    assert val(run({"a": "1000: - nofile 3000\n@gpu - nofile 8192\n"})) == (3000, 3000)


def test_gid_range_checks_primary_group_only() -> None:
    # alice's primary gid is 1000; she is in gpu (2000) only as a supplementary member
    assert val(run({"a": "@2000: - nofile 4096\n"})) == (1024, 20000)
    assert val(run({"a": "@:2000 - nofile 4096\n"})) == (4096, 4096)
    assert val(run({"a": "@2000: - nofile 4096\n"}, "bob")) == (4096, 4096)


def test_blocked_soft_side_skips_hard_side() -> None:
    dec = run({"a": "alice soft nofile 4096\n* - nofile 8192\n"})
    assert val(dec) == (4096, 20000)  # the '*' line returns before touching hard
    assert any("soft side" in why for _, why in dec.ignored)


def test_nolimits_line_discards_everything_even_earlier() -> None:
    dec = run({"a": "alice - nofile 4096\n", "b/00.conf": "@gpu -\n", "c": "* - nofile 1\n"})
    assert dec.status == "nolimits" and dec.nolimits_line.domain == "@gpu"
    assert run({"a": "* -\n* - nofile 4096\n"}).status == "applied"  # '* -' is ignored


def test_soft_only_is_clamped_to_inherited_hard() -> None:
    assert val(run({"a": "* soft nofile 50000\n"})) == (20000, 20000)


def test_units_and_loose_values() -> None:
    assert val(run({"a": "* - memlock 8G\n"}), "memlock") == (8192, 8192)
    assert val(run({"a": "* - memlock unlimited\n"}), "memlock") == (INF, INF)
    for word in ("-1", "-", "Infinity", "UNLIMITED"):
        assert val(run({"a": f"* hard memlock {word}\n"}), "memlock")[1] == INF
    assert val(run({"a": "* - nofile 10k\n"})) == (10, 10)
    assert val(run({"a": "* - nofile 0x100\n"})) == (0, 0)
    assert val(run({"a": "* hard nofile -5\n"}))[1] == 2**64 - 5
    assert val(run({"a": "* - nofile unlimited\n"})) == (1048576, 1048576)  # fs.nr_open
    dec = run({"a": "* - nofile abc\n"})
    assert val(dec) == (1024, 20000) and "wrong limit value" in dec.ignored[0][1]


def test_nofile_unlimited_before_152_stays_infinity() -> None:
    parsed = [("a", lp.parse("* - nofile unlimited\n"))]
    dec = lp.decide(parsed, who("alice"), start(), lp.Variant(nr_open=None))
    assert val(dec) == (INF, INF)


def test_case_comments_and_fields() -> None:
    assert val(run({"a": "* SOFT NOFILE 4096\n"}))[0] == 4096
    assert val(run({"a": "ALICE - nofile 4096\n"})) == (1024, 20000)  # domain case-sensitive
    assert val(run({"a": "* - nofile 4096#comment\n"})) == (4096, 4096)
    assert val(run({"a": "* - nofile\n"})) == (1024, 20000)  # 3 fields: invalid
    assert val(run({"a": "* hard nofile 7000 extra\n"}))[1] == 7000
    assert val(run({"a": "* soft memlock unlimited x\n"}), "memlock")[0] == 65536  # clamped
    assert val(run({"a": "* - nofile 4096\r\n"})) == (4096, 4096)


def test_percent_domains_ignored_for_rlimits() -> None:
    assert val(run({"a": "%gpu - nofile 4096\n% - nofile 4096\n"})) == (1024, 20000)


def test_long_lines_are_read_in_1023_byte_chunks() -> None:
    text = "#" + "x" * 1022 + "* - nofile 4096\n"
    lines = lp.parse(text)
    assert [ln.kind for ln in lines] == ["limit"] and lines[0].line == 1
    assert val(run({"a": text})) == (4096, 4096)
    assert val(run({"a": "#" + "x" * 1021 + "* - nofile 4096\n"})) == (1024, 20000)


def test_nul_ends_the_line() -> None:
    assert val(run({"a": "* - nofile 4000\x00junk\n* soft nofile 3000\n"})) == (3000, 4000)


def test_read_error_fails_the_session() -> None:
    dec = lp.decide([("a", lp.parse("* - nofile 1\n")), ("b", "Permission denied")],
                    who("alice"), start(), lp.Variant())
    assert dec.status == "failed" and "Permission denied" in dec.reason


def test_debian_root_only_explicit_lines() -> None:
    files = {"a": "* - nofile 4096\n@root - nofile 4096\n@wheel - nofile 4096\n"}
    assert val(run(files, "root")) == (1024, 20000)
    assert val(run(files, "root", debian=False)) == (4096, 4096)
    assert val(run({"a": "root - nofile 4096\n"}, "root")) == (4096, 4096)
    # ranges are compared with the uid (0) at user rank, even with an @ or % prefix
    assert val(run({"a": "@:0 - nofile 3000\n"}, "root")) == (3000, 3000)
    assert val(run({"a": "%:0 - nofile 3000\n"}, "root")) == (3000, 3000)
    assert val(run({"a": "@:10 - nofile 3000\n"}, "root")) == (1024, 20000)
    assert val(run({"a": "0: - nofile 4000\n@:0 - nofile 3000\n"}, "root")) == (3000, 3000)
    # "no limits" lines are not gated
    assert run({"a": "@wheel -\n"}, "root").status == "nolimits"


def test_inherited_start_left_alone() -> None:
    dec = run({"a": "* soft memlock 1024\n"}, kind=lp.NONE)
    assert "nofile" not in dec.limits
    assert val(dec, "memlock") == (65536, 65536)  # soft clamped to the inherited hard


def test_unknown_membership_is_not_a_no_match() -> None:
    dec = run({"a": "@ldapgroup - nofile 4096\n"}, unknown=True)
    assert [ln.domain for ln in dec.uncertain] == ["@ldapgroup"]
    assert not run({"a": "@ldapgroup - nofile 4096\n"}).uncertain


@pytest.mark.parametrize("domain,kind,lo,hi", [
    ("1000:", "min", 1000, 0), (":1000", "one", 1000, 1000), ("1000:2000", "mm", 1000, 2000),
    ("@:5", "one", 5, 5), ("%:5", "one", 5, 5), ("4294968296:", "min", 1000, 0),
])
def test_ranges(domain: str, kind: str, lo: int, hi: int) -> None:
    (ln,) = lp.parse(f"{domain} - nofile 1\n")
    assert (ln.range_kind, ln.range_min, ln.range_max) == (kind, lo, hi)


@pytest.mark.parametrize("domain", ["1000x:", ":", "@:", "1000:2000x", "a:b", ":-"])
def test_bad_ranges_skip_the_line(domain: str) -> None:
    (ln,) = lp.parse(f"{domain} - nofile 1\n")
    assert ln.kind == "badrange"


def test_proc_limits_and_systemd_values() -> None:
    text = ("Limit                     Soft Limit           Hard Limit           Units     \n"
            "Max open files            1024                 524288               files     \n"
            "Max locked memory         unlimited            unlimited            bytes     \n")
    assert lp.parse_proc_limits(text) == {"nofile": (1024, 524288), "memlock": (INF, INF)}
    assert lp.parse_systemd_limit("1024:524288", "nofile") == (1024, 524288)
    assert lp.parse_systemd_limit("8M", "memlock") == (8 * 2**20, 8 * 2**20)
    assert lp.parse_systemd_limit("infinity", "memlock") == (INF, INF)
    with pytest.raises(ParseError):
        lp.parse_systemd_limit("8M", "nofile")
    with pytest.raises(ParseError):
        lp.parse_systemd_limit("10:5", "nofile")


@given(st.binary(max_size=3000))
def test_parse_any_bytes(data: bytes) -> None:
    lines = lp.parse(data, "/x")
    assert all(ln.kind in ("limit", "nolimits", "invalid", "badrange") for ln in lines)
    lp.decide([("/x", lines)], who("alice"), start(), lp.Variant())


@given(st.text(max_size=2000))
def test_other_parsers_any_text(text: str) -> None:
    for fn in (lp.parse_proc_limits, lambda t: lp.parse_systemd_limit(t, "memlock")):
        try:
            fn(text)
        except ParseError:
            pass
