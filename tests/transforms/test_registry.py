"""The transformation registry: every transformation's rows, JSON, candidates; adding one."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import pytest

from looper.ir.schedule import loop_label
from looper.ir.rows import LoopRef
from looper.ir.schedule import original
from looper.lang.parse import parse_file, parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_step
from looper.search.beam import beam_search
from looper.search.candidates import generate
from looper.search.policy import SearchPolicy
from looper.transforms import (
    TRANSFORMS, Distribute, Encoding, Expand, Fission, Pack, ParallelRegion, Fuse, Interchange, Parallelize, RegisterTile, Reverse, Shift, Skew, Tile,
    TimeTile, Transform, Unroll, register, IslSchedule, SinkTile, ParallelBlocks, Vectorize,
)
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import HashScores, TARGET, differential

TWO_NESTS = '''
SIZES = {"MINI": dict(N=8, M=6)}
def kernel(N: int, M: int, A: f64[N, M], B: f64[N, M]):
    for i in range(N):
        for j in range(M):
            A[i, j] = A[i, j] + 1.0
    for i in range(N):
        for j in range(M):
            B[i, j] = A[i, j] * 2.0
OUTPUTS = ["A", "B"]
'''


def _two_nests():
    return parse_source(TWO_NESTS, "two.py", "MINI")


def _rows(L, s):
    """A statement's rows as (coeffs, const, div) triples."""
    return [(r.coeffs, r.const, r.div) for r in L.rows[s]]


# -- apply, at the row level ------------------------------------------------------------------------

def test_original_rows_are_the_2d_plus_1_layout():
    L = original(_two_nests())
    assert _rows(L, "S0") == [((0, 0), 0, 1), ((1, 0), 0, 1), ((0, 0), 0, 1), ((0, 1), 0, 1), ((0, 0), 0, 1)]
    assert _rows(L, "S1")[0] == ((0, 0), 1, 1)  # the second nest: static position 1


def test_interchange_swaps_two_rows():
    L = Interchange(("S0",), 1, 3).apply(original(_two_nests()))
    assert _rows(L, "S0")[1] == ((0, 1), 0, 1) and _rows(L, "S0")[3] == ((1, 0), 0, 1)
    assert _rows(L, "S1") == _rows(original(_two_nests()), "S1")


def test_reverse_negates_a_row():
    L = Reverse(("S1",), 3).apply(original(_two_nests()))
    assert _rows(L, "S1")[3] == ((0, -1), 0, 1)


def test_skew_combines_rows():
    L = Skew(("S0",), (1, 3), ((1, 0), (2, 1))).apply(original(_two_nests()))
    assert _rows(L, "S0")[1] == ((1, 0), 0, 1) and _rows(L, "S0")[3] == ((2, 1), 0, 1)
    with pytest.raises(ValueError):
        Skew(("S0",), (1, 3), ((2, 0), (0, 1)))  # not unimodular


def test_shift_adds_a_constant():
    L = Shift(("S1",), 1, 3).apply(original(_two_nests()))
    assert _rows(L, "S1")[1] == ((1, 0), 3, 1)


def test_fuse_moves_the_second_nest_into_the_first():
    L = Fuse(("S0",), ("S1",), 1, (0, 1)).apply(original(_two_nests()))
    s0, s1 = _rows(L, "S0"), _rows(L, "S1")
    assert s1[0] == s0[0]  # same static position: one outer loop
    assert s1[2] == s0[2]  # and one inner loop
    assert s1[3] == ((0, 1), 1, 1)  # shifted by one inner iteration
    assert s1[4][1] > s0[4][1]  # S1 after S0 in each iteration
    assert L.tree.find(3, {"S0", "S1"}) is not None


def test_distribute_splits_a_loop_and_moves_later_siblings():
    fused = Fuse(("S0",), ("S1",), 1, (0,)).apply(original(_two_nests()))
    L = Distribute(("S0", "S1"), 1, (1,)).apply(fused)
    assert _rows(L, "S0")[0] == ((0, 0), 0, 1) and _rows(L, "S1")[0] == ((0, 0), 1, 1)
    assert [n.statements for n in L.tree.nests] == [frozenset({"S0"}), frozenset({"S1"})]


