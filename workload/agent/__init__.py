"""The per-host traffic agent, one process per emulated host (``python -m
workload.agent``, spawned by ``coflowbed.emulation.agents.process``).

- ``daemon``: the process (options, control socket, listener, event loop);
- ``proto``: the protocols on the wire, shared with the orchestrator's client
  (``coflowbed.emulation.agents.client``), re-exporting ``wire``, ``sockets`` and ``receiver``;
- ``wire``: framing of data messages and control lines;
- ``sockets``: marking and pacing of flow sockets;
- ``receiver``: the receiving end of a flow;
- ``send``: the sending side (connection pools, flows).

The wire contract with the fabric (tags, level codes) is ``workload.marking``, shared
with ``topo`` and ``controller``, so it stays outside this package.
"""
