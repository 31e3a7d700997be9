"""Hostile hosts and hostile plugins at run time (issue 12): memory and time stay bounded,
a plugin costs only its own rule, the deadline holds in every phase.

Each hostile tree is scanned by a child process whose peak resident memory is measured
(``RUSAGE_CHILDREN`` of a wrapper that has only that child): it must stay under
:data:`tests.hostile_trees.RSS_BOUND_MB`.  The hostile plugin is a distribution on
``PYTHONPATH`` with an ``aiaudit`` entry point (``tests/fixtures/plugins/hostile``).
"""

from __future__ import annotations

import fnmatch
import gzip
import json
import lzma
import os
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.api import CheckSpec, ReporterSpec, Result, Status, hookimpl
from aiaudit.core import plugins
from aiaudit.core.errors import ParseError, UsageError
from aiaudit.core.host import Host
from aiaudit.core.model import RuleInfo, Severity
from aiaudit.core.parsing import to_int
from aiaudit.core.ruleset import Rule, Ruleset
from aiaudit.core.scan import ScanOptions, scan
from aiaudit.linux.kmod import modinfo as elfmodinfo
from aiaudit.linux.sysctl.conf import fnmatch_fast
from tests.helpers import FIXTURES
from tests.hostile_trees import RSS_BOUND_MB, TREES, child_scan
from tests.linux.kmod.test_modinfo import make_ko

HOSTILE_DIST = FIXTURES / "plugins" / "hostile"
HOSTILE_RULESET = FIXTURES / "plugins" / "hostile.yaml"
DIST_NAME = "aiaudit-hostile 0.1"


def _plugin_env(mode: str = "") -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(HOSTILE_DIST), os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": path, "AIAUDIT_HOSTILE_REGISTER": mode}


@pytest.fixture
def small_root(make_root) -> Path:
    return make_root({"/etc/os-release": "ID=debian\n",
                      "/etc/sysctl.d/1.conf": "vm.swappiness = 5\n"})


# ------------------------------------------------------------------ hostile trees
@pytest.mark.parametrize("name", sorted(TREES))
def test_hostile_tree_is_bounded(tmp_path: Path, name: str) -> None:
    build, mode = TREES[name]
    root = tmp_path / name
    build(root)
    r = child_scan("scan", "--root", str(root), *mode, "--format", "json",
                   "--timeout", "20", timeout=60)
    assert r.returncode in (0, 1, 3), r.stderr
    assert "Traceback" not in r.stderr
    results = r.report()["results"]
    assert results, "no results"
    bad = [(x["rule_id"], x["message"][:160]) for x in results
           if "internal error" in x["message"] or "not evaluated" in x["message"]]
    assert not bad, bad
    assert r.maxrss_mb < RSS_BOUND_MB, f"peak RSS {r.maxrss_mb:.0f} MB"
    assert r.cpu_seconds < 10, f"{r.cpu_seconds:.1f} s of CPU"
    if name == "open-fds":  # 1,000 holders of one socket: the walk stops at its first owner
        by = {x["rule_id"]: x for x in results}
        msg = by["NET-LISTEN-UNEXPECTED-PORTS"]["message"]
        assert msg.count("hog[pid") == 1 and "hog[pid 100]" in msg, msg[:300]


def test_hugenum_values_are_parse_errors_with_a_place(tmp_path: Path) -> None:
    TREES["hugenum"][0](tmp_path)
    r = child_scan("scan", "--root", str(tmp_path), "--live", "--format", "json")
    by = {x["rule_id"]: x for x in r.report()["results"]}
    # sshd refuses the value as its a2port/strtonum would, at the line that has it
    assert by["SSH-MAX-AUTH-TRIES"]["status"] == "error"
    assert "/etc/ssh/sshd_config:1: Badly formatted port number" in \
        by["SSH-MAX-AUTH-TRIES"]["message"]
    assert "/proc/meminfo:1: MemTotal of 5000 characters" in by["MEM-DEV-SHM-SIZE"]["message"]
    assert "cpuidle/state1/latency: latency of 5000 characters" in \
        by["CPU-CSTATE-LATENCY"]["message"]
    assert "/proc/net/tcp: line 2" in by["NET-LISTEN-UNEXPECTED-PORTS"]["message"]
    assert not [x for x in by.values() if "internal error" in x["message"]]