def test_tile_inserts_a_tile_row_pair_per_loop_and_moves_annotations():
    L0 = Parallelize(((("S0",), 1),)).apply(original(_two_nests()))
    L = Tile(((("S0",), (1, 3), (4, 2)),)).apply(L0)
    s0 = _rows(L, "S0")
    assert len(s0) == len(_rows(L0, "S0")) + 4
    assert s0[1] == ((1, 0), 0, 4) and s0[3] == ((0, 1), 0, 2)  # the tile loops, outermost
    assert s0[5] == ((1, 0), 0, 1) and s0[7] == ((0, 1), 0, 1)  # the point loops
    assert ("S0", 1) in L.parallel  # the parallel i loop's mark moved to its tile loop
    assert all(r == ((0, 0), 0, 1) for r in _rows(L, "S1")[1:5])  # padding for the other nest


def test_parallelize_and_unroll_only_annotate():
    L0 = original(_two_nests())
    L = Unroll(((("S1",), 3),), 8).apply(Parallelize(((("S0",), 1),)).apply(L0))
    assert L.rows == L0.rows
    assert L.parallel == {("S0", 1)} and L.unroll == (("S1", 3, 8),)


# -- JSON ----------------------------------------------------------------------------------------------

EXAMPLES = [
    Interchange(("S0",), 1, 3), Reverse(("S1",), 3), Skew(("S0",), (1, 3), ((1, 0), (1, 1))),
    Shift(("S1",), 1, 2), Fuse(("S0",), ("S1",), 1, (0, 1)), Distribute(("S0", "S1"), 1, (1,)),
    Parallelize(((("S0",), 1), (("S1",), 1))), Tile(((("S0",), (1, 3), (32, 64)),)), Unroll(((("S1",), 3),), 4),
    RegisterTile((("S1", 1, 5, 3, 6, 32, 8),)), TimeTile(("S0",), (1, 3), ((1, 0), (1, 1)), (32, 256)),
    Pack("A", ("S1",)), ParallelRegion(), Expand("sum", ("S0", "S1", "S2"), (0, 1)),
    Fission((("S0",), ("S2", "S3"), ("S1",))), SinkTile((("S0", "S1"), 1), 32), ParallelBlocks((("S1",), 3), 1, 64),
    Vectorize(((("S1",), 3),)),
    IslSchedule((("S0", (((0, 0), 0), ((1, 0), 0), ((0, 0), 0), ((0, 1), 0), ((0, 0), 0))),
                 ("S1", (((0, 0), 0), ((1, 0), 0), ((0, 0), 0), ((0, 1), 1), ((0, 0), 1)))), "pluto"),
]


def test_every_registered_transformation_has_an_example():
    assert sorted(type(t).kind for t in EXAMPLES) == sorted(TRANSFORMS.kinds())


def test_every_registered_kind_has_its_own_feature_slot_and_encodes_as_more_than_zeros():
    """The cost model tells every kind apart (issue 43: pack, region and islschedule all encoded
    as the same zero vector)."""
    from looper.costmodel.features import KIND_SLOTS, TRANSFORM, encode_transform
    slots = {type(t).kind: type(t).feature_slot for t in EXAMPLES}
    assert sorted(slots.values()) == list(range(KIND_SLOTS))  # one each, none spare
    for t in EXAMPLES:
        v = encode_transform(t)
        assert v[TRANSFORM["kind"]].tolist() == [float(k == t.feature_slot) for k in range(KIND_SLOTS)]
    # a register tile encodes each statement's own block, lanes included
    reg = RegisterTile((("S0", 1, 3, 5, 6, 32, 8), ("S1", 1, 3, 5, 4, 16, 8)))
    assert reg.encoding_of("S1").sizes == (4, 16) and reg.encoding_of("S0").sizes == (6, 32)
    assert encode_transform(reg, "S1")[TRANSFORM["lanes"]] == 3.0
    isl = next(t for t in EXAMPLES if t.kind == "islschedule")
    variants = {encode_transform(dataclasses.replace(isl, variant=v)).tobytes() for v in ("pluto", "outer-parallel")}
    assert len(variants) == 2


@pytest.mark.parametrize("t", EXAMPLES, ids=lambda t: t.kind)
def test_json_round_trip(t):
    back = Transform.from_json(t.to_json())
    assert back == t and type(back) is type(t) and repr(back) == repr(t)
    assert back.encoding() == t.encoding() and back.touched() == t.touched()


def test_loops_are_named_structurally():
    p = Parallelize(((("S0",), 1),))
    assert isinstance(p.loops[0], LoopRef) and p.loops[0].row == 1
    assert repr(p) == "Parallelize(loops=((('S0',), 1),))"  # the key datagen's sampling is seeded with


# -- candidates per level ------------------------------------------------------------------------------

