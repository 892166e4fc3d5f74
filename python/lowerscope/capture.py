"""The capture folder: what the backend writes for each Dynamo graph, and the manifest.

Layout (read by core/frontend/capture.h in the app):

    capture.json                 the manifest (format "lowerscope-capture", version 1)
    graph_<n>.txt                gm.print_readable(print_output=False): the FX text the app imports
    graph_<n>_input_<i>.npy      example input i of graph n (tensors only; SymInts are in the manifest)
    graph_<n>_output_<i>.npy     PyTorch's eager output i on those inputs, where it could be made

Guards, recompile reasons, graph breaks and failures come from PyTorch's structured log
(torch._logging.trace_structured): a handler on the ``torch.__trace`` logger receives each record's
metadata and payload while the program runs, as the TORCH_TRACE file handler does, and the
manifest is rewritten (atomically) whenever one of them arrives.
"""
from __future__ import annotations

import json
import logging
import os
import re
import threading
import time

FORMAT = "lowerscope-capture"
VERSION = 1

# numpy cannot hold these: they are written as float32 and the manifest says so.
_WIDEN = {"torch.float16": "float32", "torch.bfloat16": "float32"}
# Ops whose eager result cannot be compared with another run (random numbers).
_RANDOM = re.compile(r"dropout|rand|bernoulli|multinomial|normal_|uniform_|exponential_")

_captures: dict[str, "Capture"] = {}
_lock = threading.RLock()


def default_dir() -> str:
    return os.environ.get("LOWERSCOPE_CAPTURE_DIR") or "lowerscope_capture"


def capture_for(directory: str | None = None) -> "Capture":
    """The process's capture writing into ``directory`` (default: LOWERSCOPE_CAPTURE_DIR or
    ./lowerscope_capture). The first use in a process empties the folder of an earlier capture."""
    path = os.path.abspath(directory or default_dir())
    with _lock:
        if path not in _captures:
            _captures[path] = Capture(path)
        return _captures[path]


def _compile_id():
    """(frame_id, frame_compile_id, attempt) of the compile Dynamo is in, or None."""
    try:
        from torch._guards import CompileContext

        cid = CompileContext.current_compile_id()
        tid = CompileContext.current_trace_id()
        if cid is None:
            return None
        return (cid.frame_id, cid.frame_compile_id, getattr(tid, "attempt", 0) if tid else 0)
    except Exception:
        return None


_current: "Capture | None" = None  # the capture that took the latest graph
_early: list = []  # records that came before any capture started (a graph break before graph 0)
_KEPT = ("dynamo_cpp_guards_str", "dynamo_guards", "artifact", "compilation_metrics")


class _StructuredHandler(logging.Handler):
    """Receives torch._logging.trace_structured records (metadata, payload) for the captures: a
    record goes to the capture holding a graph of its frame and compile, else to the capture that
    took the latest graph (a process normally writes one folder)."""

    def emit(self, record):
        meta = getattr(record, "metadata", None)
        if not isinstance(meta, dict) or not any(k in meta for k in _KEPT):
            return
        payload = getattr(record, "payload", None)
        try:
            with _lock:
                key = (meta.get("frame_id"), meta.get("frame_compile_id"))
                owner = next((c for c in _captures.values() if c._graph_of(key) is not None), _current)
                if owner is None:
                    if len(_early) < 1000:
                        _early.append((meta, payload))
                    return
            owner._on_structured(meta, payload)
        except Exception:  # never disturb the user's program
            pass


_handler: _StructuredHandler | None = None


def _install_structured_handler():
    global _handler
    if _handler is not None:
        return
    try:
        from torch._logging._internal import trace_log
    except Exception:
        trace_log = logging.getLogger("torch.__trace")
    _handler = _StructuredHandler(level=logging.DEBUG)
    trace_log.addHandler(_handler)
    if trace_log.level == logging.NOTSET or trace_log.level > logging.DEBUG:
        trace_log.setLevel(logging.DEBUG)


