"""``aiaudit.core.ruleset.predicates``: ranges, sets and fields, the params every param-driven
check shares."""

from __future__ import annotations

import subprocess
from pathlib import Path

import jsonschema
import pytest
from aiaudit.checks.ssh.sshd_option import OPTION_SCHEMA, normalise_param
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core.model import Status
from aiaudit.core.ruleset.predicates import (
    Predicate,
    constraint_rules,
    elements,
    schema_properties,
)
from aiaudit.linux.sshd import config as sp
from tests.helpers import run_check
from tests.linux.sshd.sshd_corpus import SSHD, require_sshd

SCHEMA = {"type": "object", "additionalProperties": False,
          "properties": schema_properties(), **constraint_rules()}
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def P(**kw) -> Predicate:
    VALIDATOR.validate(kw)  # every shape used here is one a rule may write
    return Predicate.from_params(kw)


@pytest.mark.parametrize("value,ok", [("0", False), ("1", True), ("4", True), ("5", False),
                                      ("-3", False)])
def test_range_exclusive_min_inclusive_max(value: str, ok: bool) -> None:
    """0 < MaxAuthTries <= 4."""
    assert P(min=0, min_exclusive=True, max=4).ok(value) is ok


@settings(deadline=None)
@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(-50, 50), st.booleans(),
       st.booleans())
def test_range_matches_python(x: int, lo: int, hi: int, lx: bool, hx: bool) -> None:
    want = (x > lo if lx else x >= lo) and (x < hi if hx else x <= hi)
    assert P(min=lo, max=hi, min_exclusive=lx, max_exclusive=hx).ok(str(x)) is want


def test_range_text_and_failures() -> None:
    p = P(min=0, min_exclusive=True, max=300)
    assert p.text() == "> 0 and <= 300"
    assert p.failures("0") == ["not above 0"]
    assert p.failures("301") == ["above 300"]
    assert P(min=1, max=10, max_exclusive=True).failures("10") == ["not below 10"]


def test_range_on_text_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a number"):
        P(max=4).ok("yes")


def test_range_and_op_combine() -> None:
    p = P(op="ne", value=2, min=1, max=3)
    assert p.ok("1") and p.ok("3") and not p.ok("2")


@pytest.mark.parametrize("kw,value,ok", [
    ({"subset_of": ["aes256-gcm@openssh.com", "aes256-ctr"]}, "aes256-ctr,aes256-gcm@openssh.com",
     True),
    ({"subset_of": ["aes256-ctr"]}, "aes256-ctr,3des-cbc", False),
    ({"contains": ["admins"]}, "ops admins", True),
    ({"contains": ["admins", "ops"]}, "admins", False),
    ({"excludes": ["3des-cbc"]}, "aes256-ctr,3des-cbc", False),
    ({"excludes": ["3des-cbc"]}, "aes256-ctr", True),
    # AllowGroups written twice accumulates: order and duplicates do not matter
    ({"set_equals": ["ops", "admins"]}, "admins ops admins", True),
    ({"set_equals": ["ops", "admins"]}, "admins", False),
    ({"set_equals": ["ops"]}, "ops dev", False),
    ({"subset_of": ["a", "b"], "contains": ["a"]}, ["a", "b"], True),
    ({"subset_of": ["a"]}, None, False),  # unset
])
def test_sets(kw, value, ok: bool) -> None:
    assert P(**kw).ok(value) is ok


def test_set_failures_name_the_elements() -> None:
    assert P(subset_of=["a"]).failures("a,b,c,b") == ["b, c not allowed"]
    assert P(set_equals=["a", "b"]).failures("b c") == ["differs from the set (-a +c)"]
    assert P(contains=["x"], excludes=["y"]).failures("y") == ["lacks x", "has y"]


@settings(deadline=None)
@given(st.lists(st.sampled_from("abcde"), max_size=6), st.lists(st.sampled_from("abcde"),
                                                                min_size=1, max_size=6))
def test_set_ops_match_python_sets(have: list[str], ref: list[str]) -> None:
    text = " ".join(have)
    assert P(subset_of=ref).ok(text) is (set(have) <= set(ref))
    assert P(contains=ref).ok(text) is (set(ref) <= set(have))
    assert P(excludes=ref).ok(text) is not (set(ref) & set(have))
    assert P(set_equals=ref).ok(text) is (set(ref) == set(have))


