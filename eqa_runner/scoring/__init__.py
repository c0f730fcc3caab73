"""Judges and aggregate metrics."""