def test_to_int_bounds_the_digits() -> None:
    assert to_int("0042") == 42
    with pytest.raises(ParseError, match=r"x\.conf:3: latency of 5000 characters"):
        to_int("9" * 5000, what="latency", source="x.conf", line=3)
    with pytest.raises(ValueError):
        to_int("12a")


# ------------------------------------------------------------------ kernel modules
@pytest.mark.parametrize("suffix", ["", ".xz", ".gz"])
def test_streamed_modinfo_matches_the_whole_file(suffix: str) -> None:
    ko = make_ko("570.86.15", extra=b"\0" * 3_000_000)  # .modinfo far from the tail
    data = {"": ko, ".xz": lzma.compress(ko), ".gz": gzip.compress(ko)}[suffix]
    name = "nvidia.ko" + suffix
    want = elfmodinfo.modinfo(elfmodinfo.decompress(name, data))
    if suffix:
        passes = []

        def stream():
            passes.append(1)
            return elfmodinfo.inflate(name, (data[i:i + 65536]
                                             for i in range(0, len(data), 65536)))

        image = elfmodinfo.StreamedImage(stream)
        got = elfmodinfo.read_modinfo(image.read_at, image.size)
        assert len(passes) <= 4  # header (stops early), whole image, name table, .modinfo
    else:
        got = elfmodinfo.read_modinfo(lambda o, n: data[o:o + n], lambda: len(data))
    assert got == want and got["version"] == ["570.86.15"]


def test_streamed_modinfo_refuses_a_huge_section() -> None:
    ko = bytearray(make_ko("1.0"))
    # .modinfo section header (index 1) of the 64-bit image: claim 1 GiB
    shoff = int.from_bytes(ko[0x28:0x30], "little")
    ko[shoff + 64 + 32: shoff + 64 + 40] = (1 << 30).to_bytes(8, "little")
    with pytest.raises(ParseError):
        elfmodinfo.read_modinfo(lambda o, n: bytes(ko[o:o + n]), lambda: len(ko))


# ------------------------------------------------------------------ glob matching
_GLOB_ALPHABET = st.sampled_from(list("ab*?[]!^-\\./c"))


@given(st.text(alphabet=st.sampled_from(list("ab.-/c*?[]\\")), max_size=12),
       st.text(alphabet=_GLOB_ALPHABET, max_size=10))
def test_fnmatch_fast_is_fnmatchcase(name: str, pattern: str) -> None:
    assert fnmatch_fast(name, pattern) == fnmatch.fnmatchcase(name, pattern)


def test_fnmatch_fast_on_long_patterns_is_quick() -> None:
    t0 = time.process_time()
    for i in range(20_000):
        fnmatch_fast("net/ipv4/conf/eth0/rp_filter", f"net/ipv4/conf/*{i}*/rp_filter")
        fnmatch_fast("swappiness", "s" + "*?" * 40 + "s")
    assert time.process_time() - t0 < 5


# ------------------------------------------------------------------ plugins: registration
class _Twin:
    """A plugin object registering the built-in ``kernel.sysctl`` (not imported yet)."""

    @staticmethod
    @hookimpl
    def aiaudit_register_checks() -> list[CheckSpec]:
        """The evil twin."""
        return [CheckSpec(id="kernel.sysctl", title="twin", run=lambda ctx: iter(()))]


class _TwinReporter:
    @staticmethod
    @hookimpl
    def aiaudit_register_reporters() -> list[ReporterSpec]:
        """A second ``sarif``."""
        return [ReporterSpec(name="sarif", render=lambda run, opts: "")]


def test_a_plugin_cannot_replace_a_builtin_check_or_reporter() -> None:
    with pytest.raises(UsageError, match=r"check 'kernel\.sysctl' is registered twice: by "
                                         r"aiaudit \(built-in\) module "
                                         r"aiaudit\.checks\.kernel\.sysctl"
                                         r" and by plugin object extra-0"):
        plugins.build_registry(entry_points=False, extra=[_Twin])
    with pytest.raises(UsageError, match=r"reporter 'sarif' is registered twice"):
        plugins.build_registry(entry_points=False, extra=[_TwinReporter])


