"""``accounts.*``: the training user is least-privileged.

``accounts.privileged_groups``: the user is not in a group that is root in all but name
(``docker`` and ``lxd`` start privileged containers with the host's / mounted; ``disk``
reads and writes raw block devices).  Users and groups come from the scanned root's
``/etc/passwd`` and ``/etc/group`` (primary group and member lists, as getgrouplist).

``accounts.sudo_nopasswd``: sudo does not let the user run *any* command as root without a
password.  sudoers is read as sudo reads it (sudoers(5)): ``/etc/sudoers`` with
``@include``/``#include`` (relative paths from the including file's directory, ``%h`` is
the host name) and ``@includedir``/``#includedir`` (names without ``.`` and not ending in
``~``, in lexical order), at most 128 levels deep; aliases expanded; user, host, runas and
command lists matched with the last matching item deciding and ``!`` negating; and, for the
question "may an arbitrary command run", the last matching command specification in the
whole policy wins (sudo's ``sudoers_lookup`` walks the rules in reverse and stops at the
first match).  ``NOPASSWD`` or ``Defaults !authenticate`` applying to the user makes it
password-less.
"""

from __future__ import annotations

from typing import Callable, Iterator

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
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.records import record
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts import sudoers as sp
from aiaudit.linux.accounts.users import training_user

SUDOERS = "/etc/sudoers"
MAX_DEPTH = 128
"""sudo's include depth limit."""
ROOT_GROUPS = ("docker", "lxd", "disk")


# ------------------------------------------------------------------ groups
def run_groups(ctx: CheckContext) -> Iterator[Result]:
    """FAIL when the training user is in one of the root-equivalent groups."""
    user, acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None and acc is not None
    db = acc.db
    hits, ev = [], []
    for name in ctx.params["groups"]:
        g = db.group(name)
        if g is None:
            continue
        if user.gid == g.gid:
            hits.append(f"{name} (primary group)")
            ev.append(Evidence.file("/etc/passwd", user.line, f"{user.name}:...:{user.gid}"))
        elif user.name in g.members:
            hits.append(name)
            ev.append(Evidence.file("/etc/group", g.line,
                                    f"{g.name}:x:{g.gid}:{','.join(g.members)}"))
    remote = (f"; group membership may also come from {', '.join(acc.remote_group)} "
              "(nsswitch.conf), which files cannot show") if acc.remote_group else ""
    want = "none of " + ", ".join(ctx.params["groups"])
    if hits:
        yield Result(Status.FAIL, user.name, f"training user {user.name} is in "
                     f"{', '.join(hits)}: each is root-equivalent (a container with / mounted, "
                     f"or the raw disks){remote}", expected=want, actual=", ".join(hits),
                     evidence=tuple(ev), remediation=Remediation(
                         f"Remove {user.name} from these groups; give container access through "
                         "rootless Docker/Podman or Apptainer instead.",
                         tuple(Snippet.command(f"gpasswd -d {user.name} {h.split()[0]}",
                                               f"remove from {h.split()[0]}")
                               for h in hits if "primary" not in h)))
        return
    yield Result(Status.PASS, user.name, f"training user {user.name} is in none of "
                 f"{', '.join(ctx.params['groups'])}{remote}", expected=want, actual="none")


# ------------------------------------------------------------------ sudoers
@record
class Policy:
    """The sudoers entries in the order sudo reads them, with where each came from."""

    entries: tuple[tuple[str, sp.Entry], ...]
    files: tuple[str, ...]
    problems: tuple[str, ...]


def _hostname(host: Host) -> str | None:
    try:
        text = host.try_read_text("/etc/hostname")
    except HostError:
        return None
    return text.strip() or None if text else None


