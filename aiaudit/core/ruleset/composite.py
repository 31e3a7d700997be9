# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
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
from itertools import islice
from typing import Any, Iterator, Mapping, Sequence

from aiaudit.api import CheckContext, CheckSpec
from aiaudit.core.errors import AuditError
from aiaudit.core.model import Remediation, Result, Snippet, SnippetKind, Status, merged_mode
from aiaudit.core.startup.records import record
from aiaudit.core.wellformed import MAX_RESULTS, result_problem

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
    check = part.check
    try:  # at most one result more than a rule may give (the runner's bound)
        results = list(islice(check.run(replace(ctx, params=part.params)), MAX_RESULTS + 1))
    except AuditError as exc:  # HostError, ParseError...: the host, not the check
        return [Result(Status.ERROR, part.name, str(exc))]
    except Exception as exc:  # the same isolation the runner gives a rule
        return [Result(Status.ERROR, part.name, f"internal error in check {check.id}: "
                       f"{type(exc).__name__}: {exc}")]
    if len(results) > MAX_RESULTS:
        return [Result(Status.ERROR, part.name, f"check {check.id} gave more than "
                       f"{MAX_RESULTS} results: stopped")]
    for r in results:  # what a part gives is combined: it must be well-formed too
        problem = result_problem(r)
        if problem is not None:
            return [Result(Status.ERROR, part.name, f"check {check.id} returned an invalid "
                           f"result: {problem}")]
    return results or [Result(Status.ERROR, part.name, f"check {check.id} produced "
                              "no result")]


def _status_of(results: Sequence[Result]) -> Status:
    """A part's status: fail if any result fails, else error, else pass, else skip."""
    got = {r.status for r in results}
    for s in (Status.FAIL, Status.ERROR, Status.PASS):
        if s in got:
            return s
    return Status.SKIP


_Outcome = tuple[Part, Status, list[Result]]
"""A part, its status and its check's results."""


def _combine(kind: str, parts: Sequence[Part], ctx: CheckContext) -> Result:
    outcomes: list[_Outcome] = []
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
    head = _headline(status, kind, names, len(parts))
    evidence = tuple(dict.fromkeys(e for _, _, rs in deciding for r in rs
                                   for e in r.evidence))
    rem = _fix(kind, deciding) if status is Status.FAIL else None
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


def _headline(status: Status, kind: str, names: list[str], n: int) -> str:
    """What decided a composite of ``n`` parts: the parts ``names`` have ``status``."""
    if status is Status.SKIP:
        return "no part applies"
    if status is Status.PASS:
        if kind == "all_of":
            return f"all {n} parts hold"
        return f"{names[0]} holds" if len(names) == 1 else \
            f"{len(names)} of {n} parts hold ({', '.join(names)})"
    if status is Status.FAIL:
        if kind == "any_of":
            return f"none of {n} parts holds"
        if len(names) > 2:
            return f"{len(names)} of {n} parts fail"
        return f"{', '.join(names)} {'fails' if len(names) == 1 else 'fail'}"
    if kind == "any_of":
        return f"no part holds and {', '.join(names)} could not be evaluated"
    return f"no part fails but {', '.join(names)} could not be evaluated"


def _fix(kind: str, deciding: list[_Outcome]) -> Remediation | None:
    """The fix of a failing composite: the first failing part's ("one of") for ``any_of``,
    the failing parts' together for ``all_of``."""
    fixes = [(p, r.remediation) for p, _, rs in deciding for r in rs
             if r.status is Status.FAIL and r.remediation is not None]
    if not fixes:
        return None
    if kind == "any_of":
        p, r0 = fixes[0]
        return replace(r0, summary=f"Make one part hold, e.g. {p.name}: {r0.summary}")
    return Remediation(" ".join(f"{p.name}: {r.summary}" for p, r in fixes),
                       merge_snippets([s for _, r in fixes for s in r.snippets]),
                       "; ".join(r.manual for _, r in fixes if r.manual))


def merge_snippets(snippets: Sequence[Snippet]) -> tuple[Snippet, ...]:
    """The snippets of several fixes as one fix: file snippets for the same path become one
    file (contents in order, a repeated line once), files first in their first order, then
    each distinct command or unit once (``sshd -t && systemctl reload ssh`` once, after the
    drop-in holds every line); a merged file gets the permissions every part allows."""
    files: dict[str, Snippet] = {}
    rest: list[Snippet] = []
    for s in snippets:
        if s.kind == SnippetKind.FILE and s.path is not None:
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
                                        d for d in (prev.description, s.description) if d)),
                                    mode=merged_mode(prev.mode, s.mode))
        elif all((s.kind, s.content) != (r.kind, r.content) for r in rest):
            rest.append(s)
    return (*files.values(), *rest)


def composite_check(kind: str, parts: Sequence[Part]) -> CheckSpec:
    """The check a composite rule runs: its parts, combined as ``kind`` says."""
    def run(ctx: CheckContext) -> Iterator[Result]:
        yield _combine(kind, parts, ctx)

    checks = [p.check for p in _leaves(parts) if p.check is not None]
    modes = tuple(dict.fromkeys(m for c in checks for m in c.modes))
    # a third-party part makes the composite third-party code: the runner isolates it
    origin = ", ".join(dict.fromkeys(c.origin for c in checks if c.origin))
    return CheckSpec(
        id=f"rules.{kind}", title=("At least one part holds" if kind == "any_of" else
                                   "Every part holds"),
        run=run, params_schema={"type": "object"},
        description=(f"{'any' if kind == 'any_of' else 'all'} of: " +
                     "; ".join(p.name for p in parts) + ".  A part holds when every result "
                     "of its check passes; the result names the parts that decided."),
        modes=modes or ("live", "offline"),
        origin=origin,
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
        out.append(Part(name, check, with_defaults(params, check.params_schema)))
    return tuple(out), problems


def with_defaults(params: Mapping[str, Any], schema_doc: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the ``default`` of every absent top-level property of the check's
    params schema filled in."""
    out = dict(params)
    for key, prop in (schema_doc.get("properties") or {}).items():
        if key not in out and isinstance(prop, dict) and "default" in prop:
            out[key] = prop["default"]
    return out
