"""nftables rulesets: ``nft -j list ruleset`` JSON (libnftables-json(5)) and the nft text
syntax of ``/etc/nftables.conf`` (nft(8)), both into :mod:`aiaudit.linux.netfilter.model`.

The text parser understands what input filtering needs: ``flush ruleset``, ``include``
(through a resolver the caller passes, so the parser stays pure), ``define``/``$var``,
``table``/``chain``/``set`` blocks and the ``add``/``insert``/``delete``/``flush`` commands,
base chain ``type filter hook input priority N; policy drop;``, and rule matches on
interfaces, conntrack state, protocol, ports (single, range, anonymous and named sets),
addresses, with ``accept``/``drop``/``reject``/``jump``/``goto``/``return``.  Anything else in
a rule becomes an *unknown* condition (the evaluator then answers "maybe", never a guess).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterator

from aiaudit.core.errors import ParseError
from aiaudit.core.parsing import to_int
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record
from aiaudit.linux.netfilter.model import Chain, Cond, Rule, Ruleset

FAMILIES = ("ip", "ip6", "inet", "arp", "bridge", "netdev")

PRIORITY_NAMES = {"raw": -300, "mangle": -150, "dstnat": -100, "filter": 0,
                  "security": 50, "srcnat": 100}
"""Standard priority names for ip/ip6/inet (nft(8) "CHAINS", table 6)."""

SERVICES = {"ssh": 22, "http": 80, "https": 443, "domain": 53, "smtp": 25, "ftp": 21,
            "telnet": 23, "ntp": 123, "bootps": 67, "bootpc": 68, "mdns": 5353,
            "imap": 143, "imaps": 993, "pop3": 110, "submission": 587, "snmp": 161,
            "ldap": 389, "ldaps": 636, "rsync": 873, "nfs": 2049, "mysql": 3306,
            "postgresql": 5432, "http-alt": 8080, "webcache": 8080, "redis": 6379}
"""Common /etc/services names nft accepts for ports."""

MAX_INCLUDE_DEPTH = 16
"""nft's own include depth limit (``MAX_INCLUDE_DEPTH``, src/scanner.l)."""

Resolver = Callable[[str, str], list[tuple[str, str]]]
"""``resolver(pattern, including_file)`` -> [(path, text)] for an ``include``."""


# ================================================================= shared value handling
def port_ranges(values: list[Any]) -> tuple[tuple[int, int], ...] | None:
    """Port ranges from values (ints, ``"22"``, ``"8000-8010"``, names, ``(lo, hi)``);
    ``None`` when one cannot be resolved."""
    out: list[tuple[int, int]] = []
    for v in values:
        if isinstance(v, tuple):
            out.append(v)
            continue
        if isinstance(v, int) and not isinstance(v, bool):
            out.append((v, v))
            continue
        s = str(v).strip('"')
        m = re.fullmatch(r"(\w[\w-]*?)-(\w+)", s)
        lo_hi = [s] if m is None or s in SERVICES else [m.group(1), m.group(2)]
        nums = []
        for part in lo_hi:
            if part.isdigit():
                nums.append(to_int(part, what="port"))
            elif part in SERVICES:
                nums.append(SERVICES[part])
            else:
                return None
        if any(n > 65535 for n in nums):
            return None
        out.append((nums[0], nums[-1]))
    return tuple(out)


def _dport(protos: tuple[str, ...], values: list[Any], negate: bool, text: str) -> Cond:
    return Cond("dport", protos, negate, port_ranges(values), text)


_PROTO_OF = {"tcp": ("tcp",), "udp": ("udp",), "udplite": ("udplite",), "sctp": ("sctp",),
             "dccp": ("dccp",), "th": ()}

_CMP = {"<": lambda n: (0, n - 1), "lt": lambda n: (0, n - 1), "<=": lambda n: (0, n),
        "le": lambda n: (0, n), ">": lambda n: (n + 1, 65535), "gt": lambda n: (n + 1, 65535),
        ">=": lambda n: (n, 65535), "ge": lambda n: (n, 65535)}
"""Port comparisons (``tcp dport < 1024``) as ranges."""


# ================================================================= JSON
def _jvalues(right: Any, sets: dict[str, list[Any]]) -> list[Any] | None:
    """The values a match compares with (``None``: not understood)."""
    if isinstance(right, dict):
        if "set" in right:
            if not isinstance(right["set"], list):
                return None
            out: list[Any] = []
            for v in right["set"]:
                sub = _jvalues(v, sets)
                if sub is None:
                    return None
                out.extend(sub)
            return out
        if "range" in right and isinstance(right["range"], list) and len(right["range"]) == 2:
            lo, hi = right["range"]
            if isinstance(lo, int) and isinstance(hi, int):
                return [(lo, hi)]
            return [f"{lo}-{hi}"]
        if "prefix" in right and isinstance(right["prefix"], dict):
            p = right["prefix"]
            return [f"{p.get('addr')}/{p.get('len')}"]
        return None
    if isinstance(right, list):
        return [v for v in right if isinstance(v, (int, str))]
    if isinstance(right, str) and right.startswith("@"):
        got = sets.get(right[1:])
        return None if got is None else _jvalues({"set": got}, sets)
    if isinstance(right, (int, str)):
        return [right]
    return None


