"""``limits.pam_stack``: the login services run pam_limits at all.

For each service (sshd by default) libpam's session stack is followed as libpam reads it
(:mod:`aiaudit.linux.pam_limits.stack`: the service file or ``other``, ``@include``,
``include``, ``substack``) to a ``session ... pam_limits.so`` line; for sshd ``UsePAM`` must
also be ``yes`` (:mod:`aiaudit.linux.pam_limits.stack`).  A stack naming a missing file is
broken: libpam refuses every session.  Without the line limits.conf never applies.

Sources: pam.conf(5), libpam ``pam_handlers.c`` (checked against the real libpam in
``tests/oracle``), sshd_config(5) ``UsePAM``.
"""

from __future__ import annotations

from typing import Any, Iterator

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
from aiaudit.linux.pam_limits.stack import Stack, not_applicable, pam_stack, sshd_use_pam

SERVICES_SCHEMA = {"type": "array", "items": {"type": "string",
                                              "pattern": "^[A-Za-z0-9_.@+-]+$"},
                   "minItems": 1, "default": ["sshd"],
                   "description": "PAM services that start training sessions"}
SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {"services": SERVICES_SCHEMA},
}


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per service: does its session stack run pam_limits?"""
    for service in ctx.params.get("services", ["sshd"]):
        yield service_result(ctx.host, service)


def service_result(host: Host, service: str) -> Result:
    """Gather UsePAM (sshd) and the service's stack, then judge them."""
    why = not_applicable(host, service)
    if why is not None:
        return Result(Status.SKIP, service, why)
    ev: list[Evidence] = []
    if service == "sshd":
        use_pam, e = sshd_use_pam(host)
        if e is not None:
            ev.append(e)
        if use_pam is False:
            return Result(Status.FAIL, service, "sshd runs without PAM (UsePAM no): "
                          "limits.conf is never applied to SSH sessions", expected="yes",
                          actual="UsePAM no", aspect=Aspect.CONFIG, evidence=tuple(ev),
                          remediation=use_pam_fix(host))
    try:
        st = pam_stack(host, service)
    except (HostError, ParseError) as exc:
        return Result(Status.ERROR, service, f"cannot read the PAM stack: {exc}")
    return judge(service, st, tuple(ev))


def use_pam_fix(host: Host) -> Remediation:
    """``UsePAM yes`` written where sshd reads it first (the SSH rules' fix: a drop-in, or
    the main file edited in place), so it merges with theirs; in words when the sshd
    model cannot place it."""
    try:
        from aiaudit.linux.sshd import fix as sshfix
        from aiaudit.linux.sshd.effective import load_config, passes

        cfg = load_config(host).config
        if cfg is not None:
            setting = passes(host, cfg).value("UsePAM")
            return sshfix.remediation(cfg, setting, "UsePAM yes",
                                      lambda s: (s.value or "").lower() == "yes")
    except (ImportError, HostError, ParseError):  # the limits checks work without sshd's
        pass
    return Remediation("Set 'UsePAM yes' in /etc/ssh/sshd_config and reload sshd.")


def judge(service: str, st: Stack, ev: tuple[Evidence, ...]) -> Result:
    """PASS when the stack reaches a pam_limits line; FAIL when it is broken or has none."""
    assert st.file is not None  # not_applicable() skipped a service without one
    if st.broken:
        return Result(Status.FAIL, service, f"the PAM configuration of {service} is broken "
                      f"({'; '.join(st.broken)}): libpam refuses every session",
                      expected="loaded", actual="broken", aspect=Aspect.CONFIG,
                      evidence=(*ev, Evidence.file(st.file)),
                      remediation=Remediation("Restore the missing PAM files or remove the "
                                              "include lines that name them."))
    if st.calls:
        c = st.calls[0]
        return Result(Status.PASS, service, f"{service} runs pam_limits "
                      f"({c.file.lstrip('/')}:{c.line}: {c.raw})", expected="loaded",
                      actual=c.control, aspect=Aspect.CONFIG,
                      evidence=(*ev, Evidence.file(c.file, c.line, c.raw)))
    msg = f"no 'session ... pam_limits.so' in the {service} stack ({', '.join(st.files)})"
    if st.problems:
        msg += "; " + "; ".join(st.problems)
    target = st.file if st.file.startswith("/etc/") else f"/etc/pam.d/{service}"
    return Result(Status.FAIL, service, msg + ": limits.conf does not apply",
                  expected="loaded", actual="absent", aspect=Aspect.CONFIG,
                  evidence=(*ev, Evidence.file(st.file)),
                  remediation=Remediation(
                      f"Add 'session required pam_limits.so' to {target}.",
                      (Snippet.command(f"echo 'session required pam_limits.so' >> {target}",
                                       "load pam_limits in the session stack"),)))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``limits.pam_stack``."""
    return [CheckSpec(
        id="limits.pam_stack", title="Login services run pam_limits",
        run=run, params_schema=SCHEMA,
        description="Follows @include/include/substack to a 'session ... pam_limits.so' "
                    "line; for sshd also requires UsePAM yes.")]
