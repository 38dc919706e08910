"""Synced folders' pure parts: the pass plan, the folder rules, the symlink rule, and Markdown
notes read as notes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memoryd.kb.convert import READABLE_SUFFIXES, convert
from memoryd.kb.folder_rules import refuse_reason
from memoryd.kb.notes import read_note
from memoryd.kb.sync.model import FileState, SyncFile
from memoryd.kb.sync.plan import Seen, plan_renames, plan_scan
from memoryd.kb.sync.rules import FolderRules

AT = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def _row(path: str, state: FileState = FileState.CURRENT, **fields: object) -> SyncFile:
    values: dict[str, object] = {"document_id": f"doc-{path}", "content_hash": f"h-{path}",
                                 "size": 10, "mtime_ns": 5}  # fmt: skip
    values.update(fields)
    return SyncFile("src", path, state, AT, **values)  # type: ignore[arg-type]


def test_plan_reads_only_new_and_changed_files_and_removes_gone_ones() -> None:
    rows = [_row("same.md"), _row("edited.md"), _row("deleted.md")]
    seen = [Seen("same.md", 10, 5), Seen("edited.md", 12, 9), Seen("new.md", 3, 1)]
    plan = plan_scan(seen, rows, {"doc-same.md", "doc-edited.md", "doc-deleted.md"}, "src", AT)

    assert sorted(r.path for r in plan.to_read) == ["edited.md", "new.md"]
    assert all(r.state is FileState.QUEUED for r in plan.to_read)
    edited = next(r for r in plan.to_read if r.path == "edited.md")
    # The changed file keeps its document (re-ingested in place) and records the new stat.
    assert (edited.document_id, edited.size, edited.mtime_ns) == ("doc-edited.md", 12, 9)
    assert [r.path for r in plan.gone] == ["deleted.md"]
    assert plan.unchanged == 1


def test_a_queued_row_is_read_again_even_with_the_same_stat() -> None:
    # What a pass killed before reading the file leaves.
    rows = [_row("half.md", FileState.QUEUED, document_id=None, content_hash=None)]
    plan = plan_scan([Seen("half.md", 10, 5)], rows, set(), "src", AT)
    assert [r.path for r in plan.to_read] == ["half.md"]


def test_a_document_removed_by_the_owner_turns_its_file_erased_and_it_stays_unread() -> None:
    rows = [_row("secret.md")]
    plan = plan_scan([Seen("secret.md", 10, 5)], rows, set(), "src", AT)
    assert plan.to_read == ()
    [mark] = plan.marks
    assert mark.state is FileState.ERASED and mark.document_id is None
    assert "forget" in (mark.reason or "")

    erased = [_row("secret.md", FileState.ERASED, document_id=None)]
    edited = plan_scan([Seen("secret.md", 99, 77)], erased, set(), "src", AT)
    assert edited.to_read == () and edited.marks == () and edited.gone == ()


def test_a_file_now_left_out_by_a_rule_loses_its_document_and_is_marked_skipped() -> None:
    rows = [_row("drafts/plan.md")]
    seen = [Seen("drafts/plan.md", 10, 5, skip="matches an ignore pattern")]
    plan = plan_scan(seen, rows, {"doc-drafts/plan.md"}, "src", AT)
    assert [r.path for r in plan.gone] == ["drafts/plan.md"]
    assert [(m.path, m.state) for m in plan.marks] == [("drafts/plan.md", FileState.SKIPPED)]


def test_renames_match_gone_files_by_content_hash_one_to_one() -> None:
    gone = [_row("old.md", content_hash="abc"), _row("other.md", content_hash="zzz")]
    stored = {r.path: r for r in gone}
    renames = plan_renames({"new.md": "abc", "copy.md": "abc", "fresh.md": "def"}, gone, stored)
    assert list(renames.values()) == [gone[0]]
    assert len(renames) == 1  # the second file with the same bytes is a new document


@given(
    st.dictionaries(
        st.sampled_from([f"n{i}.md" for i in range(8)]),
        st.tuples(st.integers(0, 3), st.integers(0, 3)),
    ),
    st.dictionaries(
        st.sampled_from([f"n{i}.md" for i in range(8)]),
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.sampled_from(list(FileState))),
    ),
)
def test_every_seen_or_stored_path_is_accounted_for_exactly_once(
    seen_stats: dict[str, tuple[int, int]], stored: dict[str, tuple[int, int, FileState]]
) -> None:
    seen = [Seen(p, size, mtime) for p, (size, mtime) in sorted(seen_stats.items())]
    rows = [_row(p, state, size=size, mtime_ns=mtime) for p, (size, mtime, state) in stored.items()]
    live = {f"doc-{p}" for p in stored}
    plan = plan_scan(seen, rows, live, "src", AT)
    read = [r.path for r in plan.to_read]
    gone = [r.path for r in plan.gone]
    marked = [r.path for r in plan.marks]
    assert len(read) == len(set(read)) and not set(read) & set(gone)
    assert set(gone) == set(stored) - set(seen_stats)
    assert set(read) | set(marked) | set(gone) <= set(stored) | set(seen_stats)
    assert len(read) + len({p for p in marked if p not in read}) + plan.unchanged == len(seen)


def test_folder_rules_skip_hidden_ignored_oversized_and_unreadable_files() -> None:
    rules = FolderRules(("drafts/", "*.tmp", "!keep.tmp"), False, 1_000, READABLE_SUFFIXES)
    assert rules.folder_reason(".git") == "a hidden folder"
    assert rules.folder_reason("a/drafts") == "matches an ignore pattern"
    assert rules.folder_reason("projects") is None
    assert rules.file_reason(".DS_Store", 1) == "a hidden file"
    assert rules.file_reason("x.tmp", 1) == "matches an ignore pattern"
    assert rules.file_reason("song.mp3", 1) == "not a type memoryd reads (.mp3)"
    assert "cap" in (rules.file_reason("big.md", 5_000) or "")
    assert rules.file_reason("notes/today.md", 900) is None
    with_hidden = FolderRules((), True, 1_000, READABLE_SUFFIXES)
    assert with_hidden.folder_reason(".obsidian") is None


def test_symlinks_out_of_the_folder_or_into_the_home_are_refused(tmp_path: Path) -> None:
    root, home, outside = tmp_path / "notes", tmp_path / "home", tmp_path / "elsewhere"
    for folder in (root, home, outside):
        folder.mkdir()
    (outside / "x.md").write_text("x")
    (home / "token").write_text("t")
    (root / "in.md").write_text("in")
    (root / "out.md").symlink_to(outside / "x.md")
    (root / "home").symlink_to(home)
    (root / "loop").symlink_to(root / "loop")

    assert refuse_reason(root / "in.md", root, home) is None
    assert "outside the folder" in (refuse_reason(root / "out.md", root, home) or "")
    assert refuse_reason(root / "home", root, home) is not None
    assert refuse_reason(root / "loop", root, home) is not None
    assert "home" in (refuse_reason(home, home, home) or "")


NOTE = """---
title: Greenhouse kickoff
tags: [project, "#alpha"]
date: 2026-11-03
aliases:
  - GH kickoff