def _jmatch(m: dict[str, Any], sets: dict[str, list[Any]]) -> list[Cond]:
    """The conditions of one ``match`` statement; one ``unknown`` condition when this model
    does not understand it."""
    left = m.get("left")
    text = json.dumps(m, sort_keys=True)
    if not isinstance(left, dict):
        return [Cond("unknown", text=text)]
    compared = _jcompare(m.get("op", "=="), _jvalues(m.get("right"), sets))
    if compared is None:
        return [Cond("unknown", text=text)]
    vals, negate = compared
    return _jleft(left, vals, negate, text) or [Cond("unknown", text=text)]


def _jcompare(op: Any, vals: list[Any] | None) -> tuple[list[Any] | None, bool] | None:
    """(values, negated) of a match operator; a port comparison (``<``, ``ge``...) becomes a
    range.  ``None``: an operator this model does not handle."""
    if isinstance(op, str) and op in _CMP:
        if vals and len(vals) == 1 and isinstance(vals[0], int):
            return [_CMP[op](vals[0])], False
        return None
    if op not in ("==", "!=", "in"):
        return None
    return vals, op == "!="


def _jleft(left: dict[str, Any], vals: list[Any] | None, negate: bool,
           text: str) -> list[Cond]:
    """Conditions for the left-hand side of a match (empty: not modelled)."""
    strs = tuple(str(v) for v in vals or ())
    if "meta" in left:
        meta = left["meta"]
        key = meta.get("key") if isinstance(meta, dict) else None
        kind = _META_KINDS.get(key) if isinstance(key, str) else None
        return [Cond(kind, strs, negate, text=text)] if kind and vals is not None else []
    if "ct" in left:
        ct = left["ct"]
        key = ct.get("key") if isinstance(ct, dict) else None
        return [Cond("ct", strs, negate, text=text)] if key == "state" and vals is not None \
            else []
    if "payload" in left and isinstance(left["payload"], dict):
        return _jpayload(left["payload"], vals, strs, negate, text)
    return []


_META_KINDS = {"iif": "iif", "iifname": "iif", "l4proto": "proto", "nfproto": "family"}
"""``meta`` keys this model understands and the condition kind each one is."""


def _jpayload(payload: dict[str, Any], vals: list[Any] | None, strs: tuple[str, ...],
              negate: bool, text: str) -> list[Cond]:
    """Conditions of a header field match (``tcp dport``, ``ip saddr``...)."""
    proto, fld = payload.get("protocol"), payload.get("field")
    if isinstance(proto, str) and proto in _PROTO_OF:
        protos = _PROTO_OF[proto]
        if fld == "dport":
            return [Cond("dport", protos, negate, None, text)] if vals is None else \
                [_dport(protos, vals, negate, text)]
        pc = [Cond("proto", protos, text=text)] if protos else []
        return [*pc, Cond("unknown", text=text)] if fld == "sport" else pc
    if proto in ("ip", "ip6"):
        fam = Cond("family", ("ipv4",) if proto == "ip" else ("ipv6",), text=text)
        if fld in ("saddr", "daddr") and vals is not None:
            return [fam, Cond(fld, strs, negate, text=text)]
        if fld in ("protocol", "nexthdr") and vals is not None:
            return [fam, Cond("proto", strs, negate, text=text)]
        return [fam, Cond("unknown", text=text)]
    if proto in ("icmp", "icmpv6"):
        return [Cond("proto", ("icmp" if proto == "icmp" else "ipv6-icmp",), text=text)]
    return []


_VERDICTS = ("accept", "drop", "reject", "return", "jump", "goto", "continue", "queue")
_XT_NOOP_TARGETS = ("LOG", "NFLOG", "MARK", "CONNMARK", "TRACE", "CT", "AUDIT", "CLASSIFY")
_XT_VERDICTS = {"REJECT": "reject", "DROP": "drop", "ACCEPT": "accept"}
_NOOP = ("counter", "log", "mangle", "meta", "notrack", "synproxy", "set", "quota")

_VmapEntry = tuple[list[Cond], "str | None", "str | None"]
"""(conditions, verdict, jump target) of one verdict map entry."""


def _jverdict(key: str) -> str | None:
    """The model's verdict for a verdict statement (``continue`` is none, ``queue`` maybe)."""
    return {"continue": None, "queue": "maybe"}.get(key, key)


def parse_json(text: str, source: str = "nft -j list ruleset") -> Ruleset:
    """Ruleset from ``nft -j list ruleset`` output."""
    items = _json_items(text, source)
    rs = Ruleset()
    sets = _json_sets(items)
    for o in items:
        c = o.get("chain")
        if isinstance(c, dict):
            rs.add(_json_chain(c, source))
    for o in items:
        r = o.get("rule")
        if isinstance(r, dict):
            _json_rule(rs, r, sets, source)
    return rs


