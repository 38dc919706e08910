"""``memoryd recall``, ``search`` and ``alias``, run as the real executable (SPEC §4, §7)."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memoryd.memory.model import Importance, Kind, Memory
from memoryd.providers.tokenizer import O200kTokenizer
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.relevance_policy import FEATURES

from .conftest import Cli
from .server import serving, wait_until

NOW = "2026-11-29T12:00:00+00:00"
ITEM_KEYS = {"id", "kind", "content", "score", "legs"}


def at(day: int, hour: int = 12) -> datetime:
    return datetime(2026, 11, day, hour, 0, tzinfo=UTC)


def lived(service: Any, text: str, day: int) -> Memory:
    """An event remembered as it happened, at noon on ``day`` of November 2026."""
    memory: Memory = service.remember(
        text, kind=Kind.EVENT, occurred_at=at(day), now=at(day)
    ).memory
    return memory


def test_recall_builds_the_int8_query_model_once(cli: Cli, seeded: Callable[[], Any]) -> None:
    with seeded() as service:
        service.remember("Ana cooks mushroom risotto on Sundays", entities=["Ana"], now=at(20))
        service.remember("The owner repaired the bicycle's brakes", now=at(21))
    on = {"MEMORYD_EMBED_INT8_QUERIES": "on"}
    models = Path(cli.env["MEMORYD_HOME"]) / "models"
    assert not models.exists()

    first = cli.json("recall", "What does Ana cook?", "--now", NOW, env=on)
    (model,) = models.glob("*.onnx")
    built = model.stat().st_mtime_ns
    second = cli.json("recall", "What does Ana cook?", "--now", NOW, env=on)
    shipped = cli.json("recall", "What does Ana cook?", "--now", NOW)

    assert model.stat().st_mtime_ns == built  # kept, not built again
    assert "mushroom risotto" in first["text"]
    assert second["text"] == first["text"]
    assert [i["content"] for i in first["items"]] == [i["content"] for i in shipped["items"]]


def test_serve_builds_the_query_model_at_start_even_on_an_empty_store(cli: Cli) -> None:
    """A new home's first chat through the proxy would wait seconds for the build, past its
    recall deadline, and go without context: serve's warm-up loads (builds) it at start."""
    cli.ok("init")
    models = Path(cli.env["MEMORYD_HOME"]) / "models"
    env = {**cli.env, "MEMORYD_EMBED_INT8_QUERIES": "on"}
    with serving(env, cli.cwd) as server:
        wait_until(
            lambda: any(models.glob("*.onnx.sha256")),
            gone=lambda: server.process.poll() is not None,
            describe=server.output,
            timeout=60,
        )
    assert len(list(models.glob("*.onnx"))) == 1


