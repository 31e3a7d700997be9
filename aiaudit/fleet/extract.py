"""What the fleet keeps of one report: identity, group, host facts, class facts (the
``inventory.facts`` result's data) and, per result, rule id, subject, status, severity and
actual value.  Everything else (evidence, remediation, messages) is dropped as soon as the
document is read, so memory grows with the number of results, not with the size of the
reports.

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

import itertools
import json
import re
import time
from datetime import datetime, timezone
from typing import Any, Iterator, Mapping

from aiaudit.core.startup.records import record
from aiaudit.fleet import bounds
from aiaudit.fleet.hostlist import HOSTNAME

STATUSES: tuple[str, ...] = ("pass", "fail", "error", "skip", "waived")
SEVERITIES: tuple[str, ...] = ("info", "low", "medium", "high", "critical")
EVENT_SCHEMA = "aiaudit.event/1"
MAX_VALUE = 200
"""Characters of an ``actual`` value, a subject or a host fact kept (longer ones end with
``...``)."""
MAX_TITLE = 300
"""Characters of a rule title kept (the shipped rulesets' longest: 111)."""
MAX_NAME = 100
"""Characters of a ruleset name, ruleset version or aiaudit version."""

RULE_ID = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)*$")
"""A rule id as ``schemas/ruleset.schema.json`` allows it (at most 100 characters)."""
IDENTIFIER = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
"""A machine id (machine-id(5): 32 hexadecimal digits; ``uninitialized`` on a first boot)
or a DMI product UUID as a report may carry it."""
FACT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
PLACEHOLDER_UUIDS = frozenset({
    "00000000-0000-0000-0000-000000000000",  # SMBIOS 2.6: set but not filled in
    "ffffffff-ffff-ffff-ffff-ffffffffffff",  # SMBIOS: not present (dmidecode "Not Settable")
    "03000200-0400-0500-0006-000700080009",  # a firmware default many boards ship with
})
"""DMI product UUIDs that name no machine: every board with unset firmware reports the
same one, so they count as unknown, never as one node."""

FACTS: tuple[str, ...] = ("os", "kernel", "image_id", "mode")
"""Host facts compared across nodes (host fields that name a node, such as ``hostname``,
``machine_id``, ``product_uuid`` and ``root``, are identity, not facts)."""
_NOT_FACTS = frozenset({"hostname", "machine_id", "product_uuid", "root", "image_kind_reason",
                        "os_release_path"})
"""Host fields that are identity, or say where or why rather than what: not compared."""


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
    product_uuid: str | None = None
    """The DMI product UUID (``None``: not readable, or a placeholder)."""
    started_at: float = 0.0
    """``started`` in seconds since the epoch (UTC)."""


def _text(value: object, limit: int = MAX_VALUE) -> str | None:
    """A value as kept: strings as they are, other JSON as compact JSON, capped at
    ``limit`` characters (a nested value is encoded only as far as the cap)."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value
    else:
        pieces: list[str] = []
        size = 0
        try:
            for piece in json.JSONEncoder(sort_keys=True, ensure_ascii=False).iterencode(value):
                pieces.append(piece)
                size += len(piece)
                if size > limit:
                    break
        except (RecursionError, ValueError, TypeError):  # only nesting fails on decoded JSON
            return "(nested too deeply)"
        text = "".join(pieces)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def shown(value: object) -> str:
    """A hostile value as a problem line quotes it: short, and ``repr`` of a string."""
    return repr(_text(value, 60)) if isinstance(value, str) else (_text(value, 60) or "null")


def _str(d: Mapping[str, Any], key: str, where: str, limit: int = MAX_NAME) -> str:
    value = d.get(key)
    if not isinstance(value, str):
        raise BadDocument(f"{where}{key}: missing or not a string")
    if len(value) > limit:
        raise BadDocument(f"{where}{key}: longer than {limit} characters")
    return value


def _hostname(host: Mapping[str, Any]) -> str:
    name = _str(host, "hostname", "host/", 253)
    if not HOSTNAME.match(name):
        raise BadDocument(f"host/hostname: {shown(name)} is not a host name")
    return name


def _identifier(host: Mapping[str, Any], key: str) -> str | None:
    value = host.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not IDENTIFIER.match(value):
        raise BadDocument(f"host/{key}: {shown(value)} is not an identifier")
    return value


def _product_uuid(host: Mapping[str, Any]) -> str | None:
    uuid = _identifier(host, "product_uuid")
    return None if uuid is None or uuid.lower() in PLACEHOLDER_UUIDS else uuid.lower()


INVENTORY_CHECK = "inventory.facts"
"""The check whose result's ``data`` carries the node's class facts (GPU model and count,
PCIe links, VBIOS, HCAs, memory, CPUs, kernel, driver stack: ``aiaudit baseline``'s facts;
``checks/inventory/facts.py``)."""
CLASS_FACT = re.compile(r"^[a-z][a-z0-9_]{0,31}(\.[a-z0-9_]{1,32}){0,4}$")
"""A class fact's name: dotted lowercase (``gpu.nvidia.vbios``, ``hca.port_rate``)."""
MAX_DEVICES = 1024
"""Devices of one per-device fact read (an 8-GPU node has 8; a 4-socket one, 4)."""


