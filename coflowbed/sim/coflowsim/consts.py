"""CoflowSim's constants (``coflowsim.utils.Constants`` and the simulators' fields), in
its own units: a simulated second is ``SECOND`` = 1024 "milliseconds", a rack link
carries ``RACK_BPS`` = 2^30 bit/s, so one time step (``QUANTUM`` = 8 ms) moves exactly
one MB (2^20 bytes) over a free link."""

from __future__ import annotations

MB = 2**20  # bytes in CoflowSim's MB (the trace's)
SECOND = 1024  # CoflowSim milliseconds in a simulated second (SIMULATION_SECOND_MILLIS)
RACK_BPS = 1.0 * 1024 * 1048576  # rack up/downlink capacity, bit/s (RACK_BITS_PER_SEC)
RACK_BYTES_PER_SEC = RACK_BPS / 8.0
QUANTUM = SECOND // int(RACK_BYTES_PER_SEC / MB)  # time step, CoflowSim ms (= 8)
QUANTUM_BYTES = RACK_BYTES_PER_SEC * QUANTUM / SECOND  # bytes a free link moves per step
EPOCH = 10 * SECOND  # admission epoch of CoflowSim.main (simulationTimestep), ms
STEPS_PER_EPOCH = EPOCH // QUANTUM  # 1280
ZERO = 1e-3  # CoflowSim's floating-point zero (Constants.ZERO)
DEADLINE_SEED = 17  # java.util.Random seed of Simulator.mergeTasksByRack
DEADLINE_RANDOM_FACTOR = 1.0  # CoflowSim.main's deadlineMultRandomFactor
DARK_QUEUES = 10  # CoflowSimulatorDark.NUM_JOB_QUEUES
DARK_FIRST_LIMIT = 10.0 * MB  # INIT_QUEUE_LIMIT, bytes sent
DARK_MULT = 10.0  # JOB_SIZE_MULT
END_MS = 86400 * SECOND  # SIMULATION_ENDTIME_MILLIS: CoflowSim stops here
