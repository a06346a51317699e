from __future__ import annotations

from toolmend._schema import Ref, ToolCall
from toolmend.formats import calls_from_nestools, parse_nestools_calls, write_nestools_calls

PREDICTION = """[{'api_name': 'scan_isbn', 'api_id': 9031, 'parameters': {'isbn': '978-3-16-148410-0'},
  'responses': {'book_details': 'API_call_0', 'availability': 'API_call_1'}},
 {'api_name': 'locate_book', 'api_id': 10894, 'parameters': {'book_info': 'API_call_0'},
  'responses': {'location_desc': 'API_call_2'}},
 {'api_name': 'engage_ar_experience', 'api_id': 1163,
  'parameters': {'availability': 'API_call_1', 'exact_location': 'API_call_2', 'tags': ['API_call_0', 'x']},
  'responses': {'ar_message': 'API_call_3'}}]"""


def test_python_repr_prediction_is_valid_and_placeholders_become_refs() -> None:
    r = parse_nestools_calls(PREDICTION)
    assert r.ok and r.format == "nestools" and r.findings == []
    assert [e["api_id"] for e in r.extras] == [9031, 10894, 1163]
    first, second, third = r.calls
    assert first.outputs == ["API_call_0", "API_call_1"]
    assert first.output_fields == ["book_details", "availability"]
    assert second.arguments == {"book_info": Ref(target="API_call_0")}
    assert third.arguments["tags"] == [Ref(target="API_call_0"), "x"]


def test_gold_lists_of_placeholders_have_no_field_names() -> None:
    r = calls_from_nestools([{"api_name": "a", "parameters": {"q": "x"}, "responses": ["API_call_0"]}])
    assert r.calls == [ToolCall(name="a", arguments={"q": "x"}, outputs=["API_call_0"])]


def test_placeholder_must_match_exactly_to_be_a_ref() -> None:
    r = calls_from_nestools([{"api_name": "a", "parameters": {"q": "see API_call_0", "n": "API_call_12"}}])
    assert r.calls[0].arguments == {"q": "see API_call_0", "n": Ref(target="API_call_12")}


def test_chatter_fences_and_broken_items() -> None:
    r = parse_nestools_calls(
        'API call result:\n```json\n[{"api_name": "a", "api_id": 1, "parameters": {}}]\n```'
    )
    assert [c.name for c in r.calls] == ["a"] and [f.code for f in r.findings] == ["redundant_information"]
    bad = calls_from_nestools([{"api_name": "a", "parameters": "q=1"}, {"name": "b"}])
    assert [f.code for f in bad.findings] == ["invalid_format", "invalid_format"]
    assert [c.name for c in bad.calls] == ["a"]
    cut = parse_nestools_calls(
        '[{"api_name": "a", "api_id": 1, "parameters": {"q": "x"}}, {"api_name": "b", "par'
    )
    assert [c.name for c in cut.calls] == ["a"] and [f.code for f in cut.findings] == ["invalid_format"]
    assert not cut.ok


def test_writer_dict_and_list_responses_and_api_ids() -> None:
    calls = parse_nestools_calls(PREDICTION).calls
    text = write_nestools_calls(calls, api_ids=[9031, 10894, 1163])
    again = parse_nestools_calls(text)
    assert again.calls == calls and [e["api_id"] for e in again.extras] == [9031, 10894, 1163]
    gold_style = write_nestools_calls(calls, responses="list")
    assert '"responses": ["API_call_0", "API_call_1"]' in gold_style and "api_id" not in gold_style
