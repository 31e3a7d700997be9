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
        "ruleset": "dl-training", "rule": "SYSCTL-VM-MAX-MAP-COUNT", "severity": "medium",
        "subject": "vm.max_map_count",
        "status": "fail", "aspect": "drift"}
    # escaped label values come back unchanged
    assert by_rule["BLOCK-NVME-SCHEDULER"]["subject"] == 'nvme0n1 "fast\\disk"'
    failing = {lab["rule"]: v for lab, v in fams["aiaudit_result_failing"].samples}
    assert failing["SYSCTL-VM-MAX-MAP-COUNT"] == 1
    assert failing["SYSCTL-KERNEL-NUMA-BALANCING"] == 0  # waived
    counts = {lab["status"]: v for lab, v in fams["aiaudit_results"].samples}
    assert counts == {"pass": 1, "fail": 2, "error": 1, "skip": 1, "waived": 1}
    ruleset = {"ruleset": "dl-training"}
    assert fams["aiaudit_scan_timestamp_seconds"].samples == [(ruleset, 1767323045.0)]
    assert fams["aiaudit_scan_duration_seconds"].samples == [(ruleset, 1.25)]
    assert {lab["severity"]: v for lab, v in fams["aiaudit_failures"].samples}["high"] == 1
    assert all(f.type == "gauge" for f in fams.values())


def test_empty_run() -> None:
    fams = parse(prometheus.render(empty_run(), {}))
    assert fams["aiaudit_result"].samples == []
    assert sum(v for _, v in fams["aiaudit_results"].samples) == 0
    assert fams["aiaudit_scan_info"].samples[0][0]["host"] == "dl-base"


def test_every_series_has_the_ruleset_and_no_run_id() -> None:
    for run in (mixed_run(), empty_run()):
        fams = parse(prometheus.render(run, {}))
        for name, fam in fams.items():
            for labels, _ in fam.samples:
                assert labels.get("ruleset") == run.ruleset, name
                assert "run_id" not in labels and run.run_id not in labels.values(), name


def test_two_rulesets_in_one_textfile_directory_are_disjoint() -> None:
    """The hourly dl-training scan and the prolog's slurm-preflight scan of one host:
    not one series in common (node_exporter would drop it as a duplicate)."""
    a = parse(prometheus.render(mixed_run(), {}))
    b = parse(prometheus.render(replace(mixed_run(), ruleset="slurm-preflight"), {}))
    for name in set(a) & set(b):
        assert a[name].help == b[name].help and a[name].type == b[name].type
        sa = {tuple(sorted(lab.items())) for lab, _ in a[name].samples}
        sb = {tuple(sorted(lab.items())) for lab, _ in b[name].samples}
        assert not sa & sb, name


def test_rescan_keeps_the_same_series() -> None:
    run = mixed_run()
    again = replace(run, run_id="11111111-1111-4111-8111-111111111111",
                    started="2026-01-02T04:04:05Z", duration_s=2.0)

    def series(r) -> set:
        fams = parse(prometheus.render(r, {}))
        return {(n, tuple(sorted(lab.items()))) for n, f in fams.items() for lab, _ in f.samples}

    assert series(run) == series(again)


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
