"""The committed round-trip goldens (tests/golden/roundtrip/README.md): the export of the
committed records is the committed export, and the upstream scripts' printed numbers on it are
the project's (or the project's summary says why not)."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

from eqa_runner.benchmarks.aeqa.upstream import AEQAPredictions
from eqa_runner.benchmarks.express.task import load_questions
from eqa_runner.benchmarks.express.upstream import ExpressResults
from eqa_runner.benchmarks.hmeqa.upstream import HMEQAResults
from eqa_runner.benchmarks.openeqa_em.upstream import OpenEQAPredictions
from eqa_runner.records import final_records, read_records

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "roundtrip"


def _golden(name: str) -> tuple[list, dict, str]:
    d = GOLDEN / name
    recs = list(final_records(read_records(d / "episodes.jsonl")).values())
    return recs, json.loads((d / "project.json").read_text()), (d / "upstream.txt").read_text()


def _numbers(text: str) -> list[float]:
    body = "\n".join(text.splitlines()[1:])
    return [float(x) for x in re.findall(r"-?\d+\.\d+", body)]


def _same(a, b) -> None:
    """Two exported objects equal (numpy arrays by value, inf == inf)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)) and not isinstance(a, str):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    else:
        assert a == b or (a != a and b != b)


def _comparability(project: dict, errors: int) -> None:
    comp = project["published_comparability"]
    assert comp["comparable"] is False and comp["error_records_excluded"] == errors
    assert "run.resume=true" in comp["note"]


def test_express_golden(tmp_path, express_demo) -> None:
    recs, project, upstream = _golden("express")
    (f,) = ExpressResults().export(recs, load_questions(express_demo / "express-bench.json"),
                                   tmp_path)  # fmt: skip
    _same(pickle.loads(f.read_bytes()), pickle.loads((GOLDEN / "express/export/results.pkl")
                                                     .read_bytes()))  # fmt: skip
    h = project["headline"]
    assert _numbers(upstream) == pytest.approx([h["C"], h["C_star"], h["E_path"], h["d_T"]])
    _comparability(project, 1)


def test_hmeqa_golden(tmp_path) -> None:
    recs, project, upstream = _golden("hmeqa")
    (f,) = HMEQAResults().export(recs, [], tmp_path)
    _same(pickle.loads(f.read_bytes()), pickle.loads((GOLDEN / "hmeqa/export/results.pkl")
                                                     .read_bytes()))  # fmt: skip
    h = project["headline"]
    assert _numbers(upstream) == pytest.approx([h["success_weighted"], h["success_max"]])
    assert h["accuracy"] == h["success_max"]  # the protocol's answer rule is upstream's max
    _comparability(project, 1)


def test_openeqa_golden(tmp_path) -> None:
    recs, project, upstream = _golden("openeqa")
    (f,) = OpenEQAPredictions().export(recs, [], tmp_path)
    assert json.loads(f.read_text()) == json.loads((GOLDEN / "openeqa/export/predictions.json")
                                                   .read_text())  # fmt: skip
    assert _numbers(upstream)[0] == pytest.approx(project["headline"]["llm_match"])
    assert "AssertionError" in upstream  # the same file without -f: why the command has it
    _comparability(project, 1)


def test_aeqa_golden(tmp_path) -> None:
    """Upstream scores the error record with the blind mark at p = inf; the project leaves it
    out and says so: the two differ by exactly that question."""
    recs, project, upstream = _golden("aeqa")
    files = AEQAPredictions().export(recs, [], tmp_path)
    assert json.loads(files[0].read_text()) == json.loads(
        (GOLDEN / "aeqa/export/gpt_answer.json").read_text())  # fmt: skip
    _same(
        pickle.loads(files[1].read_bytes()),
        pickle.loads((GOLDEN / "aeqa/export/path_length_list.pkl").read_bytes()),
    )
    total = float(re.search(r"Total: ([\d.]+)", upstream).group(1))
    total_spl = float(re.search(r"Total SPL: ([\d.]+)", upstream).group(1))
    blind = json.loads((GOLDEN / "aeqa/blind-metrics.json").read_text())
    (err,) = [r for r in recs if r["status"] == "error"]
    n, h = len(blind), project["headline"]
    mark = 100 * (blind[err["episode_id"]] - 1) / 4
    assert total == pytest.approx((h["llm_match"] * (n - 1) + mark) / n, abs=0.005)
    assert total_spl == pytest.approx(h["llm_match_spl"] * (n - 1) / n, abs=0.005)  # weight 0
    _comparability(project, 1)
