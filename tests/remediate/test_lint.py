"""Bundles from the fixture set pass shellcheck (every severity) and ansible-lint (the
``production`` profile), and the playbook runs with ``--check --diff`` against a copy of
the scanned root (``-e aiaudit_root=COPY``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from aiaudit.core.model import Status
from aiaudit.remediate import bundle as remediate
from tests.remediate.test_bundle import _roots
from tests.reporters.scans import scan_root

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = BIN / name if (BIN / name).exists() else shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is required in CI")
        pytest.skip(f"{name} not installed")
    return str(path)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path, Path]]:
    """(name, scanned root, bundle) for every offline fixture root that fails a rule."""
    from tests.conftest import build_root

    base = tmp_path_factory.mktemp("lint")
    counter = iter(range(1000))

    def make_root(files={}, links={}, dirs=()):  # noqa: B006 - the conftest signature
        return build_root(base / f"root{next(counter)}", files, links, dirs)

    out = []
    for name, root in _roots(make_root):
        run = scan_root(root)
        if not any(f.status is Status.FAIL for f in run.findings):
            continue
        dest = base / f"{name}-bundle"
        remediate.write(run, str(dest))
        out.append((name, root, dest))
    assert len(out) >= 5
    return out


def test_shellcheck_all_severities(bundles) -> None:
    sc = _tool("shellcheck")
    p = subprocess.run([sc, "-s", "sh", "-S", "style",
                        *(str(b / "install.sh") for _n, _r, b in bundles)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout


def _shapes(bundle: Path) -> set[tuple[str, ...]]:
    """The kinds of task a playbook has: module and keys (what ansible-lint judges)."""
    doc = yaml.load((bundle / "playbook.yml").read_text(), Loader=remediate.playbook_loader())
    out = set()
    for t in doc[0]["tasks"]:
        module = next(k for k in t if k.startswith("ansible."))
        out.add((module, *sorted(t), *sorted(t[module])))
    return out


def covering(bundles: list[tuple[str, Path, Path]]) -> list[tuple[str, Path, Path]]:
    """Few bundles that together have every kind of task any bundle has (ansible-lint
    takes seconds per playbook on a busy machine)."""
    shapes = {b: _shapes(b[2]) for b in bundles}
    left = set().union(*shapes.values())
    chosen = []
    while left:
        best = max(bundles, key=lambda b: len(shapes[b] & left))
        chosen.append(best)
        left -= shapes[best]
    return chosen


def test_ansible_lint_production(bundles, tmp_path: Path) -> None:
    lint = _tool("ansible-lint")
    # one ansible-lint run over playbooks that cover every kind of task of the fixture set
    paths = [str(b / "playbook.yml") for _n, _r, b in covering(bundles)]
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "ANSIBLE_HOME": str(tmp_path),
           "ANSIBLE_LINT_SKIP_SCHEMA_UPDATE": "1", "NO_COLOR": "1"}
    p = subprocess.run([lint, "--offline", "--profile", "production", "--nocolor", *paths],
                       capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Error trying" not in p.stderr, p.stderr


def test_playbook_check_diff_against_a_copy_root(bundles, tmp_path: Path) -> None:
    play = _tool("ansible-playbook")
    # the bundle with the most kinds of tasks (copies, edits, units)
    for name, root, b in covering(bundles)[:1]:
        copy = tmp_path / name
        shutil.copytree(root, copy, symlinks=True)
        before = {str(p): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
        env = {**os.environ, "ANSIBLE_HOME": str(tmp_path / ".ansible"),
               "ANSIBLE_LOCALHOST_WARNING": "False", "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"}
        p = subprocess.run([play, "-i", "localhost,", "-c", "local", "--check", "--diff",
                            "-e", json.dumps({"aiaudit_root": str(copy),
                                              "ansible_become": False,
                                              "ansible_python_interpreter": sys.executable}),
                            str(b / "playbook.yml")],
                           capture_output=True, text=True, timeout=300, env=env)
        assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
        assert "failed=0" in p.stdout
        # check mode: the copy is untouched; the diff shows the files the bundle installs
        assert before == {str(q): q.read_bytes() for q in copy.rglob("*") if q.is_file()}
        for target in remediate.build(scan_root(root)).files:
            assert f"after: {b}/files{target}" in p.stdout or target in p.stdout, target


def test_playbook_does_what_install_sh_does(make_root, tmp_path: Path) -> None:
    """The playbook run for real with ``aiaudit_root=COPY`` leaves the same files (copies,
    in-place edits of fstab and an sshd_config without Include, enabled units) as
    ``ROOT=COPY NO_COMMANDS=1 sh install.sh``."""
    from tests.remediate.test_roundtrip import ROOTS

    play = _tool("ansible-playbook")
    root = make_root(ROOTS["sshd-no-include"])
    b = remediate.write(scan_root(root), str(tmp_path / "bundle"))
    assert b.edits and b.files and b.enable
    by_sh, by_play = tmp_path / "sh", tmp_path / "play"
    for d in (by_sh, by_play):
        shutil.copytree(root, d, symlinks=True)
    p = subprocess.run(["sh", str(tmp_path / "bundle/install.sh")], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "ROOT": str(by_sh),
                                                    "NO_COMMANDS": "1",
                                                    "BACKUP_DIR": str(tmp_path / "bk")})
    assert p.returncode == 0, p.stderr
    env = {**os.environ, "ANSIBLE_HOME": str(tmp_path / ".ansible"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCALHOST_WARNING": "False", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"}
    for _ in (1, 2):  # the second run changes nothing
        p = subprocess.run([play, "-i", "localhost,", "-c", "local",
                            "-e", json.dumps({"aiaudit_root": str(by_play),
                                              "ansible_become": False,
                                              "ansible_python_interpreter": sys.executable}),
                            str(tmp_path / "bundle/playbook.yml")],
                           capture_output=True, text=True, timeout=300, env=env)
        assert p.returncode == 0, p.stdout[-4000:]
    assert "changed=0" in p.stdout, p.stdout[-3000:]
    targets = [*b.files, *(path for path, _op in b.edits)]
    for t in targets:
        assert (by_play / t.lstrip("/")).read_text() == (by_sh / t.lstrip("/")).read_text(), t
    links = {str(q.relative_to(by_sh)) for q in by_sh.rglob("*.wants/*")}
    assert links and links == {str(q.relative_to(by_play)) for q in by_play.rglob("*.wants/*")}
