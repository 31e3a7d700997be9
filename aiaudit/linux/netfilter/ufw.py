"""ufw configuration: ``/etc/ufw/ufw.conf``, ``/etc/default/ufw`` (shell ``KEY=value``)
and the ``### tuple ###`` markers of ``/etc/ufw/user.rules`` / ``user6.rules``, into the
:mod:`aiaudit.linux.netfilter.model` model.

Tuple format (ufw ``src/backend_iptables.py`` ``_write_rules``, ``src/common.py``
``UFWRule.get_app_tuple``): ``### tuple ### ACTION PROTO DPORT DST SPORT SRC [DAPP SAPP]
DIRECTION [comment=HEX]``; ACTION is ``allow``/``deny``/``reject``/``limit`` with an
optional ``_log``/``_log-all`` suffix, ``route:`` prefixes a forward rule; DIRECTION is
``in``, ``out`` or ``in_IFACE``/``out_IFACE``; ports ``any``, ``22``, ``80,443``,
``8000:8010``.  The built-ins of ``before.rules`` that matter for new inbound TCP/UDP
connections (loopback, established) are modelled; DHCP client, mDNS and ICMP are not.
"""

from __future__ import annotations

import re

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record
from aiaudit.linux.netfilter.iptables import port_ranges
from aiaudit.linux.netfilter.model import Chain, Cond, Rule, Ruleset

_ASSIGN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


@record
class Setting:
    """A ``KEY=value`` line."""

    value: str
    line: int


def parse_conf(text: str) -> dict[str, Setting]:
    """Shell-style assignments (last wins); quotes removed; other lines ignored, as the
    ``ufw-init`` script sources the file."""
    out: dict[str, Setting] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.lstrip().startswith("#"):
            continue
        m = _ASSIGN.match(raw)
        if m:
            v = m.group(2).strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
            out[m.group(1)] = Setting(v, n)
    return out


@record
class Tuple:
    """One ufw rule as recorded in the rules file."""

    action: str
    proto: str
    dport: str
    dst: str
    sport: str
    src: str
    direction: str
    line: int
    text: str
    route: bool = False


def parse_tuples(text: str, source: str) -> list[Tuple]:
    """The ``### tuple ###`` lines of a user rules file."""
    out: list[Tuple] = []
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.startswith("### tuple ###"):
            continue
        fields = [f for f in raw[len("### tuple ###"):].split() if not f.startswith("comment=")]
        if len(fields) not in (7, 9):
            raise ParseError(f"bad ufw tuple {raw.strip()!r}", line=n, source=source)
        action, route = fields[0], fields[0].startswith("route:")
        action = action.removeprefix("route:").split("_")[0]
        if action not in ("allow", "deny", "reject", "limit"):
            raise ParseError(f"unknown ufw action {fields[0]!r}", line=n, source=source)
        out.append(Tuple(action, fields[1], fields[2], fields[3], fields[4], fields[5],
                         fields[-1], n, raw.strip(), route))
    return out


def to_ruleset(policy: str, policy_source: str, policy_line: int | None,
               rules: list[tuple[int, str, list[Tuple]]]) -> Ruleset:
    """Chains ufw loads: ``INPUT`` of each family with ``DEFAULT_INPUT_POLICY`` (ufw sets
    it on the built-in chain), loopback and established accepted (before.rules), then
    the user rules (``rules`` = [(family, rules file, tuples)])."""
    rs = Ruleset()
    for family, source, tuples in rules:
        fam = "ip" if family == 4 else "ip6"
        chain = rs.add(Chain(fam, "filter", "INPUT", hook="input", prio=0,
                             policy="drop" if policy.upper() in ("DROP", "REJECT") else "accept",
                             source=policy_source, line=policy_line, policy_line=policy_line,
                             origin="ufw"))
        before = f"/etc/ufw/before{'6' if family == 6 else ''}.rules"
        chain.rules.append(Rule((Cond("iif", ("lo",)),), "accept", None, before, None,
                                "-A ufw-before-input -i lo -j ACCEPT"))
        chain.rules.append(Rule((Cond("ct", ("related", "established")),), "accept", None,
                                before, None, "-A ufw-before-input -m conntrack --ctstate "
                                "RELATED,ESTABLISHED -j ACCEPT"))
        for t in tuples:
            if t.route or not t.direction.startswith("in"):
                continue
            conds: list[Cond] = []
            if t.direction.startswith("in_"):
                conds.append(Cond("iif", (t.direction[3:],), text=t.text))
            protos = () if t.proto == "any" else (t.proto,)
            if protos:
                conds.append(Cond("proto", protos, text=t.text))
            if t.dport != "any":
                conds.append(Cond("dport", protos, False, port_ranges(t.dport), t.text))
            if t.src not in ("0.0.0.0/0", "::/0", "any"):
                conds.append(Cond("saddr", (t.src,), text=t.text))
            if t.dst not in ("0.0.0.0/0", "::/0", "any"):
                conds.append(Cond("daddr", (t.dst,), text=t.text))
            verdict = {"allow": "accept", "limit": "accept", "deny": "drop",
                       "reject": "reject"}[t.action]
            chain.rules.append(Rule(tuple(conds), verdict, None, source, t.line, t.text))
    return rs
