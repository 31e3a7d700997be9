"""Built-in check plugins, one module per area; installed as ``aiaudit.checks``."""
