"""The ``coflowbed`` command line: argument parsing and printing only (``main`` and one
module per subcommand in ``commands``); the work is done by the library below it.
Nothing imports it."""
