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
from aiaudit.core.parsing import lazy_pattern, to_int
from aiaudit.core.records import record
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


# ================================================================= JSON
def _jvalues(right: Any, sets: dict[str, list[Any]]) -> list[Any] | None:
    if isinstance(right, dict):
        if "set" in right:
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
    op = m.get("op", "==")
    left, right = m.get("left"), m.get("right")
    text = json.dumps(m, sort_keys=True)
    unknown = [Cond("unknown", text=text)]
    if not isinstance(left, dict):
        return unknown
    vals = _jvalues(right, sets)
    negate = op == "!="
    if op in ("<", ">", "<=", ">=", "lt", "gt", "le", "ge"):
        if vals and len(vals) == 1 and isinstance(vals[0], int):
            n = vals[0]
            rng = {"<": (0, n - 1), "lt": (0, n - 1), "<=": (0, n), "le": (0, n),
                   ">": (n + 1, 65535), "gt": (n + 1, 65535), ">=": (n, 65535),
                   "ge": (n, 65535)}[op]
            vals, negate = [rng], False
        else:
            return unknown
    elif op not in ("==", "!=", "in"):
        return unknown
    strs = tuple(str(v) for v in vals or ())
    if "meta" in left:
        key = left["meta"].get("key") if isinstance(left["meta"], dict) else None
        if key in ("iif", "iifname") and vals is not None:
            return [Cond("iif", strs, negate, text=text)]
        if key == "l4proto" and vals is not None:
            return [Cond("proto", strs, negate, text=text)]
        if key == "nfproto" and vals is not None:
            return [Cond("family", strs, negate, text=text)]
        return unknown
    if "ct" in left:
        key = left["ct"].get("key") if isinstance(left["ct"], dict) else None
        if key == "state" and vals is not None:
            return [Cond("ct", strs, negate, text=text)]
        return unknown
    if "payload" in left and isinstance(left["payload"], dict):
        proto, fld = left["payload"].get("protocol"), left["payload"].get("field")
        if proto in _PROTO_OF:
            if fld == "dport":
                return [_dport(_PROTO_OF[proto], vals if vals is not None else [None],
                               negate, text)] if vals is not None else \
                    [Cond("dport", _PROTO_OF[proto], negate, None, text)]
            pc = [Cond("proto", _PROTO_OF[proto], text=text)] if _PROTO_OF[proto] else []
            return [*pc, Cond("unknown", text=text)] if fld in ("sport",) else pc or unknown
        if proto in ("ip", "ip6"):
            fam = Cond("family", ("ipv4",) if proto == "ip" else ("ipv6",), text=text)
            if fld in ("saddr", "daddr") and vals is not None:
                return [fam, Cond(fld, strs, negate, text=text)]
            if fld in ("protocol", "nexthdr") and vals is not None:
                return [fam, Cond("proto", strs, negate, text=text)]
            return [fam, Cond("unknown", text=text)]
        if proto in ("icmp", "icmpv6"):
            return [Cond("proto", ("icmp" if proto == "icmp" else "ipv6-icmp",), text=text)]
    return unknown


_VERDICTS = ("accept", "drop", "reject", "return", "jump", "goto", "continue", "queue")
_XT_NOOP_TARGETS = ("LOG", "NFLOG", "MARK", "CONNMARK", "TRACE", "CT", "AUDIT", "CLASSIFY")
_NOOP = ("counter", "log", "mangle", "meta", "notrack", "synproxy", "set", "quota")