@pytest.mark.parametrize("mode, what", [("dup-check", "check 'kernel.sysctl'"),
                                        ("dup-reporter", "reporter 'json'")])
def test_duplicate_registration_stops_the_scan(small_root: Path, mode: str, what: str) -> None:
    r = child_scan("scan", "--root", str(small_root), "--format", "json",
                   env=_plugin_env(mode))
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert f"{what} is registered twice" in r.stderr
    assert "aiaudit (built-in)" in r.stderr and DIST_NAME in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("mode", ["sleep", "busy"])
def test_registration_is_bounded_by_the_deadline(small_root: Path, mode: str) -> None:
    r = child_scan("scan", "--root", str(small_root), "--format", "json", "--timeout", "1.5",
                   env=_plugin_env(mode), timeout=30)
    assert r.returncode == 2, r.stderr
    assert "did not finish loading within the scan deadline" in r.stderr
    assert DIST_NAME in r.stderr and "Traceback" not in r.stderr
    # the plugin would sleep or spin for ever: the message says the deadline ended it, the
    # child's timeout guards against a hang, and the CPU it got stays near the deadline
    assert r.cpu_seconds < 10, f"{r.cpu_seconds:.1f} s of CPU"


@pytest.mark.slow
def test_registration_holding_the_interpreter_lock_ends_the_process(small_root: Path) -> None:
    """No thread runs while C code holds the lock: the faulthandler watchdog (a C thread)
    ends the process REGISTRATION_GRACE seconds past the deadline, with the stacks."""
    r = child_scan("scan", "--root", str(small_root), "--format", "json", "--timeout", "0.5",
                   env=_plugin_env("regex"), timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    assert "Timeout" in r.stderr and "aiaudit_hostile" in r.stderr
    assert r.cpu_seconds < 0.5 + plugins.REGISTRATION_GRACE + 10, f"{r.cpu_seconds:.1f} s"


def test_registration_output_goes_to_stderr(small_root: Path) -> None:
    r = child_scan("scan", "--root", str(small_root), "--format", "json",
                   "--ruleset", str(HOSTILE_RULESET), "--only", "H-PRINTS", "SWAPPINESS",
                   env=_plugin_env("print"))
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)  # nothing but the report on stdout
    assert {x["rule_id"] for x in report["results"]} == {"H-PRINTS", "SWAPPINESS"}
    for marker in ("HOSTILE-STDOUT-REGISTER", "HOSTILE-FD1-REGISTER", "HOSTILE-STDOUT-CHECK",
                   "HOSTILE-FD1-CHECK"):
        assert marker in r.stderr and marker not in r.stdout


# ------------------------------------------------------------------ plugins: checks
def test_hostile_checks_cost_only_their_own_rule(small_root: Path) -> None:
    r = child_scan("scan", "--root", str(small_root), "--format", "json",
                   "--ruleset", str(HOSTILE_RULESET), "--timeout", "8", "--rule-timeout", "1",
                   env=_plugin_env(), timeout=60)
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr
    by = {x["rule_id"]: x for x in json.loads(r.stdout)["results"]}
    assert by["H-OK"]["status"] == by["H-AFTER"]["status"] == "pass"
    assert by["SWAPPINESS"]["status"] == "pass"
    assert by["H-PRINTS"]["status"] == "pass"
    assert by["H-SPAWN"]["status"] == "pass"  # its sleep holds the pipe: the scan goes on
    expect = {"H-SYSEXIT": "called sys.exit", "H-KBINT": "KeyboardInterrupt",
              "H-GENEXIT": "GeneratorExit", "H-NONE": "returned NoneType",
              "H-WRONGTYPE": "invalid result", "H-EXIT": "exited with status 9",
              "H-FOREVER": "more than 10000 results", "H-BUSY": "rule timeout of 1.0s",
              "H-REGEX": "rule timeout of 1.0s"}
    for rid, words in expect.items():
        assert by[rid]["status"] == "error", by[rid]
        assert words in by[rid]["message"] and DIST_NAME in by[rid]["message"], by[rid]
    assert r.seconds < 8
    assert r.maxrss_mb < RSS_BOUND_MB


