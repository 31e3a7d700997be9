"""Overridden pam_limits lines: which lines lost a side, why, and where a fix wins.

The model's claims are checked against the real pam_limits.so (``tests/oracle``, Debian
build): a line the model names as overridden for a side can take any other value without
changing what the real module sets for that side, while the same edit of the winning line
does change it; and a line written where :func:`winning_dropin` says wins even when a site
file sorts after the usual ``zz-`` name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.accounts import users
from aiaudit.linux.pam_limits import conf as lp
from aiaudit.linux.pam_limits.conf import subject_for
from aiaudit.linux.pam_limits.files import PamBuild, limits_files
from aiaudit.linux.pam_limits.session import DROPIN
from aiaudit.linux.pam_limits.shadowed import data, evidence, lost, winning_dropin
from aiaudit.linux.pam_limits.start import FD_SETSIZE
from tests.linux.pam_limits.test_oracle import _ceiling, _preflight, _run_driver
from tests.oracle import pam_limits_corpus as corpus

ALICE = lp.Subject("alice", 1000, 1000, in_group=lambda g: g == "gpu",
                   in_gid=lambda g: g in (1000, 2000))


def _decide(*files: tuple[str, str], item: str = "nofile") -> lp.Decision:
    return lp.decide([(p, lp.parse(t, p)) for p, t in files], ALICE, {},
                     lp.Variant(debian_root=True, nr_open=None), items=(item,))


def test_same_rank_later_file_overrides() -> None:
    dec = _decide(("/etc/security/limits.conf", "alice hard nofile 4096\n"),
                  ("/etc/security/limits.d/90-site.conf", "alice hard nofile 2048\n"))
    assert dec.limits["nofile"][1].value == 2048
    [s] = lost(dec.shadowed, "nofile", "hard")
    assert (s.line.where, s.by.where) == ("etc/security/limits.conf:1",
                                          "etc/security/limits.d/90-site.conf:1")
    assert "also a user line and is read later: the last one read wins" in s.why
    [ev] = evidence([s])
    assert ev.source == "etc/security/limits.conf:1"
    assert ev.value.startswith("alice hard nofile 4096 (overridden: ")
    assert data([s])[0]["overridden_by"] == "etc/security/limits.d/90-site.conf:1"
    assert lost(dec.shadowed, "nofile", "soft") == []


def test_better_rank_read_first_wins_and_dash_line_loses_both_sides() -> None:
    dec = _decide(("/etc/security/limits.conf", "@gpu soft nofile 4096\n"),
                  ("/etc/security/limits.d/99-z.conf", "* - nofile 9000\n"))
    assert dec.limits["nofile"][0].value == 4096
    soft = lost(dec.shadowed, "nofile", "soft")
    hard = lost(dec.shadowed, "nofile", "hard")
    assert [s.line.where for s in soft] == ["etc/security/limits.d/99-z.conf:1"]
    assert "etc/security/limits.conf:1 is a group line, set first" in soft[0].why
    # '* -' returned when its soft side lost: its hard side was never set either
    assert [s.line.where for s in hard] == ["etc/security/limits.d/99-z.conf:1"]
    assert "sets no hard side either" in hard[0].why


def test_better_rank_read_later_overrides() -> None:
    dec = _decide(("/etc/security/limits.conf", "* hard nofile 9000\n"),
                  ("/etc/security/limits.d/10-a.conf", "alice hard nofile 3000\n"))
    [s] = lost(dec.shadowed, "nofile", "hard")
    assert s.line.raw == "* hard nofile 9000"
    assert "is a user line: it beats a '*' line" in s.why


def test_winning_dropin_sorts_after_site_files(make_root) -> None:
    root = make_root({"/etc/security/limits.d/zzz-site.conf": "alice hard nofile 1\n",
                      "/usr/lib/security/limits.d/zzzz-vendor.conf": ""})
    host = Host(str(root), live=False)
    # the vendor directory counts too (PAM >= 1.5.3 reads it, same basename order)
    assert winning_dropin(host, DROPIN) == \
        "/etc/security/limits.d/zzzzz-aiaudit-training.conf"
    empty = Host(str(make_root({"/etc/security/limits.conf": ""})), live=False)
    assert winning_dropin(empty, DROPIN) == DROPIN


# ------------------------------------------------------------------ the real module
N_CASES = 160
NEW_VALUE = {"nofile": "2222", "memlock": "333"}


def _model(case: dict[str, Any], base: Path) -> lp.Decision | None:
    host = Host(str(corpus._root(base, case)), live=False)
    acc = users.accounts(host)
    user = acc.db.user(case["user"])
    if user is None or case["args"]:
        return None
    files, _ = limits_files(host, PamBuild(True, "1.5.2-6", (1, 5, 2), "oracle"), None)
    sides = {}
    for item in ("nofile", "memlock"):
        s, h = (corpus._inf(x) for x in case["pid1"][item])
        sides[item] = (lp.Side(min(s, FD_SETSIZE) if item == "nofile" else s, lp.KERNEL),
                       lp.Side(h, lp.KERNEL))
    dec = lp.decide(files, subject_for(acc, user), sides, lp.Variant(debian_root=True))
    return dec if dec.status == "applied" else None


def _mutant(case: dict[str, Any], line: lp.Line, item: str) -> dict[str, Any] | None:
    """The case with ``line``'s value replaced (only plain one-chunk lines)."""
    key = line.file.removeprefix("/etc/security/")
    text = case["files"].get(key)
    if not isinstance(text, str):
        return None
    rows = text.split("\n")
    row = rows[line.line - 1]
    if len(row) > 200 or "#" in row:
        return None
    f = row.split()
    if len(f) != 4 or f[3].lower() == NEW_VALUE[item]:
        return None
    rows[line.line - 1] = " ".join([*f[:3], NEW_VALUE[item]])
    new = dict(case, files={**case["files"], key: "\n".join(rows)})
    return new


