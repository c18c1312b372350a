"""One place that turns options into a search: policy + evaluator(s), for the CLI, `looper bench`
and the benchmark scripts alike.

- "measure": every candidate built, checked and timed (`ExecutionEvaluator`);
- "model": the cost model predicts (`ModelEvaluator`), nothing is compiled;
- "hybrid": the model searches, then its `verify_top` best candidates are checked and timed
  together with the original, and the fastest wins (`search.hybrid`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..ir.program import Program
from ..poly.deps import Dependences, compute_dependences
from ..runtime.measurements import MeasurementStore
from ..runtime.ompenv import DEFAULT_ENV, OmpEnv
from .beam import SearchResult, beam_search
from .evaluators import ExecutionEvaluator, ModelEvaluator
from .confirm import confirm
from .hybrid import Verified, verify_top
from .policy import SearchPolicy, policy_for
from .proxy import Proxy, StandIn, carry, stand_in

EVALUATORS = ("model", "measure", "hybrid")


@dataclass
class Search:
    """A ready search: its policy, the evaluator that scores the beam, and (measure, hybrid) the
    measuring evaluator.  `run` returns the answer; `verified` holds hybrid's measured candidates."""

    program: Program
    kind: str
    policy: SearchPolicy
    evaluator: object
    measure: ExecutionEvaluator | None = None
    verify_top: int = 5
    verified: list[Verified] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the search did differently from what was asked
    # a measuring search's stand-in with fewer time steps or smaller sizes (`search.proxy`), and its evaluator
    stand_in: StandIn | None = None
    stand_in_measure: ExecutionEvaluator | None = None

    def run(self, deps: Dependences, progress: Callable[[str, int, int], None] | None = None,
            keep_open: bool = False) -> SearchResult:
        """The search's answer (`keep_open`: the measuring evaluator stays usable after it, for
        reports that time the answer again; `close()` it then)."""
        try:
            if self.stand_in is not None:
                found = beam_search(self.stand_in.program, compute_dependences(self.stand_in.program),
                                    self.stand_in_measure, self.policy, progress)
                result = carry(found, self.program, deps)
            else:
                result = beam_search(self.program, deps, self.evaluator, self.policy, progress)
            if self.kind == "measure" and self.policy.confirm_top > 1:
                result = confirm(self.program, result, self.measure, self.policy.confirm_top)
            if self.kind == "hybrid":
                result, self.verified = verify_top(self.program, result, self.verify_top, self.measure, deps,
                                                   regions=self.policy.regions)
            return result
        finally:
            if not keep_open:
                self.close()

    def close(self) -> None:
        for evaluator in (self.measure, self.stand_in_measure):
            if evaluator is not None:
                evaluator.close()


def never_runs(program: Program) -> str | None:
    """Why the cost model cannot describe a program with a statement that never runs at these
    sizes (`-D TSTEPS=0`, a loop whose range is empty): its features need every statement's loop
    bounds.  None when every statement runs."""
    idle = [s for s in program.statements if s.domain.is_empty()]
    if not idle:
        return None
    lines = ", ".join(str(s.line) for s in idle[:3]) + (", ..." if len(idle) > 3 else "")
    return (f"{'a statement' if len(idle) == 1 else f'{len(idle)} statements'} (line {lines}) never "
            f"run{'s' if len(idle) == 1 else ''} at these sizes, which the cost model cannot describe")


def search_from_options(program: Program, evaluator: str = "model", *, beam: int | None = None,
                        max_affine: int | None = None, max_fusion: int | None = None,
                        min_gain: float | None = None, time_budget: float | None = None,
                        structure_budget: float | None = None,
                        explain: bool = False, model=None, model_path: str | None = None,
                        repeats: int = 3, threads: int | None = None, store: MeasurementStore | None = None,
                        memoize: bool = True, verify_top: int = 5, omp_env: OmpEnv = DEFAULT_ENV,
                        progress: Callable[[int, int], None] | None = None,
                        proxy: Proxy | None = None) -> Search:
    """A search of `program` scored by `evaluator`, with the policy's defaults for that evaluator
    where an option is None.  `model` is a loaded (network, metadata) pair, else `model_path`
    (None: the shipped weights) is loaded.  `proxy`: a measuring search measures its
    candidates on a stand-in with fewer time steps or smaller sizes (`search.proxy`)."""
    if evaluator not in EVALUATORS:
        raise ValueError(f"unknown evaluator {evaluator!r} ({', '.join(EVALUATORS)})")
    notes = []
    if evaluator in ("model", "hybrid"):
        from ..costmodel.features import unencodable
        why = unencodable(program) or never_runs(program)
        if why is not None:
            notes.append(f"{why}: measuring instead of predicting")
            evaluator = "measure"
    measure = None
    if evaluator in ("measure", "hybrid"):
        measure = ExecutionEvaluator(program, repeats=repeats, threads=threads, store=store,
                                     memoize=memoize, progress=progress, omp_env=omp_env)
    meta = None
    made, proxy_measure = None, None
    if proxy is not None:
        made = stand_in(program, proxy) if evaluator == "measure" else "only a measuring search uses one"
        if isinstance(made, str):
            notes.append(f"no stand-in ({proxy.describe()}): {made}")
            made = None
        else:
            proxy_measure = ExecutionEvaluator(made.program, repeats=repeats, threads=threads, store=store,
                                               memoize=memoize, progress=progress, omp_env=omp_env)
            notes.append(f"candidates measured with {made.describe()}; the best replayed and timed again "
                         "at the program's sizes")
    if evaluator == "measure":
        scorer: object = measure
    else:
        if model is None:
            from ..costmodel.store import load_model
            model = load_model(model_path)
        net, meta = model
        scorer = ModelEvaluator(program, net, meta)
    policy = policy_for(evaluator, meta, beam=beam, max_affine=max_affine, max_fusion=max_fusion,
                        min_gain=min_gain, time_budget=time_budget, structure_budget=structure_budget,
                        explain=explain or None,
                        threads=measure.threads if measure is not None else threads)
    return Search(program, evaluator, policy, scorer, measure, verify_top, notes=notes, stand_in=made,
                  stand_in_measure=proxy_measure)
