"""Lowerscope's side in a user's PyTorch program.

- ``torch.compile(model, backend="lowerscope")`` (registered through the ``torch_dynamo_backends``
  entry point) writes each Dynamo graph, its example inputs, guards and graph breaks into a capture
  folder that ``lowerscope DIR`` and ``lowerscope-cli capture DIR`` read, then runs Inductor's
  compiled code (or the graph eagerly), so the program runs on unchanged.
- ``lowerscope.trace(fn, *args, out=DIR)`` runs ``fn`` under PyTorch's structured trace
  (TORCH_TRACE) and opens the log in the app when ``lowerscope`` is on PATH.
"""
from .backend import backend, lowerscope_backend
from .capture import Capture, capture_for
from .trace import trace

__all__ = ["backend", "lowerscope_backend", "Capture", "capture_for", "trace"]
__version__ = "0.1.0"