def _probes(cases: list[dict[str, Any]], tmp: Path) -> list[tuple[dict[str, Any], str, int,
                                                                   bool]]:
    """(mutant, item, side index, expect-unchanged) for every overridden line and, as the
    control, for the line that decides."""
    out = []
    for case in cases:
        dec = _model(case, tmp / f"m{case['id']}")
        if dec is None:
            continue
        for item in ("nofile", "memlock"):
            for idx, side in enumerate(("soft", "hard")):
                win = dec.limits[item][idx]
                if win.clamped:
                    continue
                for s in lost(dec.shadowed, item, side):
                    if s.line.raw == (win.line.raw if win.line else None):
                        continue
                    m = _mutant(case, s.line, item)
                    if m is not None:
                        out.append((m, item, idx, True))
                if win.line is not None and not dec.limits[item][1 - idx].clamped:
                    m = _mutant(case, win.line, item)
                    if m is not None:
                        out.append((m, item, idx, False))
    return out


@pytest.mark.oracle
def test_overridden_lines_do_not_matter_to_the_real_module(tmp_path: Path) -> None:
    _preflight()
    cases = corpus.generate(N_CASES, _ceiling(), seed=30)
    probes = _probes(cases, tmp_path)
    shadow = [p for p in probes if p[3]]
    assert len(shadow) >= 20, "the corpus must exercise overridden lines"
    by_id = {c["id"]: n for n, c in enumerate(cases)}
    real = _run_driver(cases + [{**m, "id": f"p{i}"} for i, (m, *_r) in enumerate(probes)])
    base, mutated = real[:len(cases)], real[len(cases):]
    wrong, moved = [], 0
    for (m, item, idx, unchanged), got in zip(probes, mutated, strict=True):
        before = base[by_id[m["id"]]]
        if got.get("open") != 0 or before.get("open") != 0:
            continue
        same = got[item][idx] == before[item][idx]
        if unchanged and not same:
            wrong.append(f"case {m['id']} {item}[{idx}]: {before[item]} -> {got[item]}\n"
                         f"  files={m['files']}")
        moved += (not unchanged and not same)
    assert not wrong, f"{len(wrong)} lines called overridden changed the outcome:\n" + \
        "\n".join(wrong[:5])
    print(f"{len(shadow)} overridden-line probes, {moved} control edits moved the value")
    assert moved >= 10, "the control (editing the deciding line) must change outcomes"


@pytest.mark.oracle
def test_fix_line_in_the_winning_dropin_wins(tmp_path: Path) -> None:
    """A site file sorting after ``zz-aiaudit-training.conf`` sets alice's hard nofile;
    the same user line in :func:`winning_dropin`'s file decides it in the real module (and
    in ``zz-aiaudit-training.conf`` it would not)."""
    _preflight()
    ceiling = _ceiling()
    site = {"limits.conf": "alice hard nofile 5000\n",
            "limits.d/zzz-site.conf": "alice hard nofile 3000\n"}
    base = {"passwd": corpus.PASSWD, "group": corpus.GROUP, "user": "alice", "args": "",
            "pid1": {"nofile": [1024, ceiling["nofile"]], "memlock": [65536,
                                                                    ceiling["memlock"]]},
            "child": {"nofile": [1000, ceiling["nofile"]], "memlock": [32768,
                                                                     ceiling["memlock"]]}}
    root = corpus._root(tmp_path / "w", {**base, "files": site})
    target = winning_dropin(Host(str(root), live=False), DROPIN)
    assert target != DROPIN
    fix = "alice hard nofile 4444\n"
    cases = [{**base, "id": 0, "files": {**site, "limits.d/" + Path(target).name: fix}},
             {**base, "id": 1, "files": {**site, "limits.d/" + Path(DROPIN).name: fix}}]
    wins, loses = _run_driver(cases)
    assert wins["nofile"][1] == 4444
    assert loses["nofile"][1] == 3000


def test_probe_generation_is_deterministic(tmp_path: Path) -> None:
    cases = corpus.generate(40, {"nofile": 1048576, "memlock": -1}, seed=30)
    a = _probes(cases, tmp_path / "a")
    b = _probes(cases, tmp_path / "b")
    assert [(p[0]["files"], p[1:]) for p in a] == [(p[0]["files"], p[1:]) for p in b]
    assert any(p[3] for p in a)  # overridden lines occur in the corpus
