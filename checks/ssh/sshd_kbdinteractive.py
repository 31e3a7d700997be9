"""``ssh.sshd_kbdinteractive``: keyboard-interactive authentication cannot be used for passwords.

With ``UsePAM yes``, keyboard-interactive authentication runs the PAM auth stack, which asks
for the account password (sshd_config(5) ``UsePAM``, ``KbdInteractiveAuthentication``): a
password login path even when ``PasswordAuthentication`` is no.

Gather: the effective configuration as sshd computes it (:mod:`aiaudit.linux.sshd.config`,
shared per run by :mod:`aiaudit.linux.sshd.effective`): ``KbdInteractiveAuthentication``
(``ChallengeResponseAuthentication`` is its alias), ``UsePAM`` and ``AuthenticationMethods``,
globally and for each ``Match`` block that sets the keyword
(:func:`aiaudit.linux.sshd.results.evaluate`).  Decide (:func:`decide`): pass when it is
off, when UsePAM is no, or (``allow_second_factor``) when every AuthenticationMethods list
that offers keyboard-interactive also needs another method than passwords (auth2.c
``auth2_methods_valid``).  The fix is checked by re-evaluating the configuration
(:mod:`aiaudit.linux.sshd.fix`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Status,
    hookimpl,
)
from aiaudit.core.errors import ParseError
from aiaudit.linux.sshd.effective import Passes, load_config, passes
from aiaudit.linux.sshd.fix import RELOAD, remediation
from aiaudit.linux.sshd.results import (
    BLOCK_ERROR,
    block_subject,
    error_result,
    evaluate,
    evidence,
    version_note,
)

if TYPE_CHECKING:  # the parser is imported once there is a configuration to parse
    from aiaudit.linux.sshd import config as sp

SUBJECT = "KbdInteractiveAuthentication"
WANT = "no (or UsePAM no)"

KBD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "allow_second_factor": {
            "type": "boolean", "default": True,
            "description": "pass when AuthenticationMethods only allows keyboard-interactive "
                           "after another method (e.g. publickey,keyboard-interactive MFA)"},
    },
}


# ------------------------------------------------------------------ decide
def second_factor_only(methods: str) -> bool:
    """True if every AuthenticationMethods list that offers keyboard-interactive also needs
    a method other than passwords (``publickey,keyboard-interactive``)."""
    if methods in ("any", ""):
        return False
    for lst in methods.split():
        names = {m.split(":", 1)[0] for m in lst.split(",")}
        if "keyboard-interactive" in names and names <= {"keyboard-interactive", "password"}:
            return False
    return True


def decide(kbd: sp.Setting, pam: sp.Setting, methods: sp.Setting,
           allow_2fa: bool) -> tuple[Status, str, bool]:
    """(PASS or FAIL, why, whether AuthenticationMethods decided) for one connection
    class."""
    if kbd.value == "no":
        return Status.PASS, f"keyboard-interactive authentication is off ({kbd.source})", \
            False
    if pam.value != "yes":
        return Status.PASS, (f"KbdInteractiveAuthentication is yes ({kbd.source}) but UsePAM "
                             f"is {pam.value} ({pam.source}): no PAM conversation can ask "
                             "for a password"), False
    if allow_2fa and methods.value and second_factor_only(methods.value):
        return Status.PASS, ("keyboard-interactive is only a further factor "
                             f"(AuthenticationMethods {methods.value}, {methods.source})"), True
    return Status.FAIL, (f"KbdInteractiveAuthentication is yes ({kbd.source}) with UsePAM "
                         f"yes ({pam.source}): PAM asks for the password over "
                         "keyboard-interactive, so password logins work even with "
                         "PasswordAuthentication no"), False


# ------------------------------------------------------------------ results
def result(cfg: sp.SshdConfig, block: sp.MatchBlock | None, kbd: sp.Setting,
           pam: sp.Setting, methods: sp.Setting, allow_2fa: bool, note: str) -> Result:
    """The result for the global setting (``block`` ``None``) or a Match block's."""
    name = SUBJECT if block is None else block_subject(block)
    ev: tuple[Evidence, ...] = (*evidence(kbd), *evidence(pam))
    status, msg, by_methods = decide(kbd, pam, methods, allow_2fa)
    actual = "no" if kbd.value == "no" else "yes"
    if status is Status.PASS:
        if by_methods:
            ev = (*ev, *evidence(methods))
        return Result(Status.PASS, name, msg + note, expected=WANT, actual=actual,
                      aspect=Aspect.CONFIG, evidence=ev)
    if block is None:
        rem = remediation(cfg, kbd, f"{SUBJECT} no", lambda x: x.value == "no")
    else:
        msg = f"connections matching this block: {msg}"
        how = (f"Change {kbd.source} to `{SUBJECT} no`: a matching Match block "
               "overrides global values.")
        rem = Remediation(how, (RELOAD,), manual=how)
    return Result(Status.FAIL, name, msg + note, expected=WANT, actual="yes",
                  aspect=Aspect.CONFIG, evidence=ev, remediation=rem)


def run_kbd(ctx: CheckContext) -> Iterator[Result]:
    """Keyboard-interactive authentication is off, or harmless (no PAM, or only a second
    factor after a key)."""
    loaded = load_config(ctx.host)
    if loaded.skip:
        yield Result(Status.SKIP, SUBJECT, loaded.skip)
        return
    if loaded.config is None:
        assert loaded.error is not None
        yield error_result(loaded.error, SUBJECT)
        return
    cfg = loaded.config
    note = version_note(ctx.host)
    allow_2fa = bool(ctx.params.get("allow_second_factor", True))
    shared: Passes = passes(ctx.host, cfg)
    try:
        pam = shared.value("UsePAM")
        items = list(evaluate(shared, SUBJECT, True))
    except ParseError as exc:
        yield error_result(exc, SUBJECT)
        return
    for block, s in items:
        if isinstance(s, ParseError):
            yield error_result(s, SUBJECT if block is None else block_subject(block),
                               BLOCK_ERROR)
            continue
        methods = shared.value("AuthenticationMethods", block)
        yield result(cfg, block, s, pam, methods, allow_2fa, note)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``ssh.sshd_kbdinteractive``."""
    return [CheckSpec(
        id="ssh.sshd_kbdinteractive",
        title="Keyboard-interactive authentication cannot be used for passwords",
        run=run_kbd,
        params_schema=KBD_SCHEMA,
        description=(
            "With UsePAM yes, keyboard-interactive authentication runs the PAM auth "
            "stack, which asks for the password (sshd_config(5) UsePAM): a password "
            "login path even when PasswordAuthentication is no.  Passes when it is off, "
            "when UsePAM is no, or (optionally) when AuthenticationMethods only allows "
            "it after another method."),
    )]
