"""C preprocessing for the front end: `gcc -E` with the user's flags, then the text pycparser parses.

pycparser reads standard C, and the system headers of a libc are GNU C (`__attribute__`, `__asm__`
labels, `_Float128`, `__builtin_va_list`, inline bodies) that differs from one libc version to the
next.  Rather than teach pycparser one libc's dialect, looper parses only the user's code:

- the lines gcc attributes to a system header (line-marker flag 3) are dropped; what the user's
  code needs from them is the names they typedef, so each becomes a stub declaration (the real
  type when it is a plain arithmetic type, an opaque struct otherwise: `typedef long int64_t;`,
  `typedef struct looper_opaque FILE;`), found by a small scanner over their tokens;
- in the user's own code, GNU keywords are blanked or spelled in standard C (`__restrict` ->
  `restrict`, `__attribute__((...))` -> spaces), and so are the bodies of functions that hold no
  `#pragma scop`: nothing in them matters to looper, so nothing in them can stop the parse.

Every edit keeps line and column positions, and gcc's line markers stay, so pycparser's
coordinates are those of the user's original file.
"""
from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ...errors import LooperSyntaxError, LooperUsageError

STUBS_FILE = "<looper: system typedefs>"

_TOKEN = re.compile(r"""
    (?P<directive>^[ \t]*\#[^\n]*)
  | (?P<space>[ \t\r\f\v]+|\n)
  | (?P<string>(?:u8|[LuU])?"(?:\\.|[^"\\\n])*")
  | (?P<char>[LuU]?'(?:\\.|[^'\\\n])*')
  | (?P<number>\.?\d(?:[eEpP][+-]|[\w.])*)
  | (?P<ident>[A-Za-z_$][\w$]*)
  | (?P<punct>.)
""", re.VERBOSE | re.MULTILINE)
_MARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"((?:\\.|[^"\\])*)"((?:\s+\d+)*)\s*$')
_PRAGMA_SCOP = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+(?:end)?scop\b")

# GNU spellings of standard keywords, and GNU keywords that only qualify a declaration.
_RESPELL = {"__inline": "inline", "__inline__": "inline", "__restrict": "restrict",
            "__restrict__": "restrict", "__const": "const", "__volatile": "volatile",
            "__volatile__": "volatile", "__signed": "signed", "__signed__": "signed"}
_DROP = {"__extension__", "__thread", "_Thread_local", "__auto_type_unused"}
_WITH_ARGS = {"__attribute__", "__attribute", "__declspec", "__asm__", "__asm", "asm"}

_BASIC_TYPES = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "_Bool"}
_QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "__restrict__", "__const",
               "__volatile__", "_Atomic", "__extension__", "static", "extern", "inline", "__inline"}


@dataclass(frozen=True)
class Token:
    kind: str
    start: int
    end: int
    text: str


def tokens(text: str) -> list[Token]:
    """C tokens of preprocessed text (directives are whole lines; whitespace is dropped)."""
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind != "space":
            out.append(Token(kind, m.start(), m.end(), m.group()))
    return out


@dataclass(frozen=True)
class Preprocessed:
    """One C file as looper reads it."""

    path: str  # as the user named it (gcc's line markers use this spelling)
    original: str  # the file's text (undecodable bytes kept as surrogates: written back unchanged)
    text: str  # what pycparser parses: typedef stubs, then the user's code with positions kept
    macros: dict[str, str]  # object-like macros defined at the end of the file (gcc -dM)
    identifiers: frozenset[str]  # every identifier of the file and its headers, and every macro name
    # the functions the user's code calls inside braces, blanked bodies included (`lang.c.preamble`)
    calls: frozenset[str] = frozenset()


def read_source(path: str) -> str:
    try:
        return Path(path).read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError as e:
        raise LooperUsageError(f"cannot read program: {e.strerror}", path) from None


def preprocess(path: str, cpp_flags: tuple[str, ...] = (), cc: str = "gcc") -> Preprocessed:
    """Run the preprocessor on `path` with the user's flags (`-I DIR`, `-D NAME[=V]`, `-U NAME`,
    as gcc takes them) and prepare the result for pycparser."""
    original = read_source(path)
    text = _run(cc, ["-E", *cpp_flags, path], path)
    macro_text = _run(cc, ["-E", "-dM", *cpp_flags, path], path)
    macros = {}
    for line in macro_text.splitlines():
        m = re.match(r"#define ([A-Za-z_]\w*)(?: (.*))?$", line)
        if m:
            macros[m.group(1)] = m.group(2) or ""
    user, system = split_by_origin(text, path)
    stubs = typedef_stubs(system)
    cleaned = clean_user_code(user)
    idents = {t.text for t in tokens(cleaned) if t.kind == "ident"}
    idents |= {t.text for t in tokens(original) if t.kind == "ident"}
    idents |= set(macros)
    full = f'# 1 "{STUBS_FILE}"\n{stubs}\n{cleaned}'
    return Preprocessed(path, original, full, macros, frozenset(idents), called(user))