owner: {nested: mapping}
---
# Kickoff

Met [[Bruno Costa|Bruno]] about the #budget; see ![[sketch.png]] and `#not-a-tag`.

```python
# a comment #nope
```

## Decisions

Order the probes. #procurement/sensors
"""


def test_front_matter_becomes_title_and_metadata_and_tags_and_links_stay_searchable() -> None:
    note = read_note(NOTE)
    assert note.title == "Greenhouse kickoff"
    meta = note.metadata
    assert meta["tags"] == ["project", "alpha", "budget", "procurement/sensors"]
    assert meta["links"] == ["Bruno Costa", "sketch.png"]
    assert meta["date"] == "2026-11-03"
    assert meta["aliases"] == ["GH kickoff"]
    assert "owner" not in meta  # nested mappings are not kept
    # The properties join the opening section; the text keeps the tags and links as written.
    assert note.markdown.startswith("# Kickoff\n\nTags: #project #alpha\nDate: 2026-11-03")
    assert "[[Bruno Costa|Bruno]]" in note.markdown and "#budget" in note.markdown
    assert "---" not in note.markdown.split("\n")[0]


def test_a_note_through_the_converter_keeps_its_headings_as_sections() -> None:
    converted = convert(NOTE.encode(), "kickoff.md", reader=None)  # type: ignore[arg-type]
    assert converted.title == "Greenhouse kickoff"
    assert "## Decisions" in converted.markdown
    assert converted.metadata["links"] == ["Bruno Costa", "sketch.png"]


def test_broken_or_hostile_front_matter_stays_text_and_costs_nothing() -> None:
    broken = read_note("---\ntitle: [unclosed\n---\nbody text\n")
    assert broken.title == "" and "title: [unclosed" in broken.markdown
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n" \
        "c: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n---\nbody\n"  # fmt: skip
    note = read_note(bomb)
    assert note.metadata["a"] == ["x"] * 9
    assert "b" not in note.metadata and "c" not in note.metadata  # lists of lists dropped
    plain = read_note("no front matter, a #tag and [[Link]]")
    assert plain.metadata == {"tags": ["tag"], "links": ["Link"]}