def _json_items(text: str, source: str) -> list[dict[str, Any]]:
    """The objects of the top-level ``nftables`` array (one key each: chain, rule...)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"not JSON: {exc}", source=source) from None
    except RecursionError:
        raise ParseError("not nft JSON: nested too deeply", source=source) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nftables"), list):
        raise ParseError("no top-level 'nftables' array", source=source)
    return [o for o in doc["nftables"] if isinstance(o, dict) and len(o) == 1]


def _json_sets(items: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, list[Any]]]:
    """Named sets' elements by (family, table) and name."""
    sets: dict[tuple[str, str], dict[str, list[Any]]] = {}
    for o in items:
        s = o.get("set")
        if isinstance(s, dict):
            elems = s.get("elem", [])
            sets.setdefault((str(s.get("family")), str(s.get("table"))), {})[
                str(s.get("name"))] = elems if isinstance(elems, list) else [elems]
    return sets


def _json_chain(c: dict[str, Any], source: str) -> Chain:
    try:
        prio = int(c.get("prio", 0))
    except (TypeError, ValueError, OverflowError):
        raise ParseError(f"bad chain priority {c.get('prio')!r}", source=source) from None
    return Chain(str(c.get("family")), str(c.get("table")), str(c.get("name")),
                 hook=c.get("hook") if isinstance(c.get("hook"), str) else None,
                 prio=prio, policy=str(c.get("policy", "accept")), source=source)


def _json_rule(rs: Ruleset, r: dict[str, Any], sets: dict[tuple[str, str], dict[str, list[Any]]],
               source: str) -> None:
    """Add the rule(s) of one JSON ``rule`` object to its chain (ignored without one)."""
    family, table = str(r.get("family")), str(r.get("table"))
    chain = rs.chains.get((family, table, str(r.get("chain"))))
    exprs = r.get("expr")
    if chain is None or not isinstance(exprs, list):
        return
    parts = _JsonRule(sets.get((family, table), {}))
    for e in exprs:
        if isinstance(e, dict) and "xt" in e:
            rs.xt_tables.add((family, table))
        parts.add(e)
    text = " ".join(_jshow(e) for e in exprs)
    if r.get("comment"):
        text += f' comment "{r["comment"]}"'
    text += f" # handle {r.get('handle')}"
    if any(isinstance(e, dict) and ("dnat" in e or "redirect" in e) for e in exprs):
        rs.dnat.append(f"{chain.describe()}: {text}")
    chain.rules.extend(parts.rules(source, text))


class _JsonRule:
    """The conditions and verdict of one JSON rule, read statement by statement."""

    def __init__(self, sets: dict[str, list[Any]]) -> None:
        self.sets = sets
        self.conds: list[Cond] = []
        self.verdict: str | None = None
        self.target: str | None = None
        self.vmap: list[_VmapEntry] | None = None

    def add(self, e: Any) -> None:
        """Read one statement."""
        if not isinstance(e, dict) or len(e) != 1:
            self.conds.append(Cond("unknown", text=str(e)))
            return
        (k, v), = e.items()
        if k == "match" and isinstance(v, dict):
            self.conds.extend(_jmatch(v, self.sets))
        elif k in _VERDICTS:
            self.verdict = _jverdict(k)
            if k in ("jump", "goto") and isinstance(v, dict):
                self.target = str(v.get("target"))
        elif k == "vmap":
            self.vmap = _jvmap(v, self.sets)
        elif k == "xt" and isinstance(v, dict):
            self.xt(v, e)
        elif k not in _NOOP:  # limit, and anything else: cannot tell
            self.conds.append(Cond("unknown", text=json.dumps(e, sort_keys=True)))

    def xt(self, v: dict[str, Any], e: dict[str, Any]) -> None:
        """An iptables-nft extension nft cannot translate: a comment is nothing, a target
        (REJECT, LOG ...) a verdict, a match unknown."""
        if v.get("type") == "match" and v.get("name") == "comment":
            return
        if v.get("type") == "target":
            name = str(v.get("name", ""))
            self.verdict = _XT_VERDICTS.get(name,
                                            None if name in _XT_NOOP_TARGETS else "maybe")
            return
        self.conds.append(Cond("unknown", text=json.dumps(e, sort_keys=True)))

    def rules(self, source: str, text: str) -> list[Rule]:
        """The rule, or one per verdict map entry."""
        if self.vmap is None:
            return [Rule(tuple(self.conds), self.verdict, self.target, source, None, text)]
        return [Rule(tuple(self.conds + mconds), mverdict, mtarget, source, None, text)
                for mconds, mverdict, mtarget in self.vmap]


def _jvmap(v: Any, sets: dict[str, list[Any]]) -> list[_VmapEntry]:
    """The entries of an anonymous verdict map; a named map (``@name``) cannot be told."""
    data = v.get("data") if isinstance(v, dict) else None
    if not (isinstance(data, dict) and isinstance(data.get("set"), list)):
        return [([Cond("unknown", text="vmap")], "maybe", None)]
    return [_jvmap_entry(item, v.get("key"), sets) for item in data["set"]]


def _jvmap_entry(item: Any, key: Any, sets: dict[str, list[Any]]) -> _VmapEntry:
    if not (isinstance(item, list) and len(item) == 2
            and isinstance(item[1], dict) and len(item[1]) == 1):
        return [Cond("unknown", text="vmap")], "maybe", None
    (vk, vv), = item[1].items()
    target = str(vv.get("target")) if isinstance(vv, dict) and vk in ("jump", "goto") else None
    verdict = _jverdict(vk) if vk in _VERDICTS else "maybe"
    return _jmatch({"op": "==", "left": key, "right": item[0]}, sets), verdict, target


