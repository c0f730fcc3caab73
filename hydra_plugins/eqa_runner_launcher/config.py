"""Launcher configs in Hydra's ConfigStore: ``hydra/launcher=eqa_runner_slurm|eqa_runner_local``.

The plugin's own schemas (every submitit key, same defaults) with ``_target_`` set to the
wait-for-all launchers in :mod:`.launcher`. eqa_runner's ``conf/hydra/launcher/slurm.yaml`` and
``local.yaml`` extend these with the project's settings.
"""

# No ``from __future__ import annotations``: Hydra's plugin scan executes this module before
# it is in sys.modules, where dataclasses would look string annotations up.
from dataclasses import dataclass

from hydra.core.config_store import ConfigStore
from hydra_plugins.hydra_submitit_launcher.config import LocalQueueConf, SlurmQueueConf

_MODULE = "hydra_plugins.eqa_runner_launcher.launcher"


@dataclass
class SlurmSweepConf(SlurmQueueConf):
    _target_: str = f"{_MODULE}.SlurmSweepLauncher"
    progress_s: float = 180.0  # a progress line every N s while the sweep waits (0: none)


@dataclass
class LocalSweepConf(LocalQueueConf):
    _target_: str = f"{_MODULE}.LocalSweepLauncher"
    progress_s: float = 180.0  # a progress line every N s while the sweep waits (0: none)


ConfigStore.instance().store(
    group="hydra/launcher", name="eqa_runner_slurm", node=SlurmSweepConf, provider="eqa_runner"
)
ConfigStore.instance().store(
    group="hydra/launcher", name="eqa_runner_local", node=LocalSweepConf, provider="eqa_runner"
)