def test_scan_deadline_ends_a_gil_holding_check(small_root: Path) -> None:
    """The catastrophic regex holds the interpreter lock: only a process can be stopped."""
    r = child_scan("scan", "--root", str(small_root), "--format", "json",
                   "--ruleset", str(HOSTILE_RULESET), "--timeout", "1.5",
                   "--only", "H-REGEX", "H-AFTER", "SWAPPINESS", env=_plugin_env(), timeout=30)
    assert r.returncode == 3, r.stderr
    by = {x["rule_id"]: x for x in json.loads(r.stdout)["results"]}
    assert "scan deadline" in by["H-REGEX"]["message"]
    assert "scan deadline" in by["H-AFTER"]["message"]
    assert by["SWAPPINESS"]["status"] == "pass"
    assert r.seconds < 4


def _rule(rid: str, fn, origin: str = "") -> Rule:
    spec = CheckSpec(id=f"test.{rid.lower()}", title=rid, run=fn, origin=origin)
    info = RuleInfo(id=rid, check=spec.id, severity=Severity.HIGH, title=rid)
    return Rule(info=info, check=spec, params={})


def _sysexit(ctx):
    raise SystemExit(1)


def _ok(ctx):
    yield Result(Status.PASS, "ok", "fine")


@pytest.mark.parametrize("origin", ["", "plugin 'x' (distribution x 1)"])
def test_in_process_and_worker_agree(small_root: Path, origin: str) -> None:
    rs = Ruleset(name="t", version="1", description="", rules=(_rule("A", _sysexit, origin),
                                               _rule("B", _ok, origin)))
    run = scan(rs, Host(str(small_root)), ScanOptions(timeout=10))
    got = {f.rule_id: f for f in run.findings}
    assert got["A"].status is Status.ERROR and "called sys.exit" in got["A"].result.message
    assert got["B"].status is Status.PASS
    if origin:
        assert origin in got["A"].result.message


# ------------------------------------------------------------------ issue 25: other commands
@pytest.mark.parametrize("command", ["rules", "explain", "validate", "render"])
@pytest.mark.parametrize("mode", ["sleep", "busy"])
def test_registration_is_bounded_for_every_command(tmp_path: Path, command: str,
                                                   mode: str) -> None:
    """A hung plugin registration hung `rules`, `explain`, `render` and `validate` (60 s,
    with no way to say less): each has the scan's `--timeout`, which bounds it."""
    argv = {"rules": ["rules"], "explain": ["explain", "SWAPPINESS"],
            "validate": ["validate", str(HOSTILE_RULESET)],
            "render": ["render", str(tmp_path / "saved.json")]}[command]
    r = child_scan(*argv, "--timeout", "1.5", env=_plugin_env(mode), timeout=30)
    assert r.returncode == 2, r.stderr
    assert f"did not finish loading within the deadline of aiaudit {command}" in r.stderr
    assert DIST_NAME in r.stderr and "Traceback" not in r.stderr and r.stdout == ""
    assert r.cpu_seconds < 10, f"{r.cpu_seconds:.1f} s of CPU"


def test_rules_probe_is_bounded_by_the_timeout(tmp_path: Path) -> None:
    """`aiaudit rules` probes every rule (a small offline scan): a ruleset of plugin checks
    that hang is bounded by --timeout too, and still lists every rule."""
    r = child_scan("rules", "--ruleset", str(HOSTILE_RULESET), "--timeout", "3",
                   env=_plugin_env(), timeout=60)
    assert r.returncode == 0, r.stderr
    assert "H-REGEX" in r.stdout and "H-AFTER" in r.stdout
    assert r.seconds < 20, f"{r.seconds:.1f} s"  # wall time: a deadline test; generous


