"""The cost model's numpy forward pass (`costmodel.inference`): it predicts what the torch network
predicts, reads weights files without torch and refuses any that could run code, and the search
then never imports torch."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch

from looper.costmodel.features import COMP, LOOP, TERMS, ProgramInfo, featurize
from looper.costmodel.inference import NumpyModel, load_inference_model
from looper.costmodel.model import CostModel, Ensemble
from looper.costmodel.store import ModelError, default_model_path, load_model, read_weights, save_model

from conftest import ROOT, kernel_path

CLOSE = 1e-4  # relative: float32 rounding in another order (the shipped model: 1.3e-6 at most)


@pytest.fixture(scope="module")
def candidates():
    """Featurized candidates of a short search on three kernels: two matrix products, an image
    filter of many nests and a stencil of time steps (2mm 150, deriche 150, adi 120)."""
    from helpers import HashScores
    from looper.lang.parse import parse_file
    from looper.poly.deps import compute_dependences
    from looper.search.beam import beam_search
    from looper.search.policy import SearchPolicy
    feats = []
    for name in ("2mm", "deriche", "adi"):
        p = parse_file(kernel_path(name), "MINI")
        result = beam_search(p, compute_dependences(p), HashScores(1), SearchPolicy(beam=2, max_affine=1, grown=True))
        info = ProgramInfo(p)
        feats += [featurize(e.schedule, info) for e in result.explored if e.rejected is None][:150]
    return feats


def _agree(got: np.ndarray, expected: np.ndarray) -> None:
    """The same predictions to CLOSE, and the same order of every two candidates whose predictions
    differ by more than that."""
    assert got.dtype == expected.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=CLOSE)
    apart = np.abs(expected[:, None] - expected[None, :]) > CLOSE * np.maximum(expected[:, None], expected[None, :])
    order = np.sign(got[:, None] - got[None, :]) == np.sign(expected[:, None] - expected[None, :])
    assert order[apart].all()


def test_the_shipped_model_predicts_in_numpy_what_it_predicts_in_torch(candidates):
    assert len(candidates) >= 400
    net, meta = load_inference_model()
    torch_net, torch_meta = load_model()
    assert meta == torch_meta and meta["widened_from"]["feature_version"] == 6  # widened alike
    expected = torch_net.predict(candidates)
    _agree(net.predict(candidates), expected)
    assert len(np.unique(expected)) > 100  # candidates the model tells apart
    assert net.predict(candidates, batch_size=7) == pytest.approx(net.predict(candidates), rel=1e-5)
    raw, _ = read_weights(default_model_path())
    blob = torch.load(default_model_path(), weights_only=True)["state"]
    assert raw.keys() == blob.keys()
    assert all(raw[k].dtype == blob[k].numpy().dtype and np.array_equal(raw[k], blob[k].numpy()) for k in raw)


def _fresh(candidates, members: int) -> list[CostModel]:
    """New networks standardizing by the candidates' own statistics (fresh ones would clamp most
    inputs at 6 deviations)."""
    torch.manual_seed(3)
    comps = np.stack([c.vector for f in candidates for c in f.comps])
    loops = np.stack([lp.vector for f in candidates for lp in f.loops()])
    terms = np.stack([f.terms for f in candidates])
    assert comps.shape[1] == COMP.width and loops.shape[1] == LOOP.width and terms.shape[1] == TERMS.width
    out = [CostModel(hidden=32) for _ in range(members)]
    for m in out:
        m.set_normalization(comps, loops, terms)
    return out


def test_what_save_model_writes_predicts_alike(candidates, tmp_path):
    ensemble = Ensemble(_fresh(candidates, 2))
    save_model(ensemble, tmp_path / "fresh.pt", {"points": 0})  # rounds the parameters to float16
    net, meta = load_inference_model(tmp_path / "fresh.pt")
    assert len(net.members) == 2 and net.hidden == 32 and meta["points"] == 0
    _agree(net.predict(candidates), ensemble.predict(candidates))


def test_a_single_network_predicts_alike(candidates):
    [model] = _fresh(candidates, 1)
    model.eval()
    _agree(NumpyModel.of(model).predict(candidates), model.predict(candidates))


def test_a_network_of_architecture_3_is_widened_through_torch(candidates, tmp_path):
    """Widening architecture 3 draws a fresh terms MLP from torch's generator: that file alone
    loads through torch, into the same predictions."""
    ensemble = Ensemble(_fresh(candidates, 1))
    path = tmp_path / "fresh.pt"
    save_model(ensemble, path, {})
    blob = torch.load(path, weights_only=True)
    H = ensemble.hidden
    blob["state"] = {k: (v[:, :3 * H] if k == "members.0.head.0.weight" else v)
                     for k, v in blob["state"].items() if ".terms_" not in k}
    blob["meta"]["architecture"] = 3
    torch.save(blob, path)
    net, meta = load_inference_model(path)
    assert meta["widened_from"]["architecture"] == 3
    _agree(net.predict(candidates[:50]), load_model(path)[0].predict(candidates[:50]))


@pytest.mark.parametrize("change, message", [({"feature_version": 99}, "features version 99"),
                                             ({"architecture": 1}, "architecture 1"),
                                             ({"hidden": 64}, "does not fit")])
def test_weights_the_network_cannot_use_are_refused(candidates, tmp_path, change, message):
    path = tmp_path / "bad.pt"
    save_model(Ensemble(_fresh(candidates[:10], 1)), path, {})
    blob = torch.load(path, weights_only=True)
    blob["meta"].update(change)
    torch.save(blob, path)
    for load in (load_inference_model, load_model):
        with pytest.raises(ModelError, match=message):
            load(path)


class _Payload:
    """What a malicious weights file would unpickle: a call of os.system."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_weights_file_naming_any_other_global_is_refused(candidates, tmp_path):
    path, bad, marker = tmp_path / "good.pt", tmp_path / "bad.pt", tmp_path / "ran"
    save_model(Ensemble(_fresh(candidates[:10], 1)), path, {})
    with zipfile.ZipFile(path) as good, zipfile.ZipFile(bad, "w") as out:
        for name in good.namelist():
            data = good.read(name)
            if name.endswith("/data.pkl"):
                data = pickle.dumps({"state": {}, "meta": {"x": _Payload(marker)}}, protocol=2)
            out.writestr(name, data)
    with pytest.raises(ModelError, match=r"names posix\.system.*refusing"):
        load_inference_model(bad)
    assert not marker.exists()
    (tmp_path / "text.pt").write_text("not a zip")
    with pytest.raises(ModelError, match="cannot load"):
        load_inference_model(tmp_path / "text.pt")