def called(text: str) -> frozenset[str]:
    """The identifiers `text` applies like a function (`f(`) inside braces: what its functions
    call, since a declaration at file scope is outside every brace."""
    toks = [t for t in tokens(text) if t.kind != "directive"]
    out = set()
    depth = 0
    for k, t in enumerate(toks):
        if t.text == "{":
            depth += 1
        elif t.text == "}":
            depth = max(0, depth - 1)
        elif depth and t.kind == "ident" and k + 1 < len(toks) and toks[k + 1].text == "(":
            out.add(t.text)
    return frozenset(out)


def _run(cc: str, args: list[str], path: str) -> str:
    cmd = [cc, *args]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, errors="surrogateescape", timeout=120,
                             check=False)
    except FileNotFoundError:
        raise LooperUsageError(f"the C preprocessor '{cc}' is not installed (looper runs '{cc} -E')",
                               path) from None
    except subprocess.TimeoutExpired:
        raise LooperUsageError(f"'{shlex.join(cmd)}' took longer than 120 s", path) from None
    if res.returncode != 0:
        raise _cpp_error(res.stderr, path, cmd)
    return res.stdout


def _cpp_error(stderr: str, path: str, cmd: list[str]) -> LooperSyntaxError:
    """gcc's first error as looper's `FILE:LINE:COL: error: ...`."""
    for line in stderr.splitlines():
        m = re.match(r"^(.*?):(\d+):(?:(\d+):)? (?:fatal )?error: (.*)$", line)
        if m:
            hint = " (add -I DIR for the directory that holds it)" if "No such file" in m.group(4) else ""
            return LooperSyntaxError(f"preprocessor: {m.group(4)}{hint}", m.group(1), int(m.group(2)),
                                     int(m.group(3)) if m.group(3) else None)
    first = next((ln for ln in stderr.splitlines() if ln.strip()), "failed")
    return LooperSyntaxError(f"preprocessor ({shlex.join(cmd)}): {first}", path)


# ---------------------------------------------------------------------------------------------
# User code and system headers
# ---------------------------------------------------------------------------------------------

def split_by_origin(text: str, main_file: str) -> tuple[str, str]:
    """(the user's lines, the system headers' lines).  Line markers stay in the user's text so
    that line numbers survive; a file is a system header when gcc flags every marker naming it
    with 3 (the main file gets flag 3 only around expansions of a system header's macro, such as
    `stderr`, which are the user's code)."""
    lines = text.split("\n")
    flagged: dict[str, bool] = {}
    for line in lines:
        m = _MARKER.match(line)
        if m:
            name = m.group(2)
            sys_flag = "3" in m.group(3).split()
            flagged[name] = flagged.get(name, True) and sys_flag
    system_files = {f for f, s in flagged.items() if s and f != main_file}
    user, system = [], []
    in_system = False
    for line in lines:
        m = _MARKER.match(line)
        if m:
            in_system = m.group(2) in system_files
            user.append(line)
        elif in_system:
            system.append(line)
        else:
            user.append(line)
    return "\n".join(user), "\n".join(system)


def clean_user_code(text: str) -> str:
    """The user's code in standard C, positions kept: GNU keywords respelled or blanked, and the
    bodies of functions without a `#pragma scop` (or `endscop`) blanked, their line markers kept."""
    chars = list(text)
    toks = tokens(text)
    n = len(toks)

    def blank(start: int, end: int) -> None:
        for k in range(start, end):
            if chars[k] != "\n":
                chars[k] = " "

    def blank_body(first: int, last: int) -> None:
        """Blank the tokens toks[first:last], keeping line markers (line numbers stay right)."""
        for t in toks[first:last]:
            if not (t.kind == "directive" and _MARKER.match(t.text.strip())):
                blank(t.start, t.end)

    depth = 0
    prev = ""  # the last significant token's text
    k = 0
    while k < n:
        t = toks[k]
        if t.kind == "directive":
            k += 1
            continue
        if t.kind == "ident" and t.text in _RESPELL:
            word = _RESPELL[t.text]
            chars[t.start:t.end] = list(word.ljust(t.end - t.start))
            prev = word
            k += 1
            continue
        if t.kind == "ident" and t.text in _DROP:
            blank(t.start, t.end)
            k += 1
            continue
        if t.kind == "ident" and t.text in _WITH_ARGS and (depth == 0 or t.text.startswith("__attr")):
            j = k + 1
            while j < n and toks[j].text in ("volatile", "__volatile__", "goto", "inline"):
                j += 1
            if j < n and toks[j].text == "(":
                end = _matching(toks, j)
                blank(t.start, toks[end].end)
                k = end + 1
                continue
        if t.text == "{" and depth == 0 and prev == ")":
            end = _matching(toks, k)
            body = text[t.end:toks[end].start]
            if not any(_PRAGMA_SCOP.match(line) for line in body.split("\n")):
                blank_body(k + 1, end)
                prev = "}"
                k = end + 1
                continue
        if t.text in "({[":
            depth += 1
        elif t.text in ")}]":
            depth = max(0, depth - 1)
        prev = t.text
        k += 1
    return "".join(chars)


