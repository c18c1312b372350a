"""looper: a learned polyhedral autoscheduler for loop-nest programs.

    import looper
    k = looper.optimize("gemm.py", size="LARGE")   # or a C file with #pragma scop, or source text
    f = k.compile()                                # call it on NumPy arrays
    looper.apply("records.jsonl", "gemm.c")        # a recorded answer, without searching

`looper.api` holds the details; it (and everything heavy) is imported on first use, so
`import looper` stays cheap.
"""

__version__ = "0.1.0"


def optimize(program, size=None, **options):
    """Optimize a program: see `looper.api.optimize` (options mirror `looper optimize`).
    `sizes=["MEDIUM", "LARGE"]`: one version per set of sizes, written as one region or function
    that dispatches on them (`looper.tune.versions`)."""
    if options.get("sizes") is not None:
        if size is not None:
            raise TypeError("optimize takes size or sizes, not both")
        from .tune.versions import optimize_sizes
        return optimize_sizes(program, options.pop("sizes"), **options)
    options.pop("sizes", None)
    from .api import optimize as _optimize
    return _optimize(program, size, **options)


def apply(records, program, size=None, **options):
    """Write a program with recorded answers instead of searching: see `looper.tune.apply.apply`
    (options mirror `looper apply`)."""
    from .tune.apply import apply as _apply
    return _apply(records, program, size, **options)


def load(program, size=None, **options):
    """Parse a program without searching: a `Program` (Python) or a `CFile` (C, one per scop)."""
    from .api import load_programs
    return load_programs(program, size, **options)


__all__ = ["optimize", "apply", "load", "__version__"]
