#!/usr/bin/env python3
"""Sweeps every algorithm of every collective table on both buffer kinds and writes which one
was fastest at each size: the data file that tests/unit/sweep_choices_test.cpp holds the
algorithm tables to (collectives/sweep_choices.txt).

    python3 scripts/sweep-choices.py [--build build] [--ranks 2] [--sweeps 3]
                                     [--tolerance 0.10] [--out collectives/sweep_choices.txt]
                                     [--collectives all_to_all,...] [--buffers user]
                                     [--min-bytes 4] [--full] [--machine amd-zen4]

Each algorithm is forced with the collective's override variable (RANKFLOW_ALLGATHER=mesh, ...;
allreduce with --algo), over 4 B to 64 MiB, `rankflow-bench --quick`, with the bench's own MPI
column giving the machine's phase. Per (collective, buffers, size) the median of the sweeps'
out-of-place times, each divided by Open MPI's time in the same run, decides (the bench
alternates their batches, so the machine's drift between runs cancels; "mpi", Open MPI's own
collective through the communicator, reads about 1); every algorithm within `tolerance` of
the fastest is recorded as
acceptable too, since the machine's noise is larger than the gaps between them. An override
for a size the algorithm does not serve falls back to the table's own choice, so only sizes an
algorithm serves are compared (the serves limits below restate collectives/tables.cpp).

With --machine NAME the sweep is that machine profile's (collectives/machine_profile.h): it goes
to collectives/sweep_choices.NAME.txt, which the profile's choices are held to, and the tables'
own file is left alone. Every file's header names the CPU each sweep ran on.
"""
import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile

INBOX = 32768  # PushInbox::kLargePayloadBytes: the largest push on two members
STREAM = 512  # CollContext::kStreamBytes
# collective -> [(algorithm, largest size it serves on 2 members, smallest)]
# "mpi" is Open MPI's own collective, run through the communicator (blocking calls).
ALGORITHMS = {
    "allreduce": [("onephase", None, 0), ("twophase", None, 0), ("ring", None, 0),
                  ("bidirectional_ring", None, 0), ("ibing", None, 0), ("mpi", None, 0)],
    "allgather": [("pushed", INBOX, 1), ("mesh", None, 0), ("pipelined", None, 0),
                  ("cross_memory", None, 0), ("mpi", None, 0)],
    "reduce_scatter": [("pushed", INBOX, 1), ("mesh", None, 0), ("mpi", None, 0)],
    "broadcast": [("streamed", STREAM, 0), ("pushed", INBOX, 1), ("direct", None, 0),
                  ("staged", None, 0), ("mpi", None, 0)],
    "all_to_all": [("pushed", INBOX, 1), ("mesh", None, 0), ("pipelined", None, 0),
                   ("cross_memory", None, 0), ("mpi", None, 0)],
}
BUFFERS = ["symmetric", "user"]


def this_cpu():
    """'model name (family F model M)' from /proc/cpuinfo, as cpuid reports it."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    key, value = (part.strip() for part in line.split(":", 1))
                    fields.setdefault(key, value)
    except OSError:
        return "an unknown CPU"
    return (f"{fields.get('model name', '?')} (family {fields.get('cpu family', '?')} "
            f"model {fields.get('model', '?')})")


def swept_ranks(header_line):
    """The rank counts a sweep's header line names ('2 ranks', '4, 8 and 16 ranks'), as a set."""
    match = re.search(r"(?<![\d-])((?:\d+, )*\d+(?: and \d+)?) ranks", header_line)
    return {int(n) for n in re.findall(r"\d+", match.group(1))} if match else set()


