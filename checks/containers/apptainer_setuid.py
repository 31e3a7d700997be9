"""``containers.apptainer_setuid``: Apptainer (Singularity) does not run setuid root.

What it checks: every container start in setuid mode runs privileged code that has had root
exploits; unprivileged user namespaces do the same job without it.

How it decides: ``allow setuid`` of the first ``apptainer.conf`` / ``singularity.conf``
found (default ``yes``; the last line of a key wins, :mod:`aiaudit.linux.containers.apptainer`)
together with a ``starter-suid`` that is setuid and owned by root: fails only when both hold.
Skips where neither a configuration file nor a setuid starter is present.

Sources: apptainer.conf(5) "allow setuid"; Apptainer's ``internal/pkg/runtime/engine/config``
(the parser); the Apptainer admin guide, "Setuid or unprivileged".
"""

from __future__ import annotations

import stat
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

APPTAINER_CONFS = ("/etc/apptainer/apptainer.conf", "/usr/local/etc/apptainer/apptainer.conf",
                   "/etc/singularity/singularity.conf",
                   "/usr/local/etc/singularity/singularity.conf")
STARTER_SUID = ("/usr/libexec/apptainer/bin/starter-suid",
                "/usr/local/libexec/apptainer/bin/starter-suid",
                "/usr/lib/x86_64-linux-gnu/singularity/bin/starter-suid",
                "/usr/libexec/singularity/bin/starter-suid",
                "/usr/local/libexec/singularity/bin/starter-suid")
WANT = "no (or no setuid starter)"


def setuid_starters(host: Host) -> list[str]:
    """The installed ``starter-suid`` binaries that are setuid and owned by root."""
    starters = []
    for s in STARTER_SUID:
        try:
            st = host.stat(s)
        except HostError:
            continue
        if st.st_mode & stat.S_ISUID and st.st_uid == 0:
            starters.append(s)
    return starters


def allow_setuid(host: Host, conf: str) -> tuple[str, int | None]:
    """``(value, line)`` of ``allow setuid`` in ``conf`` (``("yes", None)``, the default,
    without the key).  Raises HostError/ParseError for an unreadable or malformed file."""
    from aiaudit.linux.containers import apptainer  # only where Apptainer is configured

    parsed = apptainer.parse(host.read_text(conf), conf.lstrip("/"))
    if "allow setuid" not in parsed:
        return "yes", None
    value, line = parsed["allow setuid"]
    return value, line


def run(ctx: CheckContext) -> Iterator[Result]:
    """No setuid-root starter in use."""
    host = ctx.host
    conf = next((c for c in APPTAINER_CONFS if host.is_file(c)), None)
    starters = setuid_starters(host)
    if conf is None and not starters:
        yield Result(Status.SKIP, "apptainer", "Apptainer/Singularity is not installed")
        return
    value, line = "yes", None
    if conf is not None:
        try:
            value, line = allow_setuid(host, conf)
        except (HostError, ParseError) as exc:
            yield Result(Status.ERROR, "apptainer", str(exc), evidence=(Evidence.file(conf),))
            return
    ev: tuple[Evidence, ...] = (
        (Evidence.file(conf, line, f"allow setuid = {value}"),) if conf and line else
        (Evidence.default("apptainer default for allow setuid", "yes"),))
    ev += tuple(Evidence.file(s, None, "setuid root") for s in starters)
    if value.lower() == "yes" and starters:
        target = conf or APPTAINER_CONFS[0]
        yield Result(Status.FAIL, "allow setuid", f"allow setuid = {value} and {starters[0]} is "
                     "setuid root: every container start runs privileged code that has had "
                     "root exploits (user namespaces do the same job unprivileged)",
                     expected=WANT, actual="yes", aspect=Aspect.CONFIG, evidence=ev,
                     remediation=Remediation(
                         f"Set `allow setuid = no` in {target} (or remove the apptainer-suid "
                         "package) and use unprivileged user namespaces.",
                         (Snippet.command(f"sed -i 's/^allow setuid = yes/allow setuid = no/' "
                                          f"{target}", "turn setuid mode off"),)))
        return
    why = ("allow setuid = no" if value.lower() != "yes" else
           "no setuid-root starter-suid is installed")
    yield Result(Status.PASS, "allow setuid", f"Apptainer runs unprivileged ({why})",
                 expected=WANT, actual=value, aspect=Aspect.CONFIG, evidence=ev)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``containers.apptainer_setuid``."""
    return [CheckSpec(
        id="containers.apptainer_setuid", title="Apptainer does not run setuid root",
        run=run, params_schema={"type": "object", "additionalProperties": False},
        description="allow setuid in apptainer.conf/singularity.conf (default yes) with a "
                    "setuid-root starter-suid present.")]
