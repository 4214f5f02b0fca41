"""What the pipeline can and cannot do, proven on its graph: no model, key or course.

Each property of pipeline.md is a test here, and each check of ``problems()`` is
shown to catch a copy of the graph broken on purpose.
"""

from __future__ import annotations

from dataclasses import replace

import networkx as nx
import pytest

from stay.artefacts import Assessment
from stay.pipeline import DECLARATION, graph, problems
from stay.pipeline._graph import GATES, GateDecl, PipelineDecl, assemble, build, command_walk, declare
from stay.pipeline._runner import handlers
from stay.stages import REGISTRY, STAGES, Prompts

DESIGN_STAGES = [stage.node_name for stage in REGISTRY if stage.phase == GATES[0].closes]
WAVE = sorted({stage.node_name for stage in REGISTRY if stage.phase == "wave"})
REVIEW = sorted({stage.node_name for stage in REGISTRY if stage.phase == "review"})
GUARDS = [n for n in graph().successors("choose_entry") if n != "intake"]
RECORDS = [gate.record for gate in GATES]


def _kinds(g: nx.DiGraph, kind: str) -> list[str]:
    return [n for n, a in g.nodes(data=True) if a["kind"] == kind]


def test_the_declared_graph_has_no_problems() -> None:
    assert problems(graph()) == []


def test_1_acyclic_every_node_reachable_from_entry_and_reaches_the_end() -> None:
    g = graph()
    assert nx.is_directed_acyclic_graph(g)
    (end,) = [n for n in g if g.out_degree(n) == 0]
    assert end == "repair"
    for node in g:
        assert node == "entry" or nx.has_path(g, "entry", node), node
        assert nx.has_path(g, node, end), node


@pytest.mark.parametrize("removed", DESIGN_STAGES)
def test_2_removing_a_design_stage_cuts_off_everything_after_it(removed: str) -> None:
    g = graph()
    after = nx.descendants(g, removed)
    assert {"write_lesson", "write_capstone", "validate", "repair"} <= after
    g.remove_node(removed)
    reachable = nx.descendants(g, "entry")
    # as written: the next stage, the gates, the wave and all that follows on the spine;
    # only revise's own nodes (behind their guard's approvals) still reach validate
    spine_after = {n for n in after if g.nodes[n]["kind"] not in ("validate", "repair")}
    assert not reachable & spine_after, sorted(reachable & spine_after)
    assert reachable & after <= {"validate", "repair"}
    for command in DECLARATION.commands:  # and no command walks around it
        walked = command_walk(graph(), command)
        if set(walked) & spine_after:
            assert removed in walked and walked.index(removed) < min(map(walked.index, set(walked) & after))


def test_every_command_walks_every_design_stage_and_both_gates_before_the_wave() -> None:
    g = graph()
    for name, command in DECLARATION.commands.items():
        walked = command_walk(g, name)
        assert walked[:2] == ["entry", "choose_entry"] and walked[2] == command.entry
        assert walked.index("moderate") < walked.index("scaffold")
        for wave in set(WAVE) & set(walked):
            for node in (*DESIGN_STAGES, *RECORDS):
                assert walked.index(node) < walked.index(wave), (name, node)


def test_a_guard_requires_every_gate_recorded_before_what_its_command_writes() -> None:
    g = graph()
    for guard in GUARDS:
        command = next(c for c in DECLARATION.commands.values() if c.entry == guard)
        written = [n for n in command_walk(g, next(k for k, v in DECLARATION.commands.items() if v is command))
                   if g.nodes[n].get("phase") in command.authors]
        before = {g.nodes[r]["gate"] for n in written for r in nx.ancestors(g, n)
                  if g.nodes[r]["kind"] == "gate-record"}
        assert set(g.nodes[guard]["requires"]) == before, guard
    broken = graph()
    broken.nodes["repair_seed"]["requires"] = ("design",)
    assert any("authors repair after ['plan_record']" in p for p in problems(broken))


def test_commands_stop_where_the_graph_declares() -> None:
    g = graph()
    assert command_walk(g, "new")[-1] == "design_summary"
    assert command_walk(g, "plan")[-1] == "plan_record" and "write_lesson" not in command_walk(g, "plan")
    assert command_walk(g, "build")[-1] == command_walk(g, "write")[-1] == command_walk(g, "repair")[-1] == "repair"


def test_3_every_path_into_the_wave_passes_both_gate_records() -> None:
    g = graph()
    for record in RECORDS:
        cut = g.copy()
        cut.remove_node(record)
        for wave in WAVE:
            assert not nx.has_path(cut, "entry", wave), (record, wave)
    for wave in WAVE:
        for path in nx.all_simple_paths(g, "entry", wave):
            assert set(RECORDS) <= set(path)


