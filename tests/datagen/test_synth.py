"""Synthetic programs: every one parses, compiles, runs, and dumps finite outputs."""
from __future__ import annotations

import hashlib
import math
import subprocess
from concurrent.futures import ThreadPoolExecutor

from looper.codegen.harness import program_c
from looper.datagen.synth import synth_program
from looper.lang.parse import parse_source
from looper.runtime.run import parse_dump
from looper.transforms.schedule import original

N_PROGRAMS = 200


def _generate(seed: int, tmp, scalars: bool = False,
              patterns: tuple[str, ...] | None = None) -> tuple[str | None, object]:
    """Parse and emit C in the calling thread: CPython's `ast` and isl contexts are not
    thread-safe, so only gcc and the runs go to the thread pool."""
    src = synth_program(seed, target=(2e3, 2e4), scalars=scalars, patterns=patterns)
    try:
        program = parse_source(src, f"synth{seed}.py", "DEFAULT")
    except Exception as e:  # noqa: BLE001 - report which seed failed and why
        return f"seed {seed}: does not parse: {e}", None
    c = tmp / f"s{seed}.c"
    c.write_text(program_c(program, [original(program)]))
    return None, (seed, c, {o.array for o in program.outputs})


def _build_and_run(job) -> str | None:
    seed, c, outputs = job
    exe = c.with_suffix("")
    r = subprocess.run(["gcc", "-O1", "-DPOLYBENCH_DUMP_ARRAYS", str(c), "-lm", "-o", str(exe)],
                       capture_output=True, text=True)
    if r.returncode:
        return f"seed {seed}: gcc: {r.stderr[:300]}"
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    if r.returncode:
        return f"seed {seed}: exit {r.returncode}"
    dump = parse_dump(r.stderr)
    if set(dump) != outputs:
        return f"seed {seed}: dumped {sorted(dump)}"
    if any(not math.isfinite(v) for vals in dump.values() for v in vals):
        return f"seed {seed}: non-finite output"
    return None


