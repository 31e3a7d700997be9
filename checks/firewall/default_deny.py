"""``firewall.default_deny``: a firewall drops new inbound connections to ports no rule
admits.

Gather: the running ruleset (live scan of ``/`` with commands: ``nft -j list ruleset``
plus iptables-legacy, :mod:`aiaudit.linux.netfilter.running`) and the one the enabled
services load at boot (nftables.service, ufw, firewalld, iptables-persistent,
iptables-services: :mod:`aiaudit.linux.netfilter.boot`).

Decide: per state and address family, what a new TCP and UDP connection to a port no rule
names gets from the base chains on the input hook, evaluated in priority order as
netfilter does (nftables wiki "Netfilter hooks", nft(8); :mod:`aiaudit.linux.netfilter.model`).
It passes only when both protocols are provably dropped.

Results: one per state and family (``ipv4 (boot)``...), with the rules or policies that
decided as evidence; a failure proposes the fix for the mechanism in charge
(:mod:`aiaudit.linux.netfilter.fix`).
"""

from __future__ import annotations

from typing import Any, Iterator

from aiaudit.api import CheckContext, CheckSpec, Result, Status, hookimpl
from aiaudit.linux.netfilter import explain, fix
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.netfilter.evaluate import DESCRIPTION, IPV6_PARAM, Case, Evaluation, cases

SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {"ipv6": IPV6_PARAM},
}


def run(ctx: CheckContext) -> Iterator[Result]:
    """A firewall drops new inbound connections to ports no rule admits."""
    for case in cases(ctx.host, ctx.params["ipv6"], []):
        if case.evaluation is None:
            yield explain.unjudged(case)
        else:
            yield _judge(ctx, case, case.evaluation)


def _judge(ctx: CheckContext, case: Case, ev: Evaluation) -> Result:
    """Pass when every protocol's unlisted ports are dropped."""
    st, fam = case.state, case.family
    notes = explain.notes_text(st)
    evidence = explain.mechanism_evidence(st)
    if not ev.chains:
        return Result(Status.FAIL, case.subject,
                      f"no IPv{fam} input filter: no base chain on the input hook "
                      f"({explain.mechanism_text(st)}).{notes}", expected="default deny",
                      actual="no input filtering", aspect=case.aspect,
                      evidence=tuple(evidence),
                      remediation=fix.remediation(ctx.host, ctx.settings, st))
    bad = {p: d for p, d in ev.default.items() if d.outcome is not nf.Outcome.DROP}
    for d in (bad or ev.default).values():
        evidence.extend(explain.decider_evidence(d))
    if not bad:
        chains = ", ".join(c.describe() for c in ev.chains)
        return Result(Status.PASS, case.subject,
                      f"IPv{fam} input is default-deny: "
                      f"{explain.decider_text(ev.default['tcp'])} "
                      f"({explain.mechanism_text(st)}; chains {chains}).{notes}",
                      expected="default deny", actual="drop", aspect=case.aspect,
                      evidence=tuple(evidence))
    why = "; ".join(f"{p}: {d.outcome} by {explain.decider_text(d)}" for p, d in bad.items())
    return Result(Status.FAIL, case.subject,
                  f"IPv{fam} input is not default-deny: a new connection to an unlisted "
                  f"port is not dropped ({why}; {explain.mechanism_text(st)}).{notes}",
                  expected="default deny",
                  actual="; ".join(f"{p} {d.outcome}" for p, d in bad.items()),
                  aspect=case.aspect, evidence=tuple(evidence),
                  remediation=fix.remediation(ctx.host, ctx.settings, st))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``firewall.default_deny``."""
    return [
        CheckSpec(id="firewall.default_deny",
                  title="A firewall drops new inbound connections by default",
                  run=run, params_schema=SCHEMA, description=DESCRIPTION),
    ]
