"""The effective sshd configuration of a root for one connection, as ``sshd -T -C
user=..,host=..,addr=..`` computes and prints it (``aiaudit sshd``).

The connection is sshd's ``-C`` spec (``user``, ``host``, ``addr``, ``laddr``, ``lport``,
``rdomain``); ``Match Group`` uses the user's groups from the root's ``/etc/passwd`` and
``/etc/group`` (a user not found there matches no ``Group``, as sshd's ``getgrouplist``
finds nothing).  Without a connection only ``Match all`` blocks apply, as in a plain
``sshd -T``; a ``Match LocalPort`` line without an ``lport`` is refused, as sshd refuses
it.  Every line the installed release prints is printed (compiled-in lists, ``IPQoS``,
the wildcard ``ListenAddress`` lines), and none it does not print (``DebianBanner``
before 10.0).  Values are printed in ``sshd -T``'s form (``without-password``,
``//etc/issue``, one line per entry of ``Port``, ``ListenAddress``, ``AllowUsers``...); the
JSON form adds the canonical value, the deciding ``file:line`` and the connection."""

from __future__ import annotations

from typing import Any

from aiaudit.core.errors import AuditError, UsageError
from aiaudit.core.host import Host
from aiaudit.linux.sshd import config as sp

CONNECTION_KEYS = ("user", "host", "addr", "laddr", "lport", "rdomain")
"""The fields ``sshd -C`` accepts (``servconf.c parse_server_match_testspec``)."""


PER_LINE = frozenset(k.opt for k in sp.KEYWORD_LIST if k.cls == sp.ACCUMULATE)
"""Options ``sshd -T`` prints one line per entry; other lists share one line."""

PRINTED_SINCE = {"debianbanner": (10, 0)}
"""Options sshd knows before it prints them in ``sshd -T``: Debian 12's 9.2 accepts
``DebianBanner`` but does not print it, Debian 13's 10.0 does (both checked against the
real ``sshd -T``; releases in between are assumed to print it from 10.0)."""

LPORT_MISSING = ("'Match LocalPort' in configuration but 'lport' not in connection test "
                 "specification")
"""sshd's refusal (exit 255) of ``sshd -T`` when a ``Match LocalPort`` line exists, in any
block, even one another criterion rules out, and no ``lport`` is given."""


def default_listen(family: str | None, ports: list[str]) -> list[str]:
    """What ``sshd -T`` prints for ``ListenAddress`` when no line sets it: per port, the
    wildcard addresses of ``AddressFamily`` (``[::]`` before ``0.0.0.0``, as the installed
    9.2 and 10.0 print them)."""
    wild = {"inet": ("0.0.0.0",), "inet6": ("[::]",)}.get(family or "any",
                                                          ("[::]", "0.0.0.0"))
    return [f"{a}:{p}" for p in ports for a in wild]


def _printed(cfg: sp.SshdConfig, name: str, setting: sp.Setting, ports: list[str],
             family: str | None) -> list[str] | None:
    """``sshd -T``'s lines of one option, ``None`` when this release prints nothing."""
    since = PRINTED_SINCE.get(name.lower())
    if cfg.release is not None and (sp.KEYWORDS[name.lower()].since > cfg.release or (
            since is not None and since > cfg.release)):
        return None  # an option this sshd does not have (PerSourcePenalties before 9.8)
    if setting.option == "ListenAddress":
        return setting.printed(ports) or default_listen(family, ports)
    if since is not None and cfg.release is None:
        return None  # an unknown release is taken as 9.2 (see defaults.for_package)
    printed = setting.printed()
    if setting.option == "IPQoS":
        return ipqos_printed(printed, cfg.release)
    return printed


TOS_IGNORED = frozenset({"lowdelay", "throughput", "reliability"})
"""The old ToS keywords that 10.0's sshd accepts for ``IPQoS`` and ignores (prints
``none``; checked against Debian 13's ``sshd -T``)."""


def ipqos_printed(words: list[str], release: tuple[int, int] | None) -> list[str]:
    """``IPQoS`` as ``sshd -T`` prints it: one value sets interactive and bulk alike
    (``servconf.c``), and from 10.0 the ToS keywords print as ``none``."""
    if len(words) == 1:
        words = words * 2
    if release is not None and release >= (10, 0):
        words = ["none" if w.lower() in TOS_IGNORED else w for w in words]
    return words


