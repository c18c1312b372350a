"""A schedule's description and loop structure, computed from the schedule `then` extended,
equal what replaying its steps from the original gives."""
from __future__ import annotations

from helpers import TARGET
from looper.lang.parse import parse_file
from looper.poly.deps import compute_dependences
from looper.search.beam import beam_search
from looper.search.budget import Ranking
from looper.search.policy import policy_for
from looper.transforms.schedule import Schedule

from conftest import kernel_path


def test_descriptions_and_structures_from_the_parent_equal_a_replay():
    """Every schedule a ranking search of 3mm visited (fusion, interchange, isl's schedules,
    tiles, register tiles, packs, unrolls, regions): `parts` and `structure` built from its parent
    equal those of the same steps replayed in a fresh schedule, and a refinement's structure is
    its parent's, computed once."""
    p = parse_file(kernel_path("3mm"), "MINI")
    result = beam_search(p, compute_dependences(p), Ranking(p, TARGET), policy_for("hybrid", target=TARGET))
    visited = [e.schedule for e in result.explored if e.rejected is None and e.schedule.steps]
    children = [s for s in visited if s._parent is not None]
    assert len(children) > 100
    kinds = {t.kind for s in children for t in s.steps}
    assert {"fuse", "interchange", "tile", "register", "unroll"} <= kinds
    for s in children:
        fresh = Schedule(p, s.steps)
        assert s.parts() == fresh.parts()
        assert s.structure().steps == fresh.structure().steps
        assert s.describe(without=("unroll",)) == fresh.describe(without=("unroll",))
    refined = next(s for s in children if all(t.refines for t in s.steps[len(s._parent.steps):]))
    assert refined.structure() is refined._parent.structure()