def run_bench(args, coll, algo, buffers):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    bench = [os.path.join(args.build, "bench", "rankflow-bench"), "--coll", coll, "--buffers",
             buffers, "--min-bytes", args.min_bytes, "--max-bytes", args.max_bytes]
    if not args.full:
        bench.append("--quick")
    mpirun = ["mpirun", "-n", str(args.ranks), "--bind-to", "core"]
    if coll == "allreduce":
        bench += ["--algo", algo]
    else:
        variable = "RANKFLOW_" + coll.upper()
        env[variable] = algo
        mpirun += ["-x", variable]
    with tempfile.NamedTemporaryFile(suffix=".tbl") as table:
        subprocess.run(mpirun + bench + ["--table", table.name], env=env, check=True,
                       stdout=subprocess.DEVNULL, timeout=600)
        rows = {}
        with open(table.name) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                fields = line.split()
                rows[int(fields[2])] = (float(fields[3]), float(fields[7]))  # oop_us, mpi_us
        return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--sweeps", type=int, default=3)
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--min-bytes", default="4")
    p.add_argument("--max-bytes", default="64M")
    p.add_argument("--collectives", default=",".join(ALGORITHMS),
                   help="sweep only these (comma-separated); with --buffers or --min-bytes, "
                   "the rows swept replace theirs in --out and the others are kept")
    p.add_argument("--buffers", default=",".join(BUFFERS), help="symmetric,user")
    p.add_argument("--full", action="store_true",
                   help="the bench's full batches instead of --quick (steadier from 1 MiB, "
                   "slower)")
    p.add_argument("--machine", help="a machine profile's name: write its sweep file "
                   "(collectives/sweep_choices.NAME.txt) instead of the tables'")
    p.add_argument("--out", help="default: collectives/sweep_choices.txt, or the --machine "
                   "profile's file")
    p.add_argument("--raw", help="also write every median here (collective buffers "
                   "algorithm bytes time-relative-to-Open-MPI, then each sweep's)")
    p.add_argument("--rank-by", choices=["median", "mean", "worst"], default="median",
                   help="rank each size's algorithms by the median of their sweeps (default), "
                   "their mean, or their worst sweep: where the machine runs in two modes, the "
                   "mean weighs an algorithm's loss in one against its gain in the other")
    p.add_argument("--from-raw", help="rank the sweeps a --raw file recorded (with each "
                   "sweep's times) instead of running new ones")
    args = p.parse_args()
    if args.out is None:
        args.out = (f"collectives/sweep_choices.{args.machine}.txt" if args.machine
                    else "collectives/sweep_choices.txt")

    times = {}  # (coll, buffers, algo, bytes) -> [time / Open MPI's time, per sweep]
    phase = []  # MPI's 4 B time per run
    recorded = None  # --from-raw: the raw file's description of its sweeps
    if args.from_raw:
        with open(args.from_raw) as f:
            for line in f:
                if line.startswith("#"):
                    recorded = recorded or line[1:].split("; fields")[0].strip()
                    continue
                fields = line.split()
                if len(fields) < 5:
                    continue
                if fields[0] in args.collectives.split(",") and fields[1] in args.buffers.split(","):
                    # Each sweep's times, or the median alone (raw files from before them).
                    times[(fields[0], fields[1], fields[2], int(fields[3]))] = [
                        float(x) for x in fields[5:]] or [float(fields[4])]
        if not times:
            sys.exit(f"sweep-choices: no rows of {args.collectives} on {args.buffers} buffers "
                     f"in {args.from_raw}")
        args.sweeps = max(len(t) for t in times.values())
    for sweep in range(0 if args.from_raw else args.sweeps):
        for coll, algos in ALGORITHMS.items():
            if coll not in args.collectives.split(","):
                continue
            for buffers in args.buffers.split(","):
                for algo, largest, smallest in algos:
                    rows = run_bench(args, coll, algo, buffers)
                    if 4 in rows:
                        phase.append(rows[4][1])
                    for bench_bytes, (us, mpi_us) in rows.items():
                        # The bench's size is the whole buffer; the tables' is one block for
                        # the exchanges.
                        size = bench_bytes
                        if coll not in ("allreduce", "broadcast"):
                            size = bench_bytes // 4 // args.ranks * 4
                        if size < smallest or (largest is not None and size > largest):
                            continue
                        if mpi_us <= 0:
                            continue
                        # Relative to Open MPI's time in the same run (the bench alternates
                        # their batches): the machine's phase drifts by x2 and more between
                        # runs, and the algorithms of one size run minutes apart.
                        times.setdefault((coll, buffers, algo, size), []).append(us / mpi_us)
        print(f"sweep-choices: sweep {sweep + 1} of {args.sweeps} done", file=sys.stderr)

    method = "rankflow-bench" + ("" if args.full else " --quick")
    swept = f"{args.collectives} on {args.buffers} buffers, {args.min_bytes} to {args.max_bytes}"
    # Ranked again from a raw file, only its rows are replaced.
    partial = (args.from_raw or args.collectives != ",".join(ALGORITHMS)
               or args.buffers != ",".join(BUFFERS) or args.min_bytes != "4")
    header = [
        "# The fastest algorithm of each collective per buffer kind and message size (bytes: the",
        "# whole message for allreduce and broadcast, one block for the others), written by",
        "# scripts/sweep-choices.py; tests/unit/sweep_choices_test.cpp checks the tables against",
        "# it. Fields: collective buffers members bytes fastest [others within the tolerance].",
    ]
    rows = {}  # (coll, buffers, members, size) -> line
    if os.path.exists(args.out):
        # A partial sweep replaces only its rows; a full one every row of its member count, and
        # keeps the rows (and their sweeps' header lines) of other counts, such as the
        # scaling sweeps' (scripts/scaling.sh) on machines with more cores.
        with open(args.out) as f:
            kept = [line.rstrip("\n") for line in f]
        if partial:
            header = [line for line in kept if line.startswith("#")]
        else:
            header += [line for line in kept if line.startswith("#") and line not in header
                       and swept_ranks(line) not in (set(), {args.ranks})]
        for line in kept:
            if line and not line.startswith("#"):
                fields = line.split()
                if partial or int(fields[2]) != args.ranks:
                    rows[(fields[0], fields[1], int(fields[2]), int(fields[3]))] = line
    statistic = f"{args.rank_by} of {args.sweeps} sweeps"
    described = (f"{datetime.date.today()}, {this_cpu()}, {args.ranks} ranks, {swept}: "
                 f"{statistic} ({method})")
    if args.from_raw:
        described = (f"{datetime.date.today()}: {statistic}, ranked again from "
                     f"{os.path.basename(args.from_raw)}, which recorded: "
                     f"{recorded or 'no description'}")
    header.append(
        f"# {described}, each time relative to Open MPI's in the same run, tolerance "
        f"{args.tolerance:.0%}, machine phase: " +
        (f"Open MPI's 4 B calls took {statistics.median(phase):.2f} us (median of the runs)."
         if phase else "not measured (no 4 B rows)."))
    for coll, algos in ALGORITHMS.items():
        for buffers in BUFFERS:
            sizes = sorted({k[3] for k in times if k[0] == coll and k[1] == buffers})
            for size in sizes:
                rank = {"median": statistics.median, "mean": statistics.mean,
                        "worst": max}[args.rank_by]
                medians = {a: rank(times[(coll, buffers, a, size)])
                           for a, _, _ in algos if (coll, buffers, a, size) in times}
                ranked = sorted(medians, key=medians.get)
                best = medians[ranked[0]]
                close = [a for a in ranked[1:] if medians[a] <= best * (1 + args.tolerance)]
                rows[(coll, buffers, args.ranks, size)] = " ".join(
                    [coll, buffers, str(args.ranks), str(size), ranked[0]] + close)
    order = {c: i for i, c in enumerate(ALGORITHMS)}
    kinds = {b: i for i, b in enumerate(BUFFERS)}
    lines = header + [rows[k] for k in sorted(rows, key=lambda k: (order[k[0]], kinds[k[1]],
                                                                    k[2], k[3]))]
    if args.raw:
        with open(args.raw, "w") as f:
            f.write(f"# {datetime.date.today()}, {this_cpu()}, {args.ranks} ranks, {swept}, "
                    f"{args.sweeps} sweeps ({method}); fields: collective buffers algorithm "
                    f"bytes median each-sweep...\n")
            for (coll, buffers, algo, size), us in sorted(times.items()):
                each = " ".join(f"{u:.3f}" for u in us)
                f.write(f"{coll} {buffers} {algo} {size} {statistics.median(us):.3f} {each}\n")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"sweep-choices: wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
