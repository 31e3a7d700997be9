"""Fix bundles from a saved scan (``aiaudit remediate SCAN.json --output-dir DIR``).

aiaudit never changes a host.  This module turns the remediation of every failing result
into files a person (or configuration management) reviews and applies:

- ``files/<target path>``: the drop-in files, in a tree mirroring their target paths;
  snippets for one path are concatenated in scan order, repeated lines dropped;
- ``install.sh``: POSIX ``sh`` (plus GNU ``readlink -m`` and ``stat -c``), ``set -eu``.  It
  backs up every file it replaces or edits into a timestamped directory (once per run),
  skips files that are already identical in content and mode (idempotent), installs with
  ``install -D -m MODE`` (the file snippet's mode: 0644 unless it says), makes the
  in-place edits of :mod:`aiaudit.core.edits`, enables/masks units, then applies the
  configuration to the running services and runs the runtime commands.
  ``ROOT=/mnt/img`` installs under an image or mounted root instead (refusing a target
  that a symlink leads out of the root; units are enabled with ``systemctl --root``; no
  command runs, they act on the running system).  ``NO_COMMANDS=1`` installs the files
  only (no ``systemctl``, no reload, no command).  ``BACKUP_DIR`` chooses where backups go.
  A default-deny firewall is loaded with a timed rollback (``FIREWALL_ROLLBACK`` seconds,
  default 120) unless ``sh install.sh confirm-firewall`` runs in time, and is refused when
  an established SSH session's port would be closed; sshd is validated with ``sshd -t``
  before it is reloaded, and the previous SSH files come back when it refuses them;
- ``playbook.yml``: an Ansible playbook doing the same with ``aiaudit_root`` (default
  ``/``) as the install root, runnable with ``--check --diff``;
- ``README.txt``: what the bundle fixes, what the firewall admits, and what it does not fix.

Nothing from the report reaches a program unquoted: every value in ``install.sh`` is one
``shlex.quote``-d word (runtime commands too: they are run by ``sh -c`` only on the live
host, so no text can close a block of the script), the playbook is written by
``yaml.safe_dump`` with report values tagged ``!unsafe`` (Ansible never templates them),
and comments and README lines have control characters escaped.  Values no context can
carry (NUL, a control character in a path or command) refuse their snippet, listed in the
README.

Waived failures are not fixed (the waiver is an accepted exception).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shlex
from dataclasses import field
from typing import Any

from aiaudit.core import edits
from aiaudit.core.errors import UsageError
from aiaudit.core.model import (
    DEFAULT_FILE_MODE,
    Finding,
    RunResult,
    Severity,
    Snippet,
    SnippetKind,
    Status,
    merged_mode,
)
from aiaudit.core.startup.records import record

FILE_MODE = DEFAULT_FILE_MODE
"""The mode of a file the bundle installs without a mode of its own (and of an edited file
in the playbook)."""
SCRIPT = "install.sh"
PLAYBOOK = "playbook.yml"
README = "README.txt"
FILES = "files"
NFTABLES_CONF = "/etc/nftables.conf"
ADMITS = "# admits: "
"""Prefix of the lines of a generated nftables.conf that say what it admits (the README
lists them)."""
RUNTIME_ONLY = "Fixed only by the runtime commands"
"""Heading of the README's list of failures nothing the bundle installs fixes."""
PROVISIONER = "For the provisioner"
"""Heading of the README's list of fixes only the provisioner of a stateless image can make
(the kernel command line it passes: nothing installed in the image is read for it)."""
HAND = "Not fixed by this bundle alone"
"""Heading of the README's list of failures a person must act on (exact: a rescan after
installing the bundle fails these and nothing else of persisted or config aspect)."""
ROLLBACK_DEFAULT = 120
"""Seconds before a live firewall load reverts unless confirmed."""
_UNIT = re.compile(r"^[A-Za-z0-9:_.@\\][A-Za-z0-9:_.@\\-]*"
                   r"\.(service|socket|timer|target|path|mount|swap)$")
"""A plain systemd unit name (no path, no shell metacharacters), not starting with ``-``:
``systemctl`` would read it as an option (``-.mount``, the root file system, is the one
real unit that does, and no fix enables or masks it)."""
_APPLY = re.compile(r"^(?:sshd|nftables(?: [0-9]{1,5}(?:-[0-9]{1,5})?(?:,[0-9]{1,5}"
                    r"(?:-[0-9]{1,5})?)*)?)$")
"""``apply`` targets: ``sshd``, or ``nftables`` with the TCP ports an SSH session may use."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
"""Characters a command may not contain (newline and tab are code)."""
_ESCAPE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@record(frozen=False)
class Bundle:
    """What a bundle will contain, computed from a run without touching the disk."""

    files: dict[str, str] = field(default_factory=dict)
    """Target path -> merged content."""
    modes: dict[str, int] = field(default_factory=dict)
    """Target path -> the mode its file is installed with (the permissions every snippet
    for that path allows: :func:`~aiaudit.core.model.merged_mode`)."""
    edits: list[tuple[str, str]] = field(default_factory=list)
    """In-place edits ``(path, operation)``, in scan order, without repeats."""
    enable: list[str] = field(default_factory=list)
    """systemd units to enable at boot, in scan order, without repeats."""
    mask: list[str] = field(default_factory=list)
    """systemd units to mask, in scan order, without repeats."""
    apply: list[str] = field(default_factory=list)
    """Running services to hand the new configuration (``sshd``, ``nftables PORTS``)."""
    commands: list[str] = field(default_factory=list)
    """Runtime commands, in scan order, without repeats."""
    fixed: list[Finding] = field(default_factory=list)
    """Failures the bundle addresses with files, edits, units or commands."""
    partial: list[Finding] = field(default_factory=list)
    """Failures the bundle addresses only in part: their remediation names a manual step."""
    runtime_only: list[Finding] = field(default_factory=list)
    """Failures only runtime commands fix (nothing the bundle installs changes them): not
    fixed under ``ROOT=`` or with ``NO_COMMANDS=1``."""
    followup: list[Finding] = field(default_factory=list)
    """Failures the bundle fixes in the configuration, with a step to make it take effect
    (regenerate the bootloader configuration, reboot)."""
    manual: list[Finding] = field(default_factory=list)
    """Failures whose remediation is advice only (nothing the bundle can do)."""
    unfixable: list[Finding] = field(default_factory=list)
    """Failures without any remediation."""
    provisioner: list[Finding] = field(default_factory=list)
    """Failures whose fix (the kernel command line of a stateless image) only the
    provisioner can make (:attr:`~aiaudit.core.model.Remediation.provisioner`): the bundle
    installs nothing for them in the image; a runtime command may still fix a running
    node now."""
    rejected: list[str] = field(default_factory=list)
    """Snippets refused (unsafe path, unit name, operation or command)."""

    def needs_hand(self) -> list[Finding]:
        """Every failure the bundle does not fix alone (partial, manual, unfixable), in
        scan order: the README's "by hand" list."""
        ids = {id(f) for f in (*self.partial, *self.manual, *self.unfixable,
                               *self.provisioner)}
        return [f for f in self._all if id(f) in ids]

    _all: list[Finding] = field(default_factory=list)


