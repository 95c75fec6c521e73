"""kprof's first-non-finite watcher, loaded into a program by kprof's sitecustomize when
``KPROF_NAN_LOG`` is set (``kprof sanitize --tool nan -- CMD``).

It names the first operation whose inputs were finite and whose output holds a NaN or an Inf:

- every PyTorch operation (a ``TorchDispatchMode`` entered as torch is imported: eager ops, cuBLAS
and cuDNN
  calls, the autograd engine's backward ops, which carry the mode to their threads), and
- every Triton kernel launched through ``JITFunction.run`` (its tensor arguments, before and after),
- every launch of a kprof kernel (``kprof.load``), which calls :func:`launched` itself.

After each one it counts the non-finite elements of what the operation wrote (one reduction a
floating output and one synchronisation an operation); only where some are found does it look at the
inputs. An in-place operation's written arguments are checked before it too (on the GPU, read
after). The first hit is written to the log with the operation, the user's line that called it (the
innermost frame outside PyTorch, Triton, kprof and the standard library), the rank, the output, how
many elements and the first one; then it stops watching, and the program runs on at full speed. What
it cannot see is written too: CuPy's kernels, the kernels of a ``torch.compile`` graph, and anything
launched from C++. Its own mistakes are a line in the log, never an exception in the program.

Only CUDA tensors are watched, unless ``KPROF_NAN_DEVICES=all`` (tests without a GPU). Needs no
importable kprof.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
from typing import Any

LOG = os.environ.get("KPROF_NAN_LOG", "")
ALL_DEVICES = os.environ.get("KPROF_NAN_DEVICES") == "all"
STACK = 4  # user frames kept for the first hit
_state: dict[str, Any] = {"ops": 0, "launches": 0, "found": False, "errors": 0}
# set while the watcher's own checks run: they are not operations of the program
_busy = threading.local()
_lock = threading.Lock()


def _write(record: dict[str, Any]) -> None:
    if not LOG:
        return
    try:
        with _lock, open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, default=str) + "\n")
    except OSError:
        pass


def _error(where: str, exc: BaseException) -> None:
    _state["errors"] += 1
    if _state["errors"] <= 3:
        _write({"event": "error", "where": where, "error": f"{type(exc).__name__}: {exc}"[:300]})


def _rank() -> int | None:
    # the launchers' table (kprof.tools.programs.ranks)
    for name in os.environ.get("KPROF_RANK_VARS", "").split(","):
        value = os.environ.get(name, "") if name else ""
        if value.isdigit():
            return int(value)
    return None


def _user_frames() -> list[str]:
    """The innermost frames in the user's files, innermost first: kprof's one rule of which files are
    the user's (:func:`kprof.tools.programs.hostframes.is_user_file`, as the launch recorder uses it:
    not Python's, an installed package's, CUDA's or kprof's own)."""
    from kprof.tools.programs.hostframes import is_user_file

    out: list[str] = []
    frame: Any = sys._getframe(1)
    while frame is not None and len(out) < STACK:
        path = frame.f_code.co_filename
        if is_user_file(path):
            out.append(f"{path}:{frame.f_lineno}")
        frame = frame.f_back
    return out


def _watched(t: Any, torch: Any) -> bool:
    return (isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())
            and t.numel() > 0 and (ALL_DEVICES or t.is_cuda))


def _first_bad(t: Any, torch: Any) -> tuple[list[int], str]:
    """The index of the first non-finite element of ``t`` and its value ("nan", "inf", "-inf")."""
    flat = torch.nonzero(~torch.isfinite(t.detach()))
    if flat.numel() == 0:
        return [], ""
    index = [int(i) for i in flat[0].tolist()]
    value = float(t.detach()[tuple(index)].real if t.is_complex() else t.detach()[tuple(index)])
    return index, "nan" if value != value else ("inf" if value > 0 else "-inf")


def _hit(framework: str, op: str, outputs: list[tuple[str, Any]], counts: list[int],
         inputs: list[tuple[str, Any]],
         before_bad: list[str], torch: Any, definition: str = "") -> None:
    """Write the first non-finite output: which operation, where, which output and how much of
    it."""
    _state["found"] = True
    k = next(i for i, c in enumerate(counts) if c)
    name, t = outputs[k]
    index, value = _first_bad(t, torch)
    bad_inputs = [n for n, x in inputs if int((~torch.isfinite(x.detach())).sum()) > 0] + before_bad
    frames = _user_frames()
    backward = ""
    try:  # inside the autograd engine: the node running names the forward op (SqrtBackward0)
        node = torch._C._current_autograd_node()
        backward = node.name() if node is not None else ""
    except Exception:  # noqa: BLE001 - an older torch: no node to name
        pass
    _write({"event": "first", "framework": framework, "op": op, "definition": definition,
            "backward_of": backward,
            "site": frames[0] if frames else "", "stack": frames, "rank": _rank(), "output": name,
            "bad": counts[k], "total": int(t.numel()), "shape": list(t.shape),
            "dtype": str(t.dtype).replace("torch.", ""),
            "first_index": index, "first_value": value, "inputs_finite": not bad_inputs,
            "nonfinite_inputs": sorted(set(bad_inputs)), "seen_ops": _state["ops"],
            "seen_launches": _state["launches"], "outputs": [n for n, _ in outputs],
            # under pytest: the test running (``tests/test_x.py::test_y (call)``)
            "test": os.environ.get("PYTEST_CURRENT_TEST", "")})


def _counts(tensors: list[Any], torch: Any) -> list[int]:
    """Non-finite elements in each tensor, read back with one synchronisation."""
    if not tensors:
        return []
    return [int(v)
            for v in torch.stack([(~torch.isfinite(t.detach())).sum() for t in tensors]).tolist()]


def _install_torch(torch: Any) -> None:
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    # an op -> the arguments it writes: read once an op
    writes: dict[Any, tuple[tuple[int, str], ...]] = {}

    def written(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
        """The arguments the operation writes in place (``add_``'s self, ``out=``), by their schema
        names."""
        which = writes.get(func)
        if which is None:
            which = writes[func] = tuple((k, a.name) for k, a in enumerate(func._schema.arguments)
                                         if a.alias_info is not None and a.alias_info.is_write)
        out = []
        for k, name in which:
            value = args[k] if k < len(args) else kwargs.get(name)
            flat, _ = tree_flatten(value)
            out += [(name if len(flat) == 1 else f"{name}[{j}]", x) for j, x in enumerate(flat)
                    if _watched(x, torch)]
        return out

    class Watch(TorchDispatchMode):  # type: ignore[misc, no-untyped-call, unused-ignore]
        def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                               kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if _state["found"] or getattr(_busy, "on", False):
                return func(*args, **kwargs)
            _busy.on = True
            try:
                mutated = written(func, args, kwargs)
                # on the GPU: read back only if needed
                before = [torch.isfinite(x.detach()).all() for _, x in mutated]
            except Exception as exc:  # noqa: BLE001 - a watcher's mistake never stops the program
                _error(str(func), exc)
                mutated, before = [], []
            finally:
                _busy.on = False
            out = func(*args, **kwargs)
            _busy.on = True
            try:
                _state["ops"] += 1
                flat, _ = tree_flatten(out)
                outs = [(f"out{j}" if len(flat) > 1 else "out", x) for j, x in enumerate(flat)
                        if _watched(x, torch)]
                outs += [m for m in mutated if not any(m[1] is o for _, o in outs)]
                counts = _counts([x for _, x in outs], torch)
                if any(counts):
                    ins = [(a.name if hasattr(a, "name") else f"arg{k}", x) for k, (a, v) in
                           enumerate(zip(func._schema.arguments, args)) for x in tree_flatten(v)[0]
                           if _watched(x, torch) and not any(x is m for _, m in mutated)]
                    before_bad = [n for (n, _), ok in zip(mutated, before) if not bool(ok)]
                    _hit("torch", str(func), outs, counts, ins, before_bad, torch)
            except Exception as exc:  # noqa: BLE001 - a watcher's mistake never stops the program
                _error(str(func), exc)
            finally:
                _busy.on = False
            return out

    # for the program's life: the autograd engine carries it to its threads
    Watch().__enter__()  # type: ignore[no-untyped-call, unused-ignore]
    _write({"event": "watching", "what": "torch", "version": torch.__version__})
    if torch.cuda.is_available() and hasattr(torch, "compile"):
        _write({"event": "unwatched",
                "what": "the kernels of torch.compile graphs (Inductor launches them itself)"})


def _install_triton(triton: Any) -> None:
    try:
        from triton.runtime.jit import JITFunction  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        _error("triton", exc)
        return
    import torch

    real = JITFunction.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _state["found"] or kwargs.get("warmup") or getattr(_busy, "on", False):
            return real(self, *args, **kwargs)
        _busy.on = True
        try:
            names = list(getattr(self, "arg_names", [])) or [f"arg{k}" for k in range(len(args))]
            tensors = [(n, a) for n, a in zip(names, args) if _watched(a, torch)]
            tensors += [(n, a) for n, a in kwargs.items() if _watched(a, torch)]
            before = [torch.isfinite(t.detach()).all() for _, t in tensors]
        except Exception as exc:  # noqa: BLE001 - a watcher's mistake never stops the program
            _error("triton", exc)
            tensors, before = [], []
        finally:
            _busy.on = False
        ret = real(self, *args, **kwargs)
        _busy.on = True
        try:
            _state["launches"] += 1
            counts = _counts([t for _, t in tensors], torch)
            if any(counts):
                fn = getattr(self, "fn", None)
                code = getattr(fn, "__code__", None)
                definition = f"{code.co_filename}:{code.co_firstlineno}" if code else ""
                was_bad = [n for (n, _), ok in zip(tensors, before) if not bool(ok)]
                _hit("triton", getattr(fn, "__name__", "") or str(self), tensors, counts, [],
                     was_bad, torch, definition)
        except Exception as exc:  # noqa: BLE001 - a watcher's mistake never stops the program
            _error("triton", exc)
        finally:
            _busy.on = False
        return ret

    JITFunction.run = run
    _write({"event": "watching", "what": "triton", "version": getattr(triton, "__version__", "")})


def launched(kernel: str, definition: str, outputs: list[tuple[str, Any]],
             inputs: list[tuple[str, Any]]) -> None:
    """A kprof kernel's launch (``kprof.load``), after it: its outputs counted, its inputs looked at
    where they hold non-finite elements. ``definition``: the kernel's source line."""
    if _state["found"] or "torch" not in sys.modules:
        return
    import torch

    _busy.on = True
    try:
        _state["launches"] += 1
        outs = [(n, t) for n, t in outputs if _watched(t, torch)]
        counts = _counts([t for _, t in outs], torch)
        if any(counts):
            _hit("kprof", kernel, outs, counts, [(n, t) for n, t in inputs if _watched(t, torch)],
                 [], torch, definition)
    except Exception as exc:  # noqa: BLE001 - a watcher's mistake never stops the program
        _error(kernel, exc)
    finally:
        _busy.on = False


def _summary() -> None:
    _write({"event": "summary", "ops": _state["ops"], "launches": _state["launches"],
            "found": _state["found"], "errors": _state["errors"], "cupy": "cupy" in sys.modules})


def _safely(how: Any) -> Any:
    def run(module: Any) -> None:
        try:
            how(module)
        except Exception as exc:  # noqa: BLE001 - a watcher's mistake never stops the program
            _error(getattr(module, "__name__", "?"), exc)
    return run


def install(after: Any = None) -> None:
    """Watch torch and Triton as they are imported (``after(name, then)``: kprof's sitecustomize
    runs ``then`` right after the import), or now if they already are; say at exit what was
    watched."""
    _write({"event": "start", "pid": os.getpid(), "rank": _rank(), "argv": sys.argv[:8]})
    for name, how in (("torch", _install_torch), ("triton", _install_triton)):
        if name in sys.modules:
            _safely(how)(sys.modules[name])
        elif after is not None:
            after(name, _safely(how))
    atexit.register(_summary)
