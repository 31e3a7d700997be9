"""What one login of a user through a PAM service gets: the effective nofile and memlock.

A session starts with the limits of the process that opens it (:func:`~aiaudit.linux.
pam_limits.start.service_limits`).  If sshd runs PAM (``UsePAM``) and the service's session
stack loads pam_limits (:mod:`~aiaudit.linux.pam_limits.stack`), every ``pam_limits.so``
line runs in turn, each starting from what the previous one left (Debian before 1.7 and
``set_all``: from PID 1's limits, soft nofile capped at ``FD_SETSIZE``), reading its files
(:mod:`~aiaudit.linux.pam_limits.files`) and deciding as
:func:`aiaudit.linux.pam_limits.conf.decide` does.  Then the kernel: ``setrlimit`` of a
nofile above ``fs.nr_open`` fails with EPERM (``kernel/sys.c`` ``do_prlimit``); upstream
pam_limits denies the session, Debian's patch 032 ignores it (checked with the real module,
``tests/oracle``).
"""

from __future__ import annotations

from dataclasses import field, replace

from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts.users import Accounts
from aiaudit.linux.pam_limits import conf as lp
from aiaudit.linux.pam_limits.conf import subject_for
from aiaudit.linux.pam_limits.files import PamBuild, Read, limits_files, pam_build
from aiaudit.linux.pam_limits.stack import LimitsCall, pam_stack, sshd_use_pam
from aiaudit.linux.pam_limits.start import (
    FD_SETSIZE,
    ITEM_KEYS,
    Start,
    kernel_nr_open,
    pid1_limits,
    service_limits,
)
from aiaudit.linux.systemd.unitfile import Assignment

DROPIN = "/etc/security/limits.d/zz-aiaudit-training.conf"
"""Remediation drop-in: sorts after every usual name (strcmp: ``z`` > digits, capitals,
``_``), so among lines of the same rank it is read last and wins."""

Sides = dict[str, tuple[lp.Side, lp.Side]]
Deciders = dict[str, tuple[Evidence, Evidence]]


@record(frozen=False)
class Effective:
    """What one login of the user through one service gets."""

    service: str
    status: str
    """``ok``, ``refused`` (the session fails), ``unknown`` (cannot be decided)."""
    values: dict[str, tuple[int, int]] = field(default_factory=dict)
    deciders: Deciders = field(default_factory=dict)
    message: str = ""
    evidence: list[Evidence] = field(default_factory=list)
    conf_target: str | None = None
    """Where a remediation line must go (the conf= file, else the limits.d drop-in)."""
    pam_applies: bool = True
    nolimits: lp.Line | None = None
    ignored: list[tuple[lp.Line, str]] = field(default_factory=list)
    """Matching lines pam_limits ignored (lost on rank, bad value...), with why."""
    shadowed: list[lp.Shadow] = field(default_factory=list)
    """Matching lines of the last pam_limits call whose side another line holds."""
    start_overridden: dict[str, tuple[str, tuple[tuple[Assignment, str], ...]]] = field(
        default_factory=dict)
    """Per item: the source of the service's own limit (its unit's ``Limit*=``) and the
    assignments it overrode (shown when that limit decides a failure)."""
    clamped: dict[str, str] = field(default_factory=dict)
    """Items whose soft value was above the hard one and clamped to it: what asked for it."""


def effective(host: Host, acc: Accounts, user: pw.Account, service: str) -> Effective:
    """Decide the limits of a session of ``user`` opened through ``service`` (memoized per
    run)."""
    return host.memo(("limits-effective", user.name, service),
                     lambda: _effective(host, acc, user, service))


def _effective(host: Host, acc: Accounts, user: pw.Account, service: str) -> Effective:
    build = pam_build(host)
    eff = Effective(service, "ok", conf_target=DROPIN)
    inherited = service_limits(host, service)
    eff.start_overridden = {i: (_start_ev(inherited, n).source, inherited.overridden[i])
                            for n, i in enumerate(ITEM_KEYS) if inherited.overridden.get(i)}
    if service == "sshd":
        use_pam, ev = sshd_use_pam(host)
        if ev is not None:
            eff.evidence.append(ev)
        if use_pam is False:
            eff.pam_applies = False
            return _keep(eff, inherited, "sshd runs without PAM (UsePAM no): sessions keep "
                         f"{inherited.what}")
    stack = pam_stack(host, service)
    if stack.broken:
        eff.status = "refused"
        eff.message = (f"the PAM configuration of {service} is broken ({'; '.join(stack.broken)}"
                       f"): libpam refuses every session")
        eff.evidence += [Evidence.file(f) for f in stack.files[:1]]
        return eff
    if not stack.calls:
        eff.pam_applies = False
        why = "; ".join(stack.problems) or f"no session pam_limits.so in {stack.file}"
        return _keep(eff, inherited, f"pam_limits does not run for {service} ({why}): "
                     f"sessions keep {inherited.what}")
    return _Walk(host, acc, user, build, eff, inherited).run(stack.calls)