def clean(text: object) -> str:
    """``text`` on one line with control characters escaped (``\\x1b``, ``\\n``): safe in
    a comment, a README line or a terminal."""
    def esc(m: re.Match[str]) -> str:
        c = ord(m.group())
        return {10: "\\n", 13: "\\r", 9: "\\t"}.get(c) or (
            f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}")
    return _ESCAPE.sub(esc, str(text))


def safe_target(path: str | None) -> bool:
    """True for an absolute, normalised path without ``..`` or control characters (never
    escapes the tree, one word in every context)."""
    if not path or not path.startswith("/") or path.endswith("/") or _ESCAPE.search(path):
        return False
    parts = path.split("/")[1:]
    return posixpath.normpath(path) == path and all(p not in ("", ".", "..") for p in parts)


_PERSISTED, _RUNTIME = "persisted", "runtime"
"""How a snippet the bundle takes fixes its result: in the installed configuration, or
only in the running system."""


class _Collector:
    """Takes the snippets of the fixes into a :class:`Bundle`: file contents merged per
    path (a repeated line once), everything else once in scan order, unsafe values
    refused."""

    def __init__(self, b: Bundle) -> None:
        self.b = b
        self.seen_lines: dict[str, set[str]] = {}
        self.lines: dict[str, list[str]] = {}
        self.seen_files: set[tuple[str, str]] = set()
        self.handlers = {SnippetKind.FILE: self._file, SnippetKind.EDIT: self._edit,
                         SnippetKind.ENABLE: self._unit, SnippetKind.MASK: self._unit,
                         SnippetKind.APPLY: self._apply, SnippetKind.COMMAND: self._command}

    def refuse(self, f: Finding, what: str, value: object) -> None:
        self.b.rejected.append(f"{f.rule_id} [{f.result.subject}]: {what} {value!r}")

    def take(self, f: Finding, s: Snippet) -> str | None:
        """Take snippet ``s`` of ``f``'s fix: :data:`_PERSISTED` or :data:`_RUNTIME` for
        what it fixes, ``None`` when it is refused (or an empty command)."""
        if s.kind in (SnippetKind.FILE, SnippetKind.EDIT) and not safe_target(s.path):
            self.refuse(f, "unsafe target path", s.path)
            return None
        handler = self.handlers.get(s.kind)
        if handler is None:
            self.refuse(f, "unknown snippet kind", str(s.kind))
            return None
        return handler(f, s)

    def _file(self, f: Finding, s: Snippet) -> str | None:
        path = s.path or ""
        if "\0" in s.content:
            self.refuse(f, "NUL byte in the content of", path)
            return None
        if not 0 <= s.mode <= 0o777:  # no set-id, sticky or other bits from a report
            self.refuse(f, f"file mode {s.mode:#o} of", path)
            return None
        old = self.b.modes.get(path)
        self.b.modes[path] = s.mode if old is None else merged_mode(old, s.mode)
        if (path, s.content) in self.seen_files:
            return _PERSISTED  # the same file for another subject (ipv4 and ipv6)
        self.seen_files.add((path, s.content))
        seen = self.seen_lines.setdefault(path, set())
        out = self.lines.setdefault(path, [])
        for line in s.content.splitlines():
            if line.strip() and line in seen:
                continue
            seen.add(line)
            out.append(line)
        return _PERSISTED

    def _edit(self, f: Finding, s: Snippet) -> str | None:
        if not edits.valid(s.content):
            self.refuse(f, "unknown edit", s.content)
            return None
        _add(self.b.edits, (s.path, s.content))
        return _PERSISTED

    def _unit(self, f: Finding, s: Snippet) -> str | None:
        unit = s.content.strip()
        if not _UNIT.match(unit):
            self.refuse(f, "unsafe unit name", unit)
            return None
        _add(self.b.enable if s.kind == SnippetKind.ENABLE else self.b.mask, unit)
        return _PERSISTED

    def _apply(self, f: Finding, s: Snippet) -> str | None:
        if not _APPLY.match(s.content):
            self.refuse(f, "unknown apply target", s.content)
            return None
        _add(self.b.apply, s.content)
        return _RUNTIME

    def _command(self, f: Finding, s: Snippet) -> str | None:
        cmd = s.content.strip()
        if _CONTROL.search(cmd):
            self.refuse(f, "control character in command", cmd)
            return None
        if not cmd:
            return None
        _add(self.b.commands, cmd)
        return _RUNTIME


def _add(seq: list[Any], item: Any) -> None:
    if item not in seq:
        seq.append(item)


