"""The sysctl.d deciders against the real programs.

The oracle tests run systemd-sysctl and procps ``sysctl --system`` (see
:mod:`tests.linux.sysctl.sysctl_oracle`) on named SEMANTICS §3.5 cases and on a seeded random
corpus, and compare what they leave in a fake ``/proc/sys`` with ``systemd_decide`` /
``procps_decide`` (through the run's shared :class:`Resolved` index) on the same files read
through an offline :class:`Host`.  The decide functions are also tested on their own, and
procps' ``sysctl -p`` (what ufw-init runs) against the real program.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl.files import load_config
from aiaudit.linux.sysctl.resolved import Resolved
from tests.linux.sysctl import sysctl_oracle as so
from tests.linux.sysctl.sysctl_cases import NAMED, NAMED_EXPECT, R

ORACLE_CASES = int(os.environ.get("AIAUDIT_ORACLE_CASES", "300"))
"""Size of the generated corpus (each case runs both programs)."""


ORACLE_SEED = int(os.environ.get("AIAUDIT_ORACLE_SEED", "20261129"))


def _ours(root: Path) -> dict[str, dict[str, str | None]]:
    """What the check decides (through the run's shared :class:`Resolved` index)."""
    res = Resolved(load_config(Host(str(root), live=False)))
    return {
        "systemd": {k: res.systemd_decide(k).value for k in so.KEYS},
        "procps": {k: res.procps_decide(k).value for k in so.KEYS},
    }


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory):
    """Run both programs once on every named and generated case; return
    ``{case name: (case, case dir)}``."""
    why = so.available()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"sysctl oracle cannot run in CI: {why}")
        pytest.skip(f"sysctl oracle: {why}")
    work = tmp_path_factory.mktemp("sysctl-oracle")
    version = so.procps_version()
    cases = list(NAMED.values()) + so.generate(ORACLE_SEED, ORACLE_CASES)
    dirs = [so.materialise(c, work, version) for c in cases]
    so.run_all(dirs, work)
    return {c.name: (c, d) for c, d in zip(cases, dirs, strict=True)}


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(NAMED))
def test_named_case_matches_real_programs(oracle, name: str) -> None:
    case, d = oracle[NAMED[name].name]
    key, (want_systemd, want_procps) = NAMED_EXPECT[name]
    real = {prog: so.written(d, prog) for prog in so.PROGRAMS}
    ours = _ours(d / "root")
    # the documented expectation and the real programs agree ...
    assert (real["systemd"][key], real["procps"][key]) == (want_systemd, want_procps), \
        case.listing()
    # ... and so do we, on every key of the fake /proc/sys
    assert ours == real, case.listing()


@pytest.mark.oracle
def test_generated_corpus_matches_real_programs(oracle) -> None:
    problems = []
    for name, (case, d) in oracle.items():
        if not name.startswith("g"):
            continue
        ours = _ours(d / "root")
        for prog in so.PROGRAMS:
            real = so.written(d, prog)
            for key in so.KEYS:
                if ours[prog][key] != real[key]:
                    problems.append(f"{prog} {key}: ours {ours[prog][key]!r}, real "
                                    f"{real[key]!r}\n{case.listing()}\n"
                                    f"{(d / f'{prog}.log').read_text()}")
    assert not problems, f"{len(problems)} disagreements; first:\n" + "\n".join(problems[:3])


@pytest.mark.oracle
def test_corpus_exercises_the_edge_cases(oracle) -> None:
    """The generated corpus really contains what it claims to cover."""
    text = "\n".join(t for c, _ in oracle.values() for t in c.files.values())
    links = [t for c, _ in oracle.values() for t in c.links.values()]
    assert ORACLE_CASES >= 100 or os.environ.get("AIAUDIT_ORACLE_CASES")
    for needle in ("*", "-net", "eth0/100", "; ", "not an assignment", "  ", "\r\n",
                   "/net/ipv4", "[^a]"):
        assert needle in text, needle
    assert "/dev/null" in links and "../sysctl.conf" in links
    written = sum(v is not None for _, d in oracle.values()
                  for p in so.PROGRAMS for v in so.written(d, p).values())
    assert written > ORACLE_CASES  # the programs really wrote values