def parse_json(text: str, source: str = "nft -j list ruleset") -> Ruleset:
    """Ruleset from ``nft -j list ruleset`` output."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"not JSON: {exc}", source=source) from None
    except RecursionError:
        raise ParseError("not nft JSON: nested too deeply", source=source) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nftables"), list):
        raise ParseError("no top-level 'nftables' array", source=source)
    items = [o for o in doc["nftables"] if isinstance(o, dict) and len(o) == 1]
    rs = Ruleset()
    sets: dict[tuple[str, str], dict[str, list[Any]]] = {}
    for o in items:
        s = o.get("set")
        if isinstance(s, dict):
            elems = s.get("elem", [])
            sets.setdefault((str(s.get("family")), str(s.get("table"))), {})[
                str(s.get("name"))] = elems if isinstance(elems, list) else [elems]
    for o in items:
        c = o.get("chain")
        if isinstance(c, dict):
            try:
                prio = int(c.get("prio", 0))
            except (TypeError, ValueError):
                raise ParseError(f"bad chain priority {c.get('prio')!r}",
                                 source=source) from None
            rs.add(Chain(str(c.get("family")), str(c.get("table")), str(c.get("name")),
                         hook=c.get("hook") if isinstance(c.get("hook"), str) else None,
                         prio=prio, policy=str(c.get("policy", "accept")), source=source))
    for o in items:
        r = o.get("rule")
        if not isinstance(r, dict):
            continue
        key = (str(r.get("family")), str(r.get("table")), str(r.get("chain")))
        chain = rs.chains.get(key)
        exprs = r.get("expr")
        if chain is None or not isinstance(exprs, list):
            continue
        conds: list[Cond] = []
        verdict: str | None = None
        target: str | None = None
        vmap: list[tuple[list[Cond], str | None, str | None]] | None = None
        for e in exprs:
            if isinstance(e, dict) and "xt" in e:
                rs.xt_tables.add(key[:2])
            if not isinstance(e, dict) or len(e) != 1:
                conds.append(Cond("unknown", text=str(e)))
                continue
            (k, v), = e.items()
            if k == "match" and isinstance(v, dict):
                conds.extend(_jmatch(v, sets.get(key[:2], {})))
            elif k in _VERDICTS:
                verdict = {"continue": None, "queue": "maybe"}.get(k, k)
                if k in ("jump", "goto") and isinstance(v, dict):
                    target = str(v.get("target"))
            elif k in _NOOP:
                continue
            elif k == "vmap" and isinstance(v, dict) and isinstance(v.get("data"), dict) \
                    and isinstance(v["data"].get("set"), list):
                vmap = []
                for item in v["data"]["set"]:
                    if not (isinstance(item, list) and len(item) == 2
                            and isinstance(item[1], dict) and len(item[1]) == 1):
                        vmap.append(([Cond("unknown", text="vmap")], "maybe", None))
                        continue
                    (vk, vv), = item[1].items()
                    vt = str(vv.get("target")) if isinstance(vv, dict) and \
                        vk in ("jump", "goto") else None
                    verd = {"continue": None, "queue": "maybe"}.get(vk, vk) \
                        if vk in _VERDICTS else "maybe"
                    vmap.append((_jmatch({"op": "==", "left": v.get("key"), "right": item[0]},
                                         sets.get(key[:2], {})), verd, vt))
            elif k == "vmap":  # a named map (@name): cannot tell
                vmap = [([Cond("unknown", text="vmap")], "maybe", None)]
            elif k == "xt" and isinstance(v, dict) and v.get("type") == "match" \
                    and v.get("name") == "comment":
                continue
            elif k == "xt" and isinstance(v, dict) and v.get("type") == "target":
                # an iptables-nft target nft cannot translate (REJECT, LOG ...)
                name = str(v.get("name", ""))
                verdict = {"REJECT": "reject", "DROP": "drop", "ACCEPT": "accept"}.get(
                    name, None if name in _XT_NOOP_TARGETS else "maybe")
            else:  # limit, xt, and anything else: cannot tell
                conds.append(Cond("unknown", text=json.dumps(e, sort_keys=True)))
        text = " ".join(_jshow(e) for e in exprs)
        if r.get("comment"):
            text += f' comment "{r["comment"]}"'
        text += f" # handle {r.get('handle')}"
        if any(isinstance(e, dict) and ("dnat" in e or "redirect" in e) for e in exprs):
            rs.dnat.append(f"{chain.describe()}: {text}")
        if vmap is None:
            chain.rules.append(Rule(tuple(conds), verdict, target, source, None, text))
        for mconds, mverdict, mtarget in vmap or ():
            chain.rules.append(Rule(tuple(conds + mconds), mverdict, mtarget, source, None,
                                    text))
    return rs


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
        left = v.get("left")
        ltxt = json.dumps(left, sort_keys=True)
        if isinstance(left, dict) and len(left) == 1:
            (lk, lv), = left.items()
            if isinstance(lv, dict):
                ltxt = f"{lv.get('protocol')} {lv.get('field')}" if lk == "payload" \
                    else f"{lk} {lv.get('key')}"
        op = v.get("op", "==")
        return f"{ltxt} {'' if op in ('==', 'in') else op + ' '}{_jvalue_text(v.get('right'))}"
    if k in ("jump", "goto") and isinstance(v, dict):
        return f"{k} {v.get('target')}"
    if k == "vmap" and isinstance(v, dict):
        data = v.get("data", {}).get("set", []) if isinstance(v.get("data"), dict) else []
        body = ", ".join(f"{_jvalue_text(i[0])} : {_jshow(i[1])}" for i in data
                         if isinstance(i, list) and len(i) == 2)
        return f"{_jshow({'match': {'left': v.get('key'), 'right': ''}}).strip()} vmap {{ {body} }}"
    if k == "xt" and isinstance(v, dict):
        return f"xt {v.get('type')} {v.get('name')}"
    if v is None:
        return k
    return k


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
        if t.kind == "word" and t.value == "include" and i + 1 < len(toks) \
                and toks[i + 1].kind == "str":
            pattern = toks[i + 1].value
            i += 2
            if depth >= MAX_INCLUDE_DEPTH:
                raise ParseError("include nested too deeply", line=t.line, source=t.file)
            if resolve is None:
                raise ParseError(f"include {pattern!r} cannot be followed", line=t.line,
                                 source=t.file)
            for path, text in resolve(pattern, t.file):
                yield from _expand(tokenize(text, path), resolve, depth + 1, defines)
                yield Tok("\n", "nl", path, 0)
            continue
        if t.kind == "word" and t.value in ("define", "redefine") and i + 1 < len(toks):
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
            i = j
            continue
        if t.kind == "word" and t.value == "undefine" and i + 1 < len(toks):
            defines.pop(toks[i + 1].value, None)
            i += 2
            continue
        yield from _subst(t, defines)
        i += 1


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
        t = self.peek()
        assert t is not None
        v = t.value
        if v == "table" or (v in ("add", "create") and (n := self.peek(1)) is not None
                            and n.value == "table"):
            if v != "table":
                self.take()
            self.table()
            return
        if v in ("add", "create", "insert") and (n := self.peek(1)) is not None \
                and n.value in ("chain", "rule"):
            self.take()
            self.take()
            words = self.statement(block_ends=n.value == "chain")
            fam, rest = self._family_name(words, 0)
            if len(rest) < 2:
                raise self.err(f"{v} {n.value}: table and chain expected", t)
            table, name = rest[0].value, rest[1].value
            if n.value == "chain":
                chain = self.rs.add(Chain(fam, table, name, source=t.file, line=t.line))
                body = rest[2:]
                if body and body[0].value == "{":
                    self.chain_body(chain, _Parser(body[1:-1], self.source))
            else:
                chain = self.rs.chains.get((fam, table, name))
                if chain is None:
                    raise self.err(f"rule for unknown chain {fam} {table} {name}", t)
                rules = self.rules(rest[2:], t, chain)
                if v == "insert":
                    chain.rules[0:0] = rules
                else:
                    chain.rules.extend(rules)
            return
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
        t = self.expect("table")
        words: list[Tok] = []
        while (n := self.peek()) is not None and n.value != "{" and n.kind != "nl" \
                and n.value != ";":
            words.append(self.take())
        if not words:
            raise self.err("table name expected", t)
        fam = words[0].value if len(words) > 1 and words[0].value in FAMILIES else "ip"
        name = words[-1].value
        if self.peek() is None or self.peek().value != "{":  # type: ignore[union-attr]
            return  # "add table inet x" without a body
        self.take()
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
        conds: list[Cond] = []
        verdict: str | None = None
        target: str | None = None
        fam_table = (chain.family, chain.table) if chain else None
        w = [x for x in words if x.kind != "nl"]
        text = " ".join(_show(x) for x in w)
        if chain is not None and any(x.value in ("dnat", "redirect") for x in w):
            self.dnat.append(f"{chain.describe()}: {text} ({at.file.lstrip('/')}:{at.line})")
        i = 0

        def values(j: int) -> tuple[list[str], bool, int]:
            """Optional operator then a value, a comma list, a { set } or @set."""
            negate = False
            if j < len(w) and w[j].value in ("==", "!=", "eq", "ne"):
                negate = w[j].value in ("!=", "ne")
                j += 1
            if j >= len(w):
                raise self.err("value expected", at)
            if w[j].value == "{":
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
                return items, negate, k + 1
            if w[j].value.startswith("@"):
                key = (*(fam_table or ("", "")), w[j].value[1:])
                got = self.sets.get(key)  # type: ignore[arg-type]
                return (got if got is not None else ["@"]), negate, j + 1
            items = [w[j].value]
            j += 1
            while j + 1 < len(w) and w[j].value == ",":
                items.append(w[j + 1].value)
                j += 2
            return items, negate, j

        while i < len(w):
            v = w[i].value
            nxt = w[i + 1].value if i + 1 < len(w) else ""
            if v in ("accept", "drop", "return"):
                verdict = v
                i += 1
            elif v == "reject":
                verdict = "reject"
                i = len(w)  # "with icmpx type ..." follows
            elif v in ("jump", "goto") and nxt:
                verdict, target = v, nxt
                i += 2
            elif v in ("continue",):
                i += 1
            elif v in ("queue",):
                verdict = "maybe"
                i = len(w)
            elif v == "counter":
                i += 1
                while i + 1 < len(w) and w[i].value in ("packets", "bytes", "name"):
                    i += 2
            elif v == "log":
                i += 1
                while i + 1 < len(w) and w[i].value in ("prefix", "level", "group", "snaplen",
                                                         "queue-threshold", "flags"):
                    i += 2
            elif v == "comment":
                i += 2
            elif v == "meta" and nxt in ("iif", "iifname", "l4proto", "nfproto"):
                i += 1
                continue
            elif v in ("iif", "iifname"):
                vals, neg, i = values(i + 1)
                conds.append(Cond("iif", tuple(vals), neg, text=text))
            elif v == "ct" and nxt == "state":
                vals, neg, i = values(i + 2)
                conds.append(Cond("ct", tuple(vals), neg, text=text))
            elif v == "l4proto":
                vals, neg, i = values(i + 1)
                conds.append(Cond("proto", tuple(vals), neg, text=text))
            elif v == "nfproto":
                vals, neg, i = values(i + 1)
                conds.append(Cond("family", tuple(vals), neg, text=text))
            elif v in _PROTO_OF and nxt:
                if nxt == "dport" and i + 3 < len(w) and w[i + 2].value in _CMP \
                        and w[i + 3].value.isdigit():
                    n = to_int(w[i + 3].value, what="port", source=w[i + 3].file,
                               line=w[i + 3].line)
                    conds.append(Cond("dport", _PROTO_OF[v], False,
                                      (_CMP[w[i + 2].value](n),), text))
                    i += 4
                elif nxt == "dport":
                    vals, neg, i = values(i + 2)
                    if vals == ["@"]:
                        conds.append(Cond("dport", _PROTO_OF[v], neg, None, text))
                    else:
                        conds.append(_dport(_PROTO_OF[v], list(vals), neg, text))
                else:
                    if _PROTO_OF[v]:
                        conds.append(Cond("proto", _PROTO_OF[v], text=text))
                    if nxt != "flags":
                        conds.append(Cond("unknown", text=text))
                    _vals, _neg, i = values(i + 2) if i + 2 < len(w) else ([], False, len(w))
            elif v in ("ip", "ip6") and nxt:
                conds.append(Cond("family", ("ipv4",) if v == "ip" else ("ipv6",), text=text))
                if nxt in ("saddr", "daddr", "protocol", "nexthdr"):
                    vals, neg, i = values(i + 2)
                    kind = "proto" if nxt in ("protocol", "nexthdr") else nxt
                    conds.append(Cond(kind, tuple(vals), neg, text=text))
                else:
                    conds.append(Cond("unknown", text=text))
                    i += 2
                    if i < len(w) and w[i].value not in _VERDICTS_T:
                        _v, _n, i = values(i)
            elif v in ("icmp", "icmpv6"):
                conds.append(Cond("proto", ("icmp",) if v == "icmp" else ("ipv6-icmp",),
                                  text=text))
                i += 2
                if i < len(w) and w[i].value not in _VERDICTS_T:
                    _v, _n, i = values(i)
            else:
                # limit, oif, meta mark, tcp option, set statements ...: cannot model
                conds.append(Cond("unknown", text=text))
                i += 1
                while i < len(w) and w[i].value not in _VERDICTS_T:
                    i += 1
        return Rule(tuple(conds), verdict, target, at.file, at.line, text)


_CMP = {"<": lambda n: (0, n - 1), "lt": lambda n: (0, n - 1), "<=": lambda n: (0, n),
        "le": lambda n: (0, n), ">": lambda n: (n + 1, 65535), "gt": lambda n: (n + 1, 65535),
        ">=": lambda n: (n, 65535), "ge": lambda n: (n, 65535)}
"""Port comparisons (``tcp dport < 1024``) as ranges."""

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
