"""PyTorch's own OpInfo samples as a corpus for tests/ops/test_opinfo.cpp (issue 32, item 3).

For each OpInfo of op_db (torch.testing._internal.common_methods_invocations): its samples in
float32 and in the int64 / int32 / bool dtypes it supports on the CPU, each traced by torch.export
to one graph, written as the FX text our importer reads (print_readable, as
tests/data/stages/*/3_core_aten.txt), with its inputs, PyTorch's eager outputs and, for
differentiable float samples, the gradients of the sum of every float output with respect to
each input that requires grad. Runs on the GPU machine (PyTorch 2.11, CPU only, no network):

    python3 tools/gpu/opinfo_corpus.py --out DIR [--ops-list tests/data/core_aten_ops.txt]
        [--ops add,sum,nn.functional.*] [--jobs N] [--max-samples 8] [--max-numel 4096]

One file per OpInfo, DIR/<name>[.<variant>].json:
    {"op": name, "aten": [Core ATen ops of its graphs], "torch": version,
     "skipped": {reason: count},
     "samples": [{"dtype": "float32", "desc": "args=(1,) kwargs={}",
                  "graph_aten": text or null (null: the same as graph_core), "graph_core": text,
                  "inputs": [{"dtype": "f32", "shape": [2, 3], "data": base64 little-endian}],
                  "outputs": [...], "grads": [tensor or null per input] or null,
                  "rtol": r, "atol": a, "grad_rtol": r, "grad_atol": a (with grads), "random": false}]}
rtol/atol: OpInfo's own tolerance for the dtype (its toleranceOverride and precisionOverride
decorators for the CPU), never tighter than torch.testing's default (float32: 1.3e-6, 1e-5); integer
and bool outputs compare exactly. grad_rtol/grad_atol: at least 1e-4 / 1e-5 (float32 gradients
summed in another order; OpInfo itself checks gradients in float64 only). random: another seed
gives other values (dropout, empty_like): only shapes and dtypes are compared. mutations (where
present): the outputs that are inputs updated in place (the Core ATen graph returns them first, as
torch.export functionalizes them; an export-level graph that updates them in place returns the
other outputs alone); gradients leave them out (PyTorch updates them without grad).
Samples are capped: --max-samples per op in float32, --max-int-samples per integer or bool dtype,
tensors of at most --max-numel elements, --max-sample-bytes of raw data, --max-op-bytes of JSON per
op (a third of it per integer or bool dtype).
DIR/summary.json: per op, the samples written and the skipped ones by reason; the Core ATen
overloads of --ops-list that the corpus's graphs reach and those they do not; the corpus's size.
With --ops-list FILE (lines such as aten.add.Tensor), an OpInfo is taken when its name (or its
last dotted part, or aten_name) is a listed packet, or else when its first float32 sample's
Core ATen graph reaches a listed packet that no OpInfo of that name covers; --also PATTERNS takes
more (e.g. --also 'nn.functional.*').
Every op and every sample runs in its own try/except: a failure is counted as a skip reason.
FFTs (the fft.* OpInfos; with --ops-list naming _fft_r2c, _fft_c2r or _fft_c2c, all of them are
taken): complex tensors are stored as their view_as_real float32 views. A complex input is given to
the graph as that float32 [..., 2] tensor and made complex again by the graph's first node
(view_as_complex); a complex output is returned through view_as_real; their samples of dtype
complex64 are written beside the float32 ones (dtype "complex64", its tolerance OpInfo's for
complex64, gradients of the sum of the real views).
"""
import argparse
import base64
import collections
import fnmatch
import json
import os
import signal
import subprocess
import sys
import time
import traceback
import types
import unittest
import warnings

# op_db imports expecttest, which the GPU machine lacks: a stub with a TestCase is enough.
if "expecttest" not in sys.modules:
    _stub = types.ModuleType("expecttest")
    _stub.TestCase = unittest.TestCase
    sys.modules["expecttest"] = _stub

import torch  # noqa: E402

warnings.filterwarnings("ignore")
import torch.utils._pytree as pytree  # noqa: E402

DTYPES = [torch.float32, torch.int64, torch.int32, torch.bool]
DTYPE_NAME = {torch.float32: "float32", torch.int64: "int64", torch.int32: "int32", torch.bool: "bool",
              torch.complex64: "complex64"}
