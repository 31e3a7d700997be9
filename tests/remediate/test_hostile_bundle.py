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


# ------------------------------------------------------------------ issue 25
def test_a_unit_name_starting_with_a_dash_is_refused(tmp_path: Path) -> None:
    """`systemctl enable -foo.service` reads the name as an option: refused (listed in the
    README), and install.sh passes every unit after `--` besides."""
    run = mixed_run()
    base = run.findings[1]
    snippets = (Snippet.enable("--now.service"), Snippet.mask("-.mount"),
                Snippet.enable("-H.service"), Snippet.enable("ok-name.service"))
    evil = replace(base, result=replace(base.result, status=Status.FAIL,
                                        remediation=Remediation("units", snippets)))
    b = remediate.write(replace(run, findings=(evil,)), str(tmp_path / "b"))
    assert b.enable == ["ok-name.service"] and b.mask == []
    assert {r.split(": ", 1)[1] for r in b.rejected} == {
        "unsafe unit name '--now.service'", "unsafe unit name '-.mount'",
        "unsafe unit name '-H.service'"}
    script = (tmp_path / "b" / "install.sh").read_text()
    assert 'systemctl "$1" -- "$2"' in script and 'systemctl --root="$ROOT" "$1" -- "$2"' \
        in script
    play = yaml.load((tmp_path / "b" / "playbook.yml").read_text(),
                     Loader=remediate.playbook_loader())
    argvs = [t["ansible.builtin.command"]["argv"] for t in play[0]["tasks"]
             if "systemctl" in str(t.get("ansible.builtin.command", {}).get("argv", ""))]
    assert ["systemctl", "--root={{ aiaudit_root }}", "enable", "--", "ok-name.service"] \
        in argvs


def _bundle_snapshot(top: Path) -> dict[str, str]:
    return {str(p.relative_to(top)): (os.readlink(p) if p.is_symlink() else
                                      "<dir>" if p.is_dir() else p.read_text())
            for p in sorted(top.rglob("*"))}


def test_force_does_not_follow_a_planted_symlink(tmp_path: Path) -> None:
    """Someone who can write into a bundle directory plants `files/etc -> /etc`-like links;
    `remediate --force` used to write the new files through them (here into `victim/`)."""
    run = mixed_run()
    out, victim = tmp_path / "bundle", tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("victim's own\n")
    remediate.write(run, str(out))
    first = _bundle_snapshot(out)
    shutil.rmtree(out / "files")
    (out / "files").mkdir()
    (out / "files" / "etc").symlink_to(victim)
    (out / "README.txt").unlink()
    (out / "README.txt").symlink_to(victim / "readme-target")
    (out / "backup-20260101T000000Z").mkdir()  # what an earlier install.sh left: kept
    (out / "backup-20260101T000000Z" / "x").write_text("old\n")
    r = cli("remediate", str(_saved(tmp_path, run)), "-d", str(out), "--force")
    assert r.code == 0, r.err
    assert sorted(p.name for p in victim.iterdir()) == ["keep"]
    assert (victim / "keep").read_text() == "victim's own\n"
    after = _bundle_snapshot(out)
    assert after.pop("backup-20260101T000000Z") == "<dir>"
    assert after.pop("backup-20260101T000000Z/x") == "old\n"
    assert after == first  # the same bundle as a fresh one, links replaced, not followed
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".bundle.")]


def _saved(tmp_path: Path, run) -> Path:
    report = tmp_path / "scan.json"
    report.write_text(json.dumps(run_dict(run)))
    return report


def test_a_failed_remediate_leaves_no_half_written_bundle(tmp_path: Path, monkeypatch) -> None:
    """A write that fails half-way (a full disk) leaves the target as it was: no new
    directory, or the previous bundle untouched with --force; no temporary left behind."""
    import errno

    run = mixed_run()

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device", "README.txt")

    out = tmp_path / "new"
    monkeypatch.setattr(remediate, "readme", full)
    r = cli("remediate", str(_saved(tmp_path, run)), "-d", str(out))
    assert r.code == 2 and "No space left on device" in r.err and "nothing was changed" in r.err
    assert not out.exists()
    monkeypatch.undo()
    old = tmp_path / "old"
    remediate.write(run, str(old))
    before = _bundle_snapshot(old)
    monkeypatch.setattr(remediate, "readme", full)
    r = cli("remediate", str(_saved(tmp_path, run)), "-d", str(old), "--force")
    assert r.code == 2, r.err
    assert _bundle_snapshot(old) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old", "scan.json"]


def test_a_failed_move_puts_the_previous_bundle_back(tmp_path: Path, monkeypatch) -> None:
    """A rename that fails while the entries are moved in (the last one here) undoes the
    moves made so far."""
    run = mixed_run()
    out = tmp_path / "b"
    remediate.write(run, str(out))
    before = _bundle_snapshot(out)
    real_rename = os.rename
    failed: list[str] = []

    def rename(src, dst):
        if str(dst).endswith(f"/b/{remediate.SCRIPT}") and not failed:
            failed.append(dst)
            raise OSError(5, "Input/output error", str(dst))
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    try:
        remediate.write(run, str(out), force=True)
    except remediate.UsageError as exc:
        assert "Input/output error" in str(exc)
    else:
        raise AssertionError("the failed rename was not reported")
    monkeypatch.undo()
    assert _bundle_snapshot(out) == before


def test_staging_is_next_to_a_new_directory_and_inside_an_existing_one(
        tmp_path: Path, monkeypatch) -> None:
    """An existing --output-dir whose parent the user cannot write (a shared
    /var/lib/bundles/<user>) still takes a --force rewrite: the staging directory is made
    inside it; a new one is staged next to it (it is renamed into place as a whole)."""
    import tempfile

    made: list[str] = []
    real = tempfile.mkdtemp

    def mkdtemp(*a, **k):
        made.append(real(*a, **k))
        return made[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    run = mixed_run()
    out = tmp_path / "b"
    remediate.write(run, str(out))
    remediate.write(run, str(out), force=True)
    assert [Path(m).parent for m in made] == [tmp_path, out]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_a_previous_bundle_that_cannot_be_put_back_is_kept_and_named(
        tmp_path: Path, monkeypatch) -> None:
    """When the move fails and so does putting the previous bundle back, the previous
    entries stay inside the directory under a name the message gives, never removed."""
    run = mixed_run()
    out = tmp_path / "b"
    remediate.write(run, str(out))
    before = (out / remediate.README).read_text()
    real_rename = os.rename

    def rename(src, dst):  # the new install.sh cannot move in, the old files/ not back
        if str(dst).endswith(f"/b/{remediate.SCRIPT}") or (
                str(dst).endswith(f"/b/{remediate.FILES}") and ".previous" in str(src)):
            raise OSError(5, "Input/output error", str(dst))
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    try:
        remediate.write(run, str(out), force=True)
    except remediate.UsageError as exc:
        message = str(exc)
    else:
        raise AssertionError("the failed rename was not reported")
    monkeypatch.undo()
    kept = re.search(r"it is kept in (\S+)$", message)
    assert kept and Path(kept.group(1)).parent == out, message
    assert sorted(p.name for p in Path(kept.group(1)).iterdir()) == [
        remediate.FILES, remediate.SCRIPT]  # what could not be put back
    assert (out / remediate.README).read_text() == before  # put back where it could be
    assert not (out / remediate.FILES).exists()