# ------------------------------------------------------------------ decide functions
def test_systemd_glob_does_not_cross_slash() -> None:
    entries, _ = sp.parse("net.*.rp_filter = 1\n", "/etc/sysctl.d/a.conf")
    assert sp.systemd_decide(entries, R).value is None
    entries, _ = sp.parse("net.*.*.*.rp_filter = 1\n", "/etc/sysctl.d/a.conf")
    assert sp.systemd_decide(entries, R).value == "1"


def test_systemd_overlapping_globs_later_in_map_wins() -> None:
    text = "net.ipv4.conf.*.rp_filter = 1\nnet.ipv4.conf.a*.rp_filter = 2\n" \
           "net.ipv4.conf.*.rp_filter = 3\n"
    entries, _ = sp.parse(text, "/etc/sysctl.d/a.conf")
    # the re-assigned glob moves to the end of the ordered map
    assert sp.systemd_decide(entries, R).value == "3"
    text = "net.ipv4.conf.*.rp_filter = 1\nnet.ipv4.conf.a*.rp_filter = 2\n" \
           "net.ipv4.conf.*.rp_filter = 1\n"
    entries, _ = sp.parse(text, "/etc/sysctl.d/a.conf")
    # same value: systemd keeps the first position
    assert sp.systemd_decide(entries, R).value == "2"


def test_procps_keeps_leading_slash_identity() -> None:
    entries = sp.parse_procps("/vm/swappiness = 1\nvm.* = 2\n", "/etc/sysctl.d/a.conf")
    assert sp.procps_decide(entries, "vm/swappiness").value == "2"
    entries = sp.parse_procps("vm.swappiness = 1\nvm.* = 2\n", "/etc/sysctl.d/a.conf")
    assert sp.procps_decide(entries, "vm/swappiness").value == "1"


def test_procps_glob_exclusion_depends_on_version() -> None:
    entries = sp.parse_procps("-net.ipv4.conf.a*.rp_filter\nnet.ipv4.conf.*.rp_filter = 2\n",
                              "/etc/sysctl.d/a.conf")
    assert sp.procps_decide(entries, R, glob_exclude=True).value is None
    assert sp.procps_decide(entries, R, glob_exclude=False).value == "2"
    assert sp.procps_decide(entries, R, globs=False).value is None


def test_ufw_sysctl_p_matches_real_procps(tmp_path: Path) -> None:
    """ufw-init runs `sysctl -e -q -p $IPT_SYSCTL`: the value procps_decide gives for the
    file is what the real sysctl writes (fake /proc/sys in a private mount namespace)."""
    reason = so.available()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    import subprocess

    text = ("vm/swappiness=30\nvm.dirty_ratio = 7\n-vm.dirty_background_ratio = 3\n"
            "net.ipv4.conf.*.rp_filter = 2\nnet.ipv4.conf.eth0.rp_filter = 0\n"
            "vm.swappiness = 31\n")
    conf = tmp_path / "sysctl.conf"
    conf.write_text(text)
    proc = tmp_path / "proc"
    for key in so.KEYS:
        (proc / key).parent.mkdir(parents=True, exist_ok=True)
        (proc / key).write_bytes(so.UNSET + b"\n")
    subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                    f"mount --bind {proc} /proc/sys && sysctl -e -q -p {conf}"],
                   check=False, capture_output=True, timeout=60)
    entries = sp.parse_procps(text, str(conf))
    for key in so.KEYS:
        first = (proc / key).read_bytes().split(b"\n", 1)[0]
        real = None if first == so.UNSET else first.decode()
        assert sp.procps_decide(entries, key).value == real, key