def test_recall_json_budget_and_explain(cli: Cli, seeded: Callable[[], Any]) -> None:
    with seeded() as service:
        risotto = service.remember(
            "Ana cooks mushroom risotto on Sundays", entities=["Ana"], now=at(20)
        ).memory
        for day, dish in enumerate(("paella", "ramen", "lasagna", "moussaka", "pho"), 21):
            service.remember(
                f"Owner cooked {dish} for a dinner party of eight friends at the flat",
                now=at(day),
            )
        lesson = service.remember(
            "Always answer in French", kind=Kind.LESSON, importance=Importance.HIGH, now=at(1)
        ).memory
    message = "What does Ana cook?"

    full = cli.json("recall", message, "--now", NOW)
    small = cli.json("recall", message, "--now", NOW, "--budget", "90")
    explained = cli.ok("recall", message, "--now", NOW, "--explain", "--budget", "90")
    plain = cli.ok("recall", message, "--now", NOW)

    assert {"text", "tokens", "items", "dropped", "legs", "query", "silence"} <= set(full)
    assert full["tokens"] == O200kTokenizer().count(full["text"]) <= 1500
    assert full["silence"] is None
    for item in full["items"]:
        assert set(item) >= ITEM_KEYS
        assert item["content"] in full["text"]
    assert full["items"][0]["id"] == lesson.id and full["items"][0]["kind"] == "lesson"
    [ana] = [i for i in full["items"] if i["id"] == risotto.id]
    assert ana["legs"] == {"vector": 1, "text": 1, "entity": 1}
    assert ana["gates"] == ["vector", "text", "entity"]
    assert 0.9 <= ana["recency"] <= 1.0 and ana["cosine"] > 0.35
    assert ana["score"] == max(i["score"] or 0 for i in full["items"])
    assert {"vector", "text", "entity"} <= set(full["legs"])
    assert all(state == "ok" for state in full["legs"].values())
    # Every dinner party is about cooking, none about Ana: each is in the block or dropped
    # with a reason, and the block is shorter than the budget allows.
    shown = {i["id"] for i in full["items"]}
    reasons = {d["id"]: d["reason"] for d in full["dropped"]}
    assert len(shown) + len(reasons) == 7 and not shown & set(reasons)
    assert lesson.id not in reasons, "a standing lesson is in the block, not dropped"

    assert small["tokens"] == O200kTokenizer().count(small["text"]) <= 90
    assert 0 < len(small["items"]) < len(full["items"])
    assert {d["id"] for d in small["dropped"]} >= (
        {i["id"] for i in full["items"]} - {i["id"] for i in small["items"]}
    )
    assert all(set(d) >= {"id", "reason"} and d["reason"] for d in small["dropped"])

    lines = explained.splitlines()
    assert lines[0].startswith("legs: vector ok, text ok, entity ok")
    assert any(line.startswith("query words (memories holding each): ") for line in lines)
    table = next(i for i, line in enumerate(lines) if line.startswith("id "))
    header, rows = lines[table], lines[table + 1 :]
    assert header.split()[:11] == [
        "id", "kind", "score", "cosine", "vector", "text", "entity", "time", "episode",
        "recency", "weight",
    ]  # fmt: skip
    ana_row = next(r for r in rows if r.startswith(risotto.id))
    assert ana_row.split()[4:9] == ["1", "1", "1", "-", "-"]
    assert "vector+text+entity · Ana cooks mushroom risotto" in ana_row
    assert any(r.startswith(lesson.id) and "always" in r for r in rows)
    assert "dropped:" in lines and any("over the token budget" in line for line in lines)
    # Each kept and dropped item shows its relevance and what moved it.
    relevance = [line.strip() for line in lines if line.strip().startswith("relevance ")]
    assert len(relevance) == len(small["items"]) - 1  # the lesson has none
    assert all(" from cosine " in line for line in relevance)
    # … and those shares are the model's: the bias plus the shares printed give the relevance
    # printed (each share rounded to 0.01), every one a named feature, and the JSON holds each
    # feature's share of every kept and scored dropped item.
    bias = RecallPolicy().score_bias
    for line in relevance:
        printed, shares = line.removeprefix("relevance ").split(" from ")
        moved = dict(part.rsplit(" ", 1) for part in shares.split(", "))
        assert set(moved) <= set(FEATURES)
        logit = bias + sum(float(value) for value in moved.values())
        assert 1 / (1 + math.exp(-logit)) == pytest.approx(float(printed), abs=0.02)
    scored = [i for i in small["items"] if i["kind"] != "lesson"]
    assert scored and all("contributions" in i for i in scored)
    for shaped in scored + [d for d in small["dropped"] if "relevance" in d]:
        assert set(shaped["contributions"]) == set(FEATURES)
        logit = bias + sum(shaped["contributions"].values())
        assert 1 / (1 + math.exp(-logit)) == pytest.approx(shaped["relevance"], abs=1e-3)

    assert plain.startswith('<memory trust="data">\n')
    assert plain.rstrip("\n").endswith("</memory>")
    assert "Ana cooks mushroom risotto on Sundays" in plain


