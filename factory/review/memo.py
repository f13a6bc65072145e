"""Values remembered for the very objects they were computed from (SPEC R, speed).

Review states are frozen models: a state's revision and whether it passes the invariants
never change. A finalize chain asks both questions of the same object more than once (the
machine checks a successor, then the store checks it again before writing it; the
revision of a state written is asked again when it is the predecessor of the next
commit). :class:`ByIdentity` answers the repeat from the first computation. An entry keeps
its object alive, so an ``id`` cannot be reused by another object while it is remembered;
an object that is equal but not the same one is computed afresh.
"""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ByIdentity(Generic[K, V]):
    """At most ``size`` (object, value) pairs, looked up by object identity."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: dict[int, tuple[K, V]] = {}

    def get(self, key: K) -> V | None:
        hit = self._items.get(id(key))
        return hit[1] if hit is not None and hit[0] is key else None

    def put(self, key: K, value: V) -> None:
        if len(self._items) >= self._size:
            self._items.clear()  # no iteration: safe if another thread adds meanwhile
        self._items[id(key)] = (key, value)
