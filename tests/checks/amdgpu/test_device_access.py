"""``amdgpu.device_access``: the training user opens /dev/kfd and the render nodes."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.amdgpu.trees import amd_node
from tests.helpers import run_check


def test_member_of_render(make_root) -> None:
    got = run_check("amdgpu.device_access", make_root(*amd_node(2)), live=True, user="trainer")
    assert [r.subject for r in got] == ["/dev/kfd", "/dev/dri/renderD128..renderD129 (2 nodes)"]
    assert all(r.status is Status.PASS and "as group" in r.message for r in got)


def test_outside_render(make_root) -> None:
    got = run_check("amdgpu.device_access", make_root(*amd_node(1, render="")), live=True,
                    user="trainer")
    assert all(r.status is Status.FAIL for r in got)
    assert "not in group render" in got[0].message
    assert any(e.source == "usr/lib/udev/rules.d/50-udev-default.rules:2"
               for e in got[0].evidence)
    assert any(e.source.startswith("etc/group") for e in got[0].evidence)
    assert "usermod -a -G render,video trainer" in got[0].remediation.snippets[0].content


def test_amd_rule_opens_to_everyone_and_root(make_root) -> None:
    files, links = amd_node(1, render="")
    files["/etc/udev/rules.d/70-amdgpu.rules"] = 'KERNEL=="kfd", GROUP="render", MODE="0666"\n'
    got = run_check("amdgpu.device_access", make_root(files, links), live=True, user="trainer")
    assert got[0].status is Status.PASS and "as other" in got[0].message
    assert got[1].status is Status.FAIL  # the render nodes are still 0660
    got = run_check("amdgpu.device_access", make_root(files, links), live=True, user="root")
    assert all(r.status is Status.PASS for r in got)


def test_undecidable_rule_is_an_error(make_root) -> None:
    files, links = amd_node(1, render="")
    files["/etc/udev/rules.d/70-x.rules"] = 'KERNEL=="kfd", ENV{ID_X}=="1", MODE="0666"\n'
    got = run_check("amdgpu.device_access", make_root(files, links), live=True, user="trainer")
    assert got[0].status is Status.ERROR and "70-x.rules:1" in got[0].message


def test_no_kfd_and_no_user(make_root) -> None:
    files, links = amd_node(1, kfd=0)
    del files["/dev/kfd"], files["/sys/class/kfd/kfd/dev"]
    [r] = run_check("amdgpu.device_access", make_root(files, links), live=True, user="trainer")
    assert r.status is Status.FAIL and "no /dev/kfd" in r.message
    [r] = run_check("amdgpu.device_access", make_root(*amd_node(1)), live=True)
    assert r.status is Status.SKIP and "training user" in r.message
