"""What a run or a comparison means, computed from files after the measurement:
the fidelity of an emulated run to its model (``fidelity``), statistics of repeated runs
(``stats``, ``comparison``), the ECMP placement and release-path checks, the plots
(``plots``) and the report (``report``).  Imports ``core``, ``results``, ``sim`` and
``experiment``; never ``emulation``."""
