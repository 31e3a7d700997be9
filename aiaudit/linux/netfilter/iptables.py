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


_JUMPS = ("-j", "--jump", "-g", "--goto")
_SKIPPED = {"--comment": 2, "--icmp-type": 2, "--icmpv6-type": 2, "--tcp-flags": 3,
            "--syn": 1, "-m": 2, "--match": 2}
"""Options that do not decide for a new TCP/UDP connection, and how many words each takes
(``-m NAME`` only names the extension whose options follow)."""
_ADDRESSES = {"-s": "saddr", "--source": "saddr", "--src": "saddr",
              "-d": "daddr", "--destination": "daddr", "--dst": "daddr"}


def _rule(args: list[str], known: set[str], source: str, line: int, text: str) -> Rule:
    """The rule of one ``-A CHAIN ...`` line (``args`` after the chain name); ``known``
    are the chains of its table (a jump target that is not one is a target extension)."""
    conds: list[Cond] = []
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
        if a in _JUMPS:
            # target options (--reject-with, --log-prefix ...) follow
            verdict, target = _target(a, val, known)
            return Rule(tuple(conds), verdict, target, source, line, text)
        cond, step = _option(args, i, proto, negate, text)
        if cond is None and step == 0:
            raise ParseError(f"unexpected argument {a!r}", line=line, source=source)
        if cond is not None:
            conds.append(cond)
            if cond.kind == "proto" and a in ("-p", "--protocol"):
                proto = cond.values
        negate = False
        i += step
    return Rule(tuple(conds), None, None, source, line, text)


def _option(args: list[str], i: int, proto: tuple[str, ...], negate: bool,
            text: str) -> tuple[Cond | None, int]:
    """The condition of the match option at ``args[i]`` (``None`` for one that does not
    decide) and how many words it takes; ``(None, 0)``: not an option."""
    a = args[i]
    val = args[i + 1] if i + 1 < len(args) else ""
    if a in ("-i", "--in-interface"):
        return Cond("iif", (val.rstrip("+"),), negate, text=text), 2
    if a in ("-p", "--protocol"):
        return Cond("proto", (val.lower(),), negate, text=text), 2
    if a in _ADDRESSES:
        return Cond(_ADDRESSES[a], tuple(val.split(",")), negate, text=text), 2
    if a in ("--dport", "--destination-port", "--dports", "--destination-ports"):
        return Cond("dport", proto, negate, port_ranges(val), text), 2
    if a in ("--ctstate", "--state"):
        return Cond("ct", tuple(v.lower() for v in val.split(",")), negate, text=text), 2
    if a in _SKIPPED:
        return None, _SKIPPED[a]
    if a.startswith("-"):
        # an extension's option this model does not know, with its values
        step = 1
        while i + step < len(args) and not args[i + step].startswith("-") \
                and args[i + step] != "!":
            step += 1
        return Cond("unknown", text=text), step
    return None, 0


def _target(a: str, val: str, known: set[str]) -> tuple[str | None, str | None]:
    """(verdict, jump target) of ``-j``/``-g`` ``val``."""
    if val in ("ACCEPT", "DROP", "RETURN"):
        return val.lower(), None
    if val == "REJECT":
        return "reject", None
    if val in known:
        return ("goto" if a in ("-g", "--goto") else "jump"), val
    if val in _NOOP_TARGETS:
        return None, None
    return "maybe", None


def parse(text: str, family: int, source: str) -> Ruleset:
    """Ruleset of an iptables-save dump for IPv``family``."""
    dump = _Dump("ip" if family == 4 else "ip6", source)
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line and not line.startswith("#"):
            dump.line(n, line)
    if dump.table is not None:
        raise ParseError(f"table {dump.table!r} not committed (no COMMIT)", source=source)
    for c in dump.rs.chains.values():
        c.origin = "iptables"
    return dump.rs


