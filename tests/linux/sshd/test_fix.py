"""How an sshd setting is changed so that sshd takes it (:mod:`aiaudit.linux.sshd.fix`): each
proposal is re-evaluated, and the one proposed really wins."""

from __future__ import annotations

from aiaudit.core import edits
from aiaudit.linux.sshd import config as sp
from aiaudit.linux.sshd.fix import DROPIN, RELOAD, remediation

MAIN = sp.MAIN_CONFIG
DEBIAN_TOP = "Include /etc/ssh/sshd_config.d/*.conf\nX11Forwarding yes\n"


def _cfg(files: dict[str, str]) -> sp.SshdConfig:
    def read(path: str) -> str:
        if path in files:
            return files[path]
        raise FileNotFoundError(path)

    def glob(pattern: str) -> list[str]:
        return sorted(p for p in files if sp.glob_matches(pattern, p))

    return sp.load(read, glob)


def _no(s: sp.Setting) -> bool:
    return s.value == "no"


def test_dropin_when_it_wins() -> None:
    cfg = _cfg({MAIN: DEBIAN_TOP})
    rem = remediation(cfg, cfg.value("X11Forwarding"), "X11Forwarding no", _no)
    file, reload = rem.snippets
    assert (file.kind, file.path, file.content) == ("file", DROPIN, "X11Forwarding no\n")
    assert reload == RELOAD and not rem.manual
    assert "overrides etc/ssh/sshd_config:2" in rem.summary
    assert cfg.with_file(DROPIN, file.content).value("X11Forwarding").value == "no"


def test_main_file_edit_when_no_include() -> None:
    """Without an Include of sshd_config.d a drop-in is never read: the main file is edited
    in place, and the edited file gives the wanted value."""
    text = "X11Forwarding yes\nMatch User alice\n  PermitTTY no\n"
    cfg = _cfg({MAIN: text})
    rem = remediation(cfg, cfg.value("X11Forwarding"), "X11Forwarding no", _no)
    edit, reload = rem.snippets
    assert (edit.kind, edit.path) == ("edit", MAIN) and reload == RELOAD
    assert "no Include of" in rem.summary and not rem.manual
    fixed = _cfg({MAIN: edits.apply(edit.content, text)})
    assert fixed.value("X11Forwarding").value == "no"


def test_by_hand_when_a_match_all_block_decides() -> None:
    cfg = _cfg({MAIN: DEBIAN_TOP.replace("X11Forwarding yes\n", "") +
                "Match all\n  X11Forwarding yes\n"})
    rem = remediation(cfg, cfg.value("X11Forwarding"), "X11Forwarding no", _no)
    assert rem.snippets == (RELOAD,)
    assert "inside `Match all`" in rem.summary
    assert rem.manual == "Change etc/ssh/sshd_config:3 to `X11Forwarding no`."


def test_by_hand_when_an_earlier_dropin_decides() -> None:
    cfg = _cfg({MAIN: DEBIAN_TOP, "/etc/ssh/sshd_config.d/00-a.conf": "X11Forwarding yes\n"})
    rem = remediation(cfg, cfg.value("X11Forwarding"), "X11Forwarding no", _no)
    assert "00-a.conf:1 is read before it" in rem.summary and rem.manual
