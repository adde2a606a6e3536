"""Ingest benchmark: ``ddb-audit analyze-trail`` against the parse floor, plus a 1M-distinct-keys memory run.

Run from the repository root (see also ``python -m benchmarks`` in the package docstring)::

    python -m benchmarks.ingest [--records N] [--distinct-keys K] [--repeat R] [--skip-1m]

What it does:

1. Generates (once, cached under ``benchmarks/.data/``) one ``{"Records":[...]}`` ``.json.gz`` file of ``N``
   records (default 200,000) with :func:`auditor.demo.benchmark.write_large_log_file`. The cache key includes a
   hash of the generator's source, so a changed generator regenerates the file.
2. Measures, each in its own process and interleaved ``R`` times (default 3), medians reported:

   (a) the parse floor: read the file, ``gzip.decompress``, ``orjson.loads`` of the whole document, GC disabled;
   (b) the pipeline on one core: ``python -m auditor analyze-trail FILE --format json --jobs 1``;
   (c) the pipeline as users run it (default ``--jobs``: one process per CPU for a large input);
   (d) (b) again on the interpreted source alone (:mod:`benchmarks.interpreted`), which is what the Lambda
       functions run: (b) and (c) run ``analyze-trail`` as installed, with the modules ``pip install`` compiled
       (setup.py). The first line says how many modules are compiled.

   Both pipelines write to /dev/null. For each: wall time (process start to exit, interpreter start-up included
   for all), records/s, CPU time and peak RSS from ``os.wait4`` (the child's own ``ru_maxrss``; with several
   processes, the larger of that and the tree's summed PSS).
3. Prints the ratios against the floor measured in the same run (each repeat's floor next to its pipelines; the
   ratio reported is the median of the per-repeat ratios): floor CPU / ``--jobs 1`` CPU (>= 1.0: the pipeline
   costs no more CPU than parsing the file), floor wall / default wall (>= 1.5) and the larger pipeline peak RSS
   / floor peak RSS (<= 0.1).
4. Unless ``--skip-1m``: a 1M-record file over 1M distinct partition keys, and the pipeline's peak RSS on it
   (target <= 150 MB).

The last line is machine-readable: ``jobs1_cpu_ratio=<float> default_wall_ratio=<float> memory_ratio=<float>``.
It exits 0 whatever the results: it reports, it does not gate.

Measurement caveat: on Linux a child's ``ru_maxrss`` is never below the high-water RSS of the process that
spawned it (the kernel carries it over exec). This driver therefore stays small: it imports only the standard
library and generates data in a subprocess. Its own peak RSS is printed as the floor under every RSS figure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA_DIR = Path(__file__).resolve().parent / ".data"
#: The generator's sources: the command, the benchmark records, their shapes and the log-file writer.
GENERATOR = [REPO / "auditor" / "demo" / f"{name}.py" for name in ("generator", "benchmark", "records", "trail")]

TARGET_JOBS1_CPU_RATIO = 1.0  # floor CPU s / analyze-trail --jobs 1 CPU s, at least
TARGET_WALL_RATIO = 1.5  # floor wall s / analyze-trail (default jobs) wall s, at least
TARGET_RSS_RATIO = 0.1  # pipeline peak RSS / floor peak RSS, at most
TARGET_1M_RSS_MB = 150.0  # pipeline peak RSS on 1M records over 1M distinct keys, at most

#: The parse floor, run as ``python -c FLOOR FILE``: only what any parser must do, nothing more.
FLOOR = """\
import gc
gc.disable()
import gzip, sys, orjson
with open(sys.argv[1], "rb") as fh:
    raw = gzip.decompress(fh.read())
