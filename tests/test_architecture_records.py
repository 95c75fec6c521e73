"""The house rules of records, checked on the source: what a stage hands on is typed (no Any for
kprof's own types, Any rare), states are Literals, records of at most 25 fields in typed parts,
every error class in errors.py, each record read by its keys only in its decoder, a baseline and a
verdict's rule one typed value, each command its own typed options."""

from __future__ import annotations

import ast
import re

from house import MODULES, PKG, _nodes, _parsed, _sources, _trees

# issue 70: what a stage hands on is typed
TYPED_NAMES = re.compile(r"^(prepared|profiles?|report|timed)$")


def test_no_any_for_a_prepared_spec_a_profile_or_a_report():
    """A parameter named for a prepared spec, a profile or a report, and an API function's result,
    is its type (or a protocol of it: kprof.launch.prepared.Prepared), never ``Any``."""
    loose = []
    for path in MODULES.values():
        for fn in (n for n in ast.walk(_parsed(path))
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for arg in fn.args.args + fn.args.kwonlyargs:
                if TYPED_NAMES.match(arg.arg) and arg.annotation is not None and "Any" in ast.unparse(arg.annotation):
                    loose.append(f"{path.relative_to(PKG)}:{fn.lineno} {fn.name}({arg.arg}: "
                                 f"{ast.unparse(arg.annotation)})")
            if path.parent.name == "commands" and fn.name.startswith("run_") and fn.returns is not None and \
                    "Any" in ast.unparse(fn.returns):
                loose.append(f"{path.relative_to(PKG)}:{fn.lineno} {fn.name} -> "
                             f"{ast.unparse(fn.returns)}")
    assert not loose, f"Any where a prepared spec, a profile or a report is handed on: {loose}"


STATE_FIELDS = ("status", "mode", "verdict", "state", "kind")

# states whose words come from elsewhere, so no closed list is theirs: why each stays a str
OPEN_STATES = {
    ("findings.py", "Finding.kind"): "a tool's own kind of record (out-of-bounds-write, race-raw, "
                                     "...), any tool's",
    ("corpus/cases.py", "Expect.kind"): "the finding kind a case expects: a Finding.kind",
    ("tools/nsight/ncu.py", "RuleResult.kind"): "Nsight Compute's rule types (OPT, "
                                                "INF, WRN, ...), its words",
    ("results/history.py", "HistoryRow.kind"): "what a row of the store is, as "
                                               "any kprof version wrote it",
    ("results/history.py", "HistoryRow.status"): "a point's status as any kprof version stored it",
    ("spec/schema.py", "Fill.kind"): "a fill rule's name, checked against "
                                     "FILLS where the spec is read",
}


def test_no_status_or_kind_is_a_bare_str():
    """A record's status, mode, verdict or kind is a Literal (or an enum) of what it can be (issue
    70); those whose
    words come from elsewhere are in OPEN_STATES with why."""
    bare = []
    for path in MODULES.values():
        for cls in (n for n in ast.walk(_parsed(path)) if isinstance(n, ast.ClassDef)):
            for field in (f for f in cls.body if isinstance(f, ast.AnnAssign)
                          and isinstance(f.target, ast.Name)):
                if field.target.id in STATE_FIELDS and ast.unparse(field.annotation) in ("str", "str | None"):
                    key = (str(path.relative_to(PKG)), f"{cls.name}.{field.target.id}")
                    if key not in OPEN_STATES:
                        bare.append(f"{key[0]} {key[1]}: {ast.unparse(field.annotation)}")
    assert not bare, f"states as a bare str: {bare}"


MAX_FIELDS = 25


def _records() -> list[tuple[str, ast.ClassDef]]:
    """kprof's records: every class under a ``@dataclass`` decorator, with its module's path."""
    return [(str(path.relative_to(PKG)), cls) for path in MODULES.values()
            for cls in ast.walk(_parsed(path)) if isinstance(cls, ast.ClassDef)
            and any("dataclass" in ast.unparse(d) for d in cls.decorator_list)]


def test_no_record_has_more_than_25_fields():
    """Issue 70: KernelProfile had 54 flat fields, PointResult 33; a wide record is split into typed
    parts that say what they hold (a profile's occupancy, memory, shared memory, compute, stalls; a
    point's rates and timer)."""
    wide = []
    for where, cls in _records():
        names = [f.target.id for f in cls.body if isinstance(f, ast.AnnAssign)
                 and isinstance(f.target, ast.Name)
                 and f.target.id != "_" and "ClassVar" not in ast.unparse(f.annotation)]
        if len(names) > MAX_FIELDS:
            wide.append(f"{where} {cls.name}: {len(names)} fields")
    assert not wide, f"records over {MAX_FIELDS} fields: {wide}"


def _mirrors(expr: ast.expr) -> bool:
    """``self.part.field`` (or that or None, by a condition): a property that repeats a field of one
    of its fields."""
    if isinstance(expr, ast.IfExp):
        return _mirrors(expr.body) or _mirrors(expr.orelse)
    return (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Attribute)
            and isinstance(expr.value.value, ast.Name) and expr.value.value.id == "self")


