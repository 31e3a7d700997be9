"""Python packages without importing them: ``torch/version.py`` literals and
``*.dist-info`` directory names.

``torch/version.py`` is generated at build time (``tools/generate_torch_version.py``):
``__version__ = '2.3.0+cu121'``, ``cuda: Optional[str] = '12.1'`` (older: ``cuda = '10.2'``),
``hip: Optional[str] = None``.  Only top-level assignments of literals are read (``ast``),
nothing is executed.  Dist-info names follow the wheel spec: ``{name}-{version}.dist-info``
with ``-`` in the name escaped to ``_``.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

from aiaudit.core.errors import ParseError
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

ENV_PARAMS: dict[str, Any] = {
    "python_envs": {"type": "array", "items": {"type": "string", "pattern": "^/"},
                    "default": [],
                    "description": "Python env prefixes or site-packages dirs to inspect "
                                   "(besides system, conda and venv locations)"},
    "venv_roots": {"type": "array", "items": {"type": "string", "pattern": "^/"},
                   "default": ["/opt/venvs", "/opt/venv"],
                   "description": "directories holding venvs (<root>/<name>/lib/python3*)"},
    "search_homes": {"type": "boolean", "default": True,
                     "description": "look for ~/miniconda3, ~/anaconda3, ~/miniforge3 of "
                                    "(at most 64) users under /home; turn off where /home "
                                    "is an automounter"},
}
"""The params of a rule that looks for Python environments (the CUDA and ROCm framework
checks): JSON Schema properties, with their defaults."""


def literal_assignments(text: str) -> dict[str, Any]:
    """``{name: value}`` for top-level ``name = <literal>`` and ``name: T = <literal>``
    statements; anything that is not a literal is left out."""
    try:
        with warnings.catch_warnings():  # a hostile file must not print to our stderr
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ParseError(f"not valid Python: {exc}") from None
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        try:
            out[target.id] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            continue
    return out


@record
class TorchBuild:
    """What a ``torch/version.py`` says."""

    version: str
    cuda: str | None
    hip: str | None

    @property
    def kind(self) -> str:
        """``cuda``, ``rocm`` or ``cpu``."""
        return "cuda" if self.cuda else "rocm" if self.hip else "cpu"


def parse_torch_version(text: str) -> TorchBuild:
    """Parse ``torch/version.py``."""
    vals = literal_assignments(text)
    version = vals.get("__version__")
    if not isinstance(version, str):
        raise ParseError("torch/version.py has no literal __version__")
    cuda, hip = vals.get("cuda"), vals.get("hip")
    return TorchBuild(version, cuda if isinstance(cuda, str) and cuda else None,
                      hip if isinstance(hip, str) and hip else None)


_DIST = lazy_pattern(r"^([A-Za-z0-9][A-Za-z0-9._]*?)-([^-/]+)\.dist-info$")
_CU = lazy_pattern(r"[-_]cu(\d{2})$")


def dist_info(dirname: str) -> tuple[str, str] | None:
    """``("nvidia-cuda-runtime-cu12", "12.1.105")`` for
    ``nvidia_cuda_runtime_cu12-12.1.105.dist-info`` (PEP 503-normalised name)."""
    m = _DIST().match(dirname)
    if not m:
        return None
    return re.sub(r"[-_.]+", "-", m.group(1)).lower(), m.group(2)


def cuda_major_of(name: str) -> int | None:
    """CUDA major a wheel is built for, from its name: ``nvidia-cublas-cu12`` -> 12,
    ``jax-cuda12-plugin`` -> 12; ``None`` otherwise."""
    m = _CU().search(name)
    if m:
        return int(m.group(1))
    m = re.match(r"^jax-cuda(\d{2})-(?:plugin|pjrt)$", name)
    return int(m.group(1)) if m else None
