"""``limits.configured``: what limits.conf and limits.d give each account, for any item.

``limits.effective`` follows one training user's login from the service's own limits through
every pam_limits call for nofile and memlock.  This check answers the policy question
benchmarks ask of *every* pam_limits item (``core``, ``nproc``, ``maxlogins``, ``stack``,
``as``, ``rtprio``, ...): "does every user get ``hard core 0``?".  It runs the scanned root's
pam_limits decision (:func:`aiaudit.linux.pam_limits.conf.decide`: domain ranks, same-rank last
wins, ``-`` type, no-limits lines, the Debian patches) over limits.conf then limits.d
(:func:`aiaudit.linux.pam_limits.files.limits_files`), once per account of ``/etc/passwd``
plus "any other user" (a new account that only ``*`` and uid-range lines could match), and
compares the value the lines set with the rule's expectation
(:mod:`aiaudit.core.ruleset.predicates`, in limits.conf units: KiB for the size items, minutes
for ``cpu``; ``unlimited`` is above every number).

Live (the real ``/``), named users and every group membership are looked up through NSS as
pam_limits does (``getpwnam``, ``getgrnam``, ``getgrouplist``), so directory users and groups
(sssd, LDAP) are decided; offline a named user the files lack while nsswitch.conf names
other sources is "could not look" (an error).

An account no line sets the item for keeps what its session inherits (PID 1's limits on
Debian before PAM 1.7, else the service's): that is reported as "not set", a failure unless
``unset: pass``.  Whether the login services load pam_limits at all is ``limits.pam_stack``.

Sources: limits.conf(5), pam_limits(8), ``modules/pam_limits/pam_limits.c`` (checked against
the real module in ``tests/oracle``).
"""

from __future__ import annotations

import math
from dataclasses import field
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
from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.ruleset import predicates
from aiaudit.core.ruleset.predicates import Predicate
from aiaudit.core.startup.records import record
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts.users import (
    PASSWD_MISSING,
    Accounts,
    accounts,
    accounts_error_evidence,
    lookup_accounts,
    nsswitch_evidence,
)
from aiaudit.linux.pam_limits import conf as lp
from aiaudit.linux.pam_limits.conf import subject_for
from aiaudit.linux.pam_limits.files import (
    PamBuild,
    Read,
    limits_file_evidence,
    limits_files,
    limits_search,
    pam_build,
)
from aiaudit.linux.pam_limits.shadowed import data as shadow_data
from aiaudit.linux.pam_limits.shadowed import evidence as shadow_evidence
from aiaudit.linux.pam_limits.shadowed import lost as lost_sides
from aiaudit.linux.pam_limits.shadowed import winning_dropin

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
    **predicates.constraint_rules(fields=False, ordered=predicates.ordered_value(
        [{"type": "string", "pattern": "^\\s*([Uu]nlimited|UNLIMITED|[Ii]nfinity|INFINITY|-)"
                                       "\\s*$"}], "a number or unlimited")),
}


def _unlimited(v: Any) -> Any:
    return math.inf if str(v).strip().lower() in lp.UNLIMITED_WORDS else v


def _spell(v: int | float) -> str:
    return "unlimited" if v == math.inf else str(int(v))


@record
class Ask:
    """The rule: which side of which item, and the predicate on its value."""

    item: str
    side: str
    pred: Predicate
    want: str
    """The predicate as text (``<= 0``, ``>= unlimited``)."""

    @property
    def idx(self) -> int:
        """0 for the soft side, 1 for the hard one."""
        return 0 if self.side == "soft" else 1

    @property
    def subject(self) -> str:
        """``hard core``."""
        return f"{self.side} {self.item}"


