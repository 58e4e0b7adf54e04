"""Every REST route on a real database: what it answers, and what bad input leaves behind."""

from __future__ import annotations

from typing import Any

import pytest

from memstore.server.problems import PROBLEM_JSON, TYPE_PREFIX
from tests.conftest import row_counts


def anatomy(target: str, claim: str) -> dict[str, object]:
    return {
        "target": target,
        "claim_or_question": claim,
        "tension": "the team dinner is at a Thai place",
        "action_implication": "check the menu for peanuts",
        "anchors": ["turn:12"],
    }


def problem(response, status: int, name: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM_JSON
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["type"].startswith(TYPE_PREFIX)
    assert "Traceback" not in response.text
    if name is not None:
        assert body["type"] == TYPE_PREFIX + name, body
    return body


def test_tags_on_the_rest_api(api, tenant, database_url):
    name, key = tenant
    base = f"/v1/namespaces/{name}"
    made = api.post(
        f"{base}/memories", key=key, json={"content": "Ship the beta", "tags": ["Work", "beta"]}
    )
    assert made.status_code == 201, made.text
    assert made.json()["tags"] == ["work", "beta"]
    batch = api.post(
        f"{base}/memories/batch",
        key=key,
        json={"items": [{"content": f"work item {i}", "tags": ["work"]} for i in range(3)]},
    )
    assert batch.status_code == 201, batch.text
    api.post(f"{base}/memories", key=key, json={"content": "a holiday plan"})

    work = api.get(f"{base}/memories", key=key, params={"tag": "WORK"}).json()["items"]
    assert len(work) == 4 and all("work" in item["tags"] for item in work)
    both = api.get(f"{base}/memories", key=key, params=[("tag", "work"), ("tag", "beta")])
    assert [item["id"] for item in both.json()["items"]] == [made.json()["id"]]

    hits = api.post(f"{base}/recall", key=key, json={"text": "work", "k": 10, "tags": ["work"]})
    assert hits.status_code == 200, hits.text
    assert len(hits.json()) == 4 and all("work" in h["node"]["tags"] for h in hits.json())
    packet = api.post(f"{base}/context", key=key, json={"query": "work", "tags": ["beta"]})
    assert packet.status_code == 200, packet.text
    activated = api.post(f"{base}/activate", key=key, json={"query": "work", "tags": ["beta"]})
    assert activated.status_code == 200, activated.text
    assert [i["node"]["tags"] for i in activated.json()["working_memory"]] == [["work", "beta"]]

    revised = api.post(
        f"{base}/memories/{made.json()['id']}/revise",
        key=key,
        json={"content": "Ship the beta on Friday", "reason": "dated"},
    )
    assert revised.status_code == 200, revised.text
    assert revised.json()["tags"] == ["work", "beta"]

    before = row_counts(database_url)
    bad = api.post(f"{base}/memories", key=key, json={"content": "x", "tags": [""]})
    problem(bad, 422)
    assert row_counts(database_url) == before


def test_memories_round_trip(api, tenant):
    name, key = tenant
    base = f"/v1/namespaces/{name}"
    made = api.post(
        f"{base}/memories", key=key, json={"content": "Alice moved to Lisbon", "source": "chat:1"}
    )
    assert made.status_code == 201, made.text
    node = made.json()
    assert (node["namespace"], node["status"], node["source"]) == (name, "current", "chat:1")

    batch = api.post(
        f"{base}/memories/batch",
        key=key,
        json={"items": [{"content": f"fact {i}", "kind": "semantic"} for i in range(5)]},
    )
    assert batch.status_code == 201, batch.text
    ids = batch.json()["ids"]
    assert len(ids) == 5

    got = api.get(f"{base}/memories/{node['id']}", key=key)
    assert got.status_code == 200 and got.json() == node

    # Keyset pages: no repeats, no gaps, and the last page says so.
    seen, cursor = [], 0
    while True:
        page = api.get(f"{base}/memories", key=key, params={"limit": 2, "cursor": cursor})
        assert page.status_code == 200, page.text
        seen += [item["id"] for item in page.json()["items"]]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted([node["id"], *ids])
    semantic = api.get(f"{base}/memories", key=key, params={"kind": "semantic"}).json()
    assert [item["id"] for item in semantic["items"]] == sorted(ids)
    assert api.get(f"{base}/memories", key=key, params={"tier": "none"}).json()["items"] == []

    revised = api.post(
        f"{base}/memories/{node['id']}/revise",
        key=key,
        json={"content": "Alice moved to Porto", "reason": "she moved again"},
    )
    assert revised.status_code == 200, revised.text
    new = revised.json()
    assert new["content"] == "Alice moved to Porto" and new["id"] != node["id"]
    old = api.get(f"{base}/memories/{node['id']}", key=key).json()
    assert (old["status"], old["superseded_by"]) == ("superseded", new["id"])
    versions = api.get(f"{base}/memories/{new['id']}/lineage", key=key).json()
    assert [v["id"] for v in versions] == [node["id"], new["id"]]

    edge = api.post(
        f"{base}/edges", key=key, json={"src": ids[0], "dst": ids[1], "relation": "supports"}
    )
    assert edge.status_code == 201, edge.text
    assert (edge.json()["src"], edge.json()["relation"]) == (ids[0], "supports")

    forgotten = api.post(
        f"{base}/memories/{ids[4]}/forget", key=key, json={"reason": "wrong"}
    ).json()
    assert (forgotten["id"], forgotten["status"]) == (ids[4], "tombstoned")
    assert api.get(f"{base}/memories/{ids[4]}", key=key).json()["status"] == "tombstoned"

    redacted = api.post(
        f"{base}/memories/{ids[3]}/redact", key=key, json={"reason": "asked to erase"}
    )
    assert redacted.status_code == 200, redacted.text
    assert redacted.json()["status"] == "redacted" and redacted.json()["content"] != "fact 3"
    # A forgotten or erased memory cannot be revised: 409, with what to do.
    conflict = api.post(
        f"{base}/memories/{ids[4]}/revise", key=key, json={"content": "x", "reason": "r"}
    )
    problem(conflict, 409)
    stale = api.post(
        f"{base}/memories/{node['id']}/forget", key=key, json={"reason": "old version"}
    )
    assert problem(stale, 409, "superseded")["current_id"] == new["id"]


def test_reading_routes(api, tenant):
    name, key = tenant
    base = f"/v1/namespaces/{name}"
    for content in ("Alice moved to Lisbon", "Bob likes tea", "Alice works at a bakery"):
        api.post(f"{base}/memories", key=key, json={"content": content})
    hits = api.post(f"{base}/recall", key=key, json={"text": "where does Alice live", "k": 2})
    assert hits.status_code == 200, hits.text
    assert len(hits.json()) == 2 and "Alice" in hits.json()[0]["node"]["content"]
    assert "instruction_signals" in hits.json()[0]

    activation = api.post(f"{base}/activate", key=key, json={"query": "Alice", "limit": 5})
    assert activation.status_code == 200, activation.text
    assert "working_memory" in activation.json() and "background" not in activation.json()
    full = api.post(
        f"{base}/activate", key=key, params={"background": "true"}, json={"query": "Alice"}
    )
    assert "background" in full.json()

    packet = api.post(f"{base}/context", key=key, json={"query": "Alice", "budget_tokens": 500})
    assert packet.status_code == 200, packet.text
    body = packet.json()
    assert {s["name"] for s in body["sections"]} and isinstance(body["text"], str)
    assert body["tokens_used"] <= 500

    summary = api.get(f"{base}/status", key=key)
    assert summary.status_code == 200, summary.text
    assert summary.json()["namespace"] == name


def test_lifecycle_routes(api, tenant):
    name, key = tenant
    base = f"/v1/namespaces/{name}"
    record = {"op": "record_short_term", "anatomy": anatomy("Maya", "Maya is allergic to peanuts")}
    receipt = api.post(f"{base}/apply", key=key, json={"ops": [record], "phase": "rumination"})
    assert receipt.status_code == 200, receipt.text
    assert receipt.json()["applied"] and receipt.json()["actor"].startswith("key:")
    # A batch the law rejects: answered with the reasons, nothing written.
    refused = api.post(
        f"{base}/apply", key=key, json={"ops": [{"op": "no_such_op"}], "phase": "wake"}
    ).json()
    assert refused["applied"] is False and refused["results"][0]["outcome"] == "rejected"
    assert refused["results"][0]["reason"]

    slept = api.post(f"{base}/sleep", key=key, json={})
    assert slept.status_code == 200, slept.text
    assert slept.json()["phase"] == "sleep"

    crystallize = {
        "op": "crystallize_identity",
        "anatomy": anatomy("self", "I tell the truth"),
        "content": "I tell the truth, even when it costs",
    }
    for content in (crystallize["content"], "I tell the truth, kindly"):
        operation = {**crystallize, "content": content}
        propose = {"op": "propose", "operation": operation, "rationale": "r", "evidence": ["t:3"]}
        queued = api.post(f"{base}/apply", key=key, json={"ops": [propose], "phase": "wake"})
        assert queued.json()["results"][0]["proposal_id"], queued.text
    pending = api.get(f"{base}/proposals", key=key).json()
    assert [p["status"] for p in pending] == ["pending", "pending"]
    first, second = pending[0]["id"], pending[1]["id"]
    accepted = api.post(f"{base}/proposals/{first}/accept", key=key, json={"note": "ok"})
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["applied"]
    rejected = api.post(f"{base}/proposals/{second}/reject", key=key, json={"reason": "dup"})
    assert rejected.status_code == 200, rejected.text
    assert rejected.json()["status"] == "rejected"
    assert rejected.json()["decided_by"].startswith("key:")  # the key decided, not the body
    assert api.get(f"{base}/proposals", key=key).json() == []
    again = api.post(f"{base}/proposals/{second}/reject", key=key, json={"reason": "dup"})
    problem(again, 409)
    problem(api.get(f"{base}/proposals", key=key, params={"status": "accepted"}), 422)


def test_remember_twice_is_200_with_the_same_node(api, tenant):
    name, key = tenant
    url = f"/v1/namespaces/{name}/memories"
    first = api.post(url, key=key, json={"content": "same words"})
    second = api.post(url, key=key, json={"content": "same words"})
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]