def test_now_moves_the_time_window(cli: Cli, seeded: Callable[[], Any]) -> None:
    with seeded() as service:
        museum = lived(service, "Visited the tile museum with Bruno", 20)
        market = lived(service, "Visited the flea market with Bruno", 28)
    message = "What did I visit yesterday?"

    on_29th = cli.json("recall", message, "--now", NOW)
    on_21st = cli.json("recall", message, "--now", "2026-11-21T09:00:00Z")

    def time_ranked(result: dict[str, Any]) -> set[str]:
        return {i["id"] for i in result["items"] if "time" in i["legs"]}

    assert on_29th["time_window"]["start"].startswith("2026-11-28")
    assert on_21st["time_window"]["start"].startswith("2026-11-20")
    assert on_29th["legs"]["time"] == on_21st["legs"]["time"] == "ok"
    assert time_ranked(on_29th) == {market.id}
    assert time_ranked(on_21st) == {museum.id}


def test_search_lists_scored_memories_and_filters(cli: Cli, seeded: Callable[[], Any]) -> None:
    with seeded() as service:
        fact = service.remember("Owner drinks coffee black", now=at(2)).memory
        grinder = lived(service, "Bought a new coffee grinder", 10)
        tasting = lived(service, "Went to a coffee tasting", 20)

    everything = cli.json("search", "coffee", "--now", NOW)
    events = cli.json("search", "coffee", "--kind", "episodic", "--now", NOW)
    window = cli.json(
        "search", "coffee", "--since", "2026-11-05", "--until", "2026-11-15", "--now", NOW
    )
    empty = cli.fails("search", "   ")

    assert isinstance(everything, list)
    assert {m["id"] for m in everything} == {fact.id, grinder.id, tasting.id}
    for memory in everything:
        assert {"id", "kind", "status", "content", "score"} <= set(memory)
        assert memory["status"] == "active" and memory["score"] > 0
    scores = [m["score"] for m in everything]
    assert scores == sorted(scores, reverse=True)
    assert {m["id"] for m in events} == {grinder.id, tasting.id}
    assert [m["id"] for m in window] == [grinder.id]
    assert "query" in empty


def test_an_alias_lets_the_entity_leg_find_the_name(cli: Cli, seeded: Callable[[], Any]) -> None:
    with seeded() as service:
        tagged = service.remember(
            "Her favourite flowers are peonies", entities=["Ana Lima"], now=at(25)
        ).memory
        service.remember("Owner repaired the kitchen tap", now=at(26))
    message = "What flowers does Nana love?"

    before = cli.json("recall", message, "--now", NOW)
    said = cli.ok("alias", "Ana Lima", "Nana")
    after = cli.json("recall", message, "--now", NOW)

    assert before["legs"]["entity"] == "empty"
    assert all("entity" not in i["legs"] for i in before["items"])
    assert "Nana" in said and "Ana Lima" in said
    assert after["legs"]["entity"] == "ok"
    [found] = [i for i in after["items"] if "entity" in i["legs"]]
    assert found["id"] == tagged.id and found["legs"]["entity"] == 1
    assert after["items"][0]["id"] == tagged.id


def test_days_are_read_in_the_owners_time_zone(cli: Cli, seeded: Callable[[], Any]) -> None:
    """At 01:30 UTC on 30 November it is still the 29th in New York: "yesterday" is the 28th
    there, the 29th in UTC."""
    with seeded() as service:
        new_york_evening = service.remember(
            "Had a late dinner at the oyster bar",
            kind=Kind.EVENT,
            occurred_at=datetime(2026, 11, 28, 23, 0, tzinfo=UTC),  # the 28th, 18:00 there
            now=at(29, 4),
        ).memory
        utc_noon = service.remember(
            "Had lunch at the noodle bar",
            kind=Kind.EVENT,
            occurred_at=datetime(2026, 11, 29, 12, 0, tzinfo=UTC),  # the 29th, 07:00 there
            now=at(29, 13),
        ).memory
    message = "What did I eat yesterday?"
    late = "2026-11-30T01:30:00Z"

    in_utc = cli.json("recall", message, "--now", late)
    in_new_york = cli.json("recall", message, "--now", late, env={"MEMORYD_TZ": "America/New_York"})
    wrong = cli.fails("recall", message, env={"MEMORYD_TZ": "Mars/Olympus_Mons"})

    assert in_utc["time_window"]["start"] == "2026-11-29T00:00:00+00:00"
    assert in_new_york["time_window"]["start"] == "2026-11-28T00:00:00-05:00"
    assert [i["id"] for i in in_utc["items"]] == [utc_noon.id]
    assert [i["id"] for i in in_new_york["items"]] == [new_york_evening.id]
    assert "MEMORYD_TZ" in wrong and "Europe/Lisbon" in wrong


