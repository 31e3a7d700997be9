"""Shipped rulesets (YAML), installed as the ``aiaudit.rulesets`` package data."""
