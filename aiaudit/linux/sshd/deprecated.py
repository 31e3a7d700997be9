"""Deprecated and unsupported sshd keywords: what sshd says of them and what it does.

OpenSSH still accepts keywords of removed features (SSH protocol 1, ``UseLogin``,
privilege-separation off) so that old configurations keep starting: ``servconf.c`` maps
them to ``sDeprecated`` / ``sUnsupported`` (logged at INFO, so ``sshd -t`` prints
``<file> line N: Deprecated option X``) or, for ``Protocol``, ``sIgnore`` (logged only at
DEBUG2: ``sshd -t`` is silent), and ignores their arguments.  Benchmarks written for
OpenSSH 6 still ask for ``Protocol 2`` or ``UsePrivilegeSeparation sandbox``; a rule on such
a keyword is judged on the *effective behaviour* of the daemon (protocol 2 only, privilege
separation always on), with sshd's warning and the lines that still carry the keyword.
Messages and the behaviour were checked with the real ``sshd -t`` of OpenSSH 9.2
(tests/checks/ssh/test_sshd_option_deprecated.py).
"""

from __future__ import annotations

import re
from typing import Iterator

from aiaudit.api import Aspect, Evidence, Remediation, Result, Status
from aiaudit.core.ruleset.predicates import Predicate
from aiaudit.linux.sshd import config as sp
from aiaudit.linux.sshd.fix import RELOAD

EFFECT: dict[str, tuple[str | None, str]] = {
    "protocol": ("2", "OpenSSH 7.6 removed SSH protocol 1: the daemon speaks protocol 2 only"),
    "rhostsrsaauthentication": ("no", "rhosts-RSA authentication existed only in SSH "
                                "protocol 1, removed from the server in OpenSSH 7.4"),
    "rsaauthentication": ("no", "RSA authentication of SSH protocol 1, removed in OpenSSH "
                          "7.4 (protocol 2 keys are PubkeyAuthentication)"),
    "rhostsauthentication": ("no", "plain rhosts authentication was removed in OpenSSH 3.7"),
    "useprivilegeseparation": ("sandbox", "privilege separation is mandatory since OpenSSH "
                               "7.5, with the seccomp sandbox on Linux"),
    "uselogin": ("no", "OpenSSH 7.4 removed UseLogin: login(1) is never run"),
    "pamauthenticationviakbdint": ("no", "replaced by KbdInteractiveAuthentication with "
                                   "UsePAM"),
    "serverkeybits": (None, "the ephemeral server key of SSH protocol 1 no longer exists"),
    "keyregenerationinterval": (None, "the ephemeral server key of SSH protocol 1 no longer "
                                "exists"),
    "authorizedkeysfile2": (None, "AuthorizedKeysFile lists every file now (default "
                            ".ssh/authorized_keys .ssh/authorized_keys2)"),
    "checkmail": (None, "sshd never checks for mail"),
    "permitblacklistedkeys": (None, "Debian's blacklist of weak keys was dropped"),
    "verifyreversemapping": (None, "UseDNS decides reverse lookups"),
    "reversemappingcheck": (None, "UseDNS decides reverse lookups"),
}
"""Lower-case keyword -> (effective value, why).  Unsupported keywords (compiled-out
Kerberos/AFS options) are effectively ``no``."""
SILENT = frozenset({"protocol"})
"""``sIgnore``: logged at DEBUG2 only, so ``sshd -t`` prints nothing."""


def _mentions(cfg: sp.SshdConfig, kw: sp.Keyword) -> list[Evidence]:
    """Lines of the configuration's files whose keyword is ``kw`` (the parser drops
    ignored keywords, so they are found here, for evidence only)."""
    pat = re.compile(rf"^\s*{re.escape(kw.name)}(?:\s|=|$)", re.IGNORECASE)
    out: list[Evidence] = []
    for path in cfg.files:
        try:
            text = cfg.reader(path)
        except Exception:  # the parse already read it; a reader error here is not news
            continue
        for n, line in enumerate(text.splitlines()[:100000], 1):
            if pat.match(line):
                out.append(Evidence.file(path, n, line.strip()[:200]))
    return out


def results(cfg: sp.SshdConfig, kw: sp.Keyword, pred: Predicate,
            note: str) -> Iterator[Result]:
    """One result for a rule on a deprecated or unsupported keyword: skipped when the
    keyword has no effective value, else the rule judged on what sshd does.  A failure
    cannot be fixed by setting the keyword: its remediation is the manual step (remove the
    lines, rewrite the rule), then :data:`~aiaudit.linux.sshd.fix.RELOAD` when lines
    carry the keyword."""
    key = kw.name.lower()
    value, why = EFFECT.get(key, ("no", "the feature is not compiled into this sshd"))
    kind = "Unsupported" if kw.note == "unsupported" else "Deprecated"
    lines = _mentions(cfg, kw)
    if lines:
        warn = "; ".join(
            f"`{e.path.lstrip('/')} line {e.line}: {kind} option {kw.name}`" for e in lines
            if e.path)
        said = (f"sshd ignores it and logs {warn} at debug2 only (sshd -t is silent)"
                if key in SILENT else f"sshd ignores it and warns: {warn}")
    else:
        said = "no line sets it"
    shown = value if value is not None else "no effect"
    head = f"{kw.name} is {kind.lower()} in OpenSSH 9.x: {why}; {said}"
    want = pred.text()
    try:
        ok = value is not None and pred.ok(value)
    except ValueError:
        ok = False
    ev = tuple(lines) or (Evidence.default(f"{kind.lower()} keyword {kw.name} (OpenSSH)",
                                           shown),)
    if value is None:  # nothing the rule could ask of it holds or fails
        yield Result(Status.SKIP, kw.name, f"{head}: a rule on it does not apply{note}",
                     expected=want, actual=shown, aspect=Aspect.CONFIG, evidence=ev)
        return
    if ok:
        yield Result(Status.PASS, kw.name, f"{head}. Effective: {shown}{note}",
                     expected=want, actual=shown, aspect=Aspect.CONFIG, evidence=ev)
        return
    how = (f"{kw.name} has no effect on this sshd ({why}); the rule's expectation ({want}) "
           "cannot be met by setting it. Remove the line(s) and drop the rule, or rewrite it "
           "on the option that replaced it.")
    rem = Remediation(how, (RELOAD,) if lines else (), manual=how)
    yield Result(Status.FAIL, kw.name, f"{head}. Effective: {shown}; expected {want}{note}",
                 expected=want, actual=shown, aspect=Aspect.CONFIG, evidence=ev,
                 remediation=rem)
