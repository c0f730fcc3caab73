"""eqa_runner's sweep launchers, a Hydra plugin (``hydra/launcher=slurm|local``).

``hydra_plugins`` is a namespace package shared with hydra-submitit-launcher (no ``__init__.py``
there); Hydra's plugin scan imports this package's modules, which registers the launcher configs
(:mod:`.config`) and the launcher classes (:mod:`.launcher`).
"""
