#!/usr/bin/env python3
"""Autocast test data (issue 34, item 4): small models whose forward runs under torch.autocast,
exported with torch.export as PyTorch 2.11 writes them (the region as
torch.ops.higher_order.wrap_with_autocast), with float32 inputs and PyTorch's own outputs.

Run on the GPU machine (PyTorch 2.11 with CUDA):

  python3 tools/gpu/autocast_cases.py --out tests/data/autocast [--cli build/app/lowerscope-cli]

writes, per model and device (cuda and cpu, both bfloat16):

  OUT/<model>_<device>_bf16/model.pt2   torch.export.save of the exported program
  OUT/<model>_<device>_bf16/in0.npy ... the inputs, float32
  OUT/<model>_<device>_bf16/out.npy     eager PyTorch's output under autocast, as float32
  OUT/<model>_<device>_bf16/exported_graph.txt  the exported graph as print_readable() writes it (for review)

and a table saying whether each export holds a wrap_with_autocast region; with --cli, it also
compiles each model with `lowerscope-cli compile DIR --device <device>` and reports the check.
"""
import argparse, os, subprocess, sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Autocast(nn.Module):
    """Some float32 work, the inner model under torch.autocast, some float32 work after it: the
    ops outside the region run as called, those inside as autocast casts them."""

    def __init__(self, inner, device, dtype):
        super().__init__()
        self.inner, self.device, self.dtype = inner, device, dtype

    def forward(self, *xs):
        xs = [x * 1.5 for x in xs]  # outside: float32
        with torch.autocast(self.device, dtype=self.dtype):
            y = self.inner(*xs)
        return y.float() + 1.0  # outside again


class Mlp(nn.Module):
    # linear (lower precision), gelu (as its input), layer_norm (float32 on CUDA), softmax
    # (float32 on CUDA, as its input on the CPU), a sum over a dim (float32 on CUDA)
    def __init__(self):
        super().__init__()
        self.fc1, self.ln, self.fc2 = nn.Linear(64, 128), nn.LayerNorm(128), nn.Linear(128, 32)

    def forward(self, x):
        h = self.ln(F.gelu(self.fc1(x)))
        p = torch.softmax(self.fc2(h), dim=-1)
        return p * torch.exp(h).sum(dim=-1, keepdim=True)


class Attention(nn.Module):
    # q/k/v projections, scaled_dot_product_attention (lower precision on both devices), the
    # output projection, a residual and a layer_norm
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads, self.qkv, self.proj, self.ln = heads, nn.Linear(d, 3 * d), nn.Linear(d, d), nn.LayerNorm(d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.ln(x + self.proj(a.transpose(1, 2).reshape(b, s, d)))


class ConvNet(nn.Module):
    # conv2d (lower precision), batch norm in eval mode, relu, pooling, a linear, log_softmax
    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.fc = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.Linear(16, 10)

    def forward(self, x):
        h = F.adaptive_avg_pool2d(F.relu(self.bn(self.conv(x))), 1).flatten(1)
        return F.log_softmax(self.fc(h), dim=-1)


CASES = {
    "mlp": (Mlp, lambda: [torch.randn(8, 64)]),
    "attention": (Attention, lambda: [torch.randn(2, 16, 64)]),
    "convnet": (ConvNet, lambda: [torch.randn(2, 3, 16, 16)]),
}


def export_case(name, device, dtype, out_dir):
    torch.manual_seed(0)
    inner_cls, make_inputs = CASES[name]
    model = Autocast(inner_cls(), device, dtype).eval().to(device)
    inputs = [x.to(device) for x in make_inputs()]
    short = {torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]
    folder = os.path.join(out_dir, f"{name}_{device}_{short}")
    os.makedirs(folder, exist_ok=True)
    with torch.no_grad():
        expected = model(*inputs)
    ep = torch.export.export(model, tuple(inputs))
    torch.export.save(ep, os.path.join(folder, "model.pt2"))
    for i, x in enumerate(inputs):
        np.save(os.path.join(folder, f"in{i}.npy"), x.float().cpu().numpy())
    np.save(os.path.join(folder, "out.npy"), expected.float().cpu().numpy())
    text = ep.graph_module.print_readable(print_output=False)
    with open(os.path.join(folder, "exported_graph.txt"), "w") as f:
        f.write(text)
    has_hop = "wrap_with_autocast" in text
    return folder, has_hop


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for <model>_<device>_<dtype>/")
    ap.add_argument("--cli", help="lowerscope-cli to compile each case with (optional)")
    ap.add_argument("--devices", default="cuda,cpu")
    ap.add_argument("--dtypes", default="bfloat16", help="bfloat16 and/or float16, comma-separated")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, cuda {torch.version.cuda}, "
          f"{torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU'}")
    rows, failed = [], False
    for device in a.devices.split(","):
        if device == "cuda" and not torch.cuda.is_available():
            print("no CUDA device: skipping the cuda cases", file=sys.stderr)
            continue
        for dt in a.dtypes.split(","):
            dtype = getattr(torch, dt)
            for name in CASES:
                folder, hop = export_case(name, device, dtype, a.out)
                check = "-"
                if a.cli:
                    r = subprocess.run([a.cli, "compile", folder, "--device", device, "--quiet"], capture_output=True, text=True)
                    check = "ok" if r.returncode == 0 else "FAILED: " + (r.stderr or r.stdout).strip().splitlines()[-1][:160]
                    failed = failed or r.returncode != 0
                rows.append((os.path.basename(folder), "yes" if hop else "NO (inlined?)", check))
    print(f"{'case':28} {'wrap_with_autocast':20} lowerscope-cli")
    for r in rows:
        print(f"{r[0]:28} {r[1]:20} {r[2]}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
