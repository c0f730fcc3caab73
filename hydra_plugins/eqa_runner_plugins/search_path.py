"""The search-path plugin: each installed benchmark's or plugin's ``conf_dir``
(:func:`eqa_runner.registry.config_dirs`) after eqa_runner's own config tree, so their options
(``task=<plugin benchmark>``, ``policy=<plugin policy>`` …) compose like the built-ins."""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

PROVIDER = "eqa_runner-plugin"


def is_eqa_runner_tree(path: str) -> bool:
    """Whether a search-path entry is eqa_runner's shipped config tree."""
    p = path.rstrip("/").replace("\\", "/")
    if p in ("pkg://eqa_runner.conf", "pkg://eqa_runner/conf"):
        return True
    return not p.startswith("pkg://") and p.removeprefix("file://").endswith("/eqa_runner/conf")


class EqaRunnerPluginsSearchPath(SearchPathPlugin):
    """Appends the plugins' config dirs when the primary config is eqa_runner's."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        if not any(
            e.provider == "main" and is_eqa_runner_tree(e.path) for e in search_path.get_path()
        ):
            return  # another Hydra app in the same environment: leave its search path alone
        from eqa_runner.registry import config_dirs

        for name, conf_dir in config_dirs():
            search_path.append(provider=f"{PROVIDER}:{name}", path=conf_dir)