def test_health_openapi_and_docs(api):
    assert api.get("/healthz").json() == {"status": "ok"}
    ready = api.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    spec = api.get("/openapi.json").json()
    paths = spec["paths"]
    for route in (
        "/v1/namespaces/{namespace}/memories",
        "/v1/namespaces/{namespace}/recall",
        "/v1/namespaces/{namespace}/proposals/{proposal_id}/accept",
    ):
        assert route in paths, sorted(paths)
    # The library's models are the schemas.
    assert {"MemoryInput", "Node", "Hit", "RecallQuery", "Receipt"} <= set(
        spec["components"]["schemas"]
    )
    assert api.get("/docs").status_code == 200
    problem(api.get("/no/such/route"), 404, "no-route")


# --- bad input: problem+json, nothing written ------------------------------------------

NODE = "{node}"
BAD_REQUESTS = [
    ("POST", "/memories", {"content": "x", "kind": "nonsense"}),
    ("POST", "/memories", {"content": "x", "importance": 7}),
    ("POST", "/memories", {"content": "x", "unknown_field": 1}),
    ("POST", "/memories", {"content": ""}),
    ("POST", "/memories", {"content": "nul \x00 inside"}),
    (
        "POST",
        "/memories",
        {"content": "x", "valid_from": "2026-01-02T00:00:00Z", "valid_to": "2026-01-01T00:00:00Z"},
    ),
    ("POST", "/memories/batch", {"items": [{"content": "fine"}, {"content": "x", "layer": 99}]}),
    ("POST", "/memories/batch", {"items": "not a list"}),
    ("GET", "/memories?limit=0", None),
    ("GET", "/memories?cursor=-1", None),
    ("GET", "/memories?kind=nonsense", None),
    ("GET", "/memories?tag=" + "x" * 65, None),
    ("GET", "/memories/not-a-number", None),
    ("GET", "/memories/99999999999999999999999/lineage", None),
    ("POST", f"/memories/{NODE}/revise", {"content": "y"}),
    (
        "POST",
        f"/memories/{NODE}/revise",
        {"content": "y", "reason": "r", "changes": {"importance": 5}},
    ),
    ("POST", f"/memories/{NODE}/forget", {}),
    ("POST", f"/memories/{NODE}/forget", {"reason": ""}),
    ("POST", f"/memories/{NODE}/redact", {"reason": "r", "versions": "some"}),
    ("POST", "/edges", {"src": NODE, "dst": NODE, "weight": 2}),
    ("POST", "/edges", {"src": "a", "dst": 1}),
    ("POST", "/recall", {"text": ""}),
    ("POST", "/recall", {"text": "q", "k": 0}),
    ("POST", "/recall", {"text": "q", "mode": "telepathic"}),
    ("POST", "/activate", {}),
    ("POST", "/activate", {"query": "q", "depth": 99}),
    ("POST", "/context", {"query": "q", "budget_tokens": 1}),
    ("POST", "/context", {"query": "q", "allocation": {"nonsense": 0.5}}),
    ("POST", "/apply", {"ops": [], "phase": "daydream"}),
    ("POST", "/apply", {"ops": "x", "phase": "wake"}),
    ("POST", "/sleep", {"older_than_seconds": -1}),
    ("POST", "/proposals/1/accept", {"note": ""}),
    ("POST", "/proposals/1/reject", {}),
    ("POST", "/memories", "not json at all"),
]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    BAD_REQUESTS,
    ids=[f"{m} {p} {b!r}"[:70] for m, p, b in BAD_REQUESTS],
)
def test_bad_input_is_a_problem_and_writes_nothing(api, tenant, database_url, method, path, body):
    name, key = tenant
    base = f"/v1/namespaces/{name}"
    node = api.post(f"{base}/memories", key=key, json={"content": "a memory"}).json()["id"]
    path = path.replace(NODE, str(node))
    if isinstance(body, dict):
        body = {k: (node if v == NODE else v) for k, v in body.items()}
    before = row_counts(database_url)
    if isinstance(body, str):
        response = api.request(
            method, base + path, key=key, content=body, headers={"content-type": "application/json"}
        )
    else:
        response = api.request(method, base + path, key=key, json=body)
    found = problem(response, 422)
    assert found["detail"]
    assert row_counts(database_url) == before


