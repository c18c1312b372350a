"""Integer polynomials in loop variables and sizes that are affine once the sizes are known.

looper specializes a scop to concrete sizes (`specialize`), so `A[i*lda + j]`, `(i*n + j)*m + k`
or `for (i = 0; i < n*m; i++)` are affine where looper's code runs: each term is an integer times
at most one loop variable times any product of sizes.  The C lowering builds these forms where
the Python front end builds `Affine` ones; specialization turns them into `Affine` forms of the
loop variables alone.  Delinearization (`layout`) reads the products of sizes that multiply the
loop variables, as Polly reads the parameters of a subscript's terms.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from ...ir.program import Affine

# A term's unknowns: its loop variable (None: none) and its sizes, sorted (with repetition: n*n).
Monomial = tuple[str | None, tuple[str, ...]]


@dataclass(frozen=True)
class Polynomial:
    """sum(coeff * variable * size * size ...), terms sorted, no zero coefficient."""

    terms: tuple[tuple[Monomial, int], ...] = ()

    @staticmethod
    def variable(name: str) -> "Polynomial":
        return Polynomial((((name, ()), 1),))

    @staticmethod
    def size(name: str) -> "Polynomial":
        return Polynomial((((None, (name,)), 1),))

    @staticmethod
    def constant(c: int) -> "Polynomial":
        return Polynomial((((None, ()), c),)) if c else Polynomial()

    @staticmethod
    def _normal(d: dict[Monomial, int]) -> "Polynomial":
        return Polynomial(tuple(sorted(((m, c) for m, c in d.items() if c), key=_order)))

    def _combine(self, other: "Polynomial", sign: int) -> "Polynomial":
        d = dict(self.terms)
        for m, c in other.terms:
            d[m] = d.get(m, 0) + sign * c
        return Polynomial._normal(d)

    def __add__(self, other: "Polynomial") -> "Polynomial":
        return self._combine(other, 1)

    def __sub__(self, other: "Polynomial") -> "Polynomial":
        return self._combine(other, -1)

    def scale(self, k: int) -> "Polynomial":
        return Polynomial._normal({m: c * k for m, c in self.terms})

    def times(self, other: "Polynomial") -> "Polynomial | None":
        """The product; None when a term would hold two loop variables (not affine at any sizes)."""
        d: dict[Monomial, int] = {}
        for (v, s), c in self.terms:
            for (w, t), e in other.terms:
                if v is not None and w is not None:
                    return None
                m = (v if v is not None else w, tuple(sorted(s + t)))
                d[m] = d.get(m, 0) + c * e
        return Polynomial._normal(d)

    @property
    def is_constant(self) -> bool:
        return all(m == (None, ()) for m, _ in self.terms)

    @property
    def const(self) -> int:
        return dict(self.terms).get((None, ()), 0)

    def variables(self) -> set[str]:
        return {v for (v, _), _ in self.terms if v is not None}

    def names(self) -> set[str]:
        return self.variables() | {n for (_, s), _ in self.terms for n in s}

    def substitute(self, sizes: dict[str, int]) -> Affine:
        """The affine form of the loop variables at these sizes (every size must have a value)."""
        const = 0
        coeffs: dict[str, int] = {}
        for (v, s), c in self.terms:
            k = c * prod(sizes[n] for n in s)
            if v is None:
                const += k
            else:
                coeffs[v] = coeffs.get(v, 0) + k
        return Affine(tuple(sorted((v, c) for v, c in coeffs.items() if c)), const)

    def evaluate(self, values: dict[str, int]) -> int:
        return sum(c * (values[v] if v is not None else 1) * prod(values[n] for n in s)
                   for (v, s), c in self.terms)

    def render(self) -> str:
        """C text (for messages): `i*n*m + j*m + k - 1`."""
        parts = []
        for (v, s), c in self.terms:
            factors = ([v] if v is not None else []) + list(s)
            text = "*".join(factors)
            if not factors:
                text = str(abs(c))
            elif abs(c) != 1:
                text = f"{abs(c)}*{text}"
            parts.append(("-" if c < 0 else "+", text))
        if not parts:
            return "0"
        out = ("-" if parts[0][0] == "-" else "") + parts[0][1]
        for sign, text in parts[1:]:
            out += f" {sign} {text}"
        return out


def _order(item: tuple[Monomial, int]):
    (v, s), _ = item
    return (v is None, v or "", len(s), s)