doc = orjson.loads(raw)
print('{"records": %d, "raw_bytes": %d}' % (len(doc["Records"]), len(raw)))
"""


@dataclass(slots=True)
class Run:
    """One measured child process (and the processes it forks)."""

    ok: bool
    wall_s: float
    cpu_s: float
    #: The memory figure the targets use: the larger of the child's own peak RSS (``wait4``) and the peak of its
    #: process tree's summed proportional set size (PSS: pages shared between a parent and its forked workers
    #: count once in all, split between the sharers).
    peak_rss_mb: float
    detail: str = ""
    stdout: str = ""
    #: Peak over the samples of the process tree's summed RSS (shared pages counted once per process: an upper
    #: bound) and summed PSS, and the most processes seen at once.
    tree_rss_mb: float = 0.0
    tree_pss_mb: float = 0.0
    processes: int = 1


def _tree(root: int) -> list[int]:
    """``root`` and its descendants (Linux ``/proc``; just ``root`` elsewhere)."""
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return pids


def _memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in kB, from ``/proc/PID/smaps_rollup``; (0, 0) when it is gone."""
    rss = pss = 0
    try:
        with Path(f"/proc/{pid}/smaps_rollup").open() as fh:
            for line in fh:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, pss


class TreeSampler:
    """Samples a process tree's summed RSS and PSS every ``interval`` seconds, keeping the peaks."""

    def __init__(self, root: int, interval: float = 0.02) -> None:
        self.root = root
        self.interval = interval
        self.peak_rss_kb = 0
        self.peak_pss_kb = 0
        self.max_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            pids = _tree(self.root)
            mem = [_memory_kb(p) for p in pids]
            live = sum(1 for r, _ in mem if r)
            self.max_processes = max(self.max_processes, live)
            self.peak_rss_kb = max(self.peak_rss_kb, sum(r for r, _ in mem))
            self.peak_pss_kb = max(self.peak_pss_kb, sum(p for _, p in mem))
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _rss_mb(ru_maxrss: int) -> float:
    # Linux reports kilobytes, macOS bytes.
    return ru_maxrss / (1024 * 1024) if sys.platform == "darwin" else ru_maxrss / 1024


def self_peak_rss_mb() -> float:
    """This driver's own peak RSS: no child can report less (see the module docstring)."""
    return _rss_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def measure(argv: list[str], *, capture: bool = False) -> Run:
    """Run ``argv`` and return its wall time, CPU time and peak RSS (``os.wait4``: the child's own rusage)."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        began = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out if capture else subprocess.DEVNULL,
            stderr=err,
        )
        with TreeSampler(proc.pid) as sampler:
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: tell Popen, so it does not wait again
        err.seek(0)
        stderr = err.read().decode(errors="replace").strip()
        out.seek(0)
        stdout = out.read().decode(errors="replace").strip() if capture else ""
    detail = ""
    if proc.returncode != 0:
        last = stderr.splitlines()[-1] if stderr else ""
        detail = f"exit code {proc.returncode}: {last[:300]}"
    own_peak = _rss_mb(usage.ru_maxrss)
    tree_pss = sampler.peak_pss_kb / 1024
    return Run(
        ok=proc.returncode == 0,
        wall_s=wall,
        # ru_utime/ru_stime of wait4 include the child's reaped descendants: the whole tree's CPU time.
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=max(own_peak, tree_pss),
        detail=detail,
        stdout=stdout,
        tree_rss_mb=sampler.peak_rss_kb / 1024,
        tree_pss_mb=tree_pss,
        processes=max(1, sampler.max_processes),
    )


def run_child(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a helper process from the repository root, its output captured as text (not measured: see ``measure``)."""
    return subprocess.run(
        argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
    )


def generator_version() -> str:
    """A short hash of the generator's source: part of the cache key."""
    try:
        return hashlib.sha256(b"".join(path.read_bytes() for path in GENERATOR)).hexdigest()[:10]
    except OSError:
        return "unknown"


