"""The rewritten C file (`codegen.inplace`) for chosen schedules, whatever a search would answer:
a region answered by the original schedule stays as written, byte for byte; the others get a
block per set of sizes, entered at those sizes, with the original statements for the rest.  Every
file is compiled and run against the original at the tuned sizes and at another."""
from __future__ import annotations

from pathlib import Path

from looper.codegen.inplace import Version, inplace_source, inplace_versions_source
from looper.lang.c.cfile import parse_c_file
from looper.transforms import Interchange, Parallelize
from looper.transforms.schedule import Schedule

from helpers import SIZED_BY_DEFINES, run_sized


def _at(src: Path, n: int):
    cfile = parse_c_file(src, (f"-DN={n}",))
    return cfile, cfile.scops[0]


def _tuned(scop):
    """A schedule that is not the original: j outermost, parallel."""
    return Schedule(scop.program).then(Interchange(("S0",), 1, 3)).then(Parallelize(((("S0",), 1),))).lowered


def test_an_original_answer_leaves_the_file_as_it_was(tmp_path):
    for name, text in (("lf", SIZED_BY_DEFINES), ("crlf", SIZED_BY_DEFINES.replace("\n", "\r\n"))):
        src = tmp_path / f"{name}.c"
        src.write_bytes(text.encode())
        cfile, scop = _at(src, 40)
        assert inplace_source(cfile, [None], ["looper: original"]).encode() == text.encode()
        assert inplace_versions_source(cfile, [[Version(scop, None, "looper: original", "N=40"),
                                                Version(_at(src, 80)[1], None, "looper: original", "N=80")]]) == text


def test_a_tuned_answer_is_entered_at_its_sizes(tmp_path):
    src = tmp_path / "k.c"
    src.write_text(SIZED_BY_DEFINES)
    cfile, scop = _at(src, 40)
    text = inplace_source(cfile, [_tuned(scop)], ["looper: interchange ; parallelize"])
    assert "#pragma scop" not in text and "if (n == 40\n" in text and "omp parallel for" in text
    assert "} else {\n" + scop.inner in text  # any other n runs the statements as written
    out = tmp_path / "k.looper.c"
    out.write_text(text)
    for n in (40, 50):
        assert run_sized(out, n, tmp_path) == run_sized(src, n, tmp_path), n


def test_versions_whose_answer_is_original_take_the_original_branch(tmp_path):
    """Two sets of sizes, one tuned, one answered by the original: only the tuned one gets a
    block; the region's comment says the other runs the original code."""
    src = tmp_path / "k.c"
    src.write_text(SIZED_BY_DEFINES)
    (c40, s40), (_, s80) = _at(src, 40), _at(src, 80)
    both = inplace_versions_source(c40, [[Version(s40, _tuned(s40), "looper: tuned", "N=40"),
                                          Version(s80, _tuned(s80), "looper: tuned", "N=80")]])
    assert "if (n == 40\n" in both and "} else if (n == 80\n" in both
    one = inplace_versions_source(c40, [[Version(s40, None, "looper: original", "N=40"),
                                         Version(s80, _tuned(s80), "looper: tuned", "N=80")]])
    assert "if (n == 80\n" in one and "n == 40" not in one
    assert "N=40 (n=40): looper: original (runs the original code)" in one
    for name, text in (("both", both), ("one", one)):
        out = tmp_path / f"{name}.c"
        out.write_text(text)
        for n in (40, 80, 50):
            assert run_sized(out, n, tmp_path) == run_sized(src, n, tmp_path), (name, n)


def test_the_overlap_test_guards_a_tuned_block(tmp_path):
    """Array parameters may alias: a tuned block is entered only where they do not overlap."""
    src = tmp_path / "axpy.c"
    src.write_text("#define N 64\nvoid axpy(int n, double a, double x[N], double y[N])\n{\n  int i;\n"
                   "#pragma scop\n  for (i = 0; i < n; i++)\n    y[i] = a * x[i] + y[i];\n#pragma endscop\n}\n")
    cfile = parse_c_file(src)
    scop = cfile.scops[0]
    lowered = Schedule(scop.program).then(Parallelize(((("S0",), 1),))).lowered
    assert "if (n == 64\n      && looper_disjoint(x, 0, 64, y, 0, 64)) {" in inplace_source(cfile, [lowered], ["x"])
    assert inplace_source(cfile, [None], ["x"]) == src.read_text()
