"""The deployment examples in ``examples/``: the systemd units pass ``systemd-analyze
verify`` and score well in ``systemd-analyze security``, their command line really runs,
and the CI jobs mount read-only, scan offline and publish SARIF and JUnit."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers import cli
from tests.modes_support import AIAUDIT, REPO, need_program

EXAMPLES = REPO / "examples"


def _units(tmp_path: Path) -> Path:
    """The units with ExecStart pointing at this checkout's aiaudit (verify checks that
    the program exists)."""
    if not AIAUDIT.exists():
        pytest.skip("aiaudit is not installed in the venv")
    for name in ("aiaudit.service", "aiaudit.timer"):
        text = (EXAMPLES / "systemd" / name).read_text()
        (tmp_path / name).write_text(text.replace("/usr/local/bin/aiaudit", str(AIAUDIT)))
    return tmp_path


def test_systemd_units_verify(tmp_path: Path) -> None:
    need_program("systemd-analyze")
    d = _units(tmp_path)
    proc = subprocess.run(["systemd-analyze", "verify", "--man=no", str(d / "aiaudit.service"),
                           str(d / "aiaudit.timer")], capture_output=True, text=True)
    # verify exits 0 on unknown keys and only warns: any output is a problem too
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_systemd_unit_is_sandboxed(tmp_path: Path) -> None:
    need_program("systemd-analyze")
    d = _units(tmp_path)
    proc = subprocess.run(["systemd-analyze", "security", "--offline=yes",
                           str(d / "aiaudit.service")], capture_output=True, text=True)
    if "--offline" in proc.stderr and proc.returncode:
        pytest.skip("systemd-analyze security --offline needs systemd >= 250")
    m = re.search(r"Overall exposure level for aiaudit.service: ([0-9.]+)", proc.stdout)
    assert m, proc.stdout + proc.stderr
    assert float(m.group(1)) <= 3.0, proc.stdout
    unit = (EXAMPLES / "systemd" / "aiaudit.service").read_text()
    for line in ("ProtectSystem=strict", "NoNewPrivileges=yes", "ProtectKernelTunables=yes",
                 "RestrictAddressFamilies=AF_UNIX AF_NETLINK AF_INET AF_INET6",
                 "IPAddressDeny=any"):
        assert f"\n{line}\n" in unit
    # PrivateNetwork would move the scan into an empty network namespace, where the
    # per-namespace net.* sysctls, listeners and firewall are not the host's
    assert "\nPrivateNetwork=yes" not in unit
    caps = re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M)
    assert caps and set(caps.group(1).split()) <= {
        "CAP_DAC_READ_SEARCH", "CAP_SYS_PTRACE", "CAP_NET_ADMIN", "CAP_NET_RAW"}


def test_unit_capabilities_let_iptables_legacy_read_its_tables() -> None:
    """iptables-legacy under exactly the unit's capability bounding set reads the filter
    table; without CAP_NET_RAW it fails as reported ("Permission denied (you must be
    root)"), so the unit's set is what the firewall reader needs."""
    import os
    import shutil

    exe = shutil.which("iptables-legacy") or "/usr/sbin/iptables-legacy"
    why = None if os.geteuid() == 0 else "needs root"
    if why is None and not os.access(exe, os.X_OK):
        why = "iptables (iptables-legacy) is not installed"
    if why is None and shutil.which("setpriv") is None:
        why = "setpriv (util-linux) is not installed"
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    unit = (EXAMPLES / "systemd" / "aiaudit.service").read_text()
    m = re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M)
    assert m
    caps = [c.lower().removeprefix("cap_") for c in m.group(1).split()]

    def run(keep: list[str]) -> subprocess.CompletedProcess:
        bounding = "-all," + ",".join(f"+{c}" for c in keep)
        return subprocess.run(["setpriv", f"--bounding-set={bounding}", "--", exe, "-t",
                               "filter", "-S"], capture_output=True, text=True, timeout=30)

    ok = run(caps)
    if "Permission denied" not in ok.stderr and ok.returncode != 0:
        pytest.skip(f"iptables-legacy cannot run here: {ok.stderr.strip()}")
    assert ok.returncode == 0 and "-P INPUT" in ok.stdout, ok.stderr
    bad = run([c for c in caps if c != "net_raw"])
    assert bad.returncode != 0 and "Permission denied (you must be root)" in bad.stderr


def _exec_start() -> list[str]:
    unit = (EXAMPLES / "systemd" / "aiaudit.service").read_text().replace("\\\n", " ")
    line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    return shlex.split(line.split("=", 1)[1])


def test_service_command_line_runs(tmp_path: Path, make_root) -> None:
    """The service's own arguments, with the state file moved to a temp dir and a fixture
    root: first run reports everything, the next only changes."""
    from aiaudit.core import plugins

    argv = _exec_start()
    assert argv[0] == "/usr/local/bin/aiaudit" and argv[1] == "scan"
    state = tmp_path / "last-scan.json"
    args = [str(state) if a == "/var/lib/aiaudit/last-scan.json" else a for a in argv[2:]]
    assert str(state) in args
    fmt = args[args.index("--format") + 1]
    if fmt not in plugins.registry().reporters:   # the events format comes from a plugin
        args[args.index("--format") + 1] = "json"
    root = make_root({"/etc/sysctl.d/60-x.conf": "vm.swappiness = 10\n"})
    extra = ["--root", str(root), "--only", "SYSCTL-VM-SWAPPINESS"]
    first = cli("scan", *args, *extra)
    assert first.code == 0, first.err
    assert state.exists()
    again = cli("scan", *args, *extra)
    assert again.code == 0 and "0 added, 0 fixed, 0 changed" in again.out