def ensure_file(records: int, distinct_keys: int, seed: int) -> tuple[Path, float]:
    """The cached benchmark file (generated in a subprocess if missing) and the seconds spent generating it."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = DATA_DIR / f"trail-{records}r-{distinct_keys}k-s{seed}-g{generator_version()}.json.gz"
    if path.exists():
        return path, 0.0
    tmp = path.with_name(path.name + ".tmp")
    print(f"generating {records:,} records over {distinct_keys:,} distinct keys -> {path.name} ...", flush=True)
    began = time.perf_counter()
    argv = [sys.executable, "-m", "auditor.demo.generator", "--benchmark", str(records)]
    argv += ["--distinct-keys", str(distinct_keys), "--seed", str(seed), "--file", str(tmp)]
    done = run_child(argv)
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"generation failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    tmp.replace(path)
    return path, time.perf_counter() - began


def warm_bytecode() -> str:
    """Write the project's bytecode caches (``__pycache__``, git-ignored) before measuring, and say so.

    Every installation has them: ``pip install`` writes them, and an editable install writes them on its first run,
    unless ``PYTHONDONTWRITEBYTECODE`` is set (as on some build machines). Without them each measured process would
    compile the project's modules from source again (about 0.1 s), which an installed ``ddb-audit`` does not.
    """
    done = run_child([sys.executable, "-m", "compileall", "-q", "auditor", "benchmarks"])
    if done.returncode != 0:
        return f"bytecode caches: not written ({(done.stdout + done.stderr).strip()[-200:]})"
    return "bytecode caches: written before measuring, as an install has them"


def floor_argv(path: Path) -> list[str]:
    return [sys.executable, "-c", FLOOR, str(path)]


def pipeline_argv(path: Path, jobs: int | None = None, *, interpreted: bool = False) -> list[str]:
    """``analyze-trail`` as installed (compiled modules where ``pip install`` built them), or with ``interpreted``
    from the source alone (what the Lambda functions run; see :mod:`benchmarks.interpreted`)."""
    module = "benchmarks.interpreted" if interpreted else "auditor"
    argv = [sys.executable, "-m", module, "analyze-trail", str(path), "--format", "json"]
    return argv if jobs is None else [*argv, "--jobs", str(jobs)]


@dataclass(slots=True)
class Summary:
    """Medians over the successful runs of one measurement."""

    runs: int
    ok_runs: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    detail: str

    @classmethod
    def of(cls, runs: list[Run]) -> Summary:
        good = [r for r in runs if r.ok]
        failed = next((r.detail for r in runs if not r.ok), "")
        if not good:
            return cls(len(runs), 0, float("nan"), float("nan"), float("nan"), failed)
        return cls(
            runs=len(runs),
            ok_runs=len(good),
            wall_s=statistics.median(r.wall_s for r in good),
            cpu_s=statistics.median(r.cpu_s for r in good),
            peak_rss_mb=statistics.median(r.peak_rss_mb for r in good),
            detail=failed,
        )

    @property
    def ok(self) -> bool:
        return self.ok_runs > 0


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _row(name: str, s: Summary, records: int) -> str:
    if not s.ok:
        return f"{name:<26} {s.ok_runs}/{s.runs}  not measured: {s.detail}"
    rate = records / s.wall_s if s.wall_s > 0 else float("inf")
    return f"{name:<26} {s.ok_runs}/{s.runs}  {s.wall_s:>9.2f} {s.cpu_s:>8.2f} {rate:>13,.0f} {s.peak_rss_mb:>12,.1f}"


def run(args: argparse.Namespace) -> None:
    records: int = args.records
    distinct_keys: int = args.distinct_keys if args.distinct_keys is not None else max(1, records // 4)

    path, gen_s = ensure_file(records, distinct_keys, args.seed)
    gz_mb = path.stat().st_size / 1e6
    print(
        f"file: {path.relative_to(REPO)} ({records:,} records, {distinct_keys:,} distinct keys, {gz_mb:.1f} MB gz"
        + (f", generated in {gen_s:.1f} s)" if gen_s else ", cached)"),
        flush=True,
    )

    print(warm_bytecode(), flush=True)
    probe = run_child(
        [sys.executable, "-c", "from benchmarks.interpreted import compiled_modules; print(len(compiled_modules()))"]
    )
    compiled = probe.stdout.strip() if probe.returncode == 0 else "?"
    print(f"analyze-trail as installed: {compiled} modules compiled (setup.py; 0: interpreted source)", flush=True)

    floors: list[Run] = []
    ones: list[Run] = []
    sources: list[Run] = []
    pipes: list[Run] = []
    raw_bytes = 0
    for i in range(args.repeat):  # interleaved, so drift (thermal, page cache, other load) hits all alike
        f = measure(floor_argv(path), capture=True)
        if f.ok:
            try:
                info = json.loads(f.stdout)
                raw_bytes = int(info["raw_bytes"])
                if int(info["records"]) != records:
                    f.ok, f.detail = False, f"floor read {info['records']} records, expected {records}"
            except (ValueError, KeyError, TypeError):
                f.ok, f.detail = False, f"unexpected floor output {f.stdout[:200]!r}"
        floors.append(f)
        one = measure(pipeline_argv(path, jobs=1))
        ones.append(one)
        p = measure(pipeline_argv(path))
        pipes.append(p)
        src = measure(pipeline_argv(path, jobs=1, interpreted=True))
        sources.append(src)
        states = ", ".join("ok" if r.ok else r.detail for r in (one, p, src))
        print(
            f"  run {i + 1}/{args.repeat}: floor {f.wall_s:.2f} s wall {f.cpu_s:.2f} s CPU; --jobs 1 "
            f"{one.wall_s:.2f} s wall {one.cpu_s:.2f} s CPU; default {p.wall_s:.2f} s wall {p.cpu_s:.2f} s CPU; "
            f"--jobs 1 interpreted {src.cpu_s:.2f} s CPU ({states})",
            flush=True,
        )

    floor, one_s, pipe, src_s = Summary.of(floors), Summary.of(ones), Summary.of(pipes), Summary.of(sources)
    if raw_bytes:
        print(f"raw JSON: {raw_bytes / 1e6:.1f} MB, {raw_bytes / records:,.0f} bytes per record")
    print()
    print(f"{'measurement':<26} runs  {'wall s':>9} {'cpu s':>8} {'records/s':>13} {'peak RSS MB':>12}")
    print(_row("(a) parse floor", floor, records))
    print(_row("(b) analyze-trail --jobs 1", one_s, records))
    print(_row("(c) analyze-trail", pipe, records))
    print(_row("(d) (b) interpreted source", src_s, records))
    good = [p for p in pipes if p.ok]
    if good:
        print(
            f"    analyze-trail process tree: up to {max(p.processes for p in good)} processes; peak summed PSS "
            f"{statistics.median(p.tree_pss_mb for p in good):,.1f} MB, peak summed RSS (shared pages counted per "
            f"process) {statistics.median(p.tree_rss_mb for p in good):,.1f} MB"
        )
    print()

    triples = [(f, o, p) for f, o, p in zip(floors, ones, pipes, strict=True) if f.ok and o.ok and p.ok]
    ratios: tuple[float, float, float] | None = None
    if triples:
        cpu_ratio = statistics.median(f.cpu_s / o.cpu_s for f, o, _ in triples)
        wall_ratio = statistics.median(f.wall_s / p.wall_s for f, _, p in triples)
        rss_ratio = statistics.median(max(o.peak_rss_mb, p.peak_rss_mb) / f.peak_rss_mb for f, o, p in triples)
        ratios = (cpu_ratio, wall_ratio, rss_ratio)
        print(
            f"floor CPU / --jobs 1 CPU:       {cpu_ratio:.2f}  (target >= {TARGET_JOBS1_CPU_RATIO:.1f})  "
            f"{_verdict(cpu_ratio >= TARGET_JOBS1_CPU_RATIO)}"
        )
        print(
            f"floor wall / default-jobs wall: {wall_ratio:.2f}  (target >= {TARGET_WALL_RATIO:.1f})  "
            f"{_verdict(wall_ratio >= TARGET_WALL_RATIO)}"
        )
        print(
            f"pipeline / floor peak RSS:      {rss_ratio:.3f}  (target <= {TARGET_RSS_RATIO:.1f})  "
            f"{_verdict(rss_ratio <= TARGET_RSS_RATIO)}"
        )
        pairs = [(f, d) for f, d in zip(floors, sources, strict=True) if f.ok and d.ok]
        if pairs:
            src_ratio = statistics.median(f.cpu_s / d.cpu_s for f, d in pairs)
            print(f"floor CPU / (d) CPU:            {src_ratio:.2f}  (the interpreted source, as Lambda runs it)")
        print(f"    ({len(triples)} repeats; medians of the per-repeat ratios)")
    else:
        reason = next((r.detail for r in (*pipes, *ones, *floors) if not r.ok), "no run succeeded")
        print(f"ratios: not measured  FAIL: {reason}")

    if args.skip_1m:
        print(f"1M distinct keys memory run: skipped (--skip-1m; target <= {TARGET_1M_RSS_MB:.0f} MB)")
    else:
        big = args.big_records
        print()
        big_path, big_gen_s = ensure_file(big, big, args.seed)
        state = f"generated in {big_gen_s:.1f} s" if big_gen_s else "cached"
        print(f"file: {big_path.relative_to(REPO)} ({big:,} records = distinct keys, {state})", flush=True)
        b = measure(pipeline_argv(big_path))
        if b.ok:
            rate = big / b.wall_s if b.wall_s > 0 else float("inf")
            print(
                f"(c) analyze-trail on {big:,} records / {big:,} distinct keys: {b.wall_s:.2f} s, {rate:,.0f} "
                f"records/s, peak memory {b.peak_rss_mb:,.1f} MB  (target <= {TARGET_1M_RSS_MB:.0f} MB)  "
                f"{_verdict(b.peak_rss_mb <= TARGET_1M_RSS_MB)}\n"
                f"    {b.processes} processes; peak summed PSS {b.tree_pss_mb:,.1f} MB, summed RSS "
                f"{b.tree_rss_mb:,.1f} MB"
            )
        else:
            print(f"(c) analyze-trail on {big:,} distinct keys: not measured  FAIL: {b.detail}")

    print()
    print(
        f"driver peak RSS {self_peak_rss_mb():.1f} MB (no child RSS can read lower); Python "
        f"{sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    if ratios is None:
        print("jobs1_cpu_ratio=nan default_wall_ratio=nan memory_ratio=nan")
    else:
        print(f"jobs1_cpu_ratio={ratios[0]:.3f} default_wall_ratio={ratios[1]:.3f} memory_ratio={ratios[2]:.4f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ingest", description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--records", type=int, default=200_000, help="records in the main file (default 200000)")
    parser.add_argument("--distinct-keys", type=int, help="distinct partition keys in it (default records/4)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs of (a), (b) and (c) (default 3)")
    parser.add_argument("--skip-1m", action="store_true", help="skip the 1M-distinct-keys memory run")
    parser.add_argument("--big-records", type=int, default=1_000_000, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    args = parser.parse_args(argv)
    if args.records < 1 or args.repeat < 1 or args.big_records < 1:
        parser.error("--records, --repeat and --big-records must be >= 1")
    if args.distinct_keys is not None and not 1 <= args.distinct_keys <= args.records:
        parser.error("--distinct-keys must be between 1 and --records")
    try:
        run(args)
    except (RuntimeError, OSError) as exc:  # report, never gate
        print(f"benchmark could not run: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
