"""Puts the config directories of installed eqa_runner plugins on Hydra's search path.

Hydra's plugin scan imports this package (``hydra_plugins`` is a namespace package shared with
other Hydra plugins) and applies :class:`~.search_path.EqaRunnerPluginsSearchPath` to every
config search path; it acts only when eqa_runner's own config tree is the primary one.
"""
