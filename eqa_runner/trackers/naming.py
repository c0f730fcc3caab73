"""One naming rule for every tracker: run names, sweep groups, parameters, SLURM ids, and keys a
tracker's server accepts.

- A run is named after what distinguishes it: a sweep job by its swept ``key=value`` pairs
  (``policy=fbe,llm=gpt-4o``), a single run by its run dir's name; plumbing (``logger=…``,
  ``hydra.*``, paths, ``run.resume`` …, Hydra's ``override_dirname.exclude_keys``) never.
- A sweep's group is its sweep dir's name (the same for MLflow's parent run and W&B's group).
- Parameters are the config without ``logger.*``/``hydra.*`` keys and without null values.
- The SLURM job (``SLURM_JOB_ID``, ``SLURM_ARRAY_JOB_ID``/``SLURM_ARRAY_TASK_ID``) is a tag
  and part of the reproducibility stamp.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

PLUMBING_ROOTS = ("logger", "hydra")  # config roots that never become params or name parts
SLURM_VARS = {
    "job_id": "SLURM_JOB_ID",
    "array_job_id": "SLURM_ARRAY_JOB_ID",
    "array_task_id": "SLURM_ARRAY_TASK_ID",
}
MAX_NAME = 120


def is_plumbing_key(key: str, exclude: Iterable[str] = ()) -> bool:
    """``logger…``/``hydra…`` keys and config groups, and the keys in ``exclude``."""
    k = key.lstrip("~+").split("@", 1)[0]
    root = re.split(r"[./]", k, maxsplit=1)[0]
    return root in PLUMBING_ROOTS or k in set(exclude)


_ITEM = re.compile(r"^[~+]*[\w./@-]+=")


def without_plumbing(override_dirname: str) -> str:
    """Hydra's ``override_dirname`` (``k=v,k=v``) without ``logger…``/``hydra…`` items (its
    ``exclude_keys`` match whole keys only: ``logger.mlflow.tracking_uri=…`` got through), so a
    sweep re-run that adds a logger finds the same job dirs."""
    items: list[str] = []
    for frag in str(override_dirname).split(","):
        if _ITEM.match(frag) or not items:
            items.append(frag)
        else:  # a list value's comma: ``logger=[csv,mlflow]``
            items[-1] += "," + frag
    return ",".join(i for i in items if not is_plumbing_key(i.split("=", 1)[0]))


def params(flat: Mapping[str, Any]) -> dict[str, str]:
    """Tracker parameters from the flattened config: no plumbing roots, no null values."""
    return {k: str(v) for k, v in flat.items() if v is not None and not is_plumbing_key(k)}


def swept(overrides: Iterable[str], exclude: Iterable[str] = ()) -> dict[str, str]:
    """``{key: value}`` of the sweep's overrides that take several values (``policy=re,fbe``,
    ``range(…)``, ``choice(…)``, ``glob(…)``), plumbing left out."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    out: dict[str, str] = {}
    for o in OverridesParser.create().parse_overrides([str(x) for x in overrides]):
        key = o.get_key_element().lstrip("~+")
        if o.is_sweep_override() and not is_plumbing_key(key, exclude):
            out[key] = str(o.input_line).split("=", 1)[1] if o.input_line else ""
    return out


def run_name(dir_name: str, job_overrides: Iterable[str], swept_keys: Iterable[str]) -> str:
    """A sweep job: its values of the swept keys (``k=v,k=v`` in the sweep's key order); else
    (a single run, or no swept key known) the run dir's name."""
    mine = {}
    for o in job_overrides:
        if "=" in o:
            k, v = o.split("=", 1)
            mine[k.lstrip("~+")] = v
    parts = [f"{k}={mine[k]}" for k in swept_keys if k in mine]
    return ",".join(parts)[:MAX_NAME] if parts else dir_name


def slurm_ids(environ: Mapping[str, str]) -> dict[str, str]:
    """The SLURM job this process runs in (empty outside SLURM)."""
    return {k: environ[v] for k, v in SLURM_VARS.items() if environ.get(v)}


_BAD = re.compile(r"[^\w./\- :]")


def safe_key(key: str, limit: int = 250) -> str:
    """A key MLflow accepts (letters, digits, ``_ - . / : space``; not ``..``-like paths)."""
    k = _BAD.sub("_", key)[:limit].strip("/") or "_"
    return "/".join(p if p not in (".", "..") else "_" for p in k.split("/") if p) or "_"
