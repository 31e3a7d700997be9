"""aiaudit: a read-only audit scanner for Linux hosts that train deep-learning models."""

__version__ = "0.1.0"

# aiaudit's own modules are found and loaded from the layout, not searched for (see
# aiaudit.core.startup.imports: about 3% of a scan)
from aiaudit.core.startup import imports as _imports

_imports.install()
