"""Pure work shared among forked copies of this process, for every core of the user's machine.

The model's search featurizes every candidate it scores (features and cost terms: numpy and
isl, no torch), 60% of its time on 3mm.  Each candidate's features are a pure function of the
candidate, so the work splits: a forked child starts with the parent's memory as it was (the
program, its dependences, the memos), computes its contiguous share (neighbours share memos) and
sends the results back pickled, while the parent computes its own share.  The answer is the
same list whatever the number of processes; a child that fails has its share redone here.
"""
from __future__ import annotations

import multiprocessing
from typing import Callable, Sequence, TypeVar

from .interrupts import raise_pending

T = TypeVar("T")
R = TypeVar("R")

# Fewer items than this per process are computed here: a fork, the pickling and the memos the
# parent then lacks cost about as much as a few dozen candidates' features.
LEAST_SHARE = 48


def forked_map(fn: Callable[[T], R], items: Sequence[T], jobs: int, least: int = LEAST_SHARE) -> list[R]:
    """`[fn(x) for x in items]` on up to `jobs` processes: this one and forked children, each
    taking a contiguous share of at least `least` items."""
    n = max(1, min(jobs, len(items) // max(1, least)))
    if n == 1:
        return [fn(x) for x in items]
    bounds = [len(items) * k // n for k in range(n + 1)]
    mp = multiprocessing.get_context("fork")
    children = []
    try:
        for k in range(1, n):
            recv, send = mp.Pipe(duplex=False)
            child = mp.Process(target=_share, args=(fn, items, bounds[k], bounds[k + 1], send), daemon=True)
            child.start()
            raise_pending()  # an interrupt the at-fork callbacks dropped (looper.interrupts)
            send.close()
            children.append((k, child, recv))
        out = [fn(x) for x in items[bounds[0]:bounds[1]]]
        for k, _, recv in children:
            try:
                part = recv.recv()
            except EOFError:  # the child died
                part = None
            out += part if part is not None else [fn(x) for x in items[bounds[k]:bounds[k + 1]]]
        return out
    finally:
        for _, child, recv in children:
            if child.is_alive():
                child.kill()
            child.join()
            recv.close()


def _share(fn: Callable, items: Sequence, start: int, stop: int, send) -> None:
    try:
        send.send([fn(x) for x in items[start:stop]])
    except Exception:  # noqa: BLE001 - the parent redoes this share, and raises what it raises
        send.send(None)
    finally:
        send.close()
