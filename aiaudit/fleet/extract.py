"""What the fleet keeps of one report: identity, group, host facts and, per result, rule id,
subject, status, severity and actual value.  Everything else (evidence, remediation,
messages) is dropped as soon as the document is read, so memory grows with the number of
results, not with the size of the reports.

Reports are read tolerantly: fields this version does not know are ignored (newer reports
may carry more), and only what aggregation needs is required.  A document that lacks it
raises :class:`BadDocument` with the first problem; the caller names the file.

Two document kinds are understood:

- a JSON report (``aiaudit scan --format json``, ``schema_version`` ``1.x``): one node;
- a SIEM event (``--format events``, ``schema`` ``aiaudit.event/1``): one result or the
  closing ``summary`` of a run.  :class:`EventAssembler` collects the results of each
  ``run_id`` and yields the node when its summary arrives (events of many nodes may be
  interleaved, as a SIEM export or ``srun`` writes them).
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping

from aiaudit.core.startup.records import record
from aiaudit.fleet.hostlist import HOSTNAME

STATUSES: tuple[str, ...] = ("pass", "fail", "error", "skip", "waived")
SEVERITIES: tuple[str, ...] = ("info", "low", "medium", "high", "critical")
EVENT_SCHEMA = "aiaudit.event/1"
MAX_VALUE = 200
"""Characters of an ``actual`` value or host fact kept (longer ones end with ``...``)."""

FACTS: tuple[str, ...] = ("os", "kernel", "image_id", "mode")
"""Host facts compared across nodes (host fields that name a node, such as ``hostname``,
``machine_id``, ``product_uuid`` and ``root``, are identity, not facts)."""
_NOT_FACTS = frozenset({"hostname", "machine_id", "product_uuid", "root"})


class BadDocument(ValueError):
    """A JSON document that is not a usable aiaudit report or event."""


@record
class Group:
    """Reports that can be compared: same aiaudit version and ruleset."""

    tool_version: str
    ruleset: str
    ruleset_version: str
    ruleset_source: str = ""
    """The ruleset's file or digest when the report names it (newer reports)."""

    @property
    def label(self) -> str:
        """``dl-training 1.0 (aiaudit 0.1.0)``."""
        src = f" [{self.ruleset_source}]" if self.ruleset_source else ""
        return f"{self.ruleset} {self.ruleset_version}{src} (aiaudit {self.tool_version})"


Item = tuple[str, str, str, str, str, "str | None"]
"""One result of one node, reduced: ``(rule_id, subject, status, severity, title, actual)``.

A plain tuple: one is built per result of every report, and worker processes send them
(:mod:`aiaudit.fleet.collect`); a record cost three times as much to build, a named tuple
twice as much to pickle."""


@record
class NodeReport:
    """One node's scan, reduced to what the fleet aggregates."""

    hostname: str
    machine_id: str | None
    group: Group
    started: str
    run_id: str
    origin: str
    """Where it was read (``reports/gpu001.json``, ``<stdin>:12``)."""
    facts: tuple[tuple[str, str], ...]
    items: tuple[Item, ...]


