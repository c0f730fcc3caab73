"""Simulator backends (``sim=mesh|habitat``); see docs/simulators.md."""
