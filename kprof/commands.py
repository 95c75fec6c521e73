"""One function per CLI command: options in, one pass down the pipeline, text or JSON out.

spec -> build -> launch -> results -> render; each command reads top to bottom. Printing is in
:mod:`kprof.render`; these functions only decide what to run and which exit code it earns.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from kprof import render
from kprof.errors import EXIT_BUILD, EXIT_FAILED, EXIT_OK, BuildError, UsageError


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
    from kprof import build, catalog

    if opts.all == bool(opts.names):
        raise UsageError("name the kernels to build, or give --all (not both)")
    targets = [e.path for e in catalog.entries()] if opts.all else [catalog.find(n) for n in opts.names]
    arch = build.check_arch(opts.arch) if opts.arch else build.detect_arch()
    results, failures = [], []
    from kprof import spec as spec_mod

    for path in targets:
        spec = spec_mod.load(path)
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
        for name, exc in failures:
            print(exc.log.rstrip(), file=sys.stderr)
            print(f"kprof: error: {name}: {exc}", file=sys.stderr)
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


def cmd_doctor(opts: argparse.Namespace) -> int:
    from kprof import doctor

    checks = doctor.run_checks()
    if opts.json:
        _emit_json([asdict(c) for c in checks])
    else:
        print(render.doctor_table(checks))
    return EXIT_OK
