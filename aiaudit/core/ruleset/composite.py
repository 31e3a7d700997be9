"""Composite rules: ``any_of`` / ``all_of`` over parts, each a check with its params.

A rule may name, instead of one ``check``, a list of parts::

    - id: SSH-ACCESS-LISTS
      any_of:
        - name: AllowUsers
          check: ssh.sshd_option
          params: {keyword: AllowUsers, contains: [admin]}
        - {name: AllowGroups, check: ssh.sshd_option, params: {keyword: AllowGroups, ...}}

A part may itself be an ``any_of`` / ``all_of`` (nesting is bounded by the schema's depth
of the YAML, and by :data:`MAX_PARTS`).  Each part's params are validated against its
check's schema like a rule's, with file and position.  The composite yields one result:

- a part *holds* when every result of its check passes (a check may report several
  subjects, e.g. the global sshd value and each Match block);
- ``any_of``: pass when a part holds, else error when a part could not be evaluated (the
  answer is unknown), else fail when a part failed, else skip (no part applies);
- ``all_of``: fail when a part failed, else error when a part could not be evaluated,
  else pass when a part holds, else skip.

The result says which parts decided (``data["decided_by"]``, and the message), carries
their evidence, and every part's outcome (``data["parts"]``).  A failing ``any_of`` offers
the first part's fix ("one of"); a failing ``all_of`` the fixes of the parts that failed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator, Mapping, Sequence

from aiaudit.api import CheckContext, CheckSpec
from aiaudit.core.errors import AuditError, HostError, ParseError
from aiaudit.core.model import Remediation, Result, Snippet, Status
from aiaudit.core.records import record

KINDS = ("any_of", "all_of")
MAX_PARTS = 64
"""Parts in one composite rule, nested parts included (the schema bounds each list)."""


@record
class Part:
    """One bound part of a composite rule."""

    name: str
    check: CheckSpec | None
    """The check, or ``None`` for a nested composite (see :attr:`kind`)."""
    params: Mapping[str, Any]
    kind: str = ""
    """``any_of`` / ``all_of`` for a nested composite."""
    parts: tuple[Part, ...] = ()


def part_name(raw: Mapping[str, Any], i: int) -> str:
    """The label of a part: its ``name``, else its first param's value (a sysctl key, an
    sshd keyword), else its check, else ``any of #N``."""
    if raw.get("name"):
        return str(raw["name"])
    if raw.get("check"):
        params = raw.get("params") or {}
        first = next((v for v in params.values() if isinstance(v, (str, int))), None)
        return str(first) if first is not None else str(raw["check"])
    kind = next((k for k in KINDS if k in raw), "part")
    return f"{kind.replace('_', ' ')} #{i + 1}"


def _run_part(part: Part, ctx: CheckContext) -> list[Result]:
    if part.check is None:
        return [_combine(part.kind, part.parts, replace(ctx, params={}))]
    try:
        results = list(part.check.run(replace(ctx, params=part.params)))
    except (HostError, ParseError, AuditError) as exc:
        return [Result(Status.ERROR, part.name, str(exc))]
    except Exception as exc:  # the same isolation the runner gives a rule
        return [Result(Status.ERROR, part.name, f"internal error in check {part.check.id}: "
                       f"{type(exc).__name__}: {exc}")]
    return results or [Result(Status.ERROR, part.name, f"check {part.check.id} produced "
                              "no result")]


def _status_of(results: Sequence[Result]) -> Status:
    """A part's status: fail if any result fails, else error, else pass, else skip."""
    got = {r.status for r in results}
    for s in (Status.FAIL, Status.ERROR, Status.PASS):
        if s in got:
            return s
    return Status.SKIP


def _combine(kind: str, parts: Sequence[Part], ctx: CheckContext) -> Result:
    outcomes: list[tuple[Part, Status, list[Result]]] = []
    for part in parts:
        results = _run_part(part, ctx)
        outcomes.append((part, _status_of(results), results))
    order = (Status.PASS, Status.ERROR, Status.FAIL) if kind == "any_of" else \
        (Status.FAIL, Status.ERROR, Status.PASS)
    status = next((s for s in order if any(st is s for _, st, _ in outcomes)), Status.SKIP)
    deciding = [(p, st, rs) for p, st, rs in outcomes if st is status]
    names = [p.name for p, _, _ in deciding]
    word = "any of" if kind == "any_of" else "all of"

    def said(rs: list[Result]) -> str:
        return "; ".join(r.message for r in rs if r.status is status or status is Status.SKIP)

    detail = " | ".join(f"{p.name}: {said(rs)}" for p, _, rs in deciding)
    head = {
        (Status.PASS, "any_of"): f"{names[0]} holds" if len(names) == 1 else
        f"{len(names)} of {len(parts)} parts hold ({', '.join(names)})",
        (Status.PASS, "all_of"): f"all {len(parts)} parts hold",
        (Status.FAIL, "any_of"): f"none of {len(parts)} parts holds",
        (Status.FAIL, "all_of"): (f"{len(names)} of {len(parts)} parts fail"
                                  if len(names) > 2 else f"{', '.join(names)} "
                                  f"{'fails' if len(names) == 1 else 'fail'}"),
        (Status.ERROR, "any_of"): f"no part holds and {', '.join(names)} could not be "
        "evaluated",
        (Status.ERROR, "all_of"): f"no part fails but {', '.join(names)} could not be "
        "evaluated",
        (Status.SKIP, "any_of"): "no part applies",
        (Status.SKIP, "all_of"): "no part applies",
    }[status, kind]
    evidence = tuple(dict.fromkeys(e for _, _, rs in deciding for r in rs
                                   for e in r.evidence))
    rem = None
    if status is Status.FAIL:
        fixes = [(p, r.remediation) for p, _, rs in deciding for r in rs
                 if r.status is Status.FAIL and r.remediation is not None]
        if fixes and kind == "any_of":
            p, r0 = fixes[0]
            rem = replace(r0, summary=f"Make one part hold, e.g. {p.name}: {r0.summary}")
        elif fixes:
            rem = Remediation(" ".join(f"{p.name}: {r.summary}" for p, r in fixes),
                              merge_snippets([s for _, r in fixes for s in r.snippets]),
                              "; ".join(r.manual for _, r in fixes if r.manual))
    data = {
        "kind": kind,
        "decided_by": names,
        "parts": [{"name": p.name, "status": st.value,
                   "results": [{"subject": r.subject, "status": r.status.value,
                                "message": r.message} for r in rs]}
                  for p, st, rs in outcomes],
    }
    def wants(p: Part, rs: list[Result]) -> str:
        exp = next((r.expected for r in rs if r.expected), None)
        return p.name if exp is None or exp.startswith(p.name) else f"{p.name} {exp}"

    expected = f"{word}: " + "; ".join(wants(p, rs) for p, _, rs in outcomes)
    actual = ", ".join(f"{p.name} {st.value}" for p, st, _ in outcomes)
    return Result(status, word, f"{word} {len(parts)}: {head} ({detail})", expected=expected,
                  actual=actual, evidence=evidence, remediation=rem, data=data)


