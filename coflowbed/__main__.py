"""``python -m coflowbed``."""

import sys

from coflowbed.cli.main import main

sys.exit(main())
