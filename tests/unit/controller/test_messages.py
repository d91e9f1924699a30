"""The scheduling messages of the control API: every type survives its JSON wire form
unchanged, and malformed ones are refused naming the key."""

from __future__ import annotations

import json
import math

import pytest

from controller import messages as m
from controller.coflow_table import FlowRate
from controller.policies.interjob import InterJobSpec, JobClass
from workload.dag import Coflow, CoflowIdentity, CoflowType, Flow

CF = Coflow(
    "i0.ep.L1",
    (Flow("i0.ep.L1.0", "h11", "h21", 4096), Flow("i0.ep.L1.1", "h12", "h22", 8)),
    CoflowIdentity(CoflowType.EP, "job0", 0, 3, 1, "all_to_all", 2, "fwd", 1),
    deps=("c0",),
    release_s=0.5,
)
HOSTS = m.HostUpdates(
    (m.HostLevel("h11", 3, 2),),
    (m.HostRate("h11", 3, "h21", 12.5), m.HostRate("h12", 3, "h22", None)),
    (m.HostMark("h11", 3, 58), m.HostMark("h12", 3, 3, unpace=True)),
)
SAMPLES = [
    m.PolicySpec("sebf", {"x": 1}, {"a": 2}, {"a": 10.0}, ("/p/plugin.py",)),
    m.PolicySpec(
        "hermod",
        inter_job=InterJobSpec(
            "crux", (JobClass("a", 0, 1.5, (1, 2)), JobClass("b", 1, math.inf, (2,)))
        ),
    ),
    m.OpenJob(m.PolicySpec("static", static_levels={"i0.ep.L1": 4}), True, (CF,)),
    m.JobOpened({"i0.ep.L1": m.Assignment(5, 4)}, None),
    m.JobOpened(None, m.POLL_COUNTERS),
    m.Register(CF, 1.25, ("f1", "f2")),
    m.Registered(m.Assignment(7, 1), (FlowRate("h11", "h21", 40.0),), HOSTS),
    m.Registered(m.Assignment(58, 2, (("h11", 31), ("h12", 4)))),
    m.Registered(m.Assignment(9, 1, (("h11", 57),)), (), HOSTS, written=False),
    m.Unregister("i0.ep.L1", 2.5, ("f3",)),
    m.Progress(3.0, {"i0.ep.L1.0": 100}, ()),
    m.HostUpdates(),
    HOSTS,
    m.CloseJob(),
    m.JobReport(False, {"a": 1}, {"a": "(0, 1)"}, (0.001, 0.002), 3, 1),
]


@pytest.mark.parametrize("msg", SAMPLES, ids=lambda msg: type(msg).__name__)
def test_every_message_survives_its_wire_form(msg):
    wire = json.loads(json.dumps(msg.to_wire()))
    assert type(msg).from_wire(wire) == msg


def test_every_op_has_a_request_and_a_reply_type():
    assert (
        set(m.REQUESTS)
        == set(m.REPLIES)
        == {"open_job", "register", "unregister", "progress", "close_job"}
    )


def test_unknown_and_missing_keys_are_refused_by_name():
    wire = m.Unregister("c", 1.0).to_wire()
    with pytest.raises(ValueError, match=r"unregister\.colour: unknown key"):
        m.Unregister.from_wire({**wire, "colour": 1})
    del wire["now"]
    with pytest.raises(ValueError, match=r"unregister\.now: missing"):
        m.Unregister.from_wire(wire)
    bad_coflow = m.Register(CF, 0.0).to_wire()
    bad_coflow["coflow"]["flows"][0]["bytes"] = 0
    with pytest.raises(ValueError, match="register.coflow"):
        m.Register.from_wire(bad_coflow)


def test_a_registered_answer_gives_each_pair_its_paced_rate():
    reply = m.Registered(m.Assignment(1, 0), (FlowRate("h11", "h21", 40.0),))
    assert reply.pair_rate("h11", "h21") == 40.0 and reply.pair_rate("h12", "h21") is None


def test_an_assignment_names_each_senders_dscp():
    """Tag 58's own DSCP is 3 (58 - 55); h11 was remapped to 31."""
    a = m.Assignment(58, 2, (("h11", 31),))
    assert (a.dscp_of("h11"), a.dscp_of("h12")) == (31, 3)
