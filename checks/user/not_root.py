"""``user.not_root``: training does not run as root.

The training user (``--user``, ``SLURM_JOB_USER``, ``SUDO_USER``, ``settings.user``) is
looked up as the scanned system looks it up (:mod:`aiaudit.linux.accounts.users`): live,
``getpwnam`` through NSS (a directory user of sssd/LDAP included); offline, the root's
``/etc/passwd`` as glibc's files backend reads it.  uid 0 fails, whatever the name.

Sources: passwd(5); getpwnam(3) (the first entry of a name wins); nsswitch.conf(5).
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import (
    CheckContext,
    CheckSpec,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.linux.accounts.users import training_user, user_evidence


def run(ctx: CheckContext) -> Iterator[Result]:
    """FAIL when the training user is uid 0."""
    user, acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None and acc is not None
    ev = (user_evidence(ctx.host, acc, user),)
    if user.uid == 0:
        yield Result(Status.FAIL, user.name, f"training runs as {user.name} (uid 0)"
                     + (f", from {ctx.user_source}" if ctx.user_source else ""),
                     expected="uid != 0", actual="uid 0", evidence=ev,
                     remediation=Remediation(
                         "Create an unprivileged training account, give it the GPU device "
                         "groups (video/render) and its limits, and start jobs as that user.",
                         (Snippet.command("useradd -m -G video,render trainer",
                                          "an unprivileged training user"),)))
        return
    yield Result(Status.PASS, user.name, f"training user {user.name} is uid {user.uid}",
                 expected="uid != 0", actual=f"uid {user.uid}", evidence=ev)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``user.not_root``."""
    return [CheckSpec(
        id="user.not_root", title="Training does not run as root", run=run,
        params_schema={"type": "object", "additionalProperties": False},
        description="The training user (--user, SLURM_JOB_USER, SUDO_USER, "
                    "settings.user) must not be uid 0: looked up through NSS live "
                    "(directory users included), in the root's passwd offline.")]