@record(frozen=False)
class Tally:
    """What the lines give each account, sorted into the verdict's piles."""

    bad: list[tuple[str, str, Evidence | None]] = field(default_factory=list)
    """(account, value, deciding line) of the values that miss the expectation."""
    unknown: list[str] = field(default_factory=list)
    uncertain: list[lp.Line] = field(default_factory=list)
    """Lines whose group domain the files cannot decide for some account."""
    unset: list[str] = field(default_factory=list)
    deciders: dict[str, Evidence] = field(default_factory=dict)
    nolimits: dict[str, Evidence] = field(default_factory=dict)
    """The ``<domain> -`` lines that leave an account unset."""
    per_user: dict[str, str] = field(default_factory=dict)
    shadowed: list[lp.Shadow] = field(default_factory=list)
    """Lines the failing accounts' deciding lines overrode (pam_limits order and rank)."""
    domains: list[str] = field(default_factory=list)
    """Domains of the lines that decide a failing value (not ``*``): a fix line for each,
    read last, wins at the same rank."""

    def add(self, name: str, dec: lp.Decision, ask: Ask) -> Result | None:
        """Sort one account's decision; an error result when its value cannot be
        compared."""
        if dec.uncertain:
            self.unknown.append(name)
            self.uncertain += [ln for ln in dec.uncertain if ln not in self.uncertain]
            return None
        got = dec.limits.get(ask.item) if dec.status == "applied" else None
        if got is None:
            self._add_unset(name, dec.nolimits_line)
            return None
        sd = got[ask.idx]
        value = lp.conf_units(ask.item, sd.value)
        ev = Evidence.file(sd.line.file, sd.line.line, sd.line.raw) if sd.line else None
        if ev is not None:
            self.deciders.setdefault(ev.source, ev)
        self.per_user[name] = _spell(value) + (f" ({ev.source})" if ev else "")
        try:
            holds = ask.pred.ok(value)
        except ValueError as exc:
            return Result(Status.ERROR, ask.subject, f"cannot compare: {exc}",
                          expected=ask.want, evidence=(ev,) if ev else ())
        if not holds:
            self.bad.append((name, _spell(value), ev))
            self._add_overridden(dec, ask, sd)
        return None

    def _add_overridden(self, dec: lp.Decision, ask: Ask, sd: lp.Side) -> None:
        """Note what a failing account's value overrode, and the domain a fix must use."""
        known = {(x.line.file, x.line.line) for x in self.shadowed}
        self.shadowed += [x for x in lost_sides(dec.shadowed, ask.item, ask.side)
                          if (x.line.file, x.line.line) not in known]
        if sd.line is not None and sd.line.domain != "*" \
                and sd.line.domain not in self.domains:
            self.domains.append(sd.line.domain)

    def _add_unset(self, name: str, nl: lp.Line | None) -> None:
        why = f"'{nl.raw}' at {nl.where} sets no limits" if nl is not None else "no line sets it"
        self.per_user[name] = f"not set ({why})"
        self.unset.append(name)
        if nl is not None:
            self.nolimits.setdefault(nl.where, Evidence.file(nl.file, nl.line, nl.raw))


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result: the accounts whose limit misses the expectation, with the deciding
    lines; or every account holding it."""
    p, host = ctx.params, ctx.host
    pred = Predicate.from_params(p, _unlimited)
    ask = Ask(str(p["item"]), str(p["type"]), pred, pred.text().replace("inf", "unlimited"))
    try:
        accounts(host)  # the files (every account of the '*' view)
    except NotFound:
        yield Result(Status.ERROR, ask.subject, "etc/passwd is missing: users cannot be "
                     "resolved", evidence=(PASSWD_MISSING,))
        return
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, ask.subject, f"cannot read users: {exc}",
                     evidence=(accounts_error_evidence(exc),))
        return
    acc = lookup_accounts(host)  # live: NSS decides users and group memberships
    try:
        yield _judged(host, acc, ask, p)
    except HostError as exc:  # NSS did not answer
        yield Result(Status.ERROR, ask.subject, f"could not look up users or groups: {exc}",
                     expected=ask.want, evidence=(nsswitch_evidence(host, "passwd"),
                                                  nsswitch_evidence(host, "group")))


def _judged(host: Host, acc: Accounts, ask: Ask, p: Mapping[str, Any]) -> Result:
    """The rule's result once the accounts can be read."""
    build = pam_build(host)
    files, notes = limits_files(host, build, None)
    people, missing = judged_accounts(acc.db, p.get("users", "*"), bool(p.get("include_root")))
    if missing is not None:
        return _missing(host, acc, missing)
    variant = lp.Variant(debian_root=build.debian, nr_open=None)
    tally = Tally()
    for a in dict.fromkeys(people):
        dec = lp.decide(files, _subject(acc, a), {}, variant, items=(ask.item,))
        if dec.status == "failed":
            return _refused(host, files, build, ask, dec)
        err = tally.add(a.name, dec, ask)
        if err is not None:
            return err
    return verdict(host, acc, files, build, notes, ask, p, tally)


