"""``python -m aiaudit``."""

from aiaudit.cli import main

raise SystemExit(main())
