"""One home for a tuning run, after TVM's `auto_schedule(task, policy, options)`.

`tune(program, options, target)` runs dependences, the search, its confirmation, verification and
fallback, in that order (`tune.pipeline`); `TuneOptions` holds every choice of a run
(`tune.options`), `Target` the machine (`looper.target`).  The answers a run keeps (`records`,
`recording`), which record answers a program (`match`), applying a kept answer without searching
(`apply`), and one program tuned at several sizes written as one piece of code (`versions`).
`search/` keeps the algorithm (beam, policy, candidates, scores); this package puts it to work.
"""
from .options import Evaluator, HybridOptions, TuneOptions
from .pipeline import Answer, Search, prepare, tune, verify_options

__all__ = ["Answer", "Evaluator", "HybridOptions", "Search", "TuneOptions", "prepare", "tune", "verify_options"]
