"""`backend="instrumentation"`: scopes inside kernels, recorded by Triton's own compiler passes.

`hook` installs the passes (`passes`, with buffers sized by `sizing`) and hands each launch a scratch
buffer cut from the `arena`; `backend` queues the launches and reads their buffers, whose format is
`layout`'s, as per-scope sums on the GPU (`sums`, two Triton kernels in `sums_kernel`) or as every
interval on the host (`decode`);
`host_buffer` is Proton's debug copy of one launch's buffer."""
