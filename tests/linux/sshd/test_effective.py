"""The run's shared sshd configuration and its connection passes
(:mod:`aiaudit.linux.sshd.effective`): parsed once, one pass per Match block for every SSH
rule, and the helper other checks use."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.core.model import Status

MAIN = "/etc/ssh/sshd_config"


DEBIAN_TOP = ("Include /etc/ssh/sshd_config.d/*.conf\nKbdInteractiveAuthentication no\n"
              "UsePAM yes\nX11Forwarding yes\nPrintMotd no\nAcceptEnv LANG LC_*\n"
              "Subsystem sftp /usr/lib/openssh/sftp-server\n")


def by_subject(results):
    return {r.subject: r for r in results}


def test_effective_setting_helper(make_root) -> None:
    from aiaudit.linux.sshd.effective import effective_setting

    root = make_root({MAIN: DEBIAN_TOP})
    host = Host(str(root))
    s = effective_setting(host, "usepam")
    assert s is not None and s.value == "yes" and s.source == "etc/ssh/sshd_config:3"
    assert effective_setting(Host(str(make_root({}))), "UsePAM") is None


def test_passes_computed_once_per_run_for_all_rules(make_root, monkeypatch) -> None:
    """Every SSH rule of a run shares one connection pass per Match block (and one global
    pass): the cost is configuration + rules, not their product.  A pass sshd would refuse
    is an error result for every rule that asks, the same each time."""
    from aiaudit.api import CheckContext
    from aiaudit.core.plugins import registry
    from aiaudit.linux.sshd import config as sp
    from aiaudit.linux.sshd import effective as ch

    root = make_root({MAIN: DEBIAN_TOP + "Match User a\n  X11Forwarding no\n"
                            "Match User b\n  PermitRootLogin yes\n"
                            "Match Address 10.0.0.0/8\n  MaxAuthTries 9\n",
                      "/etc/ssh/sshd_config.d/10.conf": "PermitRootLogin no\n"})
    host = Host(str(root))
    shared = ch.load_config(host).config
    calls: list[object] = []
    real = sp.SshdConfig.effective

    def counting(self, conn=None):
        if self is shared:
            calls.append(conn)
        return real(self, conn)

    monkeypatch.setattr(sp.SshdConfig, "effective", counting)
    checks = registry().checks
    params = [{"keyword": k, "op": "eq", "value": v} for k, v in (
        ("X11Forwarding", "no"), ("PermitRootLogin", "no"), ("MaxAuthTries", 3),
        ("PasswordAuthentication", "no"), ("UsePAM", "yes"))]
    out = [list(checks["ssh.sshd_option"].run(CheckContext(host, p))) for p in params]
    out.append(list(checks["ssh.sshd_kbdinteractive"].run(CheckContext(host, {}))))
    assert len(calls) == 1 + 3  # the global pass, then one per Match block
    assert ch.effective_setting(host, "UsePAM").value == "yes" and len(calls) == 4
    subjects = {r.subject for rs in out for r in rs}
    assert "Match User b" in subjects
    # the same results as each rule computing its own passes
    monkeypatch.setattr(sp.SshdConfig, "effective", real)
    fresh = [list(checks["ssh.sshd_option"].run(CheckContext(Host(str(root)), p)))
             for p in params]
    fresh.append(list(checks["ssh.sshd_kbdinteractive"].run(CheckContext(Host(str(root)), {}))))
    assert fresh == out


def test_refused_block_pass_is_an_error_for_every_rule(make_root) -> None:
    from aiaudit.api import CheckContext
    from aiaudit.core.plugins import registry

    # fatal for connections matching the block, fine at start-up (as in the test below)
    root = make_root({MAIN: "PasswordAuthentication no\nMatch User alice\n"
                            "  PasswordAuthentication yes\n"
                            "  AuthenticationMethods publickey\n  AuthenticationMethods any\n"})
    host = Host(str(root))
    spec = registry().checks["ssh.sshd_option"]
    runs = [by_subject(spec.run(CheckContext(host, {"keyword": k, "op": "eq", "value": "no"})))
            for k in ("PasswordAuthentication", "PasswordAuthentication")]
    blk = runs[1]["Match User alice"]
    assert blk.status is Status.ERROR and "drop connections" in blk.message
    assert runs[0] == runs[1]
