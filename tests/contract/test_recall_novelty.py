"""A word of the question not yet covered (RecallPolicy.novelty_bonus; off as shipped,
bench/README.md, "A word of the question not yet covered"): among the fused ranking's first
items, one holding a query word no better item holds is raised by a share of the best score,
never above it, and ``recall --explain`` says so. Once per storage backend.
"""

from __future__ import annotations

import pytest

from memoryd.cli.recall import _echo_explain
from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService

from .recall_support import recall_under, remember

MEMORIES = (
    "The owner started a pottery course at the community studio in March",
    "The owner's pottery course meets on Tuesday evenings",
    "The owner made a blue pottery bowl at the course",
    "The owner's pottery course teacher is called Marta",
    "The owner's pottery course costs 80 euros a month",
    "The owner handed in the master's thesis on 2 May",
    "The owner's daughter Lucia was born on 3 June 2015",
    "The owner's partner Ines is vegetarian",
    "The owner works as a backend engineer at Nordlys, a logistics startup",
    "The owner's dog Pimenta is a greyhound",
)
MESSAGE = "When did I start my pottery course, and when did I hand in my thesis?"
THESIS = "The owner handed in the master's thesis on 2 May"


def test_the_second_part_of_a_question_is_lifted_and_explained(
    service: MemoryService, capsys: pytest.CaptureFixture[str]
) -> None:
    for content in MEMORIES:
        remember(service, content)

    shipped = recall_under(service, RecallPolicy(), MESSAGE)
    lifted = recall_under(service, RecallPolicy(novelty_bonus=0.2), MESSAGE)

    before = {i.memory.content: i for i in shipped.packed.items}
    after = {i.memory.content: i for i in lifted.packed.items}
    assert set(after) >= set(before)
    # The thesis holds words no pottery memory holds: raised by 0.2 × the best score.
    best = max(i.score for i in shipped.packed.items)
    assert "thesis" in after[THESIS].novel and not before[THESIS].novel
    assert after[THESIS].score == pytest.approx(before[THESIS].score + 0.2 * best)
    assert max(i.score for i in lifted.packed.items) == best
    # Off, no item says it was lifted; on, --explain shows why this one was.
    _echo_explain(shipped)
    assert "lifted" not in capsys.readouterr().out
    _echo_explain(lifted)
    explained = capsys.readouterr().out
    assert "lifted +" in explained and "thesis" in explained.split("lifted +", 1)[1]
