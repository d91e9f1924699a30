"""The small core every other package of coflowbed may use: the one-line user error
(``errors``), progress bars (``progress``) and the strict YAML readers (``config``).  It
imports nothing of coflowbed."""
