"""Request/reply matching, error routing and timeouts of OFSession (fake datapath)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from controller.southbound.base import SouthboundError
from controller.southbound.of_session import OFSession


class FakeDP:
    """Assigns xids and records sent messages."""

    def __init__(self):
        self.xid, self.sent = 100, []

    def set_xid(self, msg):
        self.xid += 1
        msg.xid = self.xid

    def send_msg(self, msg):
        self.sent.append(msg)
        return True


def _msg():
    return SimpleNamespace(xid=None)


def test_multipart_reply_is_collected_until_the_last_part():
    sess = OFSession(FakeDP(), "l1")
    xid, waiter = sess.start_request(_msg())
    sess.on_reply(SimpleNamespace(xid=xid, part=1), more=True)
    assert not waiter.done.is_set()
    sess.on_reply(SimpleNamespace(xid=999, part=9), more=False)  # someone else's
    sess.on_reply(SimpleNamespace(xid=xid, part=2), more=False)
    assert [r.part for r in sess.finish(xid, waiter, 1, "stats")] == [1, 2]


def test_no_reply_times_out_with_the_switch_name():
    sess = OFSession(FakeDP(), "s2")
    with pytest.raises(SouthboundError, match="s2: no reply to barrier within 0.1 s"):
        sess.request(_msg(), 0.1, "barrier")


def test_errors_of_writes_are_raised_by_check_errors_only_for_their_xids():
    sess = OFSession(FakeDP(), "l1")
    xids = sess.send_writes([_msg(), _msg()])
    sess.on_error(SimpleNamespace(xid=xids[1], type=12, code=2))
    sess.check_errors([])  # nothing of ours
    with pytest.raises(SouthboundError, match="l1: 1 write.*type=12 code=2"):
        sess.check_errors(xids)
    sess.check_errors(xids)  # reported once


def test_error_reply_to_a_request_fails_that_request():
    sess = OFSession(FakeDP(), "l1")
    xid, waiter = sess.start_request(_msg())
    sess.on_error(SimpleNamespace(xid=xid, type=1, code=1))
    with pytest.raises(SouthboundError, match="stats failed: error type=1"):
        sess.finish(xid, waiter, 1, "stats")


def test_close_wakes_waiters_at_once_and_refuses_new_sends():
    sess = OFSession(FakeDP(), "l1")
    xid, waiter = sess.start_request(_msg())
    threading.Timer(0.05, sess.close).start()
    with pytest.raises(SouthboundError, match="switch disconnected"):
        sess.finish(xid, waiter, 30, "barrier")
    with pytest.raises(SouthboundError, match="not connected"):
        sess.send_writes([_msg()])
