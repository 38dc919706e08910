"""Questions that ask what their writer told the assistant ("Did I mention …?", "What did I
tell you about …?", "Remind me what I said …"): how many each dev set holds, and what a lower
vector gate for them would change (stream ask16, 2026-12-04; bench/README.md, "'Did I
mention …?': a lower vector gate for questions about what the owner told").

The rule measured (not in memoryd: it did not hold, see the README): a message that
:func:`asks_what_was_told` is ranked again under ``told_vector_gate`` instead of the vector gate
when its ranking under the usual gates is silent (``told_when_silent`` 1), or under that gate
from the start (0). Still a gate, and the relevance must still reach ``open_score``. It runs
inside the usual benches, which see two more ``--policies`` fields (``told_vector_gate``,
``told_when_silent``; at or above ``vector_gate``: off, the start's figures exactly):

    .venv/bin/python bench/probe_told.py count [--show]
    .venv/bin/python bench/probe_told.py beam --sets beam,locomo --policies told_vector_gate=0.05
    .venv/bin/python bench/probe_told.py beam --never-told --policies told_vector_gate=0.05
    .venv/bin/python bench/probe_told.py paraphrase --set told --policies told_vector_gate=0.05
    .venv/bin/python bench/probe_told.py fusion --sets beam --policies told_vector_gate=0.05

``beam --never-told`` asks every BEAM and LoCoMo store ``owner_told.json``'s questions about
things never told in place of the general questions ("general, empty" is then their share).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import devsets
from report import print_table

import memoryd.recall.run
from memoryd.recall.evidence_policy import Candidate, QueryFacts
from memoryd.recall.legs import Evidence
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.read import Query
from memoryd.recall.score import rank
from memoryd.recall.score_policy import Ranking
from memoryd.storage.protocols import Store

DATA = Path(__file__).resolve().parent / "data"

# The verbs of telling, in the forms that follow "did I" (base) and "have I" / "as I" (past).
_BASE = (
    r"(?:mention|tell|say|share|bring\s+up|talk\s+about|speak\s+about|let\s+you\s+know"
    r"|write\s+down|note|explain|describe)"
)
_PAST = (
    r"(?:mentioned|told|said|shared|brought\s+up|talked\s+about|spoke\s+about|spoken\s+about"
    r"|let\s+you\s+know|wrote\s+down|written\s+down|noted|explained|described)"
)
_ADVERB = r"(?:\s+(?:ever|already|once|just|previously|earlier|before|actually))?"
_WH = r"(?:what|when|where|who|whom|which|why|how|whether|if|that)"
_PATTERNS = (
    # "Did I (ever) mention …", "Didn't I tell you …", "When did I say …"
    rf"\bdid(?:n't|\s+not)?\s+i{_ADVERB}\s+{_BASE}\b",
    # "Have I (ever) told you …", "Haven't I mentioned …"
    rf"\b(?:have|had)(?:n't|\s+not)?\s+i{_ADVERB}\s+{_PAST}\b",
    # "I told you …", "I've mentioned …", "I think I said it before"
    rf"\bi(?:'ve|\s+have|'d|\s+had)?{_ADVERB}\s+{_PAST}\s+(?:you|to\s+you|earlier|before|once"
    rf"|already|about|that|my|it|this|last|the|a|an|when|what|where|who|which|how|in|on|at)\b",
    # "as I said", "like I mentioned"
    rf"\b(?:as|like)\s+i(?:'ve|\s+have)?{_ADVERB}\s+{_PAST}\b",
    # "Remind me what …", "Can you remind me of my …"
    rf"\bremind\s+me\s+(?:again\s+)?(?:{_WH}|of|about|who's|what's|where's|when's)\b",
    # "Do you remember what I …", "You remember my …?", "Do you recall when …"
    r"\b(?:do|did|can|could|don't|didn't)?\s*you\s+(?:still\s+)?(?:remember|recall)\s+"
    r"(?:what|when|where|who|which|why|how|whether|if|that|my|me|i|i'm|i've|our|the\s+name)\b",
    # "What do you know about me / my …"
    r"\bwhat\s+do\s+you\s+(?:know|remember|recall)\s+about\s+(?:me|my|our)\b",
    # "What was it I said about …", "the number I gave you"
    rf"\bwhat\s+was\s+(?:it|that)\s+i{_ADVERB}\s+{_PAST}\b",
    r"\bi\s+gave\s+you\b",
)
_TOLD = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))


def asks_what_was_told(message: str) -> bool:
    """Whether ``message`` asks about something its writer told the assistant: the writer's
    own telling, not someone else's words ("Did Caroline mention …?"), a request ("Tell me
    about …") or a reminder to set ("Remind me to …")."""
    text = " ".join(message.lower().replace("\u2019", "'").split())
    return _TOLD.search(text) is not None


