"""When the coordinator names a queue no worker polls (a pure function of the answers and
the clock): after the grace, once, and again only after a worker came and went."""

from __future__ import annotations

from factory.distributed.pollers import IdleWatch, message


def test_a_queue_is_named_after_the_grace_and_once() -> None:
    watch = IdleWatch(grace_s=10)
    assert watch.seen({"q"}, set(), 0) == []
    assert watch.seen({"q"}, set(), 9.9) == []
    assert watch.seen({"q"}, set(), 10) == ["q"]
    assert watch.seen({"q"}, set(), 60) == []  # once


def test_a_served_queue_is_never_named_and_a_lost_worker_is_named_again() -> None:
    watch = IdleWatch(grace_s=10)
    assert watch.seen(set(), {"q"}, 0) == [] and watch.seen(set(), {"q"}, 30) == []  # twin
    assert watch.seen({"q"}, set(), 31) == [] and watch.seen({"q"}, set(), 41) == ["q"]
    watch.seen(set(), {"q"}, 50)  # a worker came
    assert watch.seen({"q"}, set(), 51) == [] and watch.seen({"q"}, set(), 61) == ["q"]


def test_the_message_names_the_command_that_serves_the_queue() -> None:
    text = message("gpu", "127.0.0.1:7233")
    assert "'gpu'" in text and "factory worker --temporal 127.0.0.1:7233 --task-queue gpu" in text