def test_candidates_per_level_on_gemm():
    p = parse_file(kernel_path("gemm"), "MINI")
    d = compute_dependences(p)
    s = Schedule(p)
    kinds = {level: {tuple(type(t).__name__ for t in c) for c in generate(level, s, d, target=TARGET)}
             for level in ("fusion", "affine", "parallel", "tile", "unroll")}
    assert kinds["fusion"] == {("Distribute",)}  # gemm's i loop holds two nests; nothing to fuse
    assert ("Interchange",) in kinds["affine"] and ("Reverse",) in kinds["affine"]
    assert ("Distribute", "Interchange") in kinds["affine"]  # split around k, then interchange
    assert kinds["parallel"] == {("Parallelize",)}
    assert kinds["tile"] == {("Tile",)} and kinds["unroll"] == {("Unroll",)}
    for level in ("fusion", "affine", "parallel", "tile", "unroll"):
        cands = generate(level, s, d, target=TARGET)
        assert len(cands) == len(set(cands)) and all(isinstance(c, tuple) and c for c in cands)
        assert all(t.level == level or (level == "affine" and t.kind == "distribute") for c in cands for t in c)


def test_candidates_follow_the_levels_in_order():
    p = _two_nests()
    d = compute_dependences(p)
    fuse = [c for c in generate("fusion", Schedule(p), d, target=TARGET) if isinstance(c[0], Fuse)]
    assert fuse and fuse[0][0].first == ("S0",)
    par = Schedule(p).then(*generate("parallel", Schedule(p), d, target=TARGET)[0])
    assert generate("parallel", par, d, target=TARGET) == []  # one parallelization per schedule
    unrolled = par.then(*generate("unroll", par, d, target=TARGET)[0])
    assert generate("unroll", unrolled, d, target=TARGET) == []


# -- adding a transformation ---------------------------------------------------------------------------

def test_a_new_transformation_is_one_class_and_one_registration(tmp_path):
    """A do-nothing transformation: the registry's recipe, registered for this test only.  The
    search proposes it, checks it, scores it, replays it from JSON and prints it."""
    with TRANSFORMS.scoped():
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

        p = _two_nests()
        d = compute_dependences(p)
        assert "noop" in TRANSFORMS.kinds()
        result = beam_search(p, d, HashScores(1), SearchPolicy(beam=2, max_affine=1))
        noops = [e for e in result.evaluated if any(t.kind == "noop" for t in e.schedule.steps)]
        assert noops and all("noop(" in e.description for e in noops)
        s = noops[0].schedule
        again = Schedule.from_json(p, s.to_json())
        assert again.describe() == s.describe() and again.lowered.identity == s.lowered.identity
        from looper.costmodel.features import featurize
        assert featurize(s).comps  # the cost model takes it (its kind has no slot yet: its rows only)
        assert differential(p, [s], tmp_path) == []
    assert "noop" not in TRANSFORMS.kinds()


@dataclass(frozen=True)
class _EveryLoop(Transform):
    """A test transformation offered on every loop, legal by fiat, that moves nothing (a
    subclass gives its kind and, to misbehave, its own `apply`); not registered itself."""

    loop: LoopRef
    level: ClassVar[str] = "unroll"
    refines: ClassVar[bool] = True

    def touched(self):
        return frozenset(self.loop.statements)

    def apply(self, L):
        return L

    def describe(self, L):
        return f"{self.kind}({loop_label(L, *self.loop)})"

    def encoding(self):
        return Encoding(rows=(self.loop.row,))

    def check(self, deps, before, after, explain=False):
        return None

    @classmethod
    def candidates(cls, ctx):
        for loop in ctx.tree.loops():
            yield cls(loop.ref)


def test_a_transformation_that_crashes_costs_its_candidates_not_the_search():
    """A bug in one transformation (here an apply that indexes past the rows, as a register tile
    over non-adjacent rows once did at SMALL 2mm) rejects its candidates with the error named;
    the search goes on and answers."""
    with TRANSFORMS.scoped():
        @register
        @dataclass(frozen=True)
        class Broken(_EveryLoop):
            kind: ClassVar[str] = "broken"

            def apply(self, L):
                return L.rows[self.loop.statements[0]][99]

        p = _two_nests()
        d = compute_dependences(p)
        result = beam_search(p, d, HashScores(1), SearchPolicy(beam=2, max_affine=1))
        broken = [e for e in result.explored if any(t.kind == "broken" for t in e.schedule.steps)]
        assert broken and all(e.rejected.startswith("internal error in broken (IndexError") for e in broken)
        assert result.best is not None and not any(t.kind == "broken" for t in result.best.steps)