def test_the_readmes_first_example_recalls_as_printed(cli: Cli) -> None:
    """The quick start's ``remember`` and ``recall`` lines, run as written on a fresh store,
    print the memory lines the README shows (the question shares no word with the memory)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    commands = [
        shlex.split(line)[1:]
        for line in readme.splitlines()
        if line.startswith(("memoryd remember ", "memoryd recall "))
    ]
    recalls = [c for c in commands if c[0] == "recall"]
    assert commands[0][0] == "remember" and recalls, "the quick start remembers, then recalls"
    cli.ok("init")  # run.sh creates the store the quick start uses
    for command in commands[: commands.index(recalls[0])]:
        cli.ok(*command)
    shown = readme.split('<memory trust="data">', 1)[1].split("</memory>", 1)[0]
    expected = [line for line in shown.splitlines() if line.startswith("- [")]

    printed = cli.ok(*recalls[0])

    assert expected == ["- [fact] The owner is allergic to penicillin"]
    assert [line for line in printed.splitlines() if line.startswith("- [")] == expected


def test_a_day_to_come_does_not_bound_the_plans_made_for_it(
    cli: Cli, seeded: Callable[[], Any]
) -> None:
    """ "Next Saturday" is the Saturday to come (5 December; now is Sunday the 29th), not the
    one just gone: the booking made for it is recalled, though yesterday holds an event."""
    with seeded() as service:
        booking = lived(
            service, "Booked the bike shop for Saturday at 4 PM to replace the chain", 27
        )
        lived(service, "Washed the car on the driveway", 28)

    result = cli.json("recall", "What time is the bike shop next Saturday?", "--now", NOW)

    assert result["items"][0]["id"] == booking.id
    assert result["time_window"]["start"].startswith("2026-12-05")


def test_until_a_date_asks_about_everything_before_it(cli: Cli, seeded: Callable[[], Any]) -> None:
    """ "Until 12 November" ends a span: the runs on the 3rd and the 12th are both in it, the
    later ones are not (read as that one day, it kept only the 12th's)."""
    with seeded() as service:
        runs = {
            day: lived(service, f"Ran {km} km along the river", day).id
            for day, km in ((3, 5), (12, 10), (20, 8), (25, 12))
        }

    message = "How far did I run until November 12?"

    result = cli.json("recall", message, "--now", NOW)
    explained = cli.ok("recall", message, "--now", NOW, "--explain")

    recalled = {i["id"] for i in result["items"]}
    assert recalled == {runs[3], runs[12]}
    assert result["time_window"]["end"].startswith("2026-11-13")
    assert "time window: 'until november 12' = up to 2026-11-13 (exclusive)" in explained


def test_a_run_of_days_is_one_window_of_those_days(cli: Cli, seeded: Callable[[], Any]) -> None:
    """ "November 6-7" names both days: the films of the 6th and the 7th are recalled, the one
    of the 20th is bounded out (the run was not read as a date: the 20th's came too)."""
    with seeded() as service:
        weekend = {
            lived(service, "Watched Jaws with the kids for the family movie weekend", 6).id,
            lived(service, "Watched Alien with the kids for the family movie weekend", 7).id,
        }
        later = lived(service, "Watched Heat with the kids for the family movie night", 20)

    result = cli.json("recall", "Which films did the kids watch November 6-7?", "--now", NOW)

    recalled = {i["id"] for i in result["items"]}
    assert recalled >= weekend and later.id not in recalled
    assert result["time_window"]["start"].startswith("2026-11-06")
    assert result["time_window"]["end"].startswith("2026-11-08")


def test_a_memory_naming_the_asked_day_is_in_its_window(
    cli: Cli, seeded: Callable[[], Any]
) -> None:
    """The dentist was booked on the 2nd for the 15th: asked what the 15th held, recall gives
    the booking beside the 15th's own event, not bounded out for being made on the 2nd."""
    with seeded() as service:
        booking = lived(service, "Booked a check-up with Dr Okafor on November 15 at 9 am", 2)
        errand = lived(service, "Picked up the suits from the dry cleaner", 15)
        lived(service, "Repotted the basil on the balcony", 16)

    result = cli.json("recall", "What did I have on November 15?", "--now", NOW)
    explained = cli.ok("recall", "What did I have on November 15?", "--now", NOW, "--explain")

    assert {i["id"] for i in result["items"]} == {booking.id, errand.id}
    [named] = [i for i in result["items"] if i["id"] == booking.id]
    assert named["legs"]["time"] == 1
    assert "outside the time window" not in explained.split(booking.id[:8], 1)[-1].split("\n")[0]


def test_a_plan_asked_about_before_its_day_is_found_by_that_day(
    cli: Cli, seeded: Callable[[], Any]
) -> None:
    """Asked on the 10th what is on for November 15 (no year): this year's 15th, to come, not
    last year's; the memory that names it is recalled first."""
    with seeded() as service:
        booking = lived(service, "Booked a check-up with Dr Okafor on November 15 at 9 am", 2)
        lived(service, "Picked up the suits from the dry cleaner", 9)
    asked = "2026-11-10T12:00:00+00:00"

    result = cli.json("recall", "What's on for November 15?", "--now", asked)

    assert result["time_window"]["start"].startswith("2026-11-15")
    assert result["items"][0]["id"] == booking.id


def test_a_weekday_that_recurs_names_no_day(cli: Cli, seeded: Callable[[], Any]) -> None:
    """ "On Tuesday and Thursday mornings" is a habit, not last Tuesday: the event that set the
    habit up is recalled, not bounded out by the one event of last Tuesday."""
    with seeded() as service:
        habit = lived(
            service, "Started keeping Tuesday and Thursday mornings free for swimming lessons", 5
        )
        lived(service, "Had a filling at the dentist", 24)

    result = cli.json("recall", "What do I do on Tuesday and Thursday mornings?", "--now", NOW)

    assert result["items"][0]["id"] == habit.id
    assert result["time_window"] is None


def test_days_written_as_people_write_them_are_recalled_for_that_day(cli: Cli) -> None:
    """Notes remembered with the CLI as a person types them ("the 15th", "tomorrow",
    "24/11"), each read from the day it was remembered, come back from the time leg when the
    question names their day as a person asks it."""
    cli.ok("init")

    def remember(text: str, day: int, *options: str) -> str:
        made = cli.json("remember", text, *options, "--now", f"2026-11-{day:02d}T10:00:00Z")
        return str(made["id"])

    dentist = remember("Dentist on the 15th at 9, Dr Okafor", 2)
    dinner = remember("Dinner at Rui's place tomorrow at 8", 9)
    taxes = remember("Tax office 24/11, bring the forms", 3)
    remember(
        "Repotted the basil on the balcony", 9, "--kind", "event", "--occurred-at", "2026-11-09"
    )
    remember("The garage said the car is ready on the 20th", 4)

    def timed(message: str, now: str) -> tuple[list[str], str]:
        result = cli.json("recall", message, "--now", now)
        window = result["time_window"]["start"] if result["time_window"] else ""
        return [i["id"] for i in result["items"] if "time" in i["legs"]], window

    fifteenth = timed("What's on for the 15th?", "2026-11-10T12:00:00Z")
    assert fifteenth[0] == [dentist] and fifteenth[1].startswith("2026-11-15")
    on_the_10th = timed("Anything tomorrow?", "2026-11-09T20:00:00Z")
    assert on_the_10th[0] == [dinner] and on_the_10th[1].startswith("2026-11-10")
    taxes_day = timed("What do I have on Tuesday?", "2026-11-22T12:00:00Z")
    assert taxes_day[0] == [taxes] and taxes_day[1].startswith("2026-11-24")


def test_a_day_asked_about_in_the_present_is_the_one_to_come(cli: Cli) -> None:
    """Asked on Friday 4 December "What's happening on the 18th?" or "Anything on the 15th?",
    the owner means this month's days to come: the notes naming them are recalled, not an empty
    block for November's."""
    cli.ok("init")
    holidays = cli.json("remember", "Kids' school holidays start on the 18th", "--now", DEC_1)
    birthday = cli.json("remember", "Mum's birthday is on the 15th, she'll be 70", "--now", DEC_1)
    cli.ok("remember", "Lunch with Carla from the old team on Friday", "--now", DEC_1)
    asked = "2026-12-04T10:00:00Z"

    for message, note, day in [
        ("What's happening on the 18th?", holidays, "2026-12-18"),
        ("Anything on the 15th?", birthday, "2026-12-15"),
    ]:
        result = cli.json("recall", message, "--now", asked)
        assert result["time_window"]["start"].startswith(day), message
        assert [i["id"] for i in result["items"] if "time" in i["legs"]] == [note["id"]], message


DEC_1 = "2026-12-01T19:00:00Z"


def test_the_readmes_dates_example_recalls_as_printed(cli: Cli) -> None:
    """The README's dates example, run as written after the quick start's memories, prints the
    memory lines the README shows: the note for the asked Tuesday ("24/11") first."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.DOTALL)
    quick_start = next(b for b in blocks if "memoryd remember" in b)
    example = next(b for b in blocks if "memoryd recall" in b and "--now" in b)
    shown = readme.split(example, 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    expected = [line for line in shown.splitlines() if line.startswith("- [")]
    remembers = [
        shlex.split(line)[1:]
        for line in (quick_start + example).splitlines()
        if line.startswith("memoryd remember ")
    ]
    [asked] = [shlex.split(line)[1:] for line in example.splitlines() if "recall" in line]
    cli.ok("init")
    for command in remembers:
        cli.ok(*command)

    printed = cli.ok(*asked)

    assert expected[0] == "- [fact] Tax office 24/11, bring the forms"
    assert [line for line in printed.splitlines() if line.startswith("- [")] == expected


def test_a_sentence_about_the_answers_form_is_not_searched(
    cli: Cli, seeded: Callable[[], Any]
) -> None:
    """Asked for a history in five items, recall searches the question, not "five items":
    --explain says what it searched, and the memory about five items stays out of the first
    place the garden's mentions hold."""
    with seeded() as service:
        beds = lived(service, "Planning raised beds for the vegetable garden", 2)
        tomatoes = lived(service, "Moved the tomato seedlings in the vegetable garden", 9)
        lived(service, "Mentioned five items to the landlord: the boiler, two taps and a lock", 10)
    question = "In what order did I bring up my vegetable garden across our conversations?"
    message = f"{question} Mention ONLY and ONLY five items."

    explained = cli.ok("recall", message, "--now", NOW, "--explain")
    result = cli.json("recall", message, "--now", NOW)

    assert f"question searched: {question!r}" in explained
    assert result["query"]["read"]["question"] == question
    best = sorted(result["items"], key=lambda item: -item["score"])[:2]
    assert {item["id"] for item in best} == {beds.id, tomatoes.id}


def test_an_empty_message_is_refused_by_name(cli: Cli) -> None:
    """`recall ""` (a shell variable that was never set) says what is missing, as `context ""`
    and `kb search ""` do, instead of printing "(no memories qualify)" as though the store had
    nothing."""
    cli.ok("init")
    cli.ok("remember", "The owner is allergic to penicillin")

    for command in ("recall", "context"):
        for message in ("", "   "):
            refused = cli.fails(command, message)
            assert refused == "error: the message is empty; pass the owner's message for this turn"


def test_a_history_question_reaching_before_year_one_recalls_without_a_window(cli: Cli) -> None:
    """ "What happened 3000 years ago in Egypt?" counts back past the calendar's first day: it
    names no time window, and recall answers (it stopped with a traceback before)."""
    cli.ok("init")
    cli.ok("remember", "The owner is planning a trip to Egypt in March")

    for command in ("recall", "context"):
        answered = cli.json(command, "What happened 3000 years ago in Egypt?")
        assert answered.get("time_window") is None
