"""The OpenMP flag a C file is built with: -fopenmp only where it starts a thread team."""
from __future__ import annotations

import pytest

from looper.runtime.compile import openmp_flags


@pytest.mark.parametrize("source, flags", [
    ("for (i = 0; i < n; i++)\n  a[i] = 0;\n", ()),
    ("  #pragma omp simd\n  for (i = 0; i < n; i++) a[i] = 0;\n", ("-fopenmp-simd",)),
    ("#pragma omp parallel for\nfor (i = 0; i < n; i++) a[i] = 0;\n", ("-fopenmp",)),
    ("#  pragma  omp parallel\n{\n#pragma omp for nowait\n}\n", ("-fopenmp",)),
    ("#pragma omp parallel for simd\nfor (i = 0; i < n; i++) a[i] = 0;\n", ("-fopenmp",)),
    ("#pragma omp simd\nfor (;;) ;\n#pragma omp parallel for\nfor (;;) ;\n", ("-fopenmp",)),
    ("#include <omp.h>\nint t = omp_get_max_threads();\n", ("-fopenmp",)),
    ("/* no pragma omp here */ int x;\n", ()),
])
def test_openmp_flags_follow_the_directives(source, flags):
    assert openmp_flags(source) == flags
