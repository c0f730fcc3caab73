"""Keeping API keys out of configs and run directories."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

SECRET_CONFIG_KEY = "api_key"  # config keys with this last component must never hold a value


def secret_overrides(argv: Sequence[str]) -> str | None:
    """Refusal message when a command-line override puts a key in a config value, else None.

    Run before Hydra composes anything: Hydra writes the overrides into ``.hydra/`` before the
    app starts, so a key must be refused before it can reach the run directory.
    """
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        key = key.lstrip("~+")
        if key.split("@")[0].rsplit(".", 1)[-1] != SECRET_CONFIG_KEY:
            continue
        if value.strip().lower() in ("", "null", "none", "~"):
            continue
        where = key.rsplit(".", 1)[0] if "." in key else "llm"
        return (
            f"{key}=…: an API key was given as a config value; it was not used and nothing was "
            f"written. Keys are never put in configs: export the key in an environment variable "
            f"and set {where}.api_key_env=<VARIABLE_NAME>, e.g. {where}.api_key_env=MY_KEY."
        )
    return None


def redact_saved_configs(hydra_dir: Path) -> None:
    """Blank ``api_key`` values in the ``.hydra/*.yaml`` files Hydra already wrote."""
    pattern = re.compile(rf"^(\s*(?:-\s*)?\S*{SECRET_CONFIG_KEY}\s*[:=]\s*)(?!null\s*$)\S.*$", re.M)
    for f in Path(hydra_dir).glob("*.yaml"):
        text = f.read_text(encoding="utf-8")
        new = pattern.sub(lambda m: m.group(1) + "'<refused>'", text)
        if new != text:
            f.write_text(new, encoding="utf-8")
