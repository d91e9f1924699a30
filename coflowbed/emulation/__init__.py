"""One emulated run on this machine: the runner (Open vSwitch, controller, Mininet
fabric, agents, the DAG executor, results, and clean-up of all of it), the pre-check of
what the machine lacks (``precheck``), the registry of live runs and ``coflowbed clean``.
The traffic agents are in ``agents``, the fault injection in ``faults``.  Imports
``core``, ``results``, ``sim`` and ``experiment``; never ``analysis``: the fidelity check
is attached by the caller after the run."""
