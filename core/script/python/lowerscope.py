"""Lowerscope's helpers for scripts: .npy files in and out, and the compile log."""
import _lowerscope as _ls
import torch


def load_npy(path):
    dt, shape, buf = _ls.load_npy(path)
    return torch.Tensor._make(buf, dt, shape)


def save_npy(path, tensor):
    _ls.save_npy(path, tensor._value())


def compile_log():
    """Each compiled graph so far: function, reason, guards, calls."""
    return list(torch._dynamo._graphs)


def graph_breaks():
    return list(torch._dynamo._breaks)