@dataclass(frozen=True)
class ToldFacts(QueryFacts):
    """QueryFacts with whether the message asks what its writer told."""

    told: bool = False


@dataclass(frozen=True)
class ToldPolicy(RecallPolicy):
    """RecallPolicy with the rule's two numbers (module doc); as shipped, off."""

    told_vector_gate: float = 0.15
    told_when_silent: bool = True


def _with_told(evidence: Evidence, message: str) -> Evidence:
    facts = {f.name: getattr(evidence.facts, f.name) for f in fields(QueryFacts)}
    return replace(evidence, facts=ToldFacts(**facts, told=asks_what_was_told(message)))


def _legs(run: Callable[..., Evidence]) -> Callable[..., Evidence]:
    def legs(store: Store, embedder: Any, query: Query) -> Evidence:
        return _with_told(run(store, embedder, query), query.message)

    return legs


def told_rank(
    store: Store,
    evidence: Evidence,
    now: datetime,
    policy: RecallPolicy,
    zone: tzinfo,
    keep: Callable[[Candidate], bool] | None = None,
) -> tuple[Ranking, Evidence]:
    """recall's rank, then for a told message under ``told_vector_gate`` (module doc)."""
    floor = getattr(policy, "told_vector_gate", policy.vector_gate)
    if floor >= policy.vector_gate or not getattr(evidence.facts, "told", False):
        return rank(store, evidence, now, policy, zone, keep)
    lowered = replace(policy, vector_gate=floor)
    if not getattr(policy, "told_when_silent", True):
        return rank(store, evidence, now, lowered, zone, keep)
    ranking, gathered = rank(store, evidence, now, policy, zone, keep)
    if ranking.silence is None:
        return ranking, gathered
    return rank(store, evidence, now, lowered, zone, keep)


def patch(module: Any) -> None:
    """Let ``module``'s bench (and devsets, and recall's own evidence) see the rule."""
    memoryd.recall.run.run_legs = _legs(memoryd.recall.run.run_legs)  # type: ignore[attr-defined]
    devsets.run_legs = _legs(devsets.run_legs)  # type: ignore[attr-defined]
    for target in (devsets, module):
        setattr(target, "RecallPolicy", ToldPolicy)  # noqa: B010 (a module, patched)
        if hasattr(target, "rank"):
            setattr(target, "rank", told_rank)  # noqa: B010


def count(show: bool) -> int:
    """How many questions of each dev set ask what their writer told."""
    owner = json.loads((DATA / "owner_paraphrase.json").read_text(encoding="utf-8"))
    heldout = json.loads((DATA / "owner_paraphrase_heldout.json").read_text(encoding="utf-8"))
    told = json.loads((DATA / "owner_told.json").read_text(encoding="utf-8"))
    sets = {
        "LoCoMo": [q.text for c in devsets.locomo() for q in c.questions],
        "BEAM": [q.text for c in devsets.beam() for q in c.questions],
        "owner paraphrase, answerable": [p["question"] for p in owner["pairs"]],
        "owner paraphrase, unrelated": owner["unrelated"],
        "held-out owner, answerable": [p["question"] for p in heldout["pairs"]],
        "held-out owner, general": heldout["general"],
        "held-out owner, personal no answer": heldout["personal_unanswered"],
        "off-topic (offtopic_questions.txt)": devsets.offtopic_questions(),
        "owner told, answerable": [p["question"] for p in told["pairs"]],
        "owner told, never told": told["never_told"],
        "owner told, general": told["general"],
    }
    rows = []
    for name, questions in sets.items():
        hits = [q for q in questions if asks_what_was_told(q)]
        rows.append([name, len(questions), len(hits), f"{len(hits) / len(questions):.1%}"])
        for question in hits if show else ():
            print(f"{name}: {question}")
    print_table(("set", "questions", "ask what was told", "share"), rows)
    return 0


def main() -> int:
    """``count``, or run ``beam`` / ``paraphrase`` / ``fusion`` with the rule patched in."""
    if len(sys.argv) < 2 or sys.argv[1] not in ("count", "beam", "paraphrase", "fusion"):
        raise SystemExit(__doc__)
    command, rest = sys.argv[1], sys.argv[2:]
    if command == "count":
        return count("--show" in rest)
    never = "--never-told" in rest
    rest = [a for a in rest if a != "--never-told"]
    names = {"beam": "bench_beam", "paraphrase": "bench_paraphrase", "fusion": "fusion_legs"}
    module: Any = importlib.import_module(names[command])
    patch(module)
    if never:
        told = json.loads((DATA / "owner_told.json").read_text(encoding="utf-8"))
        module.offtopic_questions = lambda: list(told["never_told"])
    sys.argv = [f"{command}.py", *rest]
    result: int = module.main()
    return result


if __name__ == "__main__":
    sys.exit(main())
