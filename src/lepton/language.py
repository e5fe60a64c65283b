"""Scopes inside kernels, as `triton.profiler.language`: `enter_scope`, `exit_scope`, `scope`,
`enable_semantic`, `disable_semantic`.

These are Triton's own: each scope becomes a record op of the proton dialect, emitted through
Triton's builder while an instrumentation session is active (`start(backend="instrumentation")`),
and nothing otherwise. Gluon kernels are instrumented by default; Triton-DSL kernels after
`enable_semantic("triton")`, as in Proton, because Triton's own rewrites (pipelining, reordering)
can move code across the records. A kernel written for `triton.profiler.language` is instrumented
by Lepton's backend as well: both read the same switch.
"""
from __future__ import annotations

try:
    from triton.profiler.language import disable_semantic, enable_semantic, enter_scope, exit_scope, scope
except ImportError as e:  # Triton absent, or without the proton dialect
    raise ImportError(f"lepton.language needs Triton 3.5 or later with its proton dialect: {e}") from None

__all__ = ["disable_semantic", "enable_semantic", "enter_scope", "exit_scope", "scope"]
