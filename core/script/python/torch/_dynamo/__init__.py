"""Lowerscope's TorchDynamo: capture by recording.

A compiled call runs the user's Python as it is. Every torch op inside it is recorded as a line of
the graph being captured (instead of running), on proxy tensors that hold no value yet. Where
Python needs a value (`if b.sum() < 0:`, `.item()`, printing) the graph so far is compiled and
run, its live tensors receive their values, the break is logged, and recording resumes in a new
graph. When the call returns, the last graph is compiled and run the same way. A graph's outputs
are the tensors Python still refers to (CPython frees the others at once).

Python ints passed to a compiled function are constants of the graph at their first value
(guard `L['n'] == 2`), and symbolic (SymInt) once a call brings another value, as Dynamo's
automatic dynamic shapes make them (dynamic=True: from the start; dynamic=False: never): a
comparison decides with the real value and records a guard (`L['n'] >= 0`); arithmetic that meets
a tensor becomes graph ops on an i64 input. So `fn(x, 2)` compiles, `fn(x, 3)` recompiles with n
symbolic, `fn(x, 6)` shares that graph, and `fn(x, -3)` takes the other branch: a new graph at
the same place, logged as a recompile with the guard that failed.

Each graph is compiled once per distinct text and input signature (the cache); `_graphs` and
`_breaks` are the compile log the app shows.
"""
import builtins as _bi
import inspect as _inspect
import keyword as _keyword
import linecache as _linecache
import re as _re
import sys as _sys
import types as _types
import weakref as _weakref

import _lowerscope as _ls
import torch

config = _types.SimpleNamespace(cache_size_limit=8, recompile_limit=8, capture_scalar_outputs=False,
                                suppress_errors=False, verbose=False, error_on_recompile=False)


class Unsupported(RuntimeError):
    """fullgraph=True and the code needs a graph break."""


class BackendCompilerFailed(RuntimeError):
    """The pipeline could not compile a captured graph."""


class RecompileError(RuntimeError):
    """config.error_on_recompile and a call needs another compile of the same code."""


exc = _types.SimpleNamespace(Unsupported=Unsupported, BackendCompilerFailed=BackendCompilerFailed,
                             RecompileError=RecompileError)

_active = None       # the _Frame being captured
_graphs = []         # the compile log: one dict per compiled graph
_breaks = []         # one dict per graph break
_cache = {}          # (code, site) -> [entries]
_seen_breaks = set() # (code, site, location): a break is logged when its graph is first compiled
_int_args = {}       # (code, argument) -> its first int value, or _DYNAMIC once another came
_DYNAMIC = object()
_BUILTINS = set(dir(_bi)) | set(_keyword.kwlist)


def reset():
    _cache.clear()
    _seen_breaks.clear()
    _int_args.clear()


def _log():
    return {"graphs": _graphs, "breaks": _breaks}


def _is_symint(x):
    return type(x) is SymInt


def _user_frame():
    """The innermost frame of the user's code (not ours)."""
    f = _sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith("<lowerscope"):
        f = f.f_back
    return f


def _where(f):
    if f is None:
        return "?", ""
    line = _linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return "%s:%d" % (f.f_code.co_filename, f.f_lineno), line


# ---- symbolic ints ------------------------------------------------------------------------------


