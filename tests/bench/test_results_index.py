"""benchmarks/results/INDEX.md lists every results file with its command, commit and machine, and
is what scripts/results_index.py generates from the campaigns' metadata."""
from __future__ import annotations

import importlib.util
import json
import shutil
import sys

from conftest import ROOT

RESULTS = ROOT / "benchmarks" / "results"


def _script():
    spec = importlib.util.spec_from_file_location("results_index", ROOT / "scripts" / "results_index.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


def test_the_index_is_current_and_names_every_results_file():
    assert _script().main(["--check"]) == 0
    index = (RESULTS / "INDEX.md").read_text()
    files = [p for p in RESULTS.rglob("*") if p.is_file() and p.name not in ("INDEX.md", "campaign.json")]
    assert len(files) > 30
    assert [p.name for p in files if f"`{p.name}`" not in index] == []


def test_a_file_no_campaign_describes_is_an_error(tmp_path, capsys):
    results = tmp_path / "results"
    camp = results / "2026-11-26-default-vs-peers-native"
    shutil.copytree(RESULTS / camp.name, camp)
    script = _script()
    assert script.main(["--results", str(results)]) == 0
    assert "bench-LARGE.json" in (results / "INDEX.md").read_text()
    (camp / "bench-SMALL.json").write_text(json.dumps({"size": "SMALL", "rows": []}))
    (results / "loose.txt").write_text("")
    assert script.main(["--check", "--results", str(results)]) == 1
    err = capsys.readouterr().err
    assert "bench-SMALL.json described by no run" in err and "loose.txt: not in a campaign folder" in err


def test_a_run_without_a_commit_is_an_error(tmp_path, capsys):
    camp = tmp_path / "2026-11-25-verify-cost"
    shutil.copytree(RESULTS / camp.name, camp)
    spec = json.loads((camp / "campaign.json").read_text())
    del spec["runs"]["verify-MEDIUM"]["commit"]
    (camp / "campaign.json").write_text(json.dumps(spec))
    assert _script().main(["--check", "--results", str(tmp_path)]) == 1
    assert "verify-MEDIUM: no commit" in capsys.readouterr().err
