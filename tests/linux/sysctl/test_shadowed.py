"""Overridden sysctl lines (issue 30): which lines a persisted value overrode and why,
checked against the real systemd-sysctl and procps ``sysctl --system``
(:mod:`tests.linux.sysctl.sysctl_oracle`): a line named as overridden for a key can take
another value without changing what the real program writes to that key, while the same
edit of the deciding line does change it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl import shadowed
from aiaudit.linux.sysctl.files import load_config
from aiaudit.linux.sysctl.resolved import Resolved
from tests.linux.sysctl import sysctl_oracle as so

NEW = "7771"
"""A value no generated line has."""
N_CASES = 150
APPLIER = {"systemd": "systemd-sysctl", "procps": "procps"}


def _root(tmp: Path, files: dict[str, str]) -> Host:
    for path, text in files.items():
        p = tmp / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return Host(str(tmp), live=False)


def test_site_file_loses_to_vendor_file_by_name(tmp_path: Path) -> None:
    res = Resolved(load_config(_root(tmp_path, {
        "/etc/sysctl.d/10-fix.conf": "vm.swappiness = 5\n",
        "/usr/lib/sysctl.d/50-vendor.conf": "vm.swappiness = 60\n"})))
    dec = res.systemd_decide("vm/swappiness")
    assert dec.value == "60"
    [(e, why)] = shadowed.overridden(dec, "systemd-sysctl")
    assert e.file == "/etc/sysctl.d/10-fix.conf"
    assert why == ("'vm.swappiness = 60' at usr/lib/sysctl.d/50-vendor.conf:1 is read later "
                   "(10-fix.conf sorts before 50-vendor.conf): systemd-sysctl reads the .conf "
                   "files of /etc, /run, /usr/local/lib and /usr/lib sysctl.d sorted by file "
                   "name across the directories, and the last assignment wins")
    [ev] = shadowed.evidence([(e, why)])
    assert ev.source == "etc/sysctl.d/10-fix.conf:1"
    assert ev.value.startswith("vm.swappiness = 5 (overridden: ")
    assert shadowed.data([(e, why)])[0]["value"] == "5"


def test_vendor_file_hidden_by_same_name_in_etc(tmp_path: Path) -> None:
    host = _root(tmp_path, {"/etc/sysctl.d/50-vendor.conf": "vm.swappiness = 60\n",
                            "/usr/lib/sysctl.d/50-vendor.conf": "vm.swappiness = 5\n"
                                                                "vm.dirty_ratio = 5\n"})
    res = Resolved(load_config(host))
    dec = res.systemd_decide("vm/swappiness")
    assert dec.value == "60" and shadowed.overridden(dec, "systemd-sysctl") == []
    [(e, why)] = shadowed.hidden(host, res.cfg.dirs, dec, "systemd-sysctl")
    assert (e.file, e.line) == ("/usr/lib/sysctl.d/50-vendor.conf", 1)
    assert why.startswith("etc/sysctl.d/50-vendor.conf has the same name and replaces this "
                          "whole file")


def test_same_file_glob_and_same_value(tmp_path: Path) -> None:
    res = Resolved(load_config(_root(tmp_path, {
        "/etc/sysctl.d/10-a.conf": "net.ipv4.conf.all.rp_filter = 2\n"
                                   "net.ipv4.conf.all.rp_filter = 1\n",
        "/etc/sysctl.d/20-b.conf": "net.ipv4.conf.*.rp_filter = 0\n",
        "/etc/sysctl.d/30-c.conf": "net.ipv4.conf.all.rp_filter = 1\n"})))
    dec = res.systemd_decide("net/ipv4/conf/all/rp_filter")
    lost = shadowed.overridden(dec, "systemd-sysctl")
    whys = {e.line: why for e, why in lost}
    assert "comes later in the same file" in whys[1]
    # the glob is skipped for a key a line names; a line with the winning value changed
    # nothing and is not listed
    assert all(e.value != "1" for e, _ in lost)


def test_failing_result_names_overridden_lines(tmp_path: Path) -> None:
    from tests.helpers import run_check

    root = tmp_path / "r"
    _root(root, {"/etc/sysctl.d/10-fix.conf": "vm.swappiness = 5\n",
                 "/usr/lib/sysctl.d/50-vendor.conf": "vm.swappiness = 60\n"})
    [r] = run_check("kernel.sysctl", root, {"key": "vm.swappiness", "op": "le", "value": 10})
    assert str(r.status) == "fail"
    over = [e for e in r.evidence if e.source == "etc/sysctl.d/10-fix.conf:1"]
    assert over and "(overridden: " in (over[0].value or "")
    assert r.data["overridden"][0]["source"] == "etc/sysctl.d/10-fix.conf:1"
    # the fix writes where it wins: a drop-in sorting after 50-vendor.conf
    [snip] = [s for s in r.remediation.snippets if s.path]
    assert snip.path.rpartition("/")[2].encode() > b"50-vendor.conf"
    [ok] = run_check("kernel.sysctl", root, {"key": "vm.swappiness", "op": "le",
                                             "value": 60})
    assert "overridden" not in (ok.data or {})


# ------------------------------------------------------------------ the real programs
def _mutant(case: so.Case, e: sp.Entry, name: str) -> so.Case | None:
    text = case.files.get(e.file)
    if text is None or "\r" in text:
        return None
    rows = text.split("\n")
    left, eq, _ = rows[e.line - 1].partition("=")
    if not eq:
        return None
    rows[e.line - 1] = f"{left}= {NEW}"
    return so.Case(name, {**case.files, e.file: "\n".join(rows)}, dict(case.links),
                   list(case.dirs))


def _probes(cases: list[so.Case], work: Path) -> list[tuple[so.Case, str, str, str, bool]]:
    """(mutant, original case name, program, key, expect unchanged)."""
    out = []
    for case in cases:
        root = work / "model" / case.name
        for path, text in case.files.items():
            p = root / path.lstrip("/")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        if case.links:
            continue
        host = Host(str(root), live=False)
        res = Resolved(load_config(host))
        for prog in so.PROGRAMS:
            for key in so.KEYS:
                dec = res.systemd_decide(key) if prog == "systemd" else res.procps_decide(key)
                values = [e.value for e in res.systemd_entries(key)]
                lost = [e for e, _ in shadowed.overridden(dec, APPLIER[prog])
                        if values.count(e.value) == 1]
                dirs = res.cfg.dirs if prog == "systemd" else res.cfg.procps_dirs
                lost += [e for e, _ in shadowed.hidden(host, dirs, dec, APPLIER[prog])]
                for e in lost[:2]:
                    m = _mutant(case, e, f"{case.name}-s{len(out)}")
                    if m is not None:
                        out.append((m, case.name, prog, key, True))
                if dec.entry is not None and lost:
                    m = _mutant(case, dec.entry, f"{case.name}-w{len(out)}")
                    if m is not None:
                        out.append((m, case.name, prog, key, False))
    return out


@pytest.mark.oracle
def test_overridden_lines_do_not_matter_to_the_real_programs(tmp_path: Path) -> None:
    why = so.available()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"sysctl oracle cannot run in CI: {why}")
        pytest.skip(f"sysctl oracle: {why}")
    cases = so.generate(30, N_CASES)
    probes = _probes(cases, tmp_path)
    assert sum(p[4] for p in probes) >= 30, "the corpus must exercise overridden lines"
    version = so.procps_version()
    originals = {c.name: so.materialise(c, tmp_path / "o", version) for c in cases}
    mutants = [so.materialise(m, tmp_path / "m", version) for m, *_ in probes]
    so.run_all([*originals.values(), *mutants], tmp_path)
    wrong, moved = [], 0
    for (m, orig, prog, key, unchanged), d in zip(probes, mutants, strict=True):
        before = so.written(originals[orig], prog)[key]
        after = so.written(d, prog)[key]
        if unchanged and before != after:
            wrong.append(f"{prog} {key}: {before} -> {after}\n{m.listing()}")
        moved += (not unchanged and before != after)
    assert not wrong, f"{len(wrong)} lines called overridden changed the value:\n" + \
        "\n".join(wrong[:3])
    print(f"{sum(p[4] for p in probes)} overridden-line probes, {moved} control edits moved")
    assert moved >= 10, "the control (editing the deciding line) must change values"
