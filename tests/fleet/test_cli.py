"""``aiaudit fleet`` end to end: outputs, schema, escaping, exit codes, --since."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from aiaudit.core.errors import ExitCode
from aiaudit.core.ruleset import schema
from tests.fleet.reports import report, write
from tests.helpers import AIAUDIT_CMD, cli

SWAP = "SYSCTL-VM-SWAPPINESS"  # medium
DMESG = "SYSCTL-KERNEL-DMESG-RESTRICT"  # low
GOOD = {r: ("pass", v) for r, v in [
    (SWAP, "10"), ("SYSCTL-VM-DIRTY-BACKGROUND-RATIO", "5"), ("SYSCTL-VM-MAX-MAP-COUNT", "1048576"),
    ("SYSCTL-KERNEL-NUMA-BALANCING", "0"), ("SYSCTL-NET-CORE-RMEM-MAX", "67108864"),
    ("SYSCTL-NET-CORE-WMEM-MAX", "67108864"), ("SYSCTL-NET-IPV4-TCP-RMEM", "4096 87380 67108864"),
    ("SYSCTL-NET-IPV4-TCP-WMEM", "4096 65536 67108864"), ("SYSCTL-NET-IPV4-TCP-FIN-TIMEOUT", "15"),
    ("SYSCTL-NET-IPV4-TCP-TW-REUSE", "1"), ("SYSCTL-NET-IPV4-TCP-SLOW-START-AFTER-IDLE", "0"),
    ("SYSCTL-NET-IPV4-TCP-MTU-PROBING", "1"), ("SYSCTL-FS-PROTECTED-SYMLINKS", "1"),
    ("SYSCTL-FS-PROTECTED-HARDLINKS", "1"), ("SYSCTL-KERNEL-KPTR-RESTRICT", "1"),
    (DMESG, "1"), ("CPU-GOVERNOR-PERFORMANCE", "performance"),
    ("CPU-EPP-PERFORMANCE", "performance"), ("CPU-CSTATE-LATENCY", "C1"),
    ("MEM-THP-ENABLED", "madvise"), ("FW-DEFAULT-DENY-INPUT", "drop"),
    ("FW-ONLY-ALLOWED-PORTS", "22")]}


def good(host: str, mid: str | None = None, **over: tuple[str, str | None]) -> dict:
    """A node that passes everything, with ``over`` rule -> (status, actual)."""
    changed = {k.replace("_", "-"): v for k, v in over.items()}
    d = report(host, mid, results={**GOOD, **changed})
    for r in d["results"]:  # rules the base scan fails beyond GOOD's list pass too
        if r["rule_id"] not in changed and r["status"] in ("fail", "error"):
            r["status"] = r["check_status"] = "pass"
    return d


def _fleet_dir(tmp_path: Path, reports: list[dict]) -> str:
    write(tmp_path / "reports", reports)
    return str(tmp_path / "reports")


def test_exit_codes_and_max_failing_nodes(tmp_path: Path) -> None:
    ok = _fleet_dir(tmp_path / "ok", [good(f"gpu{i:02d}") for i in range(1, 5)])
    assert cli("fleet", ok).code == 0
    low = _fleet_dir(tmp_path / "low", [good("gpu01"), good("gpu02", **{DMESG: ("fail", "0")})])
    assert cli("fleet", low).code == 0
    assert cli("fleet", low, "--fail-on", "low").code == 1
    two = _fleet_dir(tmp_path / "two", [good("gpu01", **{SWAP: ("fail", "60")}),
                                        good("gpu02", **{SWAP: ("fail", "60")}), good("gpu03")])
    assert cli("fleet", two).code == 1
    assert cli("fleet", two, "--max-failing-nodes", "1").code == 1
    assert cli("fleet", two, "--max-failing-nodes", "2").code == 0
    err = _fleet_dir(tmp_path / "err", [good("gpu01", **{SWAP: ("error", None)})])
    assert cli("fleet", err).code == 3
    cloned = _fleet_dir(tmp_path / "clone", [good("gpu01", "a" * 32), good("gpu02", "a" * 32)])
    res = cli("fleet", cloned)
    assert res.code == 1 and "machine id " + "a" * 32 in res.out
    assert cli("fleet", str(tmp_path / "nothing-here")).code == 2
    assert cli("fleet", ok, "--max-failing-nodes", "-1").code == 2


def test_bad_input_is_one_line_each_and_exit_5(tmp_path: Path) -> None:
    folder = _fleet_dir(tmp_path, [good("gpu01"), good("gpu02")])
    cut = Path(folder) / "cut.json"
    cut.write_text(json.dumps(good("gpu03"), indent=2)[:5000])
    res = cli("fleet", folder)
    assert res.code == 5 == ExitCode.BAD_INPUT
    lines = res.err.strip().splitlines()
    assert len(lines) == 1
    assert re.match(rf"aiaudit: error: {re.escape(str(cut))}:\d+: truncated JSON document",
                    lines[0])
    assert "2 node(s)" in res.out
    failing = _fleet_dir(tmp_path / "f", [good("gpu01", **{SWAP: ("fail", "60")})])
    (Path(failing) / "cut.json").write_text("{")
    assert cli("fleet", failing).code == 1  # a failing fleet says so even then
    only_bad = tmp_path / "bad"
    only_bad.mkdir()
    (only_bad / "x.json").write_text("{")
    res = cli("fleet", str(only_bad))
    assert res.code == 2 and "no usable report" in res.err


def _reports_with_outliers(tmp_path: Path) -> str:
    reps = [good(f"gpu{i:03d}", f"{i:032x}", **{SWAP: ("fail", "60")} if i in (5, 6) else {})
            for i in range(1, 33)]
    reps.append(good("gpu040", f"{40:032x}", **{"SYSCTL-VM-MAX-MAP-COUNT": ("pass", "262144")}))
    return _fleet_dir(tmp_path, reps)


def test_text_summary_top_rules_outliers(tmp_path: Path) -> None:
    res = cli("fleet", _reports_with_outliers(tmp_path))
    assert res.code == 1
    assert "33 node(s) from 33 report(s)" in res.out
    assert re.search(rf"MEDIUM +{SWAP}  2/33 fail  gpu\[005-006\]", res.out)
    assert "SYSCTL-VM-MAX-MAP-COUNT vm.max_map_count: 1048576 on 32/33 nodes" in res.out
    assert "262144: gpu040" in res.out


def test_json_output_validates_and_folds_host_lists(tmp_path: Path) -> None:
    out = tmp_path / "fleet.json"
    res = cli("fleet", _reports_with_outliers(tmp_path / "r"), "--format", "json", "-o",
              str(out))
    assert res.code == 1
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, schema("fleet.schema.json"))
    g = doc["groups"][0]
    assert g["nodes"] == {"count": 33, "hosts": "gpu[001-032,040]"}
    row = next(r for r in g["rules"] if r["id"] == SWAP)
    assert row["failing"] == {"count": 2, "hosts": "gpu[005-006]"}
    assert row["counts"]["fail"] == 2 and row["counts"]["pass"] == 31
    drift = next(d for d in doc["drift"] if d["rule"] == "SYSCTL-VM-MAX-MAP-COUNT")
    assert drift["outliers"] == {"count": 1, "hosts": "gpu040"}
    assert doc["summary"]["exit_code"] == 1


def test_since_reports_worse_and_better(tmp_path: Path) -> None:
    before = _fleet_dir(tmp_path / "a", [good("n1", **{SWAP: ("fail", "60")}), good("n2")])
    prev = tmp_path / "prev.json"
    cli("fleet", before, "-o", f"json:{prev}")
    after = _fleet_dir(tmp_path / "b", [good("n1"), good("n2", **{DMESG: ("fail", "0")}),
                                        good("n3")])
    res = cli("fleet", after, "--since", str(prev), "--format", "json")
    doc = json.loads(res.out)
    jsonschema.validate(doc, schema("fleet.schema.json"))
    assert doc["since"]["worse"] == [{"host": "n2", "rules": [DMESG]}]
    assert doc["since"]["better"] == [{"host": "n1", "rules": [SWAP]}]
    assert doc["since"]["new_nodes"]["hosts"] == "n3"
    text = cli("fleet", after, "--since", str(prev)).out
    assert f"worse  n2: now fails {DMESG}" in text and f"better n1: fixed {SWAP}" in text
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"kind": "aiaudit.fleet"}')
    res = cli("fleet", after, "--since", str(bogus))  # an input: a problem line, not the run
    assert res.code == 5 and "not a valid aiaudit fleet JSON report" in res.err
    assert "3 node(s)" in res.out and "Since" not in res.out


HOSTILE = '<script>alert("x")</script>&\u2028'


def test_html_is_self_contained_and_escapes_everything(tmp_path: Path) -> None:
    reps = [good(f"gpu{i:02d}") for i in range(1, 4)]
    reps.append(good("gpu09", **{SWAP: ("fail", HOSTILE)}))
    reps[0]["results"][0]["title"] = HOSTILE
    reps[0]["host"]["kernel"] = HOSTILE
    out = tmp_path / "fleet.html"
    cli("fleet", _fleet_dir(tmp_path, reps), "-o", f"html:{out}")
    page = out.read_text()
    assert "<script" not in page and "&lt;script&gt;" in page
    assert not re.search(r"""(src|href)\s*=|@import|url\(""", page)
    assert 'class="s fail"' in page and "gpu09" in page
    assert "Drift" in page and "Host facts" in page


def test_prometheus_textfile(tmp_path: Path) -> None:
    out = tmp_path / "fleet.prom"
    reps = [good("gpu01"), good("gpu02", **{SWAP: ("fail", 'a"b\\c\nd')}),
            good("gpu03", "f" * 32), good("gpu04", "f" * 32)]
    cli("fleet", _fleet_dir(tmp_path, reps), "-o", f"prometheus:{out}")
    text = out.read_text()
    assert ('aiaudit_fleet_rule_failing_nodes{ruleset="dl-training",ruleset_version="1.0",'
            f'tool_version="0.1.0",rule="{SWAP}",severity="medium"}} 1') in text
    assert 'aiaudit_fleet_identity_findings{kind="duplicate-machine-id"} 1' in text
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool (Debian prometheus) must be installed in CI")
        pytest.skip("promtool not installed (Debian prometheus)")
    res = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr


def test_stdin_stream(tmp_path: Path) -> None:
    from tests.fleet.reports import event_lines

    lines = [*event_lines(good("gpu01")), json.dumps(good("gpu02"))]
    proc = subprocess.run([*AIAUDIT_CMD, "fleet", "-", "--format", "json"],
                          input="\n".join(lines) + "\n", capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["groups"][0]["nodes"]["hosts"] == "gpu[01-02]"


def test_default_jobs_leave_a_cpu_to_the_stdin_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    from aiaudit.fleet import collect

    monkeypatch.setattr(collect.os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    assert collect.default_jobs(["reports/"]) == 2
    assert collect.default_jobs(["-"]) == 1
    assert collect.default_jobs(["-", "more/"]) == 2
    monkeypatch.setattr(collect.os, "sched_getaffinity", lambda _pid: set(range(32)))
    assert collect.default_jobs(["-"]) == 8


def test_a_closed_pipe_is_one_message_and_exit_2(tmp_path: Path) -> None:
    """As ``scan``: a report that cannot be written is one message and exit 2, never an
    internal error (exit 4) with a traceback."""
    folder = _fleet_dir(tmp_path, [good(f"gpu{i:02d}") for i in range(1, 4)])
    proc = subprocess.Popen([*AIAUDIT_CMD, "fleet", folder], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 2, err
    assert err.count("aiaudit: error:") == 1 and "Broken pipe" in err and "Traceback" not in err


def test_file_names_and_problems_reach_stderr_escaped(tmp_path: Path) -> None:
    folder = Path(_fleet_dir(tmp_path, [good("gpu01")]))
    (folder / "evil\x1b]0;owned\x07\u202e.json").write_text("{")
    res = cli("fleet", str(folder))
    assert res.code == 5
    assert "\x1b" not in res.err and "\x07" not in res.err and "\u202e" not in res.err
    assert "evil\\x1b]0;owned\\x07\\u202e.json" in res.err
