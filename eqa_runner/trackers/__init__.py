"""Experiment trackers (the ``logger`` config group): CSV files, MLflow, Weights & Biases.

The run talks to one :class:`~eqa_runner.trackers.hub.TrackerHub`, which hands every event to
the configured trackers on a background thread through a bounded queue: a tracker that is down
or slow never fails, loses or slows the run (docs/trackers.md).
"""
