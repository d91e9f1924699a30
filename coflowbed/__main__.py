"""``python -m coflowbed``."""

import sys

from coflowbed.cli import main

sys.exit(main())
