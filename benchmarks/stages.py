"""Where ``analyze-trail --jobs 1`` spends its CPU, stage by stage, against the parse floor.

Run from the repository root::

    python -m benchmarks.stages [--records N] [--repeat R]

It uses the ingest benchmark's cached file (:func:`benchmarks.ingest.ensure_file`) and runs, each in its own process
and interleaved ``R`` times (default 3), medians reported:

0. the parse floor of :mod:`benchmarks.ingest` (gunzip + ``orjson.loads`` of the whole document, GC off);
1. ``imports``: the interpreter and every module ``analyze-trail`` imports, nothing read;
2. ``gunzip``: (1), then the input decompressed by the reader's own inflater (``_chunks``);
3. ``read``: (1), then the real reader (:func:`auditor.kernel.reader.iter_records`) as ingest runs it
   (``light=True``): gunzip, cut each record out of ``Records`` and decode it (the fields the light path reads, typed
   by ``auditor.kernel.decode``, else the whole record with ``orjson``), nothing else;
4. ``calls``: (1), then :func:`auditor.kernel.reader.read_calls` as ingest runs it (``light=True``): (3) plus
   normalising each record (:func:`auditor.kernel.normalize.single_item` or
   ``normalize_record``) and deduplicating;
5. ``aggregate``: (1), then :func:`auditor.engine.ingest_source`: (4) plus the aggregates, with the pending key
   batches folded into the sketches at the end;
6. ``analyze-trail --jobs 1`` as users run it: (5) plus merging, detection and the JSON output.

Every stage runs with the cyclic GC off (as ingest does) on the modules as installed (the kernel compiled after
``make fast``, else pure Python). The table gives each stage's CPU time and what it adds to the one before.

The point of it is the budget line at the end: the CPU the pipeline spends *outside* cutting and decoding records
((6) minus ((3) minus (2))) against the floor's CPU. When that alone exceeds the floor, no decoder (however fast)
can bring ``floor CPU / --jobs 1 CPU`` to 1.0: the normalising and aggregating would have to get cheaper too. The
last line is machine-readable: ``floor_cpu=<s> jobs1_cpu=<s> decode_cpu=<s> outside_decode_cpu=<s>``.
It exits 0 whatever the results: it reports, it does not gate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from benchmarks.ingest import Run, ensure_file, floor_argv, measure, pipeline_argv, warm_bytecode

#: Run as ``python -c PRELUDE + STAGE FILE``: what every stage shares (the modules analyze-trail imports, GC off).
PRELUDE = """\
import gc
gc.disable()
import sys
import auditor.cli, auditor.engine
from auditor.config import AnalysisConfig
from auditor.engine import ingest_source
from auditor.kernel.framing import LightRun
from auditor.kernel.inputs import DEFAULT_CHUNK_SIZE, _chunks, discover
from auditor.kernel.reader import Deduper, iter_records, read_calls
from auditor.kernel.stats import IngestStats
path = sys.argv[1]
n = 0
"""

STAGES: dict[str, str] = {
    "imports": "",
    "gunzip": """\
with open(path, "rb") as fh:
    for chunk in _chunks(fh, path, DEFAULT_CHUNK_SIZE, threaded=False):  # as iter_records reads a regular file
        n += 1
""",
    "read": """\
with open(path, "rb") as fh:
    for record in iter_records(fh, path, light=True):
        n += len(record.records) if type(record) is LightRun else 1
""",
    "calls": """\
stats = IngestStats()
for batch in read_calls(discover([path])[0], stats, Deduper(), light=True):
    n += len(batch)
n = stats.records_read
""",
    "aggregate": """\
