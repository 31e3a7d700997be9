"""The account pam_limits opens a session for, with the group tests its domains need.

``pam_limits.c`` matches ``@group`` with ``pam_modutil_user_in_group_nam_nam`` (primary group
or member list) and ``@:gid`` ranges by gid; the files show only part of the group database
when nsswitch.conf names other sources (sss, ldap, nis), so a test may be unknown.
"""

from __future__ import annotations

from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts.users import Accounts
from aiaudit.linux.pam_limits import conf as lp


def subject_for(acc: Accounts, user: pw.Account, assume: bool | None = None) -> lp.Subject:
    """A pam_limits subject whose group tests say "unknown" (``None``) where NSS may add
    members the files do not show; ``assume`` replaces that unknown with a guess."""
    db = acc.db
    remote = bool(acc.remote_group)

    def check(g: pw.Group | None) -> bool | None:
        if g is not None and (user.gid == g.gid or user.name in g.members
                              or g.gid in db.supplementary_gids(user)):
            return True
        return assume if remote else False

    return lp.Subject(user.name, user.uid, user.gid,
                      in_group=lambda name: check(db.group(name)),
                      in_gid=lambda gid: check(db.group_by_gid(gid)))
