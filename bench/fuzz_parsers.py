#!/usr/bin/env python3
"""Fuzz every parser in ``aiaudit.linux``: any input gives a value or ``ParseError``.

Uses Hypothesis (already a test dependency) with many examples per parser, mixing
arbitrary text, arbitrary bytes decoded as the Host decodes them, and structured inputs
built from the tokens each format uses (so the fuzzer reaches deep branches, not only the
first "invalid line" check).  Prints, per parser, the examples run, the time taken and any
failure; exits 1 if a parser raised anything but ParseError.

Rulesets, waiver files and saved JSON reports (what a user hands to aiaudit) are fuzzed the
same way: their one allowed failure is a usage error naming the file and place.

So are the inputs of ``aiaudit fleet`` (issue 25): one document through the fleet reader
(decoding, the exact rules-less cut, the reduction of a report or event), a whole stream of
them, the same text spliced into a real report (so the fuzzer reaches the fields past the
first check), a ``--since`` fleet report and a host list.  Their allowed failure is a
problem line naming the input; an exception, or a problem line that says "internal
error", is a failure.

``--pathological`` feeds every parser long repetitive inputs instead (64 KiB of one token,
after a few line prefixes): regular expressions that backtrack quadratically and integers
too long for ``int()`` show up there, not in random text.  A parser fails when it raises
anything but ParseError or takes more than ``--limit`` seconds on one input.

``--trees`` builds each hostile host tree of ``tests/hostile_trees.py`` (kernel modules at
their cap, many files at the read cap, open fds, 50,000 distinct sysctl globs, 5,000-digit
numbers in every numeric field) in a temporary directory and scans it in a child process:
a tree fails when the scan crashes, gives an internal error, misses its deadline or peaks
over the memory bound (``RUSAGE_CHILDREN`` of the child).

    .venv/bin/python bench/fuzz_parsers.py [--examples 20000] [--only NAME]
    .venv/bin/python bench/fuzz_parsers.py --pathological [--size 65536] [--limit 2]
    .venv/bin/python bench/fuzz_parsers.py --trees [--only NAME]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import signal
import sys
import time
import traceback
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError

# Tokens that occur in the formats we parse: sysctl.d, limits.conf, sshd_config, PAM,
# systemd units, udev rules, grub defaults, /proc/net tables, os-release, dpkg status, nft...
TOKENS = [
    "=", "==", "!=", "+=", ":=", " ", "\t", "\n", "#", ";", "-", "*", "?", "[", "]", "{", "}",
    "\"", "'", "\\", "/", ".", ":", ",", "@", "%", "!", "$", "0", "1", "-1", "65536",
    "unlimited", "infinity", "soft", "hard", "nofile", "memlock", "Match", "Include", "User",
    "all", "yes", "no", "PermitRootLogin", "PasswordAuthentication", "Port", "[Service]",
    "[Unit]", "ExecStart", "LimitNOFILE", "KERNEL", "ATTR{queue/scheduler}", "SUBSYSTEM",
    "nvme*", "sd[a-z]", "GRUB_CMDLINE_LINUX", "intel_idle.max_cstate=1", "include", "session",
    "required", "pam_limits.so", "@include", "Package:", "Status:", "install ok installed",
    "Version:", "0100007F:0016", "00000000:0000", "0A", "07", "vm.swappiness", "net.ipv4.",
    "table", "chain", "hook", "input", "policy", "drop", "accept", "\x00", "\ufffd",
    "<<: ", "*a", "&a ", "!!int ", "!foo ", "- ", "waivers:", "rule: ", "NaN", "1e999", "99999999",
]

text_inputs = st.one_of(
    st.text(max_size=2000),
    st.binary(max_size=2000).map(lambda b: b.decode("utf-8", errors="replace")),
    st.lists(st.sampled_from(TOKENS), max_size=200).map("".join),
    st.lists(st.lists(st.sampled_from(TOKENS), max_size=12).map("".join), max_size=60)
    .map("\n".join),
)


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _user_input(load: Callable[[str], Any]) -> Callable[[str], Any]:
    """Adapter for the loaders of the files a user hands to aiaudit (rulesets, waivers,
    saved reports): their one allowed failure is a UsageError (a YAMLError for the bare YAML
    loader) whose message starts with the file name, i.e. names the place; it becomes the
    ParseError the fuzzer accepts.  Anything else (a ValueError from ``int()``, a
    RecursionError) is a failure, as for the parsers."""
    import yaml

    from aiaudit.core.errors import UsageError
    from aiaudit.core.ruleset import yamlpos

    def call(text: str) -> Any:
        try:
            return load(text)
        except yaml.YAMLError as exc:
            raise ParseError(yamlpos.error_message(exc, "fuzz", text)) from None
        except UsageError as exc:
            if not str(exc).startswith("fuzz"):
                raise AssertionError(f"message without the file: {exc}") from None
            raise ParseError(str(exc)) from None

    return call


def user_input_targets() -> list[tuple[str, Callable[[str], Any]]]:
    """Rulesets (YAML with positions), waiver files and saved JSON reports."""
    from aiaudit.core import waivers
    from aiaudit.core.ruleset import yamlpos
    from aiaudit.modes import savedreport

    return [
        ("yamlpos.load (ruleset YAML)", _user_input(lambda t: yamlpos.load(t, "fuzz"))),
        ("waivers.parse_waivers", _user_input(lambda t: waivers.parse_waivers(t, "fuzz"))),
        ("savedreport.decode_json", _user_input(
            lambda t: savedreport.decode_json(t, "fuzz", "a JSON report"))),
    ]


_REPORT = None


def _report_text() -> str:
    """A small real-shaped report (compact, as ``scan -o json:FILE`` writes it)."""
    global _REPORT
    if _REPORT is None:
        import json

        result = {"rule_id": "SYSCTL-VM-SWAPPINESS", "check": "kernel.sysctl",
                  "severity": "medium", "title": "t", "status": "fail", "check_status": "fail",
                  "subject": "vm.swappiness", "message": "m", "actual": "60", "evidence": []}
        # the class facts the fleet compares (rule NODE-FACTS), per node and per device
        facts = {"rule_id": "NODE-FACTS", "check": "inventory.facts", "severity": "info",
                 "title": "f", "status": "pass", "check_status": "pass", "subject": "facts",
                 "message": "m", "evidence": [],
                 "data": {"facts": {"gpu.nvidia.count": 8,
                                    "gpu.pcie.width": {"0000:18:00.0": 16, "0000:58:00.0": 8},
                                    "kernel.release": "6.1.0-18-amd64"}}}
        _REPORT = json.dumps({
            "schema_version": "1.0", "tool": {"name": "aiaudit", "version": "0.1.0"},
            "run_id": "r1", "started": "2026-01-01T00:00:00Z",
            "host": {"hostname": "gpu01", "machine_id": "a" * 32, "product_uuid": None,
                     "os": {"name": "Debian", "version": "12"}, "kernel": "6.1",
                     "root": "/", "mode": "live"},
            "ruleset": {"name": "dl-training", "version": "1.0"},
            "rules": [{"id": "SYSCTL-VM-SWAPPINESS", "severity": "medium", "title": "t"},
                      {"id": "NODE-FACTS", "severity": "info", "title": "f"}],
            "results": [result, dict(result, subject="x", status="pass"), facts]},
            separators=(",", ":"))
    return _REPORT


def _fleet_problem(problem: str, origin: str = "fuzz") -> None:
    """A fleet problem line: it must name the input and must not be an internal error."""
    if "internal error" in problem:
        raise AssertionError(problem)
    if not problem.startswith(origin):
        raise AssertionError(f"problem without the input's name: {problem}")
    raise ParseError(problem)


def fleet_targets() -> list[tuple[str, Callable[[str], Any]]]:
    """The fleet reader (one document, a stream, a report with the text spliced in), the
    ``--since`` report and host lists."""
    import io

    from aiaudit.fleet.authority import Judges
    from aiaudit.fleet.collect import _reduce_texts, collect
    from aiaudit.fleet.hostlist import HostlistError, expand
    from aiaudit.fleet.since import SinceError, parse_previous

    def document(text: str) -> Any:
        (got,) = _reduce_texts([("fuzz", 1, text)])
        if isinstance(got, str):
            _fleet_problem(got)
        return got

    def stream(text: str) -> Any:
        fleet = collect(["-"], stdin=io.StringIO(text), judges=Judges(shipped=False))
        for p in fleet.problems:
            if "internal error" in p or not p.startswith(("<stdin>", "reports of ")):
                raise AssertionError(p)
        return fleet

    def spliced(text: str) -> Any:
        base = _report_text()
        at = (len(text) * 7919) % len(base)
        return document(base[:at] + text + base[at:])

    def fields(text: str) -> Any:
        """The text (as JSON when it is JSON, else as a string) in every field the fleet
        reads, one report per field: valid JSON always, so the field checks are reached."""
        import json

        try:
            value: Any = json.loads(text)
        except (ValueError, RecursionError):
            value = text
        base = json.loads(_report_text())
        paths = [("host", "hostname"), ("host", "machine_id"), ("host", "product_uuid"),
                 ("host", "kernel"), ("host", "os"), ("started",), ("run_id",), ("tool",),
                 ("ruleset", "name"), ("ruleset", "version"), ("ruleset",), ("results",),
                 ("results", 0), ("results", 0, "status"), ("results", 0, "severity"),
                 ("results", 0, "rule_id"), ("results", 0, "subject"),
                 ("results", 0, "title"), ("results", 0, "actual"), ("schema_version",)]
        out = []
        for path in paths:
            d = json.loads(_report_text())
            into = d
            for key in path[:-1]:
                into = into[key]
            into[path[-1]] = value
            try:
                out.append(document(json.dumps(d)))
            except ParseError:
                pass
        return out or base

    def since(text: str) -> Any:
        try:
            return parse_previous(text, "fuzz")
        except SinceError as exc:
            _fleet_problem(str(exc))

    def hostlist(text: str) -> Any:
        try:
            return expand(text)
        except HostlistError as exc:
            raise ParseError(str(exc)) from None

    return [("fleet.reader (one document)", document), ("fleet.reader (stream)", stream),
            ("fleet.reader (spliced report)", spliced),
            ("fleet.reader (every field)", fields), ("fleet.since (--since report)", since),
            ("fleet.hostlist.expand", hostlist)]


def extra_targets() -> list[tuple[str, Callable[[str], Any]]]:
    """Parsers that take more than text (a protocol, a family, bytes): called through a
    one-argument adapter so they are fuzzed too."""
    import socket

    from aiaudit.linux.kmod import modinfo as elfmodinfo
    from aiaudit.linux.netfilter import firewalld, iptables
    from aiaudit.linux.network import procnet
    from aiaudit.linux.packages import rpm as rpmheader
    from aiaudit.linux.pam_limits import conf as limits

    return [
        ("elfmodinfo.modinfo(bytes)", lambda t: elfmodinfo.modinfo(_b(t))),
        ("elfmodinfo.module_version(.ko.xz)",
         lambda t: elfmodinfo.module_version("nvidia.ko.xz", _b(t))),
        ("elfmodinfo.module_version(.ko.gz)",
         lambda t: elfmodinfo.module_version("nvidia.ko.gz", _b(t))),
        ("firewalld.parse_zone", lambda t: firewalld.parse_zone(t, "public", "fuzz")),
        ("iptables.parse", lambda t: iptables.parse(t, socket.AF_INET, "fuzz")),
        ("limits.parse", lambda t: limits.parse(t, "fuzz")),
        ("limits.parse(bytes)", lambda t: limits.parse(_b(t), "fuzz")),
        ("procnet.parse(tcp6)", lambda t: procnet.parse(t, "tcp", socket.AF_INET6)),
        ("procnet.parse(udp)", lambda t: procnet.parse(t, "udp", socket.AF_INET)),
        ("rpmheader.parse_header", lambda t: rpmheader.parse_header(_b(t))),
    ]


def discover() -> list[tuple[str, Callable[..., Any]]]:
    """Every public function of every module under ``aiaudit.linux`` (the parsers and
    deciders of the Linux components) whose first parameter is named ``text`` (the parser
    convention)."""
    import aiaudit.linux as pkg

    out = []
    for info in pkgutil.walk_packages(pkg.__path__, "aiaudit.linux."):
        if info.ispkg:
            continue
        mod = importlib.import_module(info.name)
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if name.startswith("_") or fn.__module__ != mod.__name__:
                continue
            params = list(inspect.signature(fn).parameters.values())
            if not params or params[0].name != "text":
                continue
            required = [p for p in params[1:] if p.default is inspect.Parameter.empty
                        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if len(required) > 1:
                continue
            out.append((f"{info.name.removeprefix('aiaudit.linux.')}.{name}", fn))
    return sorted(out)


def fuzz(fn: Callable[..., Any], examples: int) -> tuple[int, list[str]]:
    """Run ``examples`` inputs through ``fn``; return (count, failures)."""
    failures: list[str] = []
    count = 0
    nparams = len([p for p in inspect.signature(fn).parameters.values()
                   if p.default is inspect.Parameter.empty])

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(text_inputs)
    def run(text: str) -> None:
        nonlocal count
        count += 1
        try:
            fn(text, "fuzz") if nparams >= 2 else fn(text)
        except ParseError:
            pass
        except RecursionError:
            failures.append(f"RecursionError on {text[:80]!r}")
            raise
        except Exception:
            failures.append(f"{traceback.format_exc(limit=3)}\ninput: {text[:200]!r}")
            raise

    try:
        run()
    except Exception:
        pass
    return count, failures


PATHOLOGICAL_UNITS = ["a", " ", "\\", '"', "'", "a=", "a-", "=", "#", "[", "{", "\t", "x ",
                      "a,", "$a", "${", "\\\n", "a.", "0", "-", ":", "/", "*", "%", "@", "<",
                      "a\n", "\n", '="', "a b ", '"a" ', "a=b ", "(", ")", "a_", "9", "9.",
                      "*a", "?*"]
PATHOLOGICAL_PREFIXES = ["", "key = ", "Include ", "NodeName=", "KERNEL==\"", "* soft nofile ",
                         "MaxAuthTries ", "MemTotal: ", "vm.swappiness = ", "Port "]


def pathological(fn: Callable[..., Any], size: int, limit: float) -> tuple[int, list[str]]:
    """Run the long repetitive inputs through ``fn``; return (count, failures)."""
    def overtime(*_args: object) -> None:
        raise TimeoutError

    nparams = len([p for p in inspect.signature(fn).parameters.values()
                   if p.default is inspect.Parameter.empty])
    failures: list[str] = []
    count = 0
    old = signal.signal(signal.SIGALRM, overtime)
    try:
        for prefix in PATHOLOGICAL_PREFIXES:
            for unit in PATHOLOGICAL_UNITS:
                text = prefix + unit * (size // len(unit))
                count += 1
                signal.setitimer(signal.ITIMER_REAL, limit)
                try:
                    fn(text, "fuzz") if nparams >= 2 else fn(text)
                except ParseError:
                    pass
                except TimeoutError:
                    failures.append(f"over {limit}s on {prefix!r} + {unit!r} x {size}")
                except Exception as exc:
                    failures.append(f"{type(exc).__name__}: {str(exc)[:100]} on {prefix!r} + "
                                    f"{unit!r} x {size}")
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, old)
    return count, failures


def trees(only: str | None) -> int:
    """Scan every hostile tree in a child process; return how many failed."""
    import json
    import os
    import tempfile
    from pathlib import Path

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.hostile_trees import RSS_BOUND_MB, TREES, child_scan

    bad = 0
    print(f"{'tree':<20} {'seconds':>8} {'peak MB':>8}  result")
    for name, (build, mode) in TREES.items():
        if only and only not in name:
            continue
        with tempfile.TemporaryDirectory(prefix="aiaudit-tree-") as tmp:
            root = Path(tmp) / name
            build(root)
            r = child_scan("scan", "--root", str(root), *mode, "--format", "json",
                           "--timeout", "30", timeout=120)
        problems = []
        if r.returncode not in (0, 1, 3) or "Traceback" in r.stderr:
            problems.append(f"exit {r.returncode}: {r.stderr[-200:]}")
        else:
            for res in json.loads(r.stdout)["results"]:
                if "internal error" in res["message"] or "not evaluated" in res["message"]:
                    problems.append(f"{res['rule_id']}: {res['message'][:120]}")
        if r.maxrss_mb >= RSS_BOUND_MB:
            problems.append(f"peak RSS {r.maxrss_mb:.0f} MB over {RSS_BOUND_MB} MB")
        print(f"{name:<20} {r.seconds:>8.1f} {r.maxrss_mb:>8.0f}  "
              f"{'FAIL' if problems else 'ok'}")
        for line in problems[:3]:
            print("   ", line)
        bad += bool(problems)
    print(f"trees failing: {bad}")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=20000)
    ap.add_argument("--only", default=None, help="substring of parser names to run")
    ap.add_argument("--pathological", action="store_true",
                    help="long repetitive inputs instead of random ones")
    ap.add_argument("--size", type=int, default=65536, help="pathological input length")
    ap.add_argument("--limit", type=float, default=2.0, help="seconds allowed per input")
    ap.add_argument("--trees", action="store_true",
                    help="scan the hostile host trees of tests/hostile_trees.py instead")
    args = ap.parse_args()
    if args.trees:
        return 1 if trees(args.only) else 0
    bad = 0
    total = 0
    print(f"{'parser':<40} {'examples':>9} {'seconds':>8}  result")
    for name, fn in [*discover(), *extra_targets(), *user_input_targets(), *fleet_targets()]:
        if args.only and args.only not in name:
            continue
        t0 = time.monotonic()
        count, failures = (pathological(fn, args.size, args.limit) if args.pathological
                           else fuzz(fn, args.examples))
        total += count
        took = time.monotonic() - t0
        print(f"{name:<40} {count:>9} {took:>8.1f}  {'FAIL' if failures else 'ok'}")
        for f in failures[:1]:
            print("   ", f.replace("\n", "\n    "))
        bad += bool(failures)
    print(f"total examples: {total}; parsers failing: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
