"""udev rules of the scanned root, in the order udevd processes them.

udev(7): rules files ``*.rules`` in ``/etc/udev/rules.d``, ``/run/udev/rules.d``,
``/usr/local/lib/udev/rules.d``, ``/usr/lib/udev/rules.d`` and ``/lib/udev/rules.d``; a file
in an earlier directory hides a same-named one in a later directory (a symlink to
``/dev/null`` or an empty file masks it); all files are read in lexical order of their names.
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.udev import rules as up

RULES_DIRS = ("/etc/udev/rules.d", "/run/udev/rules.d", "/usr/local/lib/udev/rules.d",
              "/usr/lib/udev/rules.d", "/lib/udev/rules.d")


@record
class Rules:
    """All rules in processing order."""

    rules: tuple[up.Rule, ...]
    files: tuple[str, ...]
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    """Invalid lines of the files parsed."""


def load(host: Host, attrs: tuple[str, ...] = ()) -> Rules:
    """Find, order and parse the rules files (memoized per run).  With ``attrs``, a file
    that never names one of these sysfs attributes is read but not parsed: none of its
    rules can write them (an assignment names its attribute literally, ``ATTR{queue/
    scheduler}``, and a ``GOTO`` never leaves its file), so :func:`~aiaudit.linux.udev.rules.
    attr_writes` finds the same writes; a stock host's 44 files (67 KB) name none."""
    return host.memo(("udev-rules", attrs), lambda: _load(host, attrs))


def _load(host: Host, attrs: tuple[str, ...] = ()) -> Rules:
    chosen: dict[str, str] = {}
    for d in RULES_DIRS:
        for fn in host.listdir(d):
            if fn.endswith(".rules") and fn not in chosen:
                chosen[fn] = f"{d}/{fn}"
    rules: list[up.Rule] = []
    files: list[str] = []
    problems: list[str] = []
    warnings: list[str] = []
    for fn in sorted(chosen, key=lambda s: s.encode()):
        path = chosen[fn]
        if host.is_masked(path):
            continue
        try:
            text = host.read_text(path)
            if attrs and "\x00" not in text and not any(a in text for a in attrs):
                files.append(path)  # nothing in it writes these attributes
                continue
            got, warn = up.parse(text, path)
        except (HostError, ParseError) as exc:
            problems.append(str(exc))
            continue
        files.append(path)
        rules.extend(got)
        warnings.extend(warn)
    return Rules(tuple(rules), tuple(files), tuple(problems), tuple(warnings))