def build(run: RunResult, min_severity: Severity = Severity.INFO) -> Bundle:
    """Collect the fixes of every failing result at or above ``min_severity``."""
    b = Bundle()
    collector = _Collector(b)
    for f in run.findings:
        if f.status is not Status.FAIL or f.severity.rank < min_severity.rank:
            continue
        b._all.append(f)
        rem = f.result.remediation
        if rem is None:
            b.unfixable.append(f)
            continue
        uses = {collector.take(f, s) for s in rem.snippets}
        used = bool(uses - {None})
        if rem.provisioner:
            b.provisioner.append(f)
        (b.fixed if used else b.manual).append(f)
        if used and rem.manual:
            b.partial.append(f)
        elif used and _PERSISTED not in uses:
            b.runtime_only.append(f)
        elif used and rem.followup:
            b.followup.append(f)
    b.files = {p: "\n".join(ls) + "\n" for p, ls in collector.lines.items()}
    return b


def firewall_admits(b: Bundle) -> list[str]:
    """What the bundle's nftables.conf admits, from its ``# admits:`` lines."""
    text = b.files.get(NFTABLES_CONF, "")
    return [ln[len(ADMITS):] for ln in text.splitlines() if ln.startswith(ADMITS)]


def _header(run: RunResult) -> list[str]:
    h = run.host

    def c(value: object) -> str:
        # one short line each: a header field from the report is escaped and capped
        text = clean(value)
        return text if len(text) <= 80 else text[:77] + "..."
    return [f"Generated by aiaudit {c(run.tool_version)} from scan {c(run.run_id)}",
            f"of {c(h.hostname)} ({c(h.mode)}, root {c(h.root)}) started {c(run.started)},",
            f"ruleset {c(run.ruleset)} {c(run.ruleset_version)}.  Review before applying."]


# ------------------------------------------------------------------ install.sh
_SCRIPT_HEAD = r"""set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-}
ROOT=${ROOT%/}
NO_COMMANDS=${NO_COMMANDS:-0}
FIREWALL_ROLLBACK=${FIREWALL_ROLLBACK:-@ROLLBACK@}
CONFIRM="$HERE/firewall.confirmed"
changed=0

case "${1:-}" in
    confirm-firewall)
        : > "$CONFIRM"
        echo "firewall confirmed: the pending rollback will not run"
        exit 0 ;;
    rollback-firewall)
        # $2 saved running ruleset, $3 backup directory of the run that loaded it
        sleep "$FIREWALL_ROLLBACK"
        [ -e "$CONFIRM" ] && exit 0
        nft -f "$2"
        # the file as it was before the run that installed it (untouched if it did not)
        if grep -qx "saved /etc/nftables.conf" "$3/.changed" 2>/dev/null; then
            cp -p "$3/etc/nftables.conf" /etc/nftables.conf
        elif grep -qx "new /etc/nftables.conf" "$3/.changed" 2>/dev/null; then
            rm -f /etc/nftables.conf
        fi
        if grep -qx nftables.service "$3/.enabled" 2>/dev/null; then
            systemctl disable nftables.service
        fi
        echo "aiaudit: firewall not confirmed in ${FIREWALL_ROLLBACK}s: rolled back" >&2
        exit 0 ;;
    "") ;;
    *) echo "usage: sh install.sh [confirm-firewall]" >&2; exit 2 ;;
esac
BACKUP_DIR=${BACKUP_DIR:-"$HERE/backup-$(date -u +%Y%m%dT%H%M%SZ)"}
live=1
if [ -n "$ROOT" ] || [ "$NO_COMMANDS" = 1 ]; then
    live=0
fi

# target PATH: where PATH of the host lands (under ROOT, refusing a symlink out of it)
target() {
    dst="$ROOT$1"
    if [ -n "$ROOT" ]; then
        # an absolute symlink inside an image points at the running system
        real=$(readlink -m -- "$dst")
        case "$real" in
            "$(readlink -m -- "$ROOT")"/*) ;;
            *) echo "refusing $dst: it resolves to $real, outside ROOT" >&2
               exit 1 ;;
        esac
    fi
}

# backup PATH: save the file at $dst once per run (the first, original version)
backup() {
    if [ -e "$BACKUP_DIR$1" ] || [ -L "$BACKUP_DIR$1" ]; then
        return 0
    fi
    mkdir -p "$BACKUP_DIR$(dirname "$1")"
    if [ -e "$dst" ] || [ -L "$dst" ]; then
        cp -P -p "$dst" "$BACKUP_DIR$1"
        echo "backed up: $dst -> $BACKUP_DIR$1"
        printf 'saved %s\n' "$1" >> "$BACKUP_DIR/.changed"
    else
        printf 'new %s\n' "$1" >> "$BACKUP_DIR/.changed"
    fi
}

# restore PREFIX: put back every file of this run under PREFIX (live only)
restore() {
    [ -e "$BACKUP_DIR/.changed" ] || return 0
    while read -r how path; do
        case "$path" in
            "$1"*) ;;
            *) continue ;;
        esac
        if [ "$how" = saved ]; then
            rm -f "$path"
            cp -P -p "$BACKUP_DIR$path" "$path"
        else
            rm -f "$path"
        fi
        echo "restored: $path"
    done < "$BACKUP_DIR/.changed"
}

# same_mode FILE MODE: FILE has the permission bits MODE (octal, as `stat -c %a` prints
# them once the leading zeros are gone)
same_mode() {
    want=$2
    while [ "${want#0}" != "$want" ] && [ -n "${want#0}" ]; do
        want=${want#0}
    done
    [ "$(stat -c %a -- "$1")" = "$want" ]
}

# install_file PATH MODE: files/PATH at PATH with MODE (unchanged when content and mode are)
install_file() {
    src="$HERE/files$1"
    target "$1"
    if [ -f "$dst" ] && [ ! -L "$dst" ] && cmp -s "$src" "$dst" && same_mode "$dst" "$2"; then
        echo "unchanged: $dst"
        return 0
    fi
    backup "$1"
    rm -f "$dst"
    install -D -m "$2" "$src" "$dst"
    echo "installed: $dst"
    changed=$((changed + 1))
}

# edit_file PATH OPERATION LINE: an in-place edit (aiaudit.core.edits), with a backup
edit_file() {
    target "$1"
    old=$dst
    if [ ! -f "$dst" ]; then
        if [ "$2" = comment-swap ]; then
            echo "unchanged: $dst (absent)"
            return 0
        fi
        old=/dev/null
    fi
    tmp=$(mktemp)
    case "$2" in
        comment-swap) awk '@AWK_SWAP@' "$old" > "$tmp" ;;
        set-mount) AIAUDIT_LINE=$3 awk '@AWK_MOUNT@' "$old" > "$tmp" ;;
        set-directive) AIAUDIT_LINE=$3 awk '@AWK_SET@' "$old" > "$tmp" ;;
    esac
    if [ -f "$dst" ] && cmp -s "$tmp" "$dst"; then
        rm -f "$tmp"
        echo "unchanged: $dst"
        return 0
    fi
    backup "$1"
    mkdir -p "$(dirname "$dst")"
    # write through (keeps owner, mode and hard links of the edited file)
    cat "$tmp" > "$dst"
    rm -f "$tmp"
    echo "edited: $dst ($2)"
    changed=$((changed + 1))
}

# unit enable|mask UNIT: offline under ROOT, skipped with NO_COMMANDS
unit() {
    if [ -n "$ROOT" ]; then
        echo "+ systemctl --root=$ROOT $1 $2"
        systemctl --root="$ROOT" "$1" -- "$2"
    elif [ "$NO_COMMANDS" = 1 ]; then
        echo "skipped (NO_COMMANDS): systemctl $1 $2"
    else
        if [ "$1" = enable ] && ! systemctl is-enabled --quiet -- "$2" 2>/dev/null; then
            mkdir -p "$BACKUP_DIR"
            printf '%s\n' "$2" >> "$BACKUP_DIR/.enabled"
        fi
        echo "+ systemctl $1 $2"
        systemctl "$1" -- "$2"
    fi
}

# apply_sshd: validate the installed files with sshd -t, then reload a running sshd
apply_sshd() {
    sshd_bin=$(command -v sshd || echo /usr/sbin/sshd)
    if [ ! -x "$sshd_bin" ]; then
        echo "sshd is not installed: the ssh configuration was not validated or reloaded"
        return 0
    fi
    if ! "$sshd_bin" -t -f /etc/ssh/sshd_config; then
        echo "sshd -t refuses the new configuration: restoring the previous ssh files" >&2
        restore /etc/ssh/
        exit 1
    fi
    for u in ssh.service sshd.service; do
        if systemctl is-active --quiet "$u" 2>/dev/null; then
            systemctl reload "$u"
            echo "reloaded $u"
            return 0
        fi
    done
    echo "sshd is not running: the new configuration applies when it starts"
}

# port_in PORT LIST: PORT is in the comma-separated ports/ranges LIST
port_in() {
    rest=$2
    while [ -n "$rest" ]; do
        r=${rest%%,*}
        case "$rest" in
            *,*) rest=${rest#*,} ;;
            *) rest= ;;
        esac
        lo=${r%-*}
        hi=${r#*-}
        if [ "$1" -ge "$lo" ] && [ "$1" -le "$hi" ]; then
            return 0
        fi
    done
    return 1
}

# apply_nftables PORTS: load /etc/nftables.conf now with a timed rollback, refusing when
# an established SSH session's port is not among PORTS (the TCP ports it admits)
apply_nftables() {
    if ! command -v nft >/dev/null 2>&1; then
        echo "nft is not installed: the firewall is not loaded now"
        return 0
    fi
    nft -c -f /etc/nftables.conf
    sessions=$(ss -Htnp state established 2>/dev/null |
        awk '/"sshd/ { n = split($3, a, ":"); print a[n] }') || sessions=
    if [ -n "${SSH_CONNECTION:-}" ]; then
        sessions="$sessions ${SSH_CONNECTION##* }"
    fi
    for p in $sessions; do
        if ! port_in "$p" "$1"; then
            echo "refusing to load the firewall: an established SSH session uses port $p," >&2
            echo "which it does not admit (admitted TCP ports: ${1:-none})" >&2
            exit 1
        fi
    done
    mkdir -p "$BACKUP_DIR"
    saved="$BACKUP_DIR/nftables.running"
    { echo "flush ruleset"; nft list ruleset; } > "$saved"
    rm -f "$CONFIRM"
    nft -f /etc/nftables.conf
    if [ "$FIREWALL_ROLLBACK" = 0 ]; then
        echo "firewall loaded (FIREWALL_ROLLBACK=0: no rollback)"
        return 0
    fi
    nohup sh "$HERE/install.sh" rollback-firewall "$saved" "$BACKUP_DIR" \
        > "$BACKUP_DIR/rollback.log" 2>&1 &
    echo "firewall loaded.  It reverts in ${FIREWALL_ROLLBACK}s unless you confirm from a"
    echo "NEW ssh session:  sh $HERE/install.sh confirm-firewall"
}

run_command() {
    echo "+ $1"
    sh -c "$1"
}
"""


