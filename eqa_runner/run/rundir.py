"""The run directory before the first record: usable, not another config's, then labelled.

Order at start (nothing is written until every check passed, so a refused start leaves an
existing directory byte-for-byte as it was):

1. :func:`check_writable_dir` — the run dir (and the cache dir) can be made and written; a path
   that is a file, a read-only parent or a full disk is one line naming the path and the fix;
2. :func:`eqa_runner.run.provenance.check_same_config` — a resume or re-run with another
   fingerprint is refused naming the differing keys;
3. :func:`label_run_dir` — ``.hydra/`` (config.yaml, hydra.yaml, overrides.yaml; Hydra's own
   copy is switched off: ``hydra.output_subdir: null``) and ``provenance.json`` (first start;
   a resume adds the scenes it reads for the first time) are written.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from eqa_runner import __version__
from eqa_runner.errors import RunDirError, os_error_line
from eqa_runner.llm.secrets import strip_urls
from eqa_runner.records import write_json_atomic
from eqa_runner.redact import redact
from eqa_runner.run.config import RunConfig
from eqa_runner.run.provenance import (
    PROVENANCE_FILE,
    provenance_record,
    read_provenance,
    with_new_selected,
)
from eqa_runner.safe_io import write_atomic

HYDRA_SUBDIR = ".hydra"

# file log handlers (run.log) held back until the run dir is labelled: a refused start must not
# create or append to run.log (Hydra's handler is lazy: ``delay: true``)
_deferred: list[tuple[logging.Handler, _Buffer]] = []
# run dirs this process made (or that did not exist when it started): removed again when the
# start is refused or the run was a dry run, so `report` never lists them
_fresh: list[Path] = []


class _Buffer(logging.Handler):
    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.records) < 10_000:
            self.records.append(record)


def defer_run_log() -> None:
    """Hold back what the root logger's file handlers would write until :func:`release_run_log`."""
    root = logging.getLogger()
    for h in list(root.handlers):
        if isinstance(h, logging.FileHandler):
            buf = _Buffer(h.level)
            root.removeHandler(h)
            root.addHandler(buf)
            _deferred.append((h, buf))


def release_run_log(*, keep: bool) -> None:
    """Put the file handlers back; ``keep``: write what was held back, else drop it."""
    root = logging.getLogger()
    for h, buf in _deferred:
        root.removeHandler(buf)
        root.addHandler(h)
        if keep:
            for rec in buf.records:
                if rec.levelno >= h.level:
                    h.handle(rec)
        buf.records.clear()
    _deferred.clear()


def note_fresh_dir(path: Path) -> None:
    """``path`` did not exist before this process (it may remove it again, see above)."""
    _fresh.append(Path(path))


def remove_unlabelled_fresh_dirs() -> None:
    """Remove the fresh run dirs that never got a ``provenance.json`` (refused start, dry run)."""
    for d in _fresh:
        if d.is_dir() and not (d / PROVENANCE_FILE).exists():
            shutil.rmtree(d, ignore_errors=True)
    _fresh.clear()


def check_writable_dir(path: Path, *, key: str, create: bool = False) -> None:
    """Refuse (one line) when ``path`` cannot be a writable directory; creates it only when
    ``create``. ``key`` is the setting that moves it (``hydra.run.dir``, ``run.cache_dir``)."""
    path = Path(path)
    fix = f"pick a writable directory with {key}=<dir> or fix the permissions"
    if path.exists() and not path.is_dir():
        raise RunDirError(f"{path}: exists and is a file, not a directory; pick another {key}")
    probe_dir = path
    while not probe_dir.exists():
        if probe_dir.parent == probe_dir:
            break
        probe_dir = probe_dir.parent
    if probe_dir.exists() and not probe_dir.is_dir():
        raise RunDirError(f"{probe_dir}: is a file, so {path} cannot be made; pick another {key}")
    try:  # a real probe (os.access says yes to root on a read-only mount)
        fd, tmp = tempfile.mkstemp(prefix=".eqa_write_probe.", dir=probe_dir)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise RunDirError(os_error_line(probe_dir, e, fix)) from None
    if not create:
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".eqa_write_probe.", dir=path)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)
            os.unlink(tmp)
    except OSError as e:
        raise RunDirError(os_error_line(path, e, fix)) from None


def check_cache_dir(run: RunConfig) -> None:
    """With ``run.cache``: the cache dir is a writable directory (checked once, at start)."""
    if not run.cache:
        return
    root = Path(run.cache_dir)
    try:
        check_writable_dir(root, key="run.cache_dir", create=True)
    except RunDirError as e:
        raise RunDirError(
            f"run.cache_dir: {e}; or set EQA_RUNNER_CACHE_DIR, or run.cache=false"
        ) from None


def check_prompts_dir(d: str | None) -> None:
    """``prompts.dir``, when set, is a directory."""
    if d and not Path(d).is_dir():
        from eqa_runner.errors import ConfigError

        raise ConfigError(
            f"prompts.dir={d}: not a directory; stage the benchmark's prompts with "
            "`python -m eqa_runner.data fetch ...`, or leave prompts.dir=null for the project's own"
        )


def config_container(cfg: DictConfig) -> dict[str, Any]:
    """The composed config as plain data (resolved), without the ``hydra`` node."""
    data = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items() if k != "hydra"}


def label_run_dir(
    out_dir: Path,
    cfg: DictConfig,
    container: dict[str, Any],
    inputs: dict[str, Any] | None = None,
    *,
    adopted: bool = False,
) -> None:
    """Write ``.hydra/`` (this start's config) and, on the first start, ``provenance.json``
    (``adopted: true`` when records were there before it, ``run.adopt=true``)."""
    _write_hydra_files(out_dir, cfg)
    old = read_provenance(out_dir)
    if old is not None:  # a resume: the scenes it reads for the first time join the record
        grown = with_new_selected(old, strip_urls(container), inputs)
        if grown is not None:
            write_json_atomic(out_dir / PROVENANCE_FILE, grown)
    else:
        extra = {"adopted": True} if adopted else {}
        write_json_atomic(
            out_dir / PROVENANCE_FILE,
            provenance_record(
                strip_urls(container),
                inputs,
                created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                eqa_runner=__version__,
                **extra,
            ),
        )


def _write_hydra_files(out_dir: Path, cfg: DictConfig) -> None:
    """What Hydra would have written before the app started, written after the checks (URLs
    without user-info). Only when Hydra runs this process (not for in-process ``run(cfg)``)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return
    hydra_cfg = HydraConfig.instance().cfg
    d = out_dir / HYDRA_SUBDIR
    d.mkdir(parents=True, exist_ok=True)
    task = {k: v for k, v in OmegaConf.to_container(cfg, resolve=False).items() if k != "hydra"}  # type: ignore[union-attr]
    files = {
        "config.yaml": task,
        "hydra.yaml": OmegaConf.to_container(hydra_cfg, resolve=False),
        "overrides.yaml": OmegaConf.to_container(hydra_cfg.hydra.overrides.task),  # type: ignore[union-attr]
    }
    for name, data in files.items():
        write_atomic(d / name, redact(OmegaConf.to_yaml(OmegaConf.create(strip_urls(data)))))
