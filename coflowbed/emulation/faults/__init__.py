"""Scenario faults injected on a running fabric: the shared timing and matching
(``base``), then Open vSwitch (``ovs``) and BMv2 (``bmv2``) switches."""
