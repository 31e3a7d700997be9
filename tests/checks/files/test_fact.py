"""``files.fact`` on fixture roots, and the bounded pattern matcher behind it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import jsonschema
import pytest
from aiaudit.checks.files.fact import SCHEMA
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core.model import Status
from aiaudit.core.ruleset.linematch import PatternError, compile_pattern
from tests.helpers import CpuTime, run_check

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
    assert m.remediation.snippets[0].content == "chmod go-w /etc/motd"
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
    with CpuTime() as t:
        r = fact(root, path="/etc/big.conf", contains=["(a+)+$b", "a*a*a*b", "(a|aa)*c"])
    assert r.status is Status.FAIL
    assert t.seconds < 20, t.seconds  # CPU: Python's re needs hours on the first line


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


# ------------------------------------------------------------------ issue 25: evasion, cost
def test_not_contains_sees_a_line_past_64_kib(make_root) -> None:
    """Only the first 64 KiB of a line used to be searched: a NOPASSWD after 70,000
    spaces passed a `not_contains: [NOPASSWD]` rule."""
    line = "alice ALL=(ALL)" + " " * 70_000 + "NOPASSWD: ALL"
    root = make_root({"/etc/sudoers.d/alice": f"# x\n{line}\n"})
    r = fact(root, path="/etc/sudoers.d/alice", not_contains=["NOPASSWD"])
    assert r.status is Status.FAIL and "line 2 matches 'NOPASSWD'" in r.message
    assert r.evidence[0].source == "etc/sudoers.d/alice:2"
    # the evidence shows what matched, not 200 characters of the padding
    assert r.evidence[0].value == "alice ALL=(ALL) … NOPASSWD: ALL", r.evidence[0].value
    # the same with a pattern that has no literal to look for first (the VM reads it all)
    assert compile_pattern(r"\s[Nn][Oo][Pp]").required is None
    r = fact(root, path="/etc/sudoers.d/alice", not_contains=[r"\s[Nn][Oo][Pp]"])
    assert r.status is Status.FAIL and "line 2 matches" in r.message
    assert r.evidence[0].value == line[:200]


@pytest.mark.parametrize("sep", ["\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\r"])
def test_a_line_ends_only_at_a_line_feed(make_root, sep: str) -> None:
    """sudo, sshd and systemd end a line at a line feed only; str.splitlines() also split
    at these, so `ALL=(ALL)<VT>NOPASSWD` escaped a pattern spanning them."""
    root = make_root({"/etc/sudoers.d/x": f"alice ALL=(ALL){sep}NOPASSWD: ALL\n"})
    r = fact(root, path="/etc/sudoers.d/x", not_contains=[r"ALL=\(ALL\)\s*NOPASSWD"])
    assert r.status is Status.FAIL and "line 1 matches" in r.message


def test_crlf_lines_lose_their_carriage_return(make_root) -> None:
    root = make_root({"/etc/x.conf": "a=1\r\nStorage=none\r\n"})
    r = fact(root, path="/etc/x.conf", contains=["^Storage=none$"])
    assert r.status is Status.PASS and r.evidence[0].source == "etc/x.conf:2"


COSTLY = ["(.{0,99}x){19}", "([a-z]{0,99}[0-9]{0,99}q){2}", "(.{0,60}.{0,60}y){9}"]
"""Accepted patterns without a literal to look for first, each costing thousands of VM
steps per character (0.1-1.4 ms per character: hours on a 4 MB file)."""


def test_costly_patterns_are_an_error_within_a_bounded_cost(make_root) -> None:
    """Three rules with costly patterns on one large file: each stops at its work budget
    (about 1 s of CPU) with an error result, never a pass; the old matcher spent ~80 s
    per pattern on this file, on threads the rule timeout abandoned but never stopped."""
    root = make_root({"/etc/big.conf": ("a" * 4000 + "\n") * 250})
    with CpuTime() as t:
        results = [fact(root, path="/etc/big.conf", not_contains=[p]) for p in COSTLY]
    for r in results:
        assert r.status is Status.ERROR, r.message
        assert "cannot decide whether a line matches" in r.message
        assert "matching steps" in r.message and "simplify the pattern" in r.message
    assert t.seconds < 3 * 3, f"{t.seconds:.1f} s of CPU for three rules"


def test_a_failing_fact_decides_beside_an_undecided_pattern(make_root) -> None:
    """The budget cannot turn a failing rule into an error (an error passes a prolog with
    --on-error pass): a fact that fails decides."""
    root = make_root({"/etc/big.conf": ("a" * 4000 + "\n") * 250})
    os.chmod(root / "etc/big.conf", 0o666)
    r = fact(root, path="/etc/big.conf", mode_max="0644", not_contains=[COSTLY[0]])
    assert r.status is Status.FAIL and "bits outside 0644" in r.message
    assert "not decided: whether a line matches" in r.message
    r = fact(root, path="/etc/big.conf", contains=["^b"], not_contains=[COSTLY[0]])
    assert r.status is Status.FAIL and "no line matches '^b'" in r.message


def test_honest_patterns_on_a_4_mb_file_are_quick(make_root) -> None:
    text = "".join(f"Defaults env_reset,mail_badpass {i}\n" for i in range(110_000))
    assert 3_900_000 < len(text) < 4 * 1024 * 1024  # just under the read cap
    root = make_root({"/etc/sudoers": text + "alice ALL=(ALL) NOPASSWD: ALL\n"})
    with CpuTime() as t:
        bad = fact(root, path="/etc/sudoers", not_contains=["NOPASSWD", r"^\s*alice\s"])
        good = fact(root, path="/etc/sudoers", contains=[r"^Defaults\s+env_reset",
                                                         r"mail_badpass 109999$"],
                    ignore_case=True)
    assert bad.status is Status.FAIL and "line 110001 matches 'NOPASSWD'" in bad.message
    assert good.status is Status.PASS, good.message
    assert t.seconds < 2, f"{t.seconds:.1f} s of CPU"


# ------------------------------------------------------------------ issue 25: quoted fixes
def _run_fix(tmp_path: Path, command: str) -> list[list[str]]:
    """Run a fix command with sh, chmod and chown replaced by scripts that record their
    arguments (one line each, NUL-separated): what the commands would really receive."""
    bin_dir, log = tmp_path / "bin", tmp_path / "argv.log"
    bin_dir.mkdir(exist_ok=True)
    for name in ("chmod", "chown"):
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\nprintf "%s\\0" {name} "$@" >> "{log}"\n'
                        f'printf "\\n" >> "{log}"\n')
        tool.chmod(0o755)
    import subprocess

    log.write_text("")
    subprocess.run(["/bin/sh", "-c", command], check=True, cwd=tmp_path,
                   env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    return [ln.rstrip("\0").split("\0") for ln in log.read_text().splitlines()]


def test_fix_commands_are_quoted_for_the_shell(make_root, tmp_path: Path) -> None:
    """A path with a quote broke the fix; an owner with `;` ran a command on a live
    apply."""
    path = "/srv/bob's data; touch PWNED"
    root = make_root({path: "x\n", "/etc/passwd": PASSWD, "/etc/group": GROUP})
    os.chmod(root / path.lstrip("/"), 0o666)
    owner = "alice;touch${IFS}PWNED-OWNER"
    group = "$(touch${IFS}PWNED-G)"
    r = fact(root, path=path, mode_max="0640", owner=[owner], group=[group])
    assert r.status is Status.FAIL
    calls = []
    for snippet in r.remediation.snippets:
        calls += _run_fix(tmp_path, snippet.content)
    assert calls == [["chmod", "g-w,o-rw", path],
                     ["chown", f"{owner}:{group}", path]]
    assert not list(tmp_path.glob("PWNED*"))


def test_an_owner_starting_with_a_dash_is_not_an_option(make_root, tmp_path: Path) -> None:
    root = make_root({"/etc/x": "x\n"})
    r = fact(root, path="/etc/x", owner=["-R"])
    assert r.status is Status.FAIL
    (snippet,) = r.remediation.snippets
    assert _run_fix(tmp_path, snippet.content) == [["chown", "--", "-R", "/etc/x"]]


@pytest.mark.parametrize("mode,limit,want", [
    (0o402, "0640", "o-w"),            # an octal chmod 0640 would grant u+w and g+r
    (0o4755, "0755", "u-s"), (0o1777, "0777", "o-t"), (0o777, "0700", "go-rwx"),
    (0o666, "0600", "go-rw"), (0o2775, "0755", "g-ws")])
def test_chmod_only_drops_bits(make_root, tmp_path: Path, mode: int, limit: str,
                               want: str) -> None:
    root = make_root({"/etc/x": "x\n"})
    os.chmod(root / "etc/x", mode)
    r = fact(root, path="/etc/x", mode_max=limit)
    assert r.status is Status.FAIL
    assert r.remediation.snippets[0].content == f"chmod {want} /etc/x"
    real = tmp_path / "real"
    real.write_text("x")
    os.chmod(real, mode)
    import subprocess

    subprocess.run(["chmod", want, str(real)], check=True)
    assert os.stat(real).st_mode & 0o7777 == mode & int(limit, 8)