def install_script(run: RunResult, b: Bundle) -> str:
    """The ``install.sh`` text.  Every value from the report is one quoted word."""
    q = shlex.quote
    head = (_SCRIPT_HEAD.replace("@ROLLBACK@", str(ROLLBACK_DEFAULT))
            .replace("@AWK_SWAP@", edits.AWK_COMMENT_SWAP)
            .replace("@AWK_MOUNT@", edits.AWK_SET_MOUNT)
            .replace("@AWK_SET@", edits.AWK_SET_DIRECTIVE))
    out = ["#!/bin/sh", *("# " + ln for ln in _header(run)), "#",
           "# Usage: sh install.sh            install into / and apply to the running system",
           "#        ROOT=/mnt/image sh install.sh   install under a mounted root (units",
           "#                                   enabled offline, no command runs)",
           "#        NO_COMMANDS=1 sh install.sh     install the files only (no systemctl,",
           "#                                   no reload, no command)",
           "#        sh install.sh confirm-firewall  keep a firewall loaded by this script",
           "# Replaced and edited files are saved under $BACKUP_DIR (default: a timestamped",
           "# directory next to this script).  Running it twice changes nothing the second",
           f"# time.  FIREWALL_ROLLBACK (default {ROLLBACK_DEFAULT}) seconds after a live",
           "# firewall load it reverts unless confirmed.",
           *head.splitlines()]
    out.append("")
    for p in sorted(b.files):
        out += [*_literal(p), f"install_file {q(p)} {_mode(b, p)}"]
    for path, op in b.edits:
        name, _kw, line = edits.split(op)
        out += [*_literal(path + line), f"edit_file {q(path)} {q(name)} {q(line)}"]
    out += ['echo "$changed file(s) installed or edited"', ""]
    for action, units in (("enable", b.enable), ("mask", b.mask)):
        out += [f"unit {action} {q(u)}" for u in units]
    applies = [a for a in b.apply if a == "sshd"]
    firewall = [a for a in b.apply if a.startswith("nftables")]
    out += ['if [ "$live" = 1 ]; then']
    if not (applies or firewall or b.commands):
        out += ['    echo "nothing to apply to the running system"']
    else:
        out += ["    apply_sshd" for _ in applies]
        for cmd in b.commands:
            out += [*("    " + d for d in _literal(cmd)), f"    run_command {q(cmd)}"]
        for a in firewall[:1]:
            ports = a.partition(" ")[2]
            out += [f"    apply_nftables {q(ports)}"]
    out += ["else", '    echo "not applied to the running system (ROOT or NO_COMMANDS set)"',
            "fi"]
    if b.provisioner:
        out += [f'echo "{len(b.provisioner)} fix(es) are for the provisioner (the kernel '
                f'command line of a stateless image): see README.txt"']
    return "\n".join(out) + "\n"


