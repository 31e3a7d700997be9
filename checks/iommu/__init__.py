"""Checks ``iommu.<name>``, one module each: ``checks/iommu/<name>.py``."""
