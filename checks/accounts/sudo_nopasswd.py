"""``accounts.sudo_nopasswd``: sudo does not let the training user run *any* command as root
without a password.

sudoers is read and decided as sudo does (:mod:`aiaudit.linux.accounts.sudo`):
``/etc/sudoers`` with its includes, aliases expanded, user, host, runas and command lists
matched with the last matching item deciding and ``!`` negating, and, for an arbitrary
command, the last matching command specification in the whole policy winning.  ``NOPASSWD``
on that match or ``Defaults !authenticate`` applying to the user fails: any code running as
the training user is then root.  A policy sudo could not read (a syntax error, a missing
include) is an error, not a guess.

Sources: sudoers(5); sudo ``plugins/sudoers/toke.l``, ``gram.y``, ``sudoers_lookup``
(compared with the real sudo in the tests).
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import (
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts.sudo import Decision, hostname, policy, sudo_any_command
from aiaudit.linux.accounts.users import nsswitch_evidence, training_user

EXPECTED = "no NOPASSWD: ALL"


def run(ctx: CheckContext) -> Iterator[Result]:
    """FAIL when sudo lets the training user run any command as root without a password."""
    user, acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None and acc is not None
    host = ctx.host
    pol = policy(host)
    if pol is None:
        yield Result(Status.PASS, user.name, "sudo is not configured (no etc/sudoers)",
                     expected=EXPECTED, actual="no sudoers")
        return
    if pol.problems:
        yield Result(Status.ERROR, user.name, "sudoers cannot be evaluated as sudo would: "
                     + "; ".join(pol.problems[:3]),
                     evidence=tuple(Evidence.file(f) for f in pol.files[:4]))
        return
    try:
        dec = sudo_any_command(pol, user, acc.db, hostname(host))
    except HostError as exc:  # NSS did not answer a group lookup
        yield Result(Status.ERROR, user.name, f"could not look up the groups of {user.name}: "
                     f"{exc}", evidence=(nsswitch_evidence(host, "group"),))
        return
    yield judge(user, dec)


def judge(user: pw.Account, dec: Decision) -> Result:
    """FAIL for a password-less ALL, else PASS saying what sudo decides."""
    spec, path = dec.spec, dec.file
    ev = (Evidence.file(path, spec.line, spec.text),) if spec is not None and path else ()
    where = f" ({path.lstrip('/')}:{spec.line})" if spec is not None and path else ""
    if dec.outcome == "nopasswd":
        why = ("Defaults !authenticate applies" if dec.auth_off else "NOPASSWD")
        return Result(Status.FAIL, user.name, f"{user.name} may run any command as root "
                      f"without a password ({why}){where}: any code running as the training "
                      "user (a pickled checkpoint, a dependency) is root", expected="password "
                      "required or no ALL", actual="NOPASSWD: ALL", evidence=ev,
                      remediation=Remediation(
                          "Remove NOPASSWD (and !authenticate) from the rule granting ALL, or "
                          "limit the NOPASSWD rule to the few commands the user needs; edit "
                          "with visudo.", manual="edit the line named in the evidence with "
                          "`visudo -f FILE`"))
    msgs = {"passwd": f"{user.name} may run any command as root only with a password{where}",
            "denied": f"the last rule matching {user.name} denies arbitrary commands{where}",
            "none": f"no sudoers rule lets {user.name} run arbitrary commands as root"}
    return Result(Status.PASS, user.name, msgs[dec.outcome], expected=EXPECTED,
                  actual=dec.outcome, evidence=ev)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``accounts.sudo_nopasswd``."""
    return [CheckSpec(
        id="accounts.sudo_nopasswd",
        title="sudo asks the training user for a password",
        run=run,
        params_schema={"type": "object", "additionalProperties": False},
        description="sudoers with includes, aliases and Defaults, evaluated for an "
                    "arbitrary command run as root: last match wins; NOPASSWD or "
                    "!authenticate on that match fails.")]