def _mode(b: Bundle, path: str) -> str:
    """The mode the bundle installs ``path`` with, in octal (``0644``)."""
    return f"{b.modes.get(path, FILE_MODE):04o}"


def _literal(text: str) -> list[str]:
    """A shellcheck directive for a single-quoted word that contains ``$`` or a backtick
    (SC2016) or a backslash before a quote (SC1003) on purpose: the text is literal."""
    codes = [c for c, hit in (("SC2016", "$" in text or "`" in text),
                              ("SC1003", "\\" in text)) if hit]
    return [f"# shellcheck disable={','.join(codes)}"] if codes else []


# ------------------------------------------------------------------ playbook.yml
class _Unsafe(str):
    """A report value: emitted with Ansible's ``!unsafe`` tag so it is never templated."""


def _dumper() -> type:
    import yaml

    class Dumper(yaml.SafeDumper):
        """``yaml.SafeDumper`` that writes :class:`_Unsafe` strings as ``!unsafe`` and
        indents block sequences inside mappings (yamllint's default)."""

        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            return super().increase_indent(flow, False)

    def rep(d: yaml.SafeDumper, value: _Unsafe) -> yaml.Node:
        return d.represent_scalar("!unsafe", str(value),
                                  style='"' if _ESCAPE.search(value) else None)

    Dumper.add_representer(_Unsafe, rep)
    return Dumper


def playbook_loader() -> type:
    """A ``yaml.SafeLoader`` that reads ``!unsafe`` scalars as plain strings (to check a
    generated playbook the way Ansible parses it)."""
    import yaml

    class Loader(yaml.SafeLoader):
        """``yaml.SafeLoader`` plus Ansible's ``!unsafe`` tag."""

    def unsafe(loader: yaml.SafeLoader, node: yaml.Node) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise yaml.constructor.ConstructorError(
                None, None, "!unsafe tags a scalar", node.start_mark)
        return str(loader.construct_scalar(node))

    Loader.add_constructor("!unsafe", unsafe)
    return Loader


def _name(text: str) -> str:
    """A task or play name: Ansible templates names, so a report value loses its Jinja
    delimiters (braces become parentheses) and its control characters."""
    return clean(text).replace("{", "(").replace("}", ")")[:120]


def _path_vars(path: str) -> dict[str, Any]:
    return {"aiaudit_path": _Unsafe(path)}


_DEST_EXPR = "(aiaudit_root | regex_replace('/$', '')) ~ aiaudit_path"
_DEST = "{{ " + _DEST_EXPR + " }}"
"""Where a host path lands: under ``aiaudit_root`` (a report path is never templated: it
is an ``!unsafe`` variable)."""
_AWK = {edits.COMMENT_SWAP: edits.AWK_COMMENT_SWAP, edits.SET_MOUNT: edits.AWK_SET_MOUNT,
        edits.SET_DIRECTIVE: edits.AWK_SET_DIRECTIVE}
_EDIT_SH = ('if [ -f "$1" ]; then awk "$2" "$1"; elif [ "$3" = comment-swap ]; then '
            'printf __aiaudit_absent__; else awk "$2" /dev/null; fi; printf END')
"""Fixed script: ``$1`` the file, ``$2`` the awk program, ``$3`` the operation (an absent
fstab has no swap line to comment out).  ``END`` keeps the final newline (the command
module strips trailing newlines from stdout)."""
_OFFLINE = "aiaudit_root != '/'"
_ONLINE = "aiaudit_root == '/'"


def playbook(run: RunResult, b: Bundle) -> str:
    """The Ansible ``playbook.yml`` text (``ansible-lint`` production profile clean)."""
    import yaml

    tasks = [*_file_tasks(b), *_edit_tasks(b), *_unit_tasks(b), *_runtime_tasks(b)]
    firewall = [t for t in b.apply if t.startswith("nftables")]
    if firewall:
        tasks += _firewall_tasks(firewall[0].partition(" ")[2])
    play = [{"name": _name(f"Aiaudit fixes for {run.host.hostname} ({run.ruleset})"),
             "hosts": "all", "become": True, "gather_facts": False,
             "vars": {"aiaudit_root": "/", "aiaudit_firewall_rollback": ROLLBACK_DEFAULT},
             "tasks": tasks}]
    head = "".join(f"# {ln}\n" for ln in _header(run))
    head += "# Install under an image with -e aiaudit_root=/mnt/image (units enabled\n" \
            "# offline, nothing applied to a running service).\n"
    return "---\n" + head + yaml.dump(play, Dumper=_dumper(), sort_keys=False, width=100,
                                      allow_unicode=False)