def parse_connection(spec: str) -> dict[str, str]:
    """``user=alice,addr=10.1.2.3`` -> fields; :class:`UsageError` on anything sshd's
    ``-C`` would refuse (unknown field, missing ``=``, a non-numeric ``lport``)."""
    out: dict[str, str] = {}
    for part in spec.split(","):
        key, eq, value = part.partition("=")
        if not eq or key not in CONNECTION_KEYS or not value:
            raise UsageError(f"--connection {spec!r}: expected FIELD=VALUE,... with FIELD "
                             f"one of {', '.join(CONNECTION_KEYS)} (got {part!r})")
        if key == "lport" and (not value.isdigit() or not 0 < int(value) < 65536):
            raise UsageError(f"--connection: lport {value!r} is not a port number")
        out[key] = value
    return out


def connection(host: Host, fields: dict[str, str]) -> tuple[sp.Connection, list[str]]:
    """The parser's connection for ``fields`` and notes (how the groups were found)."""
    notes: list[str] = []
    groups: tuple[str, ...] | None = None
    user = fields.get("user")
    if user:
        from aiaudit.linux.accounts.users import accounts

        try:
            db = accounts(host).db
        except AuditError as exc:
            db = None
            notes.append(f"groups unknown ({exc}): Match Group never matches")
        acc = db.user(user) if db is not None else None
        if db is not None and acc is None:
            notes.append(f"{user} is not in the root's /etc/passwd: Match Group never matches")
            groups = ()
        elif db is not None and acc is not None:
            names = [g.name for gid in sorted(db.supplementary_gids(acc))
                     if (g := db.group_by_gid(gid)) is not None]
            groups = tuple(names)
    conn = sp.Connection(user=user, groups=groups, host=fields.get("host"),
                         addr=fields.get("addr"), laddr=fields.get("laddr"),
                         lport=int(fields["lport"]) if "lport" in fields else None,
                         rdomain=fields.get("rdomain"))
    return conn, notes


def view(host: Host, spec: str | None) -> dict[str, Any]:
    """The effective configuration for the connection ``spec`` (JSON-ready)."""
    from aiaudit.linux.sshd.effective import load_config

    loaded = load_config(host)
    if loaded.skip:
        raise UsageError(loaded.skip)
    if loaded.config is None:
        assert loaded.error is not None
        raise loaded.error
    cfg = loaded.config
    fields = parse_connection(spec) if spec else {}
    lport_block = next((b for b in cfg.blocks if any(a == "localport" for a, _ in b.criteria)),
                       None)
    if "lport" not in fields and lport_block is not None:
        raise UsageError(f"{LPORT_MISSING} ({lport_block.label}): give --connection "
                         "...,lport=PORT")
    conn, notes = connection(host, fields) if fields else (None, [])
    eff = cfg.effective(conn)
    matched = [b.label for b in dict.fromkeys(cfg.blocks)
               if not b.is_all and conn is not None and sp.match_connection(b, conn)]
    ports = eff.get("Port").items
    family = eff.get("AddressFamily").value
    options: dict[str, Any] = {}
    for name, setting in eff.items():
        printed = _printed(cfg, name, setting, ports, family)
        if printed is None:
            continue
        options[name] = {**setting.as_json(), "sshd_T": printed}
    return {
        "root": host.root,
        "connection": {**fields, **({"groups": list(conn.groups)}
                                    if conn is not None and conn.groups is not None else {})}
        if fields else None,
        "matched_blocks": matched,
        "files": list(cfg.files),
        "notes": notes + ([cfg.defaults_note] if cfg.defaults_note else []),
        "options": options,
    }


def render_text(v: dict[str, Any]) -> str:
    """``sshd -T`` lines (lower-case keyword, value), preceded by ``#`` comments saying
    which connection and blocks were evaluated."""
    conn = v["connection"]
    spec = ",".join(f"{k}={val}" for k, val in conn.items() if k != "groups") if conn \
        else "none (only Match all applies)"
    out = [f"# connection: {spec}"]
    if conn and "groups" in conn:
        out.append(f"# groups: {' '.join(conn['groups']) or '(none)'}")
    out += [f"# matched: {b}" for b in v["matched_blocks"]]
    out += [f"# note: {n}" for n in v["notes"]]
    for name in sorted(v["options"], key=str.lower):
        printed = v["options"][name]["sshd_T"]
        if not printed:
            continue
        key = name.lower()
        if key in PER_LINE:
            out += [f"{key} {p}" for p in printed]
        else:
            out.append(f"{key} {' '.join(printed)}")
    return "\n".join(out) + "\n"
