"""The contract the MCP shell builds on: keys, authenticate, Principal, create_app."""

from __future__ import annotations

import pytest

from memstore.errors import AuthenticationError, PermissionDeniedError
from memstore.keys import create_key, revoke_key
from memstore.server.auth import authenticate


def test_a_key_authenticates_and_reaches_its_namespace_only(store):
    created = create_key(store.engine, namespace="alpha", scopes=["read"])
    principal = authenticate(store, f"Bearer {created.key}")
    assert principal.key_id == created.id
    assert principal.allows("alpha") and not principal.allows("alpha2")
    principal.require("read")
    with pytest.raises(PermissionDeniedError):
        principal.require("write")


def test_a_revoked_key_is_refused(store):
    created = create_key(store.engine, namespace_prefix="t/", scopes=["write"])
    principal = authenticate(store, f"Bearer {created.key}")
    assert principal.allows("t/alice") and not principal.allows("u/alice")
    assert principal.has("read")  # write implies read
    revoke_key(store.engine, created.id)
    with pytest.raises(AuthenticationError) as caught:
        authenticate(store, f"Bearer {created.key}")
    assert caught.value.reason == "revoked"
    assert created.key not in str(caught.value)


def test_health_and_a_remember(api, tenant):
    name, key = tenant
    assert api.get("/healthz").json() == {"status": "ok"}
    assert api.get("/readyz").status_code == 200
    first = api.post(f"/v1/namespaces/{name}/memories", key=key, json={"content": "hello"})
    assert first.status_code == 201, first.text
    again = api.post(f"/v1/namespaces/{name}/memories", key=key, json={"content": "hello"})
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
