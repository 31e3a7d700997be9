"""NVLink fabric checks: Fabric Manager and each GPU's fabric registration."""
