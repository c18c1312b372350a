"""The cost model: it learns on a small committed dataset, saves and loads safely, guides the search."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import torch
from click.testing import CliRunner

from looper.cli import main
from looper.costmodel.features import FEATURE_VERSION
from looper.costmodel.store import ModelError, load_model, save_model
from looper.costmodel.train import (
    TrainConfig, evaluate, load_examples, ndcg, relative_predictions, spearman, split_by_program, train,
    train_ensemble, validation_loss,
)
from looper.tune.options import HybridOptions

from conftest import ROOT, kernel_path

TINY = ROOT / "tests" / "data" / "tiny-points.parquet"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    ds = load_examples([TINY])
    tr, va, _ = split_by_program(ds.examples, val=0.25, test=0.0)
    model, _ = train(tr, va, TrainConfig(epochs=15, hidden=64, lr=2e-3, threads=1, seed=0), log=lambda s: None)
    path = tmp_path_factory.mktemp("model") / "tiny.pt"
    save_model(model, path, {"points": ds.points, "programs": ds.programs, "metrics": evaluate(model, va)})
    return model, va, path


def test_split_keeps_each_program_on_one_side():
    ds = load_examples([TINY])
    tr, va, te = split_by_program(ds.examples)
    sides = [{e.program for e in s} for s in (tr, va, te)]
    assert not (sides[0] & sides[1]) and not (sides[0] & sides[2]) and not (sides[1] & sides[2])
    assert sum(len(s) for s in (tr, va, te)) == len(ds.examples)


def test_tiny_model_learns(tiny_model):
    model, va, _ = tiny_model
    # the loss it was trained on, on programs it never saw (30 training programs are few: 0.76
    # here, 0.63 with seed 2), and the order of their candidates (Spearman 0.70 here)
    loss, constant = validation_loss(model, va, TrainConfig())
    assert loss < 0.85 * constant, (loss, constant)
    m = evaluate(model, va)
    assert m["spearman"] > 0.55 and m["ndcg"] > 0.93, m


def test_every_program_has_its_original_as_anchor():
    ds = load_examples([TINY])
    anchors = [e for e in ds.examples if e.original]
    assert len(anchors) == ds.programs and all(e.speedup == 1.0 for e in anchors)
    assert len({e.program for e in anchors}) == ds.programs


def test_predictions_are_relative_to_the_original(tiny_model):
    """What the metrics score is what the search uses: a candidate's prediction over its
    program's original's, so the original itself is predicted 1.0 exactly."""
    model, va, _ = tiny_model
    rel = relative_predictions(model, va)
    raw = model.predict([e.features for e in va])
    for k, e in enumerate(va):
        if e.original:
            assert rel[k] == pytest.approx(1.0)
    anchor = {e.program: raw[k] for k, e in enumerate(va) if e.original}
    assert np.allclose(rel, [p / anchor[e.program] for p, e in zip(raw, va)], rtol=1e-6)


def test_weights_round_trip_with_weights_only(tiny_model, tmp_path):
    model, va, path = tiny_model
    blob = torch.load(path, weights_only=True)  # plain tensors and metadata only
    assert blob["meta"]["feature_version"] == FEATURE_VERSION
    loaded, meta = load_model(path)
    feats = [e.features for e in va[:20]]
    assert (loaded.predict(feats) == model.predict(feats)).all()
    assert path.with_suffix(".json").exists() and meta["points"] > 0


def test_inference_runs_on_its_threads_and_gives_the_set_back(tiny_model):
    """The search predicts on one torch thread (threads lose much on a busy core) and leaves
    torch's setting as it found it; the predictions are those of any thread count."""
    model, va, _ = tiny_model
    feats = [e.features for e in va[:20]]
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen = []
        real = torch.nn.LSTM.forward
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(torch.nn.LSTM, "forward", lambda self, *a: (seen.append(torch.get_num_threads()), real(self, *a))[1])
            one = model.predict(feats)
            assert set(seen) == {1} and torch.get_num_threads() == 2
            seen.clear()
            two = model.predict(feats, threads=None)
            assert set(seen) == {2}
        assert np.allclose(one, two, rtol=1e-5)
    finally:
        torch.set_num_threads(before)


