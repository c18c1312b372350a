"""What a C program runs right before its kernel's timer starts (`ir.program.Preamble`).

looper knows one such preamble: PolyBench's.  Built with -DPOLYBENCH_TIME (or
-DPOLYBENCH_GFLOPS), `polybench_start_instruments` is `polybench_timer_start()`, which flushes
the caches (`polybench_flush_cache`: a zeroed buffer of POLYBENCH_CACHE_SIZE_KB KiB read in an
OpenMP loop) unless -DPOLYBENCH_NO_FLUSH_CACHE.  Without those flags the macro is empty and the
program's kernel runs straight after its init, which is what the harness does anyway.
"""
from __future__ import annotations

from ...ir.program import Preamble
from .preprocess import Preprocessed

# the calls of PolyBench's harness that flush before the timer starts
FLUSHING_CALLS = frozenset({"polybench_timer_start", "polybench_prepare_instruments"})
POLYBENCH_CACHE_SIZE_KB = 32770  # polybench.c's default


def preamble(pp: Preprocessed) -> Preamble | None:
    """The preamble of the preprocessed program `pp` (None: none looper models).  Its macros
    come from the user's flags, which reach polybench.c the same way (POLYBENCH_NO_FLUSH_CACHE,
    POLYBENCH_CACHE_SIZE_KB given with -D)."""
    macros = pp.macros
    if not pp.calls & FLUSHING_CALLS or "POLYBENCH_NO_FLUSH_CACHE" in macros:
        return None
    try:
        kib = int(macros.get("POLYBENCH_CACHE_SIZE_KB", POLYBENCH_CACHE_SIZE_KB))
    except ValueError:  # an expression: the flush's size as polybench.c would compute it is unknown
        kib = POLYBENCH_CACHE_SIZE_KB
    return Preamble(kib) if kib > 0 else None
