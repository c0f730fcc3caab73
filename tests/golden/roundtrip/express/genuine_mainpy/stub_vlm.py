"""Stands in for EXPRESS-Bench's `src.vlm.VLM` (the prismatic 7B model class) and nothing
else: `get_loss(image, prompt, tokens)` returns a softmax over `tokens`, as the real one does
with get_smx=True, from scripted logits: uniform direction letters, "Yes" 0.6 for "worth
exploring", and for the region prompt (the 20 region keys) E (kitchen) then G (living room)
then B (bedroom), by call.
"""

import math

import numpy as np

REGION_CYCLE = ["E", "G", "B"]


def _softmax(logits):
    z = np.exp(np.array(logits, dtype=float) - max(logits))
    return z / z.sum()


class VLM:
    def __init__(self, cfg):
        self.region_calls = 0

    def get_loss(self, image, prompt, tokens, get_smx=True, T=1):
        """Softmax over ``tokens`` (as the real get_loss with get_smx=True)."""
        if tokens == ["Yes", "No"]:
            return _softmax([math.log(0.6), math.log(0.4)])
        if len(tokens) == 20:  # regions_dict's keys
            pick = REGION_CYCLE[self.region_calls % len(REGION_CYCLE)]
            self.region_calls += 1
            return _softmax([math.log(0.7 if t == pick else 0.3 / 19) for t in tokens])
        return _softmax([0.0] * len(tokens))