def _text(value: object) -> str | None:
    """A value as kept: strings as they are, other JSON as compact JSON, capped."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False)
        except RecursionError:  # decoded JSON, so only nesting can make it fail
            text = "(nested too deeply)"
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 3] + "..."


def _str(d: Mapping[str, Any], key: str, where: str) -> str:
    value = d.get(key)
    if not isinstance(value, str):
        raise BadDocument(f"{where}{key}: missing or not a string")
    return value


def _hostname(host: Mapping[str, Any]) -> str:
    name = _str(host, "hostname", "host/")
    if not HOSTNAME.match(name):
        raise BadDocument(f"host/hostname: {name[:60]!r} is not a host name")
    return name


def _machine_id(host: Mapping[str, Any]) -> str | None:
    mid = host.get("machine_id")
    if mid is not None and not isinstance(mid, str):
        raise BadDocument("host/machine_id: not a string")
    return mid or None


def _facts(host: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for key, value in host.items():
        if key in _NOT_FACTS or value is None:
            continue
        if key == "os" and isinstance(value, dict):  # report: {name, id, version}
            name, version = value.get("name"), value.get("version")
            text = " ".join(str(v) for v in (name, version)
                            if v and not (name and version and str(version) in str(name)))
            if text:
                out["os"] = _text(text) or ""
        elif isinstance(value, (str, int, float, bool)):
            out[key] = _text(value) or ""
    return tuple(sorted(out.items()))


def _group(d: Mapping[str, Any], tool_version: object) -> Group:
    rs = d.get("ruleset")
    source = ""
    if isinstance(rs, dict):  # report: {"name", "version", maybe "path"/"file"/"sha256"}
        name, version = rs.get("name"), rs.get("version")
        for key in ("sha256", "digest", "path", "file"):
            if isinstance(rs.get(key), str) and rs[key]:
                source = rs[key]
                break
    else:  # event: "ruleset" and "ruleset_version" strings
        name, version = rs, d.get("ruleset_version")
    if not isinstance(name, str) or not isinstance(version, str):
        raise BadDocument("ruleset: missing name or version")
    if not isinstance(tool_version, str):
        raise BadDocument("tool version: missing")
    return Group(tool_version, name, version, source)


_SHARED: dict[str, str] = {}
MAX_SHARED = 200_000


_share = _SHARED.setdefault
"""One string object per distinct text (``_share(text, text)``): rule ids, subjects and
titles repeat in every report, and a shared object is pickled once per batch (a memo
reference after that) and stored once by the aggregator.  :func:`from_report` empties the
table when a hostile stream of distinct values has grown it past :data:`MAX_SHARED`."""


_STATUS_SET = frozenset(STATUSES)
_SEVERITY_SET = frozenset(SEVERITIES)


def _item(r: object, where: str, *, rule_key: str) -> Item:
    if type(r) is not dict:
        raise BadDocument(f"{where}: not an object")
    get = r.get
    status, severity, rule = get("status"), get("severity"), get(rule_key)
    subject, title, actual = get("subject", ""), get("title", ""), get("actual")
    # the common case checked in one expression: 67 results of each of 10,000 reports
    if (status in _STATUS_SET and severity in _SEVERITY_SET and type(rule) is str
            and type(subject) is str and type(title) is str
            and (actual is None or (type(actual) is str and len(actual) <= MAX_VALUE))):
        return (_share(rule, rule), _share(subject, subject), _share(status, status),
                _share(severity, severity), _share(title, title),
                None if actual is None else _share(actual, actual))
    if status not in _STATUS_SET:
        raise BadDocument(f"{where}/status: {status!r} is not one of {', '.join(STATUSES)}")
    if severity not in _SEVERITY_SET:
        raise BadDocument(f"{where}/severity: {severity!r} is not a severity")
    if not isinstance(rule, str):
        raise BadDocument(f"{where}/{rule_key}: missing or not a string")
    if not isinstance(subject, str):
        raise BadDocument(f"{where}/subject: not a string")
    text = _text(actual)
    title = title if isinstance(title, str) else ""
    return (_share(rule, rule), _share(subject, subject), _share(status, status),
            _share(severity, severity), _share(title, title),
            None if text is None else _share(text, text))


def is_event(d: Mapping[str, Any]) -> bool:
    """Whether the document is a SIEM event (else it should be a report)."""
    return d.get("schema") == EVENT_SCHEMA


def from_report(d: object, origin: str) -> NodeReport:
    """The reduced node of a JSON report document; :class:`BadDocument` if unusable."""
    if not isinstance(d, dict):
        raise BadDocument("not a JSON object")
    if len(_SHARED) > MAX_SHARED:
        _SHARED.clear()
    if d.get("kind") == "aiaudit.fleet":
        raise BadDocument("this is a fleet report, not a node's (give it to --since)")
    version = d.get("schema_version")
    if not isinstance(version, str) or not version.startswith("1."):
        raise BadDocument(f"schema_version: {version!r} is not a version-1 aiaudit report")
    host = d.get("host")
    if not isinstance(host, dict):
        raise BadDocument("host: missing")
    tool = d.get("tool")
    results = d.get("results")
    if not isinstance(results, list):
        raise BadDocument("results: missing or not a list")
    items = tuple(_item(r, f"results/{i}", rule_key="rule_id") for i, r in enumerate(results))
    started = d.get("started")
    run_id = d.get("run_id")
    return NodeReport(
        hostname=_hostname(host), machine_id=_machine_id(host),
        group=_group(d, tool.get("version") if isinstance(tool, dict) else None),
        started=started if isinstance(started, str) else "",
        run_id=run_id if isinstance(run_id, str) else "", origin=origin,
        facts=_facts(host), items=items)


@record
class EventPiece:
    """One event, reduced: a result's item, or a summary's node (without its items)."""

    run_id: str
    origin: str
    hostname: str
    item: Item | None = None
    node: NodeReport | None = None


def from_event(d: dict[str, Any], origin: str) -> EventPiece:
    """The reduced event; :class:`BadDocument` if unusable."""
    run_id = d.get("run_id")
    if not isinstance(run_id, str) or not run_id:
        raise BadDocument("run_id: missing")
    kind = d.get("event")
    if kind not in ("result", "summary"):
        raise BadDocument(f"event: {kind!r} is not result or summary")
    host = d.get("host")
    if not isinstance(host, dict):
        raise BadDocument("host: missing")
    hostname = _hostname(host)
    if len(_SHARED) > MAX_SHARED:
        _SHARED.clear()
    if kind == "result":
        return EventPiece(run_id, origin, hostname, item=_item(d, "event", rule_key="rule"))
    started = d.get("timestamp")
    return EventPiece(run_id, origin, hostname, node=NodeReport(
        hostname=hostname, machine_id=_machine_id(host),
        group=_group(d, d.get("tool_version")),
        started=started if isinstance(started, str) else "", run_id=run_id,
        origin=origin, facts=_facts(host), items=()))


def reduce(data: object, origin: str) -> NodeReport | EventPiece:
    """A decoded document reduced to what the fleet keeps (report or event)."""
    if isinstance(data, dict) and is_event(data):
        return from_event(data, origin)
    return from_report(data, origin)


@record(frozen=False)
class _Pending:
    hostname: str
    origin: str
    items: list[Item]


class EventAssembler:
    """Collects event pieces per ``run_id``; a run becomes a node at its ``summary`` event
    (events of many nodes may be interleaved).

    Only the reduced items of open runs are held.  :meth:`unfinished` names the runs whose
    summary never came (a cut stream): they are bad input, not nodes.
    """

    def __init__(self) -> None:
        self._open: dict[str, _Pending] = {}

    def add(self, piece: EventPiece) -> NodeReport | None:
        """Take one event; the finished node when it was a run's summary."""
        pending = self._open.get(piece.run_id)
        if piece.item is not None:
            if pending is None:
                pending = self._open[piece.run_id] = _Pending(piece.hostname, piece.origin, [])
            pending.items.append(piece.item)
            return None
        node = piece.node
        assert node is not None
        if pending is None:  # a run without results (every rule filtered out)
            return node
        del self._open[piece.run_id]
        return NodeReport(hostname=node.hostname, machine_id=node.machine_id,
                          group=node.group, started=node.started, run_id=node.run_id,
                          origin=pending.origin, facts=node.facts, items=tuple(pending.items))

    def unfinished(self) -> Iterator[tuple[str, str]]:
        """``(origin, message)`` for each run whose summary event never arrived."""
        for run_id, p in self._open.items():
            yield (p.origin, f"events of run {run_id} (host {p.hostname}) end without their "
                             f"summary event: truncated stream")
        self._open.clear()
