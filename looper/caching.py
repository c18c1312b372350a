"""The in-memory memo caches looper keeps, in one place, with a switch that turns them all off.

Every cache here memoizes a pure function of immutable inputs (isl maps parsed from text, a
schedule's printed kernel, a program's scalar dataflow, a dependence relation restricted to some
statements, a computation's features), so turning them off must change nothing but speed: a test
runs searches both ways and compares every score and every emitted program.
"""
from __future__ import annotations

import contextlib
import functools
import weakref
from collections import OrderedDict
from typing import Callable, Hashable, Iterator, TypeVar

T = TypeVar("T")
_enabled = True


def enabled() -> bool:
    """Whether memo caches may answer (False inside `disabled()`)."""
    return _enabled


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Every memo cache recomputes inside this block."""
    global _enabled
    saved, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = saved


def memoized(maxsize: int) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """`functools.lru_cache(maxsize)` that steps aside while caches are disabled."""
    def wrap(fn: Callable[..., T]) -> Callable[..., T]:
        cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def call(*args):
            return cached(*args) if _enabled else fn(*args)

        call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        return call
    return wrap


def per_object(fn: Callable[[object], T]) -> Callable[[object], T]:
    """A memo of a one-argument function keyed on its argument's identity, holding the argument
    weakly (a program or schedule cached here is not kept alive by the cache)."""
    table: "weakref.WeakKeyDictionary[object, T]" = weakref.WeakKeyDictionary()

    @functools.wraps(fn)
    def call(obj):
        if not _enabled:
            return fn(obj)
        if obj not in table:
            table[obj] = fn(obj)
        return table[obj]

    return call


class Memo(dict):
    """A dict memo owned by one object (features of one program, selections of one dependence
    set) that answers nothing while caches are disabled; with a `limit`, emptied when full (a
    memo of a long-lived object must not grow with every search that asks it)."""

    def __init__(self, limit: int | None = None):
        super().__init__()
        self.limit = limit

    def lookup(self, key, compute: Callable[[], T]) -> T:
        if not _enabled:
            return compute()
        if key not in self:
            if self.limit is not None and len(self) >= self.limit:
                self.clear()
            self[key] = compute()
        return self[key]


def per_content(key: Callable[[object], Hashable], entries: int = 256) -> Callable[[Callable[[object], T]], Callable[[object], T]]:
    """`per_object`, and behind it a memo of the `entries` latest distinct values of `key(arg)`:
    for arguments built afresh with equal content (every candidate that expands an array builds
    its own program object, equal to its siblings')."""
    def wrap(fn: Callable[[object], T]) -> Callable[[object], T]:
        table: "OrderedDict[Hashable, T]" = OrderedDict()

        @per_object
        @functools.wraps(fn)
        def call(obj):
            if not _enabled:
                return fn(obj)
            k = key(obj)
            if k in table:
                table.move_to_end(k)
                return table[k]
            value = table[k] = fn(obj)
            while len(table) > entries:
                table.popitem(last=False)
            return value
        return call
    return wrap