def _ci(name: str) -> dict:
    return yaml.safe_load((EXAMPLES / "ci" / name).read_text())


def test_github_actions_example() -> None:
    wf = _ci("github-actions.yml")
    steps = wf["jobs"]["audit"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "qemu-nbd --read-only" in runs
    assert re.search(r"aiaudit\" scan --root \"\$MNT\"", runs)
    assert "--output sarif:aiaudit.sarif --output junit:aiaudit.xml" in runs
    # the image's training user, never sudo's caller (the runner)
    assert '--user "$TRAINING_USER"' in runs and wf["jobs"]["audit"]["env"]["TRAINING_USER"]
    upload = next(s for s in steps if s.get("uses", "").startswith(
        "github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "aiaudit.sarif" and upload["if"] == "always()"
    assert wf["permissions"]["security-events"] == "write"
    # upload-sarif's category: input is ignored for a file that has an automation id: the
    # category is set where the file is written, from the image name
    assert "category" not in upload["with"]
    assert '--sarif-category "$SARIF_CATEGORY"' in runs
    assert wf["jobs"]["audit"]["env"]["SARIF_CATEGORY"]


def test_github_actions_scripts_pass_shellcheck(tmp_path: Path) -> None:
    need_program("shellcheck")
    for i, step in enumerate(_ci("github-actions.yml")["jobs"]["audit"]["steps"]):
        if "run" not in step:
            continue
        script = tmp_path / f"step{i}.sh"
        script.write_text("#!/bin/bash\nset -e\n" + re.sub(r"\$\{\{[^}]*\}\}", "x",
                                                           step["run"]))
        proc = subprocess.run(["shellcheck", "-s", "bash", "-e", "SC2086", str(script)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"step {step.get('name')}:\n{proc.stdout}"


def test_gitlab_ci_example() -> None:
    job = _ci("gitlab-ci.yml")["golden-image-audit"]
    text = "\n".join([*job["before_script"], *job["script"]])
    assert 'guestmount --ro -a "$IMAGE" -i "$MNT"' in text
    assert 'aiaudit scan --root "$MNT"' in text
    assert "--output sarif:aiaudit.sarif --output junit:aiaudit.xml" in text
    # the image's training user, as in the GitHub example: without it the training-user
    # rules skip in CI
    assert '--user "$TRAINING_USER"' in text and job["variables"]["TRAINING_USER"]
    assert job["artifacts"]["reports"]["junit"] == "aiaudit.xml"
    assert job["artifacts"]["when"] == "always"


def test_examples_use_only_known_options() -> None:
    """Every --option the examples pass to ``aiaudit scan`` exists (or is a format another
    plugin adds)."""
    from aiaudit.cli import build_parser

    parser = build_parser()
    scan = next(a for a in parser._subparsers._group_actions[0].choices.items()
                if a[0] == "scan")[1]
    known = {o for a in scan._actions for o in a.option_strings}
    gh = _ci("github-actions.yml")["jobs"]["audit"]["steps"]
    gl = _ci("gitlab-ci.yml")["golden-image-audit"]
    texts = [(EXAMPLES / "systemd" / "aiaudit.service").read_text(),
             (EXAMPLES / "slurm" / "prolog.sh").read_text(),
             "\n".join(st.get("run", "") for st in gh), "\n".join(gl["script"])]
    used: dict[int, set[str]] = {}
    for i, t in enumerate(texts):
        for line in t.replace("\\\n", " ").splitlines():
            if re.search(r"aiaudit\"? scan ", line, re.I):
                used.setdefault(i, set()).update(
                    re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", line))
    assert sorted(used) == [0, 1, 2, 3], used      # every example runs a scan
    flat = set().union(*used.values())
    assert flat <= known, flat - known


def test_sudo_user_is_not_the_training_user_of_another_root(make_root) -> None:
    """`sudo aiaudit scan --root IMAGE` in CI: $SUDO_USER (the runner) is a user of the CI
    machine, not of the image; scanning / it still counts."""
    import json

    root = make_root({"/etc/passwd": "root:x:0:0::/root:/bin/sh\n"
                                     "runner:x:1001:1001::/home/runner:/bin/sh\n"})
    args = ("scan", "--only", "TRAINING-USER-NOT-ROOT", "--format", "json")
    r = cli(*args, "--root", str(root), env={"SUDO_USER": "runner"})
    (res,) = json.loads(r.out)["results"]
    assert res["status"] == "skip" and "runner" not in res["message"], res
    r = cli(*args, "--root", str(root), "--user", "runner", env={"SUDO_USER": "x"})
    (res,) = json.loads(r.out)["results"]
    assert res["status"] == "pass" and "runner" in res["message"], res
