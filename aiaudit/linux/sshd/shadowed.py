"""sshd lines that lost: what a failing sshd setting overrode, and why.

sshd keeps the *first* value it reads for most keywords (servconf.c ``if (*intptr == -1)``),
reading ``Include`` files where the ``Include`` line stands (a glob's files in byte order);
Debian's main file includes ``sshd_config.d/*.conf`` on its first line, so a line in a
drop-in beats the same keyword edited lower in ``sshd_config``, and ``10-a.conf`` beats
``50-b.conf``.  A matching ``Match`` block's value replaces the global one for the
connections it matches (``copy_set_server_options``).  Accumulating keywords (``Port``,
``ListenAddress``, ``AllowUsers``...) lose nothing this way and give nothing here.
"""

from __future__ import annotations

from typing import Any

from aiaudit.core.errors import ParseError
from aiaudit.core.model import Evidence
from aiaudit.linux.sshd import config as sp
from aiaudit.linux.sshd.effective import Passes

MAX_SHOWN = 6
"""Overridden lines shown as evidence per result (more are in ``data``)."""
MAX_DATA = 50
"""Overridden lines listed in ``data`` per result (a bound for hostile files)."""


def _where(d: sp.Directive) -> str:
    return f"{d.file.lstrip('/')}:{d.line}"


def _first(win: sp.Directive, lost: sp.Directive) -> str:
    """Why ``win`` is read before ``lost``."""
    if win.file == lost.file:
        return "earlier in the same file"
    via = [f"{f.lstrip('/')}:{n}" for f, n in win.include_chain]
    lost_files = {f for f, _ in lost.include_chain} | {lost.file}
    for (f, n), shown in zip(win.include_chain, via, strict=True):
        if f == lost.file and n < lost.line:
            return f"its file is included at {shown}, before line {lost.line}"
        if f in lost_files:
            break
    a, b = win.file.rpartition("/")[2], lost.file.rpartition("/")[2]
    if win.file.rpartition("/")[0] == lost.file.rpartition("/")[0] and a != b:
        return f"{a} sorts before {b} in the Include glob"
    return f"included at {via[0]}" if via else "earlier in the configuration"


def why_lost(win: sp.Directive, lost: sp.Directive) -> str:
    """Why ``lost`` does not decide: ``win`` is read first, or a matching Match block
    replaces the global value."""
    name = win.keyword.name
    if win.block is not None and lost.block is None:
        return (f"the matching `Match {' '.join(win.block.text.split())}` block sets {name} "
                f"at {_where(win)}, which replaces the global value for the connections it "
                "matches")
    return (f"'{win.raw.strip()}' at {_where(win)} is read first ({_first(win, lost)}): "
            f"sshd keeps the first value of {name} it reads")


def overridden(cfg: sp.SshdConfig | Passes, keyword: str,
               block: sp.MatchBlock | None = None) -> list[tuple[sp.Directive, str]]:
    """The lines that set ``keyword`` but lost to the deciding line, for the global
    connection (``block`` ``None``: what ``sshd -T`` prints) or one matching exactly
    ``block``; each with why.  ``[]`` for accumulating keywords and defaults.  With the
    run's :class:`~aiaudit.linux.sshd.effective.Passes`, no connection pass is computed
    again."""
    kw = sp.KEYWORDS.get(keyword.lower())
    if kw is None or kw.cls == sp.SPECIAL or sp.OPTIONS[kw.opt].cls == sp.ACCUMULATE:
        return []
    shared = cfg if isinstance(cfg, Passes) else Passes(cfg)
    try:
        eff = shared.effective(block)
    except ParseError:
        return []
    win = eff.get(keyword).directive
    if win is None:
        return []
    glob, matched = eff.lines(keyword)
    rivals = [*glob, *matched] if matched and win in matched else glob
    out: list[tuple[sp.Directive, str]] = []
    for d in dict.fromkeys(rivals):  # a file included twice repeats its lines
        if d is not win and (d.file, d.line) != (win.file, win.line) and d.value != win.value:
            out.append((d, why_lost(win, d)))
    return out


def evidence(lost: list[tuple[sp.Directive, str]]) -> tuple[Evidence, ...]:
    """One ``file`` evidence per overridden line: its text and why it lost."""
    return tuple(Evidence.file(d.file, d.line, f"{d.raw.strip()} (overridden: {why})")
                 for d, why in lost[:MAX_SHOWN])


def data(lost: list[tuple[sp.Directive, str]]) -> list[dict[str, Any]]:
    """The overridden lines for the JSON report."""
    return [{"source": _where(d), "line": d.raw.strip(), "value": d.value, "why": why}
            for d, why in lost[:MAX_DATA]]
