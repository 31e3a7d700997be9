"""What a scan imports: nothing it does not use (start-up is most of a prolog scan's time).

Not a timed test (``bench/bench.py`` measures time): this pins the imports that were removed
from the scan path, so a refactor that brings one back fails here, naming the module and
why a scan should not need it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = str(Path(__file__).resolve().parents[1] / "bench")

NOT_FOR_A_SCAN = {
    "jsonschema": "validation of shipped rulesets: loaded from their JSON twins",
    "rich": "text output is plain",
    "shutil": "argparse imports it for the terminal width: cli sizes help itself",
    "uuid": "imports platform: the run id comes from os.urandom",
    "platform": "via uuid",
    "pkgutil": "only to list every built-in plugin module",
    "tempfile": "only for --state",
    "aiaudit.core.waivers": "only with --waivers",
    "aiaudit.modes.changes": "only with --changes-since / --state",
    "xml": "JUnit output only",
    "yaml": "shipped rulesets and the service table load from JSON twins",
    "sqlite3": "only where an rpm database exists (this tree has none)",
    "datetime": "timestamps come from time.gmtime; sqlite3 would import it",
    "aiaudit.linux.netfilter.ufw": "only where ufw is installed",
    "aiaudit.linux.netfilter.firewalld": "only where firewalld is enabled",
    "aiaudit.linux.packages.rpm": "only where an rpm database exists",
    "aiaudit.linux.containers.jsonconf": "only where Docker is installed",
    "aiaudit.linux.containers.tomlconf": "only where the NVIDIA Container Toolkit is installed",
    "aiaudit.linux.containers.apptainer": "only where Apptainer is configured",
    "aiaudit.core.edits": "only for the fix of a failing swap, /dev/shm or sshd rule",
}

NOT_FOR_A_PROLOG = {
    "aiaudit.linux.boot.cmdline":
        "the boot configuration: only the THP rules and cpufreq hosts read it",
    "aiaudit.linux.tuned.profiles": "likewise",
    "aiaudit.linux.boot.loaders": "likewise",
    "aiaudit.core.edits": "a passing prolog writes no fix",
}

SCAN = """
import json, sys
from aiaudit.cli import main
rc = main(["scan", "--ruleset", "dl-training", "--format", "json", "--output", "/dev/null",
           "--root", sys.argv[1], "--live", "--user", "root"])
print(json.dumps(sorted(sys.modules)))
"""


@pytest.fixture(scope="module")
def scanned_modules(tmp_path_factory) -> set[str]:
    """The modules loaded after a full dl-training scan of a small live host tree."""
    sys.path.insert(0, BENCH)
    try:
        import bench  # the benchmark's synthetic host
    finally:
        sys.path.pop(0)
    root = bench.make_host(tmp_path_factory.mktemp("host"), cpus=2, cstates=3, nvme=1,
                           sysctl_files=2)
    out = subprocess.run([sys.executable, "-c", SCAN, str(root)], capture_output=True,
                         text=True, check=False)
    assert out.returncode in (0, 1, 3), out.stderr
    return set(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize("module", sorted(NOT_FOR_A_SCAN))
def test_a_scan_does_not_import(module: str, scanned_modules: set[str]) -> None:
    assert module not in scanned_modules, f"{module} is imported ({NOT_FOR_A_SCAN[module]})"


def test_the_scan_ran_its_checks(scanned_modules: set[str]) -> None:
    """The guard above means something only if the scan really loaded its checks."""
    for mod in ("aiaudit.checks.kernel.sysctl", "aiaudit.checks.cpu.cstates",
                "aiaudit.checks.ssh.sshd_option", "aiaudit.reporters.json"):
        assert mod in scanned_modules


PROLOG = """
import json, sys
from aiaudit.cli import main
rc = main(["scan", "--prolog", "--ruleset", "slurm-preflight", "--output", "/dev/null",
           "--root", sys.argv[1], "--live"])
print(json.dumps(sorted(sys.modules)))
"""


@pytest.fixture(scope="module")
def prolog_modules(tmp_path_factory) -> set[str]:
    """The modules loaded after a Slurm prolog scan of a live host tree without cpufreq
    (a VM) whose /dev/shm is large enough."""
    sys.path.insert(0, BENCH)
    try:
        import bench
    finally:
        sys.path.pop(0)
    root = bench.make_host(tmp_path_factory.mktemp("vm"), cpus=2, cstates=3, nvme=1,
                           sysctl_files=2)
    shutil.rmtree(root / "sys/devices/system/cpu/cpufreq")
    out = subprocess.run([sys.executable, "-c", PROLOG, str(root)], capture_output=True,
                         text=True, check=False)
    assert out.returncode in (0, 1, 3), out.stderr
    return set(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize("module", sorted(NOT_FOR_A_PROLOG))
def test_a_prolog_scan_does_not_import(module: str, prolog_modules: set[str]) -> None:
    assert module not in prolog_modules, f"{module} is imported ({NOT_FOR_A_PROLOG[module]})"


def test_the_prolog_ran_its_checks(prolog_modules: set[str]) -> None:
    for mod in ("aiaudit.checks.cpu.governor", "aiaudit.checks.memory.shm",
                "aiaudit.checks.gpu.count", "aiaudit.checks.slurm.job_limits"):
        assert mod in prolog_modules
