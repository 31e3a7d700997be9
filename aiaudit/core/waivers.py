# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Waiver files: accepted exceptions to rules, with an owner, a reason and an expiry date.

A waiver file (``--waivers FILE``, schema ``schemas/waiver.schema.json``)::

    waivers:
      - rule: SYSCTL-NET-IPV4-TCP-TW-REUSE   # rule id, or a glob with a literal prefix
        subject: net.ipv4.tcp_tw_reuse       # optional glob over the result subject
        host: "gpu-a*"                       # optional glob over the hostname
        reason: vendor image sets 2 until the 2026.01 rebuild
        owner: platform-team
        expires: 2026-01-31                  # last day (UTC) on which it applies

Patterns are shell globs (:func:`fnmatch.fnmatchcase`: ``*``, ``?``, ``[...]``, case
sensitive).  A rule pattern must start with a letter or digit, so a bare ``*`` that would
silence the whole ruleset is refused.  Every problem in the file is reported at once as
``file:line:col: message`` (the CLI exits 2); :func:`apply_waivers` applies them to the
findings of a scan (:func:`aiaudit.core.scan.scan` imports this module only when there are
waivers).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import replace
from fnmatch import fnmatchcase
from typing import Sequence

from aiaudit.core.errors import RulesetError
from aiaudit.core.model import Finding, HostInfo, Status, Waiver

_KEYS = ("rule", "subject", "host")


def _loader() -> type:
    """The safe loader, but timestamps stay text: ``expires: 2026-02-30`` must become a
    positioned problem, not a ValueError from the YAML date constructor."""
    import yaml

    from aiaudit.core.ruleset import yamlpos

    class NoDates(yamlpos._loader_class()):  # type: ignore[misc]
        pass

    NoDates.add_constructor("tag:yaml.org,2002:timestamp",
                            yaml.constructor.SafeConstructor.construct_yaml_str)
    return NoDates


def parse_waivers(text: str, origin: str) -> tuple[Waiver, ...]:
    """Parse and validate a waiver document; raises :class:`RulesetError` with every
    problem as ``origin:line:col: message``."""
    import yaml

    from aiaudit.core.ruleset import schema, schema_problems, yamlpos

    try:
        doc = yamlpos.load(text, origin, _loader())
    except yaml.YAMLError as exc:
        raise RulesetError([yamlpos.error_message(exc, origin, text)]) from None
    if not isinstance(doc.data, dict):
        raise RulesetError([f"{doc.where()}: a waiver file must be a mapping with a "
                            f"'waivers' list (got {type(doc.data).__name__})"])
    problems = yamlpos.duplicate_keys(doc)
    problems += schema_problems(doc.data, schema("waiver.schema.json"), doc)
    if problems:
        raise RulesetError(problems)
    out: list[Waiver] = []
    first: dict[tuple[str | None, ...], str] = {}
    for i, item in enumerate(doc.data["waivers"]):
        where = doc.where(["waivers", i])
        try:
            _dt.date.fromisoformat(item["expires"])
        except ValueError:
            problems.append(f"{doc.where(['waivers', i, 'expires'])}: waivers/{i}/expires: "
                            f"{item['expires']!r} is not a calendar date")
        key = tuple(item.get(k) for k in _KEYS)
        if key in first:
            problems.append(f"{where}: waivers/{i}: same rule, subject and host as the "
                            f"waiver at {first[key]}")
        first.setdefault(key, where)
        out.append(Waiver(rule=item["rule"], reason=item["reason"].strip(),
                          owner=item["owner"], expires=item["expires"],
                          subject=item.get("subject"), host=item.get("host"), source=where))
    if problems:
        raise RulesetError(problems)
    return tuple(out)


def load_waivers(path: str) -> tuple[Waiver, ...]:
    """Read and validate the waiver file at ``path`` (``--waivers``)."""
    from aiaudit.core.inputs import read_input
    from aiaudit.core.ruleset import MAX_RULESET_BYTES

    return parse_waivers(read_input(path, "waiver file", MAX_RULESET_BYTES), path)


def apply_waivers(findings: list[Finding], waivers: Sequence[Waiver], host: HostInfo,
                  today: str, rule_ids: Sequence[str] | None = None
                  ) -> tuple[list[Finding], list[str]]:
    """Attach the first matching, unexpired waiver to each failure; return notices.

    Only ``fail`` results are waived (an ``error`` means "could not look" and is never
    hidden).  A waiver applies through its ``expires`` day (``today`` is ``YYYY-MM-DD``).
    Notices name, with the waiver's file:line:col: every expired waiver (and how many
    failures it no longer covers), every waiver whose rule pattern matches none of
    ``rule_ids`` (a typo or a removed rule), and every waiver that matched no failure
    (stale).  A waiver whose ``host`` pattern does not match this host is silent here: one
    waiver file serves a fleet.
    """
    here = [w.host is None or fnmatchcase(host.hostname, w.host) for w in waivers]
    expired = {i for i, w in enumerate(waivers) if w.expires < today}
    used: set[int] = set()
    uncovered: dict[int, int] = {}
    out = []
    for f in findings:
        i = _first_match(f, waivers, here, expired, uncovered) \
            if f.result.status is Status.FAIL else None
        if i is None:
            out.append(f)
        else:
            used.add(i)
            out.append(replace(f, waiver=waivers[i]))
    notices: list[str] = []
    for i, w in enumerate(waivers):
        notice = _notice(w, i in expired, uncovered.get(i, 0), i in used, rule_ids) \
            if here[i] else None
        if notice:
            notices.append(notice)
    return out, notices


def _first_match(f: Finding, waivers: Sequence[Waiver], here: list[bool], expired: set[int],
                 uncovered: dict[int, int]) -> int | None:
    """The index of the first unexpired waiver that covers failure ``f`` (an expired one
    that would have is counted in ``uncovered``), or ``None``."""
    for i, w in enumerate(waivers):
        if not (here[i] and fnmatchcase(f.rule_id, w.rule)
                and (w.subject is None or fnmatchcase(f.result.subject, w.subject))):
            continue
        if i in expired:
            uncovered[i] = uncovered.get(i, 0) + 1
            continue
        return i
    return None


def _notice(w: Waiver, expired: bool, uncovered: int, used: bool,
            rule_ids: Sequence[str] | None) -> str | None:
    """The notice about waiver ``w`` after a scan, or ``None`` when it did its job."""
    what = f"waiver for {w.rule}" + (f" subject {w.subject}" if w.subject else "")
    where = f" ({w.source})" if w.source else ""
    if expired:
        return (f"{what} expired on {w.expires}{where}: it no longer applies"
                + (f" ({uncovered} failure(s) no longer waived)" if uncovered else ""))
    if rule_ids is not None and not any(fnmatchcase(r, w.rule) for r in rule_ids):
        return f"{what} matches no rule of this scan{where}: fix the rule id or remove it"
    if not used:
        return f"{what} matched no failure{where}: remove it if stale"
    return None