# Element types as the FX annotations spell them (core/tensor/dtype.h, dtype_short).
SHORT = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64", torch.int32: "i32",
         torch.bool: "b8", torch.uint8: "u8"}
# torch.testing.assert_close's defaults (rtol, atol).
DEFAULT_TOL = {torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7), torch.complex64: (1.3e-6, 1e-5)}
SCALAR_TYPES = (bool, int, float, str, type(None), torch.dtype, torch.device, torch.memory_format, torch.layout,
                slice, type(Ellipsis))
# Ops whose outputs are uninitialized memory: their values are not compared.
UNINITIALIZED = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"}
# Gradients: float32 sums in another order than PyTorch's (OpInfo checks gradients in float64 only).
GRAD_TOL = (1e-4, 1e-5)


class Skip(Exception):
    """A sample left out, with the reason counted in the summary."""


class SampleTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise SampleTimeout()


def complex_as_real(op):
    """Whether the op's complex tensors are stored as float32 views (the FFTs)."""
    return op.name.startswith("fft.")


def float_like(dtype):
    return dtype.is_floating_point or dtype.is_complex


def full_name(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def load_op_db():
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def tolerance(op, dtype):
    """OpInfo's own tolerance for dtype on the CPU (the loosest of its toleranceOverride
    decorators), never tighter than torch.testing's default. Integer and bool outputs are compared
    exactly whatever the tolerance; an integer sample's float outputs get float32's default."""
    if dtype not in DEFAULT_TOL:  # an integer or bool sample: its float outputs (int_to_float ops) as float32's
        return DEFAULT_TOL[torch.float32]
    rtol, atol = DEFAULT_TOL[dtype]
    try:
        from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride
    except Exception:
        return rtol, atol
    for d in list(getattr(op, "decorators", None) or ()):
        try:
            if getattr(d, "device_type", None) not in (None, "cpu"):
                continue
            dts = getattr(d, "dtypes", None)
            if dts is not None and dtype not in dts:
                continue
            for x in list(getattr(d, "decorators", None) or [d]):
                if isinstance(x, toleranceOverride) and dtype in x.d:
                    t = x.d[dtype]
                    atol, rtol = max(atol, float(t.atol)), max(rtol, float(t.rtol))
                elif isinstance(x, precisionOverride) and dtype in x.d:
                    atol = max(atol, float(x.d[dtype]))
        except Exception:
            continue
    return rtol, atol


def encode(t):
    if t.dtype not in SHORT:
        raise Skip("dtype %s" % str(t.dtype).replace("torch.", ""))
    t = t.detach().resolve_conj().resolve_neg().contiguous().cpu()
    a = t.numpy()
    a = a.astype(a.dtype.newbyteorder("<"), copy=False)
    return {"dtype": SHORT[t.dtype], "shape": list(t.shape), "data": base64.b64encode(a.tobytes()).decode("ascii")}


def graph_text(gm):
    """print_readable without comments and blank lines (the # File: lines name this machine's paths)."""
    text = gm.print_readable(print_output=False)
    lines = [ln.rstrip() for ln in text.splitlines()]
    return "\n".join(ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")) + "\n"


def aten_ops(gm):
    out = []
    for n in gm.graph.nodes:
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload):
            name = str(n.target)
            if name not in out:
                out.append(name)
    return out


class OneOp(torch.nn.Module):
    """forward(*tensors): the sample's call, its tensors the inputs, everything else constants."""

    def __init__(self, fn, spec, is_tensor, consts, complex_in=None, real_out=False):
        super().__init__()
        self.fn, self.spec, self.is_tensor, self.consts = fn, spec, is_tensor, consts
        # complex_in: per tensor, whether it is given as its view_as_real (made complex here);
        # real_out: complex outputs returned as their view_as_real.
        self.complex_in, self.real_out = complex_in or [False] * sum(is_tensor), real_out

    def forward(self, *tensors):
        it = iter(torch.view_as_complex(x) if c else x for x, c in zip(tensors, self.complex_in))
        leaves = [next(it) if t else c for t, c in zip(self.is_tensor, self.consts)]
        inp, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        out = self.fn(inp, *args, **kwargs)
        if self.real_out:
            out = pytree.tree_map(
                lambda o: torch.view_as_real(o.resolve_conj()) if isinstance(o, torch.Tensor) and o.is_complex() else o, out)
        return out


def split_sample(sample, max_numel, complex_ok=False):
    """complex_ok: complex64 tensors become their view_as_real (complex_in marks them)."""
    leaves, spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))
    is_tensor, consts, tensors, complex_in = [], [], [], []
    for x in leaves:
        if isinstance(x, torch.Tensor):
            if x.layout != torch.strided:
                raise Skip("input layout %s" % str(x.layout).replace("torch.", ""))
            as_real = complex_ok and x.dtype == torch.complex64
            if not as_real and (x.is_complex() or x.dtype not in SHORT):
                raise Skip("input dtype %s" % str(x.dtype).replace("torch.", ""))
            if x.numel() > max_numel:
                raise Skip("too large")
            if as_real:  # a leaf of its own, requiring grad as the sample's tensor does
                x = torch.view_as_real(x.detach().resolve_conj()).clone().requires_grad_(x.requires_grad)
            is_tensor.append(True)
            consts.append(None)
            tensors.append(x)
            complex_in.append(as_real)
        elif isinstance(x, complex):
            raise Skip("complex argument")
        elif isinstance(x, SCALAR_TYPES):
            is_tensor.append(False)
            consts.append(x)
        else:
            raise Skip("argument of type %s" % type(x).__name__)
    return spec, is_tensor, consts, tensors, complex_in