def _file_tasks(b: Bundle) -> list[dict[str, Any]]:
    """Install each file (its directory first) under ``aiaudit_root``, with its mode."""
    tasks: list[dict[str, Any]] = []
    for p in sorted(b.files):
        tasks.append({"name": _name(f"Create the directory of {p}"), "vars": _path_vars(p),
                      "ansible.builtin.file": {"path": "{{ (" + _DEST_EXPR + ") | dirname }}",
                                               "state": "directory", "mode": "0755"}})
        tasks.append({"name": _name(f"Install {p}"), "vars": _path_vars(p),
                      "ansible.builtin.copy": {
                          "src": "{{ playbook_dir }}/" + FILES + "{{ aiaudit_path }}",
                          "dest": _DEST, "owner": "root", "group": "root",
                          "mode": _mode(b, p), "backup": True}})
    return tasks


def _edit_tasks(b: Bundle) -> list[dict[str, Any]]:
    """The in-place edits: the same awk program as install.sh (read-only, so it also runs
    in check mode), then the result written with copy (backup, diff, check mode)."""
    tasks: list[dict[str, Any]] = []
    for i, (path, op) in enumerate(b.edits):
        name, _kw, line = edits.split(op)
        reg = f"aiaudit_edit_{i}"
        tasks.append({"name": _name(f"Compute {path} after {op}"), "vars": _path_vars(path),
                      "ansible.builtin.command": {"argv": [
                          "/bin/sh", "-c", _EDIT_SH, "sh", _DEST, _Unsafe(_AWK[name]), name]},
                      "environment": {"AIAUDIT_LINE": _Unsafe(line)},
                      "register": reg, "changed_when": False, "check_mode": False})
        tasks.append({"name": _name(f"Edit {path}: {op}"), "vars": _path_vars(path),
                      "when": f"{reg}.stdout != '__aiaudit_absent__END'",
                      "ansible.builtin.copy": {
                          "content": "{{ " + reg + ".stdout[:-3] }}",
                          "dest": _DEST, "mode": f"{FILE_MODE:04o}", "backup": True}})
    return tasks


def _unit_tasks(b: Bundle) -> list[dict[str, Any]]:
    """Enable or mask each unit: on the running system, or offline in the image."""
    tasks: list[dict[str, Any]] = []
    for action, units in (("enable", b.enable), ("mask", b.mask)):
        state = {"enabled": True} if action == "enable" else {"masked": True}
        for unit in units:
            tasks.append({"name": _name(f"{action.capitalize()} {unit}"),
                          "when": _ONLINE, "ansible.builtin.systemd_service": {
                              "name": _Unsafe(unit), **state}})
            tasks.append({"name": _name(f"{action.capitalize()} {unit} in the image"),
                          "when": _OFFLINE, "ansible.builtin.command": {
                              "argv": ["systemctl", "--root={{ aiaudit_root }}", action,
                                       "--", _Unsafe(unit)]},
                          "register": "aiaudit_unit",
                          "changed_when": "'Created symlink' in aiaudit_unit.stderr"})
    return tasks


def _runtime_tasks(b: Bundle) -> list[dict[str, Any]]:
    """On the running system only: validate and reload sshd, run the commands."""
    tasks: list[dict[str, Any]] = []
    if "sshd" in b.apply:
        tasks.append({"name": "Validate the sshd configuration", "when": _ONLINE,
                      "ansible.builtin.command": {"argv": [
                          "/usr/sbin/sshd", "-t", "-f", "/etc/ssh/sshd_config"]},
                      "changed_when": False})
        # try-reload-or-restart acts only on a running unit: a stopped sshd stays stopped
        tasks.append({"name": "Reload sshd if it runs", "when": _ONLINE,
                      "ansible.builtin.command": {"argv": [
                          "systemctl", "try-reload-or-restart", "ssh.service"]},
                      "changed_when": True})
    for cmd in b.commands:
        tasks.append({"name": _name(f"Apply now: {cmd}"), "when": _ONLINE,
                      "ansible.builtin.command": {"argv": ["/bin/sh", "-c", _Unsafe(cmd)]},
                      "changed_when": True})
    return tasks


FIREWALL_SAVED = "/var/lib/aiaudit/nftables.running"
"""Where the playbook keeps the ruleset that ran before it loaded the new one."""
ROLLBACK_UNIT = "aiaudit-firewall-rollback"
"""The transient systemd timer (``systemd-run --on-active``) that restores it."""


def _port_ranges(ports: str) -> list[list[int]]:
    """``22,6817-6818`` -> ``[[22, 22], [6817, 6818]]`` (an ``apply nftables`` target)."""
    out = []
    for part in filter(None, ports.split(",")):
        lo, _, hi = part.partition("-")
        out.append([int(lo), int(hi or lo)])
    return out


