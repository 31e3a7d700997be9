"""``kernel.sysctl`` drift fixes (issue 30): when the persisted value is right and only the
runtime differs, the fix applies what is persisted (``sysctl --system``, systemd-sysctl,
ufw's file, tuned) and nothing more: no line in aiaudit's drop-in, no edit of a file that
already says the right value.  A setting that is right now but reverts at reboot is fixed by
persisting it, with no command for the runtime that is already right."""

from __future__ import annotations

import re

from aiaudit.core.model import Aspect, SnippetKind, Status
from aiaudit.linux.sysctl.dropin import DROPIN
from aiaudit.reporters.text import render
from tests.helpers import ROOTS, run_check
from tests.reporters.scans import scan_root

SWAP = {"key": "vm.swappiness", "op": "le", "value": 10, "kernel_default": 60}
SYSTEMD = {"/usr/lib/systemd/systemd": ""}
PROC = {"/proc/sys/vm/swappiness": "60\n"}


def _drift(make_root, files: dict[str, str], links: dict[str, str] | None = None):
    root = make_root({**PROC, **files}, links=links or {}, dirs=("/proc/sys/vm",))
    results = run_check("kernel.sysctl", root, SWAP, live=True)
    assert len(results) == 1
    r = results[0]
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT), r.message
    assert r.remediation is not None
    return r


def _commands(r) -> list[str]:
    snips = r.remediation.snippets
    assert all(s.kind is SnippetKind.COMMAND for s in snips), snips  # no file, no edit
    return [s.content for s in snips]


def test_procps_root_applies_with_sysctl_system(make_root) -> None:
    r = _drift(make_root, {"/etc/sysctl.d/10-site.conf": "vm.swappiness = 5\n"})
    assert _commands(r) == ["sysctl --system"]
    assert DROPIN not in r.remediation.summary and "change" not in r.remediation.summary
    assert r.remediation.manual == ""


def test_systemd_root_where_procps_agrees(make_root) -> None:
    r = _drift(make_root, {"/etc/sysctl.d/10-site.conf": "vm.swappiness = 5\n", **SYSTEMD})
    assert _commands(r) == ["sysctl --system"]


def test_systemd_root_where_procps_would_differ_runs_systemd_sysctl(make_root) -> None:
    # systemd-sysctl ignores /etc/sysctl.conf without Debian's 99-sysctl.conf link, procps'
    # `sysctl --system` reads it last and would write 80: only systemd-sysctl applies 5
    r = _drift(make_root, {"/etc/sysctl.d/10-site.conf": "vm.swappiness = 5\n",
                           "/etc/sysctl.conf": "vm.swappiness = 80\n", **SYSTEMD})
    assert _commands(r) == ["systemctl restart systemd-sysctl.service"]


def test_tuned_writes_it_restart_tuned(make_root) -> None:
    files = {
        **SYSTEMD,
        "/usr/lib/systemd/system/tuned.service": "[Service]\nExecStart=/usr/sbin/tuned\n"
                                                 "[Install]\nWantedBy=multi-user.target\n",
        "/etc/tuned/active_profile": "ml\n",
        "/etc/tuned/ml/tuned.conf": "[sysctl]\nvm.swappiness=5\n",
    }
    links = {"/etc/systemd/system/multi-user.target.wants/tuned.service":
             "/usr/lib/systemd/system/tuned.service"}
    r = _drift(make_root, files, links)
    assert _commands(r) == ["systemctl restart tuned.service"]


def test_ufw_reapplies_it_load_ufws_file(make_root) -> None:
    files = {"/etc/ufw/ufw.conf": "ENABLED=yes\n",
             "/etc/default/ufw": "IPT_SYSCTL=/etc/ufw/sysctl.conf\n",
             "/etc/ufw/sysctl.conf": "vm/swappiness=5\n",
             "/etc/systemd/system/multi-user.target.wants/ufw.service": "",
             "/etc/sysctl.d/10-x.conf": "vm.swappiness = 60\n", **SYSTEMD}
    r = _drift(make_root, files)
    assert _commands(r) == ["sysctl -p /etc/ufw/sysctl.conf"]


def test_reverts_at_reboot_persists_without_runtime_command(make_root) -> None:
    root = make_root({"/proc/sys/vm/swappiness": "5\n",
                      "/etc/sysctl.d/10-site.conf": "vm.swappiness = 60\n"},
                     dirs=("/proc/sys/vm",))
    (r,) = run_check("kernel.sysctl", root, SWAP, live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT)
    assert [s.kind for s in r.remediation.snippets] == [SnippetKind.FILE]
    assert r.remediation.snippets[0].content == "vm.swappiness = 5\n"  # keeps the runtime


def _fix_block(text: str, rule: str) -> str:
    """The "paste as is" shell of the fix group that lists ``rule``."""
    for group in re.split(r"\n(?=Fix \d+ · )", text):
        if f" {rule} " in group and "paste as is" in group:
            return group.split("paste as is):\n", 1)[1].split("\n\n", 1)[0]
    raise AssertionError(f"no fix block for {rule}:\n{text}")


def test_text_report_fix_block_for_live_aspects_root() -> None:
    run = scan_root(ROOTS / "sysctl-live-aspects" / "root", live=True, reraise=False)
    text = render(run, {})
    shell = _fix_block(text, "SYSCTL-NET-IPV4-TCP-FIN-TIMEOUT")
    assert shell.splitlines()[0] == "sysctl --system"
    assert "tcp_fin_timeout" not in shell  # no drop-in line, no `sysctl -w`
    assert not re.search(r"^net.ipv4.tcp_fin_timeout =", text, re.M)  # in no drop-in
    assert "change etc/sysctl.d/60-net.conf:1" not in text  # no edit of the right file
    # the settings that revert at reboot are persisted, with no runtime command
    persist = _fix_block(text, "SYSCTL-VM-MAX-MAP-COUNT")
    assert "vm.max_map_count = 262144" in persist  # the running value, kept
    (f,) = [f for f in run.findings if f.rule_id == "SYSCTL-VM-MAX-MAP-COUNT"]
    assert f.result.remediation is not None
    assert [s.kind for s in f.result.remediation.snippets] == [SnippetKind.FILE]