class _Dump:
    """An iptables-save dump read line by line (iptables-restore(8))."""

    def __init__(self, fam: str, source: str) -> None:
        self.fam = fam
        self.source = source
        self.rs = Ruleset()
        self.table: str | None = None
        self.pending: list[tuple[int, str, list[str]]] = []
        """Rules of the current table, applied at COMMIT (chains may be declared later)."""
        self.known: set[str] = set()

    def line(self, n: int, line: str) -> None:
        """One non-blank, non-comment line."""
        if line.startswith("*"):
            self.table = line[1:].strip()
            self.known = set()
            return
        if self.table is None:
            raise ParseError(f"{line!r} outside a *table section", line=n, source=self.source)
        if line == "COMMIT":
            self.commit()
            self.table = None
        elif line.startswith(":"):
            self.declare(n, line, self.table)
        else:
            self.command(n, line, self.table)

    def declare(self, n: int, line: str, table: str) -> None:
        """``:CHAIN POLICY [packets:bytes]`` (``-`` for a user chain)."""
        parts = line[1:].split()
        if len(parts) < 2:
            raise ParseError(f"bad chain line {line!r}", line=n, source=self.source)
        name, policy = parts[0], parts[1]
        self.known.add(name)
        hook = BUILTIN_HOOKS.get(name) if policy != "-" else None
        self.rs.add(Chain(self.fam, table, name, hook=hook, prio=TABLE_PRIO.get(table, 0),
                          policy="drop" if policy == "DROP" else "accept", source=self.source,
                          line=n, policy_line=n, origin="iptables"))

    def command(self, n: int, line: str, table: str) -> None:
        """``-A``/``-I`` (kept for COMMIT), ``-N`` or ``-P``."""
        try:
            args = shlex.split(line)
        except ValueError as exc:
            raise ParseError(str(exc), line=n, source=self.source) from None
        if args[0] in ("-A", "--append", "-I", "--insert") and len(args) >= 2:
            # -I CHAIN [num] rule: insert at the front (restore files rarely use it)
            if args[0] in ("-I", "--insert") and len(args) > 2 and args[2].isdigit():
                args = [args[0], args[1], *args[3:]]
            self.pending.append((n, line, args))
        elif args[0] in ("-N", "--new-chain") and len(args) >= 2:
            self.known.add(args[1])
            self.rs.add(Chain(self.fam, table, args[1], source=self.source, line=n,
                              origin="iptables"))
        elif args[0] in ("-P", "--policy") and len(args) >= 3:
            ch = self.rs.chains.get((self.fam, table, args[1]))
            if ch is not None:
                ch.policy, ch.policy_line = args[2].lower(), n
        else:
            raise ParseError(f"unsupported line {line!r}", line=n, source=self.source)

    def commit(self) -> None:
        """Apply the table's rules to its chains."""
        for n, raw, args in self.pending:
            cname = args[1]
            chain = self.rs.chains.get((self.fam, self.table or "", cname))
            if chain is None:
                raise ParseError(f"rule for undeclared chain {cname!r}", line=n,
                                 source=self.source)
            rule = _rule(args[2:], self.known, self.source, n, raw.strip())
            if any(a in ("DNAT", "REDIRECT") for a in args):
                self.rs.dnat.append(f"{chain.describe()}: {raw.strip()} "
                                    f"({self.source.lstrip('/')}:{n})")
            if args[0] in ("-I", "--insert"):
                chain.rules.insert(0, rule)
            else:
                chain.rules.append(rule)
        self.pending.clear()


def variant(version_output: str) -> str | None:
    """``legacy`` or ``nf_tables`` from ``iptables -V`` (``iptables v1.8.9 (nf_tables)``)."""
    if "(legacy)" in version_output:
        return "legacy"
    if "(nf_tables)" in version_output:
        return "nf_tables"
    if version_output.startswith("iptables v1.") or version_output.startswith("ip6tables v"):
        return "legacy"  # before 1.8 there was only the legacy backend
    return None
