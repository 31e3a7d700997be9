"""What the sshd checks report, shared by ``ssh.sshd_option`` and ``ssh.sshd_kbdinteractive``.

A rule is judged on the global value (what ``sshd -T`` prints) and, separately, on each
``Match`` block whose own lines decide the keyword (:func:`evaluate`), since a matching
block overrides the global value for the connections it matches (servconf.c
``copy_set_server_options``).  A configuration sshd would refuse is an error result naming
file and line (:func:`error_result`); a value is evidenced by its deciding line or the
compiled-in default (:func:`evidence`); an OpenSSH older than the semantics modelled here
gets a caveat (:func:`version_note`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Evidence, Result, Status
from aiaudit.linux.packages import dpkg
from aiaudit.linux.packages.installed import dpkg_version
from aiaudit.linux.sshd.effective import Passes
from aiaudit.linux.sshd.keywords import KEYWORDS

if TYPE_CHECKING:
    from aiaudit.linux.sshd import config as sp

BLOCK_ERROR = "sshd would drop connections matching this block (re-reading the " \
    "configuration for them fails)"
"""What an error in a Match block's connection pass means."""


def version_note(host: Host) -> str:
    """A caveat when the scanned root's OpenSSH predates the semantics modelled here
    (OpenSSH 8.7 merged ChallengeResponseAuthentication into KbdInteractiveAuthentication
    and changed its default; the parser follows 9.x)."""
    full = dpkg_version(host, "openssh-server")
    if full is None:
        return ""
    up = dpkg.upstream_version(full)
    if dpkg.version_tuple(up) >= (8, 7):
        return ""
    return (f" Note: openssh-server {up} is older than 8.7; this result follows OpenSSH 9.x "
            "semantics (ChallengeResponseAuthentication was a separate option before 8.7).")


def evidence(s: sp.Setting) -> tuple[Evidence, ...]:
    """The deciding line, every line of an accumulating option, or the compiled-in
    default (with the release it belongs to)."""
    if s.directive is not None:
        return (Evidence.file(s.directive.file, s.directive.line, s.directive.raw),)
    if s.entries:
        return tuple(Evidence.file(d.file, d.line, d.raw) for d in s.entries)
    return (Evidence.default(f"{s.default_note or 'compiled-in default'} of {s.option}"
                             + ("" if s.default_note else " (OpenSSH)"),
                             s.value if s.value is not None else "unset"),)


def block_subject(block: sp.MatchBlock) -> str:
    """The result subject for a Match block: ``Match User alice``, its criteria without file
    and line, so that a comment added above the block does not rename the result (the
    deciding line is in the evidence and message)."""
    return "Match " + " ".join(block.text.split())


def error_result(exc: ParseError, subject: str = "sshd_config",
                 what: str = "sshd would refuse this configuration") -> Result:
    """An error result for a configuration sshd refuses, naming the file and line."""
    ev: tuple[Evidence, ...] = ()
    if exc.source:
        ev = (Evidence.file(exc.source, exc.line),)
    return Result(Status.ERROR, subject, f"{what}: {exc}", aspect=Aspect.CONFIG, evidence=ev)


def evaluate(cfg: sp.SshdConfig | Passes, keyword: str, match_blocks: bool
             ) -> Iterator[tuple[sp.MatchBlock | None, sp.Setting | ParseError]]:
    """The global setting, then (optionally) the setting for a connection matching each
    Match block (other than ``Match all``) whose own lines decide the keyword; a block
    whose connection pass sshd would refuse gives its ParseError."""
    shared = cfg if isinstance(cfg, Passes) else Passes(cfg)
    yield None, shared.value(keyword)
    if not match_blocks:
        return
    opt = KEYWORDS[keyword.lower()].opt
    for block in dict.fromkeys(shared.config.blocks):  # a file included twice repeats its blocks
        if block.is_all or not block.can_match:  # `Match User !root` matches nobody
            continue
        try:
            s = shared.value(keyword, block)
        except ParseError as exc:
            yield block, exc
            continue
        d = s.directive or (s.entries[0] if s.entries else None)
        if d is not None and d.block is not None and not d.block.is_all \
                and d.keyword.opt == opt:
            yield block, s


DISABLE_FORWARDING_SINCE: dict[str, tuple[int, int]] = {
    "allowtcpforwarding": (0, 0), "allowstreamlocalforwarding": (0, 0),
    "x11forwarding": (10, 0), "allowagentforwarding": (10, 0)}
"""Options that ``DisableForwarding yes`` turns off whatever their own value, from the
release that does it: TCP and Unix-socket forwarding always; X11 and agent forwarding
only since 10.0 (CVE-2025-32728: before, ``DisableForwarding`` failed to disable them,
as the Debian changelog of openssh 1:10.0p1 records)."""


def disabled_by(cfg: sp.SshdConfig | Passes, keyword: str, block: sp.MatchBlock | None
                ) -> sp.Setting | None:
    """The ``DisableForwarding yes`` setting that turns ``keyword`` off for the global
    connection (``block`` ``None``) or a connection matching ``block``, or ``None``.  With
    the release unknown, X11 and agent forwarding are not assumed off."""
    since = DISABLE_FORWARDING_SINCE.get(KEYWORDS[keyword.lower()].opt)
    shared = cfg if isinstance(cfg, Passes) else Passes(cfg)
    release = shared.config.release
    if since is None or (since > (0, 0) and (release is None or release < since)):
        return None
    try:
        df = shared.value("DisableForwarding", block)
    except ParseError:
        return None
    return df if df.value == "yes" else None
