"""The complete C program around one or more kernel variants, after PolyBench's conventions.

Layout: size macros, arrays as aligned globals, `init_array` (the program's init, as written),
one `kernel_K` function per variant with its loop nest between `#pragma scop`/`#pragma endscop`,
`dump_arrays` (PolyBench's dump format on stderr) and `main`.

`main [VARIANT [REPEATS]]` runs init once, starts the OpenMP runtime in an untimed parallel region,
then runs the variant REPEATS times, restoring the initial arrays before each run (kernels update
in place).  With `-DPOLYBENCH_TIME` it prints each run's kernel time in seconds on stdout; with
`-DPOLYBENCH_DUMP_ARRAYS` it dumps OUTPUTS after the last run.
"""
from __future__ import annotations

from importlib import resources
from dataclasses import dataclass
from typing import Sequence

import cgen

from ..caching import per_object
from ..ir.program import Array, Assign, DType, Guard, Loop, Node, Program
from ..ir.schedule import Lowered
from .ast import kernel_body
from .cexpr import c_assign, c_bound, c_name
from .storage import byte_count, heap_arrays, pointer_declarator, temporaries

# Bumped whenever how a run is timed changes: part of every measurement's memo key, and recorded
# with every collected data point.  2: arrays are touched before the first timed run, and
# OpenMP threads spin while waiting (then always; now `runtime.ompenv.TUNED_ENV`, a choice).
# 3: `main ... cold` times the first call with the OpenMP team created inside it.  4: arrays a C
# program passes by pointer reach the kernel as pointer parameters (`Program.passed`).
HARNESS_VERSION = 4

def _template(name: str) -> str:
    """A C file of the harness, shipped in `codegen/templates/`."""
    return resources.files(__package__).joinpath("templates", name).read_text()


# Includes, the dump format, and the floord/min/max helpers isl's AST uses.
PRELUDE = _template("prelude.c")
# `main`: runs a variant REPEATS times (see the module docstring), checks or saves outputs.
MAIN = _template("main.c")
# `looper_flush_cache`: the user's preamble (`ir.program.Preamble`), which `main` runs before
# every timed call when LOOPER_FLUSH_KIB is defined
FLUSH = _template("flush.c")



def _void_fn(name: str, exported: bool = False) -> cgen.Generable:
    """`static void name(void)`: every generated function works on the globals (`exported`: no
    `static`, for a kernel whose table is in another translation unit)."""
    return cgen.Line(f"{'' if exported else 'static '}void {name}(void)")


def _decl(a: Array, env: dict[str, str], on_heap: bool = False) -> str:
    dims = [c_bound(s, env) for s in a.shape]
    if on_heap:  # a pointer to the array's rows (codegen.storage), indexed as the array is
        return f"{a.dtype.ctype} {pointer_declarator(c_name(a.name), dims)}"
    return f"{a.dtype.ctype} {c_name(a.name)}{''.join(f'[{d}]' for d in dims)}"


def _bytes(a: Array, env: dict[str, str], heap: frozenset[str]) -> str:
    """The C expression of an array's (or scalar's) size in bytes."""
    return byte_count(c_name(a.name), c_bound(a.shape[0], env) if a.rank else "", a.name in heap)


def _size_env(program: Program) -> dict[str, str]:
    return {n: c_name(n) for n in program.sizes}


def tree_to_c(nodes: Sequence[Node], env: dict[str, str]) -> list[cgen.Generable]:
    """Print a loop tree as written (init bodies; also the readable form of a kernel)."""
    out: list[cgen.Generable] = []
    for n in nodes:
        if isinstance(n, Loop):
            v = c_name(n.var)
            inner = {**env, n.var: v}
            lo, up = c_bound(n.lower, env), c_bound(n.upper, env)
            cmp, step = ("<", f"{v}++") if n.step > 0 else (">", f"{v}--")
            out.append(cgen.For(f"int {v} = {lo}", f"{v} {cmp} {up}", step,
                                cgen.Block(tree_to_c(n.body, inner))))
        elif isinstance(n, Guard):
            then = cgen.Block(tree_to_c(n.then, env))
            orelse = cgen.Block(tree_to_c(n.orelse, env)) if n.orelse else None
            out.append(cgen.If(n.cond.c(env), then, orelse))
        else:
            assert isinstance(n, Assign)
            out.append(cgen.Statement(c_assign(n, env)))
    return out