def _jvalue_text(v: Any) -> str:
    if isinstance(v, dict):
        if "set" in v and isinstance(v["set"], list):
            return "{ " + ", ".join(_jvalue_text(x) for x in v["set"]) + " }"
        if "range" in v and isinstance(v["range"], list) and len(v["range"]) == 2:
            return f"{_jvalue_text(v['range'][0])}-{_jvalue_text(v['range'][1])}"
        if "prefix" in v and isinstance(v["prefix"], dict):
            return f"{v['prefix'].get('addr')}/{v['prefix'].get('len')}"
        return json.dumps(v, sort_keys=True)
    if isinstance(v, list):
        return ",".join(_jvalue_text(x) for x in v)
    return str(v)


def _jshow(e: Any) -> str:
    """An nft-like rendering of one JSON statement (for messages and evidence)."""
    if not isinstance(e, dict) or len(e) != 1:
        return json.dumps(e, sort_keys=True)
    (k, v), = e.items()
    if k == "match" and isinstance(v, dict):
        return _jshow_match(v)
    if k in ("jump", "goto") and isinstance(v, dict):
        return f"{k} {v.get('target')}"
    if k == "vmap" and isinstance(v, dict):
        data = v["data"].get("set") if isinstance(v.get("data"), dict) else None
        body = ", ".join(f"{_jvalue_text(i[0])} : {_jshow(i[1])}"
                         for i in (data if isinstance(data, list) else ())
                         if isinstance(i, list) and len(i) == 2)
        return f"{_jshow_match({'left': v.get('key'), 'right': ''}).strip()} vmap {{ {body} }}"
    if k == "xt" and isinstance(v, dict):
        return f"xt {v.get('type')} {v.get('name')}"
    return k


def _jshow_match(v: dict[str, Any]) -> str:
    """``tcp dport { 22, 80 }``, ``meta iifname != "eth0"``."""
    left = v.get("left")
    ltxt = json.dumps(left, sort_keys=True)
    if isinstance(left, dict) and len(left) == 1:
        (lk, lv), = left.items()
        if isinstance(lv, dict):
            ltxt = f"{lv.get('protocol')} {lv.get('field')}" if lk == "payload" \
                else f"{lk} {lv.get('key')}"
    op = v.get("op", "==")
    return f"{ltxt} {'' if op in ('==', 'in') else f'{op} '}{_jvalue_text(v.get('right'))}"


# ================================================================= text: tokens
@record
class Tok:
    """A token with its origin."""

    value: str
    kind: str
    """``word``, ``str`` (quoted), ``punct`` (``{ } ; ,``), ``nl``."""
    file: str
    line: int


_TOKEN = lazy_pattern(r'[ \t\r]+|\\\n|#[^\n]*|\n|"(?:[^"\\\n]|\\.)*"|[{};,]|[^\s{};,"#]+')


def tokenize(text: str, source: str) -> list[Tok]:
    """Split nft text into tokens (comments, blanks and line continuations dropped)."""
    out: list[Tok] = []
    line = 1
    pos = 0
    while pos < len(text):
        m = _TOKEN().match(text, pos)
        if m is None:
            raise ParseError(f"unexpected character {text[pos]!r}", line=line, source=source)
        s = m.group(0)
        pos = m.end()
        if s == "\n":
            out.append(Tok("\n", "nl", source, line))
        elif s.startswith('"'):
            out.append(Tok(s[1:-1], "str", source, line))
        elif s in "{};,":
            out.append(Tok(s, "punct", source, line))
        elif not (s[0] in " \t\r#" or s == "\\\n"):
            out.append(Tok(s, "word", source, line))
        line += s.count("\n")
    return out


def _expand(toks: list[Tok], resolve: Resolver | None, depth: int,
            defines: dict[str, list[Tok]]) -> Iterator[Tok]:
    """Splice ``include`` files and substitute ``$variables`` (defined in order)."""
    i = 0
    while i < len(toks):
        t = toks[i]
        word = t.value if t.kind == "word" and i + 1 < len(toks) else ""
        if word == "include" and toks[i + 1].kind == "str":
            yield from _include(t, toks[i + 1].value, resolve, depth, defines)
            i += 2
        elif word in ("define", "redefine"):
            i = _define(toks, i, defines)
        elif word == "undefine":
            defines.pop(toks[i + 1].value, None)
            i += 2
        else:
            yield from _subst(t, defines)
            i += 1


def _include(t: Tok, pattern: str, resolve: Resolver | None, depth: int,
             defines: dict[str, list[Tok]]) -> Iterator[Tok]:
    """The tokens of the files ``include "pattern"`` (at ``t``) names, expanded in turn."""
    if depth >= MAX_INCLUDE_DEPTH:
        raise ParseError("include nested too deeply", line=t.line, source=t.file)
    if resolve is None:
        raise ParseError(f"include {pattern!r} cannot be followed", line=t.line,
                         source=t.file)
    for path, text in resolve(pattern, t.file):
        yield from _expand(tokenize(text, path), resolve, depth + 1, defines)
        yield Tok("\n", "nl", path, 0)