def test_no_record_mirrors_a_field_of_its_parts():
    """Issue 70: PointResult had 12 properties that returned its first baseline's fields under the
    point's name; a reader names the part (``point.first.of_baseline``), so each value has one
    name."""
    mirrors = []
    for where, cls in _records():
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)
                   and any(ast.unparse(d) == "property" for d in n.decorator_list)):
            body = [s for s in fn.body
                    if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None \
                    and _mirrors(body[0].value):
                mirrors.append(f"{where} {cls.name}.{fn.name}: {ast.unparse(body[0].value)}")
    assert not mirrors, f"properties that repeat a part's field: {mirrors}"


def test_every_error_class_is_in_errors_py():
    """One place for every error class kprof has (kprof/errors.py): its KprofErrors, each with its
    exit code, and the pure expression checkers' ValueErrors, which the spec loader turns into
    SpecErrors."""
    from kprof import errors

    kinds = {name for name, obj in vars(errors).items() if isinstance(obj, type)
             and issubclass(obj, BaseException)}
    kinds |= {"Exception", "BaseException", "ValueError", "RuntimeError", "TypeError", "KeyError",
              "OSError"}
    elsewhere = [f"{name}.py: {node.name}" for name, path in MODULES.items() if name != "errors"
                 for tree in _trees(path) for node in _nodes(tree) if isinstance(node, ast.ClassDef)
                 and any((isinstance(b, ast.Name) and b.id in kinds)
                         or (isinstance(b, ast.Attribute) and b.attr in kinds) for b in node.bases)]
    assert not elsewhere, elsewhere


def test_the_childs_result_is_read_in_one_typed_place():
    """kprof/launch/childresult.py reads the child's result file (its version checked) into typed
    fields; no other module of the parent opens the file or looks up the record's keys."""
    child_side = {"launch.childresult", "child.runner", "child.workspace", "child.timing",
                  "child.framework"}  # what writes it
    patterns = ('.get("status")', '.get("phase"', '"job_seconds" in', "result_path.read_text",
                '["samples"]', '.get("samples")')
    found = [f"{name}.py: {p}" for name, path in MODULES.items() if name not in child_side
             for p in patterns if p in path.read_text()]
    assert not found, found
    text = (PKG / "launch" / "launch.py").read_text()
    assert ("-> tuple[proc.Completed, ChildResult]" in text
            and "-> tuple[proc.Completed, list[ChildResult]]" in text)


def test_every_command_takes_its_own_typed_options():
    """kprof/commands/options.py has one frozen options class per command; every cmd_* takes its
    class, every attribute a command reads of it is one of its fields, and every field is one the
    CLI's parser sets."""
    from dataclasses import fields

    from kprof.commands import cli, options

    tree = ast.parse((PKG / "commands" / "commands.py").read_text())
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for command, cls in options.BY_COMMAND.items():
        fn = funcs[f"cmd_{command}"]
        assert ast.unparse(fn.args.args[0].annotation) == cls.__name__, command
        names = {f.name for f in fields(cls)}
        helpers = [funcs[c.func.id] for c in ast.walk(fn) if isinstance(c, ast.Call)
                   and isinstance(c.func, ast.Name)
                   and c.func.id in funcs
                   and any(isinstance(a, ast.Name) and a.id == "opts" for a in c.args)]
        read = {n.attr for f in [fn, *helpers] for n in ast.walk(f)
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id == "opts"}
        assert read <= names, (command, read - names)
        parser = cli._parser()
        first = {"new": ["x"], "run": ["k"], "occupancy": ["k"], "bench": ["k"], "compare": ["r1"], "mutants": ["k"]}.get(command, [])
        given = vars(parser.parse_args([command, *first]))
        assert names <= set(given) | {"program"}, (command, names - set(given))
    assert "argparse.Namespace" not in (PKG / "commands" / "commands.py").read_text()


def test_a_baseline_is_one_typed_value_parsed_once():
    """kprof/spec/baseline.py's Baseline (a library, a spec, a Python callable) is what the bench
    plan carries; no module but pyref.py spells the stored Python reference's prefix, and the only
    module that decodes a baseline string into its kind is baseline.py (the CLI's --baseline is
    parsed there too, in baseline.of_option)."""
    constants = [f"{name}.py" for name, path in MODULES.items() if name != "spec.pyref"
                 for tree in _trees(path) for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str)
                 and node.value.startswith("python:")]
    assert not constants, constants
    from dataclasses import fields

    from kprof.commands import pipeline
    from kprof.measure import bench, points
    from kprof.spec.baseline import Baseline

    plan = {f.name: f.type for f in fields(bench.PointPlan)}
    assert (plan["baselines"] == "tuple[tuple[Baseline, Job], ...]"
            and not {"baseline", "more", "names"} & set(plan))
    assert ({f.name: f.type for f in fields(pipeline.BenchPoint)}["baselines"] == "tuple[Baseline, ...]")
    decoders = [name for name, path in MODULES.items()
                if name not in ("spec.baseline", "spec.pyref", "spec.loader", "spec.schema")
                and "def baseline_name(baseline" in path.read_text()]
    assert not decoders and Baseline.__dataclass_params__.frozen
    assert (points.PointResult.__dataclass_params__.frozen
            and points.BaselineResult.__dataclass_params__.frozen)
    assert ({f.name: f.type for f in fields(points.PointResult)}["baselines"] == "tuple[BaselineResult, ...]")
    assert not [f.name for f in fields(points.PointResult) if "baseline" in f.name
                and f.name != "baselines"]


