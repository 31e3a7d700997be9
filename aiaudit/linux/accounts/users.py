"""The training user and the scanned root's accounts: passwd, group and whether NSS adds
sources beyond the files (the users pam_limits and sshd would resolve)."""

from __future__ import annotations

from aiaudit.api import (
    CheckContext,
    Evidence,
    Result,
    Status,
)
from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.accounts import passwd as pw

NO_USER = ("no training user given: pass --user NAME, run under Slurm (SLURM_JOB_USER) or "
           "sudo (SUDO_USER), or set settings.user in the ruleset")


# ------------------------------------------------------------------ users and groups
@record
class Accounts:
    """The scanned root's users and groups (files) and whether NSS adds more."""

    db: pw.Database
    remote_passwd: tuple[str, ...]
    remote_group: tuple[str, ...]


def accounts(host: Host) -> Accounts:
    """/etc/passwd, /etc/group and nsswitch.conf of the scanned root (parsed once)."""

    def load() -> Accounts:
        users, c1 = pw.parse_passwd(host.read_text("/etc/passwd"))
        try:
            groups, c2 = pw.parse_group(host.read_text("/etc/group"))
        except NotFound:
            groups, c2 = [], False
        ns = pw.parse_nsswitch(host.try_read_text("/etc/nsswitch.conf") or "")
        rp = pw.remote_sources(ns, "passwd") + (["nis (compat)"] if c1 else [])
        rg = pw.remote_sources(ns, "group") + (["nis (compat)"] if c2 else [])
        return Accounts(pw.Database(tuple(users), tuple(groups), c1 or c2), tuple(rp),
                        tuple(rg))

    return host.memo(("limits-accounts",), load)


PASSWD_MISSING = Evidence.default("accounts: etc/passwd", "no such file")
"""Why users cannot be resolved in a root without /etc/passwd."""


def accounts_error_evidence(exc: HostError | ParseError) -> Evidence:
    """Evidence for :func:`accounts` failing with ``exc`` (a ``default``: the error does
    not always say which of the account files it is about)."""
    return Evidence.default("accounts: etc/passwd, etc/group", f"cannot be read: {exc}")


def training_user(ctx: CheckContext) -> tuple[pw.Account | None, Accounts | None, Result | None]:
    """Resolve ``ctx.user`` in the scanned root's passwd; a result says why not."""
    if not ctx.user:
        return None, None, Result(Status.SKIP, "training user", NO_USER)
    try:
        acc = accounts(ctx.host)
    except NotFound:
        return None, None, Result(Status.ERROR, ctx.user, "etc/passwd is missing: users "
                                  "cannot be resolved", evidence=(PASSWD_MISSING,))
    except (HostError, ParseError) as exc:
        return None, None, Result(Status.ERROR, ctx.user, f"cannot read users: {exc}",
                                  evidence=(accounts_error_evidence(exc),))
    user = acc.db.user(ctx.user)
    src = f" (from {ctx.user_source})" if ctx.user_source else ""
    if user is None:
        if acc.remote_passwd:
            return None, acc, Result(Status.SKIP, ctx.user, (
                f"training user {ctx.user}{src} is not in etc/passwd; users also come from "
                f"{', '.join(acc.remote_passwd)} (nsswitch.conf), which an audit of files "
                "cannot see"))
        return None, acc, Result(Status.ERROR, ctx.user, (
            f"training user {ctx.user}{src} does not exist in etc/passwd: pam_limits "
            "refuses its sessions (PAM_USER_UNKNOWN); check --user / SLURM_JOB_USER / "
            "settings.user"), evidence=(Evidence.file("/etc/passwd"),))
    return user, acc, None