def test_elements_split_commas_and_spaces() -> None:
    assert elements("a,b  c\td") == ["a", "b", "c", "d"]
    assert elements(("x", "y")) == ["x", "y"]
    assert elements(None) == []


def test_fields_tcp_rmem_and_maxstartups() -> None:
    rmem = P(fields=[{"op": "ge", "value": 4096}, None, {"min": 67108864}])
    assert rmem.ok("4096 131072 67108864")
    assert not rmem.ok("4096 131072 6291456")
    assert rmem.failures("4096 131072") == ["field 3 missing"]
    assert rmem.text() == "[>= 4096] [any] [>= 67108864]"
    ms = P(fields=[{"max": 10}, {"min": 30, "max": 60}, {"max": 100}], field_separator=":")
    assert ms.ok("10:30:100")
    assert not ms.ok("10:30:200")
    assert ms.failures("20:90:100") == ["field 1 (20) is not <= 10",
                                        "field 2 (90) is not >= 30 and <= 60"]
    assert ms.text() == "[<= 10] : [>= 30 and <= 60] : [<= 100]"
    assert ms.suggest("20:30:100") == "10:30:100"


def test_suggest() -> None:
    assert P(min=0, min_exclusive=True, max=4).suggest("6") == "4"
    assert P(min=0, min_exclusive=True, max=4, max_exclusive=True).suggest(None) == "3"
    assert P(op="ge", value=2).suggest("1") == "2"
    assert P(op="ne", value=0).suggest(None) is None
    assert P(subset_of=["a", "b"], contains=["b"]).suggest("a,c") == "a,b"
    assert P(set_equals=["x", "y"]).suggest("z") == "x y"
    assert P(excludes=["z"]).suggest("z") is None  # nothing would be left


@pytest.mark.parametrize("bad", [
    {"op": "eq"},                      # op without value
    {"min_exclusive": True},           # a flag without its bound
    {"min": "four"},                   # a bound is a number
    {"subset_of": []},                 # an empty allowed set is a mistake
    {"fields": [{"fields": [None]}]},  # no fields inside fields
    {"field_separator": ":"},          # a separator without fields
    {},                                # nothing asked
])
def test_schema_refuses(bad) -> None:
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(bad)


# ------------------------------------------------------------------ on the checks

SSHD_CASES = [
    # (sshd_config text, params, expected status)
    ("MaxAuthTries 4\n", {"keyword": "MaxAuthTries", "min": 0, "min_exclusive": True,
                          "max": 4}, "pass"),
    ("MaxAuthTries 0\n", {"keyword": "MaxAuthTries", "min": 0, "min_exclusive": True,
                          "max": 4}, "fail"),
    ("", {"keyword": "MaxAuthTries", "min": 0, "min_exclusive": True, "max": 4}, "fail"),
    ("ClientAliveInterval 5m\n", {"keyword": "ClientAliveInterval", "min": 0,
                                  "min_exclusive": True, "max": "5m"}, "pass"),
    ("ClientAliveInterval 301\n", {"keyword": "ClientAliveInterval", "min": 0,
                                   "min_exclusive": True, "max": 300}, "fail"),
    ("AllowGroups admins ops\nAllowGroups admins\n",
     {"keyword": "AllowGroups", "set_equals": ["ops", "admins"]}, "pass"),
    ("AllowGroups admins\nAllowGroups ops dev\n",
     {"keyword": "AllowGroups", "set_equals": ["ops", "admins"]}, "fail"),
    ("AllowGroups admins\nAllowGroups ops\n", {"keyword": "AllowGroups",
                                               "contains": ["ops"]}, "pass"),
    ("Ciphers aes256-gcm@openssh.com,aes256-ctr\n",
     {"keyword": "Ciphers", "subset_of": ["aes256-gcm@openssh.com", "aes256-ctr",
                                          "chacha20-poly1305@openssh.com"]}, "pass"),
    ("Ciphers aes256-ctr,aes128-cbc\n",
     {"keyword": "Ciphers", "subset_of": ["aes256-gcm@openssh.com", "aes256-ctr"]}, "fail"),
    ("MACs hmac-sha2-512,hmac-md5\n", {"keyword": "MACs", "excludes": ["hmac-md5"]}, "fail"),
    ("MaxStartups 10:30:60\n", {"keyword": "MaxStartups", "field_separator": ":",
                                "fields": [{"max": 10}, {"min": 30}, {"max": 60}]}, "pass"),
    ("MaxStartups 10:30:100\n", {"keyword": "MaxStartups", "field_separator": ":",
                                 "fields": [{"max": 10}, {"min": 30}, {"max": 60}]}, "fail"),
]


