"""TOML configuration files (``/etc/nvidia-container-runtime/config.toml``).

Read with the standard library's :mod:`tomllib` (Python >= 3.11) or its backport ``tomli``
(the same code, declared as a dependency for Python 3.10).  The NVIDIA Container Toolkit
reads the file with ``github.com/pelletier/go-toml``, which accepts the same TOML 1.0.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from aiaudit.core.errors import ParseError
from aiaudit.core.parsing import MAX_INT_DIGITS


def parse(text: str, source: str = "") -> dict[str, Any]:
    """The document as a dict; a syntax error is a :class:`ParseError` with its line."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)", source=source)
    # imported here: tomllib imports datetime, which a scan of a host without the NVIDIA
    # container toolkit does not need
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+), column (\d+)", str(exc))
        line = int(m.group(1)) if m else None
        raise ParseError(str(exc).split(" (at line")[0], line=line, source=source) from None
    except RecursionError:
        raise ParseError("nested too deeply", source=source) from None
    except ValueError:  # int() of 4,300 digits or more: the only other error tomllib lets out
        m = re.search(rf"[0-9_]{{{MAX_INT_DIGITS + 1},}}", text)
        line = text.count("\n", 0, m.start()) + 1 if m else None
        raise ParseError(f"a number of more than {MAX_INT_DIGITS} digits", line=line,
                         source=source) from None
