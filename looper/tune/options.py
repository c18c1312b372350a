"""What a tuning run is asked to do, as one frozen value (`TuneOptions`).

The command line (`looper optimize`, `looper bench`), the Python API and the benchmark scripts
build one and hand it to `tune` with the target; nothing else carries search options around.
"""
from __future__ import annotations

import enum
import os
import shutil
from dataclasses import dataclass, field, replace

from ..runtime.ompenv import DEFAULT_ENV, OmpEnv
from ..runtime.run import AS_RUN, Protocol
from ..search.proxy import Proxy


class Evaluator(str, enum.Enum):
    """What scores the search's candidates.

    - `hybrid` (the default where a compiler is present): the whole search space ranked by the
      cost model and the analytic cost terms, a small budget of candidates measured as users run
      programs, the best confirmed (`search.budget`);
    - `model`: the cost model alone; nothing is compiled during the search (tuning for a machine
      other than this one, `--target`; the default where no compiler is);
    - `measure`: every candidate built, checked and timed (minutes per kernel: a ceiling to
      compare the default with, not the default)."""

    MODEL = "model"
    MEASURE = "measure"
    HYBRID = "hybrid"

    @property
    def measures(self) -> bool:
        """Whether candidates are compiled and timed during the search."""
        return self is not Evaluator.MODEL

    @property
    def predicts(self) -> bool:
        """Whether the cost model scores candidates."""
        return self is not Evaluator.MEASURE

    @staticmethod
    def default(cc: str = "gcc") -> "Evaluator":
        """`$LOOPER_EVALUATOR` when set, else `hybrid` where the compiler is installed, else
        `model` (which compiles nothing)."""
        chosen = os.environ.get("LOOPER_EVALUATOR")
        if chosen:
            return Evaluator.parse(chosen)
        return Evaluator.HYBRID if shutil.which(cc) else Evaluator.MODEL

    @staticmethod
    def parse(text: "str | Evaluator") -> "Evaluator":
        from ..errors import LooperUsageError
        try:
            return Evaluator(text)
        except ValueError:
            raise LooperUsageError(f"unknown evaluator '{text}' (use {', '.join(e.value for e in Evaluator)})") from None


@dataclass(frozen=True)
class HybridOptions:
    """The default search's measurement budget: `rounds` rounds of `per_round` candidates measured
    (the first chosen to cover loop structures and refinement families, the second after a fit of
    the estimates to what the first measured, the last among the relatives of the fastest), then
    the `confirm` best judged against the original as users run them.  `follow`: rounds added,
    each only while the round before found a new fastest loop structure (or one run anew on
    threads), for its refinements."""

    rounds: int = 3
    per_round: int = 8
    confirm: int = 3
    follow: int = 2


@dataclass(frozen=True)
class TuneOptions:
    """Every choice of one tuning run besides the program and the target (None: the default)."""

    evaluator: Evaluator = field(default_factory=Evaluator.default)
    beam: int | None = None
    max_affine: int | None = None
    max_fusion: int | None = None
    explain: bool = False
    budget: float | None = None  # seconds for the whole search (`--budget`)
    structure_budget: float | None = None  # seconds for the levels that choose loop structure
    repeats: int | None = None  # samples per measured candidate (None: the protocol's)
    omp_env: OmpEnv = DEFAULT_ENV  # what every run adds to the user's environment
    protocol: Protocol = AS_RUN  # how runs are timed
    memo: bool = True  # measurements kept in (and answered from) the SQLite memo
    db: str | None = None  # that memo's path (None: looper's cache)
    proxy: Proxy | None = None  # a measuring search ranks on a smaller stand-in
    model: str | None = None  # cost model weights (None: the shipped ones)
    hybrid: HybridOptions = field(default_factory=HybridOptions)
    verify: bool = True  # the answer checked at a small size before it is written
    speed_guard: bool = True  # a model answer timed against the original before it is written
    max_alternatives: int = 5  # candidates tried after a refused answer, before the original
    max_timed: int = 3  # candidates the speed guard times before it settles for the original
    report_environment: bool = False  # also time the answer in the other OpenMP environment
    # where the judgements that decide what is written time their runs, for a C file's scop:
    # "program", the user's own program (`runtime.userprogram`), or "harness", looper's
    judge_in: str = "program"
    link: tuple[str, ...] = ()  # that program's other sources, objects and libraries (`--link`)

    def with_(self, **changes) -> "TuneOptions":
        """A copy with some fields changed."""
        return replace(self, **changes)
