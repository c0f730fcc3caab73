"""Issue 25, item 1: every secret the process knows is screened out of configs and redacted at
every sink (records, logs, console, summaries, ``.hydra/``, provenance, endpoint error texts);
ordinary identifiers are never taken for keys (the false-positive corpus)."""

from __future__ import annotations

import json
import logging
import random
import string
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from eqa_runner import redact
from eqa_runner.llm.secrets import credential_problem, screen_values, secret_overrides
from tests.helpers.datasets import make_openeqa_dataset
from tests.reliability import tally
from tests.reliability.conftest import cli_env, run_cli

OFFLINE = ["llm=offline", "judge.model=offline", "run.progress=false"]
CORPUS = Path(__file__).parent / "fixtures" / "identifiers.txt"
HEX_KEY = "a3f9" + "0c1d2e3f4a5b6c7d8e9f" * 3  # 64 lower-case hex digits, starts with a letter
HF_KEY = "hf_" + "QxVbTzLmKpRwNsYdHgFjCeUaIo"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return make_openeqa_dataset(
        tmp_path_factory.mktemp("redact") / "d", n_questions=2, n_episodes=1, frames=2
    )


def _refused_without_trace(res, run_dir: Path, secret: str, field: str) -> None:
    tally.add("bad inputs tried")
    leaked = secret in res.stdout + res.stderr or run_dir.exists()
    tally.add("keys leaked", int(leaked))
    assert res.returncode == 2, res.stderr[-1500:]
    assert field in res.stderr and "error:" in res.stderr
    assert secret not in res.stdout + res.stderr, "the value is masked"
    assert not run_dir.exists(), "nothing was written"


# --- defect 1: a key pasted into an *_env field ------------------------------------------------


@pytest.mark.parametrize("value", [HF_KEY, HEX_KEY, "sk_live_" + "Ab3" * 8])
@pytest.mark.slow
def test_key_pasted_into_an_env_field_is_refused_masked(tmp_path, data, value):
    run_dir = tmp_path / "run"
    res = run_cli(
        [f"task.data_dir={data}", *OFFLINE, f"hydra.run.dir={run_dir}", f"llm.api_key_env={value}"]
    )
    _refused_without_trace(res, run_dir, value, "llm.api_key_env")


# --- defect 2: credential names matched by parts ----------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "llm.extra_params.openai_api_key",
        "llm.extra_params.azure_api_key",
        "llm.extra_params.hf_token",
        "llm.extra_params.headers.Ocp-Apim-Subscription-Key",
        "llm.extra_params.headers.X-Api-Token",
        "judge.extra_params.accessToken",
    ],
)
def test_credential_names_are_matched_by_parts(key):
    tally.add("bad inputs tried")
    assert credential_problem(key, "0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f") is not None


@pytest.mark.slow
def test_credential_header_on_the_command_line_is_refused(tmp_path, data):
    run_dir = tmp_path / "run"
    res = run_cli(
        [f"task.data_dir={data}", *OFFLINE, f"hydra.run.dir={run_dir}",
         f"+llm.extra_params.headers.X-Api-Token={HEX_KEY[:32]}"]
    )  # fmt: skip
    _refused_without_trace(res, run_dir, HEX_KEY[:32], "X-Api-Token")


@pytest.mark.parametrize(
    "key", ["llm.max_tokens", "llm.extra_params.max_completion_tokens", "llm.api_key_env",
            "report.sort_key", "task.cache_key", "llm.extra_params.tokenizer"]
)  # fmt: skip
def test_ordinary_names_are_not_credentials(key):
    assert credential_problem(key, "OPENAI_API_KEY") is None


# --- defect 3: URL query keys -----------------------------------------------------------------


@pytest.mark.parametrize("query", ["subscription-key", "code", "auth", "sig", "key", "token"])
def test_credential_query_keys_in_urls_are_refused(query):
    tally.add("bad inputs tried")
    url = f"https://fn.example.net/api/chat?{query}=Zq8xV2pLm4Nw7Rt"
    assert credential_problem("llm.api_base", url) is not None
    assert credential_problem("llm.api_base", "https://x.example/v1?api-version=2024-06-01") is None


# --- defect 4: the hydra node ----------------------------------------------------------------


@pytest.mark.slow
def test_hydra_env_set_on_the_command_line_is_refused(tmp_path, data):
    run_dir = tmp_path / "run"
    res = run_cli(
        [f"task.data_dir={data}", *OFFLINE, f"hydra.run.dir={run_dir}",
         f"+hydra.job.env_set.HF_TOKEN={HEX_KEY}"]
    )  # fmt: skip
    _refused_without_trace(res, run_dir, HEX_KEY, "HF_TOKEN")


