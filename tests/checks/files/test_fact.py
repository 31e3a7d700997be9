"""``files.fact`` on fixture roots, and the bounded pattern matcher behind it."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import jsonschema
import pytest
from aiaudit.checks.files.fact import SCHEMA
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core.model import Status
from aiaudit.core.ruleset.linematch import PatternError, compile_pattern
from tests.helpers import run_check

PASSWD = "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/a:/bin/sh\n"
GROUP = "root:x:0:\nshadow:x:42:\nalice:x:1000:\n"


def fact(root: Path, **params):
    jsonschema.Draft202012Validator(SCHEMA).validate(params)
    [r] = run_check("files.fact", root, params)
    return r


@pytest.fixture
def root(make_root) -> Path:
    r = make_root({"/etc/passwd": PASSWD, "/etc/group": GROUP,
                   "/etc/systemd/coredump.conf": "[Coredump]\n#Storage=external\n"
                                                 "Storage=none\nProcessSizeMax=0\n",
                   "/etc/shadow": "root:*:19000::::::\n", "/etc/motd": "hi\n"},
                  links={"/etc/localtime": "../usr/share/zoneinfo/UTC",
                         "/etc/escape": "../../../../etc/hostname",
                         "/etc/dangling": "/nonexistent"},
                  dirs=("usr/share/zoneinfo/UTC",))
    os.chmod(r / "etc/shadow", 0o640)
    os.chmod(r / "etc/motd", 0o666)
    return r


def test_exists_absent_and_types(root: Path) -> None:
    assert fact(root, path="/etc/motd").status is Status.PASS
    assert fact(root, path="/etc/motd", state="file").status is Status.PASS
    assert fact(root, path="/etc/nope", state="absent").status is Status.PASS
    r = fact(root, path="/etc/motd", state="absent")
    assert r.status is Status.FAIL and r.actual == "present"
    assert fact(root, path="/etc/nope").status is Status.FAIL
    assert fact(root, path="/etc", state="directory").status is Status.PASS
    assert fact(root, path="/etc/motd", state="directory").status is Status.FAIL


def test_symlink_target_resolves_inside_the_root(root: Path) -> None:
    ok = fact(root, path="/etc/localtime", state="symlink", target="/usr/share/zoneinfo/UTC")
    assert ok.status is Status.PASS and "resolves to /usr/share/zoneinfo/UTC" in ok.message
    bad = fact(root, path="/etc/localtime", state="symlink", target="/usr/share/zoneinfo/CET")
    assert bad.status is Status.FAIL
    esc = fact(root, path="/etc/escape", state="symlink", target="/etc/hostname")
    assert esc.status is Status.FAIL and "escapes the root" in esc.message
    assert fact(root, path="/etc/dangling", state="file").status is Status.FAIL
    assert fact(root, path="/etc/motd", state="symlink").status is Status.FAIL


def test_mode_and_owner_at_most(root: Path) -> None:
    r = fact(root, path="/etc/shadow", mode_max="0640", owner=["root"], group=["root", 42])
    assert r.status is Status.PASS, r.message
    m = fact(root, path="/etc/motd", mode_max="0644")
    assert m.status is Status.FAIL and "bits outside 0644 (0022)" in m.message
    assert m.remediation.snippets[0].content == "chmod 0644 '/etc/motd'"
    uid = os.stat(root / "etc/motd").st_uid
    o = fact(root, path="/etc/motd", owner=["alice"])
    assert (o.status is Status.PASS) is (uid == 1000)


def test_contains_and_not_contains(root: Path) -> None:
    conf = "/etc/systemd/coredump.conf"
    r = fact(root, path=conf, contains=[r"^\s*Storage\s*=\s*none\s*$",
                                        r"^ProcessSizeMax=0$"])
    assert r.status is Status.PASS and r.evidence[0].source == "etc/systemd/coredump.conf:3"
    bad = fact(root, path=conf, not_contains=[r"^\s*storage=none"], ignore_case=True)
    assert bad.status is Status.FAIL and "line 3 matches" in bad.message
    assert fact(root, path=conf, contains=["^Storage=external"]).status is Status.FAIL


def test_catastrophic_pattern_does_not_hang(make_root) -> None:
    root = make_root({"/etc/big.conf": ("a" * 10000 + "\n") * 4})
    t = time.monotonic()
    r = fact(root, path="/etc/big.conf", contains=["(a+)+$b", "a*a*a*b", "(a|aa)*c"])
    assert r.status is Status.FAIL
    assert time.monotonic() - t < 20  # Python's re needs hours on the first line


@pytest.mark.parametrize("bad,why", [(r"(a)\1", "backreferences"), ("(?=x)", "look"),
                                     ("(?i)x", "inline flags"), ("x{500}", "repeat counts"),
                                     ("a(", "invalid pattern")])
def test_refused_patterns_say_why(make_root, bad: str, why: str) -> None:
    root = make_root({"/etc/x": "x\n"})
    r = fact(root, path="/etc/x", contains=[bad])
    assert r.status is Status.ERROR and why in r.message


def test_schema_refuses() -> None:
    v = jsonschema.Draft202012Validator(SCHEMA)
    for bad in ({"path": "etc/x"}, {"path": "/x", "state": "gone"},
                {"path": "/x", "target": "/y"},            # target needs state symlink
                {"path": "/x", "mode_max": "999"}, {"path": "/x", "contains": []}):
        with pytest.raises(jsonschema.ValidationError):
            v.validate(bad)


_ATOMS = st.sampled_from(["a", "b", ".", "[ab]", "[^a]", r"\d", r"\s", "(a|b)", "(ab|c)",
                          "x"])
_QUANT = st.sampled_from(["", "*", "+", "?", "{1,2}", "*?"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ATOMS, _QUANT), min_size=1, max_size=5), st.booleans(),
       st.booleans(), st.text(alphabet="abx1 c", max_size=12))
def test_matcher_agrees_with_re(parts, bol: bool, eol: bool, line: str) -> None:
    """On patterns both engines accept (and small lines, where re is quick) the answers
    are the same."""
    pat = ("^" if bol else "") + "".join(a + q for a, q in parts) + ("$" if eol else "")
    assert compile_pattern(pat).search(line) is bool(re.search(pat, line))


def test_ignore_case() -> None:
    assert compile_pattern("storage=NONE", ignore_case=True).search("Storage=none")
    assert not compile_pattern("storage=NONE").search("Storage=none")
    with pytest.raises(PatternError):
        compile_pattern("x" * 600)


def test_validate_positions_a_refused_pattern(tmp_path: Path) -> None:
    from tests.helpers import cli

    f = tmp_path / "r.yaml"
    f.write_text("ruleset: t\nversion: 1\nrules:\n  - id: F-ONE\n    check: files.fact\n"
                 "    severity: low\n    title: Ensure x\n    params:\n      path: /etc/x\n"
                 '      contains: ["ok", "(a)\\\\1"]\n')
    res = cli("validate", str(f))
    assert res.code == 2
    assert f"{f}:10:24: rules/0/params/contains/1:" in res.err
    assert "backreferences are not supported" in res.err