def _firewall_tasks(ports: str) -> list[dict[str, Any]]:
    """Load the default-deny firewall on a running host the way install.sh does: refuse
    when the port Ansible itself connects on is not admitted, save the running ruleset,
    arm a timed rollback (a transient systemd timer), load, then prove that a NEW
    connection gets through (``wait_for_connection`` after ``reset_connection``) before
    disarming the rollback.  A host the new rules cut off restores its old ruleset by
    itself after ``aiaudit_firewall_rollback`` seconds; its play fails instead."""
    admitted = ("aiaudit_tcp_admitted | selectattr('0', 'le', aiaudit_ssh_port) "
                "| selectattr('1', 'ge', aiaudit_ssh_port) | list | length > 0")
    timer = f"{ROLLBACK_UNIT}.timer"
    return [
        {"name": "Check /etc/nftables.conf", "when": _ONLINE,
         "ansible.builtin.command": {"argv": ["nft", "-c", "-f", "/etc/nftables.conf"]},
         "changed_when": False},
        {"name": "Refuse a firewall that drops this Ansible connection", "when": _ONLINE,
         "vars": {"aiaudit_tcp_admitted": _port_ranges(ports),
                  "aiaudit_ssh_port": "{{ ansible_port | default(22) | int }}"},
         "ansible.builtin.assert": {
             "that": [admitted],
             "fail_msg": "the new firewall does not admit TCP port {{ aiaudit_ssh_port }}, "
                         "which this play connects on: not loaded"}},
        {"name": "Read the running ruleset", "when": _ONLINE,
         "ansible.builtin.command": {"argv": ["nft", "list", "ruleset"]},
         "register": "aiaudit_running_ruleset", "changed_when": False, "check_mode": False},
        {"name": "Keep the running ruleset for the rollback", "when": _ONLINE,
         "ansible.builtin.copy": {
             "content": "flush ruleset\n{{ aiaudit_running_ruleset.stdout }}\n",
             "dest": FIREWALL_SAVED, "mode": "0600"}},
        {"name": "Arm the firewall rollback", "when": _ONLINE,
         "ansible.builtin.command": {"argv": [
             "systemd-run", f"--unit={ROLLBACK_UNIT}",
             "--on-active={{ aiaudit_firewall_rollback }}s",
             "/usr/sbin/nft", "-f", FIREWALL_SAVED]},
         "changed_when": True},
        {"name": "Load /etc/nftables.conf", "when": _ONLINE,
         "ansible.builtin.command": {"argv": ["nft", "-f", "/etc/nftables.conf"]},
         "changed_when": True},
        {"name": "Drop the open connection", "ansible.builtin.meta": "reset_connection"},
        {"name": "Reconnect through the new firewall", "when": _ONLINE,
         "ansible.builtin.wait_for_connection": {"timeout": 30}},
        {"name": "Disarm the firewall rollback", "when": _ONLINE,
         "ansible.builtin.systemd_service": {"name": timer, "state": "stopped"}},
    ]


# ------------------------------------------------------------------ README.txt
def _line(f: Finding, text: str) -> str:
    return f"  {clean(f.rule_id)} [{f.severity.value}] {clean(f.result.subject)}: {clean(text)}"


def readme(run: RunResult, b: Bundle) -> str:
    """The ``README.txt`` text: what the bundle fixes, and what it leaves to a person."""
    out = [*_header(run), ""]
    out += [f"This bundle addresses {len(b.fixed)} failing result(s):", ""]
    for f in b.fixed:
        out.append(_line(f, f.result.remediation.summary if f.result.remediation else ""))
    out += _installed(b)
    if NFTABLES_CONF in b.files:
        out += ["", f"The firewall ({NFTABLES_CONF}) admits new inbound connections only "
                "from/to:"]
        out += [f"  {clean(a)}" for a in firewall_admits(b)] or ["  (nothing declared)"]
        out += ["Everything else is dropped.  Loaded live with a timed rollback: confirm "
                "with `sh install.sh confirm-firewall`", f"within FIREWALL_ROLLBACK "
                f"(default {ROLLBACK_DEFAULT}) seconds, from a new SSH session."]
    out += ["", "Applied to the running system (unless ROOT or NO_COMMANDS is set):"]
    out += [f"  apply {clean(a)}" for a in b.apply]
    out += [f"  {clean(c)}" for c in b.commands]
    if not b.apply and not b.commands:
        out += ["  (none)"]
    out += _not_fixed(b)
    if b.rejected:
        out += ["", "Refused snippets:"] + [f"  {clean(r)}" for r in b.rejected]
    out += ["", "Apply with:  sh install.sh   (or: ansible-playbook -i HOST, playbook.yml)",
            "Then rescan: aiaudit scan"]
    return "\n".join(out) + "\n"


def _installed(b: Bundle) -> list[str]:
    """The README's lists of files installed (with a mode that is not the default) and
    edited, and of units enabled or masked."""
    out = ["", "Files (under files/, installed at the same path):"]
    out += [f"  {clean(p)}" + ("" if b.modes.get(p, FILE_MODE) == FILE_MODE else
                               f" (mode {_mode(b, p)})") for p in sorted(b.files)] \
        or ["  (none)"]
    out += ["", "Files edited in place (backed up first):"]
    out += [f"  {clean(p)}: {clean(op)}" for p, op in b.edits] or ["  (none)"]
    out += ["", "Units enabled at boot (also under ROOT, with systemctl --root):"]
    out += [f"  {u}" for u in b.enable] or ["  (none)"]
    if b.mask:
        out += ["", "Units masked (also under ROOT):"] + [f"  {u}" for u in b.mask]
    return out


def _not_fixed(b: Bundle) -> list[str]:
    """The README's lists of what a rescan still fails: what a person must do, what only
    the runtime commands fix, and what needs a step to take effect."""
    hand = b.needs_hand()
    out = ["", f"{HAND} ({len(hand)}; a rescan still fails them until a person acts):"]
    for f in hand:
        rem = f.result.remediation
        text = (rem.manual if f in b.partial else rem.summary) if rem else \
            f"no proposed fix (see `aiaudit explain {f.rule_id}`): {f.result.message}"
        if f in b.provisioner:
            text = f"for the provisioner (below): {text}"
        out.append(_line(f, text))
    if not hand:
        out += ["  (none)"]
    out += _for_provisioner(b)
    out += ["", f"{RUNTIME_ONLY} ({len(b.runtime_only)}; not under ROOT= or NO_COMMANDS=1):"]
    out += [_line(f, f.result.remediation.summary) for f in b.runtime_only
            if f.result.remediation] or ["  (none)"]
    if b.followup:
        out += ["", "Fixed in the configuration; to take effect, also:"]
        out += [_line(f, f.result.remediation.followup) for f in b.followup
                if f.result.remediation]
    return out


def _for_provisioner(b: Bundle) -> list[str]:
    """The README's list of the fixes only the provisioner of a stateless image can make,
    with its commands (:attr:`~aiaudit.core.model.Remediation.provisioner`)."""
    if not b.provisioner:
        return []
    out = ["", f"{PROVISIONER} ({len(b.provisioner)}; the kernel command line comes from "
           "the provisioner that boots the image (the scan checked the one given with "
           "--kernel-cmdline, or a running node's): nothing installed in the image changes "
           "it):"]
    out += [_line(f, f.result.remediation.provisioner) for f in b.provisioner
            if f.result.remediation]
    out += ["  Then rescan with the command line the provisioner now passes: aiaudit scan "
            "--kernel-cmdline '...'"]
    return out