def _class_fact_value(value: object) -> str | None:
    """A class fact as one comparable text: a scalar as it is; a per-device value
    (``{"0000:3b:00.0": 16, ...}``) as its distinct values with their device counts, most
    first (``16 (8 devices)``, ``16 (7 devices), 8 (1 device)``): bus addresses differ
    between identical nodes, the values must not."""
    if isinstance(value, dict):
        counts: dict[str, int] = {}
        for v in itertools.islice(value.values(), MAX_DEVICES):
            text = _text(v, 60) or "null"
            counts[text] = counts.get(text, 0) + 1
        if not counts:
            return None
        shares = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return _text(", ".join(f"{v} ({n} device{'s' if n > 1 else ''})" for v, n in shares))
    return _text(value)


def class_facts(results: list[Any]) -> tuple[tuple[str, str], ...]:
    """The class facts of a report (issue 29: they become drift dimensions of the fleet):
    the ``data.facts`` of its last ``inventory.facts`` result (a report has one; the
    results are searched from the end, where ``dl-training`` has it), at most
    :data:`~aiaudit.fleet.bounds.MAX_CLASS_FACTS` of them (names that are not
    :data:`CLASS_FACT` are skipped), each value at most ``MAX_VALUE`` characters.  A report
    whose ruleset has no such rule has none."""
    r = next((r for r in reversed(results)
              if type(r) is dict and r.get("check") == INVENTORY_CHECK), None)
    data = r.get("data") if r is not None else None
    facts = data.get("facts") if isinstance(data, dict) else None
    if not isinstance(facts, dict):
        return ()
    out: dict[str, str] = {}
    for name, value in itertools.islice(facts.items(), 4 * bounds.MAX_CLASS_FACTS):
        if len(out) >= bounds.MAX_CLASS_FACTS:
            break
        if not isinstance(name, str) or not CLASS_FACT.match(name):
            continue
        text = _class_fact_value(value)
        if text is not None:
            out[_share(name, name)] = _share(text, text)
    return tuple(sorted(out.items()))


