"""``user.not_root``: training does not run as root.

The training user (``--user``, ``SLURM_JOB_USER``, ``SUDO_USER``, ``settings.user``) is
looked up in the scanned root's ``/etc/passwd`` as glibc's files backend does
(:mod:`aiaudit.linux.accounts.users`); uid 0 fails, whatever the name.

Sources: passwd(5); getpwnam(3) (the first entry of a name wins).
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
from aiaudit.linux.accounts.users import training_user


def run(ctx: CheckContext) -> Iterator[Result]:
    """FAIL when the training user is uid 0."""
    user, _acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None
    ev = (Evidence.file("/etc/passwd", user.line, f"{user.name}:x:{user.uid}:{user.gid}"),)
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
                    "settings.user) must not be uid 0 in the scanned root's passwd.")]
