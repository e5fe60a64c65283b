"""Instruction sampling (`mode="pcsampling"`) on CUPTI's PC sampling API: the backend (`backend`),
the drain thread (`drain`), the sample buffers' layout (`layout`) and decoder (`decode`), samples
attributed to call paths (`attribute`), and the SASS of sampled kernels (`cubin`, `sass`)."""
