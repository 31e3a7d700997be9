"""``slurm.job_limits``: the nofile/memlock limits a Slurm job step gets.

Jobs bypass PAM: slurmstepd starts with slurmd's limits (its unit's ``LimitNOFILE=`` /
``LimitMEMLOCK=`` with drop-ins, else systemd's ``DefaultLimit*=``), and with the default
``PropagateResourceLimits=ALL`` the submitting shell's *soft* limit becomes the job's soft
limit, capped at slurmd's hard limit (``src/slurmd/slurmstepd/ulimits.c``; Slurm FAQ "Why are
my resource limits not propagated?" / memlock).  Live, the running slurmd's
``/proc/<pid>/limits`` is the truth for slurmd's side.
"""

from __future__ import annotations

from typing import Any, Iterator

from aiaudit.checks import legacy_limits as lc

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
from aiaudit.linux.accounts.users import accounts
from aiaudit.linux.pam_limits import conf as lp
from aiaudit.linux.procs import proc_of
from aiaudit.linux.slurm import conf as sp
from aiaudit.linux.slurm import slurmd
from aiaudit.linux.slurm.slurmd import installed, slurm_conf

UNIT_DROPIN = "/etc/systemd/system/slurmd.service.d/zz-aiaudit-limits.conf"

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "nofile_min": {**lc.MIN_SCHEMA, "default": 65536},
        "memlock_min": {**lc.MIN_SCHEMA, "default": "unlimited",
                        "description": "KiB as in limits.conf, or 'unlimited'"},
    },
}


def conf_choice(host: Host) -> slurmd.ConfChoice:
    """The slurm.conf slurmd really reads (``-f``, ``SLURM_CONF``, the default path)."""
    return slurmd.conf_choice(host, proc_of(host, "slurmd") if host.live else None)






def slurmd_limits(host: Host) -> lc.Start:
    """slurmd's own limits: the running process live, else its unit."""
    if host.live:
        pid = proc_of(host, "slurmd")
        if pid:
            path = f"/proc/{pid}/limits"
            try:
                vals = lp.parse_proc_limits(host.read_text(path))
                if all(i in vals for i in lc.ITEM_KEYS):
                    return lc.Start(vals, (Evidence.runtime(path),), "the running slurmd")
            except (HostError, ParseError):
                pass
    return lc.unit_limits(host, ("slurmd.service",))


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per item (nofile, memlock): soft and hard limit of a job step."""
    host = ctx.host
    if not installed(host):
        yield Result(Status.SKIP, "slurm", "Slurm is not installed (no slurm.conf in "
                     "/etc/slurm or /etc/slurm-llnl, no slurmd unit or package)")
        return
    try:
        path, settings, problems = slurm_conf(host)
    except HostError as exc:
        yield Result(Status.ERROR, "slurm", f"cannot read slurm.conf: {exc}")
        return
    prop = settings.get("propagateresourcelimits")
    exc_ = settings.get("propagateresourcelimitsexcept")
    names, bad = sp.propagated(prop.value if prop else None, exc_.value if exc_ else None)
    if problems or bad:
        yield Result(Status.ERROR, "slurm", "slurm.conf cannot be evaluated: "
                     + "; ".join([*problems, *([bad] if bad else [])]))
        return
    prop_ev = [Evidence.file(s.file, s.line, f"{s.key}={s.value}") for s in (prop, exc_) if s]
    if not prop_ev:
        prop_ev = [Evidence.default("slurm.conf default PropagateResourceLimits", "ALL")]
    choice = conf_choice(host)
    prop_ev.extend(choice.evidence)
    daemon = slurmd_limits(host)
    shell = _submit_shell(ctx)
    for n, item in enumerate(lc.ITEM_KEYS):
        want, want_txt = lc.want_value(item, {"min": ctx.params.get(f"{item}_min")})
        d_soft, d_hard = daemon.values[item]
        d_ev = daemon.evidence[min(n, len(daemon.evidence) - 1)]
        ev = [d_ev, *prop_ev]
        if item.upper() in names:
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
        data = {"soft": lp.fmt(soft), "hard": lp.fmt(hard), "propagated": item.upper() in names,
                "slurm_conf": path, "slurm_conf_reason": choice.how}
        if soft >= want and hard >= want:
            yield Result(Status.PASS, f"slurm job {item}", msg, expected=exp, actual=actual,
                         aspect=Aspect.CONFIG, evidence=tuple(ev), data=data)
            continue
        yield Result(Status.FAIL, f"slurm job {item}", f"{msg}; expected {exp}", expected=exp,
                     actual=actual, aspect=Aspect.CONFIG, evidence=tuple(ev), data=data,
                     remediation=_fix(item, want_txt, hard < want, item.upper() in names,
                                      path, names))


def _fix(item: str, want_txt: str, raise_hard: bool, propagated: bool, conf: str | None,
         names: set[str]) -> Remediation:
    key = lc.ITEM_KEYS[item]
    systemd_val = "infinity" if want_txt == "unlimited" else (
        f"{want_txt}K" if item in lp.KIB_ITEMS else want_txt)
    snippets = []
    steps = []
    if raise_hard or not propagated:
        snippets.append(Snippet.file(UNIT_DROPIN, f"[Service]\nLimit{key}={systemd_val}\n",
                                     f"slurmd starts with {item} {want_txt}"))
        snippets.append(Snippet.command("systemctl daemon-reload && systemctl restart slurmd",
                                        "restart slurmd with the new limit"))
        steps.append(f"raise slurmd's Limit{key} in {UNIT_DROPIN}")
    if propagated:
        keep = sorted(({"MEMLOCK"} | ({key} if key != "MEMLOCK" else set())) |
                      (set(sp.RLIMIT_NAMES) - names))
        steps.append(f"stop propagating the login shell's {item} with "
                     f"'PropagateResourceLimitsExcept={','.join(keep)}' in "
                     f"{conf or '/etc/slurm/slurm.conf'} (and remove PropagateResourceLimits), "
                     "then 'scontrol reconfigure'")
    return Remediation("To give jobs " + f"{item} {want_txt}: " + "; ".join(steps) + ".",
                       tuple(snippets))


def _submit_shell(ctx: CheckContext):
    """Estimate of the submitting shell's soft limit: the training user's SSH session on
    this host (login nodes are usually configured alike), else systemd's default."""
    host = ctx.host
    eff = None
    if ctx.user:
        try:
            acc = accounts(host)
            user = acc.db.user(ctx.user)
            if user is not None:
                eff = lc.effective(host, acc, user, "sshd")
        except (HostError, ParseError):
            eff = None

    def get(item: str) -> tuple[int, Evidence, str]:
        if eff is not None and eff.status == "ok":
            ev = eff.deciders[item][0] if eff.deciders else Evidence.default("ssh session")
            return eff.values[item][0], ev, f"{ctx.user}'s SSH session on this host"
        v = lc.SYSTEMD_DEFAULTS[item][0]
        return v, Evidence.default(f"login shell soft {item} (systemd default; no training "
                                   "user given)", lp.fmt(v, item)), "systemd's default"

    return get


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
