"""Pure work shared among forked processes (`looper.forked`): the same answers in the same order
whatever the number of processes, and a share a child cannot compute is computed here."""
from __future__ import annotations

import os

import pytest

from looper.forked import forked_map


@pytest.mark.parametrize("jobs", [1, 2, 3, 8])
def test_forked_map_gives_the_plain_map_in_order(jobs):
    items = list(range(250))
    pids = set()

    def fn(x):
        return (x * x, os.getpid())

    out = forked_map(fn, items, jobs, least=10)
    assert [v for v, _ in out] == [x * x for x in items]
    pids = {pid for _, pid in out}
    assert len(pids) == min(jobs, 25)  # shares of at least 10 items: every process took one
    assert os.getpid() in pids


def test_few_items_stay_in_this_process():
    out = forked_map(lambda x: os.getpid(), list(range(30)), jobs=4, least=16)
    assert set(out) == {os.getpid()}


def test_a_share_a_child_cannot_compute_is_computed_here():
    parent = os.getpid()

    def fn(x):
        if os.getpid() != parent and x > 100:
            raise RuntimeError("only in the child")
        return -x

    assert forked_map(fn, list(range(200)), jobs=2, least=10) == [-x for x in range(200)]


def test_an_error_of_the_work_itself_is_raised_here():
    def fn(x):
        if x == 150:
            raise ValueError("bad item")
        return x

    with pytest.raises(ValueError, match="bad item"):
        forked_map(fn, list(range(200)), jobs=2, least=10)
