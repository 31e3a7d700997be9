"""``limits.configured``: what limits.conf and limits.d give each account, for any item.

``limits.effective`` follows one training user's login from the service's own limits through
every pam_limits call for nofile and memlock.  This check answers the policy question
benchmarks ask of *every* pam_limits item (``core``, ``nproc``, ``maxlogins``, ``stack``,
``as``, ``rtprio``, ...): "does every user get ``hard core 0``?".  It runs the scanned root's
pam_limits decision (:func:`aiaudit.linux.pam_limits.conf.decide`: domain ranks, same-rank last
wins, ``-`` type, no-limits lines, the Debian patches) over limits.conf then limits.d, once
per account of ``/etc/passwd`` plus "any other user" (a new account that only ``*`` and
uid-range lines could match), and compares the value the lines set with the rule's
expectation (:mod:`aiaudit.core.ruleset.predicates`, in limits.conf units: KiB for the size items,
minutes for ``cpu``; ``unlimited`` is above every number).

An account no line sets the item for keeps what its session inherits (PID 1's limits on
Debian before PAM 1.7, else the service's): that is reported as "not set", a failure unless
``unset: pass``.  Whether the login services load pam_limits at all is ``limits.pam_stack``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterator

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
from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.ruleset import predicates
from aiaudit.core.ruleset.predicates import Predicate
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.pam_limits import conf as lp

if TYPE_CHECKING:
    from aiaudit.checks.legacy_limits import PamBuild

ITEMS = (*lp.ITEMS, "maxlogins", "maxsyslogins")
"""Items this check compares (every rlimit pam_limits sets, and the login counts)."""
DROPIN = "/etc/security/limits.d/zz-aiaudit-policy.conf"
"""Where the fix's ``*`` line goes: limits.d files are read after limits.conf, in byte
order, and a ``*`` line only loses to user, uid-range and group lines."""
ANY_OTHER = "any other user"
OTHER_UID = 4294967294
"""uid of the stand-in for an account not yet in passwd (``(uid_t)-2``: above every range
a site writes, so only ``*`` and open ``N:`` ranges match it)."""
MAX_LISTED = 10
NSSWITCH = "/etc/nsswitch.conf"
"""Accounts named in a failure message (all are in ``data``)."""

_BOUND = {"oneOf": [{"type": ["integer", "number"]}, {"const": "unlimited"}]}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["item", "type"],
    "properties": {
        "item": {"enum": list(ITEMS), "description": "pam_limits item (limits.conf(5))"},
        "type": {"enum": ["soft", "hard"]},
        "users": {"oneOf": [{"const": "*"},
                            {"type": "array", "minItems": 1,
                             "items": {"type": "string", "minLength": 1,
                                       "pattern": "^[^\\s:]+$"}}],
                  "default": "*",
                  "description": "'*': every account of /etc/passwd (root only if "
                                 "include_root) and any other user; or these user names"},
        "include_root": {"type": "boolean", "default": False,
                         "description": "with users '*', also judge root (whom '*', "
                                        "@group and % lines never match on Debian)"},
        "unset": {"enum": ["fail", "pass", "skip"], "default": "fail",
                  "description": "outcome for an account no line sets the item for"},
        **predicates.schema_properties(
            {"type": ["integer", "string"]}, fields=False, bound=_BOUND),
    },
    **predicates.constraint_rules(fields=False),
}


def _unlimited(v: Any) -> Any:
    return math.inf if str(v).strip().lower() in lp.UNLIMITED_WORDS else v


def conf_units(item: str, value: int) -> int | float:
    """An rlimit value as limits.conf writes it (KiB, minutes; ``inf`` for unlimited)."""
    if value == lp.RLIM_INFINITY:
        return math.inf
    if item in lp.KIB_ITEMS:
        return value // 1024
    if item == "cpu":
        return value // 60
    return value


def _spell(v: int | float) -> str:
    return "unlimited" if v == math.inf else str(int(v))


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result: the accounts whose limit misses the expectation, with the deciding
    lines; or every account holding it."""
    from aiaudit.checks.legacy_limits import (
        limits_file_evidence,
        limits_files,
        pam_build,
        subject_for,
    )

    from aiaudit.linux.accounts.users import PASSWD_MISSING, accounts, accounts_error_evidence

    p = ctx.params
    item, side = str(p["item"]), str(p["type"])
    idx = 0 if side == "soft" else 1
    subject = f"{side} {item}"
    pred = Predicate.from_params(p, _unlimited)
    want = pred.text().replace("inf", "unlimited")
    host = ctx.host
    try:
        acc = accounts(host)
    except NotFound:
        yield Result(Status.ERROR, subject, "etc/passwd is missing: users cannot be resolved",
                     evidence=(PASSWD_MISSING,))
        return
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, subject, f"cannot read users: {exc}",
                     evidence=(accounts_error_evidence(exc),))
        return
    build = pam_build(host)
    files, notes = limits_files(host, build, None)
    variant = lp.Variant(debian_root=build.debian, nr_open=None)
    users = p.get("users", "*")
    people: list[pw.Account] = []
    if users == "*":
        people = [a for a in acc.db.accounts if a.uid != 0 or p.get("include_root")]
        people.append(pw.Account(ANY_OTHER, OTHER_UID, OTHER_UID))
    else:
        for name in users:
            a = acc.db.user(name)
            if a is None:
                yield Result(Status.ERROR, name, f"{name} is not in etc/passwd",
                             evidence=(Evidence.file("/etc/passwd"),))
                return
            people.append(a)
    bad: list[tuple[str, str, Evidence | None]] = []
    unknown: list[str] = []
    uncertain: list[lp.Line] = []
    """Lines whose group domain the files cannot decide for some account."""
    unset: list[str] = []
    deciders: dict[str, Evidence] = {}
    nolimits: dict[str, Evidence] = {}
    """The ``<domain> -`` lines that leave an account unset."""
    per_user: dict[str, str] = {}
    for a in dict.fromkeys(people):
        dec = lp.decide(files, subject_for(acc, a), {}, variant, items=(item,))
        if dec.status == "failed":
            # the file pam_limits cannot read, and the PAM build that makes it fatal
            fev = [limits_file_evidence(host, path, got) for path, got in files
                   if isinstance(got, str)]
            yield Result(Status.FAIL, subject, f"pam_limits refuses every session: "
                         f"{dec.reason}", expected=want, actual="sessions refused",
                         aspect=Aspect.CONFIG,
                         evidence=(*fev[:1], Evidence.default("pam_limits build", build.note)),
                         remediation=Remediation(
                             "Make pam_limits succeed: restore /etc/security/limits.conf and "
                             "remove dangling or unreadable files from limits.d."))
            return
        if dec.uncertain:
            unknown.append(a.name)
            uncertain += [ln for ln in dec.uncertain if ln not in uncertain]
            continue
        got = dec.limits.get(item) if dec.status == "applied" else None
        if got is None:
            nl = dec.nolimits_line
            why = (f"'{nl.raw}' at {nl.where} sets no limits" if nl is not None
                   else "no line sets it")
            per_user[a.name] = f"not set ({why})"
            unset.append(a.name)
            if nl is not None:
                nolimits.setdefault(nl.where, Evidence.file(nl.file, nl.line, nl.raw))
            continue
        sd = got[idx]
        value = conf_units(item, sd.value)
        ev = Evidence.file(sd.line.file, sd.line.line, sd.line.raw) if sd.line else None
        if ev is not None:
            deciders.setdefault(ev.source, ev)
        per_user[a.name] = _spell(value) + (f" ({ev.source})" if ev else "")
        try:
            holds = pred.ok(value)
        except ValueError as exc:
            yield Result(Status.ERROR, subject, f"cannot compare: {exc}", expected=want,
                         evidence=(ev,) if ev else ())
            return
        if not holds:
            bad.append((a.name, _spell(value), ev))
    outcome = str(p.get("unset", "fail"))
    failing = bad + ([(n, "not set", None) for n in unset] if outcome == "fail" else [])
    data = {"values": per_user, "unknown": unknown}
    note = "".join(f"; {n}" for n in notes)
    who = "every account" if users == "*" else ", ".join(users)
    ev_all = tuple(deciders.values())
    if failing:
        listed = "; ".join(f"{n} {v}" + (f" ({e.source})" if e else "")
                           for n, v, e in failing[:MAX_LISTED])
        more = f" and {len(failing) - MAX_LISTED} more" if len(failing) > MAX_LISTED else ""
        line = f"* {side} {item} {_fix_value(pred)}" if users == "*" else None
        rem = Remediation(
            f"Set {side} {item} so that it is {want} for {who}"
            + (f" in {DROPIN}, and remove or change the lines that give some users "
               "another value (a user, uid-range or @group line beats '*')"
               if line else "") + ".",
            (Snippet.file(DROPIN, line + "\n", f"{side} {item} for every user"),)
            if line and _fix_value(pred) != "?" else ())
        evidence = tuple(e for _, _, e in failing if e)
        if outcome == "fail" and unset:
            evidence += _unset_evidence(host, files, build, side, item, unset,
                                        list(nolimits.values()))
        yield Result(Status.FAIL, subject, f"{len(failing)} of {len(per_user)} accounts "
                     f"miss {side} {item} {want}: {listed}{more}{note}", expected=want,
                     actual=failing[0][1], aspect=Aspect.CONFIG,
                     evidence=evidence or ev_all, data=data, remediation=rem)
        return
    if unknown:
        yield Result(Status.ERROR, subject, "group membership cannot be decided from the "
                     f"files for {', '.join(unknown[:MAX_LISTED])} (groups also come from "
                     f"{', '.join(acc.remote_group)})", expected=want, data=data,
                     evidence=(*(Evidence.file(ln.file, ln.line, ln.raw) for ln in uncertain[:3]),
                               Evidence.file(NSSWITCH, None, "group sources: "
                                             + ", ".join(acc.remote_group))
                               if host.is_file(NSSWITCH) else
                               Evidence.default("group sources", ", ".join(acc.remote_group))))
        return
    if unset and outcome == "skip" and not bad and len(unset) == len(per_user):
        yield Result(Status.SKIP, subject, f"no line sets {side} {item}{note}", data=data)
        return
    src = ", ".join(deciders) or "no line (unset: pass)"
    yield Result(Status.PASS, subject, f"{who} ({len(per_user)} accounts) get {side} {item} "
                 f"{want} ({src}){note}", expected=want,
                 actual=next(iter(per_user.values()), None), aspect=Aspect.CONFIG,
                 evidence=ev_all, data=data)


