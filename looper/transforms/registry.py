"""The transformation registry: the one place that knows every transformation.

A transformation is one class.  It declares everything the rest of looper asks of it:

- `kind` (its name in JSON and reports) and `level` (when the search offers it: the levels run
  in `LEVELS` order, LOOPer's fusion -> affine -> parallel -> tile -> unroll);
- `touched()`: the statements it touches (their transformation history grows by one step);
- `apply(lowered)`: how it lowers, as a pure function from one `Lowered` to the next;
- `describe(lowered)`: its readable form (`interchange(i,k)`);
- `encoding()`: what the cost model sees of it (`Encoding`; `encoding_of(statement)` where it
  differs per statement; `feature_slot` is its position in the model's one-hot of kinds, every
  kind has one, fixed once a model is trained on it; `feature_flag` the per-computation history
  flag it sets);
- `check(deps, before, after, explain)`: its legality obligations, proved with isl
  (`poly.legality`); None when legal, else why not;
- `candidates(ctx)`: its candidate generator, a class method that yields instances (or short
  sequences of transformations, as tuples) for the schedule and loop in `ctx`;
- `enabler` (it only makes later steps legal: a model-guided answer drops it when no later step
  needs it, `search.simplify`), `refines` (it annotates loops without moving any: schedules
  differing only in such steps share a loop structure), `threads` (it starts or shapes a thread
  team: a search kept sequential drops it, `search.beam.without_threads`) and `mark` (it
  changes only how loops are printed, pragmas and unrolling: candidates differing only in such
  steps have one shape, `search.budget.shape`).

A transformation that only marks whole loops (a pragma: parallel, unroll, vector) builds on
`LoopMarks`, which holds the loops and says which statements they touch and how they read.

Fields are the dataclass fields: they are the JSON form, so a sequence replays on a fresh parse
(fields holding loops take plain tuples too and name them `LoopRef`/`BandRef` in `__post_init__`).

Recipe: adding a transformation
-------------------------------
1. Write the class in the module of its level (or a new module imported by
   `looper/transforms/__init__.py`), decorated with `@register`.  Example, a loop "peel" that
   does nothing to the schedule (the test `test_registry.py` registers exactly this)::

       @register
       @dataclass(frozen=True)
       class Noop(Transform):
           loop: LoopRef
           kind: ClassVar[str] = "noop"
           level: ClassVar[str] = "unroll"
           refines: ClassVar[bool] = True

           def touched(self):
               return frozenset(self.loop.statements)

           def apply(self, L):
               return L

           def describe(self, L):
               return f"noop({loop_label(L, *self.loop)})"

           def encoding(self):
               return Encoding(rows=(self.loop.row,))

           def check(self, deps, before, after, explain=False):
               return None

           @classmethod
           def candidates(cls, ctx):
               for loop in ctx.tree.loops():
                   yield cls(loop.ref)

2. Give it the next `feature_slot` (every kind has one: `tests/transforms/test_registry.py`):
   that widens the model's input, so raise `costmodel.features.KIND_SLOTS`, bump
   `FEATURE_VERSION`, describe the old layout in `costmodel.migrate` and retrain.
3. Test its `apply` at the row level, its JSON round trip, its candidates, and a differential run
   (transformed against original outputs) in `tests/`.
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, ClassVar, Iterable, Iterator

from ..ir.looptree import LoopNode, LoopTree

from ..ir.schedule import loop_label
from ..ir.rows import BandRef, LoopRef
from ..ir.schedule import Lowered

if TYPE_CHECKING:
    from ..poly.deps import Dependences
    from ..target import Target


@dataclass(frozen=True)
class Level:
    """A search level.  `per_loop`: its generators run loop by loop, interleaved (every
    generator for the first loop, then for the next), instead of once each over the tree."""

    name: str
    per_loop: bool = False


LEVELS: tuple[Level, ...] = (Level("fusion"), Level("affine", per_loop=True), Level("parallel"),
                             Level("tile"), Level("pack"), Level("register"), Level("unroll"))
LEVEL_NAMES = tuple(l.name for l in LEVELS)


@dataclass(frozen=True)
class Encoding:
    """What a cost model sees of one transformation (besides its kind): the schedule rows it
    acts on, a skew matrix, tile sizes, an unroll factor, shifts, a fusion depth, a cut count,
    the elements of one vector (a register tile's) and a categorical option of its kind (isl's
    scheduler variant).  What a step does to the program beyond its history (a pack's copy, a
    micro-kernel, vector loops, one parallel region) the features read from the lowered schedule."""

    rows: tuple[int, ...] = ()
    matrix: tuple[tuple[int, ...], ...] = ()
    sizes: tuple[int, ...] = ()
    factor: int = 0
    shifts: tuple[int, ...] = ()
    depth: int = 0
    cuts: int = 0
    lanes: int = 0
    option: int = 0


@dataclass(frozen=True)
class CandidateContext:
    """What a candidate generator reads: the schedule, its dependences, the machine it is for
    and, at a per-loop level, the loop to propose for."""

    lowered: Lowered
    deps: "Dependences"
    # the machine the schedule is for: cache tiles are sized to its caches, register tiles to
    # its vectors, and tiles that split a parallel loop evenly to its threads
    target: "Target"
    loop: LoopNode | None = None
    # the grown search space (register tiles, rectangular and cache-sized tiles, ...): the
    # shipped cost model was trained on the first one, so a model-guided search stays there
    grown: bool = False

    @property
    def thread_count(self) -> int:
        return self.target.threads

    @property
    def tree(self) -> LoopTree:
        return self.lowered.tree

    def at(self, loop: LoopNode) -> "CandidateContext":
        return CandidateContext(self.lowered, self.deps, self.target, loop, self.grown)


class Transform:
    """Base of every transformation (see the module docstring for what a subclass declares)."""

    kind: ClassVar[str] = ""
    level: ClassVar[str] = ""
    feature_slot: ClassVar[int | None] = None
    feature_flag: ClassVar[str | None] = None
    enabler: ClassVar[bool] = False
    refines: ClassVar[bool] = False
    threads: ClassVar[bool] = False
    mark: ClassVar[bool] = False

    def touched(self) -> frozenset[str]:
        raise NotImplementedError

    def apply(self, L: Lowered) -> Lowered:
        raise NotImplementedError

    def describe(self, L: Lowered) -> str:
        raise NotImplementedError

    def encoding(self) -> Encoding:
        raise NotImplementedError

    def encoding_of(self, statement: str) -> Encoding:
        """The encoding in `statement`'s history: the same for every statement it touches,
        unless the step does something different to each (a register tile's blocks)."""
        return self.encoding()

    def check(self, deps: "Dependences", before: Lowered, after: Lowered, explain: bool = False) -> str | None:
        raise NotImplementedError

    def sequential(self) -> "Transform":
        """This step for a search kept sequential (`search.beam.without_threads`): itself,
        unless it starts a thread team on the side (a pack's parallel copy)."""
        return self

    @classmethod
    def candidates(cls, ctx: CandidateContext) -> Iterable["Transform | tuple[Transform, ...]"]:
        return ()

    @classmethod
    def ahead(cls, lowered: Lowered, grown: bool) -> None:
        """Start, in the background, slow work `candidates` will need on `lowered` (default:
        none); `abandon` stops what was not asked for."""

    @classmethod
    def abandon(cls) -> None:
        """Stop the background work `ahead` started and `candidates` did not collect."""

    def to_json(self) -> dict:
        out: dict = {"kind": self.kind}
        for f in fields(self):  # type: ignore[arg-type]
            out[f.name] = _jsonable(getattr(self, f.name))
        return out

    @staticmethod
    def from_json(d: dict) -> "Transform":
        cls = TRANSFORMS.by_kind(d["kind"])
        return cls(**{k: _tupled(v) for k, v in d.items() if k != "kind"})


Candidate = tuple[Transform, ...]  # one step, or a short sequence offered as one candidate


def loop_refs(loops) -> tuple[LoopRef, ...]:
    """Loops given as plain (statements, row) pairs (JSON, tests), named `LoopRef`s."""
    return tuple(LoopRef(tuple(s), r) for s, r in loops)


@dataclass(frozen=True)
class LoopMarks(Transform):
    """Base of the transformations that mark whole loops without moving any (OpenMP parallel,
    unroll, vector pragmas): the loops, named; the statements they touch; their labels."""

    loops: tuple[LoopRef, ...]
    refines: ClassVar[bool] = True

    def __post_init__(self):  # accept plain tuples (JSON, tests): name them
        object.__setattr__(self, "loops", loop_refs(self.loops))

    def touched(self) -> frozenset[str]:
        return frozenset(s for loop in self.loops for s in loop.statements)

    def marks(self) -> frozenset[tuple[str, int]]:
        """(statement, row) of every statement in every marked loop."""
        return frozenset((s, row) for stmts, row in self.loops for s in stmts)

    def labels(self, L: Lowered) -> str:
        return ",".join(loop_label(L, st, r) for st, r in self.loops)

    @staticmethod
    def not_innermost(L: Lowered, ref: LoopRef) -> str | None:
        """Why the loop `ref` is missing from `L` or not innermost there, or None."""
        loop = L.tree.find(ref.row, ref.statements)
        return None if loop is not None and loop.is_innermost else f"loop at row {ref.row} is not an innermost loop"


def band_refs(bands) -> tuple[BandRef, ...]:
    """Bands given as plain (statements, rows, sizes) triples, named `BandRef`s."""
    return tuple(BandRef(tuple(s), tuple(r), tuple(z)) for s, r, z in bands)


def _jsonable(v):
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v


def _tupled(v):
    if isinstance(v, list):
        return tuple(_tupled(x) for x in v)
    return v


class Registry:
    """Transformation classes by kind, in registration order (which is candidate order)."""

    def __init__(self) -> None:
        self._classes: dict[str, type[Transform]] = {}

    def register(self, cls: type[Transform]) -> type[Transform]:
        """Add a transformation class (usable as a class decorator)."""
        if cls.level not in LEVEL_NAMES:
            raise ValueError(f"{cls.__name__}: unknown level {cls.level!r} (levels: {', '.join(LEVEL_NAMES)})")
        if cls.kind in self._classes and self._classes[cls.kind] is not cls:
            raise ValueError(f"a transformation of kind {cls.kind!r} is already registered")
        self._classes[cls.kind] = cls
        return cls

    @contextlib.contextmanager
    def scoped(self) -> Iterator["Registry"]:
        """Registrations made inside the block are undone after it (tests)."""
        saved = dict(self._classes)
        try:
            yield self
        finally:
            self._classes = saved

    def by_kind(self, kind: str) -> type[Transform]:
        try:
            return self._classes[kind]
        except KeyError:
            raise ValueError(f"unknown transformation kind {kind!r}") from None

    def kinds(self) -> list[str]:
        return list(self._classes)

    def at_level(self, level: str) -> list[type[Transform]]:
        return [c for c in self._classes.values() if c.level == level]

    def generate(self, level: str, lowered: Lowered, deps: "Dependences", target: "Target",
                 grown: bool = False) -> list[Candidate]:
        """Every candidate the level's transformations propose for `lowered`, each once, in
        registration order (loop by loop at a per-loop level)."""
        spec = next(l for l in LEVELS if l.name == level)
        ctx = CandidateContext(lowered, deps.of(lowered.program), target, grown=grown)
        classes = self.at_level(level)
        where = [ctx.at(loop) for loop in ctx.tree.loops()] if spec.per_loop else [ctx]
        out: list[Candidate] = []
        seen: set = set()
        for here in where:
            for cls in classes:
                for c in _guarded(cls, here):
                    cand = c if isinstance(c, tuple) else (c,)
                    if cand not in seen:
                        seen.add(cand)
                        out.append(cand)
        return out


    def start_ahead(self, lowered: Lowered, grown: bool = False) -> None:
        """Every transformation's background work on `lowered` started now, for a search that asks
        for its candidates later (a model search's first level, while the model loads); `abandon`
        stops what it never asked for."""
        for cls in self._classes.values():
            cls.ahead(lowered, grown)

    def abandon(self) -> None:
        """Every transformation's background work that no search collected stopped (a search's end)."""
        for cls in self._classes.values():
            cls.abandon()

    @contextlib.contextmanager
    def ahead(self, level: str, schedules: list[Lowered], grown: bool = False) -> Iterator[None]:
        """The level's background work on every one of `schedules` started before any of their
        candidates are generated (`Transform.ahead`), and stopped when the block ends."""
        classes = self.at_level(level)
        try:
            for cls in classes:
                for lowered in schedules:
                    cls.ahead(lowered, grown)
            yield
        finally:
            for cls in classes:
                cls.abandon()


class GeneratorFailed(RuntimeWarning):
    """A transformation's candidate generator raised: a bug in looper.  The search goes on
    without that generator's remaining candidates there (a user's search is not lost to one
    generator); the test suite turns this warning into an error."""


def _guarded(cls: type[Transform], ctx: CandidateContext) -> Iterator:
    """`cls`'s candidates in `ctx`, up to the first exception of its generator, which is warned."""
    try:
        yield from cls.candidates(ctx)
    except Exception as e:  # noqa: BLE001 - any bug of one generator
        warnings.warn(f"looper: internal error in the {cls.kind} generator, skipped here "
                      f"({type(e).__name__}: {e}); please report it", GeneratorFailed, stacklevel=2)


TRANSFORMS = Registry()
register = TRANSFORMS.register
