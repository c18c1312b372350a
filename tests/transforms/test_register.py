"""Register tiling: the rows it builds, when it applies, the micro-kernel it prints, and that the
printed program computes what the original does."""
from __future__ import annotations

import re

import pytest

from looper.codegen.harness import program_c
from looper.lang.parse import parse_file, parse_source
from looper.poly.deps import compute_dependences
from looper.poly.legality import check_schedule, check_step
from looper.search.candidates import generate
from looper.transforms import Distribute, RegisterTile
from looper.transforms.schedule import Schedule

from conftest import kernel_path
from helpers import TARGET, differential, target_for


def _gemm(size: str):
    p = parse_file(kernel_path("gemm"), size)
    return p, compute_dependences(p), Schedule(p).then(Distribute(("S0", "S1"), 1, (1,)))


def test_rows_become_tile_loops_reduction_then_points():
    p, d, s = _gemm("MINI")
    L = s.then(RegisterTile((("S1", 1, 5, 3, 6, 32, 8),))).lowered  # S1: i (row 1), k (3), j (5)
    rows = [(r.coeffs, r.div) for r in L.rows["S1"]]
    loops = [r for r in rows if any(r[0])]
    assert loops == [((1, 0, 0), 6), ((0, 0, 1), 32), ((0, 1, 0), 1), ((1, 0, 0), 1), ((0, 0, 1), 1)]  # (i, k, j)
    (mk,) = L.microkernels
    assert (mk.stmt, mk.mr, mk.nr) == ("S1", 6, 32) and mk.tile_i < mk.tile_j < mk.k < mk.i < mk.j
    assert len(L.rows["S0"]) == len(L.rows["S1"])  # the other statement is padded alike


def test_candidates_only_in_the_grown_space_and_only_where_the_body_vectorizes():
    p, d, s = _gemm("MINI")
    assert generate("register", s, d, target=TARGET) == []  # the shipped model's space has no register tiles
    cands = generate("register", s, d, grown=True, target=TARGET)
    assert cands and all(isinstance(c[-1], RegisterTile) for c in cands)
    assert {(b.i, b.j, b.k) for c in cands if len(c) == 1 for b in c[0].blocks} == {(1, 5, 3)}
    syrk = parse_file(kernel_path("syrk"), "MINI")  # A[j][k]: j moves a row index, no vector
    assert generate("register", Schedule(syrk), compute_dependences(syrk), grown=True, target=TARGET) == []


def _rows_reading(order: str) -> str:
    return f'''
SIZES = {{"S": dict(M=24, N=40)}}
def kernel(M: int, N: int, A: f64[M, M], B: f64[M, N]):
    for i in range(M):
        for k in {order}:
            for j in range(N):
                B[i, j] += A[k, i] * B[k, j]
OUTPUTS = ["B"]
'''


def test_promotion_allows_reads_of_rows_the_tile_has_not_updated_yet(tmp_path):
    """trmm's shape: row i reads rows k > i, which the program updates later: a tile of rows may
    keep its rows in registers (the reads see memory, which still holds the old values)."""
    p = parse_source(_rows_reading("range(i + 1, M)"), "trmm_like.py", "S")
    d = compute_dependences(p)
    s = Schedule(p, (RegisterTile((("S0", 1, 5, 3, 4, 16, 8),)),))
    assert check_schedule(d, s) is None
    assert differential(p, [s], tmp_path) == []


@pytest.mark.parametrize("shape", [(4, 16), (8, 8), (3, 8)])
def test_a_triangular_reduction_runs_the_micro_kernel_on_each_tile_s_full_window(shape, tmp_path):
    """trmm's k > i: no tile of rows is full at every k (its first k leave some rows empty), so
    before windows no tile got a micro-kernel.  Each tile now runs isl's loops for the k before
    its window and the micro-kernel inside it, in the program's order over k: exact."""
    p = parse_source(_rows_reading("range(i + 1, M)"), "trmm_like.py", "S")
    d = compute_dependences(p)
    s = Schedule(p, (RegisterTile((("S0", 1, 5, 3, *shape, 8),)),))
    assert check_schedule(d, s) is None
    text = program_c(p, [s.lowered])
    assert "looper_acc0_0" in text  # the micro-kernel, after the loops before its window:
    assert re.search(r"for \(c\d+ = [^;]*; c\d+ <= [^;]* && c\d+ < \(", text)
    assert differential(p, [s], tmp_path, threads=1) == []
    assert differential(p, [s], tmp_path, threads=2) == []


