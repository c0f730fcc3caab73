"""The first commands a new user types: ``--help`` with overrides or ``--config-dir``,
``--version``, and a command run by a Python without the project installed."""

from __future__ import annotations

import sys

import pytest

import eqa_runner
from eqa_runner import errors
from eqa_runner.__main__ import main


def _main(monkeypatch: pytest.MonkeyPatch, *argv: str) -> None:
    monkeypatch.setattr(sys, "argv", ["eqa_runner", *argv])
    main()


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("task=express", "--help"), ("-h", "policy=fbe"), ("--config-dir", "X", "-h")],
)
def test_help_is_the_projects_short_help_with_overrides(monkeypatch, capsys, tmp_path, argv):
    argv = tuple(str(tmp_path) if a == "X" else a for a in argv)
    _main(monkeypatch, *argv)
    out = capsys.readouterr().out
    assert out.startswith("eqa_runner: run one Embodied Question Answering")
    groups = [ln.split(":", 1)[0] for ln in out.splitlines() if ": " in ln and "=" not in ln]
    for group in ("task", "policy", "llm", "judge", "sim", "logger", "experiment"):
        assert group in groups, f"{group} missing from --help"
    assert "schema" not in out and "base_" not in out  # Hydra's internal nodes
    assert len(out.splitlines()) < 60


def test_help_lists_the_options_of_a_user_config_dir(monkeypatch, capsys, tmp_path):
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "my_explorer.yaml").write_text("defaults: [fbe]\n")
    _main(monkeypatch, "--config-dir", str(tmp_path), "task=express", "--help")
    policy_line = next(
        ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("policy:")
    )
    assert "my_explorer" in policy_line and "fbe" in policy_line
    _main(monkeypatch, f"--config-dir={tmp_path}", "-h")
    assert "my_explorer" in capsys.readouterr().out


def test_version_is_the_projects(monkeypatch, capsys):
    _main(monkeypatch, "--version")
    out = capsys.readouterr().out
    assert out.startswith(f"eqa_runner {eqa_runner.__version__} (hydra-core ")


def test_a_python_without_the_dependencies_gets_the_fix(monkeypatch, capsys):
    monkeypatch.setattr(
        errors, "RUNTIME_MODULES", (("hydra", "hydra-core"), ("no_such_mod_x", "x-dist"))
    )
    with pytest.raises(SystemExit) as exc:
        errors.require_installed("python -m eqa_runner.report")
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: this Python (")
    assert "lacks x-dist" in err[0] and "hydra-core" not in err[0]
    assert "`.venv/bin/python -m eqa_runner.report …`" in err[0]
    assert "source .venv/bin/activate" in err[0]


def test_every_entry_module_checks_the_install_first():
    from pathlib import Path

    root = Path(eqa_runner.__file__).parent
    for entry in ("__main__.py", "report/__main__.py", "data/__main__.py", "demo/__main__.py"):
        src = (root / entry).read_text()
        code = [ln for ln in src.splitlines() if ln.startswith(("import ", "from ", "require_"))]
        code = [ln for ln in code if ln != "from __future__ import annotations"]
        assert code[:2][0] == "from eqa_runner.errors import require_installed", entry
        assert code[1].startswith("require_installed("), entry
