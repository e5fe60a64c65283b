"""The backend of a process without a usable GPU: CPU scopes and metrics, no kernels."""
from __future__ import annotations

from .base import Backend


class CpuOnlyBackend(Backend):
    """Used where no GPU is found: no kernels, CPU scopes and metrics only."""

    name = "cpu"
    records_kernels = False
