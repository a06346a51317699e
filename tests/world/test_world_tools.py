"""The world's tools: count, domains, valid specs, determinism, realistic domain errors."""

from __future__ import annotations

from collections import Counter

from jsonschema import Draft202012Validator

from toolmend._schema import ToolCall
from toolmend.world import DOMAINS, World, domain_of


def test_at_least_40_tools_over_at_least_8_domains() -> None:
    tools = World.create(0).tools
    per_domain = Counter(domain_of(t.name) for t in tools)
    assert len(tools) >= 40
    assert set(per_domain) == set(DOMAINS) and len(per_domain) >= 8
    assert all(n >= 4 for n in per_domain.values())


def test_every_spec_is_valid_json_schema_with_typed_returns() -> None:
    for tool in World.create(0).tools:
        Draft202012Validator.check_schema(tool.parameters)
        assert tool.returns is not None, tool.name
        Draft202012Validator.check_schema(tool.returns)
        assert tool.description, tool.name
        for name, prop in tool.properties.items():
            assert prop.get("description") or "$ref" not in prop, (tool.name, name)
        assert set(tool.required) <= set(tool.properties)


def test_specs_carry_enums_bounds_patterns_and_nesting() -> None:
    tools = {t.name: t for t in World.create(0).tools}
    assert tools["mail_move"].properties["folder"]["enum"] == ["inbox", "archive", "sent", "spam", "trash"]
    assert tools["travel_book_flight"].properties["seats"]["maximum"] == 9
    assert tools["calendar_create_event"].properties["date"]["pattern"] == r"^\d{4}-\d{2}-\d{2}$"
    address = tools["shop_checkout"].properties["shipping_address"]
    assert address["type"] == "object" and "postal_code" in address["required"]
    assert tools["mail_send"].properties["to"]["type"] == "array"


def test_outputs_validate_against_returns() -> None:
    world = World.create(2)
    env = world.environment()
    calls = [
        ToolCall(name="weather_forecast", arguments={"city": "Rome", "date": world.state.today}),
        ToolCall(name="finance_list_accounts"),
        ToolCall(name="travel_search_hotels", arguments={"city": "Tokyo"}),
        ToolCall(name="shop_view_cart"),
    ]
    for call, response in zip(calls, env.run(calls), strict=True):
        assert response.ok, response.content
        spec = next(t for t in world.tools if t.name == call.name)
        Draft202012Validator(spec.returns or {}).validate(response.data)


def test_same_seed_same_world_and_outputs() -> None:
    a, b = World.create(11), World.create(11)
    assert a.snapshot() == b.snapshot() and a.fingerprint() == b.fingerprint()
    call = ToolCall(name="weather_current", arguments={"city": "Cairo"})
    assert a.environment().execute(call).content == b.environment().execute(call).content


def test_different_seeds_differ() -> None:
    a, b = World.create(1), World.create(2)
    assert a.fingerprint() != b.fingerprint()
    call = ToolCall(name="finance_list_accounts")
    assert a.environment().execute(call).data != b.environment().execute(call).data


def test_writes_change_state_and_fingerprint() -> None:
    world = World.create(0)
    before = world.fingerprint()
    env = world.environment()
    r = env.execute(ToolCall(name="todo_create", arguments={"title": "Stretch", "priority": "low"}))
    assert r.ok and r.data["todo_id"] in world.state.todos
    assert world.fingerprint() != before


def test_domain_errors_become_realistic_error_bodies() -> None:
    world = World.create(0)
    env = world.environment()
    missing = env.execute(ToolCall(name="mail_read", arguments={"email_id": "M9999"}))
    assert missing.error == "not_found" and missing.status == 404 and missing.source == "execution"
    assert missing.data == {
        "error": {"code": 404, "type": "not_found", "message": "no email with id 'M9999'"}
    }
    account = next(iter(world.state.accounts))
    broke = env.execute(
        ToolCall(
            name="finance_transfer",
            arguments={"from_account_id": account, "to_account_id": "A0002", "amount": 999_999},
        )
    )
    assert broke.error == "insufficient_funds" and broke.status == 402
    assert "holds" in broke.data["error"]["message"]
