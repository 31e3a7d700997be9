"""Clean hand-over between jobs: idle GPUs, device nodes, MIG state."""
