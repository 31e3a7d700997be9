"""Shared pieces of the host-tuning checks (block, cpu, cstates, memory).

* :func:`verdict`: one place that turns "is it right now" and "will it be right after a
  reboot" into a status, an aspect (runtime / persisted / drift) and a message, the way the
  sysctl check does.
* :func:`boot_commands`: the commands that enabled systemd services run at boot
  (``ExecStart*``), for checks that look for ``cpupower frequency-set`` or
  ``echo X > /sys/...`` as the persistence mechanism.
"""

from __future__ import annotations

import re
import shlex

from aiaudit import systemd
from aiaudit.errors import HostError, ParseError
from aiaudit.host import Host
from aiaudit.model import Aspect, Status
from aiaudit.records import record

_EXEC_KEYS = ("ExecStartPre", "ExecStart", "ExecStartPost")


def verdict(live: bool, runtime_ok: bool | None, boot_ok: bool | None, *, boot_set: bool,
            what: str, runtime_txt: str, boot_txt: str, want: str
            ) -> tuple[Status, Aspect, str]:
    """Status, aspect and message for one subject.

    ``runtime_ok`` is the live judgement (ignored offline); ``boot_ok`` the judgement of
    what the next boot will produce (``None`` = unknown: nothing sets it and the kernel
    default is unknown); ``boot_set`` says whether configuration (not a default) decides.
    """
    if not live:
        if boot_ok:
            return Status.PASS, Aspect.PERSISTED, f"{what} at boot: {boot_txt}"
        if boot_ok is None:
            return (Status.FAIL, Aspect.PERSISTED,
                    f"{what} at boot: {boot_txt}; nothing makes it {want}")
        return Status.FAIL, Aspect.PERSISTED, f"{what} at boot: {boot_txt}; expected {want}"
    if not runtime_ok:
        if boot_ok and boot_set:
            return (Status.FAIL, Aspect.DRIFT,
                    f"{what} is {runtime_txt} now, but the boot configuration ({boot_txt}) is "
                    "right: it was changed at runtime or not applied yet")
        if boot_ok:
            return (Status.FAIL, Aspect.RUNTIME,
                    f"{what} is {runtime_txt} now; at boot: {boot_txt}: something changed it "
                    "at runtime")
        if boot_set:
            return (Status.FAIL, Aspect.PERSISTED,
                    f"{what} is {runtime_txt} now and the configuration sets {boot_txt}; "
                    f"expected {want}")
        return (Status.FAIL, Aspect.RUNTIME,
                f"{what} is {runtime_txt}; expected {want}; at boot: {boot_txt}")
    if boot_ok is False:
        return (Status.FAIL, Aspect.DRIFT,
                f"{what} is {runtime_txt} now, but at boot: {boot_txt}: it reverts at reboot")
    if boot_ok is None:
        return (Status.PASS, Aspect.RUNTIME,
                f"{what} is {runtime_txt}; nothing persists it ({boot_txt}), so a reboot may "
                "change it")
    return Status.PASS, Aspect.RUNTIME, f"{what} is {runtime_txt}; at boot: {boot_txt}"


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
    """Exec lines of every enabled service (memoized): (commands, problems)."""
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
_SHLEX_SPACE = re.compile(r"[ \t\r\n]+")


def _words(text: str) -> list[str]:
    """``shlex.split(text)``; without quotes or backslashes it only splits on shlex's
    whitespace (`` \t\r\n``), done here without shlex's character-by-character loop."""
    if _SHELL_QUOTING.isdisjoint(text):
        return [w for w in _SHLEX_SPACE.split(text) if w]
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


_ECHO_TO = re.compile(r"""(?:echo|printf)\s+(?:-n\s+)?['"]?([\w+\-]+)['"]?\s*"""
                      r"""(?:>|\|\s*tee\s+(?:-a\s+)?)\s*(\S+)""")


