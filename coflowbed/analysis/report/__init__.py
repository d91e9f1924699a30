"""The readable outputs of results: a comparison's tables (``tables``: compare.csv,
compare.json, compare.md) and the self-contained ``report.html`` (``html``: a run's page
and the dispatch; ``compared``: a comparison's page; ``headline``: its answer and what
its intervals cover; ``environment``: where the runs ran; ``markup``: numbers to 3
significant digits, tables that wrap, inlined figures)."""