def test_the_verdict_takes_its_rule_as_one_value():
    """verify.compare: the output's name, what the kernel wrote, the reference, one Criterion (rtol,
    atol, metric, dtype, the scale's text), and three keywords; host data is kprof/hostdata.py's."""
    import inspect

    from kprof.child import verify

    params = list(inspect.signature(verify.compare).parameters)
    assert params == ["name", "got", "expected", "rule", "poison_value", "scale", "frontier"]
    verdict = (PKG / "child" / "verify.py").read_text()
    assert "def make_input" not in verdict and "def poison(" not in verdict
    assert "def make_input" in (PKG / "child" / "hostdata.py").read_text()


def test_any_stays_rare():
    """``Any`` at most 20 per 1,000 lines of kprof/ (issue 53): a value read from outside (YAML,
    JSON, XML) is ``object`` and narrowed before use; ``Any`` is left for what has no types here
    (torch, CuPy, CUPTI and the driver's handles, NumPy values in the reference evaluator)."""
    count = lines = 0
    for path in _sources():
        text = path.read_text().splitlines()
        lines += len(text)
        count += sum(len(re.findall(r"\bAny\b", line)) for line in text
                     if not line.lstrip().startswith("from typing"))
    assert count * 1000 <= 20 * lines, f"{count} Any in {lines} lines: {count * 1000 / lines:.1f} per 1,000 (at most 20)"


# Where a record is read by its keys: each module that decodes one (kprof's own JSON read back, or
# what comes from outside: a spec's YAML, a tool's CSV header), with what it decodes. Everywhere
# else a record is typed.
DECODERS = {
    "launch/childresult.py": "the child's result file (ChildResult, its checks, errors, timing)",
    "launch/job.py": "the job file the child reads (Job.from_dict)",
    "measure/ceilings.py": "kprof peak's cache file (Ceilings, Theoretical) "
                           "and a device's attributes",
    "measure/points.py": "a stored bench point (PointResult.from_dict, its baselines)",
    "measure/bench.py": "kprof peak's result as it is measured",
    "measure/kernelprofile.py": "a stored kernel profile (KernelProfile.from_dict)",
    "findings.py": "a finding and an allocation as the child or a report wrote them",
    "results/history.py": "a history row's stored point, summary and machine",
    "tools/suites/suiteevents.py": "the pytest child's event log",
    "tools/programs/launchlog.py": "the launch hook's log",
    "tools/programs/tallylog.py": "the launch tally's log",
    "tools/sanitizers/nan.py": "the nan watcher's log",
    "tools/programs/exitcode.py": "the exit-code hook's status file",
    "tools/programs/ranks.py": "each rank's marker file",
    "tools/nsight/ncu.py": "Nsight Compute's CSV header",
    "tools/nsight/sourcepage.py": "Nsight Compute's Source page (CSV) and a stored page "
                                  "(SourceLines.from_dict)",
    "build/build.py": "a build cache entry's metadata",
    "child/runner.py": "the child's manifest",
    "child/framework.py": "CuPy's __cuda_array_interface__",
    "spec/loader.py": "a spec's YAML",
    "spec/expected.py": "a spec's YAML: its reference, tolerance and checked sizes",
    "spec/fields.py": "a spec's YAML: the fields of what to build and launch",
    "corpus/cases.py": "a corpus case's expect: block (YAML)",
    "corpus/perfcases.py": "a performance case's expect: block (YAML)",
    "corpus/benchcases.py": "the cheat corpus's YAML",
    "commands/commands.py": "the user's --allocations file",
}

