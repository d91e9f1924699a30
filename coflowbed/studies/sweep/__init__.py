"""``coflowbed sweep``: a grid over scenario keys x policies x seeds, simulated (or
emulated, one run at a time) on a local process pool or a Ray cluster; one table
(sweep.csv/.json) and each run's folder under ``runs/`` (docs/sweeps.md).

Modules: ``spec`` (the sweep file), ``grid`` (runs to do, ``RunSpec``), ``worker`` (one
run, ``SweepResult``), ``backends`` (serial, local pool, Ray), ``table``, ``plot`` and
``driver`` (validation, resumption, interruption)."""
