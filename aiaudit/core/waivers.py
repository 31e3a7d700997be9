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
``file:line:col: message`` (the CLI exits 2); applying waivers to a scan is
:func:`aiaudit.core.runner.apply_waivers`.
"""

from __future__ import annotations

import datetime as _dt

from aiaudit.core.errors import RulesetError
from aiaudit.core.model import Waiver

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
