"""The instrumentation backend's host side: decoding the per-CTA profile buffers that Triton's
proton passes make a kernel write (`decode`)."""
