"""``iptables-save`` / ``iptables-restore`` text (``/etc/iptables/rules.v4``, ``rules.v6``)
into the :mod:`aiaudit.linux.netfilter.model` model.

Format (iptables-save(8), iptables-restore(8)): ``*table``, ``:CHAIN POLICY [p:b]``
(``-`` = user chain), ``-A CHAIN match... -j TARGET``, ``COMMIT``.  A built-in chain is a
base chain of its table's hook at the table's priority (``filter`` 0, ``mangle`` -150,
``security`` 50, ``nat`` 100 on INPUT; libiptc / ``nft_chain_builtin`` in iptables).
"""

from __future__ import annotations

import shlex

from aiaudit.core.errors import ParseError
from aiaudit.linux.netfilter.model import Chain, Cond, Rule, Ruleset

TABLE_PRIO = {"raw": -300, "mangle": -150, "nat": 100, "filter": 0, "security": 50}
BUILTIN_HOOKS = {"PREROUTING": "prerouting", "INPUT": "input", "FORWARD": "forward",
                 "OUTPUT": "output", "POSTROUTING": "postrouting"}
_NOOP_TARGETS = {"LOG", "NFLOG", "ULOG", "MARK", "CONNMARK", "TRACE", "CT", "AUDIT",
                 "CLASSIFY", "DSCP", "TOS", "TTL", "HL"}


def port_ranges(text: str) -> tuple[tuple[int, int], ...] | None:
    """``22``, ``8000:8010``, ``:1024``, ``80,443`` (multiport) -> ranges; ``None`` when
    a port is a service name or malformed."""
    out = []
    for part in text.split(","):
        lo, sep, hi = part.partition(":")
        try:
            a = int(lo) if lo else 0
            b = (int(hi) if hi else 65535) if sep else a
        except ValueError:
            return None
        out.append((a, b))
    return tuple(out)


def _rule(args: list[str], chain: Chain, known: set[str], source: str, line: int,
          text: str) -> Rule:
    conds: list[Cond] = []
    verdict: str | None = None
    target: str | None = None
    proto: tuple[str, ...] = ()
    negate = False
    i = 0
    while i < len(args):
        a = args[i]
        val = args[i + 1] if i + 1 < len(args) else ""
        if a == "!":
            negate = True
            i += 1
            continue
        step = 2
        if a in ("-i", "--in-interface"):
            conds.append(Cond("iif", (val.rstrip("+"),), negate, text=text))
        elif a in ("-p", "--protocol"):
            proto = (val.lower(),)
            conds.append(Cond("proto", proto, negate, text=text))
        elif a in ("-s", "--source", "--src", "-d", "--destination", "--dst"):
            kind = "saddr" if a in ("-s", "--source", "--src") else "daddr"
            conds.append(Cond(kind, tuple(val.split(",")), negate, text=text))
        elif a in ("--dport", "--destination-port", "--dports", "--destination-ports"):
            conds.append(Cond("dport", proto,
                              negate, port_ranges(val), text))
        elif a in ("--ctstate", "--state"):
            conds.append(Cond("ct", tuple(v.lower() for v in val.split(",")), negate,
                              text=text))
        elif a == "-m" or a == "--match":
            pass
        elif a in ("--comment", "--icmp-type", "--icmpv6-type", "--tcp-flags"):
            step = 3 if a == "--tcp-flags" else 2
        elif a == "--syn":
            step = 1
        elif a in ("-j", "--jump", "-g", "--goto"):
            if val in ("ACCEPT", "DROP", "RETURN"):
                verdict = val.lower()
            elif val == "REJECT":
                verdict = "reject"
            elif val in known:
                verdict, target = ("goto" if a in ("-g", "--goto") else "jump"), val
            elif val in _NOOP_TARGETS:
                verdict = None
            else:
                verdict = "maybe"
            # target options (--reject-with, --log-prefix ...) follow
            i = len(args)
            continue
        elif a.startswith("-"):
            conds.append(Cond("unknown", text=text))
            step = 1
            while i + step < len(args) and not args[i + step].startswith("-") \
                    and args[i + step] != "!":
                step += 1
        else:
            raise ParseError(f"unexpected argument {a!r}", line=line, source=source)
        negate = False
        i += step
    return Rule(tuple(conds), verdict, target, source, line, text)


