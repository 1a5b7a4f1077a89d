from __future__ import annotations

from llmcore.facts import Section, SentFacts, TurnFacts, plan_turn, render_sections, section_hash
from llmcore.usage import Cost, Usage, UsageTotals


def test_usage_adds_fieldwise_and_optional_keys_stay_none_only_if_both_are():
    a = Usage(input=1, output=2, cache_read=3, cache_write=4, web_search_requests=1)
    b = Usage(input=10, cache_write_1h=5, reported_cost=0.5)
    total = a + b
    assert total == Usage(
        input=11,
        output=2,
        cache_read=3,
        cache_write=4,
        web_search_requests=1,
        cache_write_1h=5,
        reported_cost=0.5,
    )
    assert (a + a).cache_write_1h is None and (a + a).reported_cost is None
    assert total.total_input == 18


def test_cost_kinds_combine_by_u2():
    reported = Cost(kind="reported", dollars=1.0)
    estimated = Cost(kind="estimated", dollars=0.25)
    assert reported + reported == Cost(kind="reported", dollars=2.0)
    assert reported + estimated == Cost(kind="estimated", dollars=1.25)
    assert estimated + Cost(kind="unknown") == Cost(kind="unknown")
    assert Cost() + reported == reported and reported + Cost(kind="not_billed") == reported
    assert Cost() + Cost() == Cost(kind="not_billed")


def test_totals_keep_last_round():
    totals = UsageTotals().record(Usage(input=5), Cost(kind="reported", dollars=0.1))
    totals = totals.record(Usage(input=7, output=1), Cost(kind="estimated", dollars=0.2))
    assert totals.total == Usage(input=12, output=1)
    assert totals.last_round == Usage(input=7, output=1)
    assert totals.cost.kind == "estimated" and abs(totals.cost.dollars - 0.3) < 1e-12


def test_plan_turn_sends_only_changed_sections():
    a, b = (
        Section(name="This turn", text="# This turn\n1"),
        Section(name="Design", text="# Design\nX"),
    )
    first = plan_turn(SentFacts(), start=0, sections=[a, b])
    assert first.send == (a, b)
    assert first.facts.turns == (
        TurnFacts(
            message=0,
            sections=(("Design", section_hash(b.text)), ("This turn", section_hash(a.text))),
        ),
    )
    a2 = Section(name="This turn", text="# This turn\n2")
    second = plan_turn(first.facts, start=4, sections=[a2, b])
    assert second.send == (a2,)
    assert second.facts.held() == {
        "Design": section_hash(b.text),
        "This turn": section_hash(a2.text),
    }
    # After compaction (C1) every section is sent again in full.
    compacted = second.facts.after_compaction([1, 3])
    assert compacted.turn_starts() == (1, 3)
    assert plan_turn(compacted, start=6, sections=[a2, b]).send == (a2, b)


def test_render_sections():
    sections = [Section(name="a", text="# A\nx"), Section(name="b", text="")]
    assert render_sections(sections, "Make a card") == "# A\nx\n\nMake a card"
    assert section_hash("\ud800") == section_hash("\ufffd")
