"""Stands in for EXPRESS-Bench's `gpt.gpt_4o_mini` (the OpenAI chat call) and nothing else:
the same signature, the same reading of the image file it would send, and a scripted reply
chosen by the prompt file main.py passes and the question in the prompt:

- region.txt: the task-related regions (main.py splits the reply on ",");
- explore.txt: "No" until the question's scripted stop step, then "Yes" (never for row 1,
  which runs out of steps and is answered through random_answer.txt);
- answer.txt / random_answer.txt: the scripted answer (main.py strips "A:");
- evaluation.txt: the scripted judge mark "σ, δ" (with and without "Your mark:").
"""

import os
from collections import defaultdict

# question -> (regions reply, step at which exploration stops or None, answer, judge reply)
SCRIPT = {
    "Where can I keep my drinks cold?": ("kitchen", 2, "A: In the fridge.", "Your mark: 1, 5"),
    "Is the lamp in the bedroom on or off?": ("bedroom", None, "A: off", "0, 1"),
    "What color is the door in the bedroom?": ("unknown", 1, "White.", "Your mark: 0.5, 4"),
    "What is on the tv stand in the living room?": (
        "living room,dining room", 3, "A: A TV.", "Your mark: 1, 5"),
}  # fmt: skip
CALLS = defaultdict(int)


def _question(ex_prompt):
    for q in SCRIPT:
        if q in ex_prompt:
            return q
    raise KeyError(f"no scripted question in {ex_prompt!r}")


def gpt_4o_mini(prompt_path, ex_prompt, img_path=None):
    if img_path:  # the real one base64-encodes the saved frame: it must exist
        with open(img_path, "rb") as f:
            f.read()
    name = os.path.basename(prompt_path)
    regions, stop, answer, mark = SCRIPT[_question(ex_prompt)]
    if name == "region.txt":
        return regions
    if name == "explore.txt":
        q = _question(ex_prompt)
        k = CALLS[q]
        CALLS[q] += 1
        return "Yes" if stop is not None and k >= stop else "No"
    if name in ("answer.txt", "random_answer.txt"):
        return answer
    if name == "evaluation.txt":
        return mark
    raise KeyError(f"unscripted prompt file {prompt_path}")