def test_4_no_gate_node_is_reachable_from_the_wave() -> None:
    g = graph()
    gates = {n for n, a in g.nodes(data=True) if a["kind"].startswith("gate")}
    assert len(gates) == 3 * len(GATES)
    for wave in WAVE:
        assert not nx.descendants(g, wave) & gates


def test_5_each_gate_is_exactly_summary_ask_record() -> None:
    g = graph()
    for gate in (declared.name for declared in GATES):
        assert list(g.predecessors(f"{gate}_ask")) == [f"{gate}_summary"]
        assert list(g.successors(f"{gate}_ask")) == [f"{gate}_record"]
        assert g.nodes[f"{gate}_summary"]["kind"] == "gate-summary"
        assert g.nodes[f"{gate}_record"]["kind"] == "gate-record"


def test_6_every_path_to_the_first_writing_node_passes_moderate() -> None:
    g = graph()
    first = [n for n, a in g.nodes(data=True)
             if a["writes"] and not any(g.nodes[x]["writes"] for x in nx.ancestors(g, n))]
    assert first == ["scaffold"]
    assert all("moderate" in path for path in nx.all_simple_paths(g, "entry", "scaffold"))
    cut = g.copy()
    cut.remove_node("moderate")
    assert not nx.has_path(cut, "entry", "scaffold")


def test_7_only_gather_follows_the_wave_then_the_review_merge_land_and_validate() -> None:
    g = graph()
    for wave in WAVE:
        assert list(g.successors(wave)) == ["gather"]
    (review,) = REVIEW  # the review reads what the wave wrote, so it follows the barrier
    assert list(g.successors("gather")) == [review]
    assert list(g.successors(review)) == ["merge_glossary"]
    assert list(g.successors("merge_glossary")) == ["land_manifest"]
    assert list(g.successors("land_manifest")) == ["validate"]


def test_8_each_stage_reference_set_is_the_one_its_front_matter_derives() -> None:
    g, prompts = graph(), Prompts.load()
    seen = set()
    for _name, attrs in g.nodes(data=True):
        for stage, refs in attrs["references"].items():
            assert refs == prompts.reference_set(STAGES[stage])
            assert attrs["role"] in (STAGES[stage].role, sorted({STAGES[s].role for s in attrs["stages"]}))
            seen.add(stage)
    assert seen == set(STAGES)


def test_entries_join_where_the_contract_says() -> None:
    g = graph()
    assert dict(DECLARATION.entries) == {"new": "intake", "build": "intake", "plan": "require_design",
                                         "write": "require_gates", "repair": "repair_seed", "revise": "revise_seed"}
    assert sorted(g.successors("choose_entry")) == sorted({*DECLARATION.entries.values()})
    assert all(g.nodes[guard]["kind"] == "guard" for guard in GUARDS)
    assert all(list(g.successors(guard)) == ["intake"] for guard in GUARDS)  # the guards join before moderate


def test_every_node_carries_kind_writes_role_and_references() -> None:
    for _name, attrs in graph().nodes(data=True):
        assert {"kind", "writes", "role", "references", "stages"} <= set(attrs)
        assert isinstance(attrs["writes"], bool)


def test_every_node_has_a_handler_and_every_handler_a_node() -> None:
    from stay.pipeline._runner import HANDLERS

    assert set(HANDLERS) == set(graph())


def test_graph_returns_a_copy_the_runner_cannot_be_changed_through() -> None:
    g = graph()
    g.remove_node("moderate")
    assert "moderate" in graph()


# -- breaking copies on purpose: each check must catch it -----------------------------


def test_dropping_a_gate_edge_is_caught() -> None:
    g = graph()
    g.remove_edge("design_ask", "design_record")
    g.add_edge("design_ask", "plan_modules")
    found = problems(g)
    assert any("design_ask must have exactly one successor" in p for p in found)


def test_an_edge_from_the_wave_back_to_a_gate_is_caught() -> None:
    g = graph()
    g.add_edge("write_lesson", "plan_summary")
    found = problems(g)
    assert any("cycle" in p for p in found)
    assert any("reachable from wave node write_lesson" in p for p in found)
    assert any("wave node write_lesson must lead only to gather" in p for p in found)


def test_bypassing_moderate_is_caught() -> None:
    g = graph()
    g.add_edge("intake", "scaffold")
    assert any("without passing moderate" in p for p in problems(g))


def test_a_cycle_is_caught() -> None:
    g = graph()
    g.add_edge("validate", "land_manifest")
    assert any("cycle" in p for p in problems(g))


def test_a_shortcut_into_the_wave_is_caught() -> None:
    g = graph()
    g.add_edge("require_gates", "write_lesson")
    found = problems(g)
    assert any("without passing design_record" in p for p in found)
    assert any("guard require_gates must lead only to intake" in p for p in found)


