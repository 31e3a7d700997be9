"""``slurm.job_limits``: the nofile/memlock limits a Slurm job step gets.

Jobs bypass PAM: slurmstepd starts with slurmd's limits (its unit's ``LimitNOFILE=`` /
``LimitMEMLOCK=`` with drop-ins, else systemd's ``DefaultLimit*=``; live, the running
slurmd's ``/proc/<pid>/limits``: :func:`aiaudit.linux.pam_limits.start.daemon_limits`), and
with the default ``PropagateResourceLimits=ALL`` the submitting shell's *soft* limit becomes
the job's soft limit, capped at slurmd's hard limit.  The submitting shell is estimated as
the training user's SSH session on this host (:mod:`aiaudit.linux.pam_limits.session`), else
systemd's default.  slurm.conf is the one slurmd really reads
(:mod:`aiaudit.linux.slurm.slurmd`).

Sources: ``src/slurmd/slurmstepd/ulimits.c``; slurm.conf(5) ``PropagateResourceLimits``;
Slurm FAQ "Why are my resource limits not propagated?" / memlock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

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
from aiaudit.core.startup.records import record
from aiaudit.linux.accounts.users import lookup_accounts, unknown_user
from aiaudit.linux.pam_limits import conf as lp
from aiaudit.linux.pam_limits.start import ITEM_KEYS, SYSTEMD_DEFAULTS, Start, daemon_limits
from aiaudit.linux.slurm import conf as sp
from aiaudit.linux.slurm.slurmd import installed, running_conf_choice, slurm_conf
from aiaudit.linux.systemd.units import load_unit

if TYPE_CHECKING:
    from aiaudit.linux.pam_limits.session import Effective

UNIT = "slurmd.service"
UNIT_DROPIN = "/etc/systemd/system/slurmd.service.d/zz-aiaudit-limits.conf"
MIN_SCHEMA = {"oneOf": [{"type": "integer", "minimum": 0}, {"const": "unlimited"}]}
DEFAULT_MIN: dict[str, int | str] = {"nofile": 65536, "memlock": "unlimited"}

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "nofile_min": {**MIN_SCHEMA, "default": DEFAULT_MIN["nofile"]},
        "memlock_min": {**MIN_SCHEMA, "default": DEFAULT_MIN["memlock"],
                        "description": "KiB as in limits.conf, or 'unlimited'"},
    },
}

Shell = Callable[[str], tuple[int, Evidence, str]]
"""item -> (the submitting shell's soft limit, its evidence, what it is)."""


@record
class Propagation:
    """What slurm.conf says about propagating the submitting shell's limits."""

    path: str | None
    names: set[str]
    """The limits propagated (``NOFILE``, ``MEMLOCK``...)."""
    evidence: tuple[Evidence, ...]
    how: str
    """Why slurmd reads this slurm.conf."""


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per item (nofile, memlock): soft and hard limit of a job step."""
    host = ctx.host
    if not installed(host):
        yield Result(Status.SKIP, "slurm", "Slurm is not installed (no slurm.conf in "
                     "/etc/slurm or /etc/slurm-llnl, no slurmd unit or package)")
        return
    try:
        prop = propagation(host)
    except HostError as exc:
        yield Result(Status.ERROR, "slurm", f"cannot read slurm.conf: {exc}")
        return
    if isinstance(prop, str):
        yield Result(Status.ERROR, "slurm", f"slurm.conf cannot be evaluated: {prop}")
        return
    daemon = daemon_limits(host, "slurmd", (UNIT,), "the running slurmd")
    shell = submit_shell(ctx)
    for n, item in enumerate(ITEM_KEYS):
        yield item_result(ctx, item, n, prop, daemon, shell)


def propagation(host: Host) -> Propagation | str:
    """slurm.conf's ``PropagateResourceLimits(Except)`` with their evidence, or why the
    file cannot be evaluated."""
    path, settings, problems = slurm_conf(host)
    prop = settings.get("propagateresourcelimits")
    exc_ = settings.get("propagateresourcelimitsexcept")
    names, bad = sp.propagated(prop.value if prop else None, exc_.value if exc_ else None)
    if problems or bad:
        return "; ".join([*problems, *([bad] if bad else [])])
    ev = [Evidence.file(s.file, s.line, f"{s.key}={s.value}") for s in (prop, exc_) if s]
    if not ev:
        ev = [Evidence.default("slurm.conf default PropagateResourceLimits", "ALL")]
    choice = running_conf_choice(host)
    return Propagation(path, names, (*ev, *choice.evidence), choice.how)


def item_result(ctx: CheckContext, item: str, n: int, prop: Propagation, daemon: Start,
                shell: Shell) -> Result:
    """The job's soft and hard ``item`` against the rule's minimum."""
    m = ctx.params.get(f"{item}_min")
    m = DEFAULT_MIN[item] if m is None else m
    want, want_txt = lp.rlimit_value(item, m), str(m)
    d_soft, d_hard = daemon.values[item]
    ev = [daemon.evidence[min(n, len(daemon.evidence) - 1)], *prop.evidence]
    propagated = item.upper() in prop.names
    if propagated:
        s_soft, s_ev, s_what = shell(item)
        soft = min(s_soft, d_hard)
        how = (f"soft = the submitting shell's soft limit ({s_what}: "
               f"{lp.fmt(s_soft, item)}) capped at slurmd's hard limit, because "
               f"{item.upper()} is propagated")
        ev.append(s_ev)
    else:
        soft = d_soft
        how = f"{item.upper()} is not propagated: soft = slurmd's soft limit"
    hard = d_hard
    exp = "unlimited" if want == lp.RLIM_INFINITY else f">= {lp.fmt(want, item)}"
    actual = f"soft {lp.fmt(soft, item)}, hard {lp.fmt(hard, item)}"
    msg = (f"a Slurm job gets {item} {actual} ({daemon.what}: "
           f"{lp.fmt(d_soft, item)}:{lp.fmt(d_hard, item)}; {how})")
    data = {"soft": lp.fmt(soft), "hard": lp.fmt(hard), "propagated": propagated,
            "slurm_conf": prop.path, "slurm_conf_reason": prop.how}
    if soft >= want and hard >= want:
        return Result(Status.PASS, f"slurm job {item}", msg, expected=exp, actual=actual,
                      aspect=Aspect.CONFIG, evidence=tuple(ev), data=data)
    lost = daemon.overridden.get(item, ())
    if lost:
        from aiaudit.linux.systemd import shadowed

        ev += shadowed.evidence(lost)
        data["overridden"] = shadowed.data(lost)
    return Result(Status.FAIL, f"slurm job {item}", f"{msg}; expected {exp}", expected=exp,
                  actual=actual, aspect=Aspect.CONFIG, evidence=tuple(ev), data=data,
                  remediation=_fix(item, want_txt, hard < want, propagated, prop.path,
                                   prop.names, _dropin(ctx.host, daemon)))


def _dropin(host: Host, daemon: Start) -> str:
    """The slurmd drop-in a fix writes: read after every drop-in slurmd has (by file
    name across /etc, /run, /usr/lib: the last ``Limit*=`` wins)."""
    from aiaudit.linux.systemd import shadowed

    dropins = daemon.dropins
    if daemon.unit is None:
        try:
            dropins = load_unit(host, UNIT).dropins
        except (HostError, ParseError):
            dropins = ()
    return shadowed.winning_dropin(UNIT, dropins, UNIT_DROPIN.rsplit("/", 1)[-1])


def _fix(item: str, want_txt: str, raise_hard: bool, propagated: bool, conf: str | None,
         names: set[str], dropin: str = UNIT_DROPIN) -> Remediation:
    key = ITEM_KEYS[item]
    systemd_val = "infinity" if want_txt == "unlimited" else (
        f"{want_txt}K" if item in lp.KIB_ITEMS else want_txt)
    snippets = []
    steps = []
    if raise_hard or not propagated:
        snippets.append(Snippet.file(dropin, f"[Service]\nLimit{key}={systemd_val}\n",
                                     f"slurmd starts with {item} {want_txt}"))
        snippets.append(Snippet.command("systemctl daemon-reload && systemctl restart slurmd",
                                        "restart slurmd with the new limit"))
        steps.append(f"raise slurmd's Limit{key} in {dropin} (read after every other "
                     "slurmd drop-in: the last assignment wins)")
    if propagated:
        keep = sorted(({"MEMLOCK"} | ({key} if key != "MEMLOCK" else set())) |
                      (set(sp.RLIMIT_NAMES) - names))
        steps.append(f"stop propagating the login shell's {item} with "
                     f"'PropagateResourceLimitsExcept={','.join(keep)}' in "
                     f"{conf or '/etc/slurm/slurm.conf'} (and remove PropagateResourceLimits), "
                     "then 'scontrol reconfigure'")
    return Remediation("To give jobs " + f"{item} {want_txt}: " + "; ".join(steps) + ".",
                       tuple(snippets))


def submit_shell(ctx: CheckContext) -> Shell:
    """Estimate of the submitting shell's soft limit: the training user's SSH session on
    this host (login nodes are usually configured alike; the user resolved as pam_limits
    does, through NSS live: a directory user of sssd/LDAP too), else systemd's default,
    saying why."""
    eff, why = _ssh_session(ctx)

    def get(item: str) -> tuple[int, Evidence, str]:
        if eff is not None:
            ev = eff.deciders[item][0] if eff.deciders else Evidence.default("ssh session")
            return eff.values[item][0], ev, f"{ctx.user}'s SSH session on this host"
        v = SYSTEMD_DEFAULTS[item][0]
        return v, Evidence.default(f"login shell soft {item} (systemd default; {why})",
                                   lp.fmt(v, item)), "systemd's default"

    return get


def _ssh_session(ctx: CheckContext) -> tuple[Effective | None, str]:
    """The training user's SSH session limits, or why there are none to use."""
    if not ctx.user:
        return None, "no training user given"
    from aiaudit.linux.pam_limits.session import effective  # only with a training user

    host = ctx.host
    try:
        acc = lookup_accounts(host)
        user = acc.db.user(ctx.user)
        if user is None:
            return None, unknown_user(host, acc, ctx.user).message
        eff = effective(host, acc, user, "sshd")
    except (HostError, ParseError) as exc:
        return None, f"the SSH session of {ctx.user} cannot be evaluated: {exc}"
    if eff.status != "ok":
        return None, f"the SSH session of {ctx.user}: {eff.message}"
    return eff, ""


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``slurm.job_limits``."""
    return [CheckSpec(
        id="slurm.job_limits", title="Slurm jobs get the nofile and memlock limits training needs",
        run=run, params_schema=PARAMS_SCHEMA,
        description=(
            "Jobs bypass PAM: slurmd's limits (running process live; its unit's Limit*= with "
            "drop-ins, systemd DefaultLimit*= otherwise), with the submitting shell's soft "
            "limit capped at slurmd's hard limit for limits PropagateResourceLimits(Except) "
            "propagates (default ALL)."))]
