"""Reads a table written by `rankflow-bench --table` (scripts/median-ratios.py and
scripts/scaling-summary.py share it): each row's ratio to Open MPI as the bench computes it,
Open MPI's time over rankflow's below 4 KiB and rankflow's busbw over Open MPI's from 4 KiB, both
from the same run, so the machine's phase cancels within a row. Only what users get is read:
allreduce `auto` and the other collectives' rows (allreduce forced to one algorithm is left out).
"""


def read(path):
    """([(collective, bytes, ratio)], phase, wrong): ratio is None where Open MPI's busbw is 0;
    phase is Open MPI's 4 B allreduce time (us); wrong lists the rows with wrong elements."""
    rows, phase, wrong = [], None, []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            fields = line.split()
            coll, algo, size = fields[0], fields[1], int(fields[2])
            oop_us, oop_bw, mpi_us, mpi_bw = (float(fields[i]) for i in (3, 4, 7, 8))
            if len(fields) > 10 and int(fields[10]) != 0:
                wrong.append(f"{coll} {algo} {size} B: {fields[10]} wrong elements")
            if coll == "allreduce" and size == 4 and algo == "auto":
                phase = mpi_us
            if (coll == "allreduce" and algo != "auto") or oop_us <= 0 or mpi_us <= 0:
                continue
            if size < 4096:
                ratio = mpi_us / oop_us
            else:
                ratio = oop_bw / mpi_bw if mpi_bw > 0 else None
            rows.append((coll, size, ratio))
    return rows, phase, wrong
