# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""NVIDIA's Xid catalogue as data (``checks/data/xid_catalogue.json``): each code's
mnemonic and the immediate action NVIDIA's catalogue calls for, the NVRM message patterns,
and their source and date; a rule's ``catalogue`` param adds or overrides codes."""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record

DATA = "data/xid_catalogue.json"


@record
class Entry:
    """One Xid code."""

    mnemonic: str
    action: str
    """NVIDIA's Resolution Bucket (Immediate Action): ``RESET_GPU``, ``RESTART_APP``..."""
    meaning: str = ""
    origin: str = "NVIDIA Xid catalogue"
    """``NVIDIA Xid catalogue`` or ``ruleset params`` (an extension or override)."""


@record
class Catalogue:
    """The Xid table, the action glossary, the NVRM patterns and where they come from."""

    xid: Mapping[str, Entry]
    actions: Mapping[str, str]
    nvrm: tuple[tuple[str, str, str, str], ...]
    """(name, substring, meaning, action) of NVRM errors other than Xid."""
    source: str
    read: str

    def entry(self, code: str) -> Entry:
        """The catalogue entry of ``code``; an unknown code is ``UNKNOWN`` (not judged by a
        rule that selects actions, named in the report)."""
        return self.xid.get(code) or Entry("(not in the catalogue)", "UNKNOWN",
                                           origin="not in the catalogue")


class _Entries(Mapping[str, Entry]):
    """The Xid table: each code's :class:`Entry` made when first looked up (a scan looks
    up the few codes its log holds, not the 160 of the catalogue)."""

    def __init__(self, raw: Mapping[str, Mapping[str, Any]]) -> None:
        self._raw = raw
        self._made: dict[str, Entry] = {}

    def __getitem__(self, code: str) -> Entry:
        got = self._made.get(code)
        if got is None:
            e = self._raw[code]
            got = self._made[code] = Entry(str(e.get("mnemonic", "")), e["action"],
                                           str(e.get("meaning", "")))
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def parse(doc: Any, where: str = DATA) -> Catalogue:
    """Validate and index the catalogue document (:class:`ParseError` naming the entry)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("xid"), dict):
        raise ParseError("no 'xid' table", source=where)
    raw: dict[str, Mapping[str, Any]] = {}
    for code, e in doc["xid"].items():
        if not str(code).isdigit() or not isinstance(e, dict) \
                or not isinstance(e.get("action"), str):
            raise ParseError(f"xid {code!r}: needs a numeric code and an 'action'", source=where)
        raw[str(int(code))] = e
    xid = _Entries(raw)
    nvrm = tuple((str(p["name"]), str(p["match"]), str(p.get("meaning", "")),
                  str(p.get("action", ""))) for p in doc.get("nvrm", ()))
    src = doc.get("source", {})
    return Catalogue(xid, dict(doc.get("actions", {})), nvrm,
                     str(src.get("xid", "")) if isinstance(src, dict) else "",
                     str(doc.get("read", "")))


_SHIPPED: list[Catalogue] = []


def shipped() -> Catalogue:
    """The catalogue shipped with aiaudit (parsed once per process)."""
    if not _SHIPPED:
        from aiaudit.core import resources

        text = resources.read_text("aiaudit.checks", DATA)
        _SHIPPED.append(parse(json.loads(text)))
    return _SHIPPED[0]


def extended(base: Catalogue, extra: Mapping[str, Mapping[str, str]]) -> Catalogue:
    """``base`` with a rule's ``catalogue`` param applied: each code's fields replace the
    shipped ones (a new code needs an ``action``)."""
    if not extra:
        return base
    xid = dict(base.xid)
    for code, fields in extra.items():
        old = xid.get(str(int(code)))
        xid[str(int(code))] = Entry(
            fields.get("mnemonic", old.mnemonic if old else ""),
            fields.get("action", old.action if old else "UNKNOWN"),
            fields.get("meaning", old.meaning if old else ""), origin="ruleset params")
    return Catalogue(xid, base.actions, base.nvrm, base.source, base.read)