class Capture:
    def __init__(self, path: str):
        self.path = path
        self.graphs: list[dict] = []
        self.graph_breaks: list[dict] = []
        self.failures: list[dict] = []
        self._pending_recompile: dict[tuple, list] = {}
        self._names: dict[tuple, dict] = {}  # (frame_id, frame_compile_id) -> compilation_metrics
        self._started = False

    # ---- the folder ----
    def _start(self):
        if self._started:
            return
        os.makedirs(self.path, exist_ok=True)
        pat = re.compile(r"^(capture\.json|graph_\d+(\.txt|_(input|output)_\d+\.npy))$")
        for f in os.listdir(self.path):
            if pat.match(f):
                try:
                    os.remove(os.path.join(self.path, f))
                except OSError:
                    pass
        self._started = True
        _install_structured_handler()
        global _current
        _current = self
        early = list(_early)
        _early.clear()
        for meta, payload in early:
            self._on_structured(meta, payload)

    def manifest(self) -> dict:
        import torch

        return {
            "format": FORMAT,
            "version": VERSION,
            "torch_version": torch.__version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "graphs": self.graphs,
            "graph_breaks": self.graph_breaks,
            "failures": self.failures,
        }

    def write_manifest(self):
        with _lock:
            if not self._started:
                return
            tmp = os.path.join(self.path, ".capture.json.tmp")
            with open(tmp, "w") as f:
                json.dump(self.manifest(), f, indent=1)
                f.write("\n")
            os.replace(tmp, os.path.join(self.path, "capture.json"))

    # ---- one Dynamo graph ----
    def add_graph(self, gm, example_inputs, outputs: bool = True) -> dict:
        import numpy as np
        import torch

        global _current
        with _lock:
            self._start()
            _current = self
            n = len(self.graphs)
            g: dict = {"index": n, "file": f"graph_{n}.txt"}
            ids = _compile_id()
            if ids:
                g["frame_id"], g["frame_compile_id"], g["attempt"] = ids
                g["compile_id"] = f"{ids[0]}/{ids[1]}"
            text = gm.print_readable(print_output=False)
            with open(os.path.join(self.path, g["file"]), "w") as f:
                f.write(text)
            placeholders = [n_ for n_ in gm.graph.nodes if n_.op == "placeholder"]
            inputs = []
            for i, x in enumerate(example_inputs):
                name = str(placeholders[i].target) if i < len(placeholders) else f"arg{i}"
                inputs.append(self._write_input(n, i, name, x, np, torch))
            g["inputs"] = inputs
            g["grad_enabled"] = torch.is_grad_enabled()
            # AOTAutograd makes a training graph (joint, forward, backward) when an input needs a gradient.
            g["train"] = bool(g["grad_enabled"] and any(i.get("requires_grad") for i in inputs))
            g["ops"] = sorted({str(getattr(n_.target, "__name__", n_.target)) for n_ in gm.graph.nodes if n_.op.startswith("call")})
            key = (g.get("frame_id"), g.get("frame_compile_id"))
            if key in self._pending_recompile:
                g["recompile_reasons"] = self._pending_recompile[key]
            if outputs:
                self._write_outputs(g, gm, example_inputs, text, np, torch)
            self.graphs.append(g)
            self.write_manifest()
            return g

    def _write_input(self, n, i, name, x, np, torch) -> dict:
        if isinstance(x, torch.Tensor):
            d = {"name": name, "kind": "tensor", "shape": list(x.shape), "dtype": str(x.dtype),
                 "device": str(x.device), "requires_grad": bool(x.requires_grad)}
            try:
                from torch._subclasses.fake_tensor import is_fake

                if is_fake(x):
                    d["note"] = "a fake tensor: no values"
                    return d
            except Exception:
                pass
            d["file"] = f"graph_{n}_input_{i}.npy"
            np.save(os.path.join(self.path, d["file"]), self._to_numpy(x, d, torch))
            return d
        if isinstance(x, (bool, int, float)) or type(x).__name__ in ("SymInt", "SymFloat", "SymBool"):
            kind = "symint" if isinstance(x, int) or type(x).__name__ == "SymInt" else "scalar"
            try:
                value = int(x) if kind == "symint" else float(x)
            except Exception:
                value = str(x)
            return {"name": name, "kind": kind, "value": value}
        return {"name": name, "kind": type(x).__name__, "note": "not written"}

    @staticmethod
    def _to_numpy(x, d, torch):
        t = x.detach()
        if str(t.dtype) in _WIDEN:
            d["saved_as"] = _WIDEN[str(t.dtype)]
            t = t.float()
        if t.is_complex() or str(t.dtype).startswith("torch.float8"):
            d["saved_as"] = "float32"
            t = t.real.float() if t.is_complex() else t.float()
        return t.to("cpu").contiguous().numpy()

    def _write_outputs(self, g, gm, example_inputs, text, np, torch):
        """PyTorch's eager output on the example inputs, for the app's check. Run on copies of the
        inputs (an input mutated by the graph, a BatchNorm buffer, stays as it was) with the RNG
        state kept; graphs that draw random numbers get none."""
        if _RANDOM.search(text):
            g["outputs_note"] = "random ops: no expected outputs"
            return
        try:
            devices = sorted({x.device.index or 0 for x in example_inputs
                              if isinstance(x, torch.Tensor) and x.device.type == "cuda"})
            args = [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in example_inputs]
            with torch.no_grad(), torch.random.fork_rng(devices=devices):
                out = gm(*args)
            if not isinstance(out, (tuple, list)):
                out = (out,)
            if not all(isinstance(o, torch.Tensor) for o in out):
                g["outputs_note"] = "an output is not a tensor: no expected outputs"
                return
            files = []
            for i, o in enumerate(out):
                d = {"file": f"graph_{g['index']}_output_{i}.npy", "shape": list(o.shape), "dtype": str(o.dtype)}
                np.save(os.path.join(self.path, d["file"]), self._to_numpy(o, d, torch))
                files.append(d)
            g["outputs"] = files
        except Exception as e:
            g["outputs_note"] = f"eager run failed: {type(e).__name__}: {e}"

    # ---- the structured log ----
    def _graph_of(self, key):
        for g in reversed(self.graphs):
            if (g.get("frame_id"), g.get("frame_compile_id")) == key:
                return g
        return None

    def _on_structured(self, meta, payload):
        if not self._started:
            return
        key = (meta.get("frame_id"), meta.get("frame_compile_id"))
        cid = f"{key[0]}/{key[1]}" if key[0] is not None else None
        changed = False
        with _lock:
            if "dynamo_cpp_guards_str" in meta or "dynamo_guards" in meta:
                g = self._graph_of(key)
                if g is not None and isinstance(payload, str):
                    g["guards"] = payload
                    changed = True
            elif "artifact" in meta and isinstance(meta["artifact"], dict):
                name = meta["artifact"].get("name")
                if name == "recompile_reasons" and payload is not None:
                    reasons = payload
                    if isinstance(payload, str):
                        try:
                            reasons = json.loads(payload)
                        except ValueError:
                            reasons = [l for l in payload.splitlines() if l.strip()]
                    if not isinstance(reasons, list):
                        reasons = [str(reasons)]
                    self._pending_recompile[key] = [str(r) for r in reasons]
                    g = self._graph_of(key)
                    if g is not None:
                        g["recompile_reasons"] = self._pending_recompile[key]
                        changed = True
                elif name == "dynamo_graph_break_reason" and isinstance(payload, str):
                    self.graph_breaks.append(_graph_break(cid, payload))
                    changed = True
            elif "compilation_metrics" in meta and isinstance(meta["compilation_metrics"], dict):
                m = meta["compilation_metrics"]
                info = {k: m.get(k) for k in ("co_name", "co_filename", "co_firstlineno")}
                self._names[key] = info
                for g in self.graphs:
                    if (g.get("frame_id"), g.get("frame_compile_id")) == key:
                        g["name"] = info["co_name"]
                        g["source"] = f"{info['co_filename']}:{info['co_firstlineno']}"
                        if m.get("graph_op_count") is not None:
                            g["graph_op_count"] = m.get("graph_op_count")
                        changed = True
                if m.get("fail_type"):
                    frame = m.get("fail_user_frame_filename")
                    self.failures.append({
                        "compile_id": cid, "name": info["co_name"], "fail_type": m.get("fail_type"),
                        "reason": str(m.get("fail_reason") or ""),
                        "user_frame": f"{frame}:{m.get('fail_user_frame_lineno')}" if frame else "",
                    })
                    changed = True
        if changed:
            self.write_manifest()