class SymInt:
    """A Python int argument of a compiled call, kept symbolic: expr is a Python expression over
    the call's int arguments, value its value in this call."""

    __slots__ = ("expr", "value", "frame", "__weakref__")

    def __init__(self, expr, value, frame):
        self.expr, self.value, self.frame = expr, value, frame

    def _guard(self, expr, result):
        self.frame.guard(expr, result)
        return result

    def _bin(self, o, sym, fn, swap=False):
        if isinstance(o, torch.Tensor):
            return NotImplemented
        if isinstance(o, _bi.float):
            return fn(o, _bi.int(self)) if swap else fn(_bi.int(self), o)
        oe, ov = (o.expr, o.value) if _is_symint(o) else (repr(o), o)
        if not isinstance(ov, _bi.int):
            return NotImplemented
        e = "(%s %s %s)" % ((oe, sym, self.expr) if swap else (self.expr, sym, oe))
        return SymInt(e, fn(ov, self.value) if swap else fn(self.value, ov), self.frame)

    def __add__(self, o):
        return self._bin(o, "+", lambda a, b: a + b)

    def __radd__(self, o):
        return self._bin(o, "+", lambda a, b: a + b, True)

    def __sub__(self, o):
        return self._bin(o, "-", lambda a, b: a - b)

    def __rsub__(self, o):
        return self._bin(o, "-", lambda a, b: a - b, True)

    def __mul__(self, o):
        return self._bin(o, "*", lambda a, b: a * b)

    def __rmul__(self, o):
        return self._bin(o, "*", lambda a, b: a * b, True)

    def __floordiv__(self, o):
        return self._bin(o, "//", lambda a, b: a // b)

    def __mod__(self, o):
        return self._bin(o, "%", lambda a, b: a % b)

    def __truediv__(self, o):
        if isinstance(o, torch.Tensor):
            return NotImplemented
        return _bi.int(self) / o

    def __neg__(self):
        return SymInt("(-%s)" % self.expr, -self.value, self.frame)

    def _cmp(self, o, sym, fn):
        if isinstance(o, torch.Tensor):
            return NotImplemented
        oe, ov = (o.expr, o.value) if _is_symint(o) else (repr(o), o)
        return self._guard("%s %s %s" % (self.expr, sym, oe), fn(self.value, ov))

    def __lt__(self, o):
        return self._cmp(o, "<", lambda a, b: a < b)

    def __le__(self, o):
        return self._cmp(o, "<=", lambda a, b: a <= b)

    def __gt__(self, o):
        return self._cmp(o, ">", lambda a, b: a > b)

    def __ge__(self, o):
        return self._cmp(o, ">=", lambda a, b: a >= b)

    def __eq__(self, o):
        return self._cmp(o, "==", lambda a, b: a == b)

    def __ne__(self, o):
        return self._cmp(o, "!=", lambda a, b: a != b)

    def __bool__(self):
        return self._guard("%s != 0" % self.expr, self.value != 0)

    def __int__(self):
        return self._guard("%s == %d" % (self.expr, self.value), True) and self.value

    __index__ = __int__

    def __float__(self):
        return _bi.float(_bi.int(self))

    def __hash__(self):
        return hash(_bi.int(self))

    def __repr__(self):
        return repr(_bi.int(self))

    __str__ = __repr__

    def __format__(self, spec):
        return format(_bi.int(self), spec)


class ItemScalar:
    """`t.item()` of a captured tensor where Dynamo captures scalar outputs (fullgraph=True, or
    config.capture_scalar_outputs): the 0-d tensor stands for the number, so `x * t.sum().item()`
    stays one graph (`x * sum_1`); anything that needs the number itself (`if s > 0`, float(s),
    printing) needs the graph's value: a graph break, Unsupported under fullgraph."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor

    def _number(self):
        v = _ls.tolist(self.tensor._value("a data-dependent use of Tensor.item()"))[0]
        return _bi.bool(v) if self.tensor._dt == "b8" else v

    def _bin(self, o, fn):
        if isinstance(o, (ItemScalar, torch.Tensor, _bi.int, _bi.float)):
            r = fn(self.tensor, o.tensor if isinstance(o, ItemScalar) else o)
            return r if isinstance(o, torch.Tensor) else ItemScalar(r)
        return NotImplemented

    def __add__(self, o):
        return self._bin(o, lambda a, b: a + b)

    def __radd__(self, o):
        return self._bin(o, lambda a, b: b + a)

    def __sub__(self, o):
        return self._bin(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return self._bin(o, lambda a, b: b - a)

    def __mul__(self, o):
        return self._bin(o, lambda a, b: a * b)

    def __rmul__(self, o):
        return self._bin(o, lambda a, b: b * a)

    def __truediv__(self, o):
        return self._bin(o, lambda a, b: a / b)

    def __rtruediv__(self, o):
        return self._bin(o, lambda a, b: b / a)

    def __neg__(self):
        return ItemScalar(-self.tensor)

    def __lt__(self, o):
        return self._number() < o

    def __le__(self, o):
        return self._number() <= o

    def __gt__(self, o):
        return self._number() > o

    def __ge__(self, o):
        return self._number() >= o

    def __eq__(self, o):
        return self._number() == o

    def __ne__(self, o):
        return self._number() != o

    def __bool__(self):
        return _bi.bool(self._number())

    def __float__(self):
        return _bi.float(self._number())

    def __int__(self):
        return _bi.int(self._number())

    def __hash__(self):
        return hash(self._number())

    def __repr__(self):
        return repr(self._number())

    __str__ = __repr__

    def __format__(self, spec):
        return format(self._number(), spec)


# ---- the graph being captured -------------------------------------------------------------------


class _GNode:
    __slots__ = ("name", "auto", "frame")

    def __init__(self, name, auto=True, frame=None):
        self.name, self.auto, self.frame = name, auto, frame


class _Graph:
    def __init__(self, function, location):
        self.function, self.location = function, location
        self.lines = []        # (node, annotation or None, parts, stack)
        self.inputs = []       # dicts: node, name, source, dt, shape, buf, requires_grad, symbol
        self.input_of = {}     # id(tensor) -> (node, tensor)
        self.sym_nodes = {}    # symbol -> node
        self.used, self.counters = set(), {}
        self.produced = []     # (node, weakref to the tensor holding it)
        self.train = False

    def fresh(self, base):
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base).strip("_") or "t"
        if base[0].isdigit():
            base = "_" + base
        if base not in _BUILTINS and base not in self.used:
            self.used.add(base)
            return base
        k = self.counters.get(base, 0) + 1
        while "%s_%d" % (base, k) in self.used:
            k += 1
        self.counters[base] = k
        name = "%s_%d" % (base, k)
        self.used.add(name)
        return name

    def render(self, outputs):
        live, work = set(id(o) for o in outputs), list(outputs)
        by_node = {id(l[0]): l for l in self.lines}
        while work:
            n = work.pop()
            line = by_node.get(id(n))
            if line is None:
                continue
            for p in line[2]:
                if isinstance(p, _GNode) and id(p) not in live:
                    live.add(id(p))
                    work.append(p)
        sig = ", ".join('%s: "%s%s"' % (i["name"], i["dt"], list(i["shape"])) for i in self.inputs)
        out = ["class GraphModule(torch.nn.Module):", "    def forward(self, %s):" % sig]
        out += ["        %s = %s" % (i["node"].name, i["name"]) for i in self.inputs]
        stack = None
        for node, ann, parts, st in self.lines:
            if id(node) not in live:
                continue
            if st != stack:
                out += ["", "        " + st]
                stack = st
            text = "".join(p if isinstance(p, str) else p.name for p in parts)
            out.append("        %s%s = %s" % (node.name, ': "%s"' % ann if ann else "", text))
        names = ", ".join(o.name for o in outputs)
        out.append("        return (%s)" % (names + "," if len(outputs) == 1 else names))
        return "\n".join(out) + "\n"


def _is_getitem(line):
    parts = line[2]
    return len(parts) == 2 and isinstance(parts[0], _GNode) and parts[1].startswith("[")


def _annotation(dt, shape):
    return "%s[%s]" % (dt, ", ".join(str(d) for d in shape))


def _tensor_guard(i, symbolic=False):
    shape = "%s, rank %d, sizes symbolic" % (i["dt"], len(i["shape"])) if symbolic else _annotation(i["dt"], i["shape"])
    return "%s: TENSOR_MATCH %s requires_grad=%s" % (i["source"], shape, i["requires_grad"])


class _Frame:
    """One compiled call being captured."""

    def __init__(self, fn, names, fullgraph, symbols):
        self.code = getattr(fn, "__code__", None)
        self.fn_name = getattr(fn, "__name__", "fn")
        self.names = names          # id(tensor) -> (input name, guard source)
        self.fullgraph = fullgraph
        self.dynamic = None         # torch.compile's dynamic: True, False or None (automatic)
        self.symbols = symbols      # symbol -> value (the call's symbolic ints)
        self.constants = {}         # argument -> value (the call's ints, floats, bools taken as constants)
        self.graph = None
        self.segment = 0
        self.site = "0"
        self.resume_line = None
        self.guards = []            # (expr, result) since the last flush
        self.flushed = []           # (text, ops) of each graph this call ran
        self.breaks = []            # the breaks this call took

    # recording
    def guard(self, expr, result):
        g = (expr, result)
        if g not in self.guards:
            self.guards.append(g)

    def graph_now(self):
        if self.graph is None:
            f = _user_frame()
            name = self.fn_name if self.segment == 0 else "torch_dynamo_resume_in_%s_at_%s" % (self.fn_name, self.resume_line)
            self.graph = _Graph(name, _where(f)[0])
        return self.graph

    def input_name(self, g, t):
        f = _user_frame()
        name = source = None
        if f is not None:
            for var, val in f.f_locals.items():
                if val is t:
                    name, source = "L_%s_" % var, "L['%s']" % var
                    break
        if name is None and id(t) in self.names:
            name, source = self.names[id(t)]
        if name is None and f is not None:
            for var, val in f.f_globals.items():
                if val is t:
                    name, source = "G_%s_" % var, "G['%s']" % var
                    break
        if name is None:
            name, source = "L_tensor_%d_" % len(g.inputs), "<a tensor made before the call>"
        base, k = name, 1
        while name in g.used or any(i["name"] == name for i in g.inputs):
            name = "%s%d_" % (base, k)
            k += 1
        return name, source

    def node_of(self, g, t):
        if t._graph is g:
            return t._node
        if t._graph is not None or t._buf is None:
            raise RuntimeError("a tensor of a graph that failed to compile was used")
        hit = g.input_of.get(id(t))
        if hit is not None:
            return hit[0]
        name, source = self.input_name(g, t)
        node = _GNode("l" + name[1:], auto=False)
        g.used.add(node.name)
        g.inputs.append({"node": node, "name": name, "source": source, "dt": t._dt, "shape": t._shape, "buf": t._buf,
                         "requires_grad": t.requires_grad, "tensor": t, "symbol": None})
        g.input_of[id(t)] = (node, t)
        return node

    def sym_tensor(self, g, s):
        """A SymInt as a value of the graph: its symbols are i64 inputs, its arithmetic graph ops."""
        expr = s.expr
        for sym in sorted(self.symbols, key=len, reverse=True):
            if sym in expr and sym not in g.sym_nodes:
                name = "L_%s_" % sym
                node = _GNode("l" + name[1:], auto=False)
                g.used.add(node.name)
                g.inputs.append({"node": node, "name": name, "source": "L['%s']" % sym, "dt": "i64", "shape": (),
                                 "buf": None, "requires_grad": False, "tensor": None, "symbol": sym})
                g.sym_nodes[sym] = node
        # Evaluate the expression with each symbol standing for its graph input.
        env = {}
        for sym, node in g.sym_nodes.items():
            t = torch.Tensor._make(None, "i64", ())
            t._node, t._graph = node, g
            env[sym] = t
        return eval(compile(expr, "<lowerscope: symbolic int>", "eval"), {"__builtins__": {}}, env)

    def record(self, kind, callee, base, args, kwargs, multi):
        g = self.graph_now()
        uf = _user_frame()
        self.rename_locals(g, uf)
        if kind in ("binop", "neg"):
            args = [self.sym_tensor(g, a) if _is_symint(a) else a.tensor if type(a) is ItemScalar else a for a in args]
        tensors = torch._tensors_in(args, kwargs)
        nodes = [self.node_of(g, t) for t in tensors]
        index = {id(t): i for i, t in enumerate(tensors)}
        expr = torch._render(kind, callee, args, kwargs, lambda t: "a%d" % index[id(t)])
        try:
            outs = _ls.stmt(expr, [(t._dt, t._shape) for t in tensors], None)
        except RuntimeError as e:
            where, code = _where(uf)
            raise RuntimeError("%s (at %s: %s): %s" % (expr, where, code, e)) from None
        marked = torch._render(kind, callee, args, kwargs, lambda t: "\0%d\0" % index[id(t)])
        parts = []
        for k, piece in enumerate(marked.split("\0")):
            parts.append(nodes[_bi.int(piece)] if k % 2 else piece)
        where, code = _where(uf)
        stack = "# File: %s in %s, code: %s" % (where, uf.f_code.co_name if uf else "?", code)
        node = _GNode(g.fresh(base), frame=id(uf))
        grad = torch._grad_enabled and _bi.any(t.requires_grad for t in tensors)
        g.train = g.train or grad
        results = []
        if len(outs) == 1 and not multi:
            g.lines.append((node, _annotation(outs[0][0], outs[0][1]), parts, stack))
            results.append(self.proxy(g, node, outs[0], grad))
        else:
            g.lines.append((node, None, parts, stack))
            for k, o in enumerate(outs):
                item = _GNode(g.fresh("getitem"), frame=id(uf))
                g.lines.append((item, _annotation(o[0], o[1]), [node, "[%d]" % k], stack))
                results.append(self.proxy(g, item, o, grad))
        return tuple(results) if multi else results[0]

    def proxy(self, g, node, meta, grad):
        t = torch.Tensor._make(None, meta[0], meta[1])
        t._node, t._graph = node, g
        t.requires_grad = grad and torch._DTYPES[meta[0]].is_floating_point
        g.produced.append((node, _weakref.ref(t)))
        return t

    def rename_locals(self, g, uf):
        """`x = a / (abs(a) + 1)`: the node stored in a local takes the local's name, as Dynamo's."""
        if uf is None:
            return
        for var, val in uf.f_locals.items():
            if isinstance(val, torch.Tensor) and val._graph is g and val._node.auto and val._node.frame == id(uf):
                val._node.name = g.fresh(var)
                val._node.auto = False

    # breaks and flushes
    def graph_break_for(self, tensor, reason):
        """A break: the graph so far is compiled and run (tensor, if any, among its first outputs),
        and capture resumes in a new graph after this line."""
        f = _user_frame()
        where, code = _where(f)
        if self.fullgraph:
            raise Unsupported("%s\n  (fullgraph=True) at %s: %s" % (reason, where, code))
        function = self.graph.function if self.graph else self.fn_name
        key = (self.code, self.site, where, reason)
        flushed = len(self.flushed)
        self.flush(first=tensor)
        # explain() lists a break where it ended a graph (a break before any op compiles nothing).
        record = {"function": function, "reason": reason, "location": where, "code": code,
                  "ended_graph": len(self.flushed) > flushed}
        self.breaks.append(record)
        if key not in _seen_breaks:
            _seen_breaks.add(key)
            _breaks.append(record)
        self.segment += 1
        self.resume_line = f.f_lineno if f else 0
        self.site = "%d@%s" % (self.segment, where)

    def flush(self, first=None):
        """Compiles (or finds) and runs the graph so far; its live tensors get their values. The
        tensor a break needs comes first among the outputs, as in Dynamo's graphs."""
        g, self.graph = self.graph, None
        if g is None:
            return
        if uf := _user_frame():
            self.rename_locals(g, uf)
        holders, outputs = {}, []
        for node, w in g.produced:
            t = w()
            if t is None or t._graph is not g or t._node is not node:
                continue
            if id(node) not in holders:
                holders[id(node)] = []
                outputs.append(node)
            holders[id(node)].append(t)
        if first is not None and first._graph is g and first._node in outputs:
            outputs.remove(first._node)
            outputs.insert(0, first._node)
        guards, self.guards = self.guards, []
        if not outputs:
            return
        text = g.render(outputs)
        values = [i["buf"] if i["symbol"] is None else _ls.full("i64", (), _bi.float(self.symbols[i["symbol"]]))
                  for i in g.inputs]
        entry = self.lookup(g, text, guards, values, [(holders[id(n)][0]._dt, holders[id(n)][0]._shape) for n in outputs])
        entry["log"]["calls"] += 1
        fwd = entry["num_forward"]
        if entry.get("first_outputs") is not None:
            outs, entry["first_outputs"] = entry["first_outputs"], None
        elif entry["train"]:
            outs = _ls.run(entry["id"], values + entry["zero_tangents"])[:fwd]
        else:
            outs = _ls.run(entry["id"], values)
        backward = _CompiledBackward(entry, g, values, outputs) if entry["train"] and torch._grad_enabled else None
        for k, node in enumerate(outputs):
            for t in holders[id(node)]:
                t._buf, t._node, t._graph = outs[k], None, None
                if backward is not None and t.requires_grad:
                    t.grad_fn, t._out = backward, k
        self.flushed.append((text, _bi.sum(1 for l in g.lines if not _is_getitem(l))))

    def lookup(self, g, text, guards, values, output_metas):
        key = (self.code, self.site)
        entries = _cache.setdefault(key, [])
        metas = [(i["dt"], tuple(i["shape"]), i["requires_grad"]) for i in g.inputs]
        train = g.train and torch._grad_enabled
        for e in entries:
            if e["text"] == text and e["metas"] == metas and e["train"] == train:
                return e
        # A dynamic compile serves the same graph at other sizes, within the guards it assumed: the
        # compiled code runs at the new sizes (None back: a guard failed, recompile).
        broken = None
        for e in entries:
            if not e["dynamic"] or e["train"] != train or not _same_kinds(e["metas"], metas):
                continue
            if text not in e["same_graph"]:  # parsed and re-derived once a capture text, not once a call
                if not _ls.same_graph(e["id"], text):
                    continue
                e["same_graph"].add(text)
            outs = _ls.run(e["id"], values)
            if outs is None:
                broken = _by_source(_ls.guard_failure(), g.inputs)
                continue
            e["first_outputs"] = outs
            shape = _call_shape(g.inputs)
            if shape not in e["log"]["sizes"]:
                e["log"]["sizes"].append(shape)
            return e
        reason = "first call" if not entries else broken or self.why_recompile(entries[-1], g, guards, train)
        if entries and config.error_on_recompile:
            raise RecompileError("Recompiling function %s in %s\n    triggered by the following guard failure(s):\n"
                                 "    - %s" % (g.function, g.location, reason))
        # torch.compile(dynamic=True) compiles with symbolic sizes from the first call; by default
        # (dynamic=None) a recompile because an input's size changed does (automatic dynamic shapes).
        dynamic = not train and (self.dynamic is True or (self.dynamic is None and " size mismatch " in reason))
        if dynamic:
            reason += " (dynamic shapes: sizes become symbols)" if self.dynamic is True else \
                " (automatic dynamic shapes: compiled again with symbolic sizes)"
        name = "%s (graph %d)" % (g.function, len(_graphs))
        guard_text = [_tensor_guard(i) for i in g.inputs if i["symbol"] is None]
        guard_text += ["%s: TYPE_MATCH int" % ("L['%s']" % s) for s in sorted({i["symbol"] for i in g.inputs if i["symbol"]})]
        guard_text += [_display(e) if r else "not (%s)" % _display(e) for e, r in guards]
        guard_text.append("GLOBAL_STATE: grad_mode=%s" % torch._grad_enabled)
        log = {"id": len(_graphs), "function": g.function, "location": g.location, "text": text, "guards": guard_text,
               "reason": reason, "recompile": _bi.bool(entries), "train": train, "calls": 0, "result": -1,
               "dynamic": dynamic, "sizes": [_call_shape(g.inputs)]}
        limit = _bi.min(config.cache_size_limit, config.recompile_limit)
        if len(entries) >= limit:
            log["reason"] += " (recompile_limit %d reached at this place: compiled anyway)" % limit
        _graphs.append(log)
        try:
            try:
                info = _ls.compile(text, name, values, train, dynamic)
            except RuntimeError as e:
                if not dynamic:
                    raise
                # Where the sizes cannot become symbols, the graph still compiles for its sizes.
                log["reason"] += "; the dynamic compile failed (%s): compiled for these sizes" % str(e).splitlines()[0]
                log["dynamic"] = False
                info = _ls.compile(text, name, values, train, False)
        except RuntimeError as e:
            log["error"] = str(e)
            raise BackendCompilerFailed(str(e)) from None
        log["result"] = info["id"]
        log["check"] = info["check"]
        if info["dynamic"]:  # the sizes are symbols: the tensors match by dtype and rank, the sizes by the symbols' guards
            log["guards"] = [_tensor_guard(i, symbolic=True) for i in g.inputs if i["symbol"] is None] + \
                [t for t in log["guards"] if "TENSOR_MATCH" not in t] + [_by_source(t, g.inputs) for t in info["size_guards"]]
        entry = {"text": text, "metas": metas, "guards": guards, "inputs": g.inputs, "log": log, "id": info["id"],
                 "train": train, "dynamic": info["dynamic"], "same_graph": {text}, "num_forward": info["num_forward"],
                 "tangent_of": info["tangent_of"],
                 "grad_of": info["grad_of"], "first_outputs": info["outputs"][:info["num_forward"]]}
        if train:
            entry["zero_tangents"] = [_ls.full(*output_metas[k], 0.0) for k in info["tangent_of"]]
        entries.append(entry)
        return entry

    def why_recompile(self, old, g, guards, train):
        if old["train"] != train:
            return "GLOBAL_STATE changed: grad_mode (%s)" % ("enabled, inputs require grad: a training step" if train else "no grad")
        now = {i["source"]: i for i in g.inputs}
        for i in old["inputs"]:
            j = now.get(i["source"])
            if i["symbol"] is not None or j is None:
                continue
            if i["dt"] != j["dt"]:
                return "tensor %s dtype mismatch. expected %s, actual %s" % (i["source"], i["dt"], j["dt"])
            if len(i["shape"]) != len(j["shape"]):
                return "tensor %s rank mismatch. expected %d, actual %d" % (i["source"], len(i["shape"]), len(j["shape"]))
            for k, (a, b) in enumerate(zip(i["shape"], j["shape"])):
                if a != b:
                    return "tensor %s size mismatch at index %d. expected %d, actual %d" % (i["source"], k, a, b)
            if i["requires_grad"] != j["requires_grad"]:
                return "tensor %s requires_grad mismatch. expected %s" % (i["source"], i["requires_grad"])
        for expr, result in old["guards"]:
            try:
                now_value = _bi.bool(eval(expr, {"__builtins__": {}}, dict(self.constants, **self.symbols)))
            except Exception:
                continue
            if now_value != result:
                values = dict(self.constants, **self.symbols)
                shown = ", ".join("L['%s'] = %r" % (s, v) for s, v in values.items() if s in expr)
                return "guard failed: %s  (%s)" % (_display(expr) if result else "not (%s)" % _display(expr), shown)
        return "the captured graph differs (a Python value it depends on changed)"


_real_print = _bi.print


def _type_name(v):
    return "Tensor" if isinstance(v, torch.Tensor) else "int" if _is_symint(v) else type(v).__name__


def _traced_print(*args, **kwargs):
    """print() in a compiled call: a side effect Dynamo does not trace. The graph so far runs, the
    print runs eagerly, and capture resumes in a new graph (fullgraph=True: Unsupported)."""
    frame = _active
    if frame is not None:
        frame.graph_break_for(None, "Failed to trace builtin operator: Dynamo does not know how to trace builtin "
                              "operator `print` with argument types %s (has_kwargs %s)"
                              % ([_type_name(a) for a in args], _bi.bool(kwargs)))
    return _real_print(*args, **kwargs)


def _by_source(guard, inputs):
    """A compiled graph's guard with its placeholders (L['L_x_']) named as the call's arguments (L['x'])."""
    for i in inputs:
        guard = guard.replace("L['%s']" % i["name"], i["source"])
    return guard


def _call_shape(inputs):
    """The shape of the call's first tensor argument (not a module's parameter): what the compile log lists."""
    for i in inputs:
        if i["symbol"] is None and not i["source"].startswith("L['self']"):
            return tuple(i["shape"])
    return ()


def _same_kinds(a, b):
    """Input metas alike but for their sizes: dtype, rank and requires_grad of every input."""
    return len(a) == len(b) and all(x[0] == y[0] and len(x[1]) == len(y[1]) and x[2] == y[2] for x, y in zip(a, b))


def _display(expr):
    """A guard over the call's arguments as Dynamo prints it: n >= 0 -> L['n'] >= 0 (whole names only)."""
    names = sorted(set(_active.symbols) | set(_active.constants), key=len, reverse=True) if _active else []
    if not names:
        return expr
    return _re.sub(r"\b(%s)\b" % "|".join(_re.escape(n) for n in names), lambda m: "L['%s']" % m.group(1), expr)


class _CompiledBackward:
    """The backward of a graph compiled as a training step: the step runs again with the real
    tangents, and its gradient outputs go to the graph's inputs."""

    def __init__(self, entry, g, values, outputs):
        self.entry, self.values, self.nout = entry, values, len(outputs)
        tensors = [i["tensor"] if i["tensor"] is not None else torch.zeros(()) for i in g.inputs]
        self.metas = [(t._dt, t._shape) for t in tensors]
        # Leaves that require grad by themselves; other inputs as they are now (see torch._OpBackward).
        self.inputs = [t if t.grad_fn is None and t.requires_grad else torch._Edge(t) for t in tensors]

    def __repr__(self):
        return "<CompiledFunctionBackward>"

    def apply(self, grads, retain_graph=False):
        e = self.entry
        tangents = []
        for k, out in enumerate(e["tangent_of"]):
            g = grads[out] if out < len(grads) else None
            tangents.append(g._buf if g is not None else e["zero_tangents"][k])
        res = _ls.run(e["id"], self.values + tangents)
        per_input = [None] * len(self.inputs)
        for k, idx in enumerate(e["grad_of"]):
            b = res[e["num_forward"] + k]
            if idx >= 0 and b is not None:
                per_input[idx] = torch.Tensor._make(b, *self.metas[idx])
        return per_input


# ---- torch.compile ------------------------------------------------------------------------------


def _param_names(module):
    names = {}
    for path, p in module.named_parameters():
        parts = path.split(".")
        names[id(p)] = ("L_self_" + "".join("modules_%s_" % m for m in parts[:-1]) + "parameters_%s_" % parts[-1],
                        "L['self']." + path)
    for path, b in module.named_buffers():
        parts = path.split(".")
        names[id(b)] = ("L_self_" + "".join("modules_%s_" % m for m in parts[:-1]) + "buffers_%s_" % parts[-1],
                        "L['self']." + path)
    return names


class _Compiled:
    """What torch.compile returns for a function (OptimizedModule wraps modules)."""

    def __init__(self, fn, fullgraph=False, dynamic=None, mode=None, backend="inductor", module=None):
        self._fn, self._module = fn, module
        self._fullgraph, self._dynamic, self._mode = fullgraph, dynamic, mode
        self._last_frame = None
        self.__name__ = getattr(fn, "__name__", "compiled")
        self.__doc__ = getattr(fn, "__doc__", None)

    def _int_is_dynamic(self, var, val):
        """Automatic dynamic shapes for an int argument: static at its first value, symbolic from
        the first call with another (dynamic=True: always symbolic)."""
        if self._dynamic is True:
            return True
        key = (getattr(self._fn, "__code__", self._fn), var)
        first = _int_args.setdefault(key, val)
        if first is not _DYNAMIC and first != val:
            _int_args[key] = first = _DYNAMIC
        return first is _DYNAMIC

    def __call__(self, *args, **kwargs):
        global _active
        if _active is not None:  # a compiled call inside a compiled call: inlined
            return self._fn(*args, **kwargs)
        try:
            bound = _inspect.signature(self._fn).bind(*args, **kwargs)
        except (TypeError, ValueError):
            bound = None
        names, symbols = {}, {}
        if self._module is not None:
            names.update(_param_names(self._module))
        frame = _Frame(self._fn, names, self._fullgraph, symbols)
        frame.dynamic = self._dynamic
        if bound is not None:
            for var, val in bound.arguments.items():
                if isinstance(val, torch.Tensor):
                    names[id(val)] = ("L_%s_" % var, "L['%s']" % var)
                elif type(val) is _bi.int and self._dynamic is not False and self._int_is_dynamic(var, val):
                    symbols[var] = val
                    bound.arguments[var] = SymInt(var, val, frame)
                elif type(val) in (_bi.int, _bi.float, _bi.bool):
                    frame.constants[var] = val
                    frame.guard("%s == %r" % (var, val), True)
            args, kwargs = bound.args, bound.kwargs
        self._last_frame = frame
        _active = frame
        saved_print, _bi.print = _bi.print, _traced_print
        try:
            result = self._fn(*args, **kwargs)
            frame.flush()
        except BaseException:
            frame.graph = None
            raise
        finally:
            _active = None
            _bi.print = saved_print
        return _concrete(result)


def _concrete(x):
    if _is_symint(x):
        return x.value
    if isinstance(x, tuple):
        return tuple(_concrete(v) for v in x)
    if isinstance(x, list):
        return [_concrete(v) for v in x]
    return x


class OptimizedModule:
    def __init__(self, module, **options):
        object.__setattr__(self, "_orig_mod", module)
        object.__setattr__(self, "_compiled", _Compiled(module.forward, module=module, **options))

    def __call__(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "_orig_mod"), name)

    def __setattr__(self, name, value):
        setattr(self._orig_mod, name, value)

    def __repr__(self):
        return "OptimizedModule(%r)" % self._orig_mod


