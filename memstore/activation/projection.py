"""The compact projection of an activation: bounded bytes, whatever the neighbourhood.

A neighbourhood can be huge (a hub with 10,000 neighbours); an agent's context
cannot. The projection keeps the strongest working-memory items with
snippets and turns everything else into pointer stubs the agent can follow
up by id, then drops stubs (weakest first) and shortens snippets until the
serialised JSON fits ``max_bytes``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memstore.errors import InvalidInputError

if TYPE_CHECKING:
    from memstore.activation.model import Activation, Reached

ELLIPSIS = "…"
# The smallest useful answer: an object with empty lists and counts.
MIN_MAX_BYTES = 256


def size(document: dict[str, Any]) -> int:
    """Bytes of the document as :func:`json.dumps` writes it (UTF-8, no ASCII escaping)."""
    return len(json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode())


def snippet(text: str, chars: int) -> str:
    """At most ``chars`` characters (an ellipsis marks a cut); never splits a character."""
    if len(text) <= chars:
        return text
    if chars <= 0:
        return ""
    return text[: chars - 1] + ELLIPSIS


def project(
    activation: Activation, *, top_k: int, snippet_chars: int, max_bytes: int
) -> dict[str, Any]:
    """See :meth:`memstore.activation.model.Activation.project`."""
    if top_k < 0 or snippet_chars < 0:
        raise InvalidInputError("top_k and snippet_chars must not be negative", field="top_k")
    if max_bytes < MIN_MAX_BYTES:
        raise InvalidInputError(f"max_bytes must be at least {MIN_MAX_BYTES}", field="max_bytes")
    items = activation.working_memory[:top_k]
    detailed = {item.node.id for item in items}
    top: list[dict[str, Any]] = [
        {
            "id": item.node.id,
            "score": round(item.score, 6),
            "label": item.node.label,
            "node_type": item.node.node_type,
            "tier": item.node.tier,
            "kind": item.node.kind,
            "snippet": item.node.content,
            "path": [step.node_id for step in item.path],
        }
        for item in items
    ]
    stubs = [
        {
            "id": reached.id,
            "label": reached.label,
            "node_type": reached.node_type,
            "tier": reached.tier,
            "edge": None
            if reached.via_edge is None
            else {
                "id": reached.via_edge,
                "relation": reached.via_relation,
                "from": reached.via_node,
            },
            "pointer": True,
        }
        for reached in activation.background  # strongest first
        if reached.id not in detailed
    ]
    document: dict[str, Any] = {
        "query": activation.query,
        "working_memory": top,
        "pointers": stubs,
        "omitted": 0,
    }
    chars = snippet_chars
    for entry in top:
        entry["snippet"] = snippet(entry["snippet"], chars)
    if activation.query is not None and size(document) > max_bytes:
        document["query"] = snippet(activation.query, 200)
    # Drop the weakest stubs first: halve the list until it fits, then add back.
    if size(document) > max_bytes and stubs:
        keep = _largest_fitting(document, "pointers", max_bytes)
        document["omitted"] += len(stubs) - keep
        document["pointers"] = stubs[:keep]
    # Still too big: shorten snippets, then drop the weakest detailed items.
    while size(document) > max_bytes and chars > 0:
        chars //= 2
        for entry in top:
            entry["snippet"] = snippet(entry["snippet"], chars)
    if size(document) > max_bytes and top:
        keep = _largest_fitting(document, "working_memory", max_bytes)
        document["omitted"] += len(top) - keep
        document["working_memory"] = top[:keep]
    if size(document) > max_bytes:  # only a huge query is left: cut it to what fits
        document["query"] = snippet(document["query"] or "", 40)
    assert size(document) <= max_bytes
    return document


def _largest_fitting(document: dict[str, Any], key: str, max_bytes: int) -> int:
    """The longest prefix of ``document[key]`` that keeps the document within ``max_bytes``.

    ``omitted`` is counted as if the whole list were dropped, so its digits never
    push a fitting document over the cap.
    """
    entries = document[key]
    trial = dict(document, omitted=document["omitted"] + len(entries))
    low, high = 0, len(entries)
    while low < high:
        middle = (low + high + 1) // 2
        trial[key] = entries[:middle]
        if size(trial) <= max_bytes:
            low = middle
        else:
            high = middle - 1
    return low


def _via(reached: Reached) -> dict[str, Any] | None:
    """The edge of the strongest path into a stub's node (None for a seed)."""
    if reached.via_edge is None:
        return None
    return {"id": reached.via_edge, "relation": reached.via_relation, "from": reached.via_node}
