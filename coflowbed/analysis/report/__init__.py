"""The readable outputs of results: a comparison's tables (``tables``: compare.csv,
compare.json, compare.md) and the self-contained ``report.html`` (``html``)."""