def _locals(arrays: Sequence[Array]) -> list[cgen.Generable]:
    return [cgen.Statement(f"{a.dtype.ctype} {c_name(a.name)} = 0") for a in arrays]


@per_object
def _body(lowered: Lowered) -> tuple:
    """A schedule's loop nest (isl's AST build is the costly part: once per schedule)."""
    return kernel_body(lowered)


def kernel_function(lowered: Lowered, name: str, exported: bool = False) -> cgen.FunctionBody:
    body, iterators = _body(lowered)
    return _function(lowered.program, name, body, iterators, temporaries(lowered, c_name), exported)


def _function(p: Program, name: str, body: list[cgen.Generable], iterators: list[str],
              storage: tuple[list[str], list[str]] = ([], []), exported: bool = False) -> cgen.Generable:
    locals_ = [a for a in p.arrays.values() if a.role == "local"]
    decls = _locals(locals_)
    env = _size_env(p)
    # the arrays the schedule adds (packed copies, expanded temporaries), allocated as the C
    # function a user calls allocates them: a binary holds many variants, and static copies of a
    # large expanded array in each would pass the 2 GB the small code model reaches
    allocate, free = storage
    decls += [cgen.Line(x) for x in allocate]
    if iterators:
        decls.append(cgen.Statement("int " + ", ".join(iterators)))
    contents = decls + [cgen.Line("#pragma scop")] + body + [cgen.Line("#pragma endscop")] + [cgen.Line(x) for x in free]
    passed = [a for a in p.arrays.values() if a.name in p.passed and a.rank]
    if not passed:
        return cgen.FunctionBody(_void_fn(name, exported), cgen.Block(contents))
    # C the user calls with pointers: the kernel sees them as parameters (that shadow the
    # globals), in a function gcc may neither inline nor specialize (`noipa`), so that it knows
    # no more about them than the user's function knows about its arguments; the scalars it only
    # reads come by value, as a caller's arguments do (else every store through a pointer could
    # change them, and gcc would load them again after each)
    written = {a.array for st in p.statements for a in st.accesses if a.is_write}
    passed += [a for a in p.arrays.values() if not a.rank and a.role == "param" and a.name not in written]
    heap = heap_arrays(p)
    params = ", ".join(_decl(a, env, a.name in heap) for a in passed)
    inner = cgen.FunctionBody(cgen.Line(f"static void __attribute__((noipa)) {name}_kernel({params})"),
                              cgen.Block(contents))
    call = cgen.Statement(f"{name}_kernel({', '.join(c_name(a.name) for a in passed)})")
    return cgen.Module([inner, cgen.Line(), cgen.FunctionBody(_void_fn(name, exported), cgen.Block([call]))])