def _define(toks: list[Tok], i: int, defines: dict[str, list[Tok]]) -> int:
    """Record ``define NAME = VALUE`` at ``toks[i]`` (the value ends at a newline or ``;``
    outside braces); the index after it."""
    name = toks[i + 1].value
    j = i + 2
    if j < len(toks) and toks[j].value == "=":
        j += 1
    value: list[Tok] = []
    level = 0
    while j < len(toks):
        tj = toks[j]
        if tj.value == "{":
            level += 1
        elif tj.value == "}":
            level -= 1
        elif level <= 0 and (tj.kind == "nl" or tj.value == ";"):
            break
        value.append(tj)
        j += 1
    defines[name] = [v2 for v in value for v2 in _subst(v, defines)]
    return j


def _subst(t: Tok, defines: dict[str, list[Tok]]) -> list[Tok]:
    if t.kind == "word" and t.value.startswith("$"):
        name = t.value[1:]
        if name not in defines:
            raise ParseError(f"undefined variable {t.value}", line=t.line, source=t.file)
        return [Tok(v.value, v.kind, t.file, t.line) for v in defines[name]]
    return [t]


# ================================================================= text: parser
class _Parser:
    def __init__(self, toks: list[Tok], source: str) -> None:
        self.toks = toks
        self.i = 0
        self.source = source
        self.rs = Ruleset()
        self.sets: dict[tuple[str, str, str], list[str]] = {}
        self.dnat: list[str] = []

    # -- token helpers
    def peek(self, k: int = 0) -> Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self) -> Tok:
        t = self.peek()
        if t is None:
            last = self.toks[-1] if self.toks else None
            raise ParseError("unexpected end of input", line=last.line if last else None,
                             source=last.file if last else self.source)
        self.i += 1
        return t

    def err(self, msg: str, t: Tok | None = None) -> ParseError:
        t = t or self.peek()
        return ParseError(msg, line=t.line if t else None, source=t.file if t else self.source)

    def skip_seps(self) -> None:
        while (t := self.peek()) is not None and (t.kind == "nl" or t.value == ";"):
            self.i += 1

    def statement(self, block_ends: bool = False) -> list[Tok]:
        """Tokens up to a newline or ``;`` outside braces; with ``block_ends`` a ``{ }``
        block (table, set, chain body) also ends the statement."""
        out: list[Tok] = []
        level = 0
        while (t := self.peek()) is not None:
            if t.value == "{" and t.kind == "punct":
                level += 1
            elif t.value == "}" and t.kind == "punct":
                if level == 0:
                    break
                level -= 1
                if level == 0 and block_ends:
                    out.append(self.take())
                    break
            elif level == 0 and (t.kind == "nl" or t.value == ";"):
                break
            out.append(self.take())
        return out

    def expect(self, value: str) -> Tok:
        t = self.take()
        if t.value != value:
            raise self.err(f"expected {value!r}, got {t.value!r}", t)
        return t

    # -- grammar
    def parse(self) -> Ruleset:
        while True:
            self.skip_seps()
            t = self.peek()
            if t is None:
                self.rs.dnat = self.dnat
                return self.rs
            self.command()

    def _family_name(self, words: list[Tok], start: int) -> tuple[str, list[Tok]]:
        if start < len(words) and words[start].value in FAMILIES and \
                start + 1 < len(words) and words[start + 1].value != "{":
            return words[start].value, words[start + 1:]
        return "ip", words[start:]

    def command(self) -> None:
        """One top-level command: a ``table`` block, ``add chain``/``add rule``, or another
        command (``flush``, ``delete``, ``add element``...)."""
        t = self.peek()
        assert t is not None
        v = t.value
        n = self.peek(1)
        if v == "table" or (v in ("add", "create") and n is not None and n.value == "table"):
            if v != "table":
                self.take()
            self.table()
        elif v in ("add", "create", "insert") and n is not None \
                and n.value in ("chain", "rule"):
            self.add_chain_or_rule(t, n)
        else:
            self.other_command(v)

    def add_chain_or_rule(self, t: Tok, n: Tok) -> None:
        """``add|create chain [FAMILY] TABLE NAME [{ ... }]`` or ``add|insert rule [FAMILY]
        TABLE CHAIN ...`` (``t`` the verb, ``n`` the object)."""
        self.take()
        self.take()
        words = self.statement(block_ends=n.value == "chain")
        fam, rest = self._family_name(words, 0)
        if len(rest) < 2:
            raise self.err(f"{t.value} {n.value}: table and chain expected", t)
        table, name = rest[0].value, rest[1].value
        if n.value == "chain":
            chain = self.rs.add(Chain(fam, table, name, source=t.file, line=t.line))
            body = rest[2:]
            if body and body[0].value == "{":
                self.chain_body(chain, _Parser(body[1:-1], self.source))
            return
        target = self.rs.chains.get((fam, table, name))
        if target is None:
            raise self.err(f"rule for unknown chain {fam} {table} {name}", t)
        rules = self.rules(rest[2:], t, target)
        if t.value == "insert":
            target.rules[0:0] = rules
        else:
            target.rules.extend(rules)

    def other_command(self, v: str) -> None:
        """A command that is not a table block nor adds a chain or rule."""
        words = self.statement(block_ends=True)
        if not words:
            raise self.err(f"unexpected {v!r}")
        if [w.value for w in words[:2]] == ["flush", "ruleset"]:
            self.rs = Ruleset()
            self.sets.clear()
            self.dnat.clear()
        elif words[0].value in ("flush", "delete", "destroy") and len(words) >= 3 \
                and words[1].value in ("table", "chain"):
            self.flush_or_delete(words)
        # other commands (list, reset, add element, monitor...) do not shape the
        # input filter; add element to a known set is honoured below
        elif words[0].value == "add" and len(words) > 2 and words[1].value == "element":
            fam, rest = self._family_name(words, 2)
            if len(rest) >= 3:
                key = (fam, rest[0].value, rest[1].value)
                self.sets.setdefault(key, []).extend(_elements(rest[2:]))

    def flush_or_delete(self, words: list[Tok]) -> None:
        what = words[1].value
        fam, rest = self._family_name(words, 2)
        if not rest:
            return
        table = rest[0].value
        for key in list(self.rs.chains):
            if key[0] != fam or key[1] != table:
                continue
            if what == "table":
                if words[0].value == "flush":
                    self.rs.chains[key].rules.clear()
                else:
                    del self.rs.chains[key]
            elif len(rest) > 1 and key[2] == rest[1].value:
                if words[0].value == "flush":
                    self.rs.chains[key].rules.clear()
                else:
                    del self.rs.chains[key]

    def table(self) -> None:
        """``table [FAMILY] NAME`` and its block, if it has one."""
        t = self.expect("table")
        words: list[Tok] = []
        while (n := self.peek()) is not None and n.value != "{" and n.kind != "nl" \
                and n.value != ";":
            words.append(self.take())
        if not words:
            raise self.err("table name expected", t)
        fam = words[0].value if len(words) > 1 and words[0].value in FAMILIES else "ip"
        n = self.peek()
        if n is None or n.value != "{":
            return  # "add table inet x" without a body
        self.take()
        self.table_body(fam, words[-1].value, t)

    def table_body(self, fam: str, name: str, t: Tok) -> None:
        """The chains and sets of table ``fam name`` up to its closing brace."""
        while True:
            self.skip_seps()
            n = self.peek()
            if n is None:
                raise self.err("unterminated table block", t)
            if n.value == "}":
                self.take()
                return
            if n.value == "chain":
                self.take()
                cname = self.take()
                chain = self.rs.add(Chain(fam, name, cname.value, source=cname.file,
                                          line=cname.line))
                self.expect("{")
                self.chain_body(chain, self)
                continue
            if n.value == "set":
                self.take()
                sname = self.take().value
                body = self.statement(block_ends=True)
                self.sets[(fam, name, sname)] = _set_elements(body)
                continue
            if n.value in ("flags", "comment"):
                self.statement()
                continue
            # map, flowtable, counter, quota, ct helper ...: skip the block
            self.statement(block_ends=True)

    def chain_body(self, chain: Chain, p: _Parser) -> None:
        """Parse chain statements until the closing brace (consumed when ``p`` is self)."""
        while True:
            p.skip_seps()
            t = p.peek()
            if t is None:
                if p is self:
                    raise self.err("unterminated chain block")
                return
            if t.value == "}":
                p.take()
                return
            words = p.statement()
            if not words:
                p.take()
                continue
            head = words[0].value
            if head == "type":
                self.base_chain(chain, words)
            elif head == "policy":
                if len(words) < 2 or words[1].value not in ("accept", "drop"):
                    raise self.err("policy must be accept or drop", words[0])
                chain.policy = words[1].value
                chain.policy_line = words[0].line
            elif head in ("comment", "devices", "device", "flags"):
                continue
            else:
                chain.rules.extend(self.rules(words, words[0], chain))

    def base_chain(self, chain: Chain, words: list[Tok]) -> None:
        vals = [w.value for w in words]
        if "hook" not in vals:
            raise self.err("base chain without hook", words[0])
        chain.hook = vals[vals.index("hook") + 1] if vals.index("hook") + 1 < len(vals) \
            else None
        chain.line = words[0].line
        chain.source = words[0].file
        if chain.policy_line is None:
            chain.policy_line = words[0].line
        if "priority" in vals:
            expr = vals[vals.index("priority") + 1:]
            chain.prio = _priority(expr, words[0])

    # -- rules
    def rules(self, words: list[Tok], at: Tok, chain: Chain | None = None) -> list[Rule]:
        """One rule, or one per entry of a verdict map (``tcp dport vmap { 22 : accept,
        80 : drop }`` acts as ``tcp dport 22 accept`` then ``tcp dport 80 drop``)."""
        vals = [w.value for w in words]
        if "vmap" not in vals:
            return [self.rule(words, at, chain)]
        m = vals.index("vmap")
        if m + 1 >= len(words) or vals[m + 1] != "{":
            text = " ".join(_show(x) for x in words)  # a named map: cannot tell
            return [Rule((Cond("unknown", text=text),), "maybe", None, at.file, at.line, text)]
        level, e = 0, m + 1
        while e < len(words):
            if vals[e] == "{":
                level += 1
            elif vals[e] == "}":
                level -= 1
                if level == 0:
                    break
            e += 1
        entries: list[list[Tok]] = [[]]
        for w in words[m + 2:e]:
            if w.value == "," and w.kind == "punct":
                entries.append([])
            elif w.kind != "nl":
                entries[-1].append(w)
        out = []
        for ent in entries:
            ev = [w.value for w in ent]
            if ":" not in ev:
                continue
            c = ev.index(":")
            out.append(self.rule(words[:m] + ent[:c] + ent[c + 1:] + words[e + 1:], at,
                                 chain))
        return out

    def rule(self, words: list[Tok], at: Tok, chain: Chain | None = None) -> Rule:
        """One rule (its words, ``at`` the token it starts at); a DNAT/REDIRECT rule of
        ``chain`` is recorded too."""
        w = [x for x in words if x.kind != "nl"]
        text = " ".join(_show(x) for x in w)
        if chain is not None and any(x.value in ("dnat", "redirect") for x in w):
            self.dnat.append(f"{chain.describe()}: {text} ({at.file.lstrip('/')}:{at.line})")
        family, table = (chain.family, chain.table) if chain is not None else ("", "")
        return _RuleReader(w, at, text,
                           lambda name: self.sets.get((family, table, name))).read()


