"""kernel.sysctl with tuned (SEMANTICS §3.3/§3.4): tuned starts after systemd-sysctl and
writes its profile's [sysctl]; with reapply_sysctl (default on) it then re-applies the admin
files of /run/sysctl.d, /etc/sysctl.d and /etc/sysctl.conf, never /usr/lib or
/usr/local/lib; a disabled tuned.service changes nothing."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.helpers import run_check

SWAP = {"key": "vm.swappiness", "op": "le", "value": 10, "kernel_default": 60}
ENABLED = {"/etc/systemd/system/multi-user.target.wants/tuned.service":
           "/usr/lib/systemd/system/tuned.service"}


def _root(make_root, files: dict[str, str], enabled: bool = True):
    base = {
        "/usr/lib/systemd/system/tuned.service": "[Service]\nExecStart=/usr/sbin/tuned\n"
                                                 "[Install]\nWantedBy=multi-user.target\n",
        "/etc/tuned/active_profile": "ml\n",
        "/etc/tuned/ml/tuned.conf": "[main]\ninclude=base\n[sysctl]\nvm.dirty_ratio=10\n",
        "/usr/lib/tuned/base/tuned.conf": "[sysctl]\nvm.swappiness=60\n",
    }
    base.update(files)
    return make_root(base, links=ENABLED if enabled else {})


def _one(results):
    assert len(results) == 1
    return results[0]


def test_tuned_profile_overrides_vendor_sysctl(make_root) -> None:
    root = _root(make_root, {"/usr/lib/sysctl.d/50-vendor.conf": "vm.swappiness = 5\n"})
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert (r.status, r.aspect, r.actual) == (Status.FAIL, Aspect.PERSISTED, "60")
    assert any(e.source == "usr/lib/tuned/base/tuned.conf:2" for e in r.evidence)
    assert "tuned profile ml" in r.message
    assert r.remediation is not None and r.remediation.manual == ""  # the drop-in is reapplied


def test_admin_file_is_reapplied_after_the_profile(make_root) -> None:
    root = _root(make_root, {"/etc/sysctl.d/90-site.conf": "vm.swappiness = 5\n"})
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert (r.status, r.actual) == (Status.PASS, "5"), r.message
    assert "re-applies etc/sysctl.d/90-site.conf:1" in r.message


def test_reapply_off_lets_the_profile_win(make_root) -> None:
    root = _root(make_root, {"/etc/sysctl.d/90-site.conf": "vm.swappiness = 5\n",
                             "/etc/tuned/tuned-main.conf": "reapply_sysctl = 0\n"})
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert (r.status, r.actual) == (Status.FAIL, "60")
    assert "reapply_sysctl is off" in r.remediation.manual


def test_disabled_tuned_changes_nothing(make_root) -> None:
    root = _root(make_root, {"/etc/sysctl.d/90-site.conf": "vm.swappiness = 5\n"},
                 enabled=False)
    r = _one(run_check("kernel.sysctl", root, SWAP))
    assert (r.status, r.actual) == (Status.PASS, "5")
    assert "tuned" not in r.message


def test_live_runtime_right_but_tuned_reverts_it(make_root) -> None:
    root = _root(make_root, {"/proc/sys/vm/swappiness": "5\n",
                             "/etc/sysctl.d/10-site.conf": "vm.swappiness = 5\n",
                             "/etc/tuned/tuned-main.conf": "reapply_sysctl = 0\n"})
    r = _one(run_check("kernel.sysctl", root, SWAP, live=True))
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT), r.message
