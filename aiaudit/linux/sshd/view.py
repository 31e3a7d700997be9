"""The effective sshd configuration of a root for one connection, as ``sshd -T -C
user=..,host=..,addr=..`` computes and prints it (``aiaudit sshd``).

The connection is sshd's ``-C`` spec (``user``, ``host``, ``addr``, ``laddr``, ``lport``,
``rdomain``); ``Match Group`` uses the user's groups from the root's ``/etc/passwd`` and
``/etc/group`` (a user not found there matches no ``Group``, as sshd's ``getgrouplist``
finds nothing).  Without a connection only ``Match all`` blocks apply, as in a plain
``sshd -T``.  Values are printed in ``sshd -T``'s form (``without-password``,
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
    conn, notes = connection(host, fields) if fields else (None, [])
    eff = cfg.effective(conn)
    matched = [b.label for b in dict.fromkeys(cfg.blocks)
               if not b.is_all and conn is not None and sp.match_connection(b, conn)]
    ports = eff.get("Port").items
    options: dict[str, Any] = {}
    for name, setting in eff.items():
        item = setting.as_json()
        if setting.option == "ListenAddress":
            item["sshd_T"] = setting.printed(ports)
        options[name] = item
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
