"""Overridden sshd lines (issue 30): which lines a failing setting overrode and why,
checked against the real ``sshd -T``: a line named as overridden can take another value
without changing what sshd prints, while the same edit of the deciding line does change
it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aiaudit.linux.sshd import config as sp
from aiaudit.linux.sshd import shadowed
from tests.linux.sshd.sshd_corpus import require_sshd
from tests.linux.sshd.test_config_oracle import _glob, _read, sshd_T

D = "sshd_config.d"
CASES: dict[str, dict[str, str]] = {
    # Debian: the drop-ins are included on line 1; 50-cloud-init.conf sorts first
    "debian-dropins": {
        "sshd_config": f"Include {{root}}/{D}/*.conf\nPermitRootLogin no\nMaxAuthTries 3\n",
        f"{D}/50-cloud-init.conf": "PermitRootLogin yes\n",
        f"{D}/60-site.conf": "PermitRootLogin prohibit-password\nMaxAuthTries 6\n"},
    # an Include after the main file's own line: the main file wins
    "include-after": {
        "sshd_config": f"PermitRootLogin yes\nMaxAuthTries 8\nInclude {{root}}/{D}/*.conf\n",
        f"{D}/10-a.conf": "PermitRootLogin no\nMaxAuthTries 2\n"},
    # the same keyword twice in one file; nested includes
    "same-file-nested": {
        "sshd_config": f"Include {{root}}/{D}/*.conf\nMaxAuthTries 5\n",
        f"{D}/10-a.conf": "Include {root}/extra.conf\nPermitRootLogin yes\n"
                          "PermitRootLogin no\n",
        "extra.conf": "MaxAuthTries 9\nMaxAuthTries 4\n"},
    # lines under `Match all` replace earlier global values (SEMANTICS §7)
    "match-all": {
        "sshd_config": "PermitRootLogin no\nMaxAuthTries 3\nMatch all\nPermitRootLogin yes\n"
                       "MaxAuthTries 7\n"},
}
OTHER = {"PermitRootLogin": ("forced-commands-only", "no"), "MaxAuthTries": ("11", "12")}


def _write(tmp: Path, files: dict[str, str]) -> str:
    for rel, text in files.items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text.replace("{root}", str(tmp)))
    return str(tmp / "sshd_config")


def _edit(files: dict[str, str], root: Path, d: sp.Directive, kw: str) -> dict[str, str]:
    rel = str(Path(d.file).relative_to(root))
    rows = files[rel].split("\n")
    new = next(v for v in OTHER[kw] if v != d.value)
    rows[d.line - 1] = f"{kw} {new}"
    return {**files, rel: "\n".join(rows)}


def test_debian_dropin_wording(tmp_path: Path) -> None:
    cfg = sp.load(_read, _glob, _write(tmp_path, CASES["debian-dropins"]))
    lost = {f"{Path(d.file).name}:{d.line}": why
            for d, why in shadowed.overridden(cfg, "PermitRootLogin")}
    assert set(lost) == {"60-site.conf:1", "sshd_config:2"}
    assert "(50-cloud-init.conf sorts before 60-site.conf in the Include glob)" in \
        lost["60-site.conf:1"]
    assert lost["sshd_config:2"].endswith(
        "is read first (its file is included at "
        f"{str(tmp_path).lstrip('/')}/sshd_config:1, before line 2): sshd keeps the first "
        "value of PermitRootLogin it reads")
    ev = shadowed.evidence(shadowed.overridden(cfg, "PermitRootLogin"))
    assert ev[0].value.startswith("PermitRootLogin prohibit-password (overridden: ")
    # accumulating keywords and defaults lose nothing
    assert shadowed.overridden(cfg, "Port") == []
    assert shadowed.overridden(cfg, "PasswordAuthentication") == []


@pytest.mark.oracle
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("kw", sorted(OTHER))
def test_overridden_lines_do_not_matter_to_sshd(tmp_path: Path, case: str, kw: str,
                                                hostkey: str) -> None:
    files = CASES[case]
    root = tmp_path / "base"
    cfg = sp.load(_read, _glob, _write(root, files))
    lost = shadowed.overridden(cfg, kw)
    win = cfg.value(kw).directive
    assert lost and win is not None
    rc, base, err = sshd_T(str(root / "sshd_config"), hostkey)
    assert rc == 0, err
    assert base[kw.lower()] == [cfg.value(kw).value.replace("prohibit-password",
                                                            "without-password")]
    for n, (d, _why) in enumerate(lost):
        m = tmp_path / f"lost{n}"
        rc, got, err = sshd_T(_write(m, _edit(files, root, d, kw)), hostkey)
        assert rc == 0 and got[kw.lower()] == base[kw.lower()], (d, err)
    m = tmp_path / "winner"
    rc, got, err = sshd_T(_write(m, _edit(files, root, win, kw)), hostkey)
    assert rc == 0 and got[kw.lower()] != base[kw.lower()], err



@pytest.fixture(scope="module")
def hostkey(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A throw-away ed25519 host key for ``sshd -h``."""
    require_sshd()
    key = tmp_path_factory.mktemp("hostkey") / "hk"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, capture_output=True)
    return str(key)


def test_failing_result_names_overridden_lines(make_root) -> None:
    from tests.helpers import run_check

    root = make_root({
        "/etc/ssh/sshd_config": "Include /etc/ssh/sshd_config.d/*.conf\nPermitRootLogin no\n",
        "/etc/ssh/sshd_config.d/50-cloud-init.conf": "PermitRootLogin yes\n"})
    [r] = run_check("ssh.sshd_option", root, {"keyword": "PermitRootLogin", "op": "eq",
                                              "value": "no"})
    assert str(r.status) == "fail"
    assert [e.source for e in r.evidence] == ["etc/ssh/sshd_config.d/50-cloud-init.conf:1",
                                              "etc/ssh/sshd_config:2"]
    assert r.evidence[1].value.startswith("PermitRootLogin no (overridden: 'PermitRootLogin "
                                          "yes' at etc/ssh/sshd_config.d/50-cloud-init.conf:1 "
                                          "is read first (its file is included at "
                                          "etc/ssh/sshd_config:1, before line 2)")
    assert r.data["overridden"][0]["source"] == "etc/ssh/sshd_config:2"
    # the fix writes where it wins: a drop-in sorting before 50-cloud-init.conf
    [snip] = [s for s in r.remediation.snippets if s.path]
    assert snip.path == "/etc/ssh/sshd_config.d/00-aiaudit.conf"