def sysfs_writes(host: Host, path_re: str) -> list[tuple[str, str, BootCommand]]:
    """``echo VALUE > PATH`` / ``echo VALUE | tee PATH`` run by enabled services, where
    PATH matches ``path_re``: (value, path, command)."""
    cmds, _ = boot_commands(host)
    rx = re.compile(path_re)
    out = []
    for c in cmds:
        for m in _ECHO_TO.finditer(c.text):
            path = m.group(2).strip("'\";)")
            if rx.search(path):
                out.append((m.group(1), path, c))
    seen: set[tuple[str, str, int]] = set()
    uniq = []
    for v, p, c in out:
        k = (c.file, p, c.line)
        if k not in seen:
            seen.add(k)
            uniq.append((v, p, c))
    return uniq


def read_opt(host: Host, path: str) -> str | None:
    """Stripped content of ``path``, or ``None`` when it cannot be read (absent sysfs
    attribute, offline scan)."""
    try:
        return host.read_text(path).strip()
    except HostError:
        return None


PROC_CONFIG = "/proc/config.gz"
BOOT_DIR = "/boot"
CONFIG_PREFIX = "config-"
"""Kernel build configs are ``/boot/config-<release>``."""
KERNEL_CONFIG_MAX = 4 << 20
"""Most bytes a decompressed kernel config may have (a real one is ~250 KiB)."""


def _proc_config(host: Host) -> str | None:
    """The running kernel's own build config (``CONFIG_IKCONFIG_PROC``), decompressed with
    a bound so that a hostile file cannot expand without limit."""
    import zlib

    try:
        data = host.read_bytes(PROC_CONFIG)
    except HostError:
        return None
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, KERNEL_CONFIG_MAX)
    except zlib.error:
        return None
    if d.unconsumed_tail:
        return None
    return out.decode("utf-8", errors="replace")


def kernel_config(host: Host) -> tuple[str, str] | None:
    """(path, text) of the kernel config: live, the running kernel's ``/proc/config.gz``,
    else its ``/boot/config-<release>``; offline, the newest ``/boot/config-*`` (memoized)."""
    return host.memo(("kernel-config",), lambda: _kernel_config(host))


def _kernel_config(host: Host) -> tuple[str, str] | None:
    if host.live:
        text = _proc_config(host)
        if text is not None:
            return PROC_CONFIG, text
    names = [n for n in host.listdir(BOOT_DIR) if n.startswith(CONFIG_PREFIX)]
    if host.live:
        rel = read_opt(host, "/proc/sys/kernel/osrelease")
        if rel and f"{CONFIG_PREFIX}{rel}" in names:
            names = [f"{CONFIG_PREFIX}{rel}"]
    if not names:
        return None
    name = sorted(names, key=lambda n: [int(p) if p.isdigit() else 0
                                        for p in re.split(r"\D+", n[len(CONFIG_PREFIX):])
                                        if p])[-1]
    try:
        return f"{BOOT_DIR}/{name}", host.read_text(f"{BOOT_DIR}/{name}")
    except HostError:
        return None


def kernel_config_missing(host: Host) -> str:
    """What :func:`kernel_config` looked for when it found nothing, in display form
    (``no boot/config-*``; live also ``/proc/config.gz``), for a ``default`` evidence."""
    files = f"{BOOT_DIR.lstrip('/')}/{CONFIG_PREFIX}*"
    return f"no {PROC_CONFIG} or {files}" if host.live else f"no {files}"


def oneshot_unit(desc: str, script: str) -> str:
    """A self-contained oneshot service that runs ``script`` with ``sh -c`` at boot
    (remediation content)."""
    return ("[Unit]\n"
            f"Description={desc} (aiaudit remediation)\n"
            "After=tuned.service cpupower.service\n\n"
            "[Service]\nType=oneshot\nRemainAfterExit=yes\n"
            f"ExecStart=/bin/sh -c '{script}'\n\n"
            "[Install]\nWantedBy=multi-user.target\n")