def _matching(toks: list[Token], k: int) -> int:
    """Index of the bracket closing the one at `toks[k]` (the last token if it is never closed)."""
    depth = 0
    for j in range(k, len(toks)):
        s = toks[j].text
        if toks[j].kind != "punct":
            continue
        if s in "({[":
            depth += 1
        elif s in ")}]":
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


# ---------------------------------------------------------------------------------------------
# Typedef stubs for the system headers
# ---------------------------------------------------------------------------------------------

def typedef_stubs(text: str) -> str:
    """One declaration per name the system headers typedef, in their order: the type itself when
    it is plain arithmetic (through earlier plain typedefs), an opaque struct otherwise."""
    plain: dict[str, str] = {}
    out: list[str] = []
    seen: set[str] = set()
    for item in _top_level_items([t for t in tokens(text) if t.kind != "directive"]):
        words = [t.text for t in item]
        while words and words[0] == "__extension__":
            words.pop(0)
        if not words or words[0] != "typedef":
            continue
        for name, spec in _typedef_declarators(words[1:], plain):
            if name in seen:
                continue
            seen.add(name)
            if spec is not None:
                plain[name] = spec
                out.append(f"typedef {spec} {name};")
            else:
                out.append(f"typedef struct looper_opaque {name};")
    return "\n".join(out)


def _top_level_items(toks: list[Token]):
    """Declarations and function definitions at file scope, as token lists."""
    item: list[Token] = []
    depth = 0
    body_opened_at: list[int] = []
    for k, t in enumerate(toks):
        item.append(t)
        s = t.text
        if t.kind != "punct":
            continue
        if s in "([":
            depth += 1
        elif s in ")]":
            depth -= 1
        elif s == "{":
            if depth == 0 and len(item) >= 2 and item[-2].text == ")":
                body_opened_at.append(len(item))
            depth += 1
        elif s == "}":
            depth -= 1
            if depth == 0 and body_opened_at:
                body_opened_at.clear()
                yield item
                item = []
        elif s == ";" and depth == 0:
            yield item
            item = []


def _typedef_declarators(words: list[str], plain: dict[str, str]):
    """(name, plain type or None) for each declarator of `typedef <words>`."""
    k, spec, simple = _typedef_specifiers(words, plain)
    n = len(words)
    while k < n:
        name = None
        plain_declarator = True
        depth = 0
        while k < n and not (depth == 0 and words[k] in (",", ";")):
            w = words[k]
            if w in ("(", "["):
                depth += 1
                plain_declarator = False
            elif w in (")", "]"):
                depth -= 1
            elif w == "*":
                plain_declarator = False
            elif _is_ident(w) and name is None and w not in _QUALIFIERS:
                name = w
            elif _is_ident(w) and w not in _QUALIFIERS:
                plain_declarator = False  # an attribute or array size after the name
            k += 1
        if name is not None:
            yield name, (" ".join(spec) if simple and plain_declarator and spec else None)
        k += 1


def _typedef_specifiers(words: list[str], plain: dict[str, str]) -> tuple[int, list[str], bool]:
    """Where the declarators of `typedef <words>` start, the type's plain arithmetic spelling
    (words), and whether the type is plain arithmetic at all (not a struct, typeof, ...)."""
    n = len(words)
    k = 0
    spec: list[str] = []
    simple = True
    seen_type = False
    while k < n:
        w = words[k]
        if w in ("struct", "union", "enum"):
            simple, seen_type = False, True
            k += 1
            if k < n and _is_ident(words[k]):
                k += 1
            if k < n and words[k] == "{":
                k = _skip(words, k) + 1
            continue
        if w in ("__attribute__", "__attribute", "__typeof__", "__typeof", "typeof", "_Alignas",
                 "__declspec"):
            simple = False
            seen_type = seen_type or "typeof" in w
            k += 1
            if k < n and words[k] == "(":
                k = _skip(words, k) + 1
            continue
        if w in _QUALIFIERS:
            k += 1
            continue
        if w in _BASIC_TYPES:
            spec.append(w)
            seen_type = True
            k += 1
            continue
        if _is_ident(w) and not seen_type:
            if w in plain:
                spec.append(plain[w])
            else:
                simple = False
            seen_type = True
            k += 1
            continue
        break
    return k, spec, simple


def _skip(words: list[str], k: int) -> int:
    """Index of the bracket closing `words[k]`."""
    depth = 0
    for j in range(k, len(words)):
        if words[j] in ("(", "[", "{"):
            depth += 1
        elif words[j] in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    return len(words) - 1


def _is_ident(w: str) -> bool:
    return bool(w) and (w[0].isalpha() or w[0] == "_")
