"""`python -m xprof_widgets.synthetic OUT_PATH --events N --kind tpu|gpu [--seed S] [--hosts H]`,
or `--kind tpu_counters|megascale` for the small profiles of those two XProf tools."""

from __future__ import annotations

import argparse
import time

from . import DEFAULT_DEVICES, generate
from .megascale import write_megascale_profile
from .utilization import write_utilization_profile

_SMALL = {"tpu_counters": write_utilization_profile, "megascale": write_megascale_profile}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m xprof_widgets.synthetic", description="Write a synthetic XSpace profile."
    )
    parser.add_argument(
        "out_path",
        help="an .xplane.pb file, or a directory (a logdir) to "
        "write plugins/profile/<run>/<host>.xplane.pb into",
    )
    parser.add_argument(
        "--events",
        type=float,
        required=True,
        help="about how many events, all hosts together (1e6 is fine)",
    )
    parser.add_argument("--kind", choices=("tpu", "gpu", *_SMALL), default="tpu",
                        help="tpu_counters / megascale: the small profile XProf's utilization "
                        "viewer / megascale stats read, as OUT_PATH (an .xplane.pb); --events "
                        "is ignored")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hosts", type=int, default=1)
    parser.add_argument("--devices", type=int, default=DEFAULT_DEVICES, help="devices per host")
    parser.add_argument(
        "--html-event",
        action="store_true",
        help="add a host event named <img src=x onerror=alert(1)>",
    )
    parser.add_argument(
        "--allocator",
        action="store_true",
        help="add each device's MemoryAllocation/MemoryDeallocation events",
    )
    parser.add_argument(
        "--custom-calls",
        action="store_true",
        help="TPU: a Pallas custom call per layer with LLO tracing lines and perf counters",
    )
    args = parser.parse_args(argv)
    if args.kind in _SMALL:
        written = _SMALL[args.kind](args.out_path, args.seed)
        print(f"{written}\t{written.stat().st_size / 1e3:.1f} kB")
        return
    t0 = time.perf_counter()
    run = generate(
        args.out_path,
        int(args.events),
        args.kind,
        args.seed,
        args.hosts,
        args.devices,
        args.html_event,
        args.allocator,
        args.custom_calls,
    )
    seconds = time.perf_counter() - t0
    for host in run.hosts:
        size = host.path.stat().st_size
        print(f"{host.path}\t{host.events} events\t{host.steps} steps\t{size / 1e6:.1f} MB")
    print(f"{run.events} events in {len(run.hosts)} file(s), {seconds:.1f} s")


if __name__ == "__main__":
    main()
