"""Loggers made after Mininet is imported stay plain loggers (topo.mininet_log)."""

from __future__ import annotations

import logging

import topo.net  # noqa: F401  (imports Mininet)


def test_a_logger_made_after_mininet_is_a_plain_logger():
    assert type(logging.getLogger("cfb-test-after-mininet")) is logging.Logger