def test_model_of_an_undescribed_feature_version_is_refused(tiny_model, tmp_path):
    model, _, _ = tiny_model
    bad = tmp_path / "old.pt"
    save_model(model, bad, {})
    blob = torch.load(bad, weights_only=True)
    blob["meta"]["feature_version"] = FEATURE_VERSION + 1  # `costmodel.migrate` knows no such layout
    torch.save(blob, bad)
    with pytest.raises(ModelError, match="features version"):
        load_model(bad)
    res = CliRunner().invoke(main, ["optimize", str(kernel_path("gemm")), "-s", "MINI", "--model", str(bad)])
    assert res.exit_code == 2 and "retrain" in res.output


def test_model_of_another_architecture_is_refused(tiny_model, tmp_path):
    model, _, _ = tiny_model
    bad = tmp_path / "arch.pt"
    save_model(model, bad, {})
    blob = torch.load(bad, weights_only=True)
    blob["meta"]["architecture"] = 1
    torch.save(blob, bad)
    with pytest.raises(ModelError, match="architecture 1"):
        load_model(bad)


def test_ensemble_trains_in_parallel_and_round_trips(tmp_path):
    """Two members from seeds 0 and 1 (forked workers); the prediction is their geometric mean."""
    ds = load_examples([TINY])
    tr, va, _ = split_by_program(ds.examples, val=0.25, test=0.0)
    ens, info = train_ensemble(tr, va, TrainConfig(epochs=1, hidden=16, threads=1, seed=0), members=2,
                               log=lambda s: None)
    assert len(ens.members) == 2 and len(info["history"]) == 2
    feats = [e.features for e in va[:10]]
    each = np.stack([np.log(m.predict(feats)) for m in ens.members])
    assert np.allclose(np.log(ens.predict(feats)), each.mean(0), atol=1e-5)
    assert not np.allclose(each[0], each[1])  # different seeds, different models
    save_model(ens, tmp_path / "e.pt", {})
    loaded, meta = load_model(tmp_path / "e.pt")
    assert meta["members"] == 2 and np.allclose(loaded.predict(feats), ens.predict(feats))


def test_metrics():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert ndcg([3, 2, 1], [3.0, 2.0, 1.0]) == pytest.approx(1.0)
    assert ndcg([1, 2, 3], [3.0, 2.0, 1.0]) < 1.0


def test_model_guided_and_hybrid_optimize(tiny_model, tmp_path):
    _, _, path = tiny_model
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["optimize", str(kernel_path("jacobi_1d")), "-s", "MINI", "--model", str(path),
                                    "-e", "model", "--json", str(out), "-q"])
    assert res.exit_code == 0, res.output
    assert "predicted speedup" in res.output
    res = CliRunner().invoke(main, ["optimize", str(kernel_path("jacobi_1d")), "-s", "MINI", "--model", str(path),
                                    "-e", "hybrid", "--verify-top", "2", "-q", "--db", str(tmp_path / "m.db")])
    assert res.exit_code == 0, res.output
    rounds = HybridOptions().rounds + HybridOptions().follow  # each measures 2 (fewer when the space is small)
    assert 2 <= res.output.count("verified: predicted") <= 2 * rounds


def test_model_guided_search_stays_as_deep_as_its_training_data(tmp_path):
    """The model never saw longer affine sequences than its data's search made: the shipped model
    records that depth (from the datagen config.json files) and the model-guided search uses it."""
    from looper.costmodel.train import search_space
    from looper.costmodel.store import load_model
    from looper.search.policy import DEFAULT_MAX_AFFINE, policy_for
    for name, depth in (("a", 1), ("b", 3)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({"max_affine": depth, "max_fusion": 2}))
    files = [tmp_path / "a" / "points-00000.parquet", tmp_path / "b" / "points-00000.parquet"]
    assert search_space(files) == {"max_affine": 3, "max_fusion": 2}
    assert policy_for("model", load_model()[1]).max_affine == 2  # the shipped model's data: --max-affine 2
    assert policy_for("model", {}).max_affine == DEFAULT_MAX_AFFINE
    assert policy_for("measure").max_affine == DEFAULT_MAX_AFFINE