def _subject(acc: Accounts, a: pw.Account) -> lp.Subject:
    """pam_limits' view of ``a``; the "any other user" stand-in is in no group when NSS
    decides (it names no account a directory could be asked about)."""
    if a.name == ANY_OTHER and acc.db.nss is not None:
        return lp.Subject(a.name, a.uid, a.gid, in_group=lambda _n: False,
                          in_gid=lambda _g: False)
    return subject_for(acc, a)


def _missing(host: Host, acc: Accounts, name: str) -> Result:
    """A user the rule names that the system does not know, or an offline scan cannot
    look up (NSS sources beyond the files would decide)."""
    ns = nsswitch_evidence(host, "passwd")
    if acc.db.nss is not None:
        return Result(Status.ERROR, name, f"{name} does not exist on this host: NSS "
                      f"({' '.join((ns.value or ns.source).split())}) knows no such user",
                      evidence=(ns,))
    if acc.remote_passwd:
        return Result(Status.ERROR, name, f"could not look: {name} is not in etc/passwd, and "
                      f"NSS sources beyond the files ({', '.join(acc.remote_passwd)}) would "
                      "decide; an offline scan cannot ask them", evidence=(ns,))
    return Result(Status.ERROR, name, f"{name} is not in etc/passwd",
                  evidence=(Evidence.file("/etc/passwd"),))


def judged_accounts(db: pw.Database, users: Any, include_root: bool
                    ) -> tuple[list[pw.Account], str | None]:
    """The accounts to judge: every one of passwd (root only with ``include_root``) and the
    "any other user" stand-in for ``*``, else the named ones; second value: a named user
    passwd lacks."""
    if users == "*":
        people = [a for a in db.accounts if a.uid != 0 or include_root]
        people.append(pw.Account(ANY_OTHER, OTHER_UID, OTHER_UID))
        return people, None
    people = []
    for name in users:
        a = db.user(name)
        if a is None:
            return people, name
        people.append(a)
    return people, None


def _refused(host: Host, files: list[tuple[str, Read]], build: PamBuild, ask: Ask,
             dec: lp.Decision) -> Result:
    """pam_limits cannot read a file: every session fails.  The evidence names that file
    and the PAM build that makes it fatal."""
    fev = [limits_file_evidence(host, path, got) for path, got in files if isinstance(got, str)]
    return Result(Status.FAIL, ask.subject, f"pam_limits refuses every session: "
                  f"{dec.reason}", expected=ask.want, actual="sessions refused",
                  aspect=Aspect.CONFIG,
                  evidence=(*fev[:1], Evidence.default("pam_limits build", build.note)),
                  remediation=Remediation(
                      "Make pam_limits succeed: restore /etc/security/limits.conf and "
                      "remove dangling or unreadable files from limits.d."))


def verdict(host: Host, acc: Accounts, files: list[tuple[str, Read]], build: PamBuild,
            notes: list[str], ask: Ask, p: Mapping[str, Any], tally: Tally) -> Result:
    """FAIL (accounts off the mark, or unset ones with ``unset: fail``), ERROR (group
    membership unknown), SKIP (nothing set, ``unset: skip``) or PASS."""
    users = p.get("users", "*")
    outcome = str(p.get("unset", "fail"))
    data = {"values": tally.per_user, "unknown": tally.unknown}
    note = "".join(f"; {n}" for n in notes)
    if tally.bad or (tally.unset and outcome == "fail"):
        return _failed(host, files, build, note, ask, users, outcome, tally, data)
    if tally.unknown:
        return _unknown(host, acc, ask, tally, data)
    if tally.unset and outcome == "skip" and len(tally.unset) == len(tally.per_user):
        return Result(Status.SKIP, ask.subject, f"no line sets {ask.side} {ask.item}{note}",
                      data=data)
    who = "every account" if users == "*" else ", ".join(users)
    src = ", ".join(tally.deciders) or "no line (unset: pass)"
    return Result(Status.PASS, ask.subject, f"{who} ({len(tally.per_user)} accounts) get "
                  f"{ask.side} {ask.item} {ask.want} ({src}){note}", expected=ask.want,
                  actual=next(iter(tally.per_user.values()), None), aspect=Aspect.CONFIG,
                  evidence=tuple(tally.deciders.values()), data=data)