def manual_list(text: str, *, offline: bool = True) -> list[tuple[str, str]]:
    """``(rule id, subject)`` of each entry of a README's :data:`HAND` list, and with
    ``offline`` (an install under ``ROOT=`` or with ``NO_COMMANDS=1``) of its
    :data:`RUNTIME_ONLY` list too: what a rescan after that install still fails."""
    out: list[tuple[str, str]] = []
    lines = text.splitlines()
    for heading in (HAND, RUNTIME_ONLY) if offline else (HAND,):
        start = next((i for i, ln in enumerate(lines) if ln.startswith(heading)), None)
        if start is None:
            continue
        for ln in lines[start + 1:]:
            if not ln.startswith("  ") or ln == "  (none)":
                break
            m = re.match(r"  (\S+) \[\w+\] (.*?): ", ln)
            if m:
                out.append((m.group(1), m.group(2)))
    return out


BUNDLE_ENTRIES = (FILES, PLAYBOOK, README, SCRIPT)
"""What a bundle consists of at the top of its directory (``install.sh`` last: a reader
who sees the script sees the rest)."""


def write(run: RunResult, out_dir: str, *, min_severity: Severity = Severity.INFO,
          force: bool = False) -> Bundle:
    """Write the bundle for ``run`` into ``out_dir`` (created; must be empty unless
    ``force``).  Returns what was written.

    Everything is written into a new private directory first (``mkdtemp``: nothing
    planted can be in it; next to a new ``out_dir``, inside an existing one, so that only
    ``out_dir`` itself need be writable), then moved in with ``rename``: a new
    ``out_dir`` as a whole, into an existing one entry by entry (``files/``,
    ``playbook.yml``, ``README.txt``, ``install.sh``; what was there under those names is
    moved aside and removed, never written through, so a ``files/etc`` symlink planted in
    a bundle directory cannot lead a write outside it; other entries, such as the backups
    an earlier ``install.sh`` made, stay).  A write that fails (a full disk) leaves
    ``out_dir`` as it was and removes the temporary directory.  Raises
    :class:`UsageError`."""
    b = build(run, min_severity)
    exists = os.path.lexists(out_dir)
    if exists:
        if not os.path.isdir(out_dir):
            raise UsageError(f"--output-dir {out_dir}: exists and is not a directory")
        if os.listdir(out_dir) and not force:
            raise UsageError(f"--output-dir {out_dir}: not empty (use --force to overwrite)")
    target = os.path.realpath(out_dir)  # a link the user names is followed, once, here
    try:
        tmp = _staging_dir(target, inside=exists)
    except OSError as exc:
        where = "in it" if exists else "next to it"
        raise UsageError(f"--output-dir {out_dir}: cannot create a directory {where}: "
                         f"{exc.strerror} ({exc.filename})") from None
    try:
        _write_tree(run, b, tmp)
        if exists:
            _move_entries(tmp, target)
        else:
            os.rename(tmp, target)
    except OSError as exc:
        raise UsageError(f"--output-dir {out_dir}: cannot write: "
                         f"{exc.strerror} ({exc.filename}); nothing was changed") from None
    finally:
        if os.path.lexists(tmp):
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return b


def _staging_dir(target: str, *, inside: bool) -> str:
    """A new, empty directory next to ``target``, or ``inside`` it (the same filesystem
    either way: ``rename`` moves what it holds), with the mode a new directory gets
    (``0777`` less the umask)."""
    import tempfile

    parent, name = (target, "bundle") if inside else os.path.split(target)
    os.makedirs(parent or ".", exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{name}.", suffix=".aiaudit-tmp", dir=parent or ".")
    umask = os.umask(0o022)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    return tmp


def _write_tree(run: RunResult, b: Bundle, top: str) -> None:
    """Every file of the bundle under ``top`` (a new directory only aiaudit writes to)."""
    for p, content in b.files.items():
        dest = os.path.join(top, FILES, p.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        # the target's permissions for group and others (a private file stays private in
        # the bundle too); its owner can always read the copy
        _write(dest, content, b.modes.get(p, FILE_MODE) | 0o600)
    _write(os.path.join(top, PLAYBOOK), playbook(run, b), 0o644)
    _write(os.path.join(top, README), readme(run, b), 0o644)
    _write(os.path.join(top, SCRIPT), install_script(run, b), 0o755)


def _move_entries(staged: str, target: str) -> None:
    """Move the bundle's entries from ``staged`` into the existing directory ``target``:
    whatever ``target`` holds under an entry's name (a file, a directory, a symlink) is
    renamed into ``staged`` first (and removed with it afterwards), then the new entry, if
    the bundle has one, is renamed in.  On a failure what was moved is put back."""
    aside = os.path.join(staged, ".previous")
    os.mkdir(aside)
    moved: list[str] = []
    placed: list[str] = []
    try:
        for name in BUNDLE_ENTRIES:
            dest = os.path.join(target, name)
            if os.path.lexists(dest):
                os.rename(dest, os.path.join(aside, name))
                moved.append(name)
            if os.path.lexists(os.path.join(staged, name)):
                os.rename(os.path.join(staged, name), dest)
                placed.append(name)
    except OSError:
        lost = False
        for name in reversed(placed):
            with contextlib.suppress(OSError):
                os.rename(os.path.join(target, name), os.path.join(staged, name))
        for name in reversed(moved):
            try:
                os.rename(os.path.join(aside, name), os.path.join(target, name))
            except OSError:
                lost = True
        if lost:  # keep what could not be put back, and say where
            # (inside target, as staged is: the one directory known to be writable)
            kept = os.path.join(target, f".previous-{os.urandom(3).hex()}")
            os.rename(aside, kept)
            raise UsageError(f"--output-dir {target}: the bundle could not be moved in, "
                             f"nor the previous one put back: it is kept in {kept}") from None
        raise


def _write(path: str, text: str, mode: int) -> None:
    """A new file (``O_EXCL``: nothing there is followed) with ``text`` and ``mode``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as fh:
        fh.write(text)
        os.fchmod(fh.fileno(), mode)
