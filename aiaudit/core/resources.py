# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Package data (rulesets, schemas, check data tables), read from the installed files.

The data lives next to the modules of its package (``aiaudit/rulesets/*.yaml``,
``aiaudit/schemas/*.json``, ``aiaudit/checks/data/*``) in wheels and in editable installs
alike.  Plain paths keep ``importlib.resources`` (and the pathlib, tempfile and zipfile
machinery it imports, a noticeable share of start-up) off the scan path; aiaudit is not
meant to run from a zip archive.
"""

from __future__ import annotations

import importlib
import os


def directory(package: str) -> str:
    """Directory of an imported package (``aiaudit.rulesets``)."""
    mod = importlib.import_module(package)
    path: str | None = getattr(mod, "__file__", None)
    if path is None:  # namespace package
        return str(next(iter(mod.__path__)))
    return os.path.dirname(path)


def read_text(package: str, name: str) -> str:
    """UTF-8 text of data file ``name`` (may contain ``/``) of ``package``."""
    with open(os.path.join(directory(package), name), encoding="utf-8") as fh:
        return fh.read()


def read_bytes(package: str, name: str) -> bytes:
    """Bytes of data file ``name`` of ``package``."""
    with open(os.path.join(directory(package), name), "rb") as fh:
        return fh.read()


def exists(package: str, name: str) -> bool:
    """True if data file ``name`` of ``package`` exists."""
    return os.path.isfile(os.path.join(directory(package), name))


def names(package: str) -> list[str]:
    """File names in the package directory, sorted."""
    return sorted(os.listdir(directory(package)))
