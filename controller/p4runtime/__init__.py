"""P4Runtime southbound for BMv2 ``simple_switch_grpc`` switches running p4src/.

- :mod:`.artifacts`: where the compiled pipeline lives, compiling it with p4c, and the
  staleness check;
- :mod:`.p4info`: name -> id lookups and value encoding from the P4Info;
- :mod:`.entities`: pure builders of P4Runtime entities (routes, ECMP, coflow rules,
  meters, counter reads);
- :mod:`.session`: one gRPC connection (primary arbitration, pipeline push, writes, reads);
- :mod:`.driver`: :class:`P4RuntimeDriver`, the SwitchDriver the control plane uses;
- :mod:`.launcher`: the controller process (same control API as controller.launcher).
"""
