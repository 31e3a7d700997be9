"""Host lists: folding, expansion, and Slurm's own reading of what we write."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiaudit.fleet.hostlist import MAX_EXPAND, HostlistError, expand, fold


@pytest.mark.parametrize(("names", "folded"), [
    ([], ""),
    (["login"], "login"),
    (["gpu001"], "gpu001"),
    ([f"gpu{i:03d}" for i in range(1, 33)] + ["gpu040"], "gpu[001-032,040]"),
    (["gpu8", "gpu9", "gpu10", "gpu12"], "gpu[8-10,12]"),
    (["gpu08", "gpu09", "gpu10", "gpu12"], "gpu[08-10,12]"),
    (["gpu1", "gpu01"], "gpu[1,01]"),
    (["node1-ib", "node2-ib", "cpu3", "cpu1", "cpu2", "cpu2"], "cpu[1-3],node1-ib,node2-ib"),
    (["a1b2", "a1b3"], "a1b[2-3]"),
])
def test_fold(names: list[str], folded: str) -> None:
    assert fold(names) == folded
    assert sorted(expand(folded)) == sorted(set(names))


@pytest.mark.parametrize("bad", ["gpu[1-", "gpu]1", "gpu[[1]]", "gpu[3-1]", "gpu[a-b]",
                                 "gpu[1-2]x[3]", f"n[0-{MAX_EXPAND}]"])
def test_expand_refuses(bad: str) -> None:
    with pytest.raises(HostlistError):
        expand(bad)


def test_fold_refuses_names_a_list_cannot_hold() -> None:
    with pytest.raises(HostlistError):
        fold(["gpu[1]"])
    with pytest.raises(HostlistError):
        fold(["a,b"])


_name = st.from_regex(r"[a-z]{1,4}[0-9]{0,4}(-[a-z]{1,3}[0-9]{0,2})?", fullmatch=True)


@given(st.lists(_name, max_size=60))
def test_fold_then_expand_is_identity(names: list[str]) -> None:
    folded = fold(names)
    back = expand(folded)
    assert sorted(back) == sorted(set(names))
    assert len(back) == len(set(back))
    assert fold(back) == folded


def _scontrol() -> str | None:
    path = shutil.which("scontrol")
    if path is None and os.environ.get("CI") == "true":
        pytest.fail("scontrol (slurm-wlm) must be installed in CI")
    return path


@pytest.fixture(scope="module")
def slurm_conf(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A minimal slurm.conf: scontrol wants one even to expand a host list locally."""
    path = tmp_path_factory.mktemp("slurm") / "slurm.conf"
    path.write_text("ClusterName=t\nSlurmctldHost=localhost\nNodeName=localhost\n")
    return str(path)


@pytest.mark.oracle
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(_name, min_size=1, max_size=30))
def test_slurm_reads_our_lists(names: list[str], slurm_conf: str) -> None:
    """Slurm's hostlist parser (``scontrol show hostnames``, no daemon needed) expands
    every list we write to the same names."""
    scontrol = _scontrol()
    if scontrol is None:
        pytest.skip("scontrol not installed (Debian slurm-client)")
    out = subprocess.run([scontrol, "show", "hostnames", fold(names)], capture_output=True,
                         text=True, timeout=20, check=True,
                         env={**os.environ, "SLURM_CONF": slurm_conf}).stdout.split()
    assert sorted(out) == sorted(set(names))
