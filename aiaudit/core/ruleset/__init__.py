# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Rulesets: load (YAML), follow ``extends``, validate, and bind rules to checks.

Validation happens in two passes and reports every problem at once, each with its file and
position: the document against ``schemas/ruleset.schema.json``, then each rule's params
against its check's params schema.  Shipped rulesets are validated by the test suite and are
not re-validated on every scan (jsonschema is the slowest import of a scan).
"""

from __future__ import annotations

import json
import os
from dataclasses import field
from functools import cache
from typing import Any, Callable, Mapping, Sequence

from aiaudit.api import CheckSpec
from aiaudit.core import resources
from aiaudit.core.errors import RulesetError, UsageError
from aiaudit.core.model import SEVERITIES, RuleInfo, Severity
from aiaudit.core.plugins import Registry
from aiaudit.core.ruleset import composite
from aiaudit.core.ruleset.composite import with_defaults
from aiaudit.core.ruleset.yamlpos import Located
from aiaudit.core.startup.collector import after_import
from aiaudit.core.startup.records import record

_with_defaults = with_defaults
"""The former private name (test helpers bind check params with it)."""

MAX_RULESET_BYTES = 2 * 1024 * 1024
"""A ruleset larger than this is refused (it is surely not a ruleset)."""
MAX_EXTENDS_DEPTH = 16


@record
class Rule:
    """A rule bound to its check, ready to run."""

    info: RuleInfo
    check: CheckSpec
    params: Mapping[str, Any]
    origin: str = ""
    """Where the rule was defined (file:line:col)."""

    @property
    def id(self) -> str:
        """The stable rule id."""
        return self.info.id


@record
class Ruleset:
    """A validated ruleset: name, version and the enabled rules in order."""

    name: str
    version: str
    description: str
    rules: tuple[Rule, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)
    origin: str = ""
    disabled: tuple[str, ...] = ()
    """Ids of inherited rules switched off by ``enabled: false``."""
    source: str = ""
    """Which file was used, for the report: ``aiaudit.rulesets/NAME.yaml`` (shipped), the
    plugin's origin, or the absolute path of a ruleset file."""
    unbound: tuple[str, ...] = ()
    """Ids of enabled rules of a shipped ruleset that the run does not select (``--only``,
    ``--skip``): not bound, so their check modules are never imported."""

    def get(self, rule_id: str) -> Rule | None:
        """The rule with ``rule_id``, or ``None``."""
        for r in self.rules:
            if r.id == rule_id:
                return r
        return None