def test_the_model_search_never_imports_torch():
    code = ("import sys, looper.api\n"
            "from looper.tune.options import Evaluator, TuneOptions\n"
            "k = looper.api.optimize('polybench:gemm', size='MINI', options=TuneOptions("
            "evaluator=Evaluator('model'), verify=False, speed_guard=False))\n"
            "assert k.sequence, 'nothing picked'\n"
            "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]


def test_numpy_inference_runs_on_one_blas_thread_and_gives_the_setting_back(candidates):
    """The search predicts on one BLAS thread (threads lose much on a busy core) and leaves
    BLAS's setting as it found it; the predictions are those of any thread count."""
    from threadpoolctl import ThreadpoolController, threadpool_limits
    import looper.costmodel.inference as inference
    model, _ = load_inference_model()
    blas = ThreadpoolController()
    seen = []
    real = inference._Mlp.__call__

    def spy(self, x):
        seen.append({i["num_threads"] for i in blas.info() if i["user_api"] == "blas"})
        return real(self, x)

    with threadpool_limits(limits=2, user_api="blas"), pytest.MonkeyPatch.context() as mp:
        mp.setattr(inference._Mlp, "__call__", spy)
        one = model.predict(candidates[:40])
        assert seen and all(s == {1} for s in seen)
        assert {i["num_threads"] for i in blas.info() if i["user_api"] == "blas"} == {2}
        seen.clear()
        two = model.predict(candidates[:40], threads=None)
        assert seen and all(s == {2} for s in seen)
    assert np.allclose(one, two, rtol=1e-5)