def test_a_swapped_reference_set_is_caught() -> None:
    g = graph()
    g.nodes["outcomes"]["references"] = {"outcomes": tuple(Prompts.load().reference_set(STAGES["outcomes"]))[::-1]}
    assert any("reference set for outcomes" in p for p in problems(g))


def test_every_problem_is_reported_at_once() -> None:
    g = graph()
    g.add_edge("intake", "scaffold")
    g.add_edge("require_gates", "write_lesson")
    g.add_node("orphan", kind="mechanical", writes=False, references={}, stages=(), order=99)
    found = problems(g)
    assert len(found) >= 3


# -- a gate is a declaration; a router's answer is the edge taken; revise walks its own nodes --


class AuditNotes(Assessment):
    """The toy audit stage's kind of file (a kind declares where it goes)."""

    FILE = "audit.yaml"


def _third_gate() -> PipelineDecl:
    """The registry plus a toy `audit` phase (one stage, after the planning stages) closed
    by a toy third gate: one GateDecl, one stage declaration, nothing else."""
    audit = replace(STAGES["assessment"], name="audit", phase="audit", makes=AuditNotes,  # type: ignore[arg-type]
                     needs=())  # no front matter names it: what every stage shares is its floor
    return declare((*REGISTRY, audit), (*GATES, GateDecl("audit", "audit", lambda _view: [])))


def _with_third_gate() -> nx.DiGraph:
    return build(_third_gate())


def test_a_third_gate_is_one_declaration_and_every_property_holds_for_it() -> None:
    g = _with_third_gate()
    assert problems(g) == []
    assert [n for n in g if n.startswith("audit_")] == ["audit_summary", "audit_ask", "audit_record"]
    assert list(g.predecessors("audit_summary")) == ["audit"]  # after the phase it closes
    for wave in WAVE:  # property 3 for the third gate: the wave is behind every record
        cut = g.copy()
        cut.remove_node("audit_record")
        assert not nx.has_path(cut, "entry", wave)
    assert g.nodes["require_gates"]["requires"] == g.nodes["repair"]["requires"] == ("design", "plan", "audit")
    assert g.nodes["require_design"]["requires"] == ("design",)  # `plan` writes before the plan gate
    assert g.nodes["revise_seed"]["requires_by_phase"]["audit"] == ("design", "plan")
    assert g.nodes["revise_seed"]["requires_by_phase"]["wave"] == ("design", "plan", "audit")
    walked = command_walk(g, "write")
    assert walked.index("audit_record") < walked.index("write_lesson")
    table = handlers(assemble(_third_gate()))  # its handlers come from its nodes too
    assert set(table) == set(g) and table["audit_ask"].__name__ == "ask[audit]"


def test_a_guard_that_does_not_require_the_third_gate_is_caught() -> None:
    g = _with_third_gate()
    g.nodes["require_gates"]["requires"] = ("design", "plan")
    g.nodes["repair"]["requires"] = ("design", "plan")
    found = problems(g)
    assert any("authors write_lesson after ['audit_record']" in p for p in found)
    assert any("repair requires ['design', 'plan'], but the gate records before it are" in p for p in found)


def test_the_walk_follows_the_edge_a_router_answers() -> None:
    from stay.errors import GraphError
    from stay.pipeline._graph import walk

    g = graph()
    spine = list(walk(g, "build", {"choose_entry": "intake", "choose_work": "audience"}.__getitem__))
    assert spine == command_walk(g, "build")
    # the same command, its router answering the other edge: revise's nodes, not the spine
    routed = list(walk(g, "build", {"choose_entry": "intake", "choose_work": "revise_files"}.__getitem__))
    assert "revise_files" in routed and not set(routed) & set(DESIGN_STAGES)
    with pytest.raises(GraphError, match="router choose_work answered 'gather'"):
        list(walk(g, "build", {"choose_entry": "intake", "choose_work": "gather"}.__getitem__))


def test_revise_walks_its_own_nodes_and_no_stage_or_gate_of_the_spine() -> None:
    g = graph()
    walked = command_walk(g, "revise")
    assert walked[-1] == DECLARATION.commands["revise"].last == "validate"
    assert not {n for n in walked if g.nodes[n]["kind"] in ("stage", "wave") or g.nodes[n]["kind"].startswith("gate")}
    own = [n for n in walked if g.nodes[n].get("phase") == "revise"]
    assert own and DECLARATION.commands["revise"].authors == ("revise",)
    for command, declared in DECLARATION.commands.items():  # and no other command walks them
        if command != "revise":
            assert not set(command_walk(g, command)) & set(own), command
            assert "revise" not in declared.authors