def _outputs_io(program: Program) -> list[cgen.Generable]:
    """save_outputs / check_outputs: the raw output arrays of a reference run, and a comparison
    against them (relative 1e-7 for f64, 5e-4 for f32, exact for integers; -1 if unreadable)."""
    env, heap = _size_env(program), heap_arrays(program)
    save: list[cgen.Generable] = [cgen.Statement('FILE *f = fopen(path, "wb")'),
                                  cgen.If("!f", cgen.Statement("return 1"))]
    check: list[cgen.Generable] = [cgen.Statement('FILE *f = fopen(path, "rb")'),
                                   cgen.If("!f", cgen.Statement("return -1")),
                                   cgen.Statement("long bad = 0")]
    for out in program.outputs:
        a = program.arrays[out.array]
        n = c_name(a.name)
        ref = n if a.rank else f"&{n}"
        t = a.dtype.ctype
        size = _bytes(a, env, heap)
        save.append(cgen.If(f"fwrite({ref}, {size}, 1, f) != 1",
                            cgen.Block([cgen.Statement("fclose(f)"), cgen.Statement("return 1")])))
        if a.dtype.is_float:
            # FMA contraction may differ between loop orders: allow a few ulps per operation
            rel, absolute = ("5e-4", "1e-6") if a.dtype is DType.F32 else ("1e-7", "1e-10")
            same = "(g[i] == r[i] || (isnan(g[i]) && isnan(r[i])) || fabs((double)g[i] - (double)r[i]) " \
                   f"<= {rel} * fabs((double)r[i]) + {absolute} * scale)"
            body = [
                cgen.Statement("double scale = 0"),
                cgen.For("long i = 0", "i < cnt", "i++",
                         cgen.If("fabs((double)r[i]) > scale", cgen.Statement("scale = fabs((double)r[i])"))),
                cgen.For("long i = 0", "i < cnt", "i++", cgen.If(f"!{same}", cgen.Statement("bad++"))),
            ]
        else:
            body = [cgen.For("long i = 0", "i < cnt", "i++", cgen.If("g[i] != r[i]", cgen.Statement("bad++")))]
        check.append(cgen.Block([
            cgen.Statement(f"long cnt = {size} / sizeof({t})"),
            cgen.Statement(f"{t} *r = malloc({size})"),
            cgen.Statement(f"const {t} *g = (const {t} *){ref}"),
            cgen.If(f"!r || fread(r, {size}, 1, f) != 1",
                    cgen.Block([cgen.Statement("fclose(f)"), cgen.Statement("free(r)"),
                                cgen.Statement("return -1")])),
            *body,
            cgen.Statement("free(r)"),
        ]))
    save += [cgen.Statement("return fclose(f) != 0")]
    check += [cgen.Statement("fclose(f)"), cgen.Statement("return bad")]
    return [cgen.FunctionBody(cgen.Line("static int save_outputs(const char *path)"), cgen.Block(save)),
            cgen.Line(),
            cgen.FunctionBody(cgen.Line("static long check_outputs(const char *path)"), cgen.Block(check))]


def _dump(program: Program, env: dict[str, str]) -> cgen.FunctionBody:
    lines: list[cgen.Generable] = [
        cgen.Statement("long looper_count = 0"),
        cgen.Statement('fprintf(stderr, "==BEGIN DUMP_ARRAYS==\\n")'),
    ]
    for out in program.outputs:
        a = program.arrays[out.array]
        cname = c_name(a.name)
        idx = [f"d{k}" for k in range(a.rank)]
        fmt = f"LOOPER_FMT_{a.dtype.short.upper()}"
        item = cgen.Block([
            cgen.Statement('if (looper_count++ % 20 == 0) fprintf(stderr, "\\n")'),
            cgen.Statement(f'fprintf(stderr, {fmt}, {cname}{"".join(f"[{i}]" for i in idx)})'),
        ])
        body: cgen.Generable = item
        for k in reversed(range(a.rank)):
            lo = "0"
            hi = c_bound(a.shape[k], env)
            if k == 1 and out.region == "lower":
                hi = "d0 + 1"
            if k == 1 and out.region == "upper":
                lo = "d0"
            body = cgen.For(f"int d{k} = {lo}", f"d{k} < {hi}", f"d{k}++", body)
        lines += [
            cgen.Statement("looper_count = 0"),
            cgen.Statement(f'fprintf(stderr, "begin dump: %s", "{a.name}")'),
            body,
            cgen.Statement(f'fprintf(stderr, "\\nend   dump: %s\\n", "{a.name}")'),
        ]
    lines.append(cgen.Statement('fprintf(stderr, "==END   DUMP_ARRAYS==\\n")'))
    return cgen.FunctionBody(
        _void_fn("dump_arrays"),
        cgen.Block(lines))


def _state(program: Program) -> list[cgen.Generable]:
    """save_state/restore_state: copies of every kernel variable, so repeated runs start equal."""
    arrays = [a for a in program.arrays.values() if a.role == "param"]
    env, heap = _size_env(program), heap_arrays(program)
    save, restore, decls = [], [], []
    for a in arrays:
        n = c_name(a.name)
        ref = n if a.rank else f"&{n}"
        size = _bytes(a, env, heap)
        decls.append(cgen.Statement(f"static void *looper_saved_{a.name}"))
        save += [cgen.Statement(f"looper_saved_{a.name} = malloc({size})"),
                 cgen.If(f"!looper_saved_{a.name}",
                         cgen.Block([cgen.Statement('perror("malloc")'), cgen.Statement("exit(3)")])),
                 cgen.Statement(f"memcpy(looper_saved_{a.name}, {ref}, {size})")]
        restore.append(cgen.Statement(f"memcpy({ref}, looper_saved_{a.name}, {size})"))
    # Arrays that init never writes live on the zero page until their first write: without this
    # the first timed run pays a page fault per 4 KB of output (seen: first runs 2-3.5x slower
    # than the next ones, so good candidates were cut off as "slow" after their first run).
    touch = [s for a in program.arrays.values() if a.role in ("param", "init") for s in _touch(a, env, heap)]
    fn = lambda name, body: cgen.FunctionBody(  # noqa: E731
        _void_fn(name), cgen.Block(body))
    return decls + [fn("first_touch", touch or [cgen.Statement("return")]), cgen.Line(),
                    fn("save_state", save), cgen.Line(), fn("restore_state", restore)]