def _start_ev(start: Start, idx: int) -> Evidence:
    if not start.evidence:
        return Evidence.default(start.what)
    return start.evidence[min(idx, len(start.evidence) - 1)]


def _side_ev(side: lp.Side, start: Start, idx: int) -> Evidence:
    """What decided ``side``; for a soft side clamped to the hard one, the hard side's
    line (or starting value), saying so."""
    if side.line is not None:
        ev = Evidence.file(side.line.file, side.line.line, side.line.raw)
    else:
        ev = _start_ev(start, idx)
    if side.clamped:
        asked = f" (set at {side.clamped_line.where})" if side.clamped_line else ""
        ev = replace(ev, value=f"{ev.value or ev.source} [soft clamped: the soft value"
                     f"{asked} is above this hard limit, so the soft limit is the hard one]")
    return ev


def _keep(eff: Effective, start: Start, why: str) -> Effective:
    eff.values = {i: start.values[i] for i in ITEM_KEYS}
    eff.deciders = {i: (_start_ev(start, n),) * 2 for n, i in enumerate(ITEM_KEYS)}
    eff.message = why
    return eff


def same_outcome(dec: lp.Decision, guesses: list[lp.Decision]) -> bool:
    """True if every guess about unknown memberships gives the same outcome; ``dec`` then
    takes it."""
    def key(d: lp.Decision) -> tuple[str, dict[str, tuple[int, int]]]:
        return d.status, {i: (s.value, h.value) for i, (s, h) in d.limits.items()}

    if any(key(g) != key(guesses[0]) for g in guesses[1:]):
        return False
    g = guesses[0]
    dec.status, dec.reason, dec.nolimits_line = g.status, g.reason, g.nolimits_line
    dec.limits, dec.ignored, dec.shadowed = g.limits, g.ignored, g.shadowed
    return True