_STATEMENT_OPTIONS = {"counter": ("packets", "bytes", "name"),
                      "log": ("prefix", "level", "group", "snaplen", "queue-threshold",
                              "flags")}
"""Statements that do not decide, with the options (each taking a value) that follow."""


class _RuleReader:
    """The words of one rule read into conditions and a verdict: matches on interfaces,
    conntrack state, protocols, ports and addresses; anything else is an ``unknown``
    condition (the evaluator then answers "maybe")."""

    def __init__(self, w: list[Tok], at: Tok, text: str,
                 named_set: Callable[[str], list[str] | None]) -> None:
        self.w = w
        self.at = at
        self.text = text
        self.named_set = named_set
        self.conds: list[Cond] = []
        self.verdict: str | None = None
        self.target: str | None = None

    def read(self) -> Rule:
        """The rule, word by word."""
        i = 0
        while i < len(self.w):
            v = self.w[i].value
            nxt = self.w[i + 1].value if i + 1 < len(self.w) else ""
            after = self.statement(v, nxt, i)
            i = after if after is not None else self.match(v, nxt, i)
        return Rule(tuple(self.conds), self.verdict, self.target, self.at.file, self.at.line,
                    self.text)

    def statement(self, v: str, nxt: str, i: int) -> int | None:
        """A verdict or a statement that matches nothing (counter, log, comment) at word
        ``i``: the index after it; ``None`` for a match."""
        if v in ("accept", "drop", "return"):
            self.verdict = v
            return i + 1
        if v in ("reject", "queue"):
            self.verdict = "reject" if v == "reject" else "maybe"
            return len(self.w)  # "with icmpx type ..." / queue options follow
        if v in ("jump", "goto") and nxt:
            self.verdict, self.target = v, nxt
            return i + 2
        if v == "continue":
            return i + 1
        if v in _STATEMENT_OPTIONS:
            i += 1
            while i + 1 < len(self.w) and self.w[i].value in _STATEMENT_OPTIONS[v]:
                i += 2
            return i
        if v == "comment":
            return i + 2
        if v == "meta" and nxt in _META_KINDS:
            return i + 1  # "meta iifname" is "iifname"
        return None

    def match(self, v: str, nxt: str, i: int) -> int:
        """The match at word ``i``: its condition(s) added, the index after it."""
        if v in _META_KINDS:
            vals, neg, i = self.values(i + 1)
            self.conds.append(Cond(_META_KINDS[v], tuple(vals), neg, text=self.text))
            return i
        if v == "ct" and nxt == "state":
            vals, neg, i = self.values(i + 2)
            self.conds.append(Cond("ct", tuple(vals), neg, text=self.text))
            return i
        if v in _PROTO_OF and nxt:
            return self.l4(_PROTO_OF[v], nxt, i)
        if v in ("ip", "ip6") and nxt:
            return self.l3(v, nxt, i)
        if v in ("icmp", "icmpv6"):
            self.conds.append(Cond("proto", ("icmp",) if v == "icmp" else ("ipv6-icmp",),
                                   text=self.text))
            return self.skip_value(i + 2)
        # limit, oif, meta mark, tcp option, set statements ...: cannot model
        self.conds.append(Cond("unknown", text=self.text))
        i += 1
        while i < len(self.w) and self.w[i].value not in _VERDICTS_T:
            i += 1
        return i

    def l4(self, protos: tuple[str, ...], nxt: str, i: int) -> int:
        """``tcp dport ...`` (a value, a set or a comparison) or another ``tcp`` field."""
        w = self.w
        if nxt == "dport" and i + 3 < len(w) and w[i + 2].value in _CMP \
                and w[i + 3].value.isdigit():
            n = to_int(w[i + 3].value, what="port", source=w[i + 3].file, line=w[i + 3].line)
            self.conds.append(Cond("dport", protos, False, (_CMP[w[i + 2].value](n),),
                                   self.text))
            return i + 4
        if nxt == "dport":
            vals, neg, i = self.values(i + 2)
            self.conds.append(Cond("dport", protos, neg, None, self.text) if vals == ["@"]
                              else _dport(protos, list(vals), neg, self.text))
            return i
        if protos:
            self.conds.append(Cond("proto", protos, text=self.text))
        if nxt != "flags":
            self.conds.append(Cond("unknown", text=self.text))
        return self.values(i + 2)[2] if i + 2 < len(w) else len(w)

    def l3(self, v: str, nxt: str, i: int) -> int:
        """``ip saddr ...``, ``ip6 nexthdr ...`` or another ``ip``/``ip6`` field."""
        self.conds.append(Cond("family", ("ipv4",) if v == "ip" else ("ipv6",),
                               text=self.text))
        if nxt in ("saddr", "daddr", "protocol", "nexthdr"):
            vals, neg, i = self.values(i + 2)
            kind = "proto" if nxt in ("protocol", "nexthdr") else nxt
            self.conds.append(Cond(kind, tuple(vals), neg, text=self.text))
            return i
        self.conds.append(Cond("unknown", text=self.text))
        return self.skip_value(i + 2)

    def skip_value(self, i: int) -> int:
        """Past the value at word ``i``, if one is there (not a verdict or statement)."""
        if i < len(self.w) and self.w[i].value not in _VERDICTS_T:
            return self.values(i)[2]
        return i

    def values(self, j: int) -> tuple[list[str], bool, int]:
        """An optional operator then a value, a comma list, a ``{ set }`` or ``@set`` at
        word ``j``: (values, negated, the index after them).  A named set that is not
        known is ``["@"]``."""
        w = self.w
        negate = False
        if j < len(w) and w[j].value in ("==", "!=", "eq", "ne"):
            negate = w[j].value in ("!=", "ne")
            j += 1
        if j >= len(w):
            raise ParseError("value expected", line=self.at.line, source=self.at.file)
        if w[j].value == "{":
            items, j = self.braced(j)
            return items, negate, j
        if w[j].value.startswith("@"):
            got = self.named_set(w[j].value[1:])
            return (got if got is not None else ["@"]), negate, j + 1
        items = [w[j].value]
        j += 1
        while j + 1 < len(w) and w[j].value == ",":
            items.append(w[j + 1].value)
            j += 2
        return items, negate, j

    def braced(self, j: int) -> tuple[list[str], int]:
        """The items of the ``{ ... }`` at word ``j`` and the index after its brace."""
        w = self.w
        level, k, items = 0, j, []
        while k < len(w):
            if w[k].value == "{":
                level += 1
            elif w[k].value == "}":
                level -= 1
                if level == 0:
                    break
            elif w[k].value != ",":
                items.append(w[k].value)
            k += 1
        return items, k + 1


