"""looper: a learned polyhedral autoscheduler for loop-nest programs.

    import looper
    k = looper.optimize("gemm.py", size="LARGE")   # or a C file with #pragma scop, or source text
    f = k.compile()                                # call it on NumPy arrays

`looper.api` holds the details; it (and everything heavy) is imported on first use, so
`import looper` stays cheap.
"""

__version__ = "0.1.0"


def optimize(program, size=None, **options):
    """Optimize a program: see `looper.api.optimize` (options mirror `looper optimize`)."""
    from .api import optimize as _optimize
    return _optimize(program, size, **options)


def load(program, size=None, **options):
    """Parse a program without searching: a `Program` (Python) or a `CFile` (C, one per scop)."""
    from .api import load_programs
    return load_programs(program, size, **options)


__all__ = ["optimize", "load", "__version__"]