def _unset_evidence(host: Host, files: list[tuple[str, list[lp.Line] | str]],
                    build: PamBuild, side: str, item: str, unset: list[str],
                    nolimits: list[Evidence]) -> tuple[Evidence, ...]:
    """Why ``unset`` accounts get no ``side item``: the ``<domain> -`` lines that set no
    limits for them, each file pam_limits read (none of its lines sets the item for them),
    and, as a ``default``, where the files were looked for and what the session keeps."""
    from aiaudit.checks.legacy_limits import limits_file_evidence, limits_search

    names = ", ".join(unset[:MAX_LISTED]) + (" and more" if len(unset) > MAX_LISTED else "")
    read = [path for path, got in files if not isinstance(got, str)]
    out = list(nolimits)
    out += [limits_file_evidence(host, path, f"no line sets {side} {item} for {names}")
            for path in read[:MAX_LISTED]]
    keeps = ("PID 1's limit (Debian pam_limits before 1.7 starts from /proc/1/limits)"
             if build.kernel_start else "the limit the login service starts with")
    out.append(Evidence.default(
        f"pam_limits files: {limits_search(build)}",
        f"{len(read)} read, no line sets {side} {item} for {names}: the session keeps "
        f"{keeps}"))
    return tuple(out)


def _fix_value(pred: Predicate) -> str:
    v = pred.suggest(None)
    if v is None:
        return "?"
    return "unlimited" if v == "inf" else v


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``limits.configured``."""
    return [CheckSpec(
        id="limits.configured",
        title="Every account gets a pam_limits value within bounds",
        run=run, params_schema=SCHEMA,
        description=(
            "Runs the scanned root's pam_limits decision over limits.conf and limits.d (byte "
            "order) for every account of /etc/passwd and any other user ('*' view), or for "
            "the named users, for any item (core, nproc, maxlogins, stack, as, rtprio...), "
            "and compares the soft or hard value the lines set (limits.conf units) with the "
            "expectation.  Domain ranks, '-' type, no-limits lines and the Debian patches "
            "(root is not matched by '*' or @group) as pam_limits decides; an account no "
            "line covers is 'not set'."),
    )]
