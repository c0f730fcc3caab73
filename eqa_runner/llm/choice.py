"""Multiple-choice answers from a model: the letter distribution from token log-probabilities
where the endpoint returns them, else the letter parsed from the reply text.

Log-probabilities: the answer position is where the reply actually says its letter: the first
generated position whose sampled token is the letter the reply names (or, when the text names
none, the first position whose sampled token is an option letter) — not merely the first
position whose alternatives offer some letter (an article "A" among the alternatives of "The").
A sampled "A"/"a" followed by a lower-case word that is not a verb is the article ("A sofa
is ...", "It is a sofa"), never an answer position; a reply whose text names several letters
("B or C") has none. The distribution over the options is the softmax of the letters'
log-probabilities there (letters outside the returned top-k get probability 0 and are listed in
``missing``). This mirrors scoring the option letters by their token likelihood.

Parsing: a reply names a letter when it starts with one standing alone ("B", "(B)", "B.", "B)
sofa", "**B**"), says so ("Answer: B", "the answer is (C)", "I choose D", "Option A"), or quotes
exactly one option's text. A leading "A" is the option when a verb or punctuation follows ("A is
correct", "A because ...", "A, the bed"), the article when a noun or an adjective does. A reply
naming two different letters ("A or B"), none, or a letter outside the options is unparsable
(None): counted, never scored as a choice.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from eqa_runner.llm.replies import tidy_reply

# option letters: up to 20 (Fine-EQA's region question, A..T); the reply parser below reads
# A..H only (a lone "I" is a pronoun), so a longer list is scored by log-probabilities or by
# :func:`leading_letter`
LETTERS = "ABCDEFGHIJKLMNOPQRST"


@dataclass(frozen=True)
class Choice:
    """The model's pick among ``n`` options: a letter (or None), its source and distribution."""

    letter: str | None
    source: str  # "logprobs" | "parsed" | "unparsable"
    probs: dict[str, float] = field(default_factory=dict)  # letter -> probability (logprobs)
    missing: tuple[str, ...] = ()  # option letters absent from the returned top-k

    @property
    def confidence(self) -> float | None:
        return self.probs.get(self.letter) if self.letter and self.probs else None


def option_letters(n: int) -> str:
    if not 1 <= n <= len(LETTERS):
        raise ValueError(f"{n} options: expected 1..{len(LETTERS)}")
    return LETTERS[:n]


_LEAD = re.compile(r"^[\s*_`'\"(\[]*([A-Z])(?:[.:,)\]*]|\s*$|\s+(?![a-z]))")


def leading_letter(reply: str, letters: str) -> str | None:
    """The option letter a reply starts with ("K", "K.", "(K) kitchen"), else None (a letter
    followed by a lower-case word is a word: "I think", "A sofa")."""
    m = _LEAD.match(tidy_reply(reply))
    return m.group(1) if m and m.group(1) in letters else None


def softmax_letters(logprobs: Mapping[str, float], letters: str) -> dict[str, float]:
    """Softmax over the given letters' log-probabilities (absent letters get 0)."""
    have = {k: v for k, v in logprobs.items() if k in letters and math.isfinite(v)}
    if not have:
        return {}
    top = max(have.values())
    exp = {k: math.exp(v - top) for k, v in have.items()}
    total = sum(exp.values())
    return {k: exp.get(k, 0.0) / total for k in letters}


def _token_letter(token: str, letters: str) -> str | None:
    t = token.strip().strip("()[]*.:").upper()
    return t if len(t) == 1 and t in letters else None


# after an article "A"/"a" comes a noun or an adjective; after the option letter A, a verb
# fmt: off
_AFTER_OPTION = frozenset([
    "is", "was", "would", "will", "should", "could", "must", "might", "may", "seems", "seem",
    "appears", "looks", "sounds", "fits", "matches", "describes", "corresponds", "answers",
    "because", "since", "as", "best",
])
# fmt: on
_NEXT_WORD = re.compile(r"\s+([a-z][\w'-]*)")


def is_article(letter: str, rest: str) -> bool:
    """True when ``letter`` ("A" or "a") followed by ``rest`` is the article: a lower-case word
    follows that is not a verb ("A sofa is ...", "a red one"); "A is correct", "A because ...",
    "A." and "A, the bed" name the option."""
    if letter not in "aA":
        return False
    m = _NEXT_WORD.match(rest[:40])
    return m is not None and m.group(1) not in _AFTER_OPTION


def _sampled_letter(
    positions: Sequence[Sequence[tuple[str, float]]], i: int, letters: str
) -> str | None:
    """The option letter position ``i`` samples, None for no letter or the article "A"/"a"
    (judged by the next sampled tokens)."""
    alts = positions[i]
    if not alts:
        return None
    sampled = _token_letter(alts[0][0], letters)
    if sampled == "A":
        rest = "".join(p[0][0] for p in positions[i + 1 : i + 4] if p)
        if is_article(alts[0][0].strip().strip("()[]*.:"), rest):
            return None
    return sampled


