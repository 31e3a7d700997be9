"""``accounts.privileged_groups``: the training user is in no group that is root in all but
name.

``docker`` and ``lxd`` start privileged containers with the host's / mounted; ``disk`` reads
and writes raw block devices.  Users and groups come from the scanned root's
``/etc/passwd`` and ``/etc/group`` (:mod:`aiaudit.linux.accounts.users`): the user is in a
group whose gid is its primary gid or whose member list names it, as ``getgrouplist`` says.
Memberships that NSS sources beyond the files (sss, ldap) may add are mentioned, not judged.

Sources: passwd(5), group(5), getgrouplist(3); Docker "Docker daemon attack surface"; LXD
security documentation.
"""

from __future__ import annotations

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
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts.users import training_user

ROOT_GROUPS = ("docker", "lxd", "disk")


def memberships(user: pw.Account, db: pw.Database, groups: list[str]
                ) -> list[tuple[str, Evidence]]:
    """The listed groups ``user`` is in, each as ``name`` or ``name (primary group)``, with
    the passwd or group line that says so."""
    hits: list[tuple[str, Evidence]] = []
    for name in groups:
        g = db.group(name)
        if g is None:
            continue
        if user.gid == g.gid:
            hits.append((f"{name} (primary group)",
                         Evidence.file("/etc/passwd", user.line, f"{user.name}:...:{user.gid}")))
        elif user.name in g.members:
            hits.append((name, Evidence.file("/etc/group", g.line,
                                             f"{g.name}:x:{g.gid}:{','.join(g.members)}")))
    return hits


def run(ctx: CheckContext) -> Iterator[Result]:
    """FAIL when the training user is in one of the root-equivalent groups."""
    user, acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None and acc is not None
    groups = list(ctx.params["groups"])
    hits = memberships(user, acc.db, groups)
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
                 evidence=tuple(e for _, e in hits), remediation=Remediation(
                     f"Remove {user.name} from these groups; give container access through "
                     "rootless Docker/Podman or Apptainer instead.",
                     tuple(Snippet.command(f"gpasswd -d {user.name} {h.split()[0]}",
                                           f"remove from {h.split()[0]}")
                           for h in names if "primary" not in h)))


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
        description="Primary group (/etc/passwd) and member lists (/etc/group) of "
                    "the training user against the listed groups.")]
