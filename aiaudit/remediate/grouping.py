"""Fix-first grouping: failures grouped by the fix that addresses them (text and HTML reports,
``aiaudit explain``, the fleet view)."""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any, NamedTuple

from aiaudit.core.model import (
    DEFAULT_FILE_MODE,
    Finding,
    RunResult,
    Severity,
    SnippetKind,
    Status,
    merged_mode,
    sorted_findings,
)
from aiaudit.core.startup.records import record


@record(frozen=False)
class FixGroup:
    """Failures that one fix addresses, for the "fix first" part of human reports.

    Results whose remediation is identical (summary, snippets, manual step) are one group;
    groups whose drop-ins share a target path, or that run the same command, are one group
    too, because that is one action (``aiaudit remediate`` writes such a file once).
    """

    severity: Severity = Severity.INFO
    """The highest severity among :attr:`findings`."""
    summary: str = ""
    """One sentence saying what the fix does."""
    also: list[str] = field(default_factory=list)
    """Further summaries of fixes merged into this one (at most one)."""
    steps: list[str] = field(default_factory=list)
    """Further changes a person makes, when many fixes merged into this one."""
    findings: list[Finding] = field(default_factory=list)
    """The failures it fixes, worst fix first."""
    files: dict[str, list[str]] = field(default_factory=dict)
    """Target path -> lines of the drop-in."""
    commands: list[str] = field(default_factory=list)
    """Commands to run now, in order, without repeats."""
    enable: list[str] = field(default_factory=list)
    """systemd units to enable at boot."""
    manual: list[str] = field(default_factory=list)
    """Steps a person must take that no snippet does."""
    modes: dict[str, int] = field(default_factory=dict)
    """Target path -> the mode its file is installed with (see :attr:`files`)."""

    @property
    def rule_ids(self) -> list[str]:
        """The rules it fixes, in first-seen order."""
        return list(dict.fromkeys(f.rule_id for f in self.findings))

    def subjects(self, rule_id: str) -> list[str]:
        """The subjects of ``rule_id`` that it fixes."""
        return [f.result.subject for f in self.findings if f.rule_id == rule_id]


class _Step(NamedTuple):
    """One snippet of a fix as grouping compares it: a file (path, content, mode), a unit
    to enable, or the command a person would type."""

    kind: str
    path: str | None
    content: str
    mode: int = DEFAULT_FILE_MODE


_FixKey = tuple[Any, ...]
"""``("result", summary, manual, steps)``, ``("rule", generic fix)`` or ``("none", rule)``."""


def _steps(f: Finding) -> tuple[_Step, ...]:
    rem = f.result.remediation
    out: list[_Step] = []
    for s in rem.snippets if rem is not None else ():
        if s.kind == SnippetKind.FILE:
            out.append(_Step("file", s.path, s.content, s.mode))
        elif s.kind in (SnippetKind.ENABLE, SnippetKind.COMMAND, SnippetKind.EDIT):
            out.append(_Step(str(s.kind), s.path, s.content))
        elif s.kind == SnippetKind.APPLY:  # after every change of the fix (see _add_steps)
            out.append(_Step("apply", s.path, s.shell()))
        else:  # mask: the command a person would type
            out.append(_Step("command", s.path, s.shell()))
    return tuple(out)


def _fix_key(f: Finding, generic: dict[str, str]) -> _FixKey:
    rem = f.result.remediation
    if rem is not None:
        return ("result", rem.summary, rem.manual, _steps(f))
    if generic.get(f.rule_id):
        return ("rule", generic[f.rule_id])
    return ("none", f.rule_id)


def fix_groups(run: RunResult) -> list[FixGroup]:
    """The failing results (waived ones excluded) grouped by the fix that addresses them,
    ordered by the highest severity in the group, then by how many results it fixes."""
    generic = {r.id: r.remediation for r in run.rules}
    by_key: dict[_FixKey, list[Finding]] = {}
    for f in sorted_findings(run):
        if f.status is Status.FAIL:
            by_key.setdefault(_fix_key(f, generic), []).append(f)
    # worst and largest first, so a merged group is headed by its main fix
    keys = sorted(by_key, key=lambda k: (-max(f.severity.rank for f in by_key[k]),
                                         -len(by_key[k])))
    members: dict[int, list[_FixKey]] = {}
    for i, r in enumerate(_one_action(keys)):
        members.setdefault(r, []).append(keys[i])
    groups = [_make_group(members[r], by_key) for r in sorted(members)]
    groups.sort(key=lambda g: (-g.severity.rank, -len(g.findings)))
    return groups


