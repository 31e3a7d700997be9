"""Who opens /dev/kfd and the render nodes: udev's OWNER/GROUP/MODE semantics and the
permission classes.  Each case is one that ``udevadm test`` (udev 252) was seen to decide the
same way (see test_udev_oracle.py for the generated comparison)."""

from __future__ import annotations

import pytest

from aiaudit.linux.amdgpu import access
from aiaudit.linux.udev import rules as up

GIDS = {"render": 109, "video": 44, "root": 0}


def perms(text: str, dev: up.Device | None = None, **kw) -> access.NodePerms:
    rules, _ = up.parse(text, "/etc/udev/rules.d/70-x.rules")
    return access.node_perms(rules, dev or access.kfd_device(), gid_of=GIDS.get, **kw)


def test_debian_default_rule() -> None:
    p = perms('SUBSYSTEM=="kfd", GROUP="render", MODE="0660"\n')
    assert (p.group.value, p.mode_value) == ("render", 0o660)
    r = perms('SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="render", MODE="0660"\n',
              access.render_device("renderD128"))
    assert r.group.value == "render"
    assert perms('SUBSYSTEM=="drm", KERNEL!="renderD*", GROUP="video"\n',
                 access.render_device("renderD128")).group is None


def test_last_assignment_wins_and_final_sticks() -> None:
    p = perms('KERNEL=="kfd", GROUP="video", MODE="0600"\nKERNEL=="kfd", GROUP="render"\n')
    assert (p.group.value, p.mode_value) == ("render", 0o600)
    p = perms('KERNEL=="kfd", GROUP:="video", MODE:="0640"\n'
              'KERNEL=="kfd", GROUP="render", MODE="0666"\n')
    assert (p.group.value, p.mode_value) == ("video", 0o640)


def test_operators_as_udev_takes_them() -> None:
    # += is read as =; -= and == on GROUP make udev reject the whole line
    p = perms('KERNEL=="kfd", GROUP+="render", MODE="0660"\n')
    assert p.group.value == "render"
    p = perms('KERNEL=="kfd", GROUP-="video", MODE="0604"\n'
              'KERNEL=="kfd", GROUP=="video", MODE="0602"\n')
    assert p.group is None and p.mode is None and p.mode_value == 0o600


def test_mode_defaults() -> None:
    assert perms('KERNEL=="kfd", GROUP="render"\n').mode_value == 0o660
    assert perms('KERNEL=="kfd", GROUP="root"\n').mode_value == 0o600
    assert perms('KERNEL=="kfd", GROUP="nosuchgroup"\n').mode_value == 0o600
    assert perms("").mode_value == 0o600
    assert perms("", kernel_mode=0o666).mode_value == 0o666  # older kernels' kfd_devnode


def test_goto_skips_to_its_label() -> None:
    p = perms('KERNEL=="kfd", GOTO="end"\nKERNEL=="kfd", MODE="0644"\nLABEL="end"\n'
              'KERNEL=="kfd", GROUP="render"\n')
    assert (p.mode, p.mode_value) == (None, 0o660)


def test_undecidable_matches_and_substitutions_are_uncertain() -> None:
    p = perms('KERNEL=="kfd", ENV{ID_FOO}=="1", MODE="0666"\n')
    assert p.mode is None and p.uncertain and "ENV{ID_FOO}" in p.uncertain[0].why
    assert perms('KERNEL=="kfd", ENV{ID_FOO}=="1", MODE="0666"\n',
                 assume=True).mode_value == 0o666
    p = perms('KERNEL=="kfd", MODE="$env{KFD_MODE}"\n')
    assert p.uncertain and "substituted" in p.uncertain[0].why


@pytest.mark.parametrize(("mode", "owner", "group", "uid", "gids", "want"), [
    (0o660, 0, 109, 1001, {1001, 109}, (True, "group")),
    (0o660, 0, 109, 1001, {1001}, (False, "other")),
    (0o666, 0, 109, 1001, {1001}, (True, "other")),
    (0o600, 0, 109, 1001, {109}, (False, "group")),
    (0o600, 1001, 109, 1001, set(), (True, "owner")),
    (0o000, 0, 0, 0, set(), (True, "root")),
    (0o604, 0, None, 1001, {1001}, (False, "other")),
])
def test_can_open(mode, owner, group, uid, gids, want) -> None:
    assert access.can_open(mode, owner, group, uid, gids) == want


def test_unknown_keys_make_udev_reject_the_rule() -> None:
    # udev 252: "Invalid key 'DEVTYPE'" (it must be ENV{DEVTYPE})
    r = perms('DEVTYPE=="drm_minor", MODE="0666"\nENV{DEVTYPE}=="drm_minor", MODE="0604"\n',
              access.render_device("renderD128"))
    assert r.mode.value == "0604" and r.mode.rule.line == 2
