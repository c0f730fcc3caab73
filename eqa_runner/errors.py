"""The one family of user-facing errors: one line naming the file or key, and the fix.

Every command (``python -m eqa_runner`` and the ``rejudge``/``report``/``data``/``demo``/``doctor``
commands) prints a :class:`UserError` as ``error: <message>`` on stderr and exits with status 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
from pathlib import Path


class UserError(Exception):
    """Bad input or environment the user can fix; the message says how."""

    exit_code = 2


class ConfigError(UserError, ValueError):
    """An impossible or out-of-range config value, or an impossible combination of choices."""


class DataError(UserError, ValueError):
    """A dataset file or directory is missing or malformed."""


class SceneError(DataError):
    """A scene mesh the agent cannot use: no navigable area, or a start on no island."""


class RunDirError(UserError, RuntimeError):
    """The run directory cannot be used as asked (already holds records, locked, unwritable)."""


class ConfigSecretError(UserError, ValueError):
    """An API key was given as a config value."""


class ReportError(UserError, ValueError):
    """Nothing to report, or the inputs cannot be read."""


class UnsafeInputError(DataError):
    """A file from outside over a limit (size, JSON nesting) or with a field of the wrong type."""


class UnsafeWriteError(UserError, OSError):
    """An output path the one writer refuses: a symbolic link (its target is never replaced)."""


def os_error_line(path: Path | str, e: OSError, fix: str) -> str:
    """One line for a filesystem error: the path, what the OS said, and the fix."""
    what = {
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EFBIG: "file too large (a file size limit)",
        errno.EROFS: "read-only file system",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.ENOTDIR: "a part of the path is a file, not a directory",
        errno.EEXIST: "exists and is not a directory",
    }.get(e.errno or 0, e.strerror or type(e).__name__)
    return f"{path}: {what}; {fix}"


# what every command imports first: (module, the distribution that provides it)
RUNTIME_MODULES = (("hydra", "hydra-core"), ("omegaconf", "omegaconf"), ("numpy", "numpy"))


def require_installed(command: str = "python -m eqa_runner") -> None:
    """Exit 2 with one line naming the fix when this Python lacks the runtime dependencies (a
    checkout run with the system ``python`` instead of the project's venv), before any import
    of them can fail with a bare ``No module named …``."""
    import importlib.util
    import sys

    missing = [dist for mod, dist in RUNTIME_MODULES if importlib.util.find_spec(mod) is None]
    if not missing:
        return
    print(
        f"error: this Python ({sys.executable}) lacks {', '.join(missing)}: eqa_runner is not "
        f"installed in it. Use the project's venv: `make setup` once, then "
        f"`.venv/bin/{command} …` or "
        "`source .venv/bin/activate` first (or `pip install eqa_runner` into this Python)",
        file=sys.stderr,
        flush=True,
    )
    sys.exit(2)
