"""Agents: each turns an episode into a :class:`eqa_runner.types.Prediction`."""
