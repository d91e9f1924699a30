"""The ordered lane (controller.lane): order, merging, errors, and applying in the
caller's thread only when nothing is queued or being applied."""

from __future__ import annotations

import threading

import pytest

from controller.lane import Lane


def held_merging_lane():
    """A merging lane whose first item ([0]) is held in ``apply`` until ``gate`` is set:
    (lane, gate, seen batches, the future of [0]), with [0] already being applied."""
    gate, entered, seen = threading.Event(), threading.Event(), []

    def apply(items):
        if items == [0]:
            entered.set()
            gate.wait(5)
        seen.append(items)

    lane = Lane("t", apply, merge=lambda batch: [x for b in batch for x in b])
    first = lane.put([0])
    assert entered.wait(5)
    return lane, gate, seen, first


def test_items_are_applied_in_order_and_merged_while_the_worker_is_busy():
    lane, gate, seen, first = held_merging_lane()
    futures = [first] + [lane.put([i]) for i in range(1, 4)]
    gate.set()
    lane.close()
    assert seen[0] == [0] and [x for b in seen for x in b] == [0, 1, 2, 3]
    assert seen == [[0], [1, 2, 3]] and all(f.done() for f in futures)


def test_an_idle_lane_applies_in_the_callers_thread():
    threads = []
    lane = Lane("t", lambda item: threads.append(threading.current_thread().name) or item * 2)
    assert lane.apply_if_idle(21) == (True, 42)
    assert threads == [threading.current_thread().name]
    lane.close()


def test_a_busy_lane_refuses_to_apply_ahead_of_what_is_queued():
    gate, seen = threading.Event(), []
    lane = Lane("t", lambda item: (gate.wait(5) if item == "slow" else None, seen.append(item)))
    lane.put("slow")
    queued = lane.put("queued")
    assert lane.apply_if_idle("now") == (False, None)  # would overtake both
    gate.set()
    queued.result(5)
    assert lane.apply_if_idle("now")[0] is True
    lane.close()
    assert seen == ["slow", "queued", "now"]


def test_a_failure_fails_its_caller_and_is_kept_for_later_ones():
    def apply(item):
        raise OSError(f"no {item}")

    lane = Lane("t", apply)
    with pytest.raises(OSError, match="no a"):
        lane.put("a").result(5)
    with pytest.raises(OSError, match="no b"):
        lane.apply_if_idle("b")
    assert str(lane.error) == "no a"
    lane.close()


def test_nothing_queued_after_a_last_item_is_merged_with_it():
    lane, gate, seen, _first = held_merging_lane()
    lane.put([1])
    urgent = lane.put([2], last=True)
    lane.put([3])
    gate.set()
    urgent.result(5)
    lane.close()
    assert seen == [[0], [1, 2], [3]]  # [3] waited for the next batch
