"""A yes/no question wants both sides (SPEC §4; recall/sides_policy.py; bench/README.md, "Both
sides of a yes/no question"): asked "Have I ever completed a first draft of my screenplay?", a
ranking whose first ten hold "I've never completed a first draft" also holds there the long
message that says, in passing, that a first draft was completed, though it shares few of the
question's words and little of its meaning and ranks behind short memories on the same subject
(12th or 13th without the rule). Once per storage backend.
"""

from __future__ import annotations

from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService, RecallResult

from .recall_support import item_ids, recall_under, remember


def _place(result: RecallResult, memory_id: str) -> int:
    """Where ``memory_id`` ranks in the block by score (1: the best; items of equal score share
    a place: the one that joins the ten takes the tenth's score), 0 when left out."""
    scores = {s.memory.id: s.score for s in result.packed.items}
    if memory_id not in scores:
        return 0
    return 1 + sum(score > scores[memory_id] for score in scores.values())


QUESTION = "Have I ever completed a first draft of my screenplay?"
DENIAL = "I've never completed a first draft of my screenplay, and it keeps me up at night"
# The other side, said in passing in a message about something else.
SAID_OTHERWISE = (
    "Can you help me plan my mornings? I wake up at 6:30, walk the dog for half an hour, then "
    "make coffee and read the news until eight. Since I completed my first draft on April 1 I "
    "have had more energy, but I still lose the first hour of work to email and Slack, and my "
    "afternoons drag after lunch. What routine would you suggest for someone who works from home?"
)
# Short memories on the screenplay, none stating or denying that a first draft was completed.
SAME_SUBJECT = (
    "My screenplay is a thriller set in a lighthouse on the Azores",
    "The screenplay's heroine is a marine biologist called Inês",
    "I want my screenplay to run about 110 pages",
    "I outline each screenplay scene on index cards",
    "My screenplay's second act needs a stronger midpoint twist",
    "I read my screenplay dialogue aloud to check the rhythm",
    "I use Fade In to format the screenplay",
    "My writing group meets on Thursdays to give screenplay notes",
    "The screenplay's villain is the heroine's estranged brother",
    "I rewrote the screenplay's opening scene three times last month",
    "My screenplay draft has a storm sequence in the final act",
    "I'm entering my screenplay in the Austin Film Festival competition",
    "I watch one thriller a week to study screenplay structure",
    "My screenplay's title is still undecided between Beacon and Low Tide",
)


def _store(service: MemoryService) -> dict[str, str]:
    ids = {content: remember(service, content).id for content in (DENIAL, *SAME_SUBJECT)}
    ids[SAID_OTHERWISE] = remember(service, SAID_OTHERWISE).id
    return ids


def test_the_other_side_of_a_yes_or_no_question_joins_the_first_ten(
    service: MemoryService,
) -> None:
    ids = _store(service)

    shipped = recall_under(service, RecallPolicy(), QUESTION)
    one_sided = recall_under(service, RecallPolicy(other_side_depth=0), QUESTION)

    assert _place(shipped, ids[DENIAL]) == 1
    assert 1 < _place(shipped, ids[SAID_OTHERWISE]) <= 10
    # Without the rule the same store ranks it behind the short memories on the subject.
    assert (
        _place(one_sided, ids[SAID_OTHERWISE]) == 0 or _place(one_sided, ids[SAID_OTHERWISE]) > 10
    )


def test_a_question_that_is_not_yes_or_no_is_left_as_it_is(service: MemoryService) -> None:
    _store(service)
    message = "Tell me about my screenplay's first draft"

    shipped = item_ids(recall_under(service, RecallPolicy(), message))
    without = item_ids(recall_under(service, RecallPolicy(other_side_depth=0), message))

    assert shipped == without