_VERDICTS_T = ("accept", "drop", "reject", "return", "jump", "goto", "queue", "continue",
               "counter", "log", "comment")


def _show(t: Tok) -> str:
    return f'"{t.value}"' if t.kind == "str" else t.value


def _elements(words: list[Tok]) -> list[str]:
    return [w.value for w in words if w.kind != "nl" and w.value not in ("{", "}", ",")]


def _set_elements(body: list[Tok]) -> list[str]:
    vals = [w.value for w in body]
    if "elements" not in vals:
        return []
    j = vals.index("elements") + 1
    if j < len(vals) and vals[j] == "=":
        j += 1
    out: list[str] = []
    level = 0
    for w in body[j:]:
        if w.value == "{":
            level += 1
            continue
        if w.value == "}":
            level -= 1
            if level <= 0:
                break
            continue
        if w.kind != "nl" and w.value not in (",", ";"):
            out.append(w.value)
    return out


def _priority(expr: list[str], at: Tok) -> int:
    text = "".join(expr).replace(" ", "")
    m = re.fullmatch(r"(-?\d+|[a-z]+)(?:([+-])(\d+))?", text)
    if m is None:
        raise ParseError(f"bad priority {text!r}", line=at.line, source=at.file)
    base = m.group(1)
    if base.lstrip("-").isdigit():
        n = to_int(base, what="priority", source=at.file, line=at.line)
    elif base in PRIORITY_NAMES:
        n = PRIORITY_NAMES[base]
    else:
        raise ParseError(f"unknown priority name {base!r}", line=at.line, source=at.file)
    if m.group(2):
        n += to_int(m.group(3), what="priority", source=at.file, line=at.line) * (
            1 if m.group(2) == "+" else -1)
    return n


def parse_text(text: str, source: str, resolve: Resolver | None = None) -> Ruleset:
    """Ruleset an ``nft -f FILE`` of ``text`` would load into an empty kernel.

    ``resolve(pattern, including_file)`` supplies included files (nft resolves relative
    paths against its include path, ``/etc`` on Debian builds, and expands globs).
    """
    toks = list(_expand(tokenize(text, source), resolve, 0, {}))
    # A ";" right after a "}" closes nothing in nft but is harmless; keep tokens as is.
    return _Parser(toks, source).parse()
