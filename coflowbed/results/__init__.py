"""What a run leaves in its folder, emulated or simulated: the record types
(``records``), the files they are written to and read from (``files``: flows.csv,
coflows.csv, iterations.csv, summary.json), the Chrome trace (``trace``) and a finished
run read back as typed values (``read``).  Imports only ``coflowbed.core``."""
