"""Container runtimes: Docker, the NVIDIA Container Toolkit, Apptainer, rootless podman."""
