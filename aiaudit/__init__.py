"""aiaudit: a read-only audit scanner for Linux hosts that train deep-learning models."""

__version__ = "0.1.0"
