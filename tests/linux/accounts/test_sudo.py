"""sudo's decision from a sudoers policy (:mod:`aiaudit.linux.accounts.sudo`); the check's
cases are compared with the real sudo in tests/checks/accounts/test_sudo_nopasswd.py."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts import sudoers as sp
from aiaudit.linux.accounts.sudo import (
    Policy,
    host_atom,
    load_policy,
    matcher,
    sudo_any_command,
    user_atom,
)

TRAINER = pw.Account("trainer", 1001, 1001)
DB = pw.Database((TRAINER,), (pw.Group("trainer", 1001), pw.Group("gpu", 44, ("trainer",))))


def policy(text: str) -> Policy:
    return Policy(tuple(("/etc/sudoers", e) for e in sp.parse(text)), ("/etc/sudoers",), ())


def test_list_matching_last_item_decides_and_aliases_expand() -> None:
    aliases = {("user", "A"): ("B",), ("user", "B"): ("A", "trainer")}  # a loop
    match = matcher(aliases, "user", user_atom(TRAINER, DB))
    assert match(("A",)) is True
    assert match(("ALL", "!trainer")) is False
    assert match(("!trainer", "ALL")) is True
    assert match(("bob",)) is None
    assert match(("!!trainer",)) is True


def test_user_and_host_atoms() -> None:
    atom = user_atom(TRAINER, DB)
    assert atom("%gpu") and atom("%:gpu") and atom("%#44") and atom("#1001")
    assert atom("%#45") is None and atom("+netgroup") is None and atom("#0") is None
    here = host_atom("node1.example")
    assert here("node1") and here("node1.example") and here("10.0.0.1")
    assert here("node2") is None
    assert host_atom(None)("anything")


def test_any_command_decision() -> None:
    d = sudo_any_command(policy("trainer ALL=(ALL) NOPASSWD: ALL\n"), TRAINER, DB, "n")
    assert (d.outcome, d.spec.line, d.file, d.auth_off) == ("nopasswd", 1, "/etc/sudoers", False)
    d = sudo_any_command(policy("Defaults:%gpu !authenticate\n%gpu ALL=(root) ALL\n"),
                         TRAINER, DB, "n")
    assert d.outcome == "nopasswd" and d.auth_off
    d = sudo_any_command(policy("trainer ALL=(ALL) NOPASSWD: ALL\ntrainer ALL=(ALL) ALL\n"),
                         TRAINER, DB, "n")
    assert d.outcome == "passwd" and d.spec.line == 2
    assert sudo_any_command(policy("trainer ALL=(ALL) !ALL\n"), TRAINER, DB,
                            "n").outcome == "denied"
    assert sudo_any_command(policy("trainer ALL=(ALL) NOPASSWD: /bin/ls\n"), TRAINER, DB,
                            "n").outcome == "none"


def test_policy_reads_includes_in_place(make_root) -> None:
    root = make_root({"/etc/hostname": "node1.example\n",
                      "/etc/sudoers": "Defaults env_reset\n@include sudoers.%h\n"
                                      "#includedir /etc/sudoers.d\ntrainer ALL=(ALL) ALL\n",
                      "/etc/sudoers.node1": "Cmnd_Alias X = /bin/ls\n",
                      "/etc/sudoers.d/b": "trainer ALL = NOPASSWD: ALL\n",
                      "/etc/sudoers.d/a~": "skipped\n", "/etc/sudoers.d/c.conf": "skipped\n"})
    pol = load_policy(Host(str(root), live=False))
    assert pol is not None and not pol.problems
    assert pol.files == ("/etc/sudoers", "/etc/sudoers.node1", "/etc/sudoers.d/b")
    kinds = [(path, type(e).__name__) for path, e in pol.entries]
    assert kinds == [("/etc/sudoers", "Default"), ("/etc/sudoers.node1", "Alias"),
                     ("/etc/sudoers.d/b", "UserSpec"), ("/etc/sudoers", "UserSpec")]
    assert load_policy(Host(str(make_root({})), live=False)) is None
