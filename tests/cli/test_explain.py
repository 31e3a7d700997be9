"""``aiaudit explain`` and ``aiaudit rules``: readable params, the expected value, the fix
a stock host gets, case-insensitive ids with a suggestion for a typo, the tag filter."""

from __future__ import annotations

import pytest

from aiaudit.cli.explain import explain, find_rule, probe, rules_table
from aiaudit.core import plugins, ruleset
from aiaudit.core.model import Status
from tests.helpers import cli


@pytest.fixture(scope="module")
def rs():
    return ruleset.load("dl-training", plugins.registry())


def test_explain_is_case_insensitive_and_readable() -> None:
    r = cli("explain", "sysctl-vm-swappiness")
    assert r.code == 0, r.err
    out = r.out
    assert out.startswith("SYSCTL-VM-SWAPPINESS: Ensure swappiness is low")
    assert "  expected: vm.swappiness <= 10\n" in out
    assert "    op: le (<=)\n" in out and "    persist: yes\n" in out
    assert "{" not in out and "true" not in out and "None" not in out  # no JSON or Python
    # the generic fix: what it writes and where
    assert "writes /etc/sysctl.d/99-zz-aiaudit.conf:\n      vm.swappiness = 10\n" in out
    assert all(len(line) <= 100 for line in out.splitlines() if not line.startswith("    "))


def test_explain_shows_a_file_fix_as_the_file_it_writes() -> None:
    out = cli("explain", "FW-DEFAULT-DENY-INPUT").out
    assert "writes /etc/nftables.conf:" in out and "policy drop;" in out
    assert "runs now:\n      nft -c -f /etc/nftables.conf && nft -f /etc/nftables.conf" in out
    assert "<<'EOF'" not in out


def test_fix_lines_show_a_file_mode_and_a_heredoc_command_as_a_command() -> None:
    """A file snippet says its mode when it is not the default; a command that happens to
    hold a here-document (a third-party fix) is a command, shown as given."""
    from aiaudit.cli.explain import _fix_lines
    from aiaudit.core.model import Remediation, Result, Snippet

    cmd = "cat > /etc/a.conf <<'EOF'\nx = 1\nEOF"
    rem = Remediation("Fix it.", (Snippet.file("/etc/b.conf", "y = 2\n", mode=0o600),
                                  Snippet.command(cmd)))
    lines = _fix_lines([Result(Status.FAIL, "x", "bad", remediation=rem)])
    assert lines == ["  Fix it.", "  writes /etc/b.conf (mode 0600):", "    y = 2",
                     "  runs now:", "    cat > /etc/a.conf <<'EOF'", "    x = 1", "    EOF"]


@pytest.mark.parametrize("typo,suggestion", [
    ("SYSCTL-VM-SWAPINESS", "SYSCTL-VM-SWAPPINESS"),
    ("ssh-pasword-authentication", "SSH-PASSWORD-AUTHENTICATION"),
    ("SWAPPINESS", "SYSCTL-VM-SWAPPINESS"),
])
def test_unknown_rule_suggests_the_nearest_id(typo: str, suggestion: str) -> None:
    r = cli("explain", typo)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith(f"aiaudit: error: unknown rule {typo!r} in ruleset dl-training; "
                            f"did you mean {suggestion}")
    assert "Traceback" not in r.err


def test_unknown_rule_without_any_near_id(rs) -> None:
    with pytest.raises(Exception, match="aiaudit rules"):
        find_rule(rs, "ZZZZ-QQQQ")


def test_every_shipped_rule_explains(rs) -> None:
    for rule in rs.rules:
        text = explain(rs, rule.id.lower())
        assert text.startswith(f"{rule.id}: ") and "expected: " in text
        assert "None" not in text


def test_probe_is_offline_and_stock(rs, monkeypatch) -> None:
    """The probe reads a temporary root only (never the machine aiaudit runs on)."""
    from aiaudit.core import host as host_mod

    roots = []
    real = host_mod.Host.__init__

    def spy(self, root, *a, **kw):
        roots.append((root, kw.get("live", a[0] if a else None)))
        real(self, root, *a, **kw)

    monkeypatch.setattr(host_mod.Host, "__init__", spy)
    got = probe(rs, [find_rule(rs, "SYSCTL-VM-SWAPPINESS")])
    assert got["SYSCTL-VM-SWAPPINESS"][0].status is Status.FAIL
    assert len(roots) == 1 and roots[0][0] != "/" and "aiaudit-probe-" in roots[0][0]
    assert roots[0][1] is False


def test_rules_shows_expected_values_and_filters_by_tag() -> None:
    from aiaudit.cli.options import load_ruleset

    rs = load_ruleset("dl-training")  # (the counts follow the shipped ruleset as it grows)
    n = len(rs.rules)
    n_ssh = sum(1 for rule in rs.rules if "ssh" in {t.lower() for t in rule.info.tags})
    r = cli("rules")
    assert r.code == 0
    lines = r.out.splitlines()
    assert lines[0] == f"# dl-training 1.0: {n} of {n} rules"
    assert lines[1].split() == ["RULE", "SEVERITY", "EXPECTED", "TITLE"]
    row = next(line for line in lines if line.startswith("SYSCTL-VM-SWAPPINESS "))
    assert "  medium    vm.swappiness <= 10 " in row
    assert any("PasswordAuthentication = no" in line for line in lines)
    ssh = cli("rules", "--tag", "SSH").out.splitlines()
    assert ssh[0] == f"# dl-training 1.0: {n_ssh} of {n} rules tagged ssh" and n_ssh >= 15
    assert all(not line.startswith("SYSCTL-") for line in ssh[2:]) and len(ssh) == n_ssh + 2
    both = cli("rules", "--tag", "ssh", "--tag", "gpu").out.splitlines()
    assert len(both) > len(ssh)


def test_rules_unknown_tag_is_a_usage_error(rs) -> None:
    r = cli("rules", "--tag", "nope")
    assert r.code == 2 and "unknown tag nope" in r.err and "(tags: " in r.err
    assert rules_table(rs, ["ssh"]).count("\n") == 17


def test_hostile_ruleset_text_is_escaped(tmp_path) -> None:
    """A third-party ruleset's title, rationale, references and params reach a terminal
    through explain/rules only escaped."""
    evil = "x\\e]0;owned\\a\\e[2J\\r\\u202e"
    (tmp_path / "evil.yaml").write_text(f'''\
ruleset: evil
version: "1"
description: d
rules:
  - id: EVIL-ONE
    check: kernel.sysctl
    severity: low
    title: "Ensure {evil}"
    params: {{key: "vm.swappiness", op: le, value: 10, kernel_default: 60}}
    rationale: "why {evil}"
    references: ["ref {evil}"]
    tags: [memory]
''')
    for args in (("explain", "evil-one"), ("rules", "--tag", "memory")):
        r = cli(*args, "--ruleset", str(tmp_path / "evil.yaml"))
        assert r.code == 0, r.err
        for bad in ("\x1b", "\x07", "\r", "\u202e"):
            assert bad not in r.out, (args, repr(bad))
        assert "x\\x1b]0;owned\\x07\\x1b[2J\\x0d\\u202e" in r.out


def test_explain_without_a_writable_temporary_directory(monkeypatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", "/nonexistent/aiaudit-no-tmp")
    r = cli("explain", "SYSCTL-VM-SWAPPINESS")
    assert r.code == 0, r.err
    assert "expected: vm.swappiness <= 10" in r.out and "Each failing result" in r.out
