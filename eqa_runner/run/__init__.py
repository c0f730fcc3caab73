"""The run loop and what it writes (``run(cfg)`` in loop.py)."""
