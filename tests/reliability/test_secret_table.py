"""Issue 33, item 1: secrets are screened before anything prints. The key shapes and names are
a table (``eqa_runner.redact``); each row is tried here as a config value (refused, masked) and
as text at a sink (redacted). Hydra's ``--cfg``/``--info``/``--help`` print only a screened
config. The false-positive corpus stays green (tests/reliability/test_redaction.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from eqa_runner import redact
from eqa_runner.llm.secrets import credential_problem, screen_values
from eqa_runner.run.configstore import register_configs, screen_every_composition
from tests.reliability import tally
from tests.reliability.conftest import run_cli

CONF = Path(__file__).resolve().parents[2] / "eqa_runner" / "conf"
JWT = (
    "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJzdWIiOiJ1c2VyQGxhYi5vcmciLCJleHAiOjE3MDB9."
    "Qm9ndXNTaWduYXR1cmVWYWx1ZTEyMzQ1Njc4OTA"
)
ACCOUNT_KEY = "Zm9vYmFyYmF6cXV4U0VDUkVUOTk5c2VjcmV0a2V5PT0+"
CONN = (
    "DefaultEndpointsProtocol=https;AccountName=labstore;"
    f"AccountKey={ACCOUNT_KEY};EndpointSuffix=core.windows.net"
)
ODBC = "Driver={ODBC Driver 18};Server=db.lab.org;Uid=eqa;Password=Hunter2SECRET999x;"

# (config key, value, the part of the value that must never print)
HOSTILE = [
    ("llm.extra_params.headers.Cf-Access-Jwt-Assertion", JWT, JWT),
    ("llm.extra_params.user", JWT, JWT),  # a JWT is a key whatever its field
    ("llm.api_base", f"https://gw.lab.org/v1?jwt={JWT}", JWT),
    ("llm.extra_params.headers.Cookie", "session=Q2xvdWRTZXNzaW9uU0VDUkVUOTk5", "Q2xvdWRTZXNzaW9u"),
    ("llm.extra_params.headers.X-Session", "Q2xvdWRTZXNzaW9uU0VDUkVUOTk5", "Q2xvdWRTZXNzaW9u"),
    ("llm.api_base", "https://gw.lab.org/v1?user=eqa&pwd=Hunter2SECRET999x", "Hunter2SECRET999x"),
    ("llm.api_base", "https://gw.lab.org/v1?pass=Hunter2SECRET999x", "Hunter2SECRET999x"),
    ("llm.extra_params.storage", CONN, ACCOUNT_KEY),
    ("llm.extra_params.dsn", ODBC, "Hunter2SECRET999x"),
    ("llm.extra_params.dsn", "Server=db;Pwd=Hunter2SECRET999x", "Hunter2SECRET999x"),
]


@pytest.mark.parametrize(("key", "value", "secret"), HOSTILE)
def test_every_row_of_the_table_is_refused_as_a_config_value(key, value, secret):
    tally.add("bad inputs tried")
    why = credential_problem(key, value)
    assert why is not None, (key, value)
    refusal = screen_values({"run": {"tag": "ok"}, key: value})
    leaked = refusal is None or secret in refusal
    tally.add("keys leaked", int(leaked))
    assert refusal is not None and secret not in refusal


@pytest.mark.parametrize(("key", "value", "secret"), HOSTILE)
def test_every_row_of_the_table_is_redacted_at_the_sinks(key, value, secret):
    text = f"request failed: {key.rsplit('.', 1)[-1]}: {value} (status 401)"
    out = redact.redact(text)
    tally.add("keys leaked", int(secret in out))
    assert secret not in out, out
    assert "status 401" in out


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=512 temperature=0.2",
        "llm.api_key_env=MY_KEY",
        "run.episodes=ids.txt task.split=val",
        "https://huggingface.co/api/models?search=Qwen2.5-VL-72B&sort=downloads",
        "scene=00843-DYehNKdT76V floor=0 code=130",
        "error: llm.api_key=sk-…(40 chars): a credential was given as a config value",
    ],
)
def test_ordinary_key_value_text_is_not_redacted(text):
    assert redact.redact(text) == text


def _compose_with(tmp_path: Path, yaml_text: str) -> None:
    conf = tmp_path / "conf" / "local"
    conf.mkdir(parents=True)
    (conf / "default.yaml").write_text(yaml_text)
    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            compose(
                "config",
                overrides=[f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "llm=offline"],
                return_hydra_config=True,
            )
    finally:
        GlobalHydra.instance().clear()


@pytest.mark.parametrize(
    ("yaml_text", "secret"),
    [
        ("# @package _global_\njudge:\n  api_key: sk-test-SECRET999-in-file\n", "SECRET999"),
        (f"# @package _global_\nhydra:\n  job:\n    env_set:\n      DSN: '{ODBC}'\n",
         "Hunter2SECRET999x"),
        ("# @package _global_\nllm:\n  extra_params:\n    headers:\n"
         f"      Cf-Access-Jwt-Assertion: {JWT}\n", JWT),
    ],
)  # fmt: skip
def test_every_composition_is_screened_before_hydra_prints_it(
    tmp_path, monkeypatch, capsys, yaml_text, secret
):
    """``--cfg``/``--info``/``--help`` print what ``Hydra.compose_config`` returns, without any
    callback: the screen wraps the composition itself (it printed the key in full before)."""
    from hydra._internal.hydra import Hydra

    monkeypatch.setattr(Hydra, "compose_config", Hydra.compose_config)  # restored afterwards
    screen_every_composition()
    tally.add("bad inputs tried")
    with pytest.raises(SystemExit) as exc:
        _compose_with(tmp_path, yaml_text)
    err = capsys.readouterr().err
    tally.add("keys leaked", int(secret in err))
    assert exc.value.code == 2
    assert err.startswith("error: ") and "api_key_env" in err and secret not in err


def test_env_resolved_values_are_screened(tmp_path, monkeypatch, capsys):
    from hydra._internal.hydra import Hydra

    monkeypatch.setattr(Hydra, "compose_config", Hydra.compose_config)
    monkeypatch.setenv("LAB_GATEWAY", "https://eqa:Hunter2SECRET999x@gw.lab.org/v1")
    screen_every_composition()
    with pytest.raises(SystemExit):
        _compose_with(tmp_path, "# @package _global_\nllm:\n  api_base: ${oc.env:LAB_GATEWAY}\n")
    assert "Hunter2SECRET999x" not in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize(
    "args", [["--cfg", "job"], ["--cfg", "hydra"], ["--cfg", "all"], ["--info"],
             ["--help", "llm=offline"]]
)  # fmt: skip
def test_a_key_in_a_config_file_is_never_printed_by_cfg_info_or_help(tmp_path, args):
    conf = tmp_path / "conf" / "local"
    conf.mkdir(parents=True)
    (conf / "default.yaml").write_text(
        f"# @package _global_\njudge:\n  api_key: sk-test-SECRET999-in-file\n"
        f"hydra:\n  job:\n    env_set:\n      STORE: '{CONN}'\n"
    )
    res = run_cli([f"--config-dir={tmp_path / 'conf'}", *args], timeout=60)
    out = res.stdout + res.stderr
    tally.add("bad inputs tried")
    tally.add("keys leaked", int("SECRET999" in out or ACCOUNT_KEY in out))
    assert "SECRET999" not in out and ACCOUNT_KEY not in out
    if "--help" in args:  # the project's help composes no config: nothing of it is printed
        assert res.returncode == 0 and out.startswith("eqa_runner: run one"), out[-1500:]
        return
    assert res.returncode == 2, out[-1500:]
    assert res.stderr.startswith("error: ") and "…(" in res.stderr  # named, masked