def test_a_generator_that_raises_is_warned_and_the_search_goes_on():
    """A bug in one transformation's candidate generator (the pack level's second copy, once)
    costs that generator's candidates there, not the user's search: a `GeneratorFailed` warning
    names it, the other generators' candidates stay, and the search answers.  (The test suite
    turns the warning into an error, so no such bug passes unseen.)"""
    from looper.transforms.registry import GeneratorFailed
    with TRANSFORMS.scoped():
        @register
        @dataclass(frozen=True)
        class Raising(_EveryLoop):
            kind: ClassVar[str] = "raising"

            @classmethod
            def candidates(cls, ctx):
                yield from super().candidates(ctx)
                raise IndexError("past the rows")

        p = _two_nests()
        d = compute_dependences(p)
        s = Schedule(p)
        with pytest.warns(GeneratorFailed, match=r"raising generator.*IndexError: past the rows"):
            cands = generate("unroll", s, d, target=TARGET)
        assert any(c[0].kind == "raising" for c in cands) and any(c[0].kind == "unroll" for c in cands)
        with pytest.warns(GeneratorFailed):
            result = beam_search(p, d, HashScores(1), SearchPolicy(beam=2, max_affine=1))
        assert result.best is not None


def test_every_transformation_checks_legality_through_check_step():
    p = parse_file(kernel_path("jacobi_1d"), "MINI")
    d = compute_dependences(p)
    s = Schedule(p)
    assert check_step(d, s.lowered, Parallelize(((("S0", "S1"), 1),)),
                      Parallelize(((("S0", "S1"), 1),)).apply(s.lowered)) is not None  # the time loop
    bad = Unroll(((("S0",), 1),), 4)  # not innermost
    assert "innermost" in check_step(d, s.lowered, bad, bad.apply(s.lowered))
    ill = Interchange(("S0",), 0, 1)  # a static row swapped with a loop row: no loop tree
    assert "ill-formed" in check_step(d, s.lowered, ill, ill.apply(s.lowered))


# -- caches --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,grown", [("gemm", True), ("deriche", False), ("jacobi_2d", True)])
def test_searches_are_the_same_with_caches_off(kernel, grown):
    """Every in-memory memo (parsed maps, printed kernels, scalar flows, dependence selections,
    features) is a pure function's: a search with them off scores and emits exactly the same.
    gemm and jacobi-2d search the whole space, as the shipped model does; deriche's 30
    statements the old one (the shipped model's metadata told it has not seen the grown one)."""
    from looper import caching
    from looper.codegen.harness import program_c
    from looper.costmodel.store import load_model
    from looper.tune import TuneOptions, prepare
    net, meta = load_model()
    meta = dict(meta, search_space=dict(meta["search_space"], grown=grown))

    def run():
        p = parse_file(kernel_path(kernel), "MINI")
        d = compute_dependences(p)
        model = prepare(p, TuneOptions(beam=2), TARGET, model=(net, meta)).run(d)
        hashed = beam_search(p, d, HashScores(3), SearchPolicy(beam=2, max_affine=1))
        out = []
        for r in (model, hashed):
            out.append([(e.description, e.rejected, e.score and e.score.speedup) for e in r.explored])
            out.append(program_c(p, [r.best.lowered]))
        return out

    with_caches = run()
    with caching.disabled():
        assert not caching.enabled()
        without = run()
    assert caching.enabled()
    assert without == with_caches


def test_the_kinds_that_start_threads_and_those_that_only_mark_loops():
    """What a sequential search strips from a bundle (`search.beam.without_threads`), and what
    one shape of candidates may differ in (`search.budget.shape`): declared by each class."""
    from looper.search.budget import shape
    from looper.search.beam import without_threads
    from looper.transforms import Parallelize, Tile, Unroll
    from looper.transforms.registry import TRANSFORMS
    classes = [TRANSFORMS.by_kind(k) for k in TRANSFORMS.kinds()]
    assert {c.kind for c in classes if c.threads} == {"parallelize", "region"}
    assert {c.kind for c in classes if c.mark} == {"unroll", "vectorize", "region"}
    p = parse_file(kernel_path("gemm"), "MINI")
    par, tile = Parallelize(((("S1",), 1),)), Tile(((("S1",), (3, 5), (8, 8)),))
    assert without_threads((par, tile)) == (tile,) and without_threads((par,)) == (par,)
    s = Schedule(p).then(tile)
    assert shape(s.then(Unroll(((("S1",), 9),), 4))) == shape(s) != shape(s.then(par))
