"""plan_merge: the one merge decision the dry run and the real run share."""

from __future__ import annotations

from datetime import UTC, datetime

from memoryd.consolidation.policy import Action, ConsolidationPolicy, MergeReply, Stage, plan_merge
from memoryd.memory.model import Kind, Memory, Source, Status

AT = datetime(2026, 11, 29, tzinfo=UTC)
RULES = ConsolidationPolicy()


def fact(n: int, content: str) -> Memory:
    """An active fact with a readable id."""
    return Memory(
        id=f"m{n}", kind=Kind.FACT, status=Status.ACTIVE, content=content, source=Source.OWNER,
        created_at=AT, last_confirmed_at=AT,
    )  # fmt: skip


GROUP = [fact(1, "Owner moved to Lisbon on 2026-08-27"), fact(2, "On 2026-08-27 moved to Lisbon")]


def test_without_a_reply_the_group_would_be_merged() -> None:
    step = plan_merge(GROUP, None, RULES)
    assert (step.stage, step.memory_id, step.action) == (Stage.MERGE, "m1", Action.MERGE)
    assert step.reason == "would ask the LLM to merge 2: m1, m2"


def test_a_faithful_reply_merges() -> None:
    step = plan_merge(GROUP, MergeReply(text="The owner moved to Lisbon on 2026-08-27"), RULES)
    assert (step.action, step.reason) == (Action.MERGE, "merged m1, m2")


def test_an_unreadable_reply_keeps_the_group_and_says_why() -> None:
    step = plan_merge(GROUP, MergeReply(error="no JSON object"), RULES)
    assert (step.action, step.reason) == (Action.KEEP, "kept m1, m2: no JSON object")


def test_a_reply_that_drops_a_date_is_kept() -> None:
    step = plan_merge(GROUP, MergeReply(text="The owner moved to Lisbon"), RULES)
    assert step.action is Action.KEEP and "2026-08-27" in step.reason


def test_a_reply_holding_a_credential_is_kept() -> None:
    text = "The owner moved to Lisbon on 2026-08-27 ghp_Zx81kQm2Lr7Vt4Nc9Wp3Hs6Jd0Ya5Fb1Ge8K"
    step = plan_merge(GROUP, MergeReply(text=text), ConsolidationPolicy(merge_max_length_change=9))
    assert step.action is Action.KEEP and "credential" in step.reason


def test_the_plan_is_a_pure_function_of_its_inputs() -> None:
    reply = MergeReply(text="The owner moved to Lisbon on 2026-08-27")
    assert plan_merge(GROUP, reply, RULES) == plan_merge(list(GROUP), reply, RULES)