def _graph_break(cid, text: str) -> dict:
    """Dynamo's dynamo_graph_break_reason text: 'Graph break in user code at FILE:LINE',
    'Graph Break Reason: ...', the reason's summary line, 'Explanation: ...', then the traceback."""
    b = {"compile_id": cid, "user_frame": "", "reason": "", "explanation": "", "text": text}
    lines = text.splitlines()
    for l in lines:
        m = re.match(r"\s*Graph break in user code at (.*):(\d+)\s*$", l)
        if m and not b["user_frame"]:
            b["user_frame"] = f"{m.group(1)}:{m.group(2)}"
        m = re.match(r"\s*Explanation:\s*(.*)", l)
        if m and not b["explanation"]:
            b["explanation"] = m.group(1)
    # The summary: the first non-empty line after 'Graph Break Reason:' that is not its heading.
    for i, l in enumerate(lines):
        if l.startswith("Graph Break Reason:"):
            rest = l[len("Graph Break Reason:"):].strip()
            following = [x.strip() for x in lines[i + 1:i + 4] if x.strip()]
            if rest.startswith("Encountered graph break") and following:
                b["reason"] = following[0]
            else:
                b["reason"] = rest
            break
    if not b["reason"] and lines:
        b["reason"] = lines[0].strip()
    return b


# Installed when the backend is first looked up (torch.compile imports this module before Dynamo
# traces), so the graph breaks met before the first graph reaches the backend are seen too.
_install_structured_handler()