def flat_outputs(out):
    leaves = pytree.tree_leaves(out)
    if not leaves or not all(isinstance(o, torch.Tensor) for o in leaves):
        raise Skip("non-tensor output")
    for o in leaves:
        if o.dtype not in SHORT or o.layout != torch.strided:
            raise Skip("output dtype %s" % str(o.dtype).replace("torch.", ""))
    return leaves


def same(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.is_floating_point():
            if not torch.equal(torch.nan_to_num(x, nan=0.5), torch.nan_to_num(y, nan=0.5)):
                return False
        elif not torch.equal(x, y):
            return False
    return True


def describe(spec, is_tensor, consts, tensors):
    it = iter(tensors)
    leaves = []
    for t, c in zip(is_tensor, consts):
        if t:
            x = next(it)
            leaves.append("T%s%s" % (SHORT.get(x.dtype, "?"), list(x.shape)))
        else:
            leaves.append(c)
    inp, args, kwargs = pytree.tree_unflatten(leaves, spec)
    s = "input=%s args=%s kwargs=%s" % (inp, tuple(args), kwargs)
    return s if len(s) <= 240 else s[:237] + "..."


def trace_sample(op, sample, dtype, args, budget):
    """One sample as the corpus records it; raises Skip with the reason it is left out (before
    tracing it where its tensors alone exceed the op's remaining JSON budget)."""
    spec, is_tensor, consts, tensors, complex_in = split_sample(sample, args.max_numel, complex_as_real(op))
    m = OneOp(op.op, spec, is_tensor, consts, complex_in, complex_as_real(op))
    plain = [t.detach().clone() for t in tensors]
    try:
        torch.manual_seed(0)
        after = [t.clone() for t in plain]  # the inputs after the call: an op may update some in place
        out = flat_outputs(m(*after))
    except Skip:
        raise
    except Exception as e:
        raise Skip("eager failed: %s" % type(e).__name__)
    if any(o.numel() > args.max_numel for o in out):
        raise Skip("too large")
    out = [o.detach().clone() for o in out]
    raw = sum(t.numel() * t.element_size() for t in plain + out)
    if raw > args.max_sample_bytes:
        raise Skip("too large")
    wants_grad = float_like(dtype) and any(t.requires_grad for t in tensors)
    if raw * 4 // 3 * (2 if wants_grad else 1) + 400 > budget:
        raise Skip("op size budget")
    # Random output (dropout, rand_like): another seed gives other values; empty's are whatever
    # memory held.
    try:
        torch.manual_seed(1)
        again = flat_outputs(m(*[t.clone() for t in plain]))
        random = not same(out, again) or op.name in UNINITIALIZED
    except Exception:
        random = op.name in UNINITIALIZED
    try:
        ep = torch.export.export(m, tuple(t.clone() for t in plain))
    except Exception as e:
        raise Skip("export failed: %s" % type(e).__name__)
    from torch.export.graph_signature import InputKind, OutputKind
    if any(s.kind != InputKind.USER_INPUT for s in ep.graph_signature.input_specs):
        raise Skip("lifted constant")
    if len(ep.graph_signature.user_outputs) != len(out):
        raise Skip("outputs differ from eager")
    try:
        core = ep.run_decompositions()
    except Exception as e:
        raise Skip("run_decompositions failed: %s" % type(e).__name__)
    # The Core ATen graph is functional: it returns the inputs the op updates in place first (the
    # batch norms' running statistics), then the op's outputs; the expected outputs in that order.
    # (The export-level graph may update them in place instead and return the op's outputs alone.)
    sig = core.graph_signature
    names = [s.arg.name for s in sig.input_specs]
    rest, graph_out, mutations = iter(out), [], []
    for s in sig.output_specs:
        if s.kind == OutputKind.USER_INPUT_MUTATION:
            mutations.append(len(graph_out))
            graph_out.append(after[names.index(s.target)].detach().clone())
        elif s.kind == OutputKind.USER_OUTPUT:
            graph_out.append(next(rest))
        else:
            raise Skip("output kind %s" % s.kind.name)
    out = graph_out
    g_aten, g_core = graph_text(ep.graph_module), graph_text(core.graph_module)
    grads = None
    if float_like(dtype) and op.supports_autograd and any(t.requires_grad for t in tensors):
        try:
            xs = [t.detach().clone().requires_grad_(t.requires_grad) for t in tensors]
            res = [o for o in flat_outputs(m(*xs)) if o.requires_grad and o.is_floating_point()]
            want = [x for x in xs if x.requires_grad]
            if res and want:
                loss = sum(o.sum() for o in res)
                got = iter(torch.autograd.grad(loss, want, allow_unused=True))
                grads = []
                for x in xs:
                    g = next(got) if x.requires_grad else None
                    grads.append(encode(g) if g is not None else None)
        except Skip:
            grads = None
        except Exception:
            grads = None  # no backward in PyTorch for this sample: values only
    rtol, atol = tolerance(op, dtype)
    grtol, gatol = max(rtol, GRAD_TOL[0]), max(atol, GRAD_TOL[1])
    rec = {
        "dtype": DTYPE_NAME[dtype],
        "desc": describe(spec, is_tensor, consts, tensors),
        "graph_aten": None if g_aten == g_core else g_aten,
        "graph_core": g_core,
        "inputs": [encode(t) for t in plain],
        "outputs": [encode(o) for o in out],
        "grads": grads,
        "rtol": rtol,
        "atol": atol,
        "random": random,
    }
    if grads is not None:
        rec["grad_rtol"], rec["grad_atol"] = grtol, gatol
    if mutations:
        rec["mutations"] = mutations
    return rec, aten_ops(core.graph_module)


def op_dtypes(op):
    try:
        sup = op.supported_dtypes("cpu")
    except Exception:
        return []
    extra = [torch.complex64] if complex_as_real(op) else []
    return [d for d in DTYPES + extra if d in sup]


def process_op(op, args, probe_packets=None):
    """Every dtype's samples of one OpInfo; with probe_packets, first its first float32 sample
    alone: the op is kept only when that sample's Core ATen graph reaches one of those packets."""
    name = full_name(op)
    t0 = time.time()
    skipped = collections.Counter()
    samples, aten = [], []
    entry = {"written": 0, "skipped": skipped}
    dtypes = op_dtypes(op)
    if not dtypes:
        skipped["no float32/int/bool dtype on the CPU"] += 1
    for dtype in dtypes:
        cap = args.max_samples if float_like(dtype) else args.max_int_samples
        budget = args.max_op_bytes if float_like(dtype) else args.max_op_bytes // 3
        kept = 0
        try:
            torch.manual_seed(0)
            grad = bool(float_like(dtype) and op.supports_autograd)
            it = iter(op.sample_inputs("cpu", dtype, requires_grad=grad))
        except Exception as e:
            skipped["sample_inputs failed: %s" % type(e).__name__] += 1
            continue
        while kept < cap:
            if time.time() - t0 > args.op_seconds:
                skipped["op time budget"] += 1
                break
            signal.alarm(args.sample_seconds)
            try:
                try:
                    sample = next(it)
                except StopIteration:
                    break
                rec, ops = trace_sample(op, sample, dtype, args, budget)
            except Skip as s:
                skipped[str(s)] += 1
                continue
            except SampleTimeout:
                skipped["timeout"] += 1
                continue
            except Exception as e:
                skipped["error: %s" % type(e).__name__] += 1
                if args.verbose:
                    traceback.print_exc()
                continue
            finally:
                signal.alarm(0)
            if probe_packets is not None:
                reached = {o.split(".")[1] for o in ops if o.startswith("aten.")} & probe_packets
                if not reached:
                    entry.update(written=0, taken="no listed packet reached", seconds=round(time.time() - t0, 2))
                    return name, entry, None
                entry["taken"] = "graph reaches " + ", ".join(sorted(reached))
                probe_packets = None
            size = len(json.dumps(rec, separators=(",", ":")))
            if size > budget:
                skipped["op size budget"] += 1
                continue
            budget -= size
            samples.append(rec)
            aten += [o for o in ops if o not in aten]
            kept += 1
    entry["written"] = len(samples)
    entry["seconds"] = round(time.time() - t0, 2)
    if probe_packets is not None and "taken" not in entry:
        entry["taken"] = "no float32 sample to probe"
        return name, entry, None
    doc = None
    if samples:
        doc = {"op": name, "aten": sorted(aten), "torch": torch.__version__, "skipped": dict(skipped), "samples": samples}
    return name, entry, doc


def write_doc(path, doc):
    """One sample a line, so that a changed sample is one line of a diff."""
    head = {k: v for k, v in doc.items() if k != "samples"}
    with open(path, "w") as f:
        f.write(json.dumps(head, separators=(",", ":"))[:-1] + ',"samples":[\n')
        f.write(",\n".join(json.dumps(s, separators=(",", ":")) for s in doc["samples"]))
        f.write("\n]}\n")


def read_packets(path):
    packets = set()
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            parts = line.split(".")
            packets.add(parts[1] if parts[0] == "aten" and len(parts) > 1 else parts[0])
    return packets


def name_candidates(op):
    last = op.name.split(".")[-1]
    return {op.name, getattr(op, "aten_name", None) or op.name, last, "_" + last}


def select(op_db, args):
    """[(op, probe_packets or None)] for this shard, in name order."""
    ops = sorted(op_db, key=full_name)
    if args.ops:
        pats = [p.strip() for p in args.ops.split(",") if p.strip()]
        ops = [o for o in ops if any(fnmatch.fnmatch(full_name(o), p) or fnmatch.fnmatch(o.name, p) for p in pats)]
    chosen = [(o, None) for o in ops]
    if args.ops_list:
        packets = read_packets(args.ops_list)
        by_name = [o for o in ops if name_candidates(o) & packets]
        named = set()
        for o in by_name:
            named |= name_candidates(o) & packets
        rest = packets - named
        also = [p.strip() for p in (args.also or "").split(",") if p.strip()]
        if packets & {"_fft_r2c", "_fft_c2r", "_fft_c2c"}:  # torch.fft's functions: no OpInfo has the packets' names
            also.append("fft.*")
        taken = {id(o) for o in by_name}
        by_name += [o for o in ops if id(o) not in taken and any(fnmatch.fnmatch(full_name(o), p) for p in also)]
        taken = {id(o) for o in by_name}
        chosen = [(o, None) for o in by_name]
        if args.probe:
            chosen += [(o, rest) for o in ops if id(o) not in taken]
        chosen.sort(key=lambda c: full_name(c[0]))
    k, n = args.shard
    return [c for i, c in enumerate(chosen) if i % n == k]


def run_shard(args):
    torch.set_num_threads(1)
    signal.signal(signal.SIGALRM, _on_alarm)
    op_db = load_op_db()
    todo = select(op_db, args)
    entries = {}
    for op, probe in todo:
        name = full_name(op)
        path = os.path.join(args.out, name + ".json")
        if args.skip_existing and os.path.exists(path):
            continue
        try:
            name, entry, doc = process_op(op, args, probe)
        except Exception as e:  # never stop the corpus for one op
            entry, doc = {"written": 0, "skipped": {"op failed: %s" % type(e).__name__: 1}}, None
        if doc:
            write_doc(path, doc)
            entry["bytes"] = os.path.getsize(path)
        entry["skipped"] = dict(entry["skipped"])
        entries[name] = entry
        if probe is None or doc:
            print("%-40s %3d samples  %6.1f s  skipped %s" % (name, entry["written"], entry.get("seconds", 0),
                                                            dict(entry["skipped"])), flush=True)
    with open(os.path.join(args.out, "_shard_%d.json" % args.shard[0]), "w") as f:
        json.dump(entries, f)


def summarize(args):
    entries = {}
    for k in range(args.jobs):
        p = os.path.join(args.out, "_shard_%d.json" % k)
        if os.path.exists(p):
            entries.update(json.load(open(p)))
            os.remove(p)
    reached, total, files = set(), 0, 0
    for f in sorted(os.listdir(args.out)):
        if not f.endswith(".json") or f == "summary.json" or f.startswith("_"):
            continue
        path = os.path.join(args.out, f)
        files += 1
        total += os.path.getsize(path)
        try:
            reached |= set(json.load(open(path)).get("aten", []))
        except Exception:
            pass
    summary = {"torch": torch.__version__, "files": files, "bytes": total,
               "samples": sum(e.get("written", 0) for e in entries.values()), "ops": entries}
    if args.ops_list:
        listed = [l.strip() for l in open(args.ops_list) if l.strip() and not l.startswith("#")]
        summary["listed_reached"] = sorted(o for o in listed if o in reached)
        summary["listed_not_reached"] = sorted(o for o in listed if o not in reached)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    skipped = collections.Counter()
    for e in entries.values():
        skipped.update(e.get("skipped", {}))
    print("corpus: %d files, %d samples, %.2f MB in %s" % (files, summary["samples"], total / 1e6, args.out))
    print("skipped:", dict(skipped.most_common(12)))
    if args.ops_list:
        print("listed overloads reached by some graph: %d of %d" % (len(summary["listed_reached"]),
                                                                   len(summary["listed_reached"]) + len(summary["listed_not_reached"])))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--ops-list", help="Core ATen overloads, one a line (aten.add.Tensor)")
    p.add_argument("--ops", help="comma-separated OpInfo names or patterns (add,nn.functional.*)")
    p.add_argument("--also", help="with --ops-list, OpInfos taken whatever their graphs reach (patterns: nn.functional.*)")
    p.add_argument("--no-probe", dest="probe", action="store_false",
                   help="with --ops-list, take OpInfos by name alone (no probing of the others' graphs)")
    p.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 1))
    p.add_argument("--shard", default=None, help=argparse.SUPPRESS)
    p.add_argument("--max-samples", type=int, default=8, help="per op, float32")
    p.add_argument("--max-int-samples", type=int, default=4, help="per op and integer or bool dtype")
    p.add_argument("--max-numel", type=int, default=4096, help="largest tensor, elements")
    p.add_argument("--max-sample-bytes", type=int, default=24576, help="inputs and outputs of a sample, raw bytes")
    p.add_argument("--max-op-bytes", type=int, default=32768,
                   help="JSON bytes per op for float32 samples (a third of it for each integer or bool dtype)")
    p.add_argument("--sample-seconds", type=int, default=60)
    p.add_argument("--op-seconds", type=float, default=240)
    p.add_argument("--skip-existing", action="store_true")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.shard:
        k, n = args.shard.split("/")
        args.shard = (int(k), int(n))
        run_shard(args)
        return
    t0 = time.time()
    argv = [a for a in sys.argv[1:]]
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__)] + argv + ["--shard", "%d/%d" % (k, args.jobs)])
             for k in range(args.jobs)]
    codes = [pr.wait() for pr in procs]
    summarize(args)
    print("%.0f s, shards' exit codes %s" % (time.time() - t0, codes))
    sys.exit(0 if all(c == 0 for c in codes) else 1)


if __name__ == "__main__":
    main()