class _Walk:
    """One session's pass through the pam_limits lines of its stack: what each line
    leaves (values and their deciders) is where the next one starts."""

    def __init__(self, host: Host, acc: Accounts, user: pw.Account, build: PamBuild,
                 eff: Effective, inherited: Start) -> None:
        self.host, self.acc, self.user, self.build, self.eff = host, acc, user, build, eff
        self.who = subject_for(acc, user)
        self.values = {i: inherited.values[i] for i in ITEM_KEYS}
        self.deciders: Deciders = {i: (_start_ev(inherited, n),) * 2
                                   for n, i in enumerate(ITEM_KEYS)}
        self.what = inherited.what
        self.notes: list[str] = []

    def run(self, calls: list[LimitsCall]) -> Effective:
        """Every line in turn; the session's limits, or why there are none."""
        eff = self.eff
        for call in calls:
            if self.call(call):
                return eff
        eff.values, eff.deciders = self.values, self.deciders
        eff.message = (f"pam_limits: {self.build.note}" + "".join(f"; {n}" for n in self.notes)
                       + ".")
        return eff

    def call(self, call: LimitsCall) -> bool:
        """Run one pam_limits line; True when it ends the story (session refused, or its
        outcome unknown)."""
        eff, build = self.eff, self.build
        eff.evidence.append(Evidence.file(call.file, call.line, call.raw))
        where = f"{call.file.lstrip('/')}:{call.line}"
        kernel = build.kernel_start or call.set_all
        start, sides = self._start(kernel)
        files, file_notes = limits_files(self.host, build, call.conf)
        nr_open = kernel_nr_open(self.host)
        variant = lp.Variant(debian_root=build.debian, nr_open=nr_open if build.nr_open else None)
        dec = self._decide(files, sides, variant)
        if dec.uncertain:
            self._unknown(dec)
            return True
        if dec.status == "failed":
            return self._failed(call, dec, where)
        if dec.status == "nolimits":
            self._nolimits(dec, where)
            return False
        eff.nolimits = None
        eff.ignored = dec.ignored
        eff.shadowed = dec.shadowed
        if call.conf is None:  # the fix's limits.d file: read after every other one
            from aiaudit.linux.pam_limits.shadowed import winning_dropin

            eff.conf_target = winning_dropin(self.host, DROPIN)
        else:
            eff.conf_target = call.conf
        self.notes += file_notes
        for n, item in enumerate(ITEM_KEYS):
            if not self._apply(item, n, dec.limits.get(item, sides[item]), start, nr_open,
                               where):
                return True
        self._note_unset(dec, sides, kernel)
        self.what = f"what pam_limits at {where} set"
        return False

    def _start(self, kernel: bool) -> tuple[Start, Sides]:
        """Where this line starts: PID 1's limits (Debian < 1.7, ``set_all``; soft nofile
        capped at 1024 by Debian) or what the session has so far."""
        if kernel:
            start = pid1_limits(self.host)
        else:
            start = Start(dict(self.values), tuple(self.deciders[i][0] for i in ITEM_KEYS),
                          self.what)
        rank = lp.KERNEL if kernel else lp.NONE
        sides: Sides = {}
        for item in ITEM_KEYS:
            soft, hard = start.values[item]
            if item == "nofile" and kernel and self.build.kernel_start:
                soft = min(soft, FD_SETSIZE)  # Debian: soft nofile from PID 1 capped at 1024
            sides[item] = (lp.Side(soft, rank), lp.Side(hard, rank))
        return start, sides

    def _decide(self, files: list[tuple[str, Read]], sides: Sides,
                variant: lp.Variant) -> lp.Decision:
        dec = lp.decide(files, self.who, sides, variant)
        if dec.uncertain and same_outcome(dec, [
                lp.decide(files, subject_for(self.acc, self.user, guess), sides, variant)
                for guess in (False, True)]):
            dec.uncertain = []  # membership unknown, but it cannot change the outcome
        return dec

    def _unknown(self, dec: lp.Decision) -> None:
        eff = self.eff
        eff.status = "unknown"
        eff.message = ("group membership cannot be decided from the files (groups also "
                       f"come from {', '.join(self.acc.remote_group)} via nsswitch.conf): "
                       + ", ".join(f"{ln.where} '{ln.raw}'" for ln in dec.uncertain))
        eff.evidence += [Evidence.file(ln.file, ln.line, ln.raw) for ln in dec.uncertain]

    def _failed(self, call: LimitsCall, dec: lp.Decision, where: str) -> bool:
        """A line that cannot read its files: the session is refused if it is fatal."""
        if call.fatal:
            self.eff.status = "refused"
            self.eff.message = (f"pam_limits fails the session ({dec.reason}) and is "
                                f"'{call.control}' at {where}: logins of {self.user.name} "
                                f"through {self.eff.service} are refused")
            return True
        self.notes.append(f"pam_limits at {where} fails ({dec.reason}) but is "
                          f"'{call.control}': it changes nothing")
        return False

    def _nolimits(self, dec: lp.Decision, where: str) -> None:
        ln = dec.nolimits_line
        assert ln is not None
        ev = Evidence.file(ln.file, ln.line, ln.raw)
        self.eff.nolimits = ln
        self.eff.evidence.append(ev)
        self.notes.append(f"'{ln.raw}' at {ln.where} matches {self.user.name}: pam_limits at "
                          f"{where} sets no limits at all, the session keeps {self.what}")
        self.deciders = {i: (ev,) * 2 for i in ITEM_KEYS}

    def _apply(self, item: str, n: int, got: tuple[lp.Side, lp.Side], start: Start,
               nr_open: int, where: str) -> bool:
        """Set ``item`` as the line decided; False when the session is refused."""
        soft, hard = got
        if item == "nofile" and hard.value > nr_open:
            return self._above_nr_open(hard, nr_open, where)
        self.values[item] = (soft.value, hard.value)
        self.deciders[item] = (_side_ev(soft, start, n), _side_ev(hard, start, n))
        if soft.clamped:
            self.eff.clamped[item] = (soft.clamped_line.where if soft.clamped_line
                                      else "the starting value")
        else:
            self.eff.clamped.pop(item, None)
        return True

    def _above_nr_open(self, hard: lp.Side, nr_open: int, where: str) -> bool:
        """setrlimit(RLIMIT_NOFILE) above fs.nr_open fails with EPERM (kernel/sys.c
        do_prlimit): upstream pam_limits then returns PAM_PERM_DENIED; Debian's patch 032
        ignores it and the process keeps the nofile limit it had (checked with the real
        module).  False when the session is refused."""
        eff = self.eff
        src = hard.line.where if hard.line else "the starting value"
        if not self.build.debian:
            eff.status = "refused"
            eff.message = (f"nofile {lp.fmt(hard.value)} (from {src}) is above "
                           f"fs.nr_open {nr_open}: setrlimit fails and pam_limits at "
                           f"{where} denies the session")
            if hard.line:
                eff.evidence.append(Evidence.file(hard.line.file, hard.line.line,
                                                  hard.line.raw))
            return False
        self.notes.append(f"nofile {lp.fmt(hard.value)} (from {src}) is above fs.nr_open "
                          f"{nr_open}: the kernel refuses it and Debian's pam_limits "
                          f"ignores that, so nofile stays {self.what}")
        return True

    def _note_unset(self, dec: lp.Decision, sides: Sides, kernel: bool) -> None:
        unset = [i for i in ITEM_KEYS
                 if all(sd.line is None for sd in dec.limits.get(i, sides[i]))]
        if unset and kernel:
            self.notes.append(f"no line sets {'/'.join(unset)}: pam_limits starts from PID 1's "
                              "limits" + (" (soft nofile capped at 1024)"
                                          if self.build.kernel_start else ""))
        elif unset:
            self.notes.append(f"no line sets {'/'.join(unset)}: the session keeps {self.what}")
