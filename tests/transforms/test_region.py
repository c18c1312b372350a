"""One parallel region around a kernel's parallel loops: printed with work-shared loops and
barriers only where isl says a dependence needs one; the same outputs at 1, 2 and 4 threads."""
from __future__ import annotations

from looper.codegen.harness import program_c
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.search.candidates import generate
from looper.tune import TuneOptions, prepare
from looper.transforms import ParallelRegion
from looper.transforms.parallel import forks_more_than_once
from looper.transforms.schedule import Schedule

from conftest import ROOT, kernel_path
from helpers import TARGET, differential

WAVE = ROOT / "benchmarks" / "programs" / "wave2d.py"  # a wave stencil: three nests in a time loop


def _parallel(p):
    d = compute_dependences(p)
    s = Schedule(p)
    return s.then(*generate("parallel", s, d, target=TARGET)[0]), d


def test_parallel_loops_in_a_time_loop_share_one_region(tmp_path):
    p = parse_file(WAVE, "MINI")
    s, d = _parallel(p)
    assert forks_more_than_once(s.lowered)
    r = s.then(ParallelRegion())
    text = program_c(p, [r.lowered])
    kernel = text[text.index("kernel_0(void)"):text.index("#pragma endscop")]
    assert kernel.count("omp parallel") == 1 and "omp parallel for" not in kernel
    assert kernel.count("omp for") == 3
    # V = U and W = f(U, V) in one step: V's copy may not start before W's reads of V finish,
    # but U = W must wait for W: barriers where the dependences are
    assert kernel.count("nowait") <= 1
    for threads in (1, 2, 4):
        assert differential(p, [s, r], tmp_path, threads=threads) == []


def test_independent_loops_drop_their_barriers():
    p = parse_file(kernel_path("fdtd_2d"), "MINI")
    s, d = _parallel(p)
    text = program_c(p, [s.then(ParallelRegion()).lowered])
    assert "omp for nowait" in text  # ey's boundary row and ex do not depend on each other


def test_model_answers_get_a_region_when_they_fork_more_than_once():
    p = parse_file(WAVE, "MINI")
    search = prepare(p, TuneOptions(), TARGET)
    assert search.policy.regions
    best = search.run(compute_dependences(p)).best
    if best.lowered.parallel:
        assert best.lowered.region and best.steps[-1].kind == "region"