def _touch(a: Array, env: dict[str, str], heap: frozenset[str]) -> list[cgen.Generable]:
    """Map every page of one array (allocate it first when it lives on the heap)."""
    n = c_name(a.name)
    out: list[cgen.Generable] = []
    if a.name in heap:
        out.append(cgen.If(f"posix_memalign((void **)&{n}, 64, {_bytes(a, env, heap)}) != 0",
                           cgen.Block([cgen.Statement('perror("posix_memalign")'), cgen.Statement("exit(3)")])))
    out.append(cgen.Statement(f"memset({n if a.rank else '&' + n}, 0, {_bytes(a, env, heap)})"))
    return out


def _header(program: Program, comment: str, bake_env: str = "") -> list[cgen.Generable]:
    parts: list[cgen.Generable] = [cgen.Comment(comment.replace("*/", "* /")), cgen.Line(PRELUDE.rstrip()),
                                   cgen.Line()]
    if bake_env:  # `main` sets these OpenMP variables for itself (templates/main.c)
        parts += [cgen.Define("LOOPER_BAKED_OMP_ENV", '"' + bake_env.replace('"', "") + '"'), cgen.Line()]
    if program.preamble is not None:  # `main` runs it before every timed call (templates/main.c)
        parts += [cgen.Define("LOOPER_FLUSH_KIB", str(program.preamble.flush_kib)), cgen.Line(FLUSH.rstrip()),
                  cgen.Line()]
    for n, v in program.sizes.items():
        parts.append(cgen.Define(c_name(n), str(v)))
    parts.append(cgen.Line())
    return parts


def _arrays(program: Program, storage: str, roles: tuple[str, ...]) -> list[cgen.Generable]:
    """Array and scalar globals: `static` (one file), definitions or `extern` declarations."""
    env, heap = _size_env(program), heap_arrays(program)
    out: list[cgen.Generable] = []
    for a in program.arrays.values():
        if a.role in roles:
            align = " __attribute__((aligned(64)))" if a.rank and a.name not in heap else ""
            out.append(cgen.Statement(f"{storage}{_decl(a, env, a.name in heap)}{align}"))
    out.append(cgen.Line())
    return out


@dataclass(frozen=True)
class KernelCode:
    """A kernel body printed from an AST built elsewhere (isl's own scheduler, for instance)."""

    program: Program
    body: tuple
    iterators: tuple[str, ...]


def _kernels(variants: Sequence["Lowered | KernelCode"], comments: Sequence[str],
             preamble: bool = False) -> list[cgen.Generable]:
    """One function per variant and the table `main` picks from; with the user's `preamble`,
    which variants start a thread team (the preamble's flush starts it for those alone, as
    PolyBench's does in a build with OpenMP, which only a parallel answer gets)."""
    from ..runtime.compile import openmp_flags
    parts: list[cgen.Generable] = []
    teams = []
    for k, v in enumerate(variants):
        if k < len(comments) and comments[k]:
            parts.append(cgen.Comment(comments[k].replace("*/", "* /")))
        if isinstance(v, KernelCode):
            fn = _function(v.program, f"kernel_{k}", list(v.body), list(v.iterators))
        else:
            fn = kernel_function(v, f"kernel_{k}")
        parts += [fn, cgen.Line()]
        teams.append(preamble and openmp_flags(str(fn)) == ("-fopenmp",))
    return parts + _table(len(variants), teams if preamble else None)


