"""Figures drawn from result files: one run's timeline and CCT CDF (``run``), its
sampled counters and queues (``samples``), a comparison's figures (``comparison``), and
the shared figure helpers (``figure``)."""
