"""Test utilities (scriptable fake LLM server, ...)."""
