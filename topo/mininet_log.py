"""Import Mininet without its logger class: ``mininet.log`` calls
``logging.setLoggerClass(MininetLogger)``, so every logger created after the first Mininet
import gets a handler of its own (records printed twice, without newlines, invisible to
pytest's caplog).  The modules of ``topo`` that use Mininet import this first."""

from __future__ import annotations

import logging

import mininet.log  # noqa: F401  (sets MininetLogger as the logger class)

logging.setLoggerClass(logging.Logger)
