"""Importing litellm: lazily (it takes seconds), once, quietly, with its bundled cost map."""

from __future__ import annotations

import gc
import logging
import os
import threading
from typing import Any

_litellm_mod: Any = None
_litellm_lock = threading.Lock()


def load_litellm() -> Any:
    """Import litellm once, quietly, with the bundled cost map (no network at import)."""
    global _litellm_mod
    with _litellm_lock:
        if _litellm_mod is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_LOG", "ERROR")
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            litellm.turn_off_message_logging = True
            litellm.callbacks = []
            litellm.success_callback = []
            litellm.failure_callback = []
            litellm.disable_end_user_cost_tracking = True
            logging.getLogger("LiteLLM").setLevel(logging.ERROR)
            _litellm_mod = litellm
            # litellm's import graph (~400k objects) lives as long as the process: out of the
            # collector's sight, a full collection takes ms instead of ~0.4 s, a pause every
            # episode in flight waits through (bench/run_loop.py)
            gc.freeze()
    return _litellm_mod
