"""Who can open ``/dev/kfd`` and the DRM render nodes, as the kernel creates them and udev
sets their owner, group and mode.

The kernel creates the nodes in devtmpfs owned by root:root with its devnode mode: 0600,
since neither amdkfd (drivers/gpu/drm/amd/amdkfd/kfd_chardev.c, which gave 0666 through
``kfd_devnode`` in older kernels) nor DRM (drivers/gpu/drm/drm_sysfs.c ``drm_devnode``,
``dri/renderD<N>``) sets one.  udev then applies its rules (udev(7); systemd
src/udev/udev-rules.c, udev-event.c ``update_devnode``; confirmed with ``udevadm test``
of udev 252): every matching ``OWNER``, ``GROUP``, ``MODE`` assignment overrides the
previous one, ``:=`` makes the value final (later assignments are ignored), ``+=`` is taken
as ``=`` (with a warning), ``-=`` or a match on these keys makes udev reject the whole rule;
a group name that does not exist leaves the group unset (root) while the rule's other
assignments still apply; with a group but no mode, the mode becomes 0660.  systemd's
50-udev-default.rules sets
``SUBSYSTEM=="kfd", GROUP="render", MODE="0660"`` and the same for ``KERNEL=="renderD*"``
(Debian and Ubuntu build with 0660; the build option ``group-render-mode`` may say 0666);
AMD's documentation suggests ``/etc/udev/rules.d/70-amdgpu.rules`` with mode 0666 to give
every user access.  A user opens a node read-write when it is root, the owner with rw
owner bits, in the node's group (primary or supplementary, ``getgrouplist``) with rw
group bits, or else when the "other" bits allow it.  ``TAG+="uaccess"`` ACLs are granted
by logind to the active local seat only, never to batch or ssh sessions, so they are not
counted.  Tested against the real ``udevadm test`` (tests/linux/amdgpu/test_udev_oracle.py).
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from aiaudit.core.startup.records import record
from aiaudit.linux.udev import rules as up

KEYS = ("OWNER", "GROUP", "MODE")
UDEV_KEYS = frozenset({
    "ACTION", "DEVPATH", "KERNEL", "SYMLINK", "NAME", "ENV", "CONST", "TAG", "SUBSYSTEM",
    "DRIVER", "ATTR", "SYSCTL", "KERNELS", "SUBSYSTEMS", "DRIVERS", "ATTRS", "TAGS", "TEST",
    "PROGRAM", "IMPORT", "RESULT", "OPTIONS", "OWNER", "GROUP", "MODE", "SECLABEL", "RUN",
    "GOTO", "LABEL"})
"""The keys udev knows (udev-rules.c ``parse_token``); a rule with any other key (a bare
``DEVTYPE``, which must be written ``ENV{DEVTYPE}``) is rejected whole: "Invalid key"."""


@record
class Assignment:
    """One OWNER/GROUP/MODE assignment that applies to the device."""

    key: str
    value: str
    rule: up.Rule
    final: bool
    """Made with ``:=``."""
    certain: bool
    """False when a match of the rule (or a GOTO before it) could not be decided."""
    why: str = ""


@record
class NodePerms:
    """The owner, group and mode udev gives a device node."""

    owner: Assignment | None
    group: Assignment | None
    mode: Assignment | None
    mode_value: int
    """The resulting permission bits."""
    mode_how: str
    """How the mode came about (a rule, 0660 for a group, the kernel's default)."""
    uncertain: tuple[Assignment, ...] = ()
    """Assignments that may apply (an undecidable match)."""


def _valid(rule: up.Rule) -> bool:
    """udev rejects a rule with a key it does not know ("Invalid key") or one that removes
    from or matches on OWNER, GROUP or MODE ("Invalid operator for GROUP")."""
    return not any(t.key not in UDEV_KEYS or (t.key in KEYS and t.op in ("-=", "==", "!="))
                   for t in rule.tokens)


class _Walk:
    """GOTO/LABEL within a file: a certain GOTO skips the rules up to its label; one whose
    match cannot be decided makes what follows (up to the label) uncertain."""

    def __init__(self) -> None:
        self.file = ""
        self.skip_to: str | None = None
        self.doubt_to: str | None = None
        self.doubt_why = ""

    def skipped(self, rule: up.Rule) -> bool:
        """Whether a certain GOTO skips ``rule`` (a label, or a new file, ends it)."""
        label = next((t.value for t in rule.tokens if t.key == "LABEL"), None)
        if rule.file != self.file:
            self.file, self.skip_to, self.doubt_to = rule.file, None, None
        if self.skip_to is not None:
            if label != self.skip_to:
                return True
            self.skip_to = None
        if self.doubt_to is not None and label == self.doubt_to:
            self.doubt_to = None
        return False

    def jump(self, goto: str, certain: bool, why: str) -> None:
        """The current rule jumps to ``goto`` (or may: ``certain`` false)."""
        if self.doubt_to is not None:
            return
        if certain:
            self.skip_to = goto
        else:
            self.doubt_to, self.doubt_why = goto, why


def _made(rule: up.Rule, certain: bool, reason: str) -> list[Assignment]:
    """The OWNER/GROUP/MODE assignments of a rule that applies (or may: ``certain``
    false); a value with a ``$``/``%`` substitution is known only at event time."""
    out: list[Assignment] = []
    for t in rule.tokens:
        if t.key not in KEYS or t.op not in ("=", ":=", "+="):
            continue
        subst = "$" in t.value or "%" in t.value
        sure = certain and not subst
        why = ("" if sure else f"cannot decide {reason}" if not certain
               else f"{t.key}=\"{t.value}\" is substituted at event time")
        out.append(Assignment(t.key, t.value, rule, t.op == ":=", sure, why))
    return out


def assignments(rules: Sequence[up.Rule], dev: up.Device) -> list[Assignment]:
    """Every OWNER/GROUP/MODE assignment udev would perform for ``dev``, in order."""
    out: list[Assignment] = []
    walk = _Walk()
    for rule in rules:
        if walk.skipped(rule) or not _valid(rule):
            continue
        sets = any(t.key in KEYS for t in rule.tokens)
        goto = next((t.value for t in rule.tokens if t.key == "GOTO" and not t.is_match),
                    None)
        if not sets and goto is None:
            continue
        ok, why = up.rule_matches(rule, dev)
        if ok is False:
            continue
        reason = ", ".join(str(t) for t in why) if why else walk.doubt_why
        out += _made(rule, ok is True and walk.doubt_to is None, reason)
        if goto is not None:
            walk.jump(goto, ok is True, reason)
    return out


def _effective(items: list[Assignment], key: str, assume: bool
               ) -> tuple[Assignment | None, list[Assignment]]:
    """(the value that sticks for ``key``, uncertain ones that could change it); with
    ``assume`` the uncertain assignments are taken to apply."""
    chosen: Assignment | None = None
    doubt: list[Assignment] = []
    for a in items:
        if a.key != key:
            continue
        if chosen is not None and chosen.final:
            break
        if a.certain or assume:
            chosen = a
            if a.certain:
                doubt = []
        if not a.certain:
            doubt.append(a)
    return chosen, doubt


def node_perms(rules: Sequence[up.Rule], dev: up.Device, kernel_mode: int | None = None,
               assume: bool = False, gid_of: Callable[[str], int | None] | None = None
               ) -> NodePerms:
    """What udev makes of ``dev``'s node: OWNER/GROUP/MODE, then the mode rules of
    ``update_devnode`` (a rule's mode, else the kernel's devnode mode, else 0660 with a
    group other than root, else the devtmpfs default 0600).  ``assume``: take assignments
    whose match cannot be decided as applying (the other possible outcome).  ``gid_of``
    resolves a group name (a name it does not know leaves the group unset)."""
    items = assignments(rules, dev)
    owner, d1 = _effective(items, "OWNER", assume)
    group, d2 = _effective(items, "GROUP", assume)
    mode, d3 = _effective(items, "MODE", assume)
    if mode is not None and re.fullmatch(r"0?[0-7]{3,4}", mode.value):
        bits = int(mode.value, 8) & 0o7777
        how = f"MODE={mode.value} ({mode.rule.file}:{mode.rule.line})"
    elif kernel_mode is not None:
        bits, how = kernel_mode, f"the kernel's devnode mode {kernel_mode:04o}"
    elif group is not None and _gid(group.value, gid_of) not in (None, 0):
        bits, how = 0o660, "0660: a group was set without a mode (udev update_devnode)"
    else:
        bits, how = 0o600, "0600: the devtmpfs default (no rule sets a mode)"
    return NodePerms(owner, group, mode, bits, how, tuple(d1 + d2 + d3))


def _gid(value: str, gid_of: Callable[[str], int | None] | None) -> int | None:
    if value.isdigit():
        return int(value)
    if gid_of is None:
        return None if value == "root" else 1
    return gid_of(value)


def kfd_device() -> up.Device:
    """``/dev/kfd`` as udev sees it at its ``add`` event."""
    return up.Device("kfd", subsystem="kfd", devtype="")


def render_device(name: str) -> up.Device:
    """``/dev/dri/renderD<N>`` (a DRM minor) at its ``add`` event."""
    return up.Device(name, subsystem="drm", devtype="drm_minor")


def can_open(mode: int, owner_uid: int | None, group_gid: int | None, uid: int,
             gids: set[int]) -> tuple[bool, str]:
    """Whether a process of ``uid`` with groups ``gids`` opens a node read-write, and which
    permission class decided (``root``, ``owner``, ``group``, ``other``)."""
    if uid == 0:
        return True, "root"
    if owner_uid is not None and uid == owner_uid:
        return mode & 0o600 == 0o600, "owner"
    if group_gid is not None and group_gid in gids:
        return mode & 0o060 == 0o060, "group"
    return mode & 0o006 == 0o006, "other"