def test_a_model_trained_on_the_grown_space_searches_it_and_ranks_whole_schedules(tmp_path, tiny_model):
    """When a model's data searched the grown space (`looper datagen --grown`), its metadata says
    so, the model-guided search explores that space, and the default's ranking asks the model
    about whole schedules (the terms are among its inputs) instead of their loop structure only."""
    from looper.costmodel.train import search_space
    from looper.lang.parse import parse_file
    from looper.search.budget import Ranking
    from looper.search.evaluators import ModelEvaluator
    from looper.search.policy import policy_for
    from looper.transforms import Distribute, Parallelize, Tile
    from looper.transforms.schedule import Schedule
    from helpers import TARGET
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "config.json").write_text(json.dumps({"max_affine": 2, "max_fusion": 2, "grown": True}))
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "config.json").write_text(json.dumps({"max_affine": 2, "max_fusion": 2, "grown": False}))
    space = search_space([tmp_path / "g" / "points-00000.parquet", tmp_path / "o" / "points-00000.parquet"])
    assert space == {"max_affine": 2, "max_fusion": 2, "grown": True}
    assert policy_for("model", {"search_space": space}).grown
    assert not policy_for("model", {"search_space": {"max_affine": 2}}).grown
    model, _, _ = tiny_model
    p = parse_file(kernel_path("gemm"), "MEDIUM")
    tiled = (Schedule(p).then(Distribute(("S0", "S1"), 1, (1,))).then(Parallelize(((("S1",), 1),)))
             .then(Tile(((("S1",), (3, 5), (32, 32)),))))
    whole = Ranking(p, TARGET, ModelEvaluator(p, model, {"search_space": space}, TARGET))
    first = Ranking(p, TARGET, ModelEvaluator(p, model, {"search_space": {"max_affine": 2}}, TARGET))
    assert whole.whole and not first.whole
    alone = ModelEvaluator(p, model, {}, TARGET).evaluate(p, [tiled])[0].speedup
    assert whole.evaluate(p, [tiled])[0].speedup == pytest.approx(alone, rel=1e-5)
    prefix = ModelEvaluator(p, model, {}, TARGET).evaluate(p, [Schedule(p, tiled.steps[:1])])[0].speedup
    split = first.base / first.seconds(Schedule(p, tiled.steps[:1]))
    assert first.evaluate(p, [tiled])[0].speedup == pytest.approx(
        (prefix * split) ** 0.5 * first.seconds(Schedule(p, tiled.steps[:1])) / first.seconds(tiled), rel=1e-5)


def test_training_can_start_from_saved_weights(tiny_model):
    """`looper train --init`: a member starts as the saved model's (same predictions before any
    step), and training goes on from there."""
    from looper.costmodel.train import _start
    model, va, path = tiny_model
    ds = load_examples([TINY])
    tr, _, _ = split_by_program(ds.examples, val=0.25, test=0.0)
    start = _start(TrainConfig(hidden=64, init=str(path)), tr, 0)
    saved, _ = load_model(path)
    feats = [e.features for e in va[:20]]
    assert start.predict(feats) == pytest.approx(saved.predict(feats), rel=1e-6)
    with pytest.raises(ValueError):
        _start(TrainConfig(hidden=32, init=str(path)), tr, 0)


def test_train_command_reports_each_part_and_a_compared_model(tiny_model, tmp_path):
    """`looper train` splits its held-out metrics by dataset directory and, with --compare,
    reports a saved model's on the same held-out programs."""
    _, _, saved = tiny_model
    parts = []
    for k, name in enumerate(("part-a", "part-b")):  # the tiny dataset's programs, in two directories
        table = pq.read_table(TINY)
        progs = sorted(set(table.column("program").to_pylist()))[k::2]
        (tmp_path / name).mkdir()
        pq.write_table(table.filter(pc.is_in(table.column("program"), pa.array(progs))),
                       tmp_path / name / "points-00000.parquet")
        parts.append(str(tmp_path / name))
    out = tmp_path / "m.pt"
    res = CliRunner().invoke(main, ["train", *parts, "-o", str(out), "--epochs", "1", "--hidden", "16",
                                    "--dropout", "0.2", "--weight-decay", "0.001", "--threads", "1",
                                    "--compare", str(saved)])
    assert res.exit_code == 0, res.output
    meta = json.loads(out.with_suffix(".json").read_text())
    assert (meta["hidden"], meta["dropout"], meta["weight_decay"]) == (16, 0.2, 0.001)
    by_part = meta["metrics"]["test_by_part"]
    assert set(by_part) <= {"part-a", "part-b"} and by_part
    assert sum(m["points"] for m in by_part.values()) == meta["metrics"]["test"]["points"]
    assert f"test, {saved}" in res.output
    for part in by_part:
        assert f"  test, {part}:" in res.output and f"  test, {part}, {saved}" in res.output


