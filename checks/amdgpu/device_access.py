"""``amdgpu.device_access``: ``/dev/kfd`` exists and the training user can open it and the
GPUs' render nodes read-write.

Every ROCm program opens ``/dev/kfd`` (the compute interface) and the render node
``/dev/dri/renderD<N>`` of each GPU it uses; without them HIP reports no GPU.  Gathers the
kernel's and udev's view of both nodes (:mod:`aiaudit.linux.amdgpu.access`: the rules of the
scanned root, in udev's order, ``:=`` finality and GOTO included), the training user and its
groups (:mod:`aiaudit.linux.accounts.users`), live the KFD device
(``/sys/class/kfd/kfd``), the node ``/dev/kfd`` and the render nodes of the AMD GPUs; on the
real ``/`` the nodes' real owner, group and mode decide (``stat``).  Decides: a user who is
neither root, nor the owner, nor in the node's group with rw group bits, nor covered by rw
"other" bits fails (AMD: add the user to ``render`` and ``video``, or a udev rule with
0666).  A udev match that cannot be decided here and would change the outcome is an error
naming the rule.
"""

from __future__ import annotations

import stat as st
from typing import TYPE_CHECKING, Iterator

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
from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.linux.amdgpu import presence

if TYPE_CHECKING:  # imported once the AMD rules apply (prolog start-up cost)
    from aiaudit.linux.accounts import passwd as pw
    from aiaudit.linux.accounts.users import Accounts
    from aiaudit.linux.amdgpu.access import Assignment, NodePerms
    from aiaudit.linux.udev import rules as up


def _fix(user: str, group: str | None) -> Remediation:
    grp = group or "render"
    return Remediation(
        f"Add {user} to the group that owns the node ({grp}; AMD's ROCm guide also names "
        "video), then log in again (a running Slurm or ssh session keeps its old groups); "
        "or grant every user access with a udev rule (AMD's 70-amdgpu.rules: "
        "KERNEL==\"kfd\", GROUP=\"render\", MODE=\"0666\").",
        (Snippet.command(f"usermod -a -G {grp},video {user}", f"add {user} to {grp} and video"),))


def _gid(acc: Accounts, value: str) -> int | None:
    if value.isdigit():
        return int(value)
    g = acc.db.group(value)
    return g.gid if g else None


def _uid(acc: Accounts, value: str) -> int | None:
    if value.isdigit():
        return int(value)
    u = acc.db.user(value)
    return u.uid if u else None


def _outcome(perms: NodePerms, acc: Accounts, user: pw.Account, gids: set[int]
             ) -> tuple[bool, str, int | None]:
    """(opens rw, the class that decided, the node's gid)."""
    from aiaudit.linux.amdgpu import access

    gid = _gid(acc, perms.group.value) if perms.group else 0
    uid = _uid(acc, perms.owner.value) if perms.owner else 0
    ok, cls = access.can_open(perms.mode_value, uid, gid, user.uid, gids)
    return ok, cls, gid


def _rule_ev(a: Assignment | None) -> tuple[Evidence, ...]:
    return (Evidence.file(a.rule.file, a.rule.line, a.rule.raw[:200]),) if a else ()


def _udev_view(host: Host, node: str, dev: up.Device, acc: Accounts, user: pw.Account,
               gids: set[int]) -> Result:
    """The node as the kernel and udev rules make it."""
    from aiaudit.linux.accounts.users import group_evidence, user_evidence
    from aiaudit.linux.amdgpu import access
    from aiaudit.linux.udev import files as udev_files

    rules = udev_files.load(host)

    def gid_of(name: str) -> int | None:
        return _gid(acc, name)

    perms = access.node_perms(rules.rules, dev, gid_of=gid_of)
    ok, cls, gid = _outcome(perms, acc, user, gids)
    if perms.uncertain:
        alt = access.node_perms(rules.rules, dev, assume=True, gid_of=gid_of)
        if _outcome(alt, acc, user, gids)[0] != ok:
            a = perms.uncertain[0]
            return Result(Status.ERROR, node, f"{a.rule.file}:{a.rule.line} may set "
                          f"{a.key}={a.value} ({a.why}), which decides whether {user.name} "
                          "can open it", evidence=_rule_ev(a))
    group = perms.group.value if perms.group else "root"
    ev = [*_rule_ev(perms.group), *_rule_ev(perms.mode), user_evidence(host, acc, user)]
    g = acc.db.group(group) if not group.isdigit() else acc.db.group_by_gid(int(group))
    if g is not None:
        ev.append(group_evidence(host, acc, g))
    if not perms.group and not perms.mode:
        ev.append(Evidence.default(f"udev rules for {node}: " + ", ".join(
            d.lstrip("/") for d in udev_files.RULES_DIRS), "none sets its group or mode"))
    actual = f"{perms.mode_value:04o} root:{group}"
    return _verdict(node, ok, cls, actual, perms.mode_how, group, user, ev, gid is None)


