"""``firewall.allowed_ports``: the firewall admits new inbound connections only to the
allowed ports.

Gather: the running ruleset (live scan of ``/`` with commands,
:mod:`aiaudit.linux.netfilter.running`) and the one the enabled services load at boot
(:mod:`aiaudit.linux.netfilter.boot`); the ports the ruleset's ``settings.firewall``
declares (:mod:`aiaudit.linux.netfilter.inbound`, Slurm's from the scanned slurm.conf) are
allowed too, so the check and the fix it proposes agree.

Decide: per state and address family, every port a rule names is probed as a new
connection from an untrusted source (:mod:`aiaudit.linux.netfilter.evaluate`, netfilter's
order of base chains: nftables wiki "Netfilter hooks", nft(8)).  It fails when unlisted
ports are not provably dropped, or a port beyond ``allowed`` is admitted (``maybe``
included).  Ports admitted only from named sources or interfaces are listed, and failed
only with ``include_restricted``.

Results: one per state and family, with the rules that admit as evidence and the fix for
the mechanism in charge (:mod:`aiaudit.linux.netfilter.fix`).
"""

from __future__ import annotations

from typing import Any, Iterator

from aiaudit.api import CheckContext, CheckSpec, Evidence, Result, Status, hookimpl
from aiaudit.linux.netfilter import explain, fix, inbound
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.netfilter.evaluate import (
    DESCRIPTION,
    IPV6_PARAM,
    Case,
    Evaluation,
    PortDecision,
    cases,
)

SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "allowed": {"type": "array", "items": {"type": "string",
                                               "pattern": nf.PORT_SPEC_PATTERN},
                    "default": ["22/tcp"],
                    "description": "ports the firewall may admit (22/tcp, 60000-61000/udp)"},
        "ipv6": IPV6_PARAM,
        "include_restricted": {
            "type": "boolean", "default": False,
            "description": "also fail for ports admitted only from named sources or "
                           "interfaces (ip saddr 10.0.0.0/8, iifname eth1); by default they "
                           "are listed in the message only"},
    },
}


def run(ctx: CheckContext) -> Iterator[Result]:
    """The firewall admits new inbound connections only to the allowed ports."""
    try:
        declared = inbound.any_source_ports(fix.admitted(ctx.host, ctx.settings)[0])
    except inbound.SettingsError as exc:
        yield Result(Status.ERROR, "settings", f"{exc}")
        return
    specs = allowed_specs(ctx.params["allowed"], declared)
    allowed = nf.parse_port_specs(specs)
    want = ", ".join(specs) or "nothing"
    for case in cases(ctx.host, ctx.params["ipv6"], allowed):
        if case.evaluation is None:
            yield explain.unjudged(case)
        else:
            yield _judge(ctx, case, case.evaluation, allowed, want)


def allowed_specs(allowed: list[str], declared: list[tuple[str, int, int]]) -> list[str]:
    """The rule's ``allowed`` list extended with the ports ``settings.firewall`` declares
    (one source of truth for the check and the fix it proposes)."""
    specs = list(allowed)
    for p, lo, hi in declared:
        spec = f"{lo}/{p}" if lo == hi else f"{lo}-{hi}/{p}"
        if spec not in specs:
            specs.append(spec)
    return specs


def beyond(items: tuple[PortDecision, ...], allowed: list[tuple[str, int, int]]
           ) -> list[PortDecision]:
    """The port ranges of ``items`` not inside the allowed ones."""
    return [a for a in items if not (nf.port_allowed(allowed, a[0], a[1]) and
                                     nf.port_allowed(allowed, a[0], a[2]))]


def _judge(ctx: CheckContext, case: Case, ev: Evaluation, allowed: list[tuple[str, int, int]],
           want: str) -> Result:
    """Fail for an open default or ports beyond ``allowed``; list restricted ones."""
    st = case.state
    extra = beyond(ev.admitted, allowed)
    limited = beyond(ev.restricted, allowed)
    if ctx.params["include_restricted"]:
        extra, limited = extra + limited, []
    note = explain.notes_text(st) + _restricted_note(limited)
    evidence = explain.mechanism_evidence(st)
    for a in extra:
        evidence.extend(explain.decider_evidence(a[3]))
    if not ev.chains or ev.open_default():
        return _open_default(ctx, case, ev, extra, want, note, evidence)
    if extra:
        lines = "; ".join(f"{explain.ports_text(a)} ({a[3].outcome}: "
                          f"{explain.decider_text(a[3])})" for a in extra)
        return Result(Status.FAIL, case.subject,
                      f"IPv{case.family} input admits ports beyond {want}: {lines}.{note}",
                      expected=f"only {want}",
                      actual=", ".join(explain.ports_text(a) for a in extra),
                      aspect=case.aspect, evidence=tuple(evidence),
                      remediation=fix.remediation(ctx.host, ctx.settings, st, extra),
                      data={"admitted": [explain.ports_text(a) for a in extra]})
    return Result(Status.PASS, case.subject,
                  f"IPv{case.family} input admits only allowed ports ("
                  + (", ".join(explain.ports_text(a) for a in ev.admitted) or "none")
                  + f"; {explain.mechanism_text(st)}).{note}", expected=f"only {want}",
                  aspect=case.aspect, evidence=tuple(evidence))


def _restricted_note(limited: list[PortDecision]) -> str:
    if not limited:
        return ""
    return (" Admitted only from named sources or interfaces (not judged; "
            "include_restricted: true to fail them): "
            + "; ".join(f"{explain.ports_text(a)} by {explain.decider_text(a[3])}"
                        for a in limited) + ".")


def _open_default(ctx: CheckContext, case: Case, ev: Evaluation, extra: list[PortDecision],
                  want: str, note: str, evidence: list[Evidence]) -> Result:
    """The failure of an input path that admits (or may admit) every unlisted port."""
    st = case.state
    what = "every port" if not ev.chains else \
        f"every unlisted {'/'.join(ev.open_default())} port"
    maybe = [d for d in ev.default.values() if d.outcome is nf.Outcome.MAYBE]
    verb = "admits"
    if maybe:
        verb = "may admit"
        what += (f" (maybe: {explain.decider_text(maybe[0])} cannot be evaluated by this "
                 "scanner)")
    also = f"; also {', '.join(explain.ports_text(a) for a in extra)}" if extra else ""
    return Result(Status.FAIL, case.subject,
                  f"IPv{case.family} input {verb} {what} (no provable default deny; "
                  f"{explain.mechanism_text(st)}){also}.{note}",
                  expected=f"only {want}", actual=what, aspect=case.aspect,
                  evidence=tuple(evidence),
                  remediation=fix.remediation(ctx.host, ctx.settings, st, extra))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``firewall.allowed_ports``."""
    return [
        CheckSpec(id="firewall.allowed_ports",
                  title="The firewall admits only the allowed ports",
                  run=run, params_schema=SCHEMA, description=DESCRIPTION),
    ]
