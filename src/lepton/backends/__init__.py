"""The backends, one package or module each: `base` (the `Backend` template that all of them
follow), `cpu`, `cupti` (with instruction sampling in `cupti.pcsampling`) and `instrumentation`."""
