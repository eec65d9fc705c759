"""repair.py: every call answered once right after it, no stray results, on request and on save."""

from picoora.agent.repair import INTERRUPTED, complete_pairs, repair_history
from picoora.messages import Message, ToolCall


def user(text="hi"):
    return Message(role="user", content=text)


def asst(*call_ids, content=""):
    return Message(role="assistant", content=content, tool_calls=[ToolCall(i, "echo", {"x": i}) for i in call_ids])


def result(call_id, text="ok"):
    return Message(role="tool", content=text, tool_call_id=call_id, name="echo")


def shape(messages):
    return [(m.role, [c.id for c in m.tool_calls], m.tool_call_id) for m in messages]


def test_well_formed_history_is_unchanged():
    history = [user(), asst("a", "b"), result("a"), result("b"), Message(role="assistant", content="done")]
    assert repair_history(history) == history
    assert complete_pairs(history) == history


def test_missing_result_is_synthesised_right_after_the_call():
    history = [user(), asst("a", "b"), result("b"), user("next")]
    repaired = repair_history(history)
    assert shape(repaired) == [
        ("user", [], None), ("assistant", ["a", "b"], None), ("tool", [], "a"), ("tool", [], "b"), ("user", [], None),
    ]
    assert repaired[2].content == INTERRUPTED
    assert repaired[3].content == "ok"  # the real result is kept, put in call order


def test_dangling_call_at_the_end_gets_a_result():
    repaired = repair_history([user(), asst("a")])
    assert shape(repaired)[-1] == ("tool", [], "a")
    assert repaired[-1].name == "echo"


def test_leading_and_stray_tool_results_are_dropped():
    history = [result("old"), user(), Message(role="assistant", content="plain"), result("x"), user("again")]
    assert shape(repair_history(history)) == [("user", [], None), ("assistant", [], None), ("user", [], None)]


def test_result_separated_from_its_call_counts_as_missing():
    history = [user(), asst("a"), user("interrupting"), result("a", "late")]
    repaired = repair_history(history)
    assert shape(repaired) == [("user", [], None), ("assistant", ["a"], None), ("tool", [], "a"), ("user", [], None)]
    assert repaired[2].content == INTERRUPTED


def test_duplicate_results_and_duplicate_call_ids_keep_the_first():
    history = [user(), asst("a", "a"), result("a", "first"), result("a", "second"), result("zzz")]
    repaired = repair_history(history)
    assert shape(repaired) == [("user", [], None), ("assistant", ["a"], None), ("tool", [], "a")]
    assert repaired[2].content == "first"


def test_complete_pairs_strips_unanswered_calls_and_keeps_text():
    history = [user(), asst("a", "b", content="checking"), result("a"), asst("c")]
    kept = complete_pairs(history)
    assert shape(kept) == [("user", [], None), ("assistant", ["a"], None), ("tool", [], "a")]
    assert kept[1].content == "checking"
    assert [c.id for c in history[1].tool_calls] == ["a", "b"]  # the input is not mutated


def test_repair_output_is_a_fixed_point():
    messy = [result("q"), user(), asst("a", "b"), result("b"), result("b"), asst("c"), user(), result("c")]
    once = repair_history(messy)
    assert repair_history(once) == once
    assert complete_pairs(once) == once
