"""The beam's choice of survivors (search.beam.select)."""
from __future__ import annotations

from helpers import TARGET
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.runtime.builder import ProgramBuilder
from looper.search.beam import beam_search
from looper.search.scoring import Score
from looper.search.policy import SearchPolicy
from looper.transforms.schedule import Schedule

from conftest import kernel_path


class Scripted:
    """LARGE cholesky's measured speedups (0.66 s original): a fusion 1.5% faster, isl's
    schedule 9% slower until parallelized; anything printing the original's C scores as the
    original (the measurement memo is keyed by the C), the rest 0.5."""

    name = "scripted"

    def __init__(self, program):
        self.original = ProgramBuilder.code(Schedule(program).lowered)
        self.asked: list[str] = []

    def evaluate(self, program, schedules):
        out = []
        for s in schedules:
            d = s.describe()
            self.asked.append(d)
            if not s.steps or ProgramBuilder.code(s.lowered) == self.original:
                out.append(Score(1.0))
            elif len(s.steps) == 1 and d.startswith("fuse("):
                out.append(Score(1.015))
            elif d.startswith("islschedule(outer-parallel)"):
                out.append(Score(0.915 if "parallelize" not in d else 5.0))
            else:
                out.append(Score(0.5))
        return out


def test_two_schedules_printing_the_same_c_take_one_place_in_the_beam():
    """cholesky's fuse then distribute gives back the original's loops with other ordering
    constants: it scored as the original and took the beam's third place from isl's schedule,
    whose parallel form was never scored (LARGE: 1.00x of gcc instead of 5.8x)."""
    p = parse_file(kernel_path("cholesky"), "MINI")
    ev = Scripted(p)
    result = beam_search(p, compute_dependences(p), ev, SearchPolicy(beam=3, grown=True, target=TARGET))
    same = [d for d in ev.asked if d.startswith("fuse(") and "distribute" in d]
    assert same, "the duplicate of the original is a candidate"
    assert any(d.startswith("islschedule(outer-parallel) ; parallelize") for d in ev.asked)
    assert result.best.describe().startswith("islschedule(outer-parallel)")


def test_a_stratified_sample_draws_every_kind_of_candidate_in_turn():
    """Grown-space data collection (`SearchPolicy.stratified`): a level of 40 cache tiles and 3
    register tiles sampled 4 ways gets a register tile, and the draw is the same on every rerun;
    a uniform draw of 4 from 43 misses all three register tiles most of the time."""
    import random
    from types import SimpleNamespace
    from looper.search.beam import sample, stratified
    tiles = [(SimpleNamespace(kind="tile", n=k),) for k in range(40)]
    registers = [(SimpleNamespace(kind="tile", n=99), SimpleNamespace(kind="register", n=k)) for k in range(3)]
    cands = tiles + registers
    picked = stratified(cands, 4, random.Random(0))
    assert len(set(picked)) == 4
    assert sum(cands[k][-1].kind == "register" for k in picked) == 2  # two kinds, drawn in turn
    program = parse_file(kernel_path("gemm"), "MINI")
    policy = SearchPolicy(max_per_parent=4, stratified=True)
    first = sample(policy, cands, 1, Schedule(program))
    assert first == sample(policy, cands, 1, Schedule(program))
    assert any(c[-1].kind == "register" for c in first)
    # the whole level when it is small enough; a kind with fewer members than its turns gives way
    assert sample(policy, registers, 1, Schedule(program)) == registers
    assert sorted(stratified(registers + tiles[:1], 4, random.Random(1))) == [0, 1, 2, 3]


class Collecting:
    """Scores every schedule by a hash of its description (a search that wanders the space the
    same way on every run) and keeps the schedules it was asked about."""

    name = "collecting"

    def __init__(self):
        self.asked: list[Schedule] = []

    def evaluate(self, program, schedules):
        import zlib
        self.asked += schedules
        return [Score(0.5 + zlib.crc32(s.describe().encode()) % 1000 / 500) for s in schedules]


def test_the_printed_form_merges_schedules_printing_the_same_loops():
    """`select` compares schedules by `printed_form` (the program, isl's default AST, the marks)
    instead of printing their C, over every candidate a wandering search asks about (fusions,
    isl's schedules, expansions, tiles, register tiles, parallel loops, unrolls).  Two schedules
    with one form print the same C, except the original's own loops, which print unseparated:
    gemm's isl schedule is its original loops (one place, as it should).  Two that print the
    same C have one form, except where a mark prints nothing at this size (a parallel or vector
    mark on a loop that runs once): those have the same loops and keep two places."""
    from looper.codegen.astwalk import printed_form
    from looper.ir.schedule import original
    merged = 0
    for name in ("cholesky", "gemm", "lu"):
        p = parse_file(kernel_path(name), "MINI")
        plain = original(p).rows
        ev = Collecting()
        beam_search(p, compute_dependences(p), ev, SearchPolicy(beam=3, grown=True, target=TARGET))
        by_form: dict[tuple, tuple] = {}
        by_code: dict[str, tuple] = {}
        for s in ev.asked:
            form, code = printed_form(s.lowered), ProgramBuilder.code(s.lowered)
            code0, s0 = by_form.setdefault(form, (code, s))
            if code0 != code:
                assert (s0.lowered.rows == plain) != (s.lowered.rows == plain), (name, s.describe())
            form0, s0 = by_code.setdefault(code, (form, s))
            if form0 != form:
                assert form0[:2] == form[:2], (name, s0.describe(), s.describe())  # the same loops
        merged += len(ev.asked) - len(by_form)
        assert len(by_form) > 20, name
    assert merged > 0


def test_a_bundle_behind_a_checked_prefix_gets_the_verdict_it_gets_alone():
    """`check` keeps each bundle's proper prefixes' outcomes (`BeamState.prefixes`): every
    candidate the tile level offers symm and 3mm (register tiles behind expansions,
    distributions, parallel loops, cache tiles) is accepted or refused, with the same schedule,
    as when checked on its own, and the prefixes were shared."""
    from looper.caching import Memo
    from looper.search.beam import check
    from looper.search.candidates import generate
    verdicts = set()
    for name in ("symm", "3mm"):
        p = parse_file(kernel_path(name), "MINI")
        d = compute_dependences(p)
        parent = Schedule(p)
        cands = generate("tile", parent, d, TARGET, grown=True)
        memo = Memo()
        kept = [check(parent, c, d, "tile", False, memo) for c in cands]
        alone = [check(parent, c, d, "tile", False) for c in cands]
        assert [(e.rejected, e.schedule.lowered.identity) for e in kept] == \
            [(e.rejected, e.schedule.lowered.identity) for e in alone]
        prefixes = sum(len(c) - 1 for c in cands)
        assert 0 < len(memo) < prefixes / 2, name
        verdicts |= {e.rejected is None for e in alone}
    assert verdicts == {True, False}  # refused candidates too (symm's)
