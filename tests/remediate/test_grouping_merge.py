"""Fix grouping (issue 30): one fix per file and key, each line of a written file once,
in-place edits as commands before the reload, a diagnosis recognised as one."""

from __future__ import annotations

from aiaudit.core.model import (
    Finding,
    HostInfo,
    Remediation,
    Result,
    RuleInfo,
    RunResult,
    Severity,
    Snippet,
    Status,
)
from aiaudit.remediate.grouping import _merged_lines, changes_nothing, fix_groups

HOST = HostInfo("n", "m", "Debian GNU/Linux 12", "12", "debian", "6.1", "/", "live")


def _run(*fixes: tuple[str, str, Remediation]) -> RunResult:
    findings = tuple(Finding(rid, "c", Severity.HIGH, "t", Result(Status.FAIL, subj, "m",
                                                                   remediation=rem))
                     for rid, subj, rem in fixes)
    rules = tuple(dict.fromkeys(RuleInfo(f.rule_id, "c", Severity.HIGH, "t")
                                for f in findings))
    return RunResult("0", "id", "now", 0.1, HOST, "rs", "1", rules, findings)


def test_one_fix_per_file_and_key_with_one_value() -> None:
    def slurm(item: str, keep: str) -> Remediation:
        return Remediation(f"To give jobs {item}: stop propagating it with "
                           f"'PropagateResourceLimitsExcept={keep}' in /etc/slurm/slurm.conf "
                           "(and remove PropagateResourceLimits), then 'scontrol reconfigure'.")

    run = _run(("LIMITS-SLURM-JOB", "slurm job memlock", slurm("memlock", "MEMLOCK")),
               ("LIMITS-SLURM-JOB", "slurm job nofile", slurm("nofile", "MEMLOCK,NOFILE")))
    (g,) = fix_groups(run)
    text = " ".join([g.summary, *g.also])
    assert "=MEMLOCK'" not in text and text.count("=MEMLOCK,NOFILE'") == 2


def test_lines_of_a_file_once_and_sections_merged() -> None:
    assert _merged_lines(["alice soft memlock unlimited\nalice hard memlock unlimited\n",
                          "alice hard memlock unlimited\n"]) == [
        "alice soft memlock unlimited", "alice hard memlock unlimited"]
    assert _merged_lines(["[Service]\nLimitMEMLOCK=infinity\n",
                          "[Unit]\nAfter=x\n\n[Service]\nLimitNOFILE=65536\n"]) == [
        "[Service]", "LimitMEMLOCK=infinity", "LimitNOFILE=65536", "", "[Unit]", "After=x"]
    # lines of braces alone shape the text: kept
    assert _merged_lines(["a {\n  b {\n  }\n  c {\n  }\n}\n"]).count("  }") == 2


def test_edits_are_commands_before_the_reload() -> None:
    def ssh(line: str) -> Remediation:
        return Remediation(f"set {line}", (
            Snippet.edit("/etc/ssh/sshd_config", f"set-directive {line}"),
            Snippet.apply("sshd")))

    run = _run(("A", "PermitRootLogin", ssh("PermitRootLogin no")),
               ("B", "X11Forwarding", ssh("X11Forwarding no")))
    (g,) = fix_groups(run)
    assert g.commands[0].startswith("aiaudit_edit() {")
    assert g.commands[1:] == [
        "aiaudit_edit /etc/ssh/sshd_config set-directive 'PermitRootLogin no' "
        "'X11Forwarding no'",
        "sshd -t && systemctl reload ssh"]
    assert not any(c.startswith("#") for c in g.commands)


def test_a_diagnosis_is_not_a_fix() -> None:
    ss = "ss -tlpn 'sport = :2024'  # diagnosis: which process holds the port (changes nothing)"
    (g,) = fix_groups(_run(("P", "2024/tcp", Remediation("Bind it", (Snippet.command(ss),)))))
    assert changes_nothing(g)
    (g,) = fix_groups(_run(("Q", "x", Remediation("Do", (Snippet.command("true"),)))))
    assert not changes_nothing(g)


def test_appends_to_one_variable_are_one_line() -> None:
    """Two fixes adding kernel parameters to one grub.d drop-in: one assignment (one line
    per file and key), which sh reads as the two did."""
    import subprocess

    a = 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT intel_idle.max_cstate=1"\n'
    b = 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT transparent_hugepage=madvise"\n'
    merged = _merged_lines([a, b, a])
    assert merged == ['GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT '
                      'intel_idle.max_cstate=1 transparent_hugepage=madvise"']

    def sourced(text: str) -> str:
        return subprocess.run(["sh", "-c", 'GRUB_CMDLINE_LINUX_DEFAULT=quiet; eval "$1"; '
                               'echo "$GRUB_CMDLINE_LINUX_DEFAULT"', "sh", text],
                              capture_output=True, text=True, check=True, timeout=30).stdout
    assert sourced("\n".join(merged)) == sourced(a + b)
    # another variable in between: not merged
    c = 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX x"\n'
    assert len(_merged_lines([a, c, b])) == 3