def optimize(model, fullgraph=False, dynamic=None, mode=None, backend="inductor"):
    if isinstance(model, torch.nn.Module):
        return OptimizedModule(model, fullgraph=fullgraph, dynamic=dynamic, mode=mode, backend=backend)
    if not callable(model):
        raise TypeError("torch.compile expects a function or an nn.Module, got %s" % type(model).__name__)
    return _Compiled(model, fullgraph=fullgraph, dynamic=dynamic, mode=mode, backend=backend)


class ExplainOutput:
    """As torch._dynamo.explain's: graph_break_count is graph_count - 1, and break_reasons are the
    breaks that ended a graph."""

    def __init__(self, graphs, breaks, ops):
        self.graphs, self.op_count = graphs, ops
        self.break_reasons = [b for b in breaks if b.get("ended_graph", True)]
        self.graph_count, self.graph_break_count = len(graphs), len(graphs) - 1

    def __str__(self):
        out = ["Graph Count: %d" % self.graph_count, "Graph Break Count: %d" % self.graph_break_count,
               "Op Count: %d" % self.op_count, "Break Reasons:"]
        for k, b in enumerate(self.break_reasons):
            out += ["  Break Reason %d:" % (k + 1), "    Reason: %s" % b["reason"],
                    "    User Stack:", "      %s: %s" % (b["location"], b["code"])]
        return "\n".join(out)


def explain(fn, *extra_args, **extra_kwargs):
    def run(*args, **kwargs):
        logged, broke = len(_graphs), len(_breaks)
        reset()  # as PyTorch's explain, before and after
        c = optimize(fn)
        try:
            c(*args, **kwargs)
        finally:
            reset()
            del _graphs[logged:]  # explain's own compiles and breaks stay out of the compile log
            del _breaks[broke:]
        frame = c._compiled._last_frame if isinstance(c, OptimizedModule) else c._last_frame
        return ExplainOutput([t for t, _ in frame.flushed], frame.breaks, _bi.sum(n for _, n in frame.flushed))

    if extra_args or extra_kwargs:
        return run(*extra_args, **extra_kwargs)
    return run


def __getattr__(name):
    torch._missing_attribute("torch._dynamo", name)
