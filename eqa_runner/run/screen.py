"""The secret screen on a composed config: refused when any value holds a credential, as
written (what ``--cfg`` prints) or as resolved (values from the environment). Used by the start
checks (:mod:`eqa_runner.run.start`) and by every composition Hydra prints
(:func:`eqa_runner.run.configstore.screen_every_composition`)."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf


def screen_config(config: DictConfig) -> None:
    """Refuse (:class:`ConfigSecretError`) a composed config holding a credential anywhere: its
    values as written (what ``--cfg`` prints) and, where they resolve, as resolved (env values)."""
    from eqa_runner.errors import ConfigSecretError
    from eqa_runner.llm.secrets import screen_values

    for data in (OmegaConf.to_container(config, resolve=False), _resolved(config)):
        assert isinstance(data, dict)
        refusal = screen_values({str(k): v for k, v in data.items()})
        if refusal:
            raise ConfigSecretError(refusal)


def _resolved(node: Any) -> Any:
    """``node`` as plain data, resolved wherever it resolves (an interpolation only the job can
    resolve, such as ``${hydra:runtime.cwd}`` in a composed config, stays as written)."""
    try:
        return OmegaConf.to_container(node, resolve=True)
    except Exception:  # noqa: BLE001 - resolve what resolves, child by child
        pass
    keys: list[Any] = list(node.keys()) if isinstance(node, DictConfig) else [*range(len(node))]
    values = []
    for k in keys:
        try:
            value = node[k]
        except Exception:  # noqa: BLE001 - this leaf only the job can resolve
            value = node._get_node(k)._value()
        values.append(_resolved(value) if isinstance(value, (DictConfig, ListConfig)) else value)
    return (
        dict(zip(map(str, keys), values, strict=True)) if isinstance(node, DictConfig) else values
    )
