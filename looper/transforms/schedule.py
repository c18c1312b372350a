"""A schedule as the search sees it: a program plus an ordered sequence of transformations.

Lowering replays the sequence on the program's original schedule (`ir.schedule.original`); a
child built with `then` reuses its parent's lowered form, so a beam never replays a prefix twice.
"""
from __future__ import annotations

from dataclasses import replace

from ..ir.program import Program
from ..ir.schedule import Lowered, original
from .registry import Transform

REWRITTEN = "original loops, rewritten"  # how a `Schedule.rewrite` reads in reports and records


class Schedule:
    """A program plus an ordered sequence of transformations (what the search explores).

    Without steps it is the original, which runs as the user wrote it, unless it is `rewritten`:
    the original loops in looper's own code, which keeps an innermost loop's invariant elements in
    locals where the user's pointers keep gcc from it (`codegen.scalars`, `Lowered.written`).
    That is an answer of its own, judged like any other (`search.verify`,
    `search.budget.confirm_finalists`)."""

    # `_parts` and `_structure` are kept once computed, and a child built with `then` computes
    # them from its `_parent`'s: the budget names and groups thousands of candidates by them (3mm
    # MEDIUM: 4,000 descriptions in `budget.ranked`, each replaying its steps from the original)
    __slots__ = ("program", "steps", "_lowered", "rewritten", "_parts", "_structure", "_parent")

    def __init__(self, program: Program, steps: tuple = (), _lowered: Lowered | None = None,
                 rewritten: bool = False):
        self.program = program
        self.steps: tuple[Transform, ...] = tuple(steps)
        self._lowered = _lowered
        self.rewritten = rewritten and not self.steps
        self._parts: tuple[tuple[str, str], ...] | None = None
        self._structure: Schedule | None = None
        self._parent: Schedule | None = None  # the schedule `then` extended (its steps a prefix of these)

    @staticmethod
    def rewrite(program: Program) -> "Schedule":
        """The original loops, written in looper's code."""
        return Schedule(program, (), rewritten=True)

    @property
    def written(self) -> bool:
        """Whether looper writes its own code for this schedule (else the user's text stays)."""
        return bool(self.steps) or self.rewritten

    def then(self, *steps: Transform) -> "Schedule":
        """This schedule followed by `steps` (lowered incrementally from this one's form)."""
        L = self.lowered
        for t in steps:
            L = t.apply(L)
        child = Schedule(self.program, self.steps + tuple(steps), L)
        child._parent = self
        return child

    @property
    def lowered(self) -> Lowered:
        if self._lowered is None:
            L = original(self.program)
            if self.rewritten:
                L = replace(L, written=True)
            for t in self.steps:
                L = t.apply(L)
            self._lowered = L
        return self._lowered

    @property
    def key(self) -> str:
        """Identity of the sequence (the explored-set key, and the seed of datagen's sampling:
        it must stay the repr of the steps)."""
        return repr(self.steps)

    @property
    def identity(self) -> tuple:
        """Identity of the lowered schedule: equal for sequences that print the same C."""
        return self.lowered.identity

    def keeps_original_structure(self) -> bool:
        """Whether the sequence only refines the original loops (parallelizes, tiles, unrolls)."""
        return all(t.refines for t in self.steps)

    def structure(self) -> "Schedule":
        """The sequence without its refinements: the loop structure it builds.  A refinement that
        adds loops (a tile) stays when a structural step follows it, because that step names its
        loops by their rows in the tiled nest (a register tile inside cache tiles)."""
        if self._structure is None:
            p = self._parent
            # refinements added at the end leave the structure as it was: no structural step
            # follows them, and the last structural step is where it was
            if p is not None and all(t.refines for t in self.steps[len(p.steps):]):
                self._structure = p.structure()
            else:
                self._structure = self._structure_uncached()
        return self._structure

    def _structure_uncached(self) -> "Schedule":
        last = max((i for i, t in enumerate(self.steps) if not t.refines), default=-1)
        if last >= 0 and not any(t.refines for t in self.steps[:last]):  # a prefix: no replay
            return self._prefix(last + 1)
        stages = self._stages()
        kept, L = [], stages.get(0) or original(self.program)
        for i, t in enumerate(self.steps):
            after = stages.get(i + 1) or t.apply(L)
            if not t.refines or (i < last and _depths(after) != _depths(L)):
                kept.append(t)
            L = after
        return Schedule(self.program, tuple(kept))

    def _stages(self) -> dict[int, Lowered]:
        """The lowered forms it and its ancestors hold (`_parent`, whose steps are prefixes of
        these), by their number of steps: a replay of the steps need not lower them again."""
        out: dict[int, Lowered] = {}
        s: Schedule | None = self
        while s is not None:
            if s._lowered is not None and not s.rewritten:
                out[len(s.steps)] = s._lowered
            s = s._parent
        return out

    def _prefix(self, n: int) -> "Schedule":
        """The schedule of this one's first `n` steps: the ancestor `then` built it from, with
        what it has computed, when there is one."""
        s: Schedule | None = self
        while s is not None and len(s.steps) > n:
            s = s._parent
        return s if s is not None and len(s.steps) == n and s.steps == self.steps[:n] and not s.rewritten \
            else Schedule(self.program, self.steps[:n])

    def parts(self) -> tuple[tuple[str, str], ...]:
        """Each step's kind and its description (in terms of the loops it applies to)."""
        if self._parts is not None:
            return self._parts
        p = self._parent
        out, L = (list(p.parts()), p.lowered) if p is not None else ([], original(self.program))
        for t in self.steps[len(out):]:
            out.append((t.kind, t.describe(L)))
            L = t.apply(L)
        self._parts = tuple(out)
        return self._parts

    def describe(self, without: frozenset[str] | tuple[str, ...] = ()) -> str:
        """The sequence as text; `without`: kinds of steps left out of it (the rest still name
        their loops as the whole sequence builds them)."""
        if not self.steps:
            return REWRITTEN if self.rewritten else "original"
        return " ; ".join(text for kind, text in self.parts() if kind not in without)

    @property
    def from_isl(self) -> bool:
        """Whether the sequence starts from isl's scheduler's schedule (`islschedule`), rather
        than from a loop structure looper's own steps chose (or the original's)."""
        return bool(self.steps) and self.steps[0].kind == "islschedule"

    def to_json(self) -> list[dict]:
        return [t.to_json() for t in self.steps]

    @staticmethod
    def from_json(program: Program, data: list[dict]) -> "Schedule":
        return Schedule(program, tuple(Transform.from_json(d) for d in data))

    def __repr__(self) -> str:
        return f"Schedule({self.program.name}: {self.describe()})"


def _depths(L: Lowered) -> dict[str, int]:
    """How many schedule rows each statement has."""
    return {st: len(rows) for st, rows in L.rows.items()}
