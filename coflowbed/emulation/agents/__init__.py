"""The orchestrator side of the per-host traffic agents (``workload.agent``): their
types (``types``), their processes (``process``) and the client that talks to them
(``client``)."""
