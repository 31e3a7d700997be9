"""Fix bundles from a saved scan (``aiaudit remediate SCAN.json --output-dir DIR``).

aiaudit never changes a host.  This module turns the remediation of every failing result
into files a person (or configuration management) reviews and applies:

- ``files/<target path>``: the drop-in files, in a tree mirroring their target paths;
  snippets for one path are concatenated in scan order, repeated lines dropped;
- ``install.sh``: POSIX ``sh`` (plus GNU ``readlink -m``), ``set -eu``; backs up every
  file it replaces into a timestamped directory, skips files that are already identical
  (idempotent), installs with ``install -D -m 0644``, then runs the runtime commands.
  ``ROOT=/mnt/img`` installs under an image or mounted root instead (refusing a target
  that a symlink leads out of the root, and skipping the commands, which act on the
  running system); ``NO_COMMANDS=1`` skips the commands; ``BACKUP_DIR`` chooses where
  backups go;
- ``playbook.yml``: an Ansible playbook doing the same (``copy`` with ``backup: yes``,
  then ``shell`` tasks);
- ``README.txt``: what the bundle fixes, and what it does not.

Waived failures are not fixed (the waiver is an accepted exception).
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from dataclasses import field

from aiaudit.errors import UsageError
from aiaudit.model import Finding, RunResult, Severity, Status
from aiaudit.records import record

FILE_MODE = 0o644
SCRIPT = "install.sh"
PLAYBOOK = "playbook.yml"
README = "README.txt"
FILES = "files"
_UNIT = re.compile(r"^[A-Za-z0-9:_.@\\-]+\.(service|socket|timer|target|path|mount|swap)$")
"""A plain systemd unit name (no path, no shell metacharacters)."""


@record(frozen=False)
class Bundle:
    """What a bundle will contain, computed from a run without touching the disk."""

    files: dict[str, str] = field(default_factory=dict)
    """Target path -> merged content."""
    commands: list[str] = field(default_factory=list)
    """Runtime commands, in scan order, without repeats."""
    enable: list[str] = field(default_factory=list)
    """systemd units to enable at boot, in scan order, without repeats."""
    fixed: list[Finding] = field(default_factory=list)
    """Failures the bundle addresses with files or commands."""
    partial: list[Finding] = field(default_factory=list)
    """Failures the bundle addresses only in part: their remediation names a manual step."""
    manual: list[Finding] = field(default_factory=list)
    """Failures whose remediation is advice only (no file, no command)."""
    unfixable: list[Finding] = field(default_factory=list)
    """Failures without any remediation."""
    rejected: list[str] = field(default_factory=list)
    """Snippets refused (target path not absolute and normal)."""


def safe_target(path: str | None) -> bool:
    """True for an absolute, normalised path without ``..`` (never escapes the tree)."""
    if not path or not path.startswith("/") or path.endswith("/"):
        return False
    if "\0" in path or "\n" in path:
        return False
    parts = path.split("/")[1:]
    return posixpath.normpath(path) == path and all(p not in ("", ".", "..") for p in parts)


def build(run: RunResult, min_severity: Severity = Severity.INFO) -> Bundle:
    """Collect the fixes of every failing result at or above ``min_severity``."""
    b = Bundle()
    seen_lines: dict[str, set[str]] = {}
    lines: dict[str, list[str]] = {}
    for f in run.findings:
        if f.status is not Status.FAIL or f.severity.rank < min_severity.rank:
            continue
        rem = f.result.remediation
        if rem is None:
            b.unfixable.append(f)
            continue
        used = False
        for s in rem.snippets:
            if s.kind == "file":
                if not safe_target(s.path):
                    b.rejected.append(f"{f.rule_id} [{f.result.subject}]: unsafe target "
                                      f"path {s.path!r}")
                    continue
                assert s.path is not None
                seen = seen_lines.setdefault(s.path, set())
                out = lines.setdefault(s.path, [])
                for line in s.content.splitlines():
                    if line.strip() and line in seen:
                        continue
                    seen.add(line)
                    out.append(line)
                used = True
            elif s.kind == "enable":
                unit = s.content.strip()
                if not _UNIT.match(unit):
                    b.rejected.append(f"{f.rule_id} [{f.result.subject}]: unsafe unit name "
                                      f"{unit!r}")
                    continue
                if unit not in b.enable:
                    b.enable.append(unit)
                used = True
            elif s.kind == "command":
                cmd = s.content.strip()
                if cmd and cmd not in b.commands:
                    b.commands.append(cmd)
                used = used or bool(cmd)
        (b.fixed if used else b.manual).append(f)
        if used and rem.manual:
            b.partial.append(f)
    b.files = {p: "\n".join(ls) + "\n" for p, ls in lines.items()}
    return b


def _header(run: RunResult) -> list[str]:
    h = run.host
    return [f"Generated by aiaudit {run.tool_version} from scan {run.run_id}",
            f"of {h.hostname} ({h.mode}, root {h.root}) started {run.started},",
            f"ruleset {run.ruleset} {run.ruleset_version}.  Review before applying."]


def install_script(run: RunResult, b: Bundle) -> str:
    """The ``install.sh`` text."""
    q = shlex.quote
    out = ["#!/bin/sh", *("# " + ln for ln in _header(run)), "#",
           "# Usage: sh install.sh            install the files into / and run the commands",
           "#        ROOT=/mnt/image sh install.sh   install under a mounted root (no commands)",
           "#        NO_COMMANDS=1 sh install.sh     install the files only",
           "# Replaced files are saved under $BACKUP_DIR (default: a timestamped directory",
           "# next to this script).  Running it twice changes nothing the second time.",
           "set -eu", "",
           'HERE=$(cd "$(dirname "$0")" && pwd)',
           'ROOT=${ROOT:-}',
           'ROOT=${ROOT%/}',
           'BACKUP_DIR=${BACKUP_DIR:-"$HERE/backup-$(date -u +%Y%m%dT%H%M%SZ)"}',
           'changed=0', "",
           "install_file() {",
           '    src="$HERE/files$1"',
           '    dst="$ROOT$1"',
           '    if [ -n "$ROOT" ]; then',
           "        # an absolute symlink inside an image points at the running system",
           '        real=$(readlink -m -- "$dst")',
           '        case "$real" in',
           '            "$(readlink -m -- "$ROOT")"/*) ;;',
           '            *) echo "refusing $dst: it resolves to $real, outside ROOT" >&2',
           "               exit 1 ;;",
           "        esac",
           "    fi",
           '    if [ -f "$dst" ] && [ ! -L "$dst" ] && cmp -s "$src" "$dst"; then',
           '        echo "unchanged: $dst"',
           "        return 0",
           "    fi",
           '    if [ -e "$dst" ] || [ -L "$dst" ]; then',
           '        mkdir -p "$BACKUP_DIR$(dirname "$1")"',
           '        cp -P -p "$dst" "$BACKUP_DIR$1"',
           '        echo "backed up: $dst -> $BACKUP_DIR$1"',
           '        rm -f "$dst"',
           "    fi",
           f'    install -D -m {FILE_MODE:04o} "$src" "$dst"',
           '    echo "installed: $dst"',
           "    changed=$((changed + 1))",
           "}", ""]
    for p in sorted(b.files):
        out += [*_literal(p), f"install_file {q(p)}"]
    out += ['echo "$changed file(s) installed"', ""]
    if b.enable:
        # systemctl --root works on an image without a running systemd (it only writes the
        # [Install] symlinks), so enabling is part of the persisted fix, also under ROOT
        for unit in b.enable:
            out += [f"echo {q('+ systemctl enable ' + unit)}",
                    f'systemctl ${{ROOT:+--root="$ROOT"}} enable {q(unit)}']
        out += [""]
    if b.commands:
        out += ['if [ -n "$ROOT" ] || [ "${NO_COMMANDS:-0}" = 1 ]; then',
                '    echo "runtime commands skipped (ROOT or NO_COMMANDS set)"',
                "else"]
        for cmd in b.commands:
            out += [*("    " + d for d in _literal(cmd)), f"    echo {q('+ ' + cmd)}",
                    f"    {cmd}"]
        out += ["fi"]
    return "\n".join(out) + "\n"


def _literal(text: str) -> list[str]:
    """A shellcheck directive for a single-quoted word that contains ``$`` or a backtick
    on purpose (SC2016: the text is literal)."""
    return ["# shellcheck disable=SC2016"] if "$" in text or "`" in text else []


def playbook(run: RunResult, b: Bundle) -> str:
    """The Ansible ``playbook.yml`` text."""
    import yaml

    tasks: list[dict[str, object]] = []
    for p in sorted(b.files):
        tasks.append({"name": f"Install {p}", "ansible.builtin.copy": {
            "src": "{{ playbook_dir }}/" + FILES + p, "dest": p, "owner": "root",
            "group": "root", "mode": f"{FILE_MODE:04o}", "backup": True}})
    for unit in b.enable:
        tasks.append({"name": f"Enable {unit} at boot", "ansible.builtin.systemd": {
            "name": unit, "enabled": True}})
    for cmd in b.commands:
        tasks.append({"name": f"Apply now: {cmd}"[:120], "ansible.builtin.shell": cmd})
    play = [{"name": f"aiaudit fixes for {run.host.hostname} ({run.ruleset})",
             "hosts": "all", "become": True, "tasks": tasks}]
    head = "".join(f"# {ln}\n" for ln in _header(run))
    return "---\n" + head + yaml.safe_dump(play, sort_keys=False, width=100,
                                           allow_unicode=True)


def readme(run: RunResult, b: Bundle) -> str:
    """The ``README.txt`` text: what the bundle fixes, and what it leaves to a person."""
    out = [*_header(run), ""]
    out += [f"This bundle addresses {len(b.fixed)} failing result(s):", ""]
    for f in b.fixed:
        out.append(f"  {f.rule_id} [{f.severity.value}] {f.result.subject}: "
                   f"{f.result.remediation.summary if f.result.remediation else ''}")
    out += ["", "Files (under files/, installed at the same path):"]
    out += [f"  {p}" for p in sorted(b.files)] or ["  (none)"]
    out += ["", "Units enabled at boot (also under ROOT, with systemctl --root):"]
    out += [f"  {u}" for u in b.enable] or ["  (none)"]
    out += ["", "Runtime commands (run by install.sh unless ROOT or NO_COMMANDS is set):"]
    out += [f"  {c}" for c in b.commands] or ["  (none)"]
    if b.partial:
        out += ["", "Also needs a step by hand (the bundle alone does not fix these):"]
        out += [f"  {f.rule_id} {f.result.subject}: {f.result.remediation.manual}"
                for f in b.partial if f.result.remediation]
    if b.manual:
        out += ["", "Needs a manual fix (no file or command can be proposed):"]
        out += [f"  {f.rule_id} {f.result.subject}: "
                f"{f.result.remediation.summary if f.result.remediation else ''}"
                for f in b.manual]
    if b.unfixable:
        out += ["", "Failing without a proposed fix (see `aiaudit explain RULE`):"]
        out += [f"  {f.rule_id} {f.result.subject}: {f.result.message}" for f in b.unfixable]
    if b.rejected:
        out += ["", "Refused snippets:"] + [f"  {r}" for r in b.rejected]
    out += ["", "Apply with:  sh install.sh   (or: ansible-playbook -i HOST, playbook.yml)",
            "Then rescan: aiaudit scan"]
    return "\n".join(out) + "\n"


def write(run: RunResult, out_dir: str, *, min_severity: Severity = Severity.INFO,
          force: bool = False) -> Bundle:
    """Write the bundle for ``run`` into ``out_dir`` (created; must be empty unless
    ``force``).  Returns what was written."""
    b = build(run, min_severity)
    if os.path.lexists(out_dir):
        if not os.path.isdir(out_dir):
            raise UsageError(f"--output-dir {out_dir}: exists and is not a directory")
        if os.listdir(out_dir) and not force:
            raise UsageError(f"--output-dir {out_dir}: not empty (use --force to overwrite)")
    try:
        os.makedirs(out_dir, exist_ok=True)
        for p, content in b.files.items():
            dest = os.path.join(out_dir, FILES, p.lstrip("/"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            _write(dest, content, 0o644)
        _write(os.path.join(out_dir, SCRIPT), install_script(run, b), 0o755)
        _write(os.path.join(out_dir, PLAYBOOK), playbook(run, b), 0o644)
        _write(os.path.join(out_dir, README), readme(run, b), 0o644)
    except OSError as exc:
        raise UsageError(f"--output-dir {out_dir}: cannot write: "
                         f"{exc.strerror} ({exc.filename})") from None
    return b


def _write(path: str, text: str, mode: int) -> None:
    if os.path.islink(path):
        os.unlink(path)
    with open(path, "w", encoding="utf-8", errors="replace") as fh:
        fh.write(text)
    os.chmod(path, mode)
