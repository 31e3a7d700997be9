"""The sysctl.d files of a root, found and parsed once per run
(:mod:`aiaudit.linux.sysctl.files`)."""

from __future__ import annotations

import os

from aiaudit.core.host import Host
from aiaudit.linux.sysctl.files import load_config, loaded


def test_loaded_once_per_run(make_root) -> None:
    host = Host(str(make_root({"/etc/sysctl.d/10.conf": "vm.swappiness = 5\n"})), live=False)
    assert loaded(host) is loaded(host)
    assert loaded(host) == load_config(host)


def test_both_programs_read_a_file_once(make_root) -> None:
    """systemd-sysctl, procps and tuned's re-apply read mostly the same files: each is read
    through the Host once."""
    root = make_root({"/etc/sysctl.d/10.conf": "vm.swappiness = 5\n",
                      "/usr/lib/sysctl.d/50.conf": "vm.dirty_ratio = 5\n",
                      "/etc/sysctl.conf": "vm.swappiness = 7\n"})
    host = Host(str(root), live=False)
    cfg = load_config(host)
    assert [e.key for e in cfg.entries] == ["vm/swappiness", "vm/dirty_ratio"]
    assert [e.value for e in cfg.procps_entries] == ["5", "5", "7"]
    assert [e.file for e in cfg.tuned_reapply_entries] == ["/etc/sysctl.d/10.conf",
                                                           "/etc/sysctl.conf"]
    assert host.reads == 3


def test_masked_and_dangling_files_are_notes_not_problems(make_root) -> None:
    root = make_root({"/usr/lib/sysctl.d/50-v.conf": "vm.swappiness = 60\n"},
                     links={"/etc/sysctl.d/50-v.conf": "/dev/null",
                            "/etc/sysctl.d/60-gone.conf": "/nowhere.conf"})
    cfg = load_config(Host(str(root), live=False))
    assert not cfg.problems and cfg.entries == ()
    assert any("masked" in n for n in cfg.notes)
    assert any("60-gone.conf: dangling symlink" in n for n in cfg.notes)
    assert os.path.islink(root / "etc/sysctl.d/60-gone.conf")


def test_unreadable_file_is_a_problem_with_its_evidence(make_root) -> None:
    root = make_root({"/etc/sysctl.d/10.conf": b"vm.swappiness = 5\n\x00"})
    cfg = load_config(Host(str(root), live=False))
    assert len(cfg.problems) == 1 and "binary content" in cfg.problems[0]
    [ev] = cfg.problem_evidence
    assert ev.path == "/etc/sysctl.d/10.conf" and "binary content" in (ev.value or "")
