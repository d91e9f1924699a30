"""``python -m workload.agent``: run one agent (see ``workload.agent.daemon``)."""

from __future__ import annotations

import sys

from workload.agent.daemon import main

sys.exit(main())
