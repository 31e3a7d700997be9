"""Remediation: every failure of every shipped rule carries a fix, and ``aiaudit
remediate`` bundles really fix what they address.

The round-trip test scans a failing root, writes the bundle from the saved JSON report,
runs the bundle's own ``install.sh`` with ``ROOT=<copy of the root>``, rescans the copy
offline and requires every persisted finding the bundle addresses to pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from aiaudit.core import plugins
from aiaudit.core.model import Aspect, Remediation, Result, Snippet, Status
from aiaudit.core.serialize import run_dict, run_from_dict
from aiaudit.remediate import bundle as remediate
from tests.helpers import ROOTS, cli
from tests.reporters.samples import SYSCTL_DROPIN, mixed_run
from tests.reporters.scans import scan_root

SHIPPED = sorted(plugins.registry().rulesets)
CASES = sorted(p.parent for p in ROOTS.glob("*/expected.yaml"))

# Roots built here: nothing configured (kernel defaults), and values set wrong in every
# place systemd-sysctl reads, including an existing drop-in of our name (backed up).
BAD = "\n".join(["vm.swappiness = 60", "vm.max_map_count = 65530", "vm.dirty_ratio = 60",
                 "net.core.rmem_max = 4096", "kernel.numa_balancing = 1",
                 "fs.protected_symlinks = 0", "kernel.dmesg_restrict = 0"]) + "\n"
MADE = {
    "empty": {"/etc/hostname": "bare\n"},
    "bad-everywhere": {
        "/usr/lib/sysctl.d/50-vendor.conf": BAD,
        "/etc/sysctl.d/30-site.conf": "vm.swappiness=90\nnet.ipv4.tcp_fin_timeout = 120\n",
        "/etc/sysctl.conf": BAD,
        "/etc/sysctl.d/99-sysctl.conf": BAD,
        SYSCTL_DROPIN: "# an old aiaudit fix\nvm.swappiness = 70\n",
    },
}

_INSTALL = re.compile(r"(apt-get|dnf|yum|zypper)\b.* install ")
"""A command that installs a package (what a bundle run under ROOT= cannot do)."""


def _fails(run):
    return [f for f in run.findings if f.status is Status.FAIL]


def _check_remediation(run) -> list[str]:
    problems = []
    for f in _fails(run):
        rem = f.result.remediation
        where = f"{f.rule_id}[{f.result.subject}]"
        if rem is None or not rem.summary.strip():
            problems.append(f"{where}: failing without remediation summary")
            continue
        for s in rem.snippets:
            if not s.content.strip():
                problems.append(f"{where}: empty {s.kind} snippet")
        # every snippet is one the bundle accepts (kind, path, unit, edit, apply target)
        problems += remediate.build(replace(run, findings=(f,))).rejected
    return problems


@pytest.mark.parametrize("ruleset_ref", SHIPPED)
def test_every_failure_carries_remediation(ruleset_ref: str, make_root) -> None:
    """Meta-test over every shipped ruleset: fixture roots (in their mode), roots built
    here, and this host live."""
    runs = []
    for case in CASES:
        exp = yaml.safe_load((case / "expected.yaml").read_text())
        runs.append(scan_root(case / "root", live=exp.get("mode") == "live",
                              ruleset_ref=ruleset_ref, reraise=False, user=exp.get("user")))
    for files in MADE.values():
        runs.append(scan_root(make_root(files), ruleset_ref=ruleset_ref, reraise=False))
    runs.append(scan_root("/", live=True, ruleset_ref=ruleset_ref, reraise=False))
    problems = [p for run in runs for p in _check_remediation(run)]
    assert sum(len(_fails(r)) for r in runs) > 0, "no failure to look at"
    assert not problems, "\n".join(problems)


def _roots(make_root) -> list[tuple[str, Path]]:
    out = []
    for case in CASES:
        exp = yaml.safe_load((case / "expected.yaml").read_text())
        if exp.get("mode", "offline") == "offline":
            out.append((case.name, case / "root"))
    out += [(name, make_root(files)) for name, files in MADE.items()]
    return out


def _sh(script: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env}, check=False)


def test_bundle_fixes_what_it_addresses(make_root, tmp_path: Path) -> None:
    checked = 0
    for name, root in _roots(make_root):
        run = scan_root(root)
        if not _fails(run):
            continue
        report = tmp_path / f"{name}.json"
        report.write_text(json.dumps(run_dict(run)))
        bundle = tmp_path / f"{name}-bundle"
        r = cli("remediate", str(report), "--output-dir", str(bundle))
        assert r.code == 0, r.err
        b = remediate.build(run)
        assert b.fixed, f"{name}: nothing fixed"
        copy = tmp_path / f"{name}-copy"
        shutil.copytree(root, copy, symlinks=True)
        before = {p for p in copy.rglob("*")}
        p = _sh(bundle / "install.sh", ROOT=str(copy))
        assert p.returncode == 0, p.stderr
        for target in b.files:
            assert (copy / target.lstrip("/")).read_text() == b.files[target]
        created = {p for p in copy.rglob("*")} - before
        allowed = {copy / t.lstrip("/") for t in b.files}
        # `systemctl --root enable` writes the units' [Install] symlinks, and only those
        wants = {q for q in created if q.is_symlink() and q.parent.name.endswith(".wants")
                 and q.name in b.enable}
        allowed |= wants | {q.parent for q in wants}
        allowed |= {q for a in allowed for q in a.parents}
        assert created <= allowed, f"{name}: install.sh created {created - allowed}"
        again = _sh(bundle / "install.sh", ROOT=str(copy))
        assert again.returncode == 0 and "0 file(s) installed" in again.stdout, again.stdout
        after = scan_root(copy)
        status = {(f.rule_id, f.result.subject): f.status for f in after.findings}
        for f in b.fixed:
            rem = f.result.remediation
            by_files = rem is not None and any(s.kind == "file" for s in rem.snippets)
            # a fix made only of commands (systemctl enable, apt-get install) is not applied
            # under ROOT=: only file drop-ins are expected to change the offline rescan, and
            # not those that also need a package installed (its commands run on the host)
            installs = rem is not None and any(
                s.kind == "command" and _INSTALL.match(s.content) for s in rem.snippets)
            if f.result.aspect is Aspect.PERSISTED and by_files and not rem.manual \
                    and not installs:
                key = (f.rule_id, f.result.subject)
                assert status.get(key) is Status.PASS, f"{name}: {key} still {status.get(key)}"
                checked += 1
    assert checked >= 5


def test_install_backs_up_replaced_files(make_root, tmp_path: Path) -> None:
    root = make_root(MADE["bad-everywhere"])
    run = scan_root(root)
    bundle = tmp_path / "bundle"
    remediate.write(run, str(bundle))
    backups = tmp_path / "backups"
    p = _sh(bundle / "install.sh", ROOT=str(root), BACKUP_DIR=str(backups))
    assert p.returncode == 0, p.stderr
    saved = backups / SYSCTL_DROPIN.lstrip("/")
    assert saved.read_text() == MADE["bad-everywhere"][SYSCTL_DROPIN]
    assert "backed up" in p.stdout
    assert (root / SYSCTL_DROPIN.lstrip("/")).stat().st_mode & 0o777 == 0o644


def _command_run(tmp_path: Path):
    marker = tmp_path / "marker"
    run = mixed_run()
    f = run.findings[1]
    rem = Remediation("Touch the marker.", (
        Snippet.command(f"echo ran >> '{marker}'"), Snippet.command(f"echo ran >> '{marker}'")))
    return replace(run, findings=(replace(f, result=replace(f.result, remediation=rem)),)), \
        marker


def test_commands_run_once_and_can_be_skipped(tmp_path: Path) -> None:
    """A bundle with only commands (no files) is safe to run for real here."""
    run, marker = _command_run(tmp_path)
    bundle = tmp_path / "bundle"
    b = remediate.write(run, str(bundle))
    assert b.files == {} and len(b.commands) == 1  # repeated command dropped
    p = _sh(bundle / "install.sh", NO_COMMANDS="1")
    assert p.returncode == 0 and not marker.exists()
    p = _sh(bundle / "install.sh", ROOT=str(tmp_path / "img"))
    assert p.returncode == 0 and not marker.exists()
    p = _sh(bundle / "install.sh")
    assert p.returncode == 0, p.stderr
    assert marker.read_text() == "ran\n"


def test_snippets_for_one_path_are_merged() -> None:
    run = mixed_run()
    f = run.findings[1]
    dup = replace(f, result=replace(f.result, subject="other", remediation=Remediation(
        "two lines", (Snippet.file(SYSCTL_DROPIN, "vm.max_map_count = 262144\n\n"
                                                  "vm.swappiness = 10\n"),))))
    b = remediate.build(replace(run, findings=(*run.findings, dup)))
    assert b.files[SYSCTL_DROPIN] == "vm.max_map_count = 262144\n\nvm.swappiness = 10\n"
    # the waived failure is not fixed, pass/skip/error are not touched
    assert {x.rule_id for x in b.fixed} == {"SYSCTL-VM-MAX-MAP-COUNT", "BLOCK-NVME-SCHEDULER"}
    assert "sysctl -w vm.max_map_count='262144'" in b.commands


def test_a_file_is_installed_with_its_mode(make_root, tmp_path: Path) -> None:
    """A file snippet's mode travels through the saved report into install.sh, the
    playbook, the README and the bundle's own copy; the same content with another mode on
    the host is installed again; set-id bits are refused."""
    private = "/etc/aiaudit/private.conf"
    run = mixed_run()
    f = run.findings[1]
    rem = Remediation("Keep it private.", (
        Snippet.file(private, "secret = 1\n", mode=0o600),
        Snippet.file("/etc/aiaudit/setuid", "x\n", mode=0o4755)))
    run = replace(run, findings=(replace(f, result=replace(f.result, remediation=rem)),))
    run = run_from_dict(json.loads(json.dumps(run_dict(run))))  # through a saved report
    out = tmp_path / "bundle"
    b = remediate.write(run, str(out))
    assert b.files == {private: "secret = 1\n"} and b.modes == {private: 0o600}
    assert len(b.rejected) == 1 and "file mode 0o4755 of '/etc/aiaudit/setuid'" in b.rejected[0]
    assert (out / "files" / private.lstrip("/")).stat().st_mode & 0o777 == 0o600
    assert f"install_file {private} 0600\n" in (out / "install.sh").read_text()
    assert f"  {private} (mode 0600)\n" in (out / "README.txt").read_text()
    play = yaml.load((out / "playbook.yml").read_text(), Loader=remediate.playbook_loader())
    (copy,) = [t["ansible.builtin.copy"] for t in play[0]["tasks"]
               if "ansible.builtin.copy" in t]
    assert copy["mode"] == "0600"
    root = make_root({"/etc/hostname": "x\n"})
    target = root / private.lstrip("/")
    for i, (before, said) in enumerate([(None, "installed"), (None, "unchanged"),
                                        (0o644, "installed")]):
        if before is not None:
            target.chmod(before)
        p = _sh(out / "install.sh", ROOT=str(root), BACKUP_DIR=str(tmp_path / f"b{i}"))
        assert p.returncode == 0, p.stderr
        assert f"{said}: {target}" in p.stdout, p.stdout
        assert target.stat().st_mode & 0o777 == 0o600


def test_unsafe_target_paths_are_refused(tmp_path: Path) -> None:
    run = mixed_run()
    f = run.findings[1]
    evil = replace(f, result=replace(f.result, remediation=Remediation("evil", (
        Snippet.file("/etc/../../escape", "x\n"), Snippet.file("relative/x", "y\n")))))
    out = tmp_path / "bundle"
    b = remediate.write(replace(run, findings=(evil,)), str(out))
    assert b.files == {} and len(b.rejected) == 2
    assert not (tmp_path / "escape").exists()
    assert "Refused snippets" in (out / "README.txt").read_text()
    assert [f.rule_id for f in b.manual] == ["SYSCTL-VM-MAX-MAP-COUNT"]


def test_bundle_layout_readme_and_playbook(tmp_path: Path) -> None:
    run = mixed_run()
    out = tmp_path / "bundle"
    b = remediate.write(run, str(out))
    assert (out / "files" / SYSCTL_DROPIN.lstrip("/")).read_text() == \
        "vm.max_map_count = 262144\n"
    assert os.access(out / "install.sh", os.X_OK)
    readme = (out / "README.txt").read_text()
    for f in b.fixed:
        assert f.rule_id in readme
    assert "SYSCTL-KERNEL-NUMA-BALANCING" not in readme  # waived
    play = yaml.load((out / "playbook.yml").read_text(), Loader=remediate.playbook_loader())
    tasks = play[0]["tasks"]
    copies = [t for t in tasks if "ansible.builtin.copy" in t]
    shells = [t["ansible.builtin.command"]["argv"] for t in tasks
              if "ansible.builtin.command" in t]
    assert {c["vars"]["aiaudit_path"] for c in copies} == set(b.files)
    for t in copies:
        c = t["ansible.builtin.copy"]
        assert c["backup"] is True and c["mode"] == "0644"
        assert c["dest"] == "{{ (aiaudit_root | regex_replace('/$', '')) ~ aiaudit_path }}"
        src = c["src"].replace("{{ playbook_dir }}", str(out)).replace(
            "{{ aiaudit_path }}", t["vars"]["aiaudit_path"])
        assert Path(src).read_text() == b.files[t["vars"]["aiaudit_path"]]
    assert shells == [["/bin/sh", "-c", c] for c in b.commands]
    assert play[0]["become"] is True and play[0]["hosts"] == "all"
    assert play[0]["vars"] == {"aiaudit_root": "/", "aiaudit_firewall_rollback": 120}


def test_install_script_passes_shellcheck(tmp_path: Path) -> None:
    if shutil.which("shellcheck") is None:
        if os.environ.get("CI"):
            pytest.fail("shellcheck is required in CI")
        pytest.skip("shellcheck not installed")
    run = mixed_run()
    f = run.findings[1]
    odd = replace(f, result=replace(f.result, subject="x", remediation=Remediation("odd", (
        Snippet.file("/etc/it's here/$HOME `x`.conf", "a\n"),))))
    for name, r in (("mixed", run), ("odd", replace(run, findings=(*run.findings, odd))),
                    ("empty", replace(run, findings=()))):
        out = tmp_path / name
        remediate.write(r, str(out))
        p = subprocess.run(["shellcheck", "-s", "sh", "-S", "style",
                            str(out / "install.sh")], capture_output=True, text=True,
                           check=False)
        assert p.returncode == 0, f"{name}:\n{p.stdout}"


def test_odd_target_path_installs_literally(make_root, tmp_path: Path) -> None:
    run = mixed_run()
    f = run.findings[1]
    path = "/etc/it's here/$HOME `x`.conf"
    odd = replace(f, result=Result(Status.FAIL, "x", "m", remediation=Remediation("odd", (
        Snippet.file(path, "a\n"),))))
    out = tmp_path / "bundle"
    remediate.write(replace(run, findings=(odd,)), str(out))
    root = make_root({})
    p = _sh(out / "install.sh", ROOT=str(root))
    assert p.returncode == 0, p.stderr
    assert (root / path.lstrip("/")).read_text() == "a\n"


def test_cli_remediate_errors(tmp_path: Path) -> None:
    report = tmp_path / "scan.json"
    report.write_text(json.dumps(run_dict(mixed_run())))
    out = tmp_path / "bundle"
    out.mkdir()
    (out / "keep").write_text("x")
    r = cli("remediate", str(report), "--output-dir", str(out))
    assert r.code == 2 and "not empty" in r.err
    r = cli("remediate", str(report), "--output-dir", str(out), "--force")
    assert r.code == 0 and "2 failure(s) addressed" in r.out, r.err
    r = cli("remediate", str(report), "--output-dir", str(tmp_path / "hi"),
            "--min-severity", "high")
    assert r.code == 0 and "1 failure(s) addressed" in r.out
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = cli("remediate", str(bad), "--output-dir", str(tmp_path / "b2"))
    assert r.code == 2 and r.err.count("\n") == 1
    assert not (tmp_path / "b2").exists()
    r = cli("remediate", str(report))
    assert r.code == 2  # --output-dir is required


def test_bundle_beats_a_later_sorting_dropin(make_root, tmp_path: Path) -> None:
    root = make_root({"/etc/sysctl.d/99-zzz-late.conf": "vm.swappiness = 90\n"})
    run = scan_root(root, only=("SYSCTL-VM-SWAPPINESS",))
    assert [f.status for f in run.findings] == [Status.FAIL]
    remediate.write(run, str(tmp_path / "bundle"))
    assert _sh(tmp_path / "bundle" / "install.sh", ROOT=str(root)).returncode == 0
    after = scan_root(root, only=("SYSCTL-VM-SWAPPINESS",))
    assert [f.status for f in after.findings] == [Status.PASS]


def test_install_under_root_refuses_symlinks_out_of_it(make_root, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = make_root({"/etc/hostname": "img\n"}, links={"/etc/sysctl.d": str(outside)})
    run = scan_root(root)
    assert remediate.build(run).files, "the empty image fails sysctl rules"
    remediate.write(run, str(tmp_path / "bundle"))
    p = _sh(tmp_path / "bundle" / "install.sh", ROOT=str(root))
    assert p.returncode != 0 and "outside ROOT" in p.stderr
    assert list(outside.iterdir()) == []