stats = IngestStats()
aggs = ingest_source(discover([path])[0], AnalysisConfig(), Deduper(), stats)
assert aggs is not None
aggs.flush()
n = stats.records_read
""",
}
STAGE_END = "print(n)\n"

#: The stages that print the number of records they read (checked against the file's).
COUNTED = ("read", "calls", "aggregate")
JOBS1 = "analyze-trail --jobs 1"

#: What each stage adds to the one before it, for the table.
ADDS = {
    "imports": "interpreter start-up and imports",
    "gunzip": "decompressing the input",
    "read": "cutting records out and decoding them",
    "calls": "normalising and deduplicating",
    "aggregate": "windows, counters, templates, sketches",
    JOBS1: "merging, detectors, JSON output",
}


def stage_argv(stage: str, path: str) -> list[str]:
    return [sys.executable, "-c", PRELUDE + STAGES[stage] + STAGE_END, path]


def measure_stages(path: Path, records: int, repeat: int, progress: bool = True) -> dict[str, list[Run]]:
    """Each stage's runs on ``path`` (which holds ``records`` records), interleaved ``repeat`` times. A stage that
    reads a different number of records than ``records`` counts as failed."""
    names = ["floor", *STAGES, JOBS1]
    runs: dict[str, list[Run]] = {name: [] for name in names}
    for i in range(repeat):  # interleaved, so drift hits every stage alike
        runs["floor"].append(measure(floor_argv(path)))
        for stage in STAGES:
            r = measure(stage_argv(stage, str(path)), capture=True)
            if r.ok and stage in COUNTED and r.stdout.strip() != str(records):
                r.ok, r.detail = False, f"read {r.stdout.strip()!r} records, expected {records}"
            runs[stage].append(r)
        runs[JOBS1].append(measure(pipeline_argv(path, jobs=1)))
        if progress:
            line = ", ".join(f"{k} {v[-1].cpu_s:.2f}" if v[-1].ok else f"{k} failed" for k, v in runs.items())
            print(f"  run {i + 1}/{repeat} (CPU s): {line}", flush=True)
    return runs


def report(runs: dict[str, list[Run]]) -> list[str]:
    """The table, the budget and the machine-readable last line."""
    failed = [f"{k}: failed: {r.detail}" for k, v in runs.items() for r in v if not r.ok]
    if failed:
        return [*failed, "floor_cpu=nan jobs1_cpu=nan decode_cpu=nan outside_decode_cpu=nan"]
    cpu = {k: statistics.median(r.cpu_s for r in v) for k, v in runs.items()}
    total = cpu[JOBS1]
    lines = [
        f"{'stage':<24} {'CPU s':>7} {'adds s':>7} {'share':>6}  what the stage adds",
        f"{'parse floor':<24} {cpu['floor']:>7.2f} {'':>7} {'':>6}  gunzip + orjson.loads of the whole document",
    ]
    before = 0.0
    for name in [*STAGES, JOBS1]:
        adds = cpu[name] - before
        lines.append(f"{name:<24} {cpu[name]:>7.2f} {adds:>7.2f} {adds / total:>6.0%}  {ADDS[name]}")
        before = cpu[name]
    # Medians of the per-repeat differences, so that each compares runs made next to each other.
    decode = statistics.median(r.cpu_s - g.cpu_s for r, g in zip(runs["read"], runs["gunzip"], strict=True))
    outside = statistics.median(
        t.cpu_s - (r.cpu_s - g.cpu_s) for t, r, g in zip(runs[JOBS1], runs["read"], runs["gunzip"], strict=True)
    )
    floor = cpu["floor"]
    lines += [
        "",
        f"cutting and decoding records: {decode:.2f} s CPU; everything else in --jobs 1: {outside:.2f} s CPU",
        f"floor CPU / --jobs 1 CPU: {floor / total:.2f} as it is; {floor / outside:.2f} at most with a decoder that "
        "cost nothing",
        f"    ({len(runs['floor'])} repeats, medians; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)",
        f"floor_cpu={floor:.3f} jobs1_cpu={total:.3f} decode_cpu={decode:.3f} outside_decode_cpu={outside:.3f}",
    ]
    return lines


def run(args: argparse.Namespace) -> None:
    records: int = args.records
    path, gen_s = ensure_file(records, max(1, records // 4), args.seed)
    print(f"file: {path.name} ({records:,} records{', generated' if gen_s else ', cached'})", flush=True)
    print(warm_bytecode(), flush=True)
    runs = measure_stages(path, records, args.repeat)
    print()
    print("\n".join(report(runs)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stages", description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--records", type=int, default=200_000, help="records in the file (default 200000)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repeats (default 3)")
    parser.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    run(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
