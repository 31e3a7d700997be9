"""``SshdConfig.with_file``: the configuration with one more (or a replaced) file, reusing
what was read, split and validated, is the configuration that loading it all afresh gives:
same verdict, same error, same values for every connection class, on the generated corpus."""

from __future__ import annotations

from typing import Sequence

import pytest

from aiaudit.core.errors import ParseError
from aiaudit.linux.sshd import config as sp
from tests.linux.sshd.sshd_corpus import Gen

BASE = "/b"
TEXTS = ("PermitRootLogin no\n", "X11Forwarding no\nPasswordAuthentication yes\n",
         "AuthenticationMethods any\n", "AuthenticationMethods publickey\n",
         "PubkeyAuthentication no\n", "Subsystem sftp /usr/lib/sftp\n",
         "PasswordAuthentication maybe\n", "Bogus yes\n", "Match User x\nMaxAuthTries 9\n")


def _fs(files: dict[str, str]) -> tuple[sp.Reader, sp.Globber]:
    def read(path: str) -> str:
        return files[path]

    def glob(pattern: str) -> Sequence[str]:
        return sorted((p for p in files if sp.glob_matches(pattern, p)),
                      key=lambda p: p.encode())

    return read, glob


def _view(cfg: sp.SshdConfig) -> object:
    """Everything a check can see of a configuration."""
    eff = {None: list(cfg.effective().items())}
    for b in dict.fromkeys(cfg.blocks):
        try:
            eff[b] = list(cfg.effective(lambda x, b=b: x == b).items())
        except ParseError as exc:
            eff[b] = str(exc)
    return cfg.files, cfg.blocks, cfg.includes, eff


def _fresh(files: dict[str, str]) -> object:
    try:
        return _view(sp.load(*_fs(files), f"{BASE}/sshd_config"))
    except ParseError as exc:
        return str(exc)


@pytest.mark.parametrize("chunk", range(4))
def test_with_file_is_loading_afresh(chunk: int) -> None:
    checked = 0
    for seed in range(chunk * 40, chunk * 40 + 40):
        case = Gen(seed, BASE).build()
        files = {f"{BASE}/{rel}": text for rel, text in case.files.items()}
        try:
            cfg = sp.load(*_fs(files), f"{BASE}/sshd_config")
        except ParseError:
            continue
        _view(cfg)  # passes first: their validated lines are what with_file reuses
        paths = [f"{BASE}/sshd_config.d/00-aiaudit.conf",
                 *(p for p in files if "/sshd_config.d/" in p)][:3]
        for path in paths:
            for text in TEXTS:
                try:
                    got: object = _view(cfg.with_file(path, text))
                except ParseError as exc:
                    got = str(exc)
                assert got == _fresh({**files, path: text}), (seed, path, text)
                checked += 1
    assert checked > 200
