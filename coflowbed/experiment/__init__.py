"""What an experiment is, before anything runs: the scenario file and its overrides,
its faults, several jobs on one fabric, the simulator-only fabrics, imported workloads,
the naming of results folders, and the one binding of a scenario to its policy, fabric
and faults (``binding``), with the one function that simulates a scenario
(``simulate``).  Imports ``core``, ``results`` and ``sim``; never emulation, analysis or
the command line."""