def _failed(host: Host, files: list[tuple[str, Read]], build: PamBuild, note: str, ask: Ask,
            users: Any, outcome: str, tally: Tally, data: dict[str, Any]) -> Result:
    failing = tally.bad + ([(n, "not set", None) for n in tally.unset]
                           if outcome == "fail" else [])
    listed = "; ".join(f"{n} {v}" + (f" ({e.source})" if e else "")
                       for n, v, e in failing[:MAX_LISTED])
    more = f" and {len(failing) - MAX_LISTED} more" if len(failing) > MAX_LISTED else ""
    evidence = tuple(dict.fromkeys(e for _, _, e in failing if e))
    deciding = {e.source for e in evidence}
    # a line that lost for one account but decides another's failing value is shown once,
    # as a decider
    shadows = [x for x in tally.shadowed if x.line.where not in deciding]
    if shadows:
        evidence += shadow_evidence(shadows)
        data["overridden"] = shadow_data(shadows)
    if outcome == "fail" and tally.unset:
        evidence += _unset_evidence(host, files, build, ask, tally.unset,
                                    list(tally.nolimits.values()))
    return Result(Status.FAIL, ask.subject, f"{len(failing)} of {len(tally.per_user)} "
                  f"accounts miss {ask.side} {ask.item} {ask.want}: {listed}{more}{note}",
                  expected=ask.want, actual=failing[0][1], aspect=Aspect.CONFIG,
                  evidence=evidence or tuple(tally.deciders.values()), data=data,
                  remediation=_fix(host, ask, users, tally))


def _fix(host: Host, ask: Ask, users: Any, tally: Tally) -> Remediation:
    """Lines in a limits.d file read after every other one: ``*`` (for ``users: '*'``)
    and, for each user, uid-range or @group line that decides a failing value, a line of
    the same domain (same rank, read last: it wins; a ``*`` line never beats those)."""
    who = "every account" if users == "*" else ", ".join(users)
    value = _fix_value(ask.pred)
    domains = (["*"] if users == "*" else []) + tally.domains
    if users != "*":
        domains += [n for n, v, e in tally.bad if e is None and n not in domains]
        domains += [n for n in tally.unset if n not in domains]
    if value == "?" or not domains:
        return Remediation(f"Set {ask.side} {ask.item} so that it is {ask.want} for {who}.")
    target = winning_dropin(host, DROPIN)
    lines = "".join(f"{d} {ask.side} {ask.item} {value}\n" for d in domains)
    keeps = (" (it is read after every other limits.d file, and each line has the rank of "
             "the line it replaces: the last one read wins)" if tally.domains else
             " (read after every other limits.d file)")
    return Remediation(
        f"Set {ask.side} {ask.item} {value} for {who} in {target}{keeps}.",
        (Snippet.file(target, lines, f"{ask.side} {ask.item} for {who}"),))


def _unknown(host: Host, acc: Accounts, ask: Ask, tally: Tally, data: dict[str, Any]
             ) -> Result:
    """Group membership decides and the files cannot tell it: the lines and the sources."""
    sources = ", ".join(acc.remote_group)
    return Result(Status.ERROR, ask.subject, "group membership cannot be decided from the "
                  f"files for {', '.join(tally.unknown[:MAX_LISTED])} (groups also come from "
                  f"{sources})", expected=ask.want, data=data,
                  evidence=(*(Evidence.file(ln.file, ln.line, ln.raw)
                              for ln in tally.uncertain[:3]),
                            nsswitch_evidence(host, "group")))


def _unset_evidence(host: Host, files: list[tuple[str, Read]], build: PamBuild, ask: Ask,
                    unset: list[str], nolimits: list[Evidence]) -> tuple[Evidence, ...]:
    """Why ``unset`` accounts get no ``side item``: the ``<domain> -`` lines that set no
    limits for them, each file pam_limits read (none of its lines sets the item for them),
    and, as a ``default``, where the files were looked for and what the session keeps."""
    side, item = ask.side, ask.item
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
