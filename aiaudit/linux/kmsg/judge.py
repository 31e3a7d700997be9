# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""What the fault rules share: the log gate (skip offline, error when unreadable), counting
a kind's events per device against a threshold in a window, and the wording of results."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from aiaudit.api import Aspect, CheckContext, Evidence, Remediation, Result, Status
from aiaudit.core.errors import HostError, LiveStateUnavailable, ParseError
from aiaudit.core.startup.records import record
from aiaudit.linux.kmsg.source import absent

if TYPE_CHECKING:
    from aiaudit.linux.kmsg.log import Agg, KernelLog

SUBJECT = "kernel log"


def window_schema(count: int, window_s: int, what: str) -> dict[str, Any]:
    """The ``count`` / ``window_s`` params of a fault rule."""
    return {
        "count": {"type": "integer", "minimum": 1, "maximum": 256, "default": count,
                  "description": f"{what} on one device at which the rule fails"},
        "window_s": {"type": "number", "minimum": 0, "default": window_s,
                     "description": "count events of the last window_s seconds; 0: since "
                                    "boot (or since the previous scan with --state)"}}


def gate(ctx: CheckContext) -> KernelLog | Result:
    """The scan's kernel log, or the result that says why there is none: ``skip`` offline
    (live state) or in a snapshot root without ``dev/kmsg``, ``error`` when it cannot be
    read (``kernel.dmesg_restrict`` without CAP_SYSLOG) or is not in kmsg format.  Where
    there is no log, neither the reader nor the catalogue is loaded."""
    missing = absent(ctx.host)
    if missing is not None:
        return Result(Status.SKIP, SUBJECT, str(missing))
    from aiaudit.linux.kmsg import catalogue as cat
    from aiaudit.linux.kmsg.log import load

    c = cat.shipped()
    patterns = tuple((name, match) for name, match, _m, _a in c.nvrm)
    try:
        return load(ctx.host, patterns, ctx.settings.get("previous"))
    except LiveStateUnavailable as exc:
        return Result(Status.SKIP, SUBJECT, str(exc))
    except (HostError, ParseError) as exc:
        return Result(Status.ERROR, SUBJECT, f"the kernel log cannot be read: {exc}",
                      evidence=(Evidence.runtime("/dev/kmsg", str(exc)),))


@record
class Hit:
    """Events of one code on one device that reach the rule's threshold."""

    code: str
    device: str
    agg: Agg
    in_window: int
    limit: int
    label: str
    """How the code is named in messages (``Xid 79 (RESTART_BM)``)."""


def hits(klog: KernelLog, kind: str, label: Callable[[str], str | None],
         limit: Callable[[str], tuple[int, float]]) -> tuple[list[Hit], int]:
    """(events at or over their threshold, events of ``kind`` seen in all).  ``label``
    returns ``None`` for a code the rule does not judge; ``limit`` gives a code's (count,
    window_s)."""
    out: list[Hit] = []
    seen = 0
    for (k, code, device), a in klog.faults.items():
        if k != kind:
            continue
        name = label(code)
        if name is None:
            continue
        seen += a.count
        count, window = limit(code)
        n = klog.window_count(a, window)
        if n >= count:
            out.append(Hit(code, device, a, n, count, name))
    out.sort(key=lambda h: (h.device, h.code))
    return out, seen


def span(klog: KernelLog, window_s: float) -> str:
    """``since boot`` / ``in the last 3600 s`` / ``since the previous scan``."""
    if window_s > 0:
        return f"in the last {window_s:g} s"
    return "since the previous scan" if klog.since is not None else "since boot"


def evidence(klog: KernelLog, h: Hit) -> Evidence:
    """The first message of the hit, its time and how many there were."""
    a = h.agg
    more = f" (x{a.count}, last at {a.last_usec / 1e6:.1f} s)" if a.count > 1 else ""
    return Evidence.runtime("/dev/kmsg" if klog.source == "/dev/kmsg" else klog.source,
                            f"[{a.first_usec / 1e6:12.6f}] {a.sample}{more}")


def _expected(h: Hit) -> str:
    return f"no {h.label}" if h.limit == 1 else f"fewer than {h.limit} {h.label}"


def results(klog: KernelLog, found: list[Hit], *, what: str, window: float,
            describe: Callable[[str], str], fix: Remediation,
            extra: Mapping[str, Any] | None = None,
            note: Callable[[list[Hit]], str] | None = None) -> Iterator[Result]:
    """One ``fail`` per device with hits (``note`` adds to its message what the codes
    mean), or one ``pass`` for the log."""
    data = klog.data() | dict(extra or {})
    if not found:
        yield Result(Status.PASS, SUBJECT, f"no {what} {span(klog, window)} "
                     f"({klog.records} records of {klog.source})", aspect=Aspect.RUNTIME,
                     evidence=(Evidence.runtime(klog.source, f"{klog.records} records"),),
                     data=data)
        return
    by_dev: dict[str, list[Hit]] = {}
    for h in found:
        by_dev.setdefault(h.device, []).append(h)
    for dev, hs in by_dev.items():
        actual = ", ".join(f"{h.label} x{h.in_window}" for h in hs)
        expected = "; ".join(sorted({_expected(h) for h in hs})) + f" {span(klog, window)}"
        said = f" - {note(hs)}" if note else ""
        yield Result(Status.FAIL, describe(dev), f"{actual} {span(klog, window)}{said}",
                     expected=expected, actual=actual, aspect=Aspect.RUNTIME,
                     evidence=tuple(evidence(klog, h) for h in hs), remediation=fix,
                     data=data | {"events": [{"code": h.code, "count": h.in_window,
                                              "first_usec": h.agg.first_usec,
                                              "last_usec": h.agg.last_usec} for h in hs]})