def _table(n: int, teams: Sequence[bool] | None) -> list[cgen.Generable]:
    """The table of kernels `main` picks from (and, with a preamble, which start a team)."""
    parts: list[cgen.Generable] = [
        cgen.Line(f"const int looper_n_variants = {n};"),
        cgen.Line("void (*const looper_kernels[])(void) = {" + ", ".join(f"kernel_{k}" for k in range(n)) + "};")]
    if teams is not None:
        parts.append(cgen.Line(f"const int looper_starts_team[] = {{{', '.join(str(int(t)) for t in teams)}}};"))
    return parts + [cgen.Line()]


def _kernel_units(variants: Sequence[Lowered], units: int, preamble: bool) -> list[list[cgen.Generable]]:
    """The kernels of `variants` dealt into `units` translation units of about as much code each
    (the largest first, to the unit with the least), so that gcc compiles them at once: the first
    unit holds the table, with a prototype of each kernel another unit exports."""
    from ..runtime.compile import openmp_flags
    code = [kernel_function(v, f"kernel_{k}", exported=True) for k, v in enumerate(variants)]
    text = [str(fn) for fn in code]
    load, where = [0] * units, [0] * len(code)
    for k in sorted(range(len(code)), key=lambda k: -len(text[k])):
        where[k] = min(range(units), key=lambda u: load[u])
        load[where[k]] += len(text[k])
    out: list[list[cgen.Generable]] = [[] for _ in range(units)]
    for k, fn in enumerate(code):
        out[where[k]] += [fn, cgen.Line()]
    teams = [preamble and openmp_flags(t) == ("-fopenmp",) for t in text]
    out[0] += [cgen.Line(f"void kernel_{k}(void);") for k in range(len(code)) if where[k]]
    out[0] += _table(len(code), teams if preamble else None)
    return [u for u in out if u]


def _harness(program: Program) -> list[cgen.Generable]:
    """Everything but the kernels: init, state save/restore, output check, dump, main."""
    env = _size_env(program)
    init_body = _locals(list(program.init_locals.values())) + tree_to_c(program.init, env)
    parts: list[cgen.Generable] = [
        cgen.FunctionBody(_void_fn("init_array"), cgen.Block(init_body)), cgen.Line(),
        cgen.Line("extern const int looper_n_variants;"),
        cgen.Line("extern void (*const looper_kernels[])(void);"),
    ] + ([cgen.Line("extern const int looper_starts_team[];")] if program.preamble is not None else []) + [
        cgen.Line(),
    ]
    parts.extend(_state(program))
    parts.append(cgen.Line())
    parts.extend(_outputs_io(program))
    parts.append(cgen.Line())
    parts.append(_dump(program, env))
    parts.append(cgen.Line())
    parts.append(cgen.Line(MAIN.strip()))
    return parts


def _title(program: Program) -> str:
    head = program.doc.splitlines()[0] if program.doc else program.name
    return f"{head}\nGenerated by looper from {program.path}, sizes {program.size_label}."


def program_c(program: Program, variants: Sequence["Lowered | KernelCode"], comments: Sequence[str] = (),
              bake_env: str = "") -> str:
    """The whole C program in one file: one `kernel_K` per lowered schedule (variant 0 first).
    `bake_env` ("K=V ..."): OpenMP settings the program's `main` gives itself."""
    parts = _header(program, _title(program), bake_env) + _arrays(program, "static ", ("param", "init")) + \
        _kernels(variants, comments, program.preamble is not None) + _harness(program)
    return "\n".join(str(p) for p in parts) + "\n"


def split_program_c(program: Program, variants: Sequence[Lowered], units: int = 1) -> tuple[str, tuple[str, ...]]:
    """The same program as translation units: the harness (compiled once per program and reused)
    and the kernels (compiled per batch of candidates), which is 3x less gcc time; `units` > 1
    deals the kernels into that many units, which gcc compiles at once (`runtime.compile`)."""
    common = _header(program, _title(program) + " Harness part.") + \
        _arrays(program, "", ("param", "init")) + _harness(program)
    head = _header(program, _title(program) + " Kernels part.") + _arrays(program, "extern ", ("param",))
    preamble = program.preamble is not None
    bodies = ([_kernels(variants, (), preamble)] if units <= 1 or len(variants) < 2
              else _kernel_units(variants, min(units, len(variants)), preamble))
    return ("\n".join(str(p) for p in common) + "\n",
            tuple("\n".join(str(p) for p in head + body) + "\n" for body in bodies))
