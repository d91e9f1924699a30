"""An own policy, as a plugin: smallest coflow first by the bytes it has sent so far
(no clairvoyance), with PP coflows ahead of everything else.

Use it from the command line (paths relative to the working directory):

    coflowbed compare examples/my_scenario.yaml --sim \\
        --policies fair,hermod,pp-then-least-sent --plugin examples/my_policy.py

or name it in a scenario (``plugins: [my_policy.py]``, relative to the scenario file).
"""

from controller.policies import Decision, Policy, register


@register
class PpThenLeastSent(Policy):
    """PP coflows first, then the coflow that has sent the fewest bytes."""

    name = "pp-then-least-sent"
    compression = "top"  # ranks -> K levels: the most urgent ranks get their own levels
    reads_bytes_sent = True  # the emulator keeps bytes_sent up only for policies saying so

    def __init__(self, pp_first: bool = True) -> None:
        super().__init__()
        self.pp_first = pp_first

    def decide(self, states, fabric, now):
        """A rank per active coflow: smaller is more urgent; ties broken by arrival."""
        decisions = {}
        for s in states:
            ahead = 0 if self.pp_first and s.coflow.ctype.value == "PP" else 1
            decisions[s.coflow_id] = Decision(rank=(ahead, s.bytes_sent, s.arrival_seq))
        return decisions
