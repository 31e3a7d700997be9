"""The run's shared sysctl index (:mod:`aiaudit.linux.sysctl.resolved`) and the drop-in
name (:mod:`aiaudit.linux.sysctl.dropin`): the same decisions as the oracle-tested deciders
run on every entry, built once per run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl.dropin import dropin_path
from aiaudit.linux.sysctl.files import load_config, loaded
from aiaudit.linux.sysctl.resolved import Resolved, resolved
from tests.linux.sysctl import sysctl_oracle as so
from tests.linux.sysctl.sysctl_cases import NAMED

EXTRA_KEYS = ("net/ipv4/conf/lo/rp_filter", "net/../vm/swappiness", "vm/../vm/dirty_ratio",
              "kernel/unset_anywhere")
"""Keys beyond the fake /proc/sys: one no line sets, and non-normal ones (``..``) for
which procps compares unnormalised paths (the index then falls back to every entry)."""


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_shared_index_decides_as_the_deciders_on_all_entries(tmp_path: Path, seed: int) -> None:
    """The per-run index gives the very same Decision (value, deciding line, exclusion,
    overridden lines) as the oracle-tested deciders run on every entry, and the same
    drop-in name: on the generated corpus, without the real programs."""
    cases = list(NAMED.values()) + so.generate(seed * 7919, 60)
    for case in cases:
        root = so.materialise(case, tmp_path / str(seed), "2:4.0.2-3") / "root"
        cfg = load_config(Host(str(root), live=False))
        res = Resolved(cfg)
        for k in (*so.KEYS, *EXTRA_KEYS):
            assert res.systemd_decide(k) == sp.systemd_decide(cfg.entries, k), case.listing()
            for globs, gx in ((True, True), (True, False), (False, False)):
                r = Resolved(replace(cfg, procps_globs=globs, procps_glob_exclude=gx))
                assert r.procps_decide(k) == sp.procps_decide(
                    cfg.procps_entries, k, globs=globs, glob_exclude=gx), case.listing()
            assert dropin_path(res, k) == dropin_path(cfg, k)
            assert res.tuned_reapplied(k) == [
                e for e in cfg.tuned_reapply_entries
                if not e.is_glob and e.key == k and e.value is not None]


def test_shared_index_is_built_once_per_run(make_root) -> None:
    root = make_root({"/etc/sysctl.d/10.conf": "vm.swappiness = 5\n"})
    host = Host(str(root), live=False)
    assert resolved(host) is resolved(host)
    assert resolved(host).cfg is loaded(host)
