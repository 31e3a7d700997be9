"""Prometheus textfile: parsed back with a small parser of the text exposition format
(version 0.0.4), so escaping, HELP/TYPE lines and uniqueness of series are checked."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from aiaudit.reporters import prometheus
from tests.reporters.samples import empty_run, mixed_run

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')


@dataclass
class Family:
    help: str | None = None
    type: str | None = None
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)


def _unescape(v: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), v)


def parse(text: str) -> dict[str, Family]:
    """Strict parser: every sample's family has HELP and TYPE first, no duplicates."""
    fams: dict[str, Family] = {}
    assert text.endswith("\n")
    for line in text.splitlines():
        assert line, "blank lines are not expected"
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            kind, name, rest = line[2:6], *line[7:].split(" ", 1)
            assert NAME.fullmatch(name)
            fam = fams.setdefault(name, Family())
            assert not fam.samples, f"{kind} after samples of {name}"
            if kind == "HELP":
                fam.help = rest
            else:
                assert rest in ("gauge", "counter", "untyped"), rest
                fam.type = rest
            continue
        m = NAME.match(line)
        assert m, line
        name, pos = m.group(), m.end()
        labels: dict[str, str] = {}
        if line[pos:pos + 1] == "{":
            end = pos + 1
            while line[end] != "}":
                lm = LABEL.match(line, end)
                assert lm, f"bad label at {line[end:]!r}"
                assert lm.group(1) not in labels
                labels[lm.group(1)] = _unescape(lm.group(2))
                end = lm.end()
                if line[end] == ",":
                    end += 1
            pos = end + 1
        assert line[pos] == " "
        value = float(line[pos + 1:])
        assert name in fams, f"{name} without HELP/TYPE"
        fam = fams[name]
        assert fam.help is not None and fam.type is not None, f"{name} without HELP/TYPE"
        assert labels not in [lab for lab, _ in fam.samples], f"duplicate series {name}"
        fam.samples.append((labels, value))
    return fams


def test_mixed_run() -> None:
    fams = parse(prometheus.render(mixed_run(), {}))
    results = fams["aiaudit_result"].samples
    assert len(results) == len(mixed_run().findings)
    by_rule = {lab["rule"]: lab for lab, v in results if v == 1}
    assert by_rule["SYSCTL-VM-MAX-MAP-COUNT"] == {
        "rule": "SYSCTL-VM-MAX-MAP-COUNT", "severity": "medium", "subject": "vm.max_map_count",
        "status": "fail", "aspect": "drift"}
    # escaped label values come back unchanged
    assert by_rule["BLOCK-NVME-SCHEDULER"]["subject"] == 'nvme0n1 "fast\\disk"'
    failing = {lab["rule"]: v for lab, v in fams["aiaudit_result_failing"].samples}
    assert failing["SYSCTL-VM-MAX-MAP-COUNT"] == 1
    assert failing["SYSCTL-KERNEL-NUMA-BALANCING"] == 0  # waived
    counts = {lab["status"]: v for lab, v in fams["aiaudit_results"].samples}
    assert counts == {"pass": 1, "fail": 2, "error": 1, "skip": 1, "waived": 1}
    assert fams["aiaudit_scan_timestamp_seconds"].samples == [({}, 1767323045.0)]
    assert fams["aiaudit_scan_duration_seconds"].samples == [({}, 1.25)]
    assert {lab["severity"]: v for lab, v in fams["aiaudit_failures"].samples}["high"] == 1
    assert all(f.type == "gauge" for f in fams.values())


def test_empty_run() -> None:
    fams = parse(prometheus.render(empty_run(), {}))
    assert fams["aiaudit_result"].samples == []
    assert sum(v for _, v in fams["aiaudit_results"].samples) == 0
    assert fams["aiaudit_scan_info"].samples[0][0]["host"] == "dl-base:2026.01"


def test_hostile_label_values_round_trip() -> None:
    run = mixed_run()
    nasty = 'a"b\\c\nd}{,=\u00e9'
    f = run.findings[1]
    twin = replace(f, result=replace(f.result, subject=nasty))
    run = replace(run, findings=(twin, twin, *run.findings))  # duplicate series collapse
    fams = parse(prometheus.render(run, {}))
    subjects = [lab["subject"] for lab, _ in fams["aiaudit_result"].samples]
    assert subjects.count(nasty) == 1


def test_parser_catches_errors() -> None:
    """The parser used above rejects what the collector would reject."""
    import pytest

    with pytest.raises(AssertionError):
        parse('m{a="x"} 1\n')  # no HELP/TYPE
    with pytest.raises(AssertionError):
        parse('# HELP m h\n# TYPE m gauge\nm{a="x"} 1\nm{a="x"} 2\n')  # duplicate
    with pytest.raises(AssertionError):
        parse('# HELP m h\n# TYPE m gauge\nm{a="x\ny"} 1\n')  # raw line feed
