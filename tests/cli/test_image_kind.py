"""``aiaudit scan --image-kind KIND`` and ``--kernel-cmdline 'PARAMS'`` (issue 27).

The behaviour below the command line (``ScanOptions.image_kind``,
``ScanOptions.kernel_cmdline``) is tested in tests/checks/test_image_kinds.py; these tests
run the command.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import ROOTS, cli

STATELESS = str(ROOTS / "image-stateless-warewulf-debian12" / "root")
BOOTABLE = str(ROOTS / "image-bootable-debian12" / "root")
RULE = "CPU-CSTATE-LATENCY"


def test_header_and_json_name_the_kind_and_the_rule_says_how_to_check() -> None:
    """Needs no option: the kind is detected."""
    r = cli("scan", "--root", STATELESS, "--only", RULE, "--verbose")
    assert r.code == 0, r.err
    assert "Kind: stateless image (Warewulf node image (etc/warewulf/excludes)" in r.out
    assert "--kernel-cmdline '...'" in r.out
    doc = json.loads(cli("scan", "--root", STATELESS, "--only", RULE, "--format", "json").out)
    assert doc["host"]["image_kind"] == "stateless"
    assert doc["results"][0]["status"] == "skip"


def test_kernel_cmdline_is_checked_and_the_fix_is_for_the_provisioner() -> None:
    r = cli("scan", "--root", STATELESS, "--only", RULE, "--format", "json",
            "--kernel-cmdline", "quiet iommu=pt")
    doc = json.loads(r.out)
    res = doc["results"][0]
    assert res["status"] == "fail"
    assert res["remediation"]["provisioner"].startswith("Warewulf: wwctl profile set")
    assert res["remediation"]["snippets"] == []
    ok = cli("scan", "--root", STATELESS, "--only", RULE, "--kernel-cmdline",
             "quiet intel_idle.max_cstate=1 processor.max_cstate=1")
    assert ok.code == 0, ok.out


def test_image_kind_overrides_the_files() -> None:
    r = cli("scan", "--root", BOOTABLE, "--only", RULE, "--image-kind", "container",
            "--format", "json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["host"]["image_kind"] == "container"
    assert doc["host"]["image_kind_reason"].startswith("stated with --image-kind")
    assert doc["results"][0]["status"] == "skip"


def test_unknown_image_kind_is_a_usage_error() -> None:
    r = cli("scan", "--root", BOOTABLE, "--image-kind", "vm")
    assert r.code == 2
    assert "argument --image-kind: invalid choice: 'vm'" in r.err and "Traceback" not in r.err


def test_a_pasted_proc_cmdline_is_split_as_the_kernel_splits_it() -> None:
    """Tabs and line feeds separate parameters (``lib/cmdline.c`` uses ``isspace``): a
    ``/proc/cmdline`` pasted with its final line feed is a command line like any other."""
    r = cli("scan", "--root", STATELESS, "--only", RULE, "--format", "json",
            "--kernel-cmdline", "quiet\tintel_idle.max_cstate=1\nprocessor.max_cstate=1\n")
    assert r.code == 0, r.out + r.err
    assert json.loads(r.out)["results"][0]["status"] == "pass"


@pytest.mark.parametrize(("bad", "char", "at"), [("quiet\x1b[31m", "\x1b", 5),
                                                 ("a\x7f", "\x7f", 1), ("a\x01b", "\x01", 1)])
def test_a_control_character_in_the_command_line_is_a_usage_error(bad: str, char: str,
                                                                   at: int) -> None:
    r = cli("scan", "--root", STATELESS, "--only", RULE, "--kernel-cmdline", bad)
    assert r.code == 2 and r.out == ""
    assert "Traceback" not in r.err and "\x1b" not in r.err
    assert [ln for ln in r.err.splitlines() if ln.startswith("aiaudit scan: error")] == [
        f"aiaudit scan: error: argument --kernel-cmdline: control character {char!r} in "
        f"the command line (at {at})"]


def test_the_bundle_of_a_stateless_image_lists_the_fixes_for_the_provisioner(
        tmp_path: Path) -> None:
    """scan → remediate: the kernel-parameter fix is listed "for the provisioner" with
    Warewulf's command, counted among what a rescan still fails, and nothing for it is
    installed in the image (no grub drop-in); install.sh says so when it ends."""
    from aiaudit.remediate.bundle import HAND, PROVISIONER, manual_list

    saved = tmp_path / "scan.json"
    r = cli("scan", "--root", STATELESS, "--kernel-cmdline", "quiet iommu=pt",
            "--only", RULE, "CPU-GOVERNOR-PERFORMANCE", "--output", f"json:{saved}")
    assert r.code == 1, r.err
    out = tmp_path / "bundle"
    assert cli("remediate", str(saved), "--output-dir", str(out)).code == 0
    readme = (out / "README.txt").read_text()
    section = readme.split(f"\n{PROVISIONER} (1; ", 1)[1].split("\n\n", 1)[0]
    assert f"  {RULE} [medium] cpuidle: Warewulf: wwctl profile set PROFILE --kernelargs=" \
        in section
    assert "intel_idle.max_cstate=1 processor.max_cstate=1" in section
    assert (RULE, "cpuidle") in manual_list(readme)
    hand = readme.split(HAND, 1)[1].split("\n\n", 1)[0]
    assert f"{RULE} [medium] cpuidle: for the provisioner (below): " in hand
    files = {str(p.relative_to(out / "files")) for p in (out / "files").rglob("*")
             if p.is_file()}
    assert files == {"etc/systemd/system/aiaudit-cpu-governor.service"}, files
    assert "are for the provisioner" in (out / "install.sh").read_text().splitlines()[-1]
    # the governor unit does go into the image: the rebuild step follows it
    assert "wwctl image build IMAGE" in readme


def test_a_command_line_given_for_a_container_image_is_said_unused() -> None:
    container = str(ROOTS / "image-container-debian12" / "root")
    r = cli("scan", "--root", container, "--only", RULE, "--format", "json",
            "--kernel-cmdline", "quiet")
    res = json.loads(r.out)["results"][0]
    assert res["status"] == "skip"
    assert res["message"].endswith("the command line given with --kernel-cmdline is not "
                                   "used (a container has no kernel of its own)")
    plain = json.loads(cli("scan", "--root", container, "--only", RULE, "--format",
                           "json").out)["results"][0]
    assert "--kernel-cmdline" not in plain["message"]