def test_content_too_large_is_413(api, tenant, database_url, store):
    name, key = tenant
    before = row_counts(database_url)
    big = "x" * (store.settings.max_content_bytes + 1)
    found = problem(
        api.post(f"/v1/namespaces/{name}/memories", key=key, json={"content": big}),
        413,
        "content-too-large",
    )
    assert found["limit"] == store.settings.max_content_bytes
    assert row_counts(database_url) == before


def test_a_body_over_the_cap_is_413_before_it_is_read(portal, store, tenant):
    from tests.server.conftest import make_api

    name, key = tenant
    small = make_api(portal, store, serve_max_body_bytes=1024)
    try:
        response = small.post(
            f"/v1/namespaces/{name}/memories", key=key, json={"content": "y" * 4096}
        )
        problem(response, 413, "body-too-large")
    finally:
        small.close()


def test_a_closed_store_is_503(portal, database_url, key_for):
    from memstore import MemoryStore
    from memstore.embedding import HashingEmbedder
    from tests.server.conftest import make_api

    store = MemoryStore.open(database_url, embedder=HashingEmbedder())
    down = make_api(portal, store)
    store.close()
    try:
        problem(down.get("/readyz"), 503, "database-unavailable")
        problem(
            down.get("/v1/namespaces/x/memories", key="msk_" + "a" * 43),
            503,
            "database-unavailable",
        )
    finally:
        down.close()


