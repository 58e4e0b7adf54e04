"""Keys, scopes and tenants: who may reach what, and what a refusal gives away (nothing)."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import psycopg
import pytest

from memstore.errors import AuthenticationError, InvalidInputError
from memstore.keys import check_key, create_key, list_keys, revoke_key
from memstore.server.problems import PROBLEM_JSON, TYPE_PREFIX
from tests.conftest import row_counts
from tests.server.conftest import make_api


def problem(response, status: int, name: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM_JSON
    body: dict[str, Any] = response.json()
    if name is not None:
        assert body["type"] == TYPE_PREFIX + name, body
    return body


# Every route, with a body that would succeed: (method, path under the namespace, body).
def routes(node: int, proposal: int = 1) -> list[tuple[str, str, dict[str, object] | None]]:
    return [
        ("POST", "/memories", {"content": "intruder"}),
        ("POST", "/memories/batch", {"items": [{"content": "intruder"}]}),
        ("GET", "/memories", None),
        ("GET", f"/memories/{node}", None),
        ("GET", f"/memories/{node}/lineage", None),
        ("POST", f"/memories/{node}/revise", {"content": "intruder", "reason": "r"}),
        ("POST", f"/memories/{node}/forget", {"reason": "r"}),
        ("POST", f"/memories/{node}/redact", {"reason": "r"}),
        ("POST", "/edges", {"src": node, "dst": node}),
        ("POST", "/recall", {"text": "secret"}),
        ("POST", "/activate", {"seeds": [node]}),
        ("POST", "/context", {"query": "secret"}),
        ("POST", "/apply", {"ops": [], "phase": "wake"}),
        ("POST", "/sleep", {}),
        ("GET", "/proposals", None),
        ("POST", f"/proposals/{proposal}/accept", {}),
        ("POST", f"/proposals/{proposal}/reject", {"reason": "r"}),
        ("GET", "/status", None),
    ]


ROUTE_NAMES = [f"{m} {p}" for m, p, _ in routes(0)]


@pytest.fixture(scope="module")
def two(store, api):
    """Tenants A and B, each with an admin key and one memory."""
    out = []
    for letter in "AB":
        name = f"{letter}-{uuid.uuid4().hex[:6]}"
        key = create_key(store.engine, namespace=name, scopes=["admin"]).key
        node = api.post(
            f"/v1/namespaces/{name}/memories", key=key, json={"content": f"{letter} secret"}
        ).json()["id"]
        out.append((name, key, node))
    return out


@pytest.mark.parametrize("index", range(len(ROUTE_NAMES)), ids=ROUTE_NAMES)
def test_a_key_for_a_on_bs_path_is_404_and_changes_nothing(api, two, database_url, index):
    (_, key_a, _), (name_b, _, node_b) = two
    method, path, body = routes(node_b)[index]
    before = row_counts(database_url)
    response = api.request(method, f"/v1/namespaces/{name_b}{path}", key=key_a, json=body)
    problem(response, 404)
    assert "secret" not in response.text
    assert row_counts(database_url) == before


@pytest.mark.parametrize(
    "index",
    [i for i, name in enumerate(ROUTE_NAMES) if "/0" in name or name.endswith("/edges")],
    ids=[n for n in ROUTE_NAMES if "/0" in n or n.endswith("/edges")],
)
def test_bs_ids_under_as_path_are_not_found(api, two, database_url, index):
    (name_a, key_a, node_a), (_, _, node_b) = two
    method, path, body = routes(node_b, proposal=node_b)[index]
    if path == "/edges":
        body = {"src": node_a, "dst": node_b}
    before = row_counts(database_url)
    response = api.request(method, f"/v1/namespaces/{name_a}{path}", key=key_a, json=body)
    body_found = problem(response, 404)
    assert "B secret" not in response.text
    assert body_found["type"] in {
        TYPE_PREFIX + "node-not-found",
        TYPE_PREFIX + "proposal-not-found",
    }
    assert row_counts(database_url) == before


def test_bs_ids_as_activation_seeds_under_as_path_find_nothing_of_b(api, two):
    (name_a, key_a, _), (_, _, node_b) = two
    response = api.post(f"/v1/namespaces/{name_a}/activate", key=key_a, json={"seeds": [node_b]})
    assert response.status_code in (404, 200), response.text
    assert "B secret" not in response.text


def test_a_prefix_key_reaches_its_prefix_only(api, store):
    prefix = f"tenant-{uuid.uuid4().hex[:6]}/"
    key = create_key(store.engine, namespace_prefix=prefix, scopes=["write"]).key
    for user in ("alice", "bob"):
        made = api.post(
            f"/v1/namespaces/{prefix}{user}/memories", key=key, json={"content": f"{user} note"}
        )
        assert made.status_code == 201, made.text
        assert made.json()["namespace"] == prefix + user
    listed = api.get(f"/v1/namespaces/{prefix}alice/memories", key=key).json()["items"]
    assert [n["content"] for n in listed] == ["alice note"]
    for outside in (prefix.rstrip("/"), prefix[:-2] + "X/alice", "other/alice", "%", "_"):
        problem(api.get(f"/v1/namespaces/{outside}/memories", key=key), 404)


def test_like_wildcards_in_a_prefix_are_plain_characters(api, store):
    key = create_key(store.engine, namespace_prefix="a_b%/", scopes=["read"]).key
    problem(api.get("/v1/namespaces/aXbY/memories", key=key), 404)
    problem(api.get("/v1/namespaces/axb%/c/memories", key=key), 404)
    assert api.get("/v1/namespaces/a_b%/c/memories", key=key).status_code == 200


@pytest.mark.parametrize(
    ("authorization", "reason"),
    [
        (None, "missing"),
        ("", "missing"),
        ("Basic dXNlcjpwYXNz", "malformed"),
        ("Bearer", "malformed"),
        ("Bearer not-a-memstore-key", "malformed"),
        ("Bearer msk_" + "A" * 43, "unknown"),
    ],
)
def test_no_or_a_bad_key_is_401(api, two, database_url, authorization, reason):
    (name_a, _, _), _ = two
    headers = {} if authorization is None else {"Authorization": authorization}
    before = row_counts(database_url)
    response = api.post(
        f"/v1/namespaces/{name_a}/memories", headers=headers, json={"content": "anonymous"}
    )
    found = problem(response, 401, "unauthenticated")
    assert found["reason"] == reason
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert row_counts(database_url) == before


def test_a_key_with_the_right_lookup_but_wrong_secret_is_unknown(api, store, two):
    (name_a, key_a, _), _ = two
    forged = key_a[:-4] + ("AAAA" if not key_a.endswith("AAAA") else "BBBB")
    found = problem(api.get(f"/v1/namespaces/{name_a}/status", key=forged), 401)
    assert found["reason"] == "unknown"


def test_revoked_and_expired_keys_are_refused(api, store):
    name = f"r-{uuid.uuid4().hex[:6]}"
    revoked = create_key(store.engine, namespace=name)
    expiring = create_key(store.engine, namespace=name, expires_in_days=1.5 / 86400)
    url = f"/v1/namespaces/{name}/memories"
    assert api.get(url, key=revoked.key).status_code == 200
    revoke_key(store.engine, revoked.id, reason="leaked")
    assert problem(api.get(url, key=revoked.key), 401)["reason"] == "revoked"
    time.sleep(1.6)
    assert problem(api.get(url, key=expiring.key), 401)["reason"] == "expired"
    # Revoking twice is a no-op; the record stays.
    again = revoke_key(store.engine, revoked.id)
    assert again.revoked_at is not None
    with pytest.raises(Exception, match="no API key"):
        revoke_key(store.engine, 10**12)


SCOPED = [
    (["read"], "POST", "/memories", {"content": "x"}, 403),
    (["read"], "GET", "/memories", None, 200),
    (["write"], "GET", "/memories", None, 200),  # write implies read
    (["write"], "POST", "/memories/{node}/redact", {"reason": "r"}, 403),
    (["erase"], "POST", "/memories/{node}/redact", {"reason": "r"}, 200),
    (["erase"], "GET", "/memories", None, 403),
    (["review"], "GET", "/proposals", None, 200),
    (["review"], "GET", "/memories", None, 403),
    (["read"], "POST", "/proposals/1/accept", {}, 403),
    (["write"], "POST", "/proposals/1/reject", {"reason": "r"}, 403),
]


@pytest.mark.parametrize(
    ("scopes", "method", "path", "body", "status"),
    SCOPED,
    ids=[f"{'+'.join(s)} {m} {p}" for s, m, p, _, _ in SCOPED],
)
def test_scopes(api, store, database_url, scopes, method, path, body, status):
    name = f"s-{uuid.uuid4().hex[:6]}"
    admin = create_key(store.engine, namespace=name, scopes=["admin"]).key
    node = api.post(f"/v1/namespaces/{name}/memories", key=admin, json={"content": "m"}).json()
    key = create_key(store.engine, namespace=name, scopes=scopes).key
    before = row_counts(database_url)
    response = api.request(
        method,
        f"/v1/namespaces/{name}{path.replace('{node}', str(node['id']))}",
        key=key,
        json=body,
    )
    assert response.status_code == status, response.text
    if status == 403:
        problem(response, 403, "forbidden")
        assert row_counts(database_url) == before


def test_the_rate_limit_answers_429_with_retry_after(portal, store):
    limited = make_api(portal, store, serve_rate_limit=0.5, serve_rate_burst=2)
    name = f"rl-{uuid.uuid4().hex[:6]}"
    key = create_key(store.engine, namespace=name).key
    other = create_key(store.engine, namespace=name).key
    try:
        url = f"/v1/namespaces/{name}/memories"
        assert [limited.get(url, key=key).status_code for _ in range(2)] == [200, 200]
        response = limited.get(url, key=key)
        found = problem(response, 429, "rate-limited")
        assert int(response.headers["retry-after"]) >= 1 and found["retry_after"] >= 1
        assert limited.get(url, key=other).status_code == 200  # per key
    finally:
        limited.close()


def test_the_limit_is_off_by_default(api, store):
    name = f"nl-{uuid.uuid4().hex[:6]}"
    key = create_key(store.engine, namespace=name).key
    assert {api.get(f"/v1/namespaces/{name}/memories", key=key).status_code for _ in range(30)} == {
        200
    }


def test_a_secret_never_appears_after_creation(api, store, caplog):
    caplog.set_level(logging.DEBUG)
    name = f"sec-{uuid.uuid4().hex[:6]}"
    created = create_key(store.engine, namespace=name, scopes=["read"])
    secret = created.key
    texts = []
    base = f"/v1/namespaces/{name}"
    for response in (
        api.get(f"{base}/memories", key=secret),
        api.post(f"{base}/memories", key=secret, json={"content": "x"}),  # 403
        api.get("/v1/namespaces/other/memories", key=secret),  # 404
        api.get(f"{base}/memories", key=secret[:-1]),  # 401
        api.get(f"{base}/memories", headers={"Authorization": secret}),  # malformed
    ):
        texts.append(response.text + str(response.headers))
    revoke_key(store.engine, created.id)
    texts.append(api.get(f"{base}/memories", key=secret).text)
    listed = [key.model_dump_json() for key in list_keys(store.engine)]
    assert all(secret not in text for text in texts)
    assert all(secret not in text for text in listed)
    assert secret[4:] not in caplog.text and secret[:-1] not in caplog.text
    with psycopg.connect(store._url) as conn:
        dumped = conn.execute("SELECT k::text FROM memstore.api_keys k").fetchall()
    assert all(secret not in row[0] and secret[4:20] not in row[0] for row in dumped)


def test_key_input_is_validated(store, database_url):
    before = row_counts(database_url)
    for bad in (
        {},  # no binding
        {"namespace": "a", "namespace_prefix": "b/"},  # both
        {"namespace": "a", "scopes": ["root"]},
        {"namespace": "a", "scopes": []},
        {"namespace": " padded "},
        {"namespace": "a", "expires_in_days": 0},
        {"namespace_prefix": ""},
    ):
        with pytest.raises(InvalidInputError):
            create_key(store.engine, **bad)
    assert row_counts(database_url) == before
    with pytest.raises(AuthenticationError):
        check_key(store.engine, None)


def test_keys_are_append_only_and_hidden_from_the_service(store, app_url):
    created = create_key(store.engine, namespace="ao")
    with psycopg.connect(store._url) as owner:
        for statement in (
            "UPDATE memstore.api_keys SET scopes = '{admin}'",
            "DELETE FROM memstore.api_keys",
            "TRUNCATE memstore.api_key_revocations",
        ):
            with pytest.raises(psycopg.Error) as caught:
                owner.execute(statement)
            assert caught.value.sqlstate == "MS001"
            owner.rollback()
    with psycopg.connect(app_url) as app:
        for statement in (
            "SELECT * FROM memstore.api_keys",
            "SELECT * FROM memstore.api_key_revocations",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app.execute(statement)
            app.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute(
                "INSERT INTO memstore.api_key_revocations (key_id, actor) VALUES (%s, 'x')",
                (created.id,),
            )


def test_the_service_role_authenticates_through_the_function(store, app_url):
    """memstore serve connected as memstore_app: keys work, RLS holds (docs/server.md)."""
    from memstore import MemoryStore
    from memstore.embedding import HashingEmbedder
    from memstore.server.auth import authenticate

    created = create_key(store.engine, namespace="as-app", scopes=["write"])
    with MemoryStore.open(app_url, embedder=HashingEmbedder()) as confined:
        principal = authenticate(confined, f"Bearer {created.key}")
        assert principal.allows("as-app")
        revoke_key(store.engine, created.id)
        with pytest.raises(AuthenticationError):
            authenticate(confined, f"Bearer {created.key}")


def test_the_key_cache_trusts_a_checked_key_for_its_ttl_only(portal, store):
    cached = make_api(portal, store, serve_key_cache_seconds=1.0)
    name = f"kc-{uuid.uuid4().hex[:6]}"
    created = create_key(store.engine, namespace=name)
    url = f"/v1/namespaces/{name}/memories"
    try:
        assert cached.get(url, key=created.key).status_code == 200
        revoke_key(store.engine, created.id)
        assert cached.get(url, key=created.key).status_code == 200  # within the TTL
        time.sleep(1.1)
        assert problem(cached.get(url, key=created.key), 401)["reason"] == "revoked"
        # Failures are never cached, and another header is another entry.
        assert cached.get(url, key=created.key + "x").status_code == 401
    finally:
        cached.close()


def test_the_key_cache_never_serves_an_expired_key(portal, store):
    cached = make_api(portal, store, serve_key_cache_seconds=600)
    name = f"ke-{uuid.uuid4().hex[:6]}"
    created = create_key(store.engine, namespace=name, expires_in_days=1.0 / 86400)
    url = f"/v1/namespaces/{name}/memories"
    try:
        assert cached.get(url, key=created.key).status_code == 200
        time.sleep(1.2)
        assert problem(cached.get(url, key=created.key), 401)["reason"] == "expired"
    finally:
        cached.close()
