"""lowerscope.trace(fn, *args, out=DIR): run fn under PyTorch's structured trace (what the
TORCH_TRACE environment variable turns on at start-up), here turned on for the call alone, then
open the folder in the app when ``lowerscope`` is on PATH."""
from __future__ import annotations

import logging
import os
import shutil
import subprocess


def _trace_handler(out: str):
    from torch._logging import _internal as li

    try:  # the handler TORCH_TRACE installs (_init_logs), writing a .log file into `out`
        handler = li.LazyTraceHandler(out)
        if hasattr(li, "TorchLogsStructuredFormatter"):  # some versions name it so
            handler.setFormatter(li.TorchLogsStructuredFormatter())
        else:  # PyTorch 2.11
            handler.setFormatter(li.TorchLogsFormatter(trace=True))
    except (AttributeError, TypeError) as e:
        raise RuntimeError(f"lowerscope.trace: this PyTorch ({li.__name__}) has no structured trace handler: {e}")
    return li.trace_log, handler


def trace(fn, *args, out: str | None = None, show: bool = True, reset: bool = True, **kwargs):
    """Runs ``fn(*args, **kwargs)`` with the structured trace written into ``out`` (default
    ./lowerscope_trace) and returns its result. ``reset`` clears Dynamo's caches first, so
    functions compiled before are compiled (and logged) again. With ``show``, the folder is opened
    in ``lowerscope`` if that program is on PATH (never required)."""
    import torch

    out = os.path.abspath(out or "lowerscope_trace")
    os.makedirs(out, exist_ok=True)
    if reset:
        torch._dynamo.reset()
    try:  # interned file names must be logged again into this file
        import torch._logging.structured as st

        getattr(st, "INTERN_TABLE", {}).clear()
        getattr(st, "DUMPED_FILES", set()).clear()
    except Exception:
        pass
    log, handler = _trace_handler(out)
    level = log.level
    log.setLevel(logging.DEBUG)
    log.addHandler(handler)
    try:
        result = fn(*args, **kwargs)
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        handler.close()
    exe = shutil.which("lowerscope")
    if show and exe:
        subprocess.Popen([exe, out], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return result
