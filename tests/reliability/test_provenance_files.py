"""Issue 33, item 5 (part): the files a policy reads join the run's fingerprint. A resume
accepted a changed predictions file under ``--import`` (``policy=imported``); now it is refused
naming the file, and its hash is computed once per (path, size, mtime)."""

from __future__ import annotations

import json

import pytest

from eqa_runner.errors import RunDirError
from eqa_runner.run import provenance
from eqa_runner.run.loop import run
from tests.reliability import tally


def _predictions(path, questions, answer: str) -> None:
    path.write_text("".join(json.dumps({"episode_id": q["question_id"], "answer": answer,
                                        "trace": {}, "judge_images": []}) + "\n"
                            for q in questions))  # fmt: skip


def test_a_changed_predictions_file_is_refused_on_resume(tmp_path, compose_cfg, openeqa_data):
    questions = json.loads((openeqa_data / "open-eqa-v0.json").read_text())[:3]
    preds, ids = tmp_path / "predictions.jsonl", tmp_path / "ids.json"
    _predictions(preds, questions, "a red sofa")
    ids.write_text(json.dumps([q["question_id"] for q in questions]))
    out = tmp_path / "imported"
    over = [f"task.data_dir={openeqa_data}", "policy=imported", "llm=offline",
            "judge.model=offline", f"policy.predictions_file={preds}", f"run.episodes={ids}",
            "run.progress=false"]  # fmt: skip
    run(compose_cfg(over, out=out))
    recorded = json.loads((out / "provenance.json").read_text())["inputs"]["files"]
    assert recorded == {"policy.predictions_file": provenance.file_sha256(preds)}
    run(compose_cfg([*over, "run.resume=true"], out=out))  # same file: resumes
    _predictions(preds, questions, "two chairs")
    tally.add("bad inputs tried")
    with pytest.raises(RunDirError) as e:
        run(compose_cfg([*over, "run.resume=true"], out=out))
    tally.add("runs mislabelled", int("policy.predictions_file" not in str(e.value)))
    assert "files policy.predictions_file content hash" in str(e.value)


def test_file_hashes_are_cached_by_size_and_mtime(tmp_path, monkeypatch):
    f = tmp_path / "scene.glb"
    f.write_bytes(b"x" * 1000)
    first = provenance.file_sha256(f)
    opened = []
    real_open = type(f).open
    monkeypatch.setattr(
        type(f), "open", lambda self, *a, **k: (opened.append(self), real_open(self, *a, **k))[1]
    )
    assert provenance.file_sha256(f) == first and opened == []  # cached
    f.write_bytes(b"y" * 1001)  # another size: hashed again
    opened.clear()
    assert provenance.file_sha256(f) != first and opened == [f]
