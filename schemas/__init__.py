"""JSON Schemas, installed as the ``aiaudit.schemas`` package data."""
