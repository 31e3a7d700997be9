"""``limits.effective``: the soft or hard nofile/memlock a login of the training user gets.

For each login service (sshd by default) the session's limit is computed exactly as the
scanned root's pam_limits build decides (:mod:`aiaudit.linux.pam_limits.session`): whether
the service's PAM session stack loads pam_limits (and, for sshd, ``UsePAM``), the module's
``conf=`` argument, limits.conf then limits.d in strcmp order, domain ranks, the ``-`` type,
"no limits" lines, Debian's patches (root not matched by ``*``/``@group``; starting values
from /proc/1/limits with soft nofile capped at 1024 before PAM 1.7) and the limits the
service itself runs with when pam_limits leaves a limit alone.  The value is then compared
with the rule's ``min`` (and ``max``), in limits.conf units.

The user and its groups are resolved as pam_limits resolves them
(:func:`aiaudit.linux.accounts.users.training_user`): live through NSS (``getpwnam``,
``getgrnam``, ``getgrouplist``; a directory user of sssd/LDAP is judged like a local one,
each lookup bounded in time), offline from the root's files, where a user the files lack
while nsswitch.conf names other sources is an error ("could not look"), never a skip.

Sources: pam_limits(8), limits.conf(5), ``modules/pam_limits/pam_limits.c`` (Debian 12 build,
checked against the real module in ``tests/oracle``), sshd_config(5) ``UsePAM``.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts.users import Accounts, training_user
from aiaudit.linux.pam_limits import conf as lp
from aiaudit.linux.pam_limits.files import LIMITS_D
from aiaudit.linux.pam_limits.session import DROPIN, Effective, effective
from aiaudit.linux.pam_limits.shadowed import data as shadow_data
from aiaudit.linux.pam_limits.shadowed import evidence as shadow_evidence
from aiaudit.linux.pam_limits.shadowed import lost as lost_sides
from aiaudit.linux.pam_limits.stack import not_applicable
from aiaudit.linux.pam_limits.start import ITEM_KEYS

MIN_SCHEMA = {"oneOf": [{"type": "integer", "minimum": 0}, {"const": "unlimited"}]}
SERVICES_SCHEMA = {"type": "array", "items": {"type": "string",
                                              "pattern": "^[A-Za-z0-9_.@+-]+$"},
                   "minItems": 1, "default": ["sshd"],
                   "description": "PAM services that start training sessions"}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["item", "type"],
    "properties": {
        "item": {"enum": list(ITEM_KEYS),
                 "aiaudit_message": "limits.effective follows one user's login for nofile "
                                    "and memlock only; for any other pam_limits item (core, "
                                    "nproc, stack, as, maxlogins...) use check "
                                    "limits.configured (what limits.conf and limits.d give "
                                    "every account)"},
        "type": {"enum": ["soft", "hard"]},
        "min": {**MIN_SCHEMA, "description": "least acceptable value (count for nofile, KiB for "
                "memlock as in limits.conf, or 'unlimited')"},
        "max": {**MIN_SCHEMA, "description": "greatest acceptable value (same units; "
                "'unlimited' allows any)"},
        "services": SERVICES_SCHEMA,
    },
}
DEFAULT_MIN: dict[str, int | str] = {"nofile": 65536, "memlock": "unlimited"}
"""``min`` when the rule gives none."""


@record
class Want:
    """What the rule asks of one side of one item."""

    item: str
    side: str
    least: int
    """``min`` in rlimit units (bytes for memlock)."""
    least_text: str
    """``min`` as limits.conf writes it (for the fix)."""
    most: int | None
    expected: str

    @property
    def idx(self) -> int:
        """0 for the soft side, 1 for the hard one."""
        return 0 if self.side == "soft" else 1

    def holds(self, value: int) -> bool:
        """``value`` is within ``min`` and ``max``."""
        return value >= self.least and (self.most is None or value <= self.most)


def want_of(p: Mapping[str, Any]) -> Want:
    """The rule's expectation from its params."""
    item = str(p["item"])
    m = p.get("min")
    if m is None:
        m = DEFAULT_MIN[item]
    least = lp.rlimit_value(item, m)
    exp = f">= {lp.fmt(least, item)}" if least != lp.RLIM_INFINITY else "unlimited"
    most = None if p.get("max") is None else lp.rlimit_value(item, p["max"])
    if most is not None and most != lp.RLIM_INFINITY:
        exp += f" and <= {lp.fmt(most, item)}"
    return Want(item, str(p["type"]), least, str(m), most, exp)


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per service: the soft or hard limit a session of the user gets."""
    want = want_of(ctx.params)
    user, acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None and acc is not None
    for service in ctx.params.get("services", ["sshd"]):
        yield service_result(ctx.host, acc, user, service, want)


def service_result(host: Host, acc: Accounts, user: pw.Account, service: str,
                   want: Want) -> Result:
    """The result for one service: gather its session's limits, then judge them."""
    subject, exp = f"{user.name}@{service}", want.expected
    why = not_applicable(host, service)
    if why is not None:
        return Result(Status.SKIP, subject, why, expected=exp, aspect=Aspect.CONFIG)
    try:
        eff = effective(host, acc, user, service)
    except (HostError, ParseError) as exc:
        return Result(Status.ERROR, subject, f"cannot evaluate: {exc}", expected=exp,
                      aspect=Aspect.CONFIG)
    if eff.status == "unknown":
        return Result(Status.ERROR, subject, eff.message, expected=exp,
                      aspect=Aspect.CONFIG, evidence=tuple(eff.evidence))
    if eff.status == "refused":
        return Result(Status.FAIL, subject, eff.message, expected=exp, actual="login refused",
                      aspect=Aspect.CONFIG, evidence=tuple(eff.evidence),
                      remediation=Remediation(
                          "Make pam_limits succeed: restore /etc/security/limits.conf (it "
                          "may be empty), fix the conf= path, remove dangling or "
                          "unreadable files from /etc/security/limits.d."))
    return judge(user, service, want, eff)