@pytest.mark.slow
def test_hydra_env_set_in_a_config_file_is_refused(tmp_path, data):
    conf = tmp_path / "conf" / "local"
    conf.mkdir(parents=True)
    (conf / "default.yaml").write_text(
        f"# @package _global_\nhydra:\n  job:\n    env_set:\n      HF_TOKEN: {HEX_KEY}\n"
    )
    run_dir = tmp_path / "run"
    res = run_cli(
        [f"--config-dir={tmp_path / 'conf'}", f"task.data_dir={data}", *OFFLINE,
         f"hydra.run.dir={run_dir}"]
    )  # fmt: skip
    _refused_without_trace(res, run_dir, HEX_KEY, "hydra.job.env_set.HF_TOKEN")


def test_screen_covers_hydra_and_its_override_strings():
    assert screen_values({"hydra": {"job": {"env_set": {"MY_SECRET": "x" * 10}}}})
    assert screen_values(
        {"hydra": {"overrides": {"task": [f"+llm.extra_params.hf_token={HF_KEY}"]}}}
    )
    assert (
        screen_values({"hydra": {"job": {"name": "AblationRunQwen25VL72BInstructSeed1234"}}})
        is None
    )


# --- defect 5: a key echoed back by the endpoint ----------------------------------------------

ECHO_KEY = "Zx9Q" + "kLmN7pRs" * 5  # a key of no known shape: only the registry knows it


class _EchoAuth(BaseHTTPRequestHandler):
    """Answers every request 401 with the bearer token in the body (as some servers do)."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {token}."}})
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.slow
def test_key_echoed_in_an_endpoint_error_is_redacted_everywhere(tmp_path, data):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _EchoAuth)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    run_dir = tmp_path / "run"
    try:
        res = run_cli(
            [f"task.data_dir={data}", "judge.model=offline", "run.progress=false",
             "llm.model=openai/test-model", f"llm.api_base={url}", "llm.api_key_env=EQA_T_KEY",
             f"hydra.run.dir={run_dir}", "run.cache=false", "llm.max_retries=0"],
            env=cli_env(EQA_T_KEY=ECHO_KEY),
        )  # fmt: skip
    finally:
        srv.shutdown()
    assert res.returncode == 1, res.stderr[-1500:]
    records = (run_dir / "episodes.jsonl").read_text()
    assert "401" in records and redact.REDACTED in records, "the error text is kept, redacted"
    sinks = {p.relative_to(run_dir).as_posix(): p.read_text() for p in run_dir.rglob("*")
             if p.is_file() and not p.name.startswith(".eqa")}  # fmt: skip
    sinks |= {"stdout": res.stdout, "stderr": res.stderr}
    leaked = [name for name, text in sinks.items() if ECHO_KEY in text]
    tally.add("keys leaked", len(leaked))
    assert leaked == [] and {"run.log", "summary.json"} <= set(sinks)


def test_log_records_and_console_are_redacted(capsys):
    redact.register("Pq7Zw3Lx9Vb2Nm8Rt4Yk")
    rec = logging.LogRecord(
        "x", logging.ERROR, __file__, 1, "reply: %s", ("Pq7Zw3Lx9Vb2Nm8Rt4Yk",), None
    )
    assert redact.redact_record(rec).getMessage() == f"reply: {redact.REDACTED}"
    stream = redact.RedactingStream(__import__("io").StringIO())
    stream.write("key=Pq7Zw3Lx9Vb2Nm8Rt4Yk sk-abcdefghijklmnopqrstuv")
    assert stream.getvalue() == f"key={redact.REDACTED} {redact.REDACTED}"


# --- defect 6: no false positives on ordinary identifiers -------------------------------------


def _corpus() -> list[str]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def test_no_false_positives_in_the_identifier_corpus():
    corpus = _corpus()
    assert len(corpus) >= 120
    fields = ("run.tag", "hydra.job.name", "llm.extra_params.user", "llm.model", "task.scene")
    flagged = [(f, x) for x in corpus for f in fields if credential_problem(f, x)]
    changed = [x for x in corpus if redact.redact(x) != x]
    assert flagged == [] and changed == []  # < 1 false positive


def test_random_tokens_are_still_recognised():
    rng = random.Random(25)
    alphabet = string.ascii_letters + string.digits
    tokens = ["".join(rng.choice(alphabet) for _ in range(40)) for _ in range(300)]
    caught = sum(credential_problem("run.tag", t) is not None for t in tokens)
    assert caught >= 0.95 * len(tokens)


@pytest.mark.slow
def test_long_camel_case_run_name_runs(tmp_path, data):
    run_dir = tmp_path / "run"
    res = run_cli(
        [f"task.data_dir={data}", *OFFLINE, f"hydra.run.dir={run_dir}",
         "hydra.job.name=AblationRunQwen25VL72BInstructSeed1234",
         "+llm.extra_params.user=MetaLlama32ElevenBVisionInstructRun7FrontierOnly"]
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-1500:]
    assert secret_overrides(["hydra.job.name=AblationRunQwen25VL72BInstructSeed1234"]) is None