# ------------------------------------------------------------------ issue 25: wrong-typed results
def _typed_wrong() -> dict[str, Result]:
    from dataclasses import replace

    from aiaudit.api import Evidence, Remediation, Snippet

    good = Result(Status.FAIL, "x", "m", expected="1", actual="2",
                  evidence=(Evidence.file("/etc/x", 1, "v"),),
                  remediation=Remediation("fix", (Snippet.command("true"),)))
    return {"status-str": replace(good, status="fail"),
            "status-bool": replace(good, status=True),
            "subject-int": replace(good, subject=7), "message-bytes": replace(good, message=b"m"),
            "expected-list": replace(good, expected=["1"]),
            "aspect-str": replace(good, aspect="config"),
            "evidence-line-str": replace(good, evidence=(Evidence.file("/etc/x", "3"),)),
            "evidence-kind": replace(good, evidence=(replace(good.evidence[0], kind=4),)),
            "snippet-kind": replace(good, remediation=Remediation("f", (
                replace(Snippet.command("true"), kind="command"),))),
            "snippet-mode": replace(good, remediation=Remediation("f", (
                Snippet.file("/etc/x", "x", mode=-1),))),
            "data-set": replace(good, data={"a": {1}}), "data-list": replace(good, data=[1]),
            "not-a-result": {"status": "pass"}}  # type: ignore[dict-item]


REPORTERS = ("text", "json", "sarif", "junit", "html", "prometheus", "events")


@pytest.mark.parametrize("case", sorted(_typed_wrong()))
def test_a_wrong_typed_plugin_result_costs_its_rule_and_every_reporter_renders(
        tmp_path: Path, case: str) -> None:
    """A plugin's result with a wrong-typed field: an `error` result naming the plugin
    (aiaudit.core.wellformed), and every reporter renders the scan; the JSON report reads
    back, renders again and gives a fix bundle."""
    from aiaudit.core import plugins as core_plugins
    from aiaudit.core.serialize import run_dict, run_from_dict
    from aiaudit.remediate import bundle

    bad = _typed_wrong()[case]
    spec = CheckSpec(id="evil.typed", title="typed", run=lambda ctx: iter([bad]),
                     origin="plugin 'evil' (distribution evil 6.6)")
    ok = CheckSpec(id="evil.ok", title="ok", run=lambda ctx: iter([
        Result(Status.PASS, "y", "fine")]), origin="plugin 'evil' (distribution evil 6.6)")
    rs = Ruleset("t", "1", "", (
        Rule(RuleInfo("R-TYPED", spec.id, Severity.HIGH, "typed"), spec, {}),
        Rule(RuleInfo("R-OK", ok.id, Severity.HIGH, "ok"), ok, {})))
    run = scan(rs, Host(str(tmp_path), live=False), ScanOptions(rule_timeout=10))
    by = {f.rule_id: f.result for f in run.findings}
    assert by["R-TYPED"].status is Status.ERROR, by["R-TYPED"]
    assert "evil 6.6" in by["R-TYPED"].message and "R-TYPED" in by["R-TYPED"].message
    assert by["R-OK"].status is Status.PASS
    reg = core_plugins.registry()
    for name in REPORTERS:
        text = reg.reporters[name].render(run, {})
        assert isinstance(text, str) and "R-TYPED" in text, name
    doc = json.loads(reg.reporters["json"].render(run, {}))
    again = run_from_dict(doc)
    assert run_dict(again) == doc
    b = bundle.write(again, str(tmp_path / "bundle"))
    assert b.fixed == [] and (tmp_path / "bundle" / "install.sh").is_file()


def test_a_huge_integer_in_result_data_costs_its_rule_only(tmp_path: Path) -> None:
    """`data={"n": 10**5000}` passes the runner, then the json reporter fails (ValueError:
    Exceeds the limit (4300 digits)): that report is lost, exit 2."""
    from aiaudit.core import plugins as core_plugins

    spec = CheckSpec(id="evil.big", title="big", run=lambda ctx: iter([
        Result(Status.FAIL, "x", "m", data={"n": 10 ** 5000})]), origin="plugin 'evil'")
    rs = Ruleset("t", "1", "", (Rule(RuleInfo("R-BIG", spec.id, Severity.HIGH, "b"), spec, {}),))
    run = scan(rs, Host(str(tmp_path), live=False), ScanOptions(rule_timeout=10))
    assert run.findings[0].result.status is Status.ERROR
    for name in REPORTERS:
        core_plugins.registry().reporters[name].render(run, {})
