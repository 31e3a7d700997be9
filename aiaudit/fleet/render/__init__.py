"""Renderers of a :class:`~aiaudit.fleet.model.Fleet`: pure functions
``(fleet, fail_on, max_failing_nodes, **options) -> str``."""

from __future__ import annotations

from typing import Any, Callable

from aiaudit.fleet.model import Fleet


def _text(fleet: Fleet, fail_on: str, max_failing: int, **options: Any) -> str:
    from aiaudit.fleet.render.text import render

    return render(fleet, fail_on, max_failing, top=options.get("top", 20))


def _json(fleet: Fleet, fail_on: str, max_failing: int, **options: Any) -> str:
    from aiaudit.fleet.render.json import render

    return render(fleet, fail_on, max_failing)


def _html(fleet: Fleet, fail_on: str, max_failing: int, **options: Any) -> str:
    from aiaudit.fleet.render.html import render

    return render(fleet, fail_on, max_failing)


def _prometheus(fleet: Fleet, fail_on: str, max_failing: int, **options: Any) -> str:
    from aiaudit.fleet.render.prometheus import render

    return render(fleet, fail_on, max_failing)


RENDERERS: dict[str, Callable[..., str]] = {
    "text": _text, "json": _json, "html": _html, "prometheus": _prometheus}
"""Output format name -> renderer (imported only when used)."""
