"""Many runs of one experiment: one run with its fidelity check (``single``), a
scenario under several policies (``compare``) and a parameter grid (``sweep``).  The
top of the library: imports every package below it; imported only by the Python API,
the command line and the pytest plugin."""