def test_a_model_of_an_older_layout_is_widened_to_the_same_function():
    """Widening moves each input's weights to where the input is now and gives the new inputs
    zero weights (mean 0, deviation 1): from a version-3 model it builds the current-layout model
    that computes the same function."""
    from looper.costmodel.features import COMP, LOOP, TRANSFORM
    from looper.costmodel.migrate import LAYOUTS, columns, widen_state
    from looper.costmodel.model import CostModel, Ensemble
    torch.manual_seed(0)
    current = Ensemble([CostModel(hidden=16)]).state_dict()
    comp3, loop3, trans3 = LAYOUTS[3]
    inputs = {"comp": (COMP.width, torch.from_numpy(columns(comp3, COMP))),
              "loop": (LOOP.width, torch.from_numpy(columns(loop3, LOOP))),
              "trans": (TRANSFORM.width, torch.from_numpy(columns(trans3, TRANSFORM)))}
    weights = {"comp_mlp.0.weight": "comp", "loop_mlp.0.weight": "loop", "trans_lstm.weight_ih_l0": "trans"}
    standard = {"comp_mean", "comp_std", "loop_mean", "loop_std"}
    v3, expected = {}, {}
    for key, t in current.items():
        name = key.split(".", 2)[2]
        if name in standard:
            width, cols = inputs[name[:4]]
            v3[key] = t[cols]
            expected[key] = (torch.ones if name.endswith("std") else torch.zeros)(width)
            expected[key][cols] = t[cols]
        elif name in weights:
            width, cols = inputs[weights[name]]
            v3[key] = torch.cat([t[:, cols], t[:, width:]], dim=1)
            expected[key] = torch.cat([torch.zeros_like(t[:, :width]), t[:, width:]], dim=1)
            expected[key][:, cols] = t[:, cols]
        else:
            v3[key] = expected[key] = t
    wide = widen_state(v3, 3)
    assert wide.keys() == current.keys()
    for key in current:
        assert torch.equal(wide[key], expected[key]), key
    with pytest.raises(KeyError):
        widen_state(v3, 2)


def test_a_network_of_architecture_3_is_widened_to_the_same_function():
    """Architecture 3's head read three embeddings; widened, its head reads the cost terms' too
    with zero weights, so whatever the terms are, it predicts what it predicted."""
    from looper.costmodel.features import TERMS, ProgramInfo, featurize
    from looper.costmodel.migrate import widen_state
    from looper.costmodel.model import CostModel, Ensemble
    from looper.lang.parse import parse_file
    from looper.transforms import Interchange
    from looper.transforms.schedule import Schedule
    torch.manual_seed(0)
    model = Ensemble([CostModel(hidden=16)])
    state = model.state_dict()
    H = 16
    with torch.no_grad():
        state["members.0.head.0.weight"][:, 3 * H:] = 0  # what architecture 3 computed
    old = {k: (v[:, :3 * H] if k == "members.0.head.0.weight" else v)
           for k, v in state.items() if ".terms_" not in k}
    torch.manual_seed(1)
    fresh = Ensemble([CostModel(hidden=16)]).state_dict()
    wide = widen_state(old, FEATURE_VERSION, architecture=3, fresh=fresh)
    assert wide.keys() == state.keys()
    widened = Ensemble([CostModel(hidden=16)])
    widened.load_state_dict(wide)
    model.load_state_dict(state)
    p = parse_file(kernel_path("gemm"), "MINI")
    info = ProgramInfo(p)
    feats = [featurize(s, info) for s in (Schedule(p), Schedule(p).then(Interchange(("S1",), 3, 5)))]
    for f in feats:  # terms far from anything: the head must not read them
        f.terms = np.random.default_rng(0).normal(size=TERMS.width).astype(np.float32) * 5
    assert widened.predict(feats) == pytest.approx(model.predict(feats), rel=1e-6)
    assert not torch.equal(wide["members.0.terms_mlp.0.weight"], state["members.0.terms_mlp.0.weight"])
    with pytest.raises(ValueError):
        widen_state(old, FEATURE_VERSION, architecture=3)


