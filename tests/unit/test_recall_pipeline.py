"""Recall flows one way: each stage's modules import only the stages before it (and their own
stage), so a reader follows a message from the front door to the block without climbing back.
The stages are drawn in docs/architecture.md ("The recall pipeline")."""

from __future__ import annotations

import memoryd.recall.run

from .import_graph_support import import_graph

# In pipeline order; a module may import its own stage and the ones above it.
STAGES: tuple[tuple[str, ...], ...] = (
    ("policy",),  # the settings every stage reads
    # read the message (sides_policy: whether it asks yes or no, and the rule its ranking reads)
    (
        "bounds_policy",
        "dates_policy",
        "day_words_policy",
        "time_window_policy",
        "address_policy",
        "sides_policy",
        "sentences_policy",
        "answer_form_policy",
        "history_policy",
        "stand_in_policy",
        "kin_policy",
        "names_policy",
        "read",
    ),
    ("evidence_policy", "time_legs", "vector_legs", "text_legs", "legs"),  # run the legs
    ("gate_policy", "relevance_policy", "score_policy", "proximity_policy", "score"),  # score, gate
    ("excerpt_policy", "pack_policy"),  # pack
    ("context_policy", "context_pack_policy"),  # the context pack's score and packing
    ("run", "context", "service"),  # the drivers and the front door
)
# The package, named through a module in it (scripts/relayout.py reads the bare dotted name as
# the old flat recall module, now recall/policy.py).
RECALL = memoryd.recall.run.__package__ or ""


def _stage_of() -> dict[str, int]:
    return {f"{RECALL}.{name}": index for index, stage in enumerate(STAGES) for name in stage}


def test_every_recall_module_has_a_stage() -> None:
    modules = {m for m in import_graph() if m.startswith(RECALL + ".")}

    assert sorted(modules - set(_stage_of())) == [], "place the new module in STAGES"
    assert sorted(set(_stage_of()) - modules) == [], "gone: drop it from STAGES"


def test_no_stage_reaches_back_to_a_later_one() -> None:
    graph = import_graph()
    stage = _stage_of()
    backwards = sorted(
        (module, target)
        for module, targets in graph.items()
        if module in stage
        for target in targets
        if target in stage and stage[target] > stage[module]
    )

    assert backwards == []


def test_the_legs_take_their_plan_from_the_read_message_not_the_policy() -> None:
    graph = import_graph()

    assert f"{RECALL}.policy" not in graph[f"{RECALL}.legs"]
    assert f"{RECALL}.read" in graph[f"{RECALL}.legs"]
    # The test sees what it judges: a stage importing a later one would be caught.
    assert f"{RECALL}.legs" in graph[f"{RECALL}.score"]
