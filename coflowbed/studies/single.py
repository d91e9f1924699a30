"""One emulated run with its fidelity check, as every caller wants it (the command line,
the Python API, compare, sweep, the pytest fixtures): the pre-check, the run
(``coflowbed.emulation.runner``, which holds the one-run-at-a-time lock), then, the lock
released and the fabric down, the run's DAG simulated for its emulated / simulated
figure (``coflowbed.analysis.fidelity``) unless the caller said not to."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from coflowbed.analysis import fidelity
from coflowbed.emulation.precheck import check_can_run
from coflowbed.emulation.runner import RunOutcome, run_scenario
from coflowbed.experiment.scenario import Scenario

log = logging.getLogger("runner")

NOT_ASKED = "not asked for"  # the fidelity block's reason when the caller skipped it


def emulate(scen: Scenario, out: Path, check: bool = True) -> RunOutcome:
    """``scen`` on the emulated fabric into ``out``; with ``check``, its fidelity figure
    (``summary.json`` ``fidelity``).  UserError, nothing started, when this machine or
    the scenario does not allow an emulated run."""
    check_can_run(scen)
    outcome = run_scenario(scen, out)
    summary = fidelity.attach(outcome.out_dir, outcome.summary, None if check else NOT_ASKED)
    log.info("%s", fidelity.describe(summary.fidelity))
    return replace(outcome, summary=summary)