def parse(text: str, family: int, source: str) -> Ruleset:
    """Ruleset of an iptables-save dump for IPv``family``."""
    fam = "ip" if family == 4 else "ip6"
    rs = Ruleset()
    table: str | None = None
    pending: list[tuple[int, str, list[str]]] = []
    """Rules of the current table, applied at COMMIT (chains may be declared later)."""
    known: set[str] = set()

    def flush() -> None:
        for n, raw, args in pending:
            cname = args[1]
            chain = rs.chains.get((fam, table or "", cname))
            if chain is None:
                raise ParseError(f"rule for undeclared chain {cname!r}", line=n, source=source)
            rule = _rule(args[2:], chain, known, source, n, raw.strip())
            if any(a in ("DNAT", "REDIRECT") for a in args):
                rs.dnat.append(f"{chain.describe()}: {raw.strip()} ({source.lstrip('/')}:{n})")
            if args[0] in ("-I", "--insert"):
                chain.rules.insert(0, rule)
            else:
                chain.rules.append(rule)
        pending.clear()

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("*"):
            table = line[1:].strip()
            known = set()
            continue
        if table is None:
            raise ParseError(f"{line!r} outside a *table section", line=n, source=source)
        if line == "COMMIT":
            flush()
            table = None
            continue
        if line.startswith(":"):
            parts = line[1:].split()
            if len(parts) < 2:
                raise ParseError(f"bad chain line {line!r}", line=n, source=source)
            name, policy = parts[0], parts[1]
            known.add(name)
            hook = BUILTIN_HOOKS.get(name) if policy != "-" else None
            rs.add(Chain(fam, table, name, hook=hook, prio=TABLE_PRIO.get(table, 0),
                         policy="drop" if policy == "DROP" else "accept", source=source,
                         line=n, policy_line=n, origin="iptables"))
            continue
        try:
            args = shlex.split(line)
        except ValueError as exc:
            raise ParseError(str(exc), line=n, source=source) from None
        if args[0] in ("-A", "--append", "-I", "--insert") and len(args) >= 2:
            if args[0] in ("-I", "--insert"):
                # -I CHAIN [num] rule: insert at the front (restore files rarely use it)
                if len(args) > 2 and args[2].isdigit():
                    args = [args[0], args[1], *args[3:]]
            pending.append((n, line, args))
            continue
        if args[0] in ("-N", "--new-chain") and len(args) >= 2:
            known.add(args[1])
            rs.add(Chain(fam, table, args[1], source=source, line=n, origin="iptables"))
            continue
        if args[0] in ("-P", "--policy") and len(args) >= 3:
            ch = rs.chains.get((fam, table, args[1]))
            if ch is not None:
                ch.policy, ch.policy_line = args[2].lower(), n
            continue
        raise ParseError(f"unsupported line {line!r}", line=n, source=source)
    if table is not None:
        raise ParseError(f"table {table!r} not committed (no COMMIT)", source=source)
    for c in rs.chains.values():
        c.origin = "iptables"
    return rs


def variant(version_output: str) -> str | None:
    """``legacy`` or ``nf_tables`` from ``iptables -V`` (``iptables v1.8.9 (nf_tables)``)."""
    if "(legacy)" in version_output:
        return "legacy"
    if "(nf_tables)" in version_output:
        return "nf_tables"
    if version_output.startswith("iptables v1.") or version_output.startswith("ip6tables v"):
        return "legacy"  # before 1.8 there was only the legacy backend
    return None
