"""``--since PREVIOUS-FLEET.json``: which nodes got worse or better.

The previous fleet report (``aiaudit fleet --format json``) lists, per rule, the failing
nodes as host lists; a node is compared by host name, rule by rule id (across groups, so a
ruleset upgrade does not hide a change).  A rule the node fails now and did not then makes
it worse; one it failed then and does not now, better.  Nodes only in one of the two
reports are listed as new or gone.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from aiaudit.core.errors import UsageError
from aiaudit.core.inputs import read_input
from aiaudit.fleet.hostlist import HostlistError, expand
from aiaudit.fleet.model import Fleet, NodeChange, Since

MAX_BYTES = 256 * 1024 * 1024


def failing_by_host(fleet: Fleet) -> tuple[dict[str, set[str]], set[str]]:
    """``{host: failing rule ids}`` and every host of the fleet."""
    failing: dict[str, set[str]] = defaultdict(set)
    hosts: set[str] = set()
    for g in fleet.groups:
        hosts.update(g.hosts)
        for row in g.rules:
            for h in row.failing:
                failing[h].add(row.rule_id)
    return failing, hosts


def load_previous(path: str) -> tuple[dict[str, set[str]], set[str]]:
    """What a saved fleet report says failed where; :class:`UsageError` if unreadable."""
    text = read_input(path, "fleet report", MAX_BYTES)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not a fleet JSON report: line {exc.lineno} column "
                         f"{exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise UsageError(f"{path}: not a fleet JSON report: nested too deeply") from None
    _validate(data, path)
    failing: dict[str, set[str]] = defaultdict(set)
    hosts: set[str] = set()
    where = "groups"
    try:
        for gi, g in enumerate(data["groups"]):
            where = f"groups/{gi}/nodes"
            hosts.update(expand(g["nodes"]["hosts"]))
            for ri, row in enumerate(g["rules"]):
                where = f"groups/{gi}/rules/{ri}/failing"
                for h in expand(row["failing"]["hosts"]):
                    failing[h].add(row["id"])
    except HostlistError as exc:
        raise UsageError(f"{path}: {where}: bad host list: {exc}") from None
    return failing, hosts


def _validate(data: Any, path: str) -> None:
    import jsonschema

    from aiaudit.core.ruleset import schema

    doc = schema("fleet.schema.json")
    validator = jsonschema.validators.validator_for(doc)(doc)
    err = next(iter(sorted(validator.iter_errors(data),
                           key=lambda e: list(map(str, e.absolute_path)))), None)
    if err is not None:
        at = "/".join(str(p) for p in err.absolute_path) or "(top)"
        raise UsageError(f"{path}: not a valid aiaudit fleet JSON report: {at}: "
                         f"{err.message[:200]}")


def compare(fleet: Fleet, previous: tuple[dict[str, set[str]], set[str]],
            origin: str) -> Since:
    """The change from ``previous`` (from :func:`load_previous`) to ``fleet``."""
    before, before_hosts = previous
    now, now_hosts = failing_by_host(fleet)
    changes = []
    for h in sorted(now_hosts & before_hosts):
        worse = tuple(sorted(now.get(h, set()) - before.get(h, set())))
        better = tuple(sorted(before.get(h, set()) - now.get(h, set())))
        if worse or better:
            changes.append(NodeChange(h, worse, better))
    return Since(origin, tuple(changes), tuple(sorted(now_hosts - before_hosts)),
                 tuple(sorted(before_hosts - now_hosts)))