def test_promotion_is_refused_when_a_read_must_see_a_register():
    """Row i reads rows k < i, updated before it: within a tile those live in registers."""
    p = parse_source(_rows_reading("range(i)"), "rows_before.py", "S")
    d = compute_dependences(p)
    why = check_schedule(d, Schedule(p, (RegisterTile((("S0", 1, 5, 3, 4, 16, 8),)),)))
    assert why and "registers" in why


# 2mm and 3mm (products in chains, 51 s and 132 s on 2 cores) run with -m slow; gemm by default
@pytest.mark.parametrize("kernel", ["gemm", pytest.param("2mm", marks=pytest.mark.slow),
                                    pytest.param("3mm", marks=pytest.mark.slow)])
def test_register_tiles_compute_what_the_original_does(kernel, tmp_path):
    p = parse_file(kernel_path(kernel), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    for _ in range(2):  # split the nests so that each product is alone in its loops
        splits = [c for c in generate("fusion", s, d, target=TARGET) if isinstance(c[0], Distribute)]
        s = s.then(*splits[0]) if splits else s
    par = s.then(*generate("parallel", s, d, target=TARGET)[0])
    variants = []
    for base in [par] + [par.then(*t) for t in generate("tile", par, d, grown=True, target=TARGET)[-3:]]:
        for c in generate("register", base, d, grown=True, target=TARGET):
            v = base.then(*c)
            if check_schedule(d, v) is None:
                variants.append(v)
    assert variants
    text = program_c(p, [v.lowered for v in variants])
    assert "looper_acc0_0" in text and "vector_size" in text  # full tiles got micro-kernels
    assert differential(p, variants, tmp_path, threads=2) == []


@pytest.mark.parametrize("kernel", ["syrk", "syr2k"])
def test_packed_operands_make_column_walks_register_tilable(kernel, tmp_path):
    """syrk's A[j][k] walks a column along j: no register tile until A is packed transposed."""
    from looper.transforms import Pack
    p = parse_file(kernel_path(kernel), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    s = s.then(*[c for c in generate("fusion", s, d, target=TARGET) if isinstance(c[0], Distribute)][0])
    assert generate("register", s, d, grown=True, target=TARGET) == []
    packs = generate("pack", s, d, grown=True, target=TARGET)
    assert packs and all(isinstance(t, Pack) for t in packs[0])
    packed = s.then(*packs[0])
    assert check_schedule(d, packed) is None
    assert any(a.role == "temp" for a in packed.lowered.program.arrays.values())
    tiles = [packed.then(*c) for c in generate("register", packed, d, grown=True, target=TARGET)]
    assert tiles and all(check_schedule(d, t) is None for t in tiles)
    assert differential(p, [packed] + tiles[:3], tmp_path, threads=2) == []


@pytest.mark.parametrize("kernel", ["syrk", "syr2k"])
def test_the_pack_level_offers_each_pack_with_the_register_tiles_it_enables(kernel, tmp_path):
    """A pack alone only costs (the copy, and the same column walk in the product), so a beam that
    scores one level at a time would drop it before the register level: the pack level offers the
    pack followed by each register tile of its statement too, legal and exact."""
    from looper.transforms import Pack, RegisterTile, Tile
    p = parse_file(kernel_path(kernel), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    s = s.then(*[c for c in generate("fusion", s, d, target=TARGET) if isinstance(c[0], Distribute)][0])
    cands = generate("pack", s, d, grown=True, target=TARGET)
    alone = [c for c in cands if all(isinstance(t, Pack) for t in c)]
    joint = [c for c in cands if isinstance(c[-1], RegisterTile)]
    assert alone and joint
    packed = s.then(*alone[0])
    later = {c for c in generate("register", packed, d, grown=True, target=TARGET) if len(c) == 1 and len(c[0].blocks) == 1}
    assert {c[len(alone[0]):] for c in joint if c[:len(alone[0])] == alone[0] and len(c) == len(alone[0]) + 1} == later
    assert any(isinstance(c[len(alone[0])], Tile) for c in joint)  # and inside cache tiles
    variants = [s.then(*c) for c in joint[:2]]
    assert all(check_schedule(d, v) is None for v in variants)
    assert differential(p, variants, tmp_path, threads=2) == []
    assert generate("pack", s, d, grown=False, target=TARGET) == []


@pytest.mark.parametrize("kernel", ["syrk", "syr2k"])
def test_the_pack_level_distributes_to_free_a_product_before_its_packs_and_register_tile(kernel, tmp_path):
    """syrk's product shares its i loop with the statement that scales C: without a distribution
    from the fusion levels nothing is packable, so the pack level offers the distribution, the
    packs and the register tile as one candidate (legal and exact); once the product is free it
    offers no distribution for it."""
    from looper.transforms import Pack, RegisterTile
    p = parse_file(kernel_path(kernel), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    cands = generate("pack", s, d, grown=True, target=TARGET)
    assert cands and all(isinstance(c[0], Distribute) and isinstance(c[-1], RegisterTile) for c in cands)
    assert all(any(isinstance(t, Pack) for t in c) for c in cands)
    variants = [s.then(*c) for c in cands[:2]]
    assert all(check_schedule(d, v) is None for v in variants)
    assert differential(p, variants, tmp_path, threads=2) == []
    (tmp_path / "one").mkdir()
    assert differential(p, variants[:1], tmp_path / "one", threads=1) == []
    free = s.then(*[c for c in generate("fusion", s, d, target=TARGET) if isinstance(c[0], Distribute)][0])
    assert not any(isinstance(t, Distribute) for c in generate("pack", free, d, grown=True, target=TARGET) for t in c)


def test_the_tile_level_offers_register_tiles_ahead_in_the_grown_space(tmp_path):
    """A cache tile chosen on its own can leave no order a register tile applies to, so the tile
    level also offers the register tiles (with their packs) of the schedule it refines."""
    from looper.transforms import Pack, Parallelize, RegisterTile, Tile
    p = parse_file(kernel_path("syrk"), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    s = s.then(*[c for c in generate("fusion", s, d, target=TARGET) if isinstance(c[0], Distribute)][0])
    s = s.then(*generate("parallel", s, d, target=TARGET)[0])
    grown = generate("tile", s, d, grown=True, target=TARGET)
    ahead = [c for c in grown if isinstance(c[-1], RegisterTile)]
    # packs, then the register tile, alone or inside a cache tile (with the nest's parallel loop)
    assert ahead and all(isinstance(t, (Pack, Tile, Parallelize)) for c in ahead for t in c[:-1])
    assert any(all(isinstance(t, Pack) for t in c[:-1]) for c in ahead)
    assert {c for c in generate("pack", s, d, grown=True, target=TARGET) if isinstance(c[-1], RegisterTile)} <= set(ahead)
    assert any(isinstance(c[0], Tile) for c in grown)
    assert not any(isinstance(c[-1], RegisterTile) for c in generate("tile", s, d, grown=False, target=TARGET))
    variants = [s.then(*c) for c in ahead[:2]]
    assert all(check_schedule(d, v) is None for v in variants)
    assert differential(p, variants, tmp_path, threads=2) == []


def test_a_register_tile_leaves_the_other_statements_tilable(tmp_path):
    """After one product has its register tile, the register level still offers the others'
    (never a second one for the same statement), and both tiles together are exact."""
    from looper.transforms import RegisterTile
    p = parse_file(kernel_path("2mm"), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    for _ in range(4):  # each product alone in its nest
        splits = [c for c in generate("fusion", s, d, target=TARGET) if isinstance(c[0], Distribute)]
        s = s.then(*splits[0]) if splits else s
    s = s.then(*generate("parallel", s, d, target=TARGET)[0])
    alone = [c for c in generate("register", s, d, grown=True, target=TARGET) if len(c) == 1 and len(c[0].blocks) == 1]
    first = next(c for c in alone if check_schedule(d, s.then(*c)) is None)
    one = s.then(*first)
    (tiled,) = first[0].touched()
    more = [c for c in generate("register", one, d, grown=True, target=TARGET) if len(c) == 1]  # tiles alone
    assert more and all(isinstance(c[0], RegisterTile) and tiled not in c[0].touched() for c in more)
    both = [one.then(*c) for c in more[:2]]
    assert all(check_schedule(d, v) is None for v in both)
    assert all(len(v.lowered.microkernels) == 2 for v in both)
    assert differential(p, both, tmp_path, threads=2) == []


def test_the_register_level_distributes_to_free_every_product(tmp_path):
    """3mm's products share loops with the statements that zero them: the register level offers
    the distributions that free them, followed by their register tiles, one product or all three
    at once (each block's rows moved down by the tiles before it), legal and exact."""
    from looper.codegen.harness import program_c
    from looper.transforms import Distribute, RegisterTile
    p = parse_file(kernel_path("3mm"), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    s = s.then(*generate("parallel", s, d, target=TARGET)[0])
    cands = [c for c in generate("register", s, d, grown=True, target=TARGET)
             if all(isinstance(t, Distribute) for t in c[:-1])]  # not those behind a fission
    every = [c for c in cands if isinstance(c[-1], RegisterTile) and c[-1].touched() == {"S1", "S3", "S5"}]
    assert every
    variants = [s.then(*c) for c in every[:2]] + [s.then(*next(c for c in cands if len(c[-1].blocks) == 1))]
    assert all(check_schedule(d, v) is None for v in variants)
    assert [len(v.lowered.microkernels) for v in variants] == [3, 3, 1]
    text = program_c(p, [variants[0].lowered])
    assert all(f"looper_acc{r}_0" in text for r in range(every[0][-1].blocks[0].mr))
    assert differential(p, variants, tmp_path, threads=2) == []


def test_a_written_array_is_never_packed():
    from looper.transforms import Pack
    p = parse_file(kernel_path("gemm"), "MINI")
    d = compute_dependences(p)
    why = check_schedule(d, Schedule(p, (Pack("C", ("S1",)),)))
    assert why and "written" in why


def test_a_broadcast_operand_walking_down_the_reduction_is_packed(tmp_path):
    """trmm's A[k][i] is broadcast (j-invariant) but takes a new row every k step: the pack level
    offers its transposed copy, alone and with the register tiles of the product; exact."""
    from looper.transforms import Pack
    p = parse_file(kernel_path("trmm"), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    for _ in range(2):  # the product alone in its loops
        s = s.then(*[c for c in generate("fusion", s, d, target=TARGET) if isinstance(c[0], Distribute)][0])
    cands = generate("pack", s, d, grown=True, target=TARGET)
    assert [c for c in cands if all(isinstance(t, Pack) for t in c)] == [(Pack("A", ("S0",)),)]
    joint = [c for c in cands if isinstance(c[-1], RegisterTile)]
    assert joint
    variants = [s.then(*c) for c in joint[:2]]
    assert all(check_schedule(d, v) is None for v in variants)
    assert differential(p, variants, tmp_path, threads=2) == []
    gemm = parse_file(kernel_path("gemm"), "SMALL")  # B[k][j] is a row walk: nothing to pack
    g = Schedule(gemm).then(Distribute(("S0", "S1"), 1, (1,)))
    assert generate("pack", g, compute_dependences(gemm), grown=True, target=TARGET) == []


def test_a_parallel_loop_around_only_full_tiles_names_only_declared_iterators(tmp_path):
    """When every tile is full, the micro-kernel prints no point loops: the parallel loop's
    private clause named their iterators anyway, undeclared, and gcc refused every such variant
    (doitgen's 4x32 tiles at LARGE were compile errors in the search)."""
    lanes = TARGET.lanes(8)
    src = f'''
SIZES = {{"S": dict(M=12, N={8 * lanes}, K=10)}}
def kernel(M: int, N: int, K: int, A: f64[M, K], B: f64[K, N], C: f64[M, N]):
    for i in range(M):
        for k in range(K):
            for j in range(N):
                C[i, j] += A[i, k] * B[k, j]
OUTPUTS = ["C"]
'''
    p = parse_source(src, "full_tiles.py", "S")
    d = compute_dependences(p)
    s = Schedule(p).then(*generate("parallel", Schedule(p), d, target=TARGET)[0])
    full = [c for c in generate("register", s, d, grown=True, target=TARGET)
            if len(c) == 1 and 12 % c[0].blocks[0].mr == 0 and (8 * lanes) % c[0].blocks[0].nr == 0]
    assert full
    variants = [s.then(*c) for c in full]
    assert all(check_schedule(d, v) is None for v in variants)
    assert differential(p, variants, tmp_path, threads=2) == []


def test_the_register_level_offers_register_tiles_inside_cache_tiles(tmp_path):
    """trmm: the product's register tile inside a cache-sized tile of its three loops (the
    reduction in panels), with the outermost parallel loop; legal and exact at two threads."""
    from looper.transforms import Tile
    p = parse_file(kernel_path("trmm"), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    for _ in range(2):  # the product alone in its loops
        s = s.then(*[c for c in generate("fusion", s, d, target=TARGET) if isinstance(c[0], Distribute)][0])
    inside = [c for c in generate("register", s, d, grown=True, target=TARGET) if isinstance(c[0], Tile)]
    assert inside and all(isinstance(c[-1], RegisterTile) and len(set(c[0].bands[0].sizes)) > 1 for c in inside)
    legal = [s.then(*c) for c in inside if check_schedule(d, s.then(*c)) is None]
    assert legal and any("parallelize" in v.describe() for v in legal)
    assert differential(p, legal[:2] + legal[-1:], tmp_path, threads=2) == []


def test_every_product_gets_its_register_tile_inside_its_own_cache_tiles_in_one_step(tmp_path):
    """symm, once its temporary is expanded and its nest split: both products (the rows above
    C[i][j], the dot product into temp2) register-tiled inside cache tiles of their own three
    loops in one candidate (each one alone streams the other's operand from L3), with each
    nest's outermost parallel loop; legal and exact at 1 and 4 threads."""
    from looper.transforms import Expand, Fission, Tile
    p = parse_file(kernel_path("symm"), "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    s = s.then(*[c for c in generate("fusion", s, d, grown=True, target=TARGET) if isinstance(c[0], Fission)][0])
    joint = [c for c in generate("register", s, d, grown=True, target=TARGET)
             if isinstance(c[-1], RegisterTile) and len(c[-1].blocks) == 2 and any(isinstance(t, Tile) for t in c)]
    assert joint and all(any(isinstance(t, Expand) for t in c) for c in joint)
    assert all(len(next(t for t in c if isinstance(t, Tile)).bands) == 2 for c in joint)
    legal = [s.then(*c) for c in joint if check_schedule(d, s.then(*c)) is None]
    assert legal and all("parallelize" in v.describe() for v in legal)
    for threads in (1, 4):
        assert differential(p, legal[:2] + legal[-1:], tmp_path, threads=threads) == []


@pytest.mark.parametrize("extent,size,threads,want", [
    (1200, 480, 2, 600),  # 3 tiles of 480 on 2 threads: 2 tiles for one, 1/2 for the other
    (1200, 600, 2, None),  # already even
    (1200, 480, 4, 304),
    (1000, 96, 2, 72),
    (60, 32, 8, None),  # too short to give 8 threads a tile each
])
def test_balanced_tile_sizes_split_a_loop_evenly_among_the_threads(extent, size, threads, want):
    from looper.transforms.tiling import balanced
    got = balanced(extent, size, threads)
    assert got == want
    if got is not None:
        n = -(-extent // got)
        assert n % threads == 0 and got % 8 == 0


def test_cache_tiles_depend_on_the_thread_count():
    """LARGE trmm, its product alone in its nest: the contiguous loop's 480-column tiles come
    with 600-column ones on 2 threads (and 304 on 4); on 1 thread only the cache-sized shapes."""
    from looper.transforms import Fission, Tile
    p = parse_file(kernel_path("trmm"), "LARGE")
    d = compute_dependences(p)
    s = Schedule(p)
    s = s.then(*[c for c in generate("fusion", s, d, grown=True, target=TARGET) if isinstance(c[0], Fission)][0])

    def sizes(threads):
        return {c[0].bands[0].sizes for c in generate("tile", s, d, grown=True, target=target_for(threads))
                if isinstance(c[0], Tile) and len(c[0].bands) == 1 and len(c[0].bands[0].rows) == 3}
    one, two, four = sizes(1), sizes(2), sizes(4)
    assert one <= two and one <= four

    def even(z, threads):  # some tile of M=1000 rows or N=1200 columns splits among the threads
        return any(-(-e // x) % threads == 0 for x in z for e in (1000, 1200))
    assert all(even(z, 2) for z in two - one) and all(even(z, 4) for z in four - one)
    assert two - one or all(even(z, 2) for z in one)  # (on a machine whose caches already split it)


def test_a_register_tile_over_loops_that_are_not_adjacent_rows_keeps_every_statement_aligned(tmp_path):
    """After a sunk tile of the other nest, 2mm's first product has its three loops at rows 7, 11
    and 13 (row 9 is constant for it alone).  The register tile used to replace the span as if it
    were five rows, leaving this statement's rows shorter than the others' (the measuring search
    crashed building the loop tree at SMALL); the span is padded now and the program exact."""
    import json
    p = parse_file(kernel_path("2mm"), "SMALL")
    d = compute_dependences(p)
    steps = json.loads('[{"kind": "fission", "groups": [["S0"], ["S1"]]}, '
                       '{"kind": "reverse", "statements": ["S2", "S3"], "row": 1}, '
                       '{"kind": "interchange", "statements": ["S0"], "row_a": 1, "row_b": 3}, '
                       '{"kind": "reverse", "statements": ["S2", "S3"], "row": 3}, '
                       '{"kind": "parallelize", "loops": [[["S1"], 1]]}, '
                       '{"kind": "sinktile", "loop": [["S2", "S3"], 3], "size": 128}, '
                       '{"kind": "parallelize", "loops": [[["S2", "S3"], 3]]}, '
                       '{"kind": "tile", "bands": [[["S1"], [1, 5, 7], [192, 288, 192]]]}, '
                       '{"kind": "register", "blocks": [["S1", 7, 11, 13, 12, 16, 8]]}]')
    s = Schedule.from_json(p, steps)
    L = s.lowered
    assert len({len(r) for r in L.rows.values()}) == 1
    assert check_schedule(d, s) is None
    assert differential(p, [s], tmp_path, threads=2) == []


def test_the_loop_structure_of_a_register_tile_inside_cache_tiles_keeps_the_tiles():
    """A register tile names its loops by their rows in the tiled nest: the structure that drops
    the refinements keeps a tile a register tile follows (it raised IndexError without it)."""
    from looper.search.beam import beam_search
    from looper.search.policy import SearchPolicy
    from looper.transforms.registry import LoopMarks
    from helpers import HashScores
    p = parse_file(kernel_path("gemm"), "MEDIUM")
    found = beam_search(p, compute_dependences(p), HashScores(), SearchPolicy(beam=2, max_affine=1, grown=True))
    inside = 0
    for e in found.evaluated:
        kinds = [t.kind for t in e.schedule.steps]
        structure = e.schedule.structure()
        structure.describe()  # replays: every step finds its rows
        assert not any(isinstance(t, LoopMarks) for t in structure.steps)
        if "register" in kinds and "tile" in kinds[:kinds.index("register")]:
            inside += 1
            assert "tile" in [t.kind for t in structure.steps]
        elif "register" not in kinds:
            assert all(not t.refines for t in structure.steps)  # nothing follows: every refinement dropped
    assert inside > 0


_TWO_COLUMN_WALKS = '''
SIZES = {"SMALL": dict(N=40, M=36, K=44)}


def init(N: int, M: int, K: int, alpha: f64, A1: f64[K, K], A2: f64[K, N], A3: f64[K, N], A4: f64[N, K],
         A5: f64[M, K], A6: f64[M, N]):
    alpha = 1.5
    for i in range(K):
        for j in range(K):
            A1[i, j] = f64((3 * i + 7 * j) % 17) / 17
    for i in range(K):
        for j in range(N):
            A2[i, j] = f64((3 * i + 7 * j + 1) % 18) / 18
            A3[i, j] = f64((3 * i + 7 * j + 2) % 19) / 19
    for i in range(N):
        for j in range(K):
            A4[i, j] = f64((3 * i + 7 * j + 3) % 20) / 20
    for i in range(M):
        for j in range(K):
            A5[i, j] = f64((3 * i + 7 * j + 4) % 21) / 21
    for i in range(M):
        for j in range(N):
            A6[i, j] = f64((3 * i + 7 * j + 5) % 22) / 22


def kernel(N: int, M: int, K: int, alpha: f64, A1: f64[K, K], A2: f64[K, N], A3: f64[K, N], A4: f64[N, K],
           A5: f64[M, K], A6: f64[M, N]):
    for i in range(K):
        for k in range(N):
            for j in range(K):
                A1[i, j] += alpha * A3[i, k] * A2[j, k]
    for j in range(K):
        for i in range(N):
            for k in range(M):
                A4[i, j] += A6[k, i] * A5[k, j]


OUTPUTS = ['A1', 'A4']
'''


def test_a_second_pack_after_a_register_tile_gets_its_own_nest(tmp_path):
    """Two products, each with an operand walking a column (A2[j, k] along the tile's j, A6[k, i]
    down the reduction): the first pack's copy, whose rows the register tile after it moved, and
    the second's must not share a loop (the loop tree of the second was ill-formed, and the
    search of such a program ended in a traceback).  Every copy goes before every nest; exact."""
    from looper.transforms import Pack, RegisterTile
    p = parse_source(_TWO_COLUMN_WALKS, "two_walks.py", "SMALL")
    d = compute_dependences(p)
    s = Schedule(p)
    first = next(c for c in generate("pack", s, d, grown=True, target=TARGET)
                 if isinstance(c[-1], RegisterTile) and c[0] == Pack("A2", ("S0",)))
    s = s.then(*first)
    second = [c for c in generate("pack", s, d, grown=True, target=TARGET) if c[0] == Pack("A6", ("S1",))]
    assert second and any(isinstance(c[-1], RegisterTile) for c in second)
    variants = [s] + [s.then(*c) for c in second[:2]]
    assert all(check_schedule(d, v) is None for v in variants)
    tree = variants[-1].lowered.tree
    assert len(tree.roots) == 4  # each copy in its own nest, before the two products
    assert differential(p, variants, tmp_path, threads=2) == []


def _register_steps(p, d):
    """(deps, before, tile, after) of every register tile the grown register and tile levels
    offer on `p`, on its original loops and after each distribution the fusion level offers,
    behind legal steps."""
    bases = [Schedule(p)] + [Schedule(p).then(*c) for c in generate("fusion", Schedule(p), d, target=TARGET)
                             if isinstance(c[0], Distribute)]
    for base in (b for b in bases if check_schedule(d, b) is None):
        for level in ("register", "tile"):
            for c in generate(level, base, d, grown=True, target=TARGET):
                s = base
                for step in c:
                    nxt = s.then(step)
                    if isinstance(step, RegisterTile):
                        yield d.of(s.lowered.program), s.lowered, step, nxt.lowered
                    elif check_step(d.of(s.lowered.program), s.lowered, step, nxt.lowered) is not None:
                        break  # the steps before a tile are legal, as the search checks them
                    s = nxt


@pytest.mark.parametrize("source", ["gemm", "3mm", "symm", "syr2k", "trmm", "range(M)", "range(i + 1, M)"])
def test_the_register_tile_s_shortcut_never_keeps_a_tile_the_schedule_check_refuses(source):
    """`tiles_alone` (a permutable band whose dependences with other statements are carried
    before it: legal at any tile shape) spares the register tile the check of its whole schedule,
    7.6 of 3mm MEDIUM's 17.6 s of model search.  Where it holds, that check passes; where it does
    not, the check decides (B[i][j] += A[k][i] * B[k][j] over every k is not permutable: its
    register tiles break dependences)."""
    from looper.poly.legality import order_violation, tiles_alone
    if source.startswith("range"):
        p = parse_source(_rows_reading(source), "rows.py", "S")
    else:
        p = parse_file(kernel_path(source), "MINI")
    d = compute_dependences(p)
    shortcut = refused = 0
    for deps, before, tile, after in _register_steps(p, d):
        whole = order_violation(deps, before, after)
        if all(tiles_alone(deps, before, (b.i, b.j, b.k), b.stmt) for b in tile.blocks):
            shortcut += 1
            assert whole is None, tile.describe(before)
        refused += whole is not None
    if source == "range(M)":
        assert refused and not shortcut
    else:
        assert shortcut


def test_the_shortcut_needs_the_dependences_with_other_statements_carried_before_the_band():
    """gemm's product tiled in the i loop it shares with `C *= beta`: its band is permutable, but
    the scaling of row i must precede its products, ordered inside the band: not `tiles_alone`,
    and the schedule check refuses the tile (the shortcut alone would keep it)."""
    from looper.poly.legality import order_violation, tiles_alone
    p = parse_file(kernel_path("gemm"), "MINI")
    d = compute_dependences(p)
    before = Schedule(p)
    tile = RegisterTile((("S1", 1, 5, 3, 4, 16, 8),))  # S1: i (row 1), k (3), j (5), with S0 in i
    after = before.then(tile)
    assert order_violation(d, before.lowered, after.lowered) is not None
    assert not tiles_alone(d, before.lowered, (1, 5, 3), "S1")
    assert check_schedule(d, after) is not None
