"""The one normalisation every reply parser applies first, so each runs in linear time.

Parsers of model replies (LLM-Match marks, EAC "σ, δ", option letters, Yes/No, waypoints) use
regular expressions with optional parts between whitespace runs (``score\\s*(?:is)?\\s*:?\\s*``).
On a run of n spaces such a pattern backtracks over every way to split the run: polynomial in n
(400 spaces took 18 s in one parser). :func:`tidy_reply` makes every whitespace run a single
character (a newline where the run held one, else a space) and bounds the length, so no
pattern has more than one way to match a run, and the parser's time is linear in the reply.
``tests/reliability/test_parsers.py`` holds every parser to a time bound per input size.
"""

from __future__ import annotations

import re

MAX_REPLY_CHARS = 20_000  # longer replies are parsed from their head and their tail
_HEAD = MAX_REPLY_CHARS // 4
_SPACES = re.compile(r"[^\S\n]+")
_BREAKS = re.compile(r" ?\n[\n ]*")


def tidy_reply(text: str | None) -> str:
    """``text`` with every whitespace run one character and at most ``MAX_REPLY_CHARS`` long
    (the first quarter and the last three quarters of the budget kept, a newline between)."""
    if not text:
        return ""
    s = _BREAKS.sub("\n", _SPACES.sub(" ", text))
    if len(s) > MAX_REPLY_CHARS:
        s = s[:_HEAD] + "\n" + s[-(MAX_REPLY_CHARS - _HEAD - 1) :]
    return s