def choice_from_logprobs(
    positions: Sequence[Sequence[tuple[str, float]]], n_options: int, reply: str | None = None
) -> Choice | None:
    """The choice at the answer position (module docstring), or None when no sampled token is
    an option letter, or the reply's text names several (fall back to parsing).

    ``positions``: per generated token, its (token, logprob) alternatives, the sampled token
    first (:func:`eqa_runner.llm.logprobs.validated_logprobs`). ``reply``: the reply's text.
    """
    letters = option_letters(n_options)
    named = named_letters(reply, letters) if reply else set()
    if len(named) > 1:
        return None  # "B or C", "B, no wait, D": hedged, no position answers
    said = next(iter(named), None)
    for i, alts in enumerate(positions):
        sampled = _sampled_letter(positions, i, letters)
        if sampled is None or (said is not None and sampled != said):
            continue
        best: dict[str, float] = {}
        for tok, lp in alts:
            letter = _token_letter(tok, letters)
            if letter is not None and math.isfinite(lp) and lp > best.get(letter, -math.inf):
                best[letter] = float(lp)
        probs = softmax_letters(best, letters)
        if not probs:
            return None
        pick = max(probs, key=lambda k: (probs[k], -letters.index(k)))
        missing = tuple(k for k in letters if k not in best)
        return Choice(pick, "logprobs", probs, missing)
    return None


_ALTERNATIVES = re.compile(r"(?<![\w'])\(?([A-H])\)?\s*(?:or|and|/|,)\s*\(?([A-H])\)?(?![\w'])")
_LEADING = re.compile(r"^\(?([A-Ha-h])(?:\)|[.:,\]]|$|\s)")
_STATED = re.compile(
    r"(?i:\b(?:answer|option|choice|choose|chose|pick|picked|select|go with)\b"
    r"(?:\s+(?:is|would be|will be|should be))?)\s*[:\-]?\s*[\"'(\[]?"
    r"(?:([A-H])(?=[)\]\"'.,:;!]|\s|$)|([a-h])(?=[)\]\"'.,:;!]|$))"  # "a red one" is prose
)
_BRACKETED = re.compile(r"[(\[]([A-H])[)\]]")
_STANDALONE = re.compile(r"(?<![\w'])([B-H])(?![\w'])|(?<![\w'])(A)(?=[.)]|$)")


def _normalise(text: str) -> str:
    return re.sub(r"[*_`#>]+", "", tidy_reply(text)).strip()


def named_letters(reply: str, letters: str) -> set[str]:
    """Every option letter a reply names (both of "B or C"), the article "A" left out."""
    text = _normalise(reply)
    found: set[str] = set()
    for a, b in _ALTERNATIVES.findall(text):
        found |= {a, b}
    lead = _LEADING.match(text)
    if lead and not is_article(lead.group(1), text[lead.end(1) :]):
        found.add(lead.group(1).upper())
    found |= {(up or low).upper() for up, low in _STATED.findall(text)}
    found |= set(_BRACKETED.findall(text))
    found |= {a or b for a, b in _STANDALONE.findall(text)}  # "B, no wait, D" names two
    return found & set(letters)


def parse_choice(
    reply: str, options: Sequence[str] | None = None, n_options: int = 4
) -> str | None:
    """The option letter a reply names, or None when it names none, several, or alternatives."""
    letters = option_letters(len(options) if options else n_options)
    text = _normalise(reply)
    if not text:
        return None
    if any(a != b for a, b in _ALTERNATIVES.findall(text)):
        return None  # "B or C", "A/B": hedged between options
    found = named_letters(text, letters)
    if not found and options:
        flat = re.sub(r"[^a-z0-9 ]+", " ", text.lower())
        found = {
            letters[i]
            for i, o in enumerate(options)
            if (opt := " ".join(re.sub(r"[^a-z0-9 ]+", " ", o.lower()).split()))
            and re.search(rf"\b{re.escape(opt)}\b", " ".join(flat.split()))
        }
    return found.pop() if len(found) == 1 else None


def pick(
    reply: str,
    positions: Sequence[Sequence[tuple[str, float]]] | None,
    options: Sequence[str],
) -> Choice:
    """The choice of one reply: log-probabilities when returned, else the parsed letter."""
    if positions:
        c = choice_from_logprobs(positions, len(options), reply)
        if c is not None:
            return c
    letter = parse_choice(reply, options)
    return Choice(letter, "parsed" if letter else "unparsable")
