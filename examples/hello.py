"""A first profile: scopes and metrics (kernels too, on a machine with an NVIDIA GPU and torch)."""
import time

try:
    import torch
    has_gpu = torch.cuda.is_available()
except ImportError:
    has_gpu = False

import lepton as proton

with proton.cpu_timed_scope("setup", {"bytes": 4096}):
    x = torch.randn(1 << 20, device="cuda") if has_gpu else None
    time.sleep(0.01)
for step in range(3):
    with proton.cpu_timed_scope("step"):
        if has_gpu:
            y = x * 2 + 1
        else:
            time.sleep(0.001)
print("hello from a profiled script")
