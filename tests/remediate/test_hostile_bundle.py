"""Nothing a saved report or a scanned host contains can inject into a fix bundle.

Hostile values (newline, ``$(...)``, backticks, both quotes, heredoc delimiters, ESC, NUL,
``../`` paths, spaces, Jinja) go into every field the bundle prints: the report header,
rule ids, subjects, messages, summaries, manual steps, file paths and contents, edit
operations, unit names, apply targets and commands.  Then ``sh -n`` accepts install.sh,
install.sh runs under ``ROOT=`` with a ``pwned`` trap command first on ``PATH`` (any
injected text calls it), the playbook parses to the expected structure with every report
value an ``!unsafe`` scalar, and README/comments carry no raw control character.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import yaml

from aiaudit.core.model import Finding, Remediation, Result, Severity, Snippet, Status
from aiaudit.core.serialize import run_dict
from aiaudit.remediate import bundle as remediate
from tests.helpers import cli
from tests.reporters.samples import mixed_run

PAYLOADS = [
    "$(pwned dollar)", "`pwned backtick`", "x'; pwned squote; '", 'x"; pwned dquote; "',
    "a\npwned newline\n", "EOF\npwned heredoc\nEOF", "AIAUDIT_EOF", "\x1b]0;owned\x07\x1b[2J",
    "nul\x00byte", "cr\rpwned cr", "{{ lookup('pipe', 'pwned jinja') }}", "{% raw %}x",
    "line\u2028sep", "fi\npwned fi\nif true; then", "\\'\\\"\\\\",
]
"""Every value below is built from these."""
HOSTILE = "".join(PAYLOADS)
CONTENT = HOSTILE.replace("\x00", "") + "\n"
"""File content: anything but NUL (a file with NUL is refused)."""
PATHS = ["/etc/with space/$(pwned p1).conf", "/etc/`pwned p2`/x'y\"z.conf",
         "/etc/../../escape", "relative/x", "/etc/a\nb", "/etc/esc\x1b[2J", "/etc/nul\x00",
         "/etc/{{ lookup('pipe','pwned p3') }}.conf"]
UNITS = ["$(pwned u1).service", "a b.service", "x;pwned u2.service", "../x.service"]
EDITS = [f"set-directive PermitRootLogin {p}" for p in PAYLOADS] + [
    "comment-swap; pwned e1", "set-mount a b c d\npwned e2", "rm -rf /"]
APPLY = ["sshd; pwned a1", "nftables 22;pwned", "nftables $(pwned a2)"]
COMMANDS = ["true\nfi\npwned c1", "echo \x1b[2J", "true \x00 pwned c2", "echo $(pwned c3)"]


def hostile_run():
    run = mixed_run()
    host = replace(run.host, hostname=HOSTILE, root="/mnt/" + HOSTILE, mode="live\npwned m")
    snippets = [*(Snippet.file(p, CONTENT) for p in PATHS),
                Snippet.file("/etc/ok/nul.conf", "a\x00b\n"),
                Snippet.file("/etc/ok/heredoc.conf", "EOF\nAIAUDIT_EOF\n'\n$(pwned f)\n"),
                *(Snippet.enable(u) for u in UNITS), *(Snippet.mask(u) for u in UNITS),
                *(Snippet.edit("/etc/ssh/sshd_config", op) for op in EDITS),
                *(Snippet.edit(p, "comment-swap") for p in PATHS),
                *(Snippet.apply(a) for a in APPLY), *(Snippet.command(c) for c in COMMANDS)]
    base = run.findings[1]
    findings = [replace(base, rule_id="R" + HOSTILE, title=HOSTILE, result=Result(
        Status.FAIL, "subject " + HOSTILE, "message " + HOSTILE, remediation=Remediation(
            "summary " + HOSTILE, tuple(snippets), manual="manual " + HOSTILE)))]
    findings.append(Finding("U" + HOSTILE, "x", Severity.HIGH, HOSTILE,
                            Result(Status.FAIL, HOSTILE, "unfixable " + HOSTILE)))
    findings.append(replace(base, result=Result(Status.FAIL, HOSTILE, "advice " + HOSTILE,
                                                remediation=Remediation(HOSTILE))))
    return replace(run, host=host, findings=tuple(findings), tool_version=HOSTILE,
                   run_id=HOSTILE, started=HOSTILE, ruleset=HOSTILE, ruleset_version=HOSTILE)


def _trap_path(tmp_path: Path) -> tuple[str, Path]:
    traps = tmp_path / "traps"
    traps.mkdir()
    marker = tmp_path / "PWNED"
    trap = traps / "pwned"
    trap.write_text(f"#!/bin/sh\necho \"$*\" >> '{marker}'\n")
    trap.chmod(0o755)
    return f"{traps}:{os.environ['PATH']}", marker


def _check_bundle(out: Path, tmp_path: Path) -> None:
    script = (out / "install.sh").read_text()
    p = subprocess.run(["sh", "-n", str(out / "install.sh")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    if shutil.which("shellcheck"):  # tests/remediate/test_lint.py requires it in CI
        p = subprocess.run(["shellcheck", "-s", "sh", "-S", "style", str(out / "install.sh")],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout
    # no raw control character but newline anywhere in the script, README or playbook
    for name in ("install.sh", "README.txt", "playbook.yml"):
        text = (out / name).read_text()
        bad = re.findall(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]", text)
        assert not bad, f"{name}: {bad!r}"
    # the header is three comment lines, whatever the report says
    head = script.splitlines()[1:4]
    assert all(ln.startswith("# ") for ln in head) and script.splitlines()[4] == "#"
    # run it for real under ROOT, with the trap first on PATH
    path, marker = _trap_path(tmp_path)
    root = tmp_path / "root"
    (root / "etc/ssh").mkdir(parents=True)
    (root / "etc/ssh/sshd_config").write_text("PermitRootLogin yes\nMatch User x\n")
    p = subprocess.run(["sh", str(out / "install.sh")], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PATH": path, "ROOT": str(root),
                                        "BACKUP_DIR": str(tmp_path / "bk")})
    assert p.returncode == 0, p.stdout + p.stderr
    assert not marker.exists(), marker.read_text()
    p = subprocess.run(["sh", str(out / "install.sh")], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PATH": path, "ROOT": str(root),
                                        "NO_COMMANDS": "1", "BACKUP_DIR": str(tmp_path / "bk")})
    assert p.returncode == 0 and not marker.exists(), p.stderr
    assert not (tmp_path / "escape").exists() and not Path("/escape").exists()
    # the playbook: one play, its tasks, every report value an !unsafe scalar (literal)
    text = (out / "playbook.yml").read_text()
    play = yaml.load(text, Loader=remediate.playbook_loader())
    assert isinstance(play, list) and len(play) == 1
    assert set(play[0]) == {"name", "hosts", "become", "gather_facts", "vars", "tasks"}
    for task in play[0]["tasks"]:
        assert "{{" not in task["name"] and "{%" not in task["name"]
    node = yaml.compose(text, Loader=remediate.playbook_loader())
    plain = [n.value for n in _scalars(node) if n.tag != "!unsafe"]
    for v in plain:
        # a plain (templated) scalar with a Jinja delimiter is one of the bundle's own
        # templates, never a report value
        if any(d in v for d in ("{{", "{%", "{#")):
            assert not any(w in v for w in ("pwned", "lookup", "raw", "owned")), v


def _scalars(node):
    if isinstance(node, yaml.ScalarNode):
        yield node
    elif isinstance(node, yaml.SequenceNode):
        for n in node.value:
            yield from _scalars(n)
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            yield from _scalars(k)
            yield from _scalars(v)


def test_hostile_values_in_every_field(tmp_path: Path) -> None:
    run = hostile_run()
    out = tmp_path / "bundle"
    b = remediate.write(run, str(out))
    # what survived validation is only what every context can carry
    assert set(b.files) == {"/etc/with space/$(pwned p1).conf", "/etc/`pwned p2`/x'y\"z.conf",
                            "/etc/{{ lookup('pipe','pwned p3') }}.conf", "/etc/ok/heredoc.conf"}
    assert b.enable == [] and b.mask == [] and b.apply == []
    assert b.commands == ["true\nfi\npwned c1", "echo $(pwned c3)"]
    # set-directive lines with a control character are refused; the others stay literal
    assert [op for path, op in b.edits if path == "/etc/ssh/sshd_config"] == [
        op for op in EDITS[:len(PAYLOADS)] if not remediate._ESCAPE.search(op)]
    assert {path for path, op in b.edits if op == "comment-swap"} == set(b.files) - {
        "/etc/ok/heredoc.conf"}
    assert len(b.rejected) >= len(UNITS) * 2 + len(APPLY) + 2
    _check_bundle(out, tmp_path)
    # the literal values landed where they belong
    root = tmp_path / "root"
    for p in b.files:
        assert (root / p.lstrip("/")).read_text() == b.files[p]
    sshd = (root / "etc/ssh/sshd_config").read_text()
    assert "PermitRootLogin $(pwned dollar)" in sshd and "# aiaudit: PermitRootLogin yes" in sshd
    readme = (out / "README.txt").read_text()
    assert "\\x1b]0;owned" in readme and "Refused snippets" in readme


def test_hostile_report_through_the_cli(tmp_path: Path) -> None:
    """The same run saved as JSON (mode kept valid: the report schema checks it) and read
    back by ``aiaudit remediate`` (start time kept valid too) is written as safely as
    in-process."""
    run = hostile_run()
    doc = run_dict(replace(run, host=replace(run.host, mode="offline"),
                           started="2026-01-02T03:04:05Z"))
    report = tmp_path / "scan.json"
    report.write_text(json.dumps(doc))
    out = tmp_path / "bundle"
    r = cli("remediate", str(report), "--output-dir", str(out))
    assert r.code == 0, r.err
    assert "\x1b" not in r.out
    _check_bundle(out, tmp_path)
