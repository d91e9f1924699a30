"""Profile the simulator's compiled kernels with ``perf``: run one policy on the Facebook
trace (or a prefix) with an empty numba cache, so that every kernel is compiled in this
process, then write ``/tmp/perf-<pid>.map`` naming each compiled function's machine code
(numba's own libraries, symbols and sizes from their object code).  ``perf report``
then names the kernels instead of showing bare addresses of JIT code.  Usage::

    perf record -F 999 -o perf.data -- .venv/bin/python benchmarks/profile_kernels.py dclas
    perf report -i perf.data --no-children --sort sym

Prints the simulation's wall time (compiling is done by a short warm-up run first) and
how many functions the map names.  The numba cache lives in a temporary directory removed
on exit; the perf map stays for ``perf report`` (delete it after).  Needs ``nm``
(binutils) and a Linux ``perf``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRACE = REPO / "data" / "FB2010-1Hr-150-0.txt"


def kernels_modules() -> list:
    """Every module of ``coflowbed.sim`` (their dispatchers hold the compiled code)."""
    import coflowbed.sim as sim

    names = [m.name for m in pkgutil.walk_packages(sim.__path__, "coflowbed.sim.")]
    return [importlib.import_module(n) for n in names]


def symbols(obj_code: bytes) -> list[tuple[str, int]]:
    """(name, size) of each function defined in an object file's code."""
    with tempfile.NamedTemporaryFile(suffix=".o") as f:
        f.write(obj_code)
        f.flush()
        out = subprocess.run(
            ["nm", "-S", "--defined-only", f.name], capture_output=True, text=True, check=True
        ).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in ("t", "T"):
            found.append((parts[3], int(parts[1], 16)))
    return found


def map_lines(modules: list) -> list[str]:
    """perf map lines (address, size, name) of every compiled overload in ``modules``."""
    from numba.core.registry import CPUDispatcher

    lines, seen = [], set()
    for mod in modules:
        for name, obj in vars(mod).items():
            if not isinstance(obj, CPUDispatcher):
                continue
            for cres in obj.overloads.values():
                lib = cres.library
                if id(lib) in seen:
                    continue
                seen.add(id(lib))
                lines += _library_lines(lib, f"{mod.__name__.rsplit('.', 1)[-1]}.{name}")
    return lines


def _library_lines(lib, label: str) -> list[str]:
    """perf map lines of one compiled library (none if its object code is not kept)."""
    try:
        code = lib._get_compiled_object()
    except RuntimeError:  # loaded from a cache: no object code to read symbols from
        return []
    lines = []
    for sym, size in symbols(code):
        addr = lib.get_pointer_to_function(sym)
        if addr:
            lines.append(f"{addr:x} {size:x} {label}:{sym[-24:]}")
    return lines


def main() -> None:
    """Run the policy with a fresh numba cache and write the perf map."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("policy")
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--limit", type=int, default=0, help="first N coflows (0: all)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="coflowbed-numba-") as cache:
        os.environ["NUMBA_CACHE_DIR"] = cache  # removed on return, as on an error
        _profile(args)


def _profile(args: argparse.Namespace) -> None:
    """Warm up, run the policy timed, then write the perf map (numba's cache is empty)."""
    from coflowbed.sim import Simulator, parse_fabric_spec
    from controller import policies
    from workload import fbtrace

    trace = fbtrace.read_trace(args.trace)
    fabric = parse_fabric_spec(f"bigswitch:{trace.ports}x1Gbps", binary=True)
    policy = policies.get(args.policy)
    Simulator(fbtrace.to_dag(trace, None, limit=5), fabric, policy, None).run()
    sim = Simulator(fbtrace.to_dag(trace, None, limit=args.limit or None), fabric, policy, None)
    sim.run()
    lines = map_lines(kernels_modules())
    Path(f"/tmp/perf-{os.getpid()}.map").write_text("\n".join(lines) + "\n")
    print(f"{args.policy}: simulated in {sim.stats.wall_s:.2f} s; perf map names {len(lines)}")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