def merge_snippets(snippets: Sequence[Snippet]) -> tuple[Snippet, ...]:
    """The snippets of several fixes as one fix: file snippets for the same path become one
    file (contents in order, a repeated line once), files first in their first order, then
    each distinct command or unit once (``sshd -t && systemctl reload ssh`` once, after the
    drop-in holds every line)."""
    files: dict[str, Snippet] = {}
    rest: list[Snippet] = []
    for s in snippets:
        if s.kind == "file" and s.path is not None:
            prev = files.get(s.path)
            if prev is None:
                files[s.path] = s
                continue
            lines = prev.content.splitlines(keepends=True)
            add = [ln for ln in s.content.splitlines(keepends=True) if ln not in lines]
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            files[s.path] = replace(prev, content="".join(lines + add),
                                    description="; ".join(dict.fromkeys(
                                        d for d in (prev.description, s.description) if d)))
        elif all((s.kind, s.content) != (r.kind, r.content) for r in rest):
            rest.append(s)
    return (*files.values(), *rest)


def composite_check(kind: str, parts: Sequence[Part]) -> CheckSpec:
    """The check a composite rule runs: its parts, combined as ``kind`` says."""
    def run(ctx: CheckContext) -> Iterator[Result]:
        yield _combine(kind, parts, ctx)

    modes = tuple(dict.fromkeys(m for p in _leaves(parts) for m in p.check.modes))  # type: ignore[union-attr]
    return CheckSpec(
        id=f"rules.{kind}", title=("At least one part holds" if kind == "any_of" else
                                   "Every part holds"),
        run=run, params_schema={"type": "object"},
        description=(f"{'any' if kind == 'any_of' else 'all'} of: " +
                     "; ".join(p.name for p in parts) + ".  A part holds when every result "
                     "of its check passes; the result names the parts that decided."),
        modes=modes or ("live", "offline"),
    )


def _leaves(parts: Sequence[Part]) -> Iterator[Part]:
    for p in parts:
        if p.check is None:
            yield from _leaves(p.parts)
        else:
            yield p


def count(raw_parts: Sequence[Any]) -> int:
    """Parts in a raw composite, nested parts included."""
    n = 0
    for raw in raw_parts:
        n += 1
        if isinstance(raw, Mapping):
            for k in KINDS:
                if isinstance(raw.get(k), list):
                    n += count(raw[k])
    return n


def bind(kind: str, raw_parts: Sequence[Mapping[str, Any]], checks: Mapping[str, CheckSpec],
         where: Any, path: list[str | int], validate: Any) -> tuple[tuple[Part, ...], list[str]]:
    """Bind the raw parts at ``path`` (``[... 'any_of']``) to their checks.  ``where(path)``
    gives ``file:line:col``; ``validate(params, schema, path)`` the schema problems of one
    part's params (or none when the ruleset is trusted).  Returns the parts and every
    problem found."""
    from aiaudit.core.ruleset import _with_defaults

    problems: list[str] = []
    if count(raw_parts) > MAX_PARTS:
        return (), [f"{where(path)}: {kind}: more than {MAX_PARTS} parts (nested included)"]
    out: list[Part] = []
    for i, raw in enumerate(raw_parts):
        name = part_name(raw, i)
        sub = next((k for k in KINDS if k in raw), None)
        if sub is not None:
            parts, probs = bind(sub, raw[sub], checks, where, [*path, i, sub], validate)
            problems += probs
            out.append(Part(name, None, {}, sub, parts))
            continue
        check = checks.get(str(raw.get("check")))
        if check is None:
            problems.append(f"{where([*path, i, 'check'])}: {kind} part {name}: unknown check "
                            f"{raw.get('check')!r} (known: {', '.join(sorted(checks))})")
            continue
        params = dict(raw.get("params") or {})
        problems += validate(params, check.params_schema, [*path, i, "params"])
        out.append(Part(name, check, _with_defaults(params, check.params_schema)))
    return tuple(out), problems