# A few lookups that are not a record read back, each with why.
NOT_RECORDS = {
    ("child/timing.py", "result.data"): "the child's own result while it is being written",
    ("diagnosis/rules.py", "p.stalls.shares"): "a mapping of Nsight Compute's "
                                               "stall reasons, not a record",
    ("proc.py", "env"): "a child's environment",
    ("tools/programs/allocators.py", "out"): "a child's environment",
    ("hooks/nan_watch.py", "kwargs"): "a Triton launch's keyword arguments",
    ("hooks/rank_wrap.py", "env"): "a rank's environment",
}


def test_a_record_is_read_by_its_keys_only_in_its_decoder():
    """No ``.get("key")`` on a record kprof wrote outside the one module that decodes it into a type
    (issue 53): a new module that looks a record up by its keys is either that record's decoder
    (listed in DECODERS with what it decodes) or reads the typed record the decoder returns."""
    found = []
    for path in _sources():
        rel = path.relative_to(PKG).as_posix()
        if rel in DECODERS:
            continue
        for node in ast.walk(_parsed(path)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                receiver = ast.unparse(node.func.value)
                if receiver not in ("os.environ", "sys.modules") and (rel, receiver) not in NOT_RECORDS:
                    found.append(f"kprof/{rel}:{node.lineno}: "
                                 f"{receiver}.get({node.args[0].value!r})")
    assert not found, found
    gone = [m for m in DECODERS if not (PKG / m).is_file()] + [m for m, _ in NOT_RECORDS
                                                               if not (PKG / m).is_file()]
    assert not gone, f"DECODERS or NOT_RECORDS names a module that is not there: {gone}"


MUTATORS = {"append", "extend", "insert", "update", "setdefault", "pop", "clear", "add", "remove",
            "discard"}


def _frozen_containers() -> dict[str, set[str]]:
    """Each frozen record's name -> its fields that hold a list, dict or set."""
    out: dict[str, set[str]] = {}
    for _, cls in _records():
        if not any("frozen=True" in ast.unparse(d) for d in cls.decorator_list):
            continue
        out[cls.name] = {st.target.id for st in cls.body if isinstance(st, ast.AnnAssign)
                         and isinstance(st.target, ast.Name)
                         and ast.unparse(st.annotation).startswith(("list", "dict", "set"))}
    return out


def test_no_frozen_record_is_changed_after_it_is_made():
    """Issue 78: a Diagnosis had notes appended and its first cause replaced, SpecProfiles and
    BuildReport were filled after creation, a KernelProfile's notes grew: a frozen record is made
    whole (dataclasses.replace for a changed copy). A name bound in a function to a frozen record
    (made there, by ``replace``, returned by a function annotated with its class, or a parameter or
    variable annotated with it) never has a list, dict or set field changed in place."""
    frozen = _frozen_containers()
    returns = {fn.name: kind for path in MODULES.values() for fn in ast.walk(_parsed(path))
               if isinstance(fn, ast.FunctionDef) and fn.returns is not None
               and (kind := ast.unparse(fn.returns).strip("'\"")) in frozen}

    def kind_of(expr: ast.expr, bound: dict[str, str]) -> str | None:
        if isinstance(expr, ast.Name):
            return bound.get(expr.id)
        if not isinstance(expr, ast.Call):
            return None
        called = ast.unparse(expr.func).split(".")[-1]
        if called == "replace" and expr.args:
            return kind_of(expr.args[0], bound)
        return called if called in frozen else returns.get(called)

    changed = []
    for path in MODULES.values():
        for fn in (n for n in ast.walk(_parsed(path))
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            bound: dict[str, str] = {}
            for arg in fn.args.args + fn.args.kwonlyargs:
                if arg.annotation is not None and (kind := ast.unparse(arg.annotation).split("[")[0]) in frozen:
                    bound[arg.arg] = kind
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign) and (kind := kind_of(node.value, bound)):
                    bound.update({t.id: kind for t in node.targets if isinstance(t, ast.Name)})
                elif (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                      and (kind := ast.unparse(node.annotation).split("[")[0]) in frozen):
                    bound[node.target.id] = kind
            for node in ast.walk(fn):
                target = None
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                    target = node.func.value
                elif isinstance(node, (ast.Assign, ast.AugAssign)):
                    for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                        target = t.value if isinstance(t, ast.Subscript) else target
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.attr in frozen.get(bound.get(target.value.id, ""), set())):
                    changed.append(f"{path.relative_to(PKG)}:{node.lineno} {ast.unparse(node)[:80]}")
    assert not changed, f"frozen records changed after they were made: {changed}"