@pytest.mark.parametrize("text,params,want", SSHD_CASES)
def test_sshd_option_predicates(make_root, text: str, params, want: str) -> None:
    jsonschema.Draft202012Validator(OPTION_SCHEMA).validate(params)
    root = make_root({"/etc/ssh/sshd_config": text})
    [r] = run_check("ssh.sshd_option", root, params)
    assert r.status.value == want, r.message
    if want == "fail":
        assert r.remediation is not None


def test_sshd_set_fix_keeps_allowed_elements(make_root) -> None:
    root = make_root({"/etc/ssh/sshd_config": "Include /etc/ssh/sshd_config.d/*.conf\n"
                      "Ciphers aes256-ctr,aes128-cbc\n"})
    [r] = run_check("ssh.sshd_option", root, {"keyword": "Ciphers",
                                              "subset_of": ["aes256-ctr", "aes256-gcm"]})
    assert r.status is Status.FAIL and "aes128-cbc not allowed" not in r.expected
    snip = next(s for s in r.remediation.snippets if s.kind == "file")
    assert snip.content == "Ciphers aes256-ctr\n"


@pytest.mark.oracle
@pytest.mark.parametrize("text,params,want", SSHD_CASES)
def test_sshd_option_predicates_against_sshd_T(tmp_path: Path, text: str, params,
                                               want: str) -> None:
    """The value the real ``sshd -T`` prints, judged by the rule's predicate, gives the
    same verdict as the check (accumulated lists as sshd accumulates them)."""
    require_sshd()
    key = tmp_path / "hk"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, capture_output=True)
    conf = tmp_path / "sshd_config"
    conf.write_text(text)
    p = subprocess.run([SSHD, "-T", "-f", str(conf), "-h", str(key)], capture_output=True,
                       text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    kw = params["keyword"].lower()
    vals = [ln.partition(" ")[2] for ln in p.stdout.splitlines()
            if ln.partition(" ")[0] == kw]
    pred = Predicate.from_params(params, lambda v: normalise_param(
        sp.KEYWORDS[kw], v))
    # sshd -T prints one line per accumulated entry
    assert pred.ok(" ".join(vals)) is (want == "pass"), vals


SYSCTL = "/etc/sysctl.d/60-x.conf"


@pytest.mark.parametrize("conf,params,want", [
    ("kernel.perf_event_paranoid = 2\n", {"key": "kernel.perf_event_paranoid", "min": 2},
     "pass"),
    ("kernel.perf_event_paranoid = 1\n", {"key": "kernel.perf_event_paranoid", "min": 2},
     "fail"),
    ("kernel.yama.ptrace_scope = 3\n", {"key": "kernel.yama.ptrace_scope", "min": 1,
                                        "max": 3}, "pass"),
    ("vm.swappiness = 10\n", {"key": "vm.swappiness", "min": 0, "max": 10,
                              "max_exclusive": True}, "fail"),
    ("net.ipv4.tcp_rmem = 4096 131072 67108864\n",
     {"key": "net.ipv4.tcp_rmem", "fields": [{"min": 4096}, None, {"min": 67108864}]}, "pass"),
    ("net.ipv4.tcp_rmem = 4096 131072 6291456\n",
     {"key": "net.ipv4.tcp_rmem", "fields": [{"min": 4096}, None, {"min": 67108864}]}, "fail"),
])
def test_sysctl_predicates(make_root, conf: str, params, want: str) -> None:
    root = make_root({SYSCTL: conf})
    [r] = run_check("kernel.sysctl", root, params)
    assert r.status.value == want, r.message


def test_sysctl_range_fix_proposes_the_bound(make_root) -> None:
    root = make_root({SYSCTL: "kernel.perf_event_paranoid = 1\n"})
    [r] = run_check("kernel.sysctl", root, {"key": "kernel.perf_event_paranoid", "min": 2,
                                            "max": 3})
    assert r.expected == ">= 2 and <= 3"
    assert r.remediation.snippets[0].content == "kernel.perf_event_paranoid = 3\n"
