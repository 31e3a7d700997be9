"""What enabled systemd services run at boot (``ExecStart*``), for checks that look for
``cpupower frequency-set`` or ``echo X > /sys/...`` as the persistence mechanism, and the
oneshot unit a fix installs to do the same."""

from __future__ import annotations

import re
import shlex

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record
from aiaudit.linux.systemd import units as systemd

_EXEC_KEYS = ("ExecStartPre", "ExecStart", "ExecStartPost")


@record
class BootCommand:
    """A command an enabled service runs at boot."""

    unit: str
    argv: tuple[str, ...]
    """Split command (``sh -c`` scripts are split again)."""
    text: str
    file: str
    line: int


def boot_commands(host: Host) -> tuple[list[BootCommand], list[str]]:
    """Exec lines of every enabled service (memoized): (commands, problems).  None where
    the root's init is not systemd (a sysvinit root, a container image): its unit files
    and ``.wants`` links are read by nothing at boot."""
    from aiaudit.linux.rootkind import units_run

    if not units_run(host):
        return [], []
    return host.memo(("boot-commands",), lambda: _boot_commands(host))


def _wanted_services(host: Host) -> list[str]:
    for d in systemd.ENABLE_DIRS:
        host.listdir(d)  # an unreadable unit directory is an error here (HostError)
    names: list[str] = []
    for d, sub, entries in systemd.wants_dirs(host):
        for n in host.listdir(f"{d}/{sub}") if entries is None else entries:
            if n.endswith(".service") and n not in names:
                names.append(n)
    return names


def _boot_commands(host: Host) -> tuple[list[BootCommand], list[str]]:
    out: list[BootCommand] = []
    problems: list[str] = []
    for name in _wanted_services(host):
        try:
            unit = systemd.load_unit(host, name)
        except (HostError, ParseError) as exc:
            problems.append(f"{name}: {exc}")
            continue
        if not unit.exists:
            continue
        for key in _EXEC_KEYS:
            for a in unit.get_all("Service", key):
                text = a.value.lstrip("-@:+!")
                for argv in _split(text):
                    out.append(BootCommand(name, tuple(argv), text, a.file, a.line))
    return out, problems


_SHELL_QUOTING = frozenset("'\"\\")


_SHLEX_SPACE = lazy_pattern(r"[ \t\r\n]+")


def _words(text: str) -> list[str]:
    """``shlex.split(text)``; without quotes or backslashes it only splits on shlex's
    whitespace (`` \t\r\n``), done here without shlex's character-by-character loop."""
    if _SHELL_QUOTING.isdisjoint(text):
        return [w for w in _SHLEX_SPACE().split(text) if w]
    return shlex.split(text)


def _split(text: str) -> list[list[str]]:
    """Split a command line; ``sh -c 'a; b | c'`` yields each simple command."""
    try:
        argv = _words(text)
    except ValueError:
        return [text.split()]
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in ("sh", "bash", "dash") \
            and argv[1] == "-c":
        out = []
        for part in re.split(r"[;&|\n]+", argv[2]):
            try:
                words = _words(part)
            except ValueError:
                words = part.split()
            if words:
                out.append(words)
        return out
    return [argv]


_ECHO_TO = lazy_pattern(r"""(?:echo|printf)\s+(?:-n\s+)?['"]?([\w+\-]+)['"]?\s*"""
                      r"""(?:>|\|\s*tee\s+(?:-a\s+)?)\s*(\S+)""")


def sysfs_writes(host: Host, suffix: str) -> list[tuple[str, str, BootCommand]]:
    """``echo VALUE > PATH`` / ``echo VALUE | tee PATH`` run by enabled services, where
    PATH ends with ``suffix`` (``scaling_governor``, ``transparent_hugepage/enabled``):
    (value, path, command)."""
    cmds, _ = boot_commands(host)
    out = []
    for c in cmds:
        for m in _ECHO_TO().finditer(c.text):
            path = m.group(2).strip("'\";)")
            if path.endswith(suffix):
                out.append((m.group(1), path, c))
    seen: set[tuple[str, str, int]] = set()
    uniq = []
    for v, p, c in out:
        k = (c.file, p, c.line)
        if k not in seen:
            seen.add(k)
            uniq.append((v, p, c))
    return uniq


def oneshot_unit(desc: str, script: str) -> str:
    """A self-contained oneshot service that runs ``script`` with ``sh -c`` at boot
    (remediation content)."""
    return ("[Unit]\n"
            f"Description={desc} (aiaudit remediation)\n"
            "After=tuned.service cpupower.service\n\n"
            "[Service]\nType=oneshot\nRemainAfterExit=yes\n"
            f"ExecStart=/bin/sh -c '{script}'\n\n"
            "[Install]\nWantedBy=multi-user.target\n")