def load_policy(host: Host) -> Policy | None:
    """The policy, or ``None`` without ``/etc/sudoers``."""
    if not host.exists(SUDOERS):
        return None
    hostname = _hostname(host) or ""
    entries: list[tuple[str, sp.Entry]] = []
    files: list[str] = []
    problems: list[str] = []

    def read(path: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            problems.append(f"{path}: includes nested deeper than {MAX_DEPTH}")
            return
        try:
            text = host.read_text(path, cap=1024 * 1024)
            parsed = sp.parse(text, path)
        except HostError as exc:
            problems.append(f"{path}: {exc}")
            return
        except ParseError as exc:
            problems.append(f"{path}: {exc}" if path not in str(exc) else str(exc))
            return
        files.append(path)
        base = path.rsplit("/", 1)[0] or "/"
        for e in parsed:
            if isinstance(e, sp.Include):
                target = e.path.replace("%h", hostname.split(".")[0]) if "%h" in e.path \
                    else e.path
                if not target.startswith("/"):
                    target = f"{base}/{target}"
                if e.directory:
                    for n in sp.include_files(host.listdir(target)):
                        if host.is_file(f"{target}/{n}"):
                            read(f"{target}/{n}", depth + 1)
                elif host.exists(target):
                    read(target, depth + 1)
                else:
                    problems.append(f"{path}:{e.line}: included {target} does not exist")
                continue
            entries.append((path, e))

    read(SUDOERS, 0)
    return Policy(tuple(entries), tuple(files), tuple(problems))


def _matcher(aliases: dict[tuple[str, str], tuple[str, ...]], kind: str,
             atom: Callable[[str], bool | None]) -> Callable[[tuple[str, ...]], bool | None]:
    """A list matcher: the last item that matches decides (``!`` negates); ``None`` when
    nothing matches.  ``atom`` answers for a plain item (``None``: does not match)."""

    def match(items: tuple[str, ...], seen: frozenset[str] = frozenset()) -> bool | None:
        result: bool | None = None
        for raw in items:
            item, neg = raw, False
            while item.startswith("!"):
                item, neg = item[1:].lstrip(), not neg
            if item == "ALL":
                hit: bool | None = True
            elif (kind, item) in aliases and item not in seen:
                hit = match(aliases[(kind, item)], seen | {item})
            else:
                hit = atom(item)
            if hit is None:
                continue
            result = (not hit) if neg else hit
        return result

    return match


def sudo_any_command(policy: Policy, user: pw.Account, db: pw.Database,
                     hostname: str | None) -> tuple[str, sp.UserSpec | None, str | None, bool]:
    """What sudo decides for an arbitrary command run as root by ``user``:
    (``"nopasswd"``, ``"passwd"``, ``"denied"`` or ``"none"``, the deciding spec, its file,
    whether ``authenticate`` is off for the user)."""
    aliases: dict[tuple[str, str], tuple[str, ...]] = {}
    for _, e in policy.entries:
        if isinstance(e, sp.Alias):
            aliases[(e.kind, e.name)] = e.members
    gids = db.supplementary_gids(user)
    names = {g.name for g in db.groups if g.gid in gids}

    def user_atom(item: str) -> bool | None:
        if item.startswith("%#"):
            return (item[2:].isdigit() and int(item[2:]) in gids) or None
        if item.startswith(("%:", "%")):
            return item.lstrip("%:") in names or None
        if item.startswith("#"):
            return (item[1:].isdigit() and int(item[1:]) == user.uid) or None
        if item.startswith("+"):
            return None  # netgroups cannot be resolved from files
        return item == user.name or None

    def host_atom(item: str) -> bool | None:
        if hostname is None or not item[:1].isalpha():
            return True  # unknown name, IP or netgroup: assume it may match
        return item in (hostname, hostname.split(".")[0]) or None

    def runas_atom(item: str) -> bool | None:
        return item in ("root", "#0") or None

    def cmnd_atom(item: str) -> bool | None:
        return None  # a named command is not "any command"

    users = _matcher(aliases, "user", user_atom)
    hosts = _matcher(aliases, "host", host_atom)
    runas = _matcher(aliases, "runas", runas_atom)
    cmnds = _matcher(aliases, "cmnd", cmnd_atom)
    authenticate = True
    decision, spec_hit, file_hit = "none", None, None
    nopasswd = False
    for path, e in policy.entries:
        if isinstance(e, sp.Default):
            applies = e.binding in ("", "@") or (e.binding == ":" and users(e.targets))
            if applies:
                for s in e.settings:
                    if s == "!authenticate":
                        authenticate = False
                    elif s == "authenticate":
                        authenticate = True
            continue
        if not isinstance(e, sp.UserSpec) or not users(e.users):
            continue
        for c in e.cmnds:
            if not hosts(c.hosts):
                continue
            if c.runas_users is not None and not runas(c.runas_users):
                continue
            hit = cmnds((("!" if c.negated else "") + c.command,))
            if hit is None:
                continue
            decision, spec_hit, file_hit = ("denied" if not hit else "allowed"), e, path
            nopasswd = "NOPASSWD" in c.tags
    if decision == "allowed":
        decision = "nopasswd" if (nopasswd or not authenticate) else "passwd"
    return decision, spec_hit, file_hit, not authenticate


def run_sudo(ctx: CheckContext) -> Iterator[Result]:
    """FAIL when sudo lets the training user run any command as root without a password."""
    user, acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None and acc is not None
    host = ctx.host
    policy = host.memo(("sudoers-policy",), lambda: load_policy(host))
    if policy is None:
        yield Result(Status.PASS, user.name, "sudo is not configured (no etc/sudoers)",
                     expected="no NOPASSWD: ALL", actual="no sudoers")
        return
    if policy.problems:
        yield Result(Status.ERROR, user.name, "sudoers cannot be evaluated as sudo would: "
                     + "; ".join(policy.problems[:3]),
                     evidence=tuple(Evidence.file(f) for f in policy.files[:4]))
        return
    decision, spec, path, auth_off = sudo_any_command(policy, user, acc.db,
                                                     _hostname(host))
    ev = (Evidence.file(path, spec.line, spec.text),) if spec is not None and path else ()
    where = f" ({path.lstrip('/')}:{spec.line})" if spec is not None and path else ""
    if decision == "nopasswd":
        why = ("Defaults !authenticate applies" if auth_off else "NOPASSWD")
        yield Result(Status.FAIL, user.name, f"{user.name} may run any command as root without "
                     f"a password ({why}){where}: any code running as the training user "
                     "(a pickled checkpoint, a dependency) is root", expected="password "
                     "required or no ALL", actual="NOPASSWD: ALL", evidence=ev,
                     remediation=Remediation(
                         "Remove NOPASSWD (and !authenticate) from the rule granting ALL, or "
                         "limit the NOPASSWD rule to the few commands the user needs; edit "
                         "with visudo.", manual="edit the line named in the evidence with "
                         "`visudo -f FILE`"))
        return
    msgs = {"passwd": f"{user.name} may run any command as root only with a password{where}",
            "denied": f"the last rule matching {user.name} denies arbitrary commands{where}",
            "none": f"no sudoers rule lets {user.name} run arbitrary commands as root"}
    yield Result(Status.PASS, user.name, msgs[decision], expected="no NOPASSWD: ALL",
                 actual=decision, evidence=ev)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register the account checks."""
    return [
        CheckSpec(id="accounts.privileged_groups",
                  title="The training user is not in root-equivalent groups",
                  run=run_groups,
                  params_schema={"type": "object", "additionalProperties": False,
                                 "properties": {"groups": {
                                     "type": "array", "items": {"type": "string"},
                                     "default": list(ROOT_GROUPS)}}},
                  description="Primary group (/etc/passwd) and member lists (/etc/group) of "
                              "the training user against the listed groups."),
        CheckSpec(id="accounts.sudo_nopasswd",
                  title="sudo asks the training user for a password",
                  run=run_sudo,
                  params_schema={"type": "object", "additionalProperties": False},
                  description="sudoers with includes, aliases and Defaults, evaluated for an "
                              "arbitrary command run as root: last match wins; NOPASSWD or "
                              "!authenticate on that match fails."),
    ]