def _one_action(keys: list[_FixKey]) -> list[int]:
    """For each key, the index of the first key that is the same action (union-find): fixes
    that write or edit the same file, or that end in the same command (the sshd fixes each
    edit a line and all run `sshd -t && systemctl reload ssh`)."""
    parent = list(range(len(keys)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple[str, ...], int] = {}
    for i, k in enumerate(keys):
        if k[0] != "result":
            continue
        for shared in _shared(k):
            if shared in owner:
                a, b = root(i), root(owner[shared])
                parent[max(a, b)] = min(a, b)
            else:
                owner[shared] = i
    return [root(i) for i in range(len(keys))]


def _shared(key: _FixKey) -> list[tuple[str, ...]]:
    """What makes two fixes one action: a file each writes or edits, a command each runs,
    a setting of one file each changes (``'Key=...' in /path`` in its summary)."""
    out: list[tuple[str, ...]] = [
        ("file", step.path) if step.kind in ("file", "edit") and step.path
        else (step.kind, step.content.strip()) for step in key[3]]
    out += [("setting", path, name) for name, _v, path in _SETTING.findall(key[1])]
    return out


_SETTING = re.compile(r"'([A-Za-z][A-Za-z0-9]*)=([A-Za-z0-9_]+(?:,[A-Za-z0-9_]+)*)' in "
                      r"(/[^\s,;)]*[^\s,;).])")
"""A setting a fix's summary tells a person to make: ``'Key=A,B' in /etc/x.conf``."""


def _one_setting(summaries: list[str]) -> list[str]:
    """Summaries that set one key of one file to different lists (Slurm's
    ``PropagateResourceLimitsExcept=MEMLOCK`` for memlock, ``=MEMLOCK,NOFILE`` for
    nofile) all set it to the union of the lists: one value that does what each fix
    asks, not two that undo each other."""
    merged: dict[tuple[str, str], list[str]] = {}
    for text in summaries:
        for name, value, path in _SETTING.findall(text):
            items = merged.setdefault((path, name), [])
            items += [v for v in value.split(",") if v not in items]
    out = []
    for text in summaries:
        def one(m: re.Match[str]) -> str:
            value = ",".join(sorted(merged[(m.group(3), m.group(1))]))
            return f"'{m.group(1)}={value}' in {m.group(3)}"
        out.append(_SETTING.sub(one, text))
    return out


MAX_SUMMARIES = 2
"""A group merged from more fixes than this gets one headline; the rest become steps."""


def _written(key: _FixKey) -> frozenset[tuple[str | None, str]]:
    """The (path, content) of the files a fix key writes."""
    if key[0] != "result":
        return frozenset()
    return frozenset((s.path, s.content) for s in key[3] if s.kind == "file")


def _make_group(keys: list[_FixKey], by_key: dict[_FixKey, list[Finding]]) -> FixGroup:
    g = FixGroup()
    g.findings = [f for k in keys for f in by_key[k]]
    g.severity = max((f.severity for f in g.findings), key=lambda s: s.rank)
    summaries: list[str] = []
    written: dict[str, list[str]] = {}
    later: list[str] = []  # "apply" commands: after every change the fix makes
    for k in keys:
        if k[0] == "result":
            _, summary, manual, steps = k
            summaries.append(summary)
            if manual and manual not in g.manual:
                g.manual.append(manual)
            _add_steps(g, steps, written, later)
        elif k[0] == "rule":
            summaries.append(k[1].strip())
        else:
            summaries.append(f"No fix is given: see `aiaudit explain {k[1]}`.")
    g.files = {p: _merged_lines(blocks) for p, blocks in written.items()}
    g.commands = _sysctl_load(g.files, [*_edit_commands(keys), *g.commands,
                                        *(c for c in later if c not in g.commands)])
    # a fix that writes exactly the files the first one writes (the boot and the running
    # variant of one firewall fix) is that fix: its summary would say the same again
    head_files = _written(keys[0])
    summaries = [x for k, x in zip(keys, summaries, strict=True)
                 if k is keys[0] or not head_files or _written(k) != head_files]
    _summarise(g, list(dict.fromkeys(_one_setting(summaries))))
    return g


def _edit_commands(keys: list[_FixKey]) -> list[str]:
    """The in-place edits of the fixes ``keys`` as commands a person pastes: the edit
    function (:mod:`aiaudit.remediate.paste`) once, then one call per file and operation,
    each edit once."""
    ops = list(dict.fromkeys((s.path, s.content) for k in keys if k[0] == "result"
                             for s in k[3] if s.kind == "edit" and s.path))
    if not ops:
        return []
    from aiaudit.remediate import paste

    return [paste.function([op for _p, op in ops]), *paste.calls(ops)]


_SECTION = re.compile(r"\[[^\]\n]+\]")
_BRACES = re.compile(r"[\s{}()\[\];]*")


def _merged_lines(blocks: list[str]) -> list[str]:
    """The lines of one file several fixes write: each line once (a second
    ``alice hard memlock unlimited`` adds nothing), blank lines and lines of braces alone
    kept (they shape the text); in an INI-style file (systemd units, ``[Service]``) each
    section once, the lines of every block under its own section."""
    sections: dict[str, list[str]] = {"": []}
    for block in blocks:
        current = ""
        for line in block.rstrip("\n").split("\n"):
            if _SECTION.fullmatch(line.strip()):
                current = line.strip()
                sections.setdefault(current, [])
                continue
            body = sections[current]
            if line not in body or _BRACES.fullmatch(line):
                body.append(line)
    out = list(sections.pop(""))
    for name, body in sections.items():
        if out and out[-1] != "":
            out.append("")
        out += [name, *(ln for ln in body if ln or body.index(ln) < len(body) - 1)]
    while out and out[-1] == "":
        out.pop()
    return _merged_appends(out)


_APPEND = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="\$\1 ([^"$`\\]*)"')
"""A shell variable append, as a ``/etc/default/grub.d`` drop-in writes one:
``GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT intel_idle.max_cstate=1"``."""


def _merged_appends(lines: list[str]) -> list[str]:
    """``lines`` with the appends to one variable (:data:`_APPEND`) that follow each other
    made one (``X="$X a"`` then ``X="$X b"`` is ``X="$X a b"``): one line per file and key,
    the words in order, each once."""
    out: list[str] = []
    for line in lines:
        m = _APPEND.fullmatch(line)
        prev = _APPEND.fullmatch(out[-1]) if out and m else None
        if m and prev and prev.group(1) == m.group(1):
            words = list(dict.fromkeys([*prev.group(2).split(), *m.group(2).split()]))
            out[-1] = f'{m.group(1)}="${m.group(1)} {" ".join(words)}"'
        else:
            out.append(line)
    return out


def _add_steps(g: FixGroup, steps: tuple[_Step, ...], written: dict[str, list[str]],
               later: list[str]) -> None:
    """Add a fix's steps to ``g``: file contents (each block once) into ``written``, with
    the file's mode, units to enable and commands (each once, in order; those that make
    a running service take the change into ``later``; edits are made by
    :func:`_edit_commands`)."""
    for step in steps:
        content = step.content
        if step.kind == "edit":
            continue
        if step.kind == "apply":
            if content.rstrip("\n") not in later:
                later.append(content.rstrip("\n"))
        elif step.kind == "file" and step.path:
            blocks = written.setdefault(step.path, [])
            if content not in blocks:
                blocks.append(content)
            old = g.modes.get(step.path)
            g.modes[step.path] = step.mode if old is None else merged_mode(old, step.mode)
        elif step.kind == "enable":
            if content.strip() not in g.enable:
                g.enable.append(content.strip())
        elif content.strip() and content.rstrip("\n") not in g.commands:
            g.commands.append(content.rstrip("\n"))


def _summarise(g: FixGroup, summaries: list[str]) -> None:
    """Set the group's headline (and the fixes merged into it) from their summaries."""
    if len(summaries) <= MAX_SUMMARIES:
        g.summary, g.also = summaries[0], summaries[1:]
    elif not g.files:
        # the summaries are the fix (edit this line...): one headline, the rest are steps
        shown = "its commands make them" if g.commands or g.enable else "listed with it"
        g.summary = f"{summaries[0]} (and {len(summaries) - 1} more, {shown})"
        g.steps = summaries[1:]
    else:
        # what the drop-ins say is the fix; the per-setting summaries would repeat them
        nlines = sum(len(v) for v in g.files.values())
        parts = [f"Add {nlines} line{'s' if nlines != 1 else ''} to "
                 + ", ".join(sorted(g.files))]
        if g.commands:
            n = len(g.commands)
            parts.append(f"run {n} command{'s' if n != 1 else ''} to apply "
                         + ("it" if n == 1 else "them") + " now")
        g.summary = " and ".join(parts) + "."


_SYSCTL_W = re.compile(r"sysctl -w ([A-Za-z0-9_./*-]+)='([^'\n]*)'")


_SYSCTL_LINE = re.compile(r"([A-Za-z0-9_./*-]+) = (.*)")


def _sysctl_load(files: dict[str, list[str]], commands: list[str]) -> list[str]:
    """``sysctl -w KEY='VALUE'`` for each key of a sysctl.d drop-in the same fix writes is
    ``sysctl -p FILE`` (procps: load the settings of that file), one line for a person to
    paste instead of one per key; other commands stay, in order."""
    dropins = {p: {m.group(1): m.group(2) for ln in lines if (m := _SYSCTL_LINE.fullmatch(ln))}
               for p, lines in files.items() if p.startswith("/etc/sysctl.d/")}
    out: list[str] = []
    for cmd in commands:
        m = _SYSCTL_W.fullmatch(cmd)
        path = next((p for p, kv in dropins.items()
                     if m is not None and kv.get(m.group(1)) == m.group(2)), None)
        if path is None:
            out.append(cmd)
        elif f"sysctl -p {path}" not in out:
            out.append(f"sysctl -p {path}")
    return out


DIAGNOSIS = "# diagnosis:"
"""The comment that ends a command which only shows something (``ss -tlpn ...``)."""


def is_diagnosis(command: str) -> bool:
    """True for a command that changes nothing: it ends in a :data:`DIAGNOSIS` comment."""
    return DIAGNOSIS in command.rsplit("\n", 1)[-1]


def changes_nothing(g: FixGroup) -> bool:
    """True when every command of ``g`` is a diagnosis and it writes, edits and enables
    nothing: its shell is to look with, not to paste as the fix."""
    return bool(g.commands) and not (g.files or g.enable) and all(
        is_diagnosis(c) for c in g.commands)


def heredoc(path: str, lines: list[str], mode: int = DEFAULT_FILE_MODE) -> str:
    """A shell command writing ``lines`` to ``path`` (its directory made first): a quoted
    here-document, so nothing in the content is expanded, with a delimiter no content line
    equals; then a ``chmod`` when
    the file's ``mode`` is not the default (for a person to paste: the bundle installs the
    file itself)."""
    import shlex

    delim = "EOF"
    while delim in lines:
        delim += "_"
    # the directory may not exist yet (/etc/default/grub.d is made by the first package
    # that drops a file there)
    folder = path.rsplit("/", 1)[0] or "/"
    mkdir = f"mkdir -p {shlex.quote(folder)} && " if folder not in ("/", "/etc") else ""
    out = [f"{mkdir}cat > {shlex.quote(path)} <<'{delim}'", *lines, delim]
    if mode != DEFAULT_FILE_MODE:
        out.append(f"chmod {mode:04o} {shlex.quote(path)}")
    return "\n".join(out)
