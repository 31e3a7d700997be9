"""``accounts.privileged_groups``: the training user is in no group that is root in all but
name.

``docker`` and ``lxd`` start privileged containers with the host's / mounted; ``disk`` reads
and writes raw block devices.  Users and groups are looked up as the system does
(:mod:`aiaudit.linux.accounts.users`): the user is in a group whose gid is its primary gid,
whose member list names it, or that ``getgrouplist`` gives it.  Live that is NSS (directory
groups of sssd/LDAP included); offline the root's ``/etc/passwd`` and ``/etc/group``, and
memberships that NSS sources beyond the files (sss, ldap) may add are mentioned, not judged.

Sources: passwd(5), group(5), getgrouplist(3); Docker "Docker daemon attack surface"; LXD
security documentation.
"""

from __future__ import annotations

import shlex
from typing import Iterator

from aiaudit.api import (
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts.users import (
    Accounts,
    group_evidence,
    nsswitch_evidence,
    training_user,
    user_evidence,
)

ROOT_GROUPS = ("docker", "lxd", "disk")


def memberships(host: Host, acc: Accounts, user: pw.Account, groups: list[str]
                ) -> list[tuple[str, Evidence]]:
    """The listed groups ``user`` is in, each as ``name`` or ``name (primary group)``, with
    the passwd or group line (or NSS lookup) that says so."""
    db = acc.db
    hits: list[tuple[str, Evidence]] = []
    for name in groups:
        g = db.group(name)
        if g is None:
            continue
        if user.gid == g.gid:
            hits.append((f"{name} (primary group)", user_evidence(host, acc, user)))
        elif user.name in g.members:
            hits.append((name, group_evidence(host, acc, g)))
        elif g.gid in db.supplementary_gids(user):  # a source's initgroups (sssd, LDAP)
            via = "through NSS" if db.nss is not None else "from etc/group"
            hits.append((name, Evidence.command(f"getgrouplist({user.name}) {via}",
                                                f"includes {g.name} ({g.gid})")))
    return hits


def run(ctx: CheckContext) -> Iterator[Result]:
    """FAIL when the training user is in one of the root-equivalent groups."""
    user, acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None and acc is not None
    groups = list(ctx.params["groups"])
    try:
        hits = memberships(ctx.host, acc, user, groups)
    except HostError as exc:  # NSS did not answer
        yield Result(Status.ERROR, user.name, f"could not look up the groups of {user.name}: "
                     f"{exc}", evidence=(nsswitch_evidence(ctx.host, "group"),))
        return
    remote = (f"; group membership may also come from {', '.join(acc.remote_group)} "
              "(nsswitch.conf), which files cannot show") if acc.remote_group else ""
    want = "none of " + ", ".join(groups)
    if not hits:
        yield Result(Status.PASS, user.name, f"training user {user.name} is in none of "
                     f"{', '.join(groups)}{remote}", expected=want, actual="none")
        return
    names = [h for h, _ in hits]
    yield Result(Status.FAIL, user.name, f"training user {user.name} is in "
                 f"{', '.join(names)}: each is root-equivalent (a container with / mounted, "
                 f"or the raw disks){remote}", expected=want, actual=", ".join(names),
                 evidence=tuple(e for _, e in hits), remediation=_fix(user, hits))


def _fix(user: pw.Account, hits: list[tuple[str, Evidence]]) -> Remediation:
    """``gpasswd -d`` for memberships /etc/group lists; a membership that only NSS gives
    (a directory group of sssd/LDAP) is removed in the directory, which gpasswd cannot
    change."""
    local = [h for h, e in hits if "primary" not in h and e.path == "/etc/group"]
    remote = [h for h, e in hits if "primary" not in h and e.path != "/etc/group"]
    where = (f"; the membership in {', '.join(remote)} comes from the directory (NSS), "
             "not /etc/group: remove it there (LDAP/SSSD)" if remote else "")
    return Remediation(
        f"Remove {user.name} from these groups{where}; give container access through "
        "rootless Docker/Podman or Apptainer instead.",
        tuple(Snippet.command(f"gpasswd -d -- {shlex.quote(user.name)} {shlex.quote(h)}",
                              f"remove from {h}")
              for h in local))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``accounts.privileged_groups``."""
    return [CheckSpec(
        id="accounts.privileged_groups",
        title="The training user is not in root-equivalent groups",
        run=run,
        params_schema={"type": "object", "additionalProperties": False,
                       "properties": {"groups": {
                           "type": "array", "items": {"type": "string"},
                           "default": list(ROOT_GROUPS)}}},
        description="Primary group, member lists and getgrouplist of the training user "
                    "against the listed groups: through NSS live (directory groups "
                    "included), /etc/passwd and /etc/group offline.")]
