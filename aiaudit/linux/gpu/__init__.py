"""The NVIDIA GPU stack: driver, nvidia-smi, CUDA toolkit and frameworks."""