def test_old_space_schedules_leave_every_new_input_zero():
    """What makes a widened model's predictions unchanged: a schedule of the kinds version 3
    described has zeros wherever version 4 added an input."""
    from looper.costmodel.features import COMP, LOOP, TRANSFORM, ProgramInfo, featurize
    from looper.costmodel.migrate import LAYOUTS, columns
    from looper.lang.parse import parse_file
    from looper.transforms import Distribute, Interchange, Parallelize, Tile, Unroll
    from looper.transforms.schedule import Schedule
    p = parse_file(kernel_path("gemm"), "MINI")
    s = (Schedule(p).then(Distribute(("S0", "S1"), 1, (1,))).then(Interchange(("S1",), 3, 5))
         .then(Parallelize(((("S1",), 1),))).then(Tile(((("S1",), (3, 5), (8, 8)),))).then(Unroll(((("S1",), 9),), 4)))
    f = featurize(s, ProgramInfo(p))
    comp3, loop3, trans3 = LAYOUTS[3]

    def new_inputs(x, old, layout):
        return np.delete(x, columns(old, layout), axis=-1)

    for c in f.comps:
        assert not new_inputs(c.vector, comp3, COMP).any()
        assert len(c.transforms) and not new_inputs(c.transforms, trans3, TRANSFORM).any()

    assert all(not new_inputs(l.vector, loop3, LOOP).any() for l in f.loops())


def test_the_shipped_model_covers_the_grown_space_and_predicts_what_it_predicted():
    """looper-v10 was trained on feature version 6 with network architecture 4 on data that
    searched the grown space, and is read widened to version 7 (the same layouts; two terms'
    definitions changed, neither of which touches gemm: its statements are floating-point and its
    flows fill their spaces), so its metadata says so; for gemm MEDIUM it predicts what it
    predicted when it was shipped (a change to the features or the network that moves these
    figures changes what the shipped weights mean), and it ranks a register tile above square
    tiles."""
    from looper.costmodel.features import ProgramInfo, featurize
    from looper.costmodel.batch import ARCHITECTURE
    from looper.lang.parse import parse_file
    from looper.transforms import Distribute, Interchange, Parallelize, Tile
    from looper.transforms.register_tiling import Block, RegisterTile
    from looper.transforms.schedule import Schedule
    model, meta = load_model()
    assert meta["widened_from"] == {"feature_version": 6, "architecture": ARCHITECTURE}
    assert (meta["feature_version"], meta["architecture"]) == (FEATURE_VERSION, ARCHITECTURE) == (7, 4)
    assert meta["search_space"]["grown"] is True
    p = parse_file(kernel_path("gemm"), "MEDIUM")
    split = Schedule(p).then(Distribute(("S0", "S1"), 1, (1,)))
    ijk = split.then(Interchange(("S1",), 3, 5)).then(Parallelize(((("S1",), 1),)))
    schedules = [Schedule(p), split, split.then(Interchange(("S1",), 3, 5)),
                 ijk.then(Tile(((("S1",), (3, 5), (32, 32)),))),
                 ijk.then(RegisterTile((Block("S1", 1, 3, 5, 6, 32, 8),)))]
    info = ProgramInfo(p)
    got = model.predict([featurize(s, info) for s in schedules])
    assert got == pytest.approx(V10_GEMM_MEDIUM, rel=1e-5)
    assert got[4] > got[3]


# looper-v10's predictions (looper at c82e98b): the original, the split, the split with k innermost,
# that parallel and tiled 32x32, that parallel and register-tiled 6x32
V10_GEMM_MEDIUM = [0.9250762, 0.9135073, 0.5837792, 0.3194388, 2.9472058]
