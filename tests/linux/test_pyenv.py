"""torch/version.py literals and dist-info names, without importing anything."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux import pyenv

MODERN = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.3.0+cu121'
debug = False
cuda: Optional[str] = '12.1'
git_version = '97ff6cfd9c86c5c09d7ce775ab64ec5c99230f5d'
hip: Optional[str] = None
"""


def test_modern_cuda_build() -> None:
    tb = pyenv.parse_torch_version(MODERN)
    assert (tb.version, tb.cuda, tb.hip, tb.kind) == ("2.3.0+cu121", "12.1", None, "cuda")


def test_old_style_and_rocm_and_cpu() -> None:
    old = "__version__ = '1.8.1+cu102'\ndebug = False\ncuda = '10.2'\ngit_version = 'x'\n"
    assert pyenv.parse_torch_version(old).cuda == "10.2"
    rocm = MODERN.replace("'12.1'", "None").replace("hip: Optional[str] = None",
                                                    "hip: Optional[str] = '6.0.32830-d62f6a1'")
    assert pyenv.parse_torch_version(rocm).kind == "rocm"
    cpu = MODERN.replace("'12.1'", "None")
    assert pyenv.parse_torch_version(cpu).kind == "cpu"


def test_code_is_never_run(tmp_path) -> None:
    marker = tmp_path / "ran"
    evil = (f"import os\nos.system('touch {marker}')\n__version__ = '2.0'\n"
            f"cuda = open('{marker}', 'w').write('x') or '12.1'\n")
    tb = pyenv.parse_torch_version(evil)
    assert tb.cuda is None  # a call is not a literal
    assert not marker.exists()
    with pytest.raises(ParseError):
        pyenv.parse_torch_version("cuda = '12.1'\n")  # no __version__
    with pytest.raises(ParseError):
        pyenv.parse_torch_version("def (:\n")


def test_dist_info_names() -> None:
    assert pyenv.dist_info("nvidia_cuda_runtime_cu12-12.1.105.dist-info") == (
        "nvidia-cuda-runtime-cu12", "12.1.105")
    assert pyenv.dist_info("torch-2.3.0+cu121.dist-info") == ("torch", "2.3.0+cu121")
    assert pyenv.dist_info("jax_cuda12_plugin-0.4.30.dist-info") == ("jax-cuda12-plugin",
                                                                      "0.4.30")
    assert pyenv.dist_info("README.txt") is None
    assert pyenv.cuda_major_of("nvidia-cublas-cu11") == 11
    assert pyenv.cuda_major_of("jax-cuda12-pjrt") == 12
    assert pyenv.cuda_major_of("torch") is None


@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    try:
        pyenv.parse_torch_version(text)
    except ParseError:
        pass
    pyenv.dist_info(text)
    pyenv.cuda_major_of(text)


def test_hostile_version_py_prints_no_warning() -> None:
    """ast.parse warns on odd literals (``1_a``); a scanned file must not reach stderr."""
    import subprocess
    import sys

    code = ("from aiaudit.linux import pyenv\n"
            "try:\n    pyenv.parse_torch_version('__version__ = 0x1for\\ncuda = 1if 2 else 3')\n"
            "except Exception:\n    pass\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr == "", out.stderr