def judge(user: pw.Account, service: str, want: Want, eff: Effective) -> Result:
    """PASS or FAIL for a session whose limits are known."""
    item, side, idx = want.item, want.side, want.idx
    value = eff.values[item][idx]
    ev = (*tuple(eff.evidence), eff.deciders[item][idx]) if eff.deciders else \
        tuple(eff.evidence)
    data: dict[str, Any] = {"soft": lp.fmt(eff.values[item][0]),
                            "hard": lp.fmt(eff.values[item][1]),
            "service": service, "pam_limits": eff.pam_applies}
    actual = lp.fmt(value, item)
    head = f"{side} {item} of {user.name} via {service} is {actual}{_source(eff, item, idx)}"
    lost = [(ln, why) for ln, why in eff.ignored if ln.item == item][:3]
    lost_txt = ""
    if lost:
        lost_txt = " Ignored: " + "; ".join(f"{ln.where} '{ln.raw}' ({why})"
                                            for ln, why in lost) + "."
        ev = (*ev, *(Evidence.file(ln.file, ln.line, ln.raw) for ln, _ in lost))
    subject = f"{user.name}@{service}"
    if want.holds(value):
        return Result(Status.PASS, subject, f"{head}.{lost_txt} {eff.message}",
                      expected=want.expected, actual=actual, aspect=Aspect.CONFIG, evidence=ev,
                      data=data)
    ev = _with_overridden(ev, data, eff, item, side)
    return Result(Status.FAIL, subject,
                  f"{head}, expected {want.expected}.{lost_txt} {eff.message}",
                  expected=want.expected, actual=actual, aspect=Aspect.CONFIG, evidence=ev,
                  data=data, remediation=remediation(user, service, want, eff))


def _with_overridden(ev: tuple[Evidence, ...], data: dict[str, Any], eff: Effective,
                     item: str, side: str) -> tuple[Evidence, ...]:
    """A failure's evidence with the lines its side overrode (each saying why it lost,
    replacing its plain entry), listed in ``data["overridden"]`` too."""
    src, unit_lost = eff.start_overridden.get(item, ("", ()))
    if unit_lost and eff.deciders and eff.deciders[item][0 if side == "soft" else 1].source \
            == src:  # the service's own limit decides: its unit's lost assignments
        from aiaudit.linux.systemd import shadowed as unit_shadowed

        data["overridden"] = unit_shadowed.data(unit_lost)
        return (*ev, *unit_shadowed.evidence(unit_lost))
    shadows = lost_sides(eff.shadowed, item, side)
    if not shadows:
        return ev
    shown = shadow_evidence(shadows)
    data["overridden"] = shadow_data(shadows)
    sources = {x.source for x in shown}
    return (*(e for e in ev if e.source not in sources), *shown)


def _source(eff: Effective, item: str, idx: int) -> str:
    """`` (from SOURCE)``: what decided the value; for a clamped soft value, both lines."""
    src = eff.deciders.get(item, (None, None))[idx]
    if src is None:
        return ""
    if idx == 0 and item in eff.clamped:
        return (f" (clamped to the hard limit from {src.source}: the soft value from "
                f"{eff.clamped[item]} is higher)")
    return f" (from {src.source})"


def remediation(user: pw.Account, service: str, want: Want, eff: Effective) -> Remediation:
    """How to give the user the limit: load pam_limits, drop a no-limits line, or add a
    user line where pam_limits reads it last."""
    item, side, least_text = want.item, want.side, want.least_text
    if not eff.pam_applies:
        return Remediation(
            f"pam_limits does not run for {service}: add 'session required pam_limits.so' to "
            f"/etc/pam.d/{service}" + (" and set 'UsePAM yes' in /etc/ssh/sshd_config"
                                        if service == "sshd" else "") +
            f"; then set '{user.name} {side} {item} {least_text}' in {DROPIN}.")
    if eff.nolimits is not None:
        return Remediation(f"Remove the 'no limits' line '{eff.nolimits.raw}' at "
                           f"{eff.nolimits.where}: it discards every limit for {user.name}.")
    # A user line has the best rank: no '*' or '@group' line can override it, and among
    # user lines the last read wins, so the drop-in sorts last.  On Debian '*' lines never
    # apply to root, so root needs its own name anyway.
    lines = [f"{user.name} {side} {item} {least_text}"]
    if side == "soft" and eff.values[item][1] < want.least:
        lines.append(f"{user.name} hard {item} {least_text}")
    target = eff.conf_target or DROPIN
    note = (f" ({target} is the conf= file of pam_limits: limits.d is not read)"
            if not target.startswith(LIMITS_D + "/") else
            f" (read after every other limits.d file: among {user.name}'s lines the last "
            "read wins)")
    return Remediation(
        f"Raise {side} {item} for {user.name} in {target}{note}; new sessions get it.",
        (Snippet.file(target, "\n".join(lines) + "\n",
                      f"{side} {item} for {user.name} (a user line beats later '*' lines)"),))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``limits.effective``."""
    return [CheckSpec(
        id="limits.effective", title="The training user's session gets a resource limit",
        run=run, params_schema=SCHEMA,
        description=(
            "For each login service: whether pam_limits runs (PAM session stack, sshd "
            "UsePAM), then the soft/hard nofile or memlock it sets for the user exactly "
            "as the scanned root's pam_limits build does (conf=, limits.conf, limits.d in "
            "strcmp order, domain ranks, '-' type, no-limits lines, Debian patches), and "
            "the service's own limits where pam_limits leaves a value alone."))]
