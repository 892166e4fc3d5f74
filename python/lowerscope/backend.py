"""The torch.compile backend: ``torch.compile(model, backend="lowerscope")``.

Each Dynamo graph is written into the capture folder (capture.py), then compiled by Inductor
(``torch._inductor.compile_fx.compile_fx``) or run eagerly, so the program's results are PyTorch's.

Options, as ``torch.compile(..., options={...})`` or ``lowerscope.backend(...)`` keywords:
    dir      the capture folder (default: LOWERSCOPE_CAPTURE_DIR, else ./lowerscope_capture)
    run      "inductor" (default) or "eager"; ``mode="eager"`` says the same
    outputs  False: do not run the graph eagerly to record PyTorch's outputs (default True)
Any other option is passed to Inductor as a config patch (as torch.compile's options are).
"""
from __future__ import annotations

import functools
import warnings

from .capture import capture_for

_RUN = ("inductor", "eager")


def lowerscope_backend(gm, example_inputs, mode=None, options=None, **kwargs):
    opts = dict(options or {})
    opts.update(kwargs)
    directory = opts.pop("dir", None)
    outputs = bool(opts.pop("outputs", True))
    run = opts.pop("run", None) or ("eager" if mode == "eager" else "inductor")
    if run not in _RUN:
        raise ValueError(f"lowerscope backend: run must be 'inductor' or 'eager', not {run!r}")
    try:
        capture_for(directory).add_graph(gm, example_inputs, outputs=outputs)
    except Exception as e:  # the capture is for looking at; the program goes on without it
        warnings.warn(f"lowerscope: graph not captured: {type(e).__name__}: {e}")
    if run == "eager":
        return gm.forward
    from torch._inductor.compile_fx import compile_fx

    patches = dict(opts)
    if mode not in (None, "default", "eager"):
        import torch._inductor

        patches = {**torch._inductor.list_mode_options(mode), **patches}
    return compile_fx(gm, example_inputs, config_patches=patches or None)


def backend(dir: str | None = None, run: str = "inductor", outputs: bool = True, **inductor_options):
    """A configured backend: ``torch.compile(m, backend=lowerscope.backend(dir="cap", run="eager"))``."""
    if run not in _RUN:
        raise ValueError(f"lowerscope backend: run must be 'inductor' or 'eager', not {run!r}")
    fn = functools.partial(lowerscope_backend, options={"dir": dir, "run": run, "outputs": outputs, **inductor_options})
    fn.__name__ = "lowerscope"  # Dynamo names the backend in its logs
    return fn