def test_graph_reads_over_rest(api, store):
    from memstore.keys import create_key

    key = create_key(store.engine, namespace="rest-graph", scopes=["read", "write"]).key
    base = "/v1/namespaces/rest-graph"
    ids = [
        api.post(f"{base}/memories", key=key, json={"content": text}).json()["id"]
        for text in ("Alice plays the violin", "Lisbon is by the sea", "Portugal is in Europe")
    ]
    api.post(f"{base}/edges", key=key, json={"src": ids[0], "dst": ids[1], "relation": "lives_in"})
    api.post(f"{base}/edges", key=key, json={"src": ids[1], "dst": ids[2], "relation": "in"})
    edges = api.get(f"{base}/memories/{ids[1]}/edges?direction=in", key=key)
    assert edges.status_code == 200, edges.text
    assert [(e["src"], e["relation"]) for e in edges.json()] == [(ids[0], "lives_in")]
    near = api.get(f"{base}/memories/{ids[0]}/neighbours?depth=2", key=key).json()
    assert [(n["node"]["id"], n["distance"]) for n in near] == [(ids[1], 1), (ids[2], 2)]
    bad = api.get(f"{base}/memories/{ids[0]}/neighbours?depth=4", key=key)
    assert bad.status_code == 422
    missing = api.get(f"{base}/memories/999999/edges", key=key)
    assert missing.status_code == 404
