"""CoflowSim's model (github.com/coflow/coflowsim, the simulator behind Varys's and
Aalo's trace results), for ``coflowbed simulate --trace ... --model coflowsim``: its
trace layout (racks, MB rounding), its 10 s admission epochs and 8 ms time steps, and
its FAIR, FIFO, SEBF (MADD) and DARK (D-CLAS) allocations.  See
docs/simulator-coflowsim.md.

    from coflowbed.sim.coflowsim import run_trace, write
    run = run_trace(read_trace(path), trace.ports, "sebf")
    write(run, out_dir, {})
"""

from __future__ import annotations

from coflowbed.sim.coflowsim.model import (
    POLICIES,
    CsRun,
    canonical,
    check_policy,
    run_trace,
    run_workload,
)
from coflowbed.sim.coflowsim.records import write

__all__ = ["POLICIES", "CsRun", "canonical", "check_policy", "run_trace", "run_workload", "write"]