def test_hundreds_of_synthetic_programs_compile_and_run(tmp_path):
    generated = [_generate(seed, tmp_path) for seed in range(N_PROGRAMS)]
    generated += [_generate(seed, tmp_path, scalars=True) for seed in range(10_000, 10_000 + N_PROGRAMS // 2)]
    # coupled fields run up to 32 time steps: their values must stay finite
    generated += [_generate(seed, tmp_path, patterns=("coupled",)) for seed in range(20_000, 20_000 + N_PROGRAMS // 4)]
    generated += [_generate(seed, tmp_path, patterns=("columns",)) for seed in range(30_000, 30_000 + N_PROGRAMS // 8)]
    problems = [err for err, _ in generated if err]
    jobs = [job for err, job in generated if not err]
    with ThreadPoolExecutor(max_workers=2) as pool:
        problems += [p for p in pool.map(_build_and_run, jobs) if p]
    assert not problems, "\n".join(problems[:10])


def test_synthetic_programs_cover_the_patterns():
    """Across seeds: several nests, depth up to 5, non-rectangular domains, all three types."""
    depths, nests, types, triangular = set(), set(), set(), 0
    for seed in range(120):
        p = parse_source(synth_program(seed, target=(2e3, 2e4)), "x.py", "DEFAULT")
        depths.add(p.max_depth)
        nests.add(len({s.beta[0] for s in p.statements}))
        types.add(p.arrays[p.outputs[0].array].dtype.short)
        triangular += any("i" in repr(l.upper) for l in p.kernel if hasattr(l, "upper"))
        triangular += "range(i" in p.source
    assert {1, 2, 3, 4, 5} <= depths
    assert {1, 2, 3} <= nests
    assert types == {"f64", "f32", "i32"}
    assert triangular > 5


def test_scalar_programs_keep_values_in_local_scalars_and_old_seeds_do_not_change():
    locals_per_program = []
    for seed in range(40):
        p = parse_source(synth_program(seed, target=(2e3, 2e4), scalars=True), "x.py", "DEFAULT")
        locals_per_program.append(sum(a.role == "local" for a in p.arrays.values()))
        assert synth_program(seed, target=(2e3, 2e4)) != synth_program(seed, target=(2e3, 2e4), scalars=True)
    assert min(locals_per_program) >= 1
    # scripts/datagen.sh regenerates the shipped data's programs from their seeds: the default mix
    # must give the programs it gave when the data were collected
    text = "".join(synth_program(seed, target=(3e6, 3e7)) for seed in range(5))
    assert hashlib.sha256(text.encode()).hexdigest()[:16] == "eb2736f983c7652c"
    assert all(a.role != "local" for seed in range(40) for a in
               parse_source(synth_program(seed, target=(2e3, 2e4)), "x.py", "DEFAULT").arrays.values())


def test_sizes_hit_the_instance_target():
    for seed in range(10):
        p = parse_source(synth_program(seed, target=(1e5, 1e6)), "x.py", "DEFAULT")
        n = sum(int(s.domain.count_val().to_python()) for s in p.statements)
        assert 5e4 <= n <= 2e6, (seed, n)


def _kernel_statements(source: str) -> list[str]:
    body = source.split("def kernel(")[1].split("\nOUTPUTS")[0].splitlines()[1:]
    return [line.strip() for line in body if line.strip() and not line.strip().startswith("for ")]


def test_patterns_restrict_the_mix():
    import re

    import pytest

    from looper.datagen.synth import pattern_names

    for seed in range(30):
        copies = _kernel_statements(synth_program(seed, target=(2e3, 2e4), patterns=("copy",)))
        assert copies and all(re.fullmatch(r"\w+\[j, i\] = \w+\[i, j\]", s) for s in copies), copies
        products = _kernel_statements(synth_program(seed, target=(2e3, 2e4), patterns=("matmul",)))
        assert all(re.fullmatch(r"\w+\[i, j\] (\*= .+|\+= \(?\w+\[i, k\] \* \w+\[k, j\]\)?( % 97)?)", s)
                   for s in products), products
        # naming every pattern is the default mix: same random choices, same program
        assert synth_program(seed, target=(2e3, 2e4), patterns=tuple(pattern_names())) == \
            synth_program(seed, target=(2e3, 2e4))
        # coupled fields: several nests inside each time loop, never in the default mix
        coupled = synth_program(seed, target=(2e3, 2e4), patterns=("coupled",))
        p = parse_source(coupled, "x.py", "DEFAULT")
        time_loops = {s.beta[0] for s in p.statements}
        assert coupled.count("for t in range(T):") == len(time_loops)
        assert len(p.statements) >= 2 * len(time_loops)
    assert "coupled" not in pattern_names() and "columns" not in pattern_names()
    with pytest.raises(ValueError, match="unknown synthetic patterns"):
        synth_program(0, patterns=("gemm",))


def test_scaled_products_scale_about_half_and_change_nothing_else():
    """`scaled_products`: about half the matrix products read `coef * A[i, k] * B[k, j]` (gemm's
    alpha) and every such program parses; without the flag no product is scaled, so the
    committed data parts still reproduce."""
    import re

    from looper.lang.parse import parse_source

    scaled = plain = 0
    for seed in range(40):
        src = synth_program(seed, target=(2e3, 2e4), patterns=("matmul",), scaled_products=True)
        parse_source(src, f"s{seed}.py", "DEFAULT")
        for s in _kernel_statements(src):
            if "+=" in s:
                m = re.fullmatch(r"\w+\[i, j\] \+= \(?((alpha|beta|[0-9.]+) \* )?\w+\[i, k\] \* \w+\[k, j\]\)?( % 97)?", s)
                assert m, s
                scaled += bool(m.group(1))
                plain += not m.group(1)
        assert not re.search(r"(alpha|beta|[0-9.]+) \* \w+\[i, k\]",
                             synth_program(seed, target=(2e3, 2e4), patterns=("matmul",)))
    assert scaled > 10 and plain > 10


def test_column_products_give_the_pack_level_its_sites():
    """`columns`: every nest is a product whose read-only operand walks a column (syrk's
    `A[j, k]`, trmm's `A[k, i]`), so the pack level proposes copies on the original program of
    every floating-point seed; the operands it packs are never written."""
    import re

    from looper.poly.deps import compute_dependences
    from looper.search.candidates import generate
    from looper.transforms import Pack
    from looper.transforms.schedule import Schedule

    from helpers import TARGET

    floating = 0
    for seed in range(8):
        src = synth_program(seed, target=(2e4, 2e5), patterns=("columns",))
        products = _kernel_statements(src)
        assert products and all(re.search(r"\w+\[j, k\]|\w+\[k, i\]", s) for s in products), products
        p = parse_source(src, "x.py", "DEFAULT")
        if p.arrays[p.outputs[0].array].dtype.short == "i32":
            continue
        floating += 1
        packs = [c for c in generate("pack", Schedule(p), compute_dependences(p), grown=True, target=TARGET)
                 if all(isinstance(t, Pack) for t in c)]
        written = {a.array for st in p.statements for a in st.accesses if a.is_write}
        assert packs and not {t.array for c in packs for t in c} & written, seed
    assert floating >= 5
