"""eqa_runner: a Hydra-configured experiment runner for Embodied Question Answering."""

__version__ = "0.1.0"