def _verdict(node: str, ok: bool, cls: str, actual: str, how: str, group: str,
             user: pw.Account, ev: list[Evidence], unknown_group: bool) -> Result:
    exp = f"{user.name} can open {node} read-write"
    ev = list(dict.fromkeys(ev))
    if ok:
        return Result(Status.PASS, node, f"{user.name} opens {node} ({actual}, {how}) as "
                      f"{cls}", expected=exp, actual=actual, evidence=tuple(ev))
    extra = f"; group {group} does not exist" if unknown_group else ""
    why = {"group": f"in group {group}, but the mode gives the group no read-write",
           "owner": "its owner, but the mode gives the owner no read-write"}.get(
        cls, f"not in group {group} and the node is not open to others")
    return Result(Status.FAIL, node, f"{user.name} cannot open {node} ({actual}, {how}): "
                  f"{why}{extra}; ROCm finds no GPU", expected=exp, actual=actual,
                  evidence=tuple(ev),
                  remediation=_fix(user.name, None if group.isdigit() else group))


def _real_node(host: Host, node: str, acc: Accounts, user: pw.Account, gids: set[int]
               ) -> Result | None:
    """On the real ``/`` live: the node's real owner, group and mode decide."""
    from aiaudit.linux.accounts.users import group_evidence, user_evidence
    from aiaudit.linux.amdgpu import access

    try:
        s = host.stat(node)
    except HostError:
        return None
    mode = st.S_IMODE(s.st_mode)
    ok, cls = access.can_open(mode, s.st_uid, s.st_gid, user.uid, gids)
    g = acc.db.group_by_gid(s.st_gid)
    name = g.name if g else str(s.st_gid)
    ev = [Evidence.runtime(node, f"{mode:04o} uid {s.st_uid} gid {s.st_gid} ({name})"),
          user_evidence(host, acc, user)]
    if g is not None:
        ev.append(group_evidence(host, acc, g))
    r = _verdict(node, ok, cls, f"{mode:04o} {s.st_uid}:{name}", "stat of the node", name,
                 user, ev, False)
    return Result(r.status, r.subject, r.message, r.expected, r.actual, Aspect.RUNTIME,
                  r.evidence, r.remediation)


def _judge(host: Host, node: str, dev: up.Device, acc: Accounts, user: pw.Account,
           gids: set[int]) -> Result:
    """One node: its real mode on the live ``/``, else as the kernel and udev make it."""
    real = _real_node(host, node, acc, user, gids) if host.is_real_root and host.live \
        else None
    return real or _udev_view(host, node, dev, acc, user, gids)


def _render_nodes(host: Host) -> list[str]:
    """The render nodes ROCm opens: live those of the KFD topology's GPU nodes (every
    compute partition has its own) and of the AMD GPUs' PCI functions; offline one
    (``renderD128``: the rules name nodes by pattern)."""
    if not host.live:
        return ["renderD128"]
    from aiaudit.linux.amdgpu.devices import kfd_topology

    names = {f"renderD{n.drm_render_minor}" for n in kfd_topology(host).gpus
             if n.drm_render_minor}
    names |= {n for g in presence.node(host).gpus for n in g.drm if n.startswith("renderD")}
    return sorted(names, key=lambda n: (len(n), n))


def _grouped(results: list[Result]) -> list[Result]:
    """Render nodes with the same outcome as one result (``/dev/dri/renderD128..190,
    63 nodes``): a CPX node has 64 of them, all decided by the same rules."""
    if len(results) < 2 or len({(r.status, r.actual) for r in results}) != 1:
        return results
    first, last = results[0], results[-1]
    subject = f"{first.subject}..{last.subject.rsplit('/', 1)[-1]} ({len(results)} nodes)"
    msg = first.message.replace(first.subject, f"the {len(results)} render nodes")
    return [Result(first.status, subject, msg, first.expected, first.actual, first.aspect,
                   first.evidence, first.remediation, first.data)]


def run(ctx: CheckContext) -> Iterator[Result]:
    """The training user opens /dev/kfd and the render nodes."""
    host = ctx.host
    blocked = presence.gate(host, ctx.params, "/dev/kfd")
    if blocked:
        yield blocked
        return
    if host.live and not host.exists("/sys/class/kfd/kfd") and not host.exists("/dev/kfd"):
        yield Result(Status.FAIL, "/dev/kfd", "no /dev/kfd (and no /sys/class/kfd/kfd): the "
                     "amdgpu driver did not bring up KFD, so ROCm has no GPU",
                     expected="present", actual="absent", aspect=Aspect.RUNTIME,
                     evidence=(Evidence.runtime("/sys/class/kfd/kfd", "absent"),),
                     remediation=Remediation("Check `dmesg` for amdgpu/amdkfd errors "
                                             "(firmware, IOMMU) and load amdgpu."))
        return
    from aiaudit.linux.accounts.users import training_user
    from aiaudit.linux.amdgpu import access

    user, acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None and acc is not None
    try:
        gids = acc.db.supplementary_gids(user)
    except HostError as exc:
        yield Result(Status.ERROR, user.name, f"could not look up the groups of {user.name}: "
                     f"{exc}")
        return
    yield _judge(host, "/dev/kfd", access.kfd_device(), acc, user, gids)
    yield from _grouped([_judge(host, f"/dev/dri/{n}", access.render_device(n), acc, user,
                                gids) for n in _render_nodes(host)])


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``amdgpu.device_access``."""
    return [CheckSpec(
        id="amdgpu.device_access",
        title="The training user can open /dev/kfd and the AMD render nodes",
        run=run, params_schema=presence.schema({}),
        description="/dev/kfd and /dev/dri/renderD* as the kernel creates them and the "
                    "root's udev rules set owner, group and mode (the real nodes' stat on "
                    "the live /), against the training user and its groups.")]
