"""How a firewall decision is told: the rules and policies that decided (as evidence and
as text), the mechanisms that produced the state, and its notes."""

from __future__ import annotations

from typing import Any

from aiaudit.core.model import Evidence, Result, Status
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.netfilter.evaluate import Case
from aiaudit.linux.netfilter.state import FirewallState


def decider_evidence(d: nf.Decision) -> list[Evidence]:
    """The first six rules or policies that decided: file evidence where they come from
    a file, command evidence where from a command's output."""
    out = []
    for chain, rule in d.deciders[:6]:
        if rule is None:
            what = f"{chain.describe()}: policy {chain.policy}"
            if chain.source and chain.source.startswith("/"):
                out.append(Evidence.file(chain.source, chain.policy_line, what))
            else:
                out.append(Evidence.command(chain.source or chain.origin, what))
        elif rule.source and rule.source.startswith("/"):
            out.append(Evidence.file(rule.source, rule.line, rule.text))
        else:
            out.append(Evidence.command(rule.source or chain.origin,
                                        f"{chain.describe()}: {rule.text}"))
    return out


def decider_text(d: nf.Decision) -> str:
    """The first three rules or policies that decided, with their place."""
    parts = []
    for chain, rule in d.deciders[:3]:
        if rule is None:
            loc = f" ({chain.source.lstrip('/')}:{chain.policy_line})" \
                if chain.source and chain.source.startswith("/") and chain.policy_line else ""
            parts.append(f"{chain.describe()} policy {chain.policy}{loc}")
        else:
            loc = f"{rule.source.lstrip('/')}:{rule.line}" if rule.source and \
                rule.source.startswith("/") and rule.line else (rule.source or chain.origin)
            parts.append(f"{rule.text!r} in {chain.describe()} ({loc})")
    return "; ".join(parts)


def ports_text(p: tuple[str, int, int, Any]) -> str:
    """``22/tcp``, ``60000-61000/udp`` of a ``(proto, lo, hi, ...)`` tuple."""
    return f"{p[1]}/{p[0]}" if p[1] == p[2] else f"{p[1]}-{p[2]}/{p[0]}"


def notes_text(st: FirewallState) -> str:
    """Notes for a message, including DNAT rules that bypass the input hook."""
    notes = list(st.notes)
    if st.ruleset is not None and st.ruleset.dnat:
        first = st.ruleset.dnat[0]
        more = f" and {len(st.ruleset.dnat) - 1} more" if len(st.ruleset.dnat) > 1 else ""
        notes.append(f"DNAT/REDIRECT rules forward connections that never reach the input "
                     f"hook, so input filtering does not cover them (filter them in the "
                     f"forward hook, e.g. Docker's DOCKER-USER chain): {first}{more}")
    return "".join(f" Note: {n}." for n in notes)


def mechanism_evidence(st: FirewallState) -> list[Evidence]:
    """The mechanisms' evidence; when none is active, also what was looked at for them."""
    out = [e for m in st.mechanisms for e in m.evidence]
    return out if st.active() else out + st.looked


def mechanism_text(st: FirewallState) -> str:
    """How the state was read (running) or which mechanisms decided it (boot)."""
    if st.running:
        return "running ruleset read with " + (", ".join(m.reason for m in st.mechanisms)
                                               or "no command")
    act = st.active()
    if act:
        return "decided by " + ", ".join(act)
    inactive = "; ".join(f"{m.name}: {m.reason}" for m in st.mechanisms)
    return "no firewall mechanism is active" + (f" ({inactive})" if inactive else "")


def unjudged(case: Case) -> Result:
    """The skip or error result of a case that has no evaluation."""
    if case.skip is not None:
        return Result(Status.SKIP, case.subject, case.skip, aspect=case.aspect)
    return Result(Status.ERROR, case.subject, case.error or "", aspect=case.aspect,
                  evidence=tuple(mechanism_evidence(case.state)))
