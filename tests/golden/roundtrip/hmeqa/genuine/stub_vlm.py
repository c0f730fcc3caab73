"""Stands in for explore-eqa's `src.vlm.VLM` (the prismatic model class) and nothing else:
`get_loss(image, prompt, tokens)` returns a softmax over `tokens` as the real one does, from
scripted logits instead of a 7B model's. Per question (the text before the first newline of
the answer prompt) and per call, so the same run gives the same file:

- answer prompt ("…option's letter…"): the letter scripted for the question, by step;
- relevancy ("…confident…"): Yes with the scripted probability, by step;
- exploration prompts (direction letters, "worth exploring"): uniform letters, Yes 0.6.
"""

import math
from collections import defaultdict

import numpy as np

# csv row -> (letter, its probability) per step, cycled; relevancy (p Yes) per step, cycled
ANSWERS = {
    "Is there a coffee table in the office?": [("D", 0.7)],  # truth D: right
    "Is the TV in the living room on or off?": [("A", 0.6), ("C", 0.3)],  # truth C: wrong
    "Where is the vase?": [("C", 0.9), ("B", 0.5), ("A", 0.4)],  # truth C: rules disagree
    "How many toilets are there in the bathroom?": [("A", 0.55)],  # truth A: right
}
RELEVANCY = {
    "Is there a coffee table in the office?": [0.2, 0.6],
    "Is the TV in the living room on or off?": [0.5, 0.3, 0.7],
    "Where is the vase?": [0.5, 0.6, 0.3],
    "How many toilets are there in the bathroom?": [0.4, 0.9],
}


def _softmax(logits):
    z = np.exp(np.array(logits) - max(logits))
    return z / z.sum()


class VLM:
    def __init__(self, cfg):
        self.calls = defaultdict(int)

    def get_loss(self, image, prompt, tokens, get_smx=True, T=1):
        """Softmax over ``tokens`` (as the real get_loss with get_smx=True)."""
        if "option's letter" in prompt:
            question = prompt.split("\n")[0]
            k = self.calls[("pred", question)]
            self.calls[("pred", question)] += 1
            letter, p = ANSWERS[question][k % len(ANSWERS[question])]
            rest = (1 - p) / (len(tokens) - 1)
            return _softmax([math.log(p if t == letter else rest) for t in tokens])
        if "confident" in prompt:
            question = prompt.split("'")[1]
            k = self.calls[("rel", question)]
            self.calls[("rel", question)] += 1
            p = RELEVANCY[question][k % len(RELEVANCY[question])]
            return _softmax([math.log(p), math.log(1 - p)])
        if tokens == ["Yes", "No"]:
            return _softmax([math.log(0.6), math.log(0.4)])
        return _softmax([0.0] * len(tokens))
