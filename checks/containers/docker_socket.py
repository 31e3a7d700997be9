"""``containers.docker_socket``: the Docker socket is not writable by everyone.

What it checks: who can write the Docker API socket; everyone who can is root on the host.

How it decides: ``docker.socket``'s ``SocketMode`` (default 0660) and ``SocketGroup``
(default ``docker``) as systemd applies them and, live, the mode of ``/run/docker.sock``
(:mod:`aiaudit.linux.containers.docker`).  World-writable fails; group-writable fails when
the group is one of ``broad_groups`` (groups most users are in); else it passes, naming the
group's members (each of them root-equivalent).

Sources: systemd.socket(5) ``SocketMode=``, ``SocketGroup=``; Docker's ``docker.socket``
unit and "Docker daemon attack surface".
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.containers import docker

FIX = Remediation("Keep the socket 0660 root:docker and the docker group for administrators "
                  "only.", (Snippet.file("/etc/systemd/system/docker.socket.d/zz-aiaudit.conf",
                                         "[Socket]\nSocketMode=0660\nSocketGroup=docker\n",
                                         "socket mode and group"),))


def run(ctx: CheckContext) -> Iterator[Result]:
    """docker.socket is not writable by others or a broad group."""
    host, p = ctx.host, ctx.params
    if not docker.docker_installed(host):
        yield Result(Status.SKIP, "docker.sock", "Docker Engine is not installed")
        return
    settings = docker.socket_settings(host)
    evs = [Evidence.file(file, line, f"{key}={value}")
           for key, value, file, line in settings.assignments]
    mode, group, aspect = settings.mode, settings.group, Aspect.PERSISTED
    live = docker.live_socket_mode(host)
    if live is not None:
        mode, aspect = live, Aspect.RUNTIME
        evs.append(Evidence.runtime(docker.DOCKER_SOCK, mode))
    try:
        bits = int(mode, 8)
    except ValueError:
        yield Result(Status.ERROR, "docker.sock", f"SocketMode={mode} is not octal")
        return
    exposure = docker.socket_exposure(bits, group, p["broad_groups"])
    who = _who(host, group)
    if exposure == "world":
        yield Result(Status.FAIL, "docker.sock", f"the Docker socket is mode {mode}: every local "
                     "user is root", expected="not world-writable", actual=mode, aspect=aspect,
                     evidence=tuple(evs), remediation=FIX)
    elif exposure == "group":
        yield Result(Status.FAIL, "docker.sock", f"the Docker socket is writable by {who}, a "
                     "group most users are in", expected="a dedicated group", actual=group,
                     aspect=aspect, evidence=tuple(evs), remediation=FIX)
    else:
        yield Result(Status.PASS, "docker.sock", f"the Docker socket is mode {mode}, writable "
                     f"by root and {who}: each of them is root-equivalent",
                     expected="0660 root:docker", actual=f"{mode} {group}", aspect=aspect,
                     evidence=tuple(evs))


def _who(host: Host, group: str) -> str:
    """``group NAME (members)`` from the root's /etc/group, or ``group NAME`` when the
    group cannot be looked up."""
    from aiaudit.linux.accounts.users import accounts

    try:
        entry = accounts(host).db.group(group)
    except (HostError, ParseError):
        entry = None
    return (f"group {group} ({', '.join(entry.members) or 'no listed members'})"
            if entry else f"group {group}")


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``containers.docker_socket``."""
    return [CheckSpec(
        id="containers.docker_socket", title="The Docker socket is not broadly writable",
        run=run,
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "broad_groups": {"type": "array", "items": {"type": "string"},
                             "default": ["users", "staff", "domain users"]}}},
        description="docker.socket SocketMode/SocketGroup (defaults 0660, docker); live, the "
                    "mode of /run/docker.sock.")]
