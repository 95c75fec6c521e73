"""One function per CLI command: options in, one pass down the pipeline, text or JSON out.

spec -> build -> launch -> results -> render; each command reads top to bottom. Printing is in
:mod:`kprof.render`; these functions only decide what to run and which exit code it earns.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from kprof import render
from kprof.errors import EXIT_BUILD, EXIT_CUDA, EXIT_FAILED, EXIT_OK, BuildError, KprofError, UsageError


def _emit_json(data: object) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def cmd_list(opts: argparse.Namespace) -> int:
    from kprof import catalog, spec as spec_mod
    from kprof.errors import SpecError

    rows = []
    for entry in catalog.entries():
        try:
            description = spec_mod.load(entry.path).description
        except SpecError as exc:
            description = f"INVALID SPEC: {exc}"
        rows.append({"name": entry.name, "group": entry.group, "path": str(entry.path), "description": description})
    if opts.json:
        _emit_json(rows)
    else:
        print(render.list_table(rows))
    return EXIT_OK


def cmd_build(opts: argparse.Namespace) -> int:
    from kprof import build, catalog, spec as spec_mod

    if opts.all == bool(opts.names):
        raise UsageError("name the kernels to build, or give --all (not both)")
    targets = [e.path for e in catalog.entries()] if opts.all else [catalog.find(n) for n in opts.names]
    arch = build.check_arch(opts.arch) if opts.arch else build.detect_arch()
    results, failures = [], []
    specs = []
    for path in targets:
        spec = spec_mod.load(path)
        specs.append(spec)
        if spec.twin is not None:
            specs.append(spec.twin_spec())  # a sanitizer case's fixed twin builds with it
    for spec in specs:
        try:
            results.append((spec, build.build(spec, arch, force=opts.force)))
        except BuildError as exc:
            if not opts.all:
                raise
            failures.append((spec.name, exc))  # keep going: the other kernels still build
    if opts.json:
        _emit_json([
            {"name": s.name, "entry": s.entry, "arch": b.arch, "cubin": str(b.cubin), "cached": b.cached,
             "usage": asdict(b.usage_of(s.entry))}
            for s, b in results
        ] + [{"name": n, "error": str(e)} for n, e in failures])  # fmt: skip
    else:
        print(render.build_table(results))
        for name, failure in failures:
            print(failure.log.rstrip(), file=sys.stderr)
            print(f"kprof: error: {name}: {failure}", file=sys.stderr)
    return EXIT_BUILD if failures else EXIT_OK


def cmd_run(opts: argparse.Namespace) -> int:
    from kprof import build, catalog, launch, spec as spec_mod

    spec = catalog.load(opts.name)
    preset = "sanitize" if opts.sanitize_sizes else "default"
    overrides = spec_mod.parse_size_overrides(opts.size)
    resolved = spec.resolve(overrides, preset=preset)  # bad sizes are refused before any build
    if opts.timeout <= 0:
        raise UsageError(f"--timeout {opts.timeout:g}: give a positive number of seconds")
    built = build.build(spec, opts.arch)
    result = launch.run_kernel(
        spec, built, resolved.sizes, preset=preset, time=True, timeout=opts.timeout, seed=opts.seed
    )
    if opts.json:
        data = {k: v for k, v in asdict(result).items() if k != "raw"}
        data["usage"] = asdict(built.usage_of(spec.entry))
        data["flops"], data["bytes"] = resolved.flops, resolved.bytes
        _emit_json(data)
    else:
        print(render.run_report(result, resolved, built))
    return EXIT_OK if result.ok else EXIT_FAILED


def cmd_sanitize(opts: argparse.Namespace) -> int:
    from kprof import __version__, findings, sanitize

    if opts.timeout <= 0:
        raise UsageError(f"--timeout {opts.timeout:g}: give a positive number of seconds")
    if opts.from_xml:
        if opts.name:
            raise UsageError("--from-xml reads a saved report: give the file, not a kernel name")
        if opts.tool not in sanitize.TOOLS:
            raise UsageError(f"--from-xml needs --tool with the tool that wrote it ({', '.join(sanitize.TOOLS)})")
        allocations = _read_allocations(opts.allocations) if opts.allocations else []
        results = [sanitize.from_xml(Path(opts.from_xml), opts.tool, allocations)]
        kernel = None
    else:
        if not opts.name:
            raise UsageError("name a kernel or spec to sanitize, or give --from-xml FILE --tool TOOL")
        from kprof import build, catalog, launch, spec as spec_mod

        tools = sanitize.expand_tools(opts.tool)
        spec = catalog.load(opts.name)
        resolved = spec.resolve(spec_mod.parse_size_overrides(opts.size), preset="sanitize")
        built = build.build(spec, opts.arch)
        job = launch.make_job(spec, built, resolved.sizes, preset="sanitize")
        if not opts.json:
            print(f"{spec.name}  {resolved.size_text()}  tools: {', '.join(tools)}", flush=True)
        if opts.memcheck_padding < 0:
            raise UsageError(f"--memcheck-padding {opts.memcheck_padding}: give 0 or a positive number of bytes")
        results = sanitize.run_all(job, tools, timeout=opts.timeout, padding=opts.memcheck_padding)
        kernel = spec.name
    if opts.sarif:
        _write_json(Path(opts.sarif), findings.to_sarif(results, __version__, root=str(Path.cwd())))
    if opts.json:
        _emit_json(findings.to_json(results, kernel))
    else:
        print(render.sanitize_report(results))
    if any(r.findings for r in results):
        return EXIT_FAILED
    return EXIT_OK if all(r.ok for r in results) else EXIT_CUDA


def cmd_cases(opts: argparse.Namespace) -> int:
    from kprof import cases

    corpus = cases.load_all(opts.names)
    if opts.list:
        rows = [c.to_dict() for c in corpus]
        if opts.json:
            _emit_json(rows)
        else:
            print(render.cases_list(rows))
        return EXIT_OK
    if opts.timeout <= 0:
        raise UsageError(f"--timeout {opts.timeout:g}: give a positive number of seconds")
    if opts.jobs < 1:
        raise UsageError(f"--jobs {opts.jobs}: give 1 or more")
    from concurrent.futures import ThreadPoolExecutor

    def one(case):
        result = cases.run_case(case, opts.arch, opts.timeout)
        if not opts.json:
            print(f"  {case.name} ({case.expect.tool}): {'ok' if result.ok else 'MISS'}", file=sys.stderr, flush=True)
        return result

    # Each case runs in child processes, so threads only wait; several cases share the GPU.
    with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        results = list(pool.map(one, corpus))
    if opts.json:
        _emit_json([r.to_dict() for r in results])
    else:
        print(render.cases_matrix(results))
    return EXIT_OK if all(r.ok for r in results) else EXIT_FAILED


def _read_allocations(path: str) -> list:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--allocations {path}: cannot read the runner's result file ({exc})") from None
    allocations = data.get("allocations") if isinstance(data, dict) else None
    if not isinstance(allocations, list):
        raise UsageError(f"--allocations {path}: no 'allocations' list in it (use the runner's result.json)")
    return allocations


def _write_json(path: Path, data: object) -> None:
    try:
        path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def cmd_profile(opts: argparse.Namespace) -> int:
    from kprof import bench, build, catalog, launch, profile, spec as spec_mod
    from kprof.ncu import NcuError

    extra = tuple(m.strip() for m in opts.metrics.split(",") if m.strip())
    if opts.timeout <= 0:
        raise UsageError(f"--timeout {opts.timeout:g}: give a positive number of seconds")
    report_dir = Path(opts.save_report) if opts.save_report else None
    if report_dir:
        try:
            report_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--save-report {report_dir}: {exc.strerror or exc}") from None
    if opts.plot:
        from kprof import plot

        plot.require()
    overrides = spec_mod.parse_size_overrides(opts.size)
    specs = [catalog.load(n) for n in opts.names]  # every name checked before anything runs
    sweep = bench.parse_sweep(opts.param, "param")
    for names, values in sweep.items():
        if len(values) != 1 or "," in names:
            raise UsageError(f"--param {names}: kprof profile takes one value per parameter, e.g. --param BK=16")
    for spec in specs:
        bench.points(spec, {}, sweep)  # every parameter name and value checked as kprof bench checks them
    params = {names: values[0] for names, values in sweep.items()}
    specs = [bench._with_params(spec, params) for spec in specs]
    # One kernel: every --size must be one of its sizes. Several: each takes the sizes it has.
    resolved_all = [spec.resolve(overrides if len(specs) == 1 else
                                 {k: v for k, v in overrides.items() if k in spec.size_names}) for spec in specs]
    profiles, errors = [], []
    for spec, resolved in zip(specs, resolved_all):
        built = build.build(spec, opts.arch)
        job = launch.make_job(spec, built, resolved.sizes)
        if params:
            job["params"] = params
        if not opts.json:
            print(f"profiling {spec.name} {resolved.size_text()} ...", file=sys.stderr, flush=True)
        try:
            rows = profile.profile_rows(job, spec.name, set_name=opts.set_name, extra_metrics=extra,
                                        report_dir=report_dir, timeout=opts.timeout)
            if len(resolved.steps) == 1:
                rows = rows[-1:]
            for row in rows:  # a spec with steps: one report per kernel it launched, named spec:kernel
                kname = row["Kernel Name"].value if "Kernel Name" in row else None
                label = f"{spec.name}:{kname}" if len(rows) > 1 and kname else spec.name
                if params:
                    label += "[" + ",".join(f"{k}={v}" for k, v in params.items()) + "]"
                one = len(rows) == 1  # the spec's work formulas describe the whole spec, not one of its kernels
                prof = profile.analyse(row, label, resolved.sizes, arch=built.arch,
                                       spec_flops=resolved.flops if one else None,
                                       spec_bytes=resolved.bytes if one else None)
                for m in extra:  # a metric ncu accepted but did not report is said, not dropped
                    prof.notes.append(f"extra {m} = {row[m].value} {row[m].unit}".rstrip() if m in row else
                                      f"extra {m}: ncu reported no value for it (see `ncu --query-metrics`)")
                profiles.append(prof)
        except NcuError as exc:
            if exc.reason != "counters":
                errors.append((spec.name, exc))  # the other kernels still run and report
                continue
            result = launch.run_kernel(spec, built, resolved.sizes, time=True, timeout=opts.timeout)
            usage = built.usage_of(spec.entry)
            profiles.append(profile.fallback(
                spec.name, resolved.sizes, (result.time_ms or 0) / 1e3 or None, usage.registers,
                resolved.threads_per_block, usage.shared_static, resolved.shared_mem, built.arch,
                resolved.flops, resolved.bytes, str(exc)))
    if opts.plot and profiles:
        from kprof import plot

        plot.roofline(profiles, Path(opts.plot))
    if opts.json:
        _emit_json({"version": profile.PROFILE_VERSION, "kernels": [p.to_dict() for p in profiles],
                    "errors": [{"kernel": n, "error": str(e), "reason": e.reason} for n, e in errors]})
    else:
        if profiles:
            print(render.profile_report(profiles))
        for _name, failure in errors:
            if failure.log:
                print(failure.log.rstrip(), file=sys.stderr)
            print(f"kprof: error: {failure}", file=sys.stderr)
    if errors:
        return EXIT_CUDA
    return EXIT_OK


def cmd_occupancy(opts: argparse.Namespace) -> int:
    from kprof import build, catalog, occupancy, spec as spec_mod

    spec = catalog.load(opts.name)
    resolved = spec.resolve(spec_mod.parse_size_overrides(opts.size))
    arch = build.check_arch(opts.arch) if opts.arch else build.detect_arch()
    lim = occupancy.limits_for(arch)
    built = build.build(spec, arch)
    usage = built.usage_of(spec.entry)
    dynamic = resolved.shared_mem if opts.dynamic_smem is None else opts.dynamic_smem
    if dynamic < 0:
        raise UsageError(f"--dynamic-smem {dynamic}: give 0 or more bytes")
    blocks = opts.block or [resolved.threads_per_block]
    chosen = [occupancy.compute(lim, b, usage.registers, usage.shared_static, dynamic) for b in blocks]
    table = occupancy.sweep(lim, usage.registers, usage.shared_static, dynamic)
    if opts.json:
        _emit_json({
            "kernel": spec.name, "arch": arch, "registers": usage.registers, "static_smem": usage.shared_static,
            "dynamic_smem": dynamic,
            "launch": [dict(asdict(o), advice=occupancy.advice(lim, o, usage.registers, usage.shared_static, dynamic))
                       for o in chosen],
            "sweep": [asdict(o) for o in table],
        })  # fmt: skip
    else:
        print(render.occupancy_report(spec.name, arch, usage, dynamic, chosen, table,
                                      [occupancy.advice(lim, o, usage.registers, usage.shared_static, dynamic)
                                       for o in chosen]))
    return EXIT_OK


def cmd_bench(opts: argparse.Namespace) -> int:
    from kprof import bench, catalog, history, telemetry

    mode = opts.mode or "cold"
    for flag, value in (("--rel-stdev", opts.rel_stdev), ("--min-time", opts.min_time), ("--max-time", opts.max_time),
                        ("--timeout", opts.timeout)):
        if value <= 0:
            raise UsageError(f"{flag} {value:g}: give a positive number")
    if opts.timer == "cupti":
        from kprof import cupti_timer

        why = cupti_timer.unavailable()
        if why is not None:
            raise UsageError(f"--timer cupti: {why}; or use --timer events")
    if opts.plot:
        from kprof import plot

        plot.require()
    sizes = bench.parse_sweep(opts.sweep_size, "size")
    params = bench.parse_sweep(opts.param, "param")
    specs = [catalog.load(n) for n in opts.names]
    plan = []
    for spec in specs:  # every name, size and parameter checked before anything runs
        # With several kernels, each takes the swept names it has (a matmul's M,N,K; vector_add's N).
        own_sizes = {k: v for k, v in sizes.items() if len(specs) == 1 or set(k.split(",")) <= set(spec.size_names)}
        own_params = {k: v for k, v in params.items() if len(specs) == 1 or set(k.split(",")) <= set(dict(spec.defines))}
        baseline = spec.baseline if opts.baseline == "auto" else (None if opts.baseline == "none" else opts.baseline)
        if baseline == "cublas_sgemm" and spec.baseline != "cublas_sgemm":
            raise UsageError(f"{spec.name}: --baseline cublas_sgemm needs a matmul spec (buffers A, B, C; sizes M, N, K)")
        if baseline and baseline not in bench.BASELINES:
            where = f"--baseline {baseline!r}" if baseline == opts.baseline else f"{spec.name}: baseline {baseline!r}"
            try:
                other = catalog.load(baseline)
            except KprofError:
                raise UsageError(f"{where}: not a kernel spec kprof can find; use auto, none, "
                                 f"{', '.join(bench.BASELINES)} or a name from kprof list") from None
            missing = [k for k in spec.size_names if k not in other.size_names]
            if missing:
                raise UsageError(f"{spec.name}: baseline {baseline} has no size {missing[0]!r}; a baseline spec "
                                 f"takes the kernel's sizes ({', '.join(spec.size_names)})")
        plan += [(spec, s, p, baseline) for s, p in bench.points(spec, own_sizes, own_params)]
    rule = bench.rule_from(opts.rel_stdev, opts.min_time, opts.max_time, 10)
    peak = bench.peak()
    conn = None if opts.no_history else history.connect()
    run_id, commit = history.new_run(), history.git_commit()
    snap = telemetry.snapshot()
    machine = {"gpu": snap.gpu if snap else None, "driver": snap.driver if snap else None}
    results = []
    try:
        for i, (spec, s, p, baseline) in enumerate(plan, 1):
            label = " ".join([f"{k}={v}" for k, v in s.items()] + [f"{k}={v}" for k, v in p.items()])
            if not opts.json:
                print(f"[{i}/{len(plan)}] {spec.name} {label}".rstrip(), file=sys.stderr, flush=True)
            point = bench.run_point(spec, s, p, mode, rule, peak, baseline=baseline, arch=opts.arch,
                                    timeout=opts.timeout, timer=opts.timer)
            results.append(point)
            if conn is not None:  # written as soon as it is measured: an interrupted sweep keeps it
                history.record(conn, run_id, "bench", spec.name, {"sizes": point.sizes, "params": point.params,
                               "mode": mode}, point.to_dict(), machine, commit)
    except KeyboardInterrupt:
        if not opts.json:
            print(f"interrupted: {len(results)} of {len(plan)} points measured and kept (run {run_id})", file=sys.stderr)
        raise
    if opts.plot and results:
        from kprof import plot

        plot.bench(results, Path(opts.plot))
    if opts.json:
        _emit_json({"version": bench.BENCH_VERSION, "run": run_id, "mode": mode, "rule": rule, "peak": peak,
                    "machine": machine, "commit": commit, "points": [r.to_dict() for r in results]})
    else:
        print(render.bench_table(results, peak, run_id if conn is not None else None))
    if any(r.status == "error" for r in results):
        return EXIT_CUDA
    return EXIT_FAILED if any(r.status != "ok" for r in results) else EXIT_OK


def cmd_peak(opts: argparse.Namespace) -> int:
    from kprof import bench

    data = bench.peak(refresh=opts.refresh)
    if opts.json:
        _emit_json(data)
    else:
        print(render.peak_report(data))
    return EXIT_OK


def cmd_history(opts: argparse.Namespace) -> int:
    from kprof import history

    conn = history.connect()
    rows = history.rows(conn, kernel=opts.name, kind="bench", limit=opts.limit)
    if opts.json:
        _emit_json(rows)
    else:
        print(render.history_table(rows, str(history.path())))
    return EXIT_OK


def cmd_compare(opts: argparse.Namespace) -> int:
    from kprof import history, stats

    conn = history.connect()
    before_id, after_id = history.resolve_run(conn, opts.before), history.resolve_run(conn, opts.after)
    key = lambda r: (r["kernel"], json.dumps(r["point"], sort_keys=True))  # noqa: E731
    before = {key(r): r for r in history.rows(conn, run=before_id, limit=100000)}
    after = {key(r): r for r in history.rows(conn, run=after_id, limit=100000)}
    rows = []
    for k in sorted(set(before) & set(after)):
        b, a = before[k]["data"], after[k]["data"]
        if b.get("summary") and a.get("summary"):
            verdict, change = stats.classify(_summary(b["summary"]), _summary(a["summary"]))
            rows.append({"kernel": k[0], "point": json.loads(k[1]), "before_s": b["summary"]["median"],
                         "after_s": a["summary"]["median"], "change": change, "verdict": verdict})
    if opts.json:
        _emit_json({"before": before_id, "after": after_id, "rows": rows})
    else:
        print(render.compare_table(before_id, after_id, rows))
    if not rows:
        raise UsageError(f"runs {before_id} and {after_id} have no kernel and size in common")
    return EXIT_OK


def _summary(d: dict):
    from kprof.stats import Summary

    return Summary(**{k: d[k] for k in ("n", "median", "q1", "q3", "min", "max", "mean", "stdev")})


def cmd_doctor(opts: argparse.Namespace) -> int:
    from kprof import doctor

    checks = doctor.run_checks()
    if opts.json:
        _emit_json([asdict(c) for c in checks])
    else:
        print(render.doctor_table(checks))
    return EXIT_OK
