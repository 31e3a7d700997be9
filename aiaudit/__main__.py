"""``python -m aiaudit``."""

from aiaudit.cli import run

run()