@cache
def schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped in ``aiaudit.schemas`` (e.g. ``ruleset.schema.json``)."""
    doc: dict[str, Any] = json.loads(resources.read_text("aiaudit.schemas", name))
    return doc


def schema_problems(instance: Any, schema_doc: Mapping[str, Any], doc: Located,
                    base: Sequence[str | int] = ()) -> list[str]:
    """Every JSON-Schema violation of ``instance``, as ``file:line:col: message``."""
    import jsonschema  # slow import: only when a ruleset really needs validating

    after_import("jsonschema")
    cls = jsonschema.validators.validator_for(schema_doc)
    validator = cls(schema_doc, format_checker=_format_checker())
    out = []
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
    for err in errors:
        err = _own_message(err) or err
        path = [*base, *err.absolute_path]
        where = doc.where(path)
        at = "/".join(str(p) for p in path) or "(top)"
        out.append(f"{where}: {at}: {_short(err)}")
    return out


@cache
def _format_checker() -> Any:
    """Formats of aiaudit's own: ``aiaudit-line-pattern`` (a pattern the linear-time
    matcher of :mod:`aiaudit.core.ruleset.linematch` accepts), so ``aiaudit validate``
    reports a refused pattern with file and position, not only the scan."""
    import jsonschema

    from aiaudit.core.ruleset.linematch import PatternError, compile_pattern

    checker = jsonschema.FormatChecker(formats=())

    @checker.checks("aiaudit-line-pattern", raises=PatternError)
    def _pattern(value: object) -> bool:
        if isinstance(value, str):
            compile_pattern(value)
        return True

    return checker


def _own_message(err: Any, depth: int = 0) -> Any:
    """Within a ``oneOf``/``anyOf`` that failed (a per-field expectation: ``null`` or an
    object), the deeper error a check's schema words itself (``aiaudit_message``), so
    the message names the value at fault and says what is wanted; ``None`` if none."""
    for sub in getattr(err, "context", None) or ():
        own = sub.schema.get("aiaudit_message") if isinstance(sub.schema, dict) else None
        if own is not None and (isinstance(own, str) or sub.validator in own):
            return sub
        if depth < 4:
            found = _own_message(sub, depth + 1)
            if found is not None:
                return found
    return None


def _short(err: Any) -> str:
    """A readable jsonschema message (without dumping a whole sub-document)."""
    if err.validator == "format" and err.cause is not None:
        return f"{str(err.instance)[:80]!r}: {err.cause}"
    own = err.schema.get("aiaudit_message") if isinstance(err.schema, dict) else None
    if isinstance(own, dict):  # per keyword
        own = own.get(err.validator)
    if isinstance(own, str):  # a check's schema says what it takes (predicates.SCHEMA_MESSAGE)
        if isinstance(err.instance, dict):
            return own
        return f"{str(err.instance)[:80]!r}: {own}"
    msg = str(err.message)
    if err.validator == "additionalProperties":
        return msg.replace("Additional properties are not allowed", "unknown key(s)")
    return msg if len(msg) < 300 else msg[:300] + "..."


def is_path(ref: str) -> bool:
    """True if ``ref`` names a file rather than a shipped (or plugin) ruleset: it contains
    ``/`` or ends in ``.yaml``/``.yml``.  Whatever lies in the working directory plays no
    part: a file ``dl-training`` there must not replace the shipped ``dl-training``."""
    return "/" in ref or ref.endswith((".yaml", ".yml"))


@record(frozen=False)
class _Raw:
    """One ruleset document in an ``extends`` chain."""

    doc: Located
    trusted: bool
    path: str | None


def _load_doc(ref: str, registry: Registry, base_dir: str | None,
              validate: bool | None = None) -> _Raw:
    from aiaudit.core.ruleset import yamlpos

    if is_path(ref):
        path = ref if os.path.isabs(ref) or base_dir is None else os.path.join(base_dir, ref)
        from aiaudit.core.inputs import read_input  # a ruleset file: not for shipped ones

        text, origin, trusted = read_input(path, "ruleset", MAX_RULESET_BYTES), path, False
        real: str | None = os.path.realpath(path)
    else:
        src = registry.rulesets.get(ref)
        if src is None:
            known = ", ".join(sorted(registry.rulesets)) or "none"
            hint = f"; for the file, say ./{ref}" if base_dir is None and os.path.isfile(ref) \
                else "; or give a path"
            raise UsageError(f"unknown ruleset {ref!r} (shipped: {known}{hint})")
        origin, real = src.origin or ref, None
        trusted = src.origin.startswith("aiaudit.rulesets/")
        if trusted and validate is not True and src.load_data is not None:
            data = src.load_data()
            if data is not None:
                return _Raw(Located(data, None, origin), trusted, real)
        text = src.load()
    try:
        doc = yamlpos.load(text, origin)
    except Exception as exc:  # yaml.YAMLError and its C-loader relatives
        import yaml

        if isinstance(exc, yaml.YAMLError):
            raise RulesetError([yamlpos.error_message(exc, origin, text)]) from None
        raise RulesetError([f"{origin}: invalid YAML: {exc}"]) from None
    return _Raw(doc, trusted, real)


def load(ref: str, registry: Registry, *, validate: bool | None = None,
         select: Callable[[str], bool] | None = None) -> Ruleset:
    """Load ruleset ``ref`` (shipped name or path), follow ``extends``, validate, bind.

    ``validate=None`` validates everything except shipped rulesets.  ``select``: whether
    the run needs a rule (``--only``/``--skip``); a rule of a shipped ruleset is bound only
    then (the others are listed in :attr:`Ruleset.unbound`), a rule a ruleset file defines
    or overrides always, since binding validates it (the inherited params of a shipped
    rule were validated when it was built: a site ruleset that extends ``dl-training`` with
    one override checks one rule's params, not 120).  Raises :class:`RulesetError` listing
    every problem, or :class:`UsageError`.
    """
    from aiaudit.core.ruleset import yamlpos

    chain: list[_Raw] = []
    seen: list[str] = []
    ref_now: str | None = ref
    base_dir: str | None = None
    early: list[str] = []  # schema problems: reported with those binding finds, in one run
    while ref_now is not None:
        try:
            raw = _load_doc(ref_now, registry, base_dir, validate)
        except RulesetError:
            raise
        except UsageError as exc:
            if not chain:
                raise
            # a missing or unknown parent: point at the 'extends' line that names it
            raise UsageError(f"{chain[-1].doc.where(['extends'])}: extends: {exc}") from None
        key = raw.path or f"shipped:{ref_now}"
        if key in seen:
            cycle = " -> ".join([*seen, key])
            raise RulesetError([f"{chain[-1].doc.where(['extends'])}: 'extends' cycle: {cycle}"])
        if len(seen) >= MAX_EXTENDS_DEPTH:
            raise RulesetError([f"{raw.doc.origin}: 'extends' chain deeper than "
                                f"{MAX_EXTENDS_DEPTH}"])
        seen.append(key)
        chain.append(raw)
        data = raw.doc.data
        problems = []
        must_validate = validate if validate is not None else not raw.trusted
        if not isinstance(data, dict):
            raise RulesetError([f"{raw.doc.origin}: a ruleset must be a mapping "
                                f"(got {type(data).__name__})"])
        if must_validate:
            problems += yamlpos.duplicate_keys(raw.doc)
            problems += schema_problems(data, schema("ruleset.schema.json"), raw.doc)
        early += problems
        ext = data.get("extends")
        ref_now = ext if isinstance(ext, str) else None
        if ref_now is not None and "\0" in ref_now:  # os.stat would raise ValueError
            raise RulesetError([f"{raw.doc.where(['extends'])}: extends: a NUL byte at "
                                f"character {ref_now.index(chr(0)) + 1} of the name"])
        base_dir = os.path.dirname(raw.path) if raw.path else None
    if not early:
        return _merge_and_bind(list(reversed(chain)), registry, validate, select)
    raise RulesetError(early + _later_problems(chain, registry, validate, select))


def _later_problems(chain: list[_Raw], registry: Registry, validate: bool | None,
                    select: Callable[[str], bool] | None) -> list[str]:
    """What merging and binding find in a chain whose documents broke the ruleset schema
    (a bad severity, a missing title): the rules that still have an id and a check are
    bound and their params checked, so one ``aiaudit validate`` run lists every problem.
    A document too broken to merge gives nothing more."""
    try:
        _merge_and_bind(list(reversed(chain)), registry, validate, select, lenient=True)
    except RulesetError as exc:
        return list(exc.problems)
    except (KeyError, TypeError, ValueError, AttributeError):
        return []
    return []


@record(frozen=False)
class _Merged:
    """The rules of an ``extends`` chain applied base-first, with where each was defined
    (and where its params were last set), and every problem found on the way."""

    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    where: dict[str, tuple[Located, list[str | int]]] = field(default_factory=dict)
    params_where: dict[str, tuple[Located, list[str | int]]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _merge(chain: list[_Raw], lenient: bool = False) -> _Merged:
    """Apply the chain base-first: each document's rules, then its overrides.
    ``lenient``: skip what the ruleset schema already refused (a rule without a string
    id, a rules list that is not a list)."""
    m = _Merged()
    for raw in chain:
        data = raw.doc.data
        if lenient and not _mergeable(data):
            continue
        m.settings.update(data.get("settings") or {})
        for i, rule in enumerate(data.get("rules") or []):
            if lenient and not (isinstance(rule, dict) and isinstance(rule.get("id"), str)
                                and isinstance(rule.get("check", ""), str)):
                continue
            rid = rule["id"]
            if rid in m.rules:
                first = m.where[rid][0].where(m.where[rid][1])
                m.problems.append(
                    f"{raw.doc.where(['rules', i, 'id'])}: duplicate rule id {rid!r} "
                    f"(first at {first}; use 'overrides' to change an inherited rule)")
                continue
            m.rules[rid] = dict(rule)
            m.where[rid] = (raw.doc, ["rules", i])
            m.params_where[rid] = (raw.doc, ["rules", i, "params"])
        for rid, ov in (data.get("overrides") or {}).items():
            _override(m, raw, rid, ov)
    return m


def _mergeable(data: Any) -> bool:
    """The parts :func:`_merge` walks have the shapes it needs."""
    return (isinstance(data.get("settings") or {}, dict)
            and isinstance(data.get("rules") or [], list)
            and isinstance(data.get("overrides") or {}, dict)
            and all(isinstance(v, dict) for v in (data.get("overrides") or {}).values()))


def _override(m: _Merged, raw: _Raw, rid: str, ov: Mapping[str, Any]) -> None:
    """Apply ``raw``'s override ``ov`` of inherited rule ``rid``."""
    if rid not in m.rules:
        m.problems.append(f"{raw.doc.where(['overrides', rid])}: override of unknown "
                          f"rule {rid!r}")
        return
    merged = m.rules[rid]
    for k in ("severity", "title", "tags", "enabled"):
        if k in ov:
            merged[k] = ov[k]
    if "params" in ov:
        merged["params"] = {**(merged.get("params") or {}), **ov["params"]}
        m.params_where[rid] = (raw.doc, ["overrides", rid, "params"])


def _merge_and_bind(chain: list[_Raw], registry: Registry, validate: bool | None,
                    select: Callable[[str], bool] | None = None, *,
                    lenient: bool = False) -> Ruleset:
    """Apply the chain base-first; then bind each rule to its check and check params.
    ``lenient`` (for :func:`_later_problems`): skip what the schema refused."""
    m = _merge(chain, lenient)
    bound: list[Rule] = []
    unbound: list[str] = []
    disabled: list[str] = []
    # a rule only trusted documents define and set the params of (a shipped ruleset's,
    # validated when it was built) is bound when the run needs it and its params are not
    # checked again; one a site file defines or overrides is bound and checked always
    untrusted = {id(r.doc) for r in chain if not r.trusted}

    def touched(rid: str) -> bool:
        return id(m.where[rid][0]) in untrusted or id(m.params_where[rid][0]) in untrusted
    for rid, rule in m.rules.items():
        mine = validate is True or (validate is None and touched(rid))
        if rule.get("enabled") is False:
            disabled.append(rid)
        elif select is not None and not mine and not select(rid):  # not needed: unbound
            unbound.append(rid)
        elif lenient and not _bindable(rule):
            continue
        else:
            bound += _bind(m, rid, rule, registry, mine)
    if m.problems:
        raise RulesetError(m.problems)
    if lenient:
        raise RulesetError([])
    top = chain[-1].doc.data
    return Ruleset(
        name=str(top["ruleset"]),
        version=str(top["version"]),
        description=str(top.get("description", "")),
        rules=tuple(bound),
        settings=m.settings,
        origin=chain[-1].doc.origin,
        disabled=tuple(disabled),
        source=chain[-1].path or chain[-1].doc.origin,
        unbound=tuple(unbound),
    )


def _bindable(rule: dict[str, Any]) -> bool:
    """A rule whose check :func:`_bind` can look up and whose params it can check: a check
    name (or one composite kind) and params that are a mapping (the schema reported the
    rest)."""
    kinds = [k for k in composite.KINDS if k in rule]
    return ((isinstance(rule.get("check"), str) or len(kinds) == 1)
            and isinstance(rule.get("params") or {}, dict))


def _bind(m: _Merged, rid: str, rule: dict[str, Any], registry: Registry,
          checking: bool) -> list[Rule]:
    """Rule ``rid`` bound to its check (a composite's: its parts), its params checked
    against the check's schema when ``checking``; ``[]`` with the problems added to ``m``
    when it cannot be bound."""
    doc, path = m.where[rid]
    kind = next((k for k in composite.KINDS if k in rule), None)
    check: CheckSpec | None
    if kind is not None:  # any_of / all_of: bind every part (aiaudit.core.ruleset.composite)
        def validate_part(params: Any, sch: Any, at: list[str | int]) -> list[str]:
            if not checking:
                return []
            return [f"{p} (rule {rid})" for p in schema_problems(params, sch, doc, at)]

        parts, probs = composite.bind(kind, rule[kind], registry.checks, doc.where,
                                      [*path, kind], validate_part)
        m.problems.extend(probs)
        rule = {**rule, "check": f"rules.{kind}"}
        check = composite.composite_check(kind, parts)
    else:
        check = registry.checks.get(rule["check"])
    if check is None:
        known = ", ".join(sorted(registry.checks))
        m.problems.append(f"{doc.where([*path, 'check'])}: rule {rid}: unknown check "
                          f"{rule['check']!r} (known: {known})")
        return []
    params = dict(rule.get("params") or {})
    pdoc, ppath = m.params_where[rid]
    if kind is not None and params:
        m.problems.append(f"{pdoc.where(ppath)}: rule {rid}: a composite rule has no "
                          f"params (give each part of {kind} its own)")
    elif checking:
        m.problems.extend(f"{p} (rule {rid})" for p in
                          schema_problems(params, check.params_schema, pdoc, ppath))
    if rule.get("severity") not in SEVERITIES or not isinstance(rule.get("title"), str):
        return []  # only with lenient merging: the ruleset schema reported it
    info = RuleInfo(
        id=rid,
        check=check.id,
        severity=Severity(rule["severity"]),
        title=rule["title"],
        rationale=rule.get("rationale", ""),
        references=tuple(rule.get("references") or ()),
        tags=tuple(rule.get("tags") or ()),
        description=check.description,
        remediation=rule.get("remediation", ""),
    )
    return [Rule(info, check, with_defaults(params, check.params_schema), doc.where(path))]