def _facts(host: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for key, value in host.items():
        if len(out) >= bounds.MAX_FACTS:
            break
        if key in _NOT_FACTS or value is None or not FACT_NAME.match(key):
            continue
        if key == "os" and isinstance(value, dict):  # report: {name, id, version}
            name, version = value.get("name"), value.get("version")
            text = " ".join(str(_text(v)) for v in (name, version)
                            if v and not (name and version and str(version) in str(name)))
            if text:
                out["os"] = _text(text) or ""
        elif isinstance(value, (str, int, float, bool)):
            out[key] = _text(value) or ""
    return tuple(sorted(out.items()))


_now = time.time
"""The clock a report's start time is compared with (tests replace it)."""


def started_at(value: object, key: str) -> float:
    """``value`` (an RFC 3339 time, as a report's ``started`` or an event's ``timestamp``)
    in seconds since the epoch; :class:`BadDocument` when it is not one, or lies further
    in the future than :data:`~aiaudit.fleet.bounds.FUTURE_SKEW_S` (a report that claims to
    be newer than a node's real one must not replace it)."""
    if not isinstance(value, str) or not value:
        raise BadDocument(f"{key}: missing or not a string")
    try:
        if len(value) > 40:
            raise ValueError(value)
        at = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadDocument(f"{key}: {shown(value)} is not an RFC 3339 time") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    seconds = at.timestamp()
    ahead = seconds - _now()
    if ahead > bounds.FUTURE_SKEW_S:
        raise BadDocument(f"{key}: {value} is {_duration(ahead)} ahead of this machine's "
                          f"clock (more than {bounds.FUTURE_SKEW_S:g} s): refused, a report "
                          f"from the future must not replace a node's own")
    return seconds


def _duration(seconds: float) -> str:
    for unit, size in (("years", 365.25 * 86400), ("days", 86400.0), ("hours", 3600.0),
                       ("minutes", 60.0)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.0f} {unit}"
    return f"{seconds:.0f} s"


def _group(d: Mapping[str, Any], tool_version: object) -> Group:
    rs = d.get("ruleset")
    source = ""
    if isinstance(rs, dict):  # report: {"name", "version", maybe "path"/"file"/"sha256"}
        name, version = rs.get("name"), rs.get("version")
        for key in ("sha256", "digest", "path", "file"):
            if isinstance(rs.get(key), str) and rs[key]:
                source = _text(rs[key]) or ""
                break
    else:  # event: "ruleset" and "ruleset_version" strings
        name, version = rs, d.get("ruleset_version")
    if not isinstance(name, str) or not isinstance(version, str):
        raise BadDocument("ruleset: missing name or version")
    if not isinstance(tool_version, str):
        raise BadDocument("tool version: missing")
    if max(len(name), len(version), len(tool_version)) > MAX_NAME:
        raise BadDocument(f"ruleset or tool version: longer than {MAX_NAME} characters")
    return Group(tool_version, name, version, source)


_SHARED: dict[str, str] = {}
MAX_SHARED = 200_000


_share = _SHARED.setdefault
"""One string object per distinct text (``_share(text, text)``): rule ids, subjects and
titles repeat in every report, and a shared object is pickled once per batch (a memo
reference after that) and stored once by the aggregator.  :func:`from_report` empties the
table when a hostile stream of distinct values has grown it past :data:`MAX_SHARED`."""

_RULE_IDS: set[str] = set()
"""Rule ids already checked against :data:`RULE_ID` (emptied with the shared table)."""

_STATUS_SET = frozenset(STATUSES)
_SEVERITY_SET = frozenset(SEVERITIES)


def _item(r: object, where: str, *, rule_key: str) -> Item:
    if type(r) is not dict:
        raise BadDocument(f"{where}: not an object")
    get = r.get
    status, severity, rule = get("status"), get("severity"), get(rule_key)
    subject, title, actual = get("subject", ""), get("title", ""), get("actual")
    # the common case checked in one expression: 104 results of each of 10,000 reports
    if (type(status) is str and status in _STATUS_SET and type(severity) is str
            and severity in _SEVERITY_SET and type(rule) is str and rule in _RULE_IDS
            and type(subject) is str and len(subject) <= MAX_VALUE
            and type(title) is str and len(title) <= MAX_TITLE
            and (actual is None or (type(actual) is str and len(actual) <= MAX_VALUE))):
        return (_share(rule, rule), _share(subject, subject), _share(status, status),
                _share(severity, severity), _share(title, title),
                None if actual is None else _share(actual, actual))
    return _checked_item(where, rule_key, status, severity, rule, subject, title, actual)


def _checked_item(where: str, rule_key: str, status: object, severity: object, rule: object,
                  subject: object, title: object, actual: object) -> Item:
    """:func:`_item` where the common case does not hold: each field checked, with the
    first problem, or capped."""
    if not isinstance(status, str) or status not in _STATUS_SET:
        raise BadDocument(f"{where}/status: {shown(status)} is not one of "
                          f"{', '.join(STATUSES)}")
    if not isinstance(severity, str) or severity not in _SEVERITY_SET:
        raise BadDocument(f"{where}/severity: {shown(severity)} is not a severity")
    if not isinstance(rule, str):
        raise BadDocument(f"{where}/{rule_key}: missing or not a string")
    if len(rule) > 100 or not RULE_ID.match(rule):
        raise BadDocument(f"{where}/{rule_key}: {shown(rule)} is not a rule id")
    _RULE_IDS.add(rule)
    if not isinstance(subject, str):
        raise BadDocument(f"{where}/subject: not a string")
    subject = _text(subject) or ""
    text = _text(actual)
    title = _text(title, MAX_TITLE) if isinstance(title, str) else ""
    return (_share(rule, rule), _share(subject, subject), _share(status, status),
            _share(severity, severity), _share(title or "", title or ""),
            None if text is None else _share(text, text))


def is_event(d: Mapping[str, Any]) -> bool:
    """Whether the document is a SIEM event (else it should be a report)."""
    return d.get("schema") == EVENT_SCHEMA


def _fresh_tables() -> None:
    if len(_SHARED) > MAX_SHARED:
        _SHARED.clear()
        _RULE_IDS.clear()


def from_report(d: object, origin: str) -> NodeReport:
    """The reduced node of a JSON report document; :class:`BadDocument` if unusable."""
    if not isinstance(d, dict):
        raise BadDocument("not a JSON object")
    _fresh_tables()
    if d.get("kind") == "aiaudit.fleet":
        raise BadDocument("this is a fleet report, not a node's (give it to --since)")
    version = d.get("schema_version")
    if not isinstance(version, str) or not version.startswith("1."):
        raise BadDocument(f"schema_version: {shown(version)} is not a version-1 aiaudit "
                          f"report")
    host = d.get("host")
    if not isinstance(host, dict):
        raise BadDocument("host: missing")
    tool = d.get("tool")
    results = d.get("results")
    if not isinstance(results, list):
        raise BadDocument("results: missing or not a list")
    if len(results) > bounds.MAX_RESULTS:
        raise BadDocument(f"results: {len(results):,} results, more than the "
                          f"{bounds.MAX_RESULTS:,} a report may hold")
    hostname = _hostname(host)
    items = tuple(_item(r, f"results/{i}", rule_key="rule_id") for i, r in enumerate(results))
    run_id = d.get("run_id")
    return NodeReport(
        hostname=hostname, machine_id=_identifier(host, "machine_id"),
        group=_group(d, tool.get("version") if isinstance(tool, dict) else None),
        started=str(d.get("started")), started_at=started_at(d.get("started"), "started"),
        run_id=run_id if isinstance(run_id, str) else "", origin=origin,
        facts=_facts(host) + class_facts(results), items=items,
        product_uuid=_product_uuid(host))


@record
class EventPiece:
    """One event, reduced: a result's item, or a summary's node (without its items)."""

    run_id: str
    origin: str
    identity: tuple[str, str | None, str | None, Group]
    """Host name, machine id, product UUID and group: every event of a run must agree."""
    item: Item | None = None
    node: NodeReport | None = None


def from_event(d: dict[str, Any], origin: str) -> EventPiece:
    """The reduced event; :class:`BadDocument` if unusable."""
    run_id = d.get("run_id")
    if not isinstance(run_id, str) or not run_id or len(run_id) > MAX_NAME:
        raise BadDocument("run_id: missing, or longer than 100 characters")
    kind = d.get("event")
    if kind not in ("result", "summary"):
        raise BadDocument(f"event: {shown(kind)} is not result or summary")
    host = d.get("host")
    if not isinstance(host, dict):
        raise BadDocument("host: missing")
    hostname = _hostname(host)
    mid, uuid = _identifier(host, "machine_id"), _product_uuid(host)
    group = _group(d, d.get("tool_version"))
    _fresh_tables()
    identity = (hostname, mid, uuid, group)
    if kind == "result":
        return EventPiece(run_id, origin, identity, item=_item(d, "event", rule_key="rule"))
    started = d.get("timestamp")
    return EventPiece(run_id, origin, identity, node=NodeReport(
        hostname=hostname, machine_id=mid, group=group, started=str(started),
        started_at=started_at(started, "timestamp"), run_id=run_id, origin=origin,
        facts=_facts(host), items=(), product_uuid=uuid))


def reduce(data: object, origin: str) -> NodeReport | EventPiece:
    """A decoded document reduced to what the fleet keeps (report or event)."""
    if isinstance(data, dict) and is_event(data):
        return from_event(data, origin)
    return from_report(data, origin)


@record(frozen=False)
class _Pending:
    identity: tuple[str, str | None, str | None, Group]
    origin: str
    items: list[Item]


class EventAssembler:
    """Collects event pieces per ``run_id``; a run becomes a node at its ``summary`` event
    (events of many nodes may be interleaved).

    Only the reduced items of open runs are held, at most
    :data:`~aiaudit.fleet.bounds.MAX_OPEN_RUNS` runs of at most
    :data:`~aiaudit.fleet.bounds.MAX_RESULTS` results.  Every event of a run must name the
    same host, ids and ruleset: an event that claims another node's run is refused (a
    problem line), it neither joins nor closes that run.  :meth:`unfinished` names the runs
    whose summary never came (a cut stream): they are bad input, not nodes.
    """

    def __init__(self) -> None:
        self._open: dict[str, _Pending] = {}
        self._dropped: set[str] = set()

    def add(self, piece: EventPiece) -> NodeReport | str | None:
        """Take one event: the finished node when it was a run's summary, a problem line
        when the event cannot be used, else ``None``."""
        pending = self._open.get(piece.run_id)
        if pending is not None and pending.identity != piece.identity:
            return (f"{piece.origin}: event of run {_text(piece.run_id, 60)} names host "
                    f"{piece.identity[0]}, the run's earlier events "
                    f"{pending.identity[0]} (or other ids or ruleset): refused")
        if piece.item is not None:
            return self._result(piece, pending)
        node = piece.node
        assert node is not None
        if piece.run_id in self._dropped:
            self._dropped.discard(piece.run_id)
            return None
        if pending is None:  # a run without results (every rule filtered out)
            return node
        del self._open[piece.run_id]
        return NodeReport(hostname=node.hostname, machine_id=node.machine_id,
                          group=node.group, started=node.started, run_id=node.run_id,
                          origin=pending.origin, facts=node.facts, items=tuple(pending.items),
                          product_uuid=node.product_uuid, started_at=node.started_at)

    def _result(self, piece: EventPiece, pending: _Pending | None) -> str | None:
        assert piece.item is not None
        if piece.run_id in self._dropped:
            return None
        if pending is None:
            if len(self._open) >= bounds.MAX_OPEN_RUNS:
                self._drop(piece.run_id)
                return (f"{piece.origin}: more than {bounds.MAX_OPEN_RUNS:,} runs without "
                        f"their summary event at once: run {_text(piece.run_id, 60)} "
                        f"(host {piece.identity[0]}) is not read")
            pending = self._open[piece.run_id] = _Pending(piece.identity, piece.origin, [])
        if len(pending.items) >= bounds.MAX_RESULTS:
            del self._open[piece.run_id]
            self._drop(piece.run_id)
            return (f"{pending.origin}: run {_text(piece.run_id, 60)} (host "
                    f"{piece.identity[0]}): more than {bounds.MAX_RESULTS:,} result events: "
                    f"refused")
        pending.items.append(piece.item)
        return None

    def _drop(self, run_id: str) -> None:
        """Remember a refused run (its later events are ignored), at most as many as runs
        may be open."""
        if len(self._dropped) >= bounds.MAX_OPEN_RUNS:
            self._dropped.clear()
        self._dropped.add(run_id)

    def unfinished(self) -> Iterator[tuple[str, str]]:
        """``(origin, message)`` for each run whose summary event never arrived."""
        for run_id, p in self._open.items():
            yield (p.origin, f"events of run {_text(run_id, 60)} (host {p.identity[0]}) end "
                             f"without their summary event: truncated stream")
        self._open.clear()
