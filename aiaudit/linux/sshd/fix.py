"""How to change an sshd setting so that the daemon really takes the new value.

sshd keeps the *first* value it reads (servconf.c: ``if (*intptr == -1)``), and Debian's
main file includes ``sshd_config.d/*.conf`` on its first line, so a drop-in named to sort
first wins there; elsewhere (no ``Include``, an ``Include`` after the deciding line, a
``Match`` block, an earlier drop-in) it does not.  Each proposal is checked by
re-evaluating the configuration with the fix applied (:meth:`SshdConfig.with_file`), not
assumed: the drop-in when it wins, else an in-place edit of the main file
(:mod:`aiaudit.core.edits`, imported only then) when that wins, else the line to change by
hand and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from aiaudit.core.errors import ParseError
from aiaudit.core.model import Remediation, Snippet
from aiaudit.linux.sshd.presence import MAIN_CONFIG

if TYPE_CHECKING:  # the parser is imported where a fix is checked against it
    from aiaudit.linux.sshd import config as sp

DROPIN = "/etc/ssh/sshd_config.d/00-aiaudit.conf"
"""Remediation drop-in.  sshd keeps the *first* value it reads and Debian's main file
includes ``sshd_config.d/*.conf`` on its first line, so a name that sorts first wins."""
RELOAD = Snippet.apply("sshd", "validate with sshd -t, then reload a running sshd (the "
                       "previous files come back when sshd refuses the new ones)")
"""Validate, then make the running daemon re-read its configuration: the bundle runs
``sshd -t -f /etc/ssh/sshd_config`` and reloads ``ssh.service`` (Debian) or
``sshd.service`` only when one runs."""

Accepts = Callable[["sp.Setting"], bool]
"""Whether a setting has a value the rule accepts."""


def where(d: sp.Directive) -> str:
    """``etc/ssh/sshd_config:12``: a line in display form (root-relative)."""
    return f"{d.file.lstrip('/')}:{d.line}"


def _with_dropin(cfg: sp.SshdConfig, text: str) -> sp.SshdConfig:
    """The configuration as sshd would read it with :data:`DROPIN` added (the other files
    are not read, split and validated again)."""
    return cfg.with_file(DROPIN, text)


def _with_main(cfg: sp.SshdConfig, text: str) -> sp.SshdConfig:
    """The configuration as sshd would read it with the main file's text replaced."""
    real_read = cfg.reader

    def read(path: str) -> str:
        return text if path == cfg.main else real_read(path)

    from aiaudit.linux.sshd import config as sp

    return sp.load(read, cfg.globber, cfg.main)


def _fixes(make: Callable[[], sp.SshdConfig], option: str, ok: Accepts) -> bool:
    """True if the configuration ``make`` builds gives ``option`` an acceptable value."""
    try:
        return ok(make().value(option))
    except ParseError:
        return False


def remediation(cfg: sp.SshdConfig, setting: sp.Setting, line: str,
                ok: Accepts) -> Remediation:
    """Fix for a failing global value: the drop-in when sshd would let it win, else an
    in-place edit of the main file (its global lines of the keyword commented out, the line
    inserted before the first ``Match``) when that wins, else the line to edit by hand and
    why.  Each is checked by re-evaluating the configuration with the fix applied."""
    d = setting.directive or (setting.entries[0] if setting.entries else None)
    if _fixes(lambda: _with_dropin(cfg, line + "\n"), setting.option, ok):
        also = f" (it then overrides {where(d)})" if d is not None else ""
        return Remediation(
            f"Add `{line}` in {DROPIN}{also}; sshd keeps the first value it reads, and the "
            "main file includes sshd_config.d/*.conf before its own lines.",
            (Snippet.file(DROPIN, line + "\n", f"set {setting.option} (first value wins)"),
             RELOAD))
    why = _why_dropin_loses(cfg, d)
    edit = _main_file_edit(cfg, setting, line, ok, d)
    if edit is not None:
        return Remediation(
            f"Edit {cfg.main} in place, backed up first (a drop-in would not take effect: "
            f"{why}): comment out its global {setting.option} lines, insert `{line}` "
            "before the first Match.", (edit, RELOAD))
    target = f"change {where(d)} to `{line}`" if d is not None else f"add `{line}` to " \
        f"{MAIN_CONFIG} before any Match block"
    return Remediation(f"A drop-in would not take effect ({why}): {target}.", (RELOAD,),
                       manual=target[0].upper() + target[1:] + ".")


def _main_file_edit(cfg: sp.SshdConfig, setting: sp.Setting, line: str, ok: Accepts,
                    d: sp.Directive | None) -> Snippet | None:
    """The in-place edit of the main file that makes ``line`` win, or ``None`` when the
    deciding line is in a Match block, the main file cannot be read or the edit would not
    win either."""
    from aiaudit.core import edits  # the in-place edit: only when no drop-in can win

    op = edits.set_directive_op(line)
    if not edits.valid(op) or (d is not None and d.block is not None):
        return None
    try:
        main = cfg.reader(cfg.main)
    except Exception:  # the reader's own error: no edit can be proven
        return None
    if not _fixes(lambda: _with_main(cfg, edits.apply(op, main)), setting.option, ok):
        return None
    return Snippet.edit(cfg.main, op, f"set {setting.option} in the main file")


def _why_dropin_loses(cfg: sp.SshdConfig, d: sp.Directive | None) -> str:
    """Why :data:`DROPIN` would not decide: a Match block, no Include of it, an Include
    after the deciding line, or a file read before it."""
    if d is not None and d.block is not None:
        return (f"{where(d)} is inside `Match {d.block.text}`, which overrides global "
                "values")
    from aiaudit.linux.sshd import config as sp

    incs = [i for i in cfg.includes if i.block is None and any(
        sp.glob_matches(sp.include_pattern(p), DROPIN) for p in i.patterns)]
    if not incs:
        return "no Include of /etc/ssh/sshd_config.d/*.conf"
    if d is not None and d.file == cfg.main and not d.include_chain:
        inc = incs[0]
        if inc.file == cfg.main and inc.line > d.line:
            return (f"the Include at {inc.file.lstrip('/')}:{inc.line} comes after the "
                    f"deciding line {where(d)}")
    if d is not None:
        return f"{where(d)} is read before it"
    return "another file read earlier decides"
