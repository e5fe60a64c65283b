"""Reading a written profile's tree in the GPU tests."""
from __future__ import annotations


def find(node: dict, name: str) -> dict | None:
    """The first node named `name` under `node` (itself included), depth first."""
    if node["frame"]["name"] == name:
        return node
    for child in node["children"]:
        hit = find(child, name)
        if hit is not None:
            return hit
    return None
