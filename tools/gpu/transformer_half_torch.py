#!/usr/bin/env python3
"""PyTorch eager and torch.compile (Inductor) on the same bf16 ops and bytes as
transformer_half_variants.cu's four families (the transformer block's training step at 16x512x512):
CUDA events around 20 calls, median of 15 batches after 20 warm-up calls; each call's inputs rotate
over sets whose bytes together exceed the L2, as in the harness.

    python3 tools/gpu/transformer_half_torch.py            (eager, torch.compile)
    python3 tools/gpu/transformer_half_torch.py --autotune (+ max-autotune-no-cudagraphs)

(c) LayerNorm forward: native_layer_norm(x [8192, 512], w, b) -> y, mean, rstd (float32)
(b) GELU forward: gelu(x [8192, 2048])
(a1) LayerNorm's weight and bias gradients from float32 g and xhat [8192, 512]: (g * xhat).sum(0), g.sum(0), in bf16
(a2) GELU backward and the bias gradient: gi = gelu_backward(go, x) [8192, 2048], gi.sum(0)
"""
import statistics, sys

import torch
import torch.nn.functional as F

R, C, H = 8192, 512, 2048
dev = "cuda"
bf = torch.bfloat16


def ms(fn, sets):
    for i in range(20):
        fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    s, e, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True), []
    for _ in range(15):
        s.record()
        for i in range(20):
            fn(*sets[i % len(sets)])
        e.record()
        e.synchronize()
        t.append(s.elapsed_time(e) / 20)
    return statistics.median(t)


def copy_gbps():
    a = torch.empty(1 << 28, device=dev)
    b = torch.empty_like(a)
    m = ms(lambda x, y: y.copy_(x), [(a, b)])
    return 2 * a.numel() * 4 / (m * 1e6)


def ln_fwd(x, w, b):
    return torch.native_layer_norm(x, [C], w, b, 1e-5)


def gelu_fwd(x):
    return F.gelu(x)


def ln_wb_grads(g, xh):
    return (g * xh).sum(0).to(bf), g.sum(0).to(bf)


def gelu_bwd_bias(go, x):
    gi = torch.ops.aten.gelu_backward(go, x)
    return gi, gi.sum(0)


def main():
    autotune = "--autotune" in sys.argv
    torch.manual_seed(0)
    w = (1 + 0.2 * torch.randn(C, device=dev)).to(bf)
    b = (0.2 * torch.randn(C, device=dev)).to(bf)
    cases = [
        ("(c) LayerNorm fwd 8192x512", ln_fwd, [((torch.randn(R, C, device=dev) + 0.3).to(bf), w, b) for _ in range(8)], 2 * R * C * 2 + 2 * R * 4 + 2 * C * 2),
        ("(b) GELU fwd 8192x2048", gelu_fwd, [((2 * torch.randn(R, H, device=dev)).to(bf),) for _ in range(2)], 2 * R * H * 2),
        ("(a1) LN weight+bias grads 8192x512 f32", ln_wb_grads,
         [(torch.randn(R, C, device=dev).to(bf).float(), torch.randn(R, C, device=dev)) for _ in range(4)], 2 * R * C * 4 + 2 * C * 2),
        ("(a2) GELU bwd + bias grad 8192x2048", gelu_bwd_bias,
         [((0.01 * torch.randn(R, H, device=dev)).to(bf), (2 * torch.randn(R, H, device=dev)).to(bf)) for _ in range(2)], 3 * R * H * 2 + 2 * H),
    ]
    cg = copy_gbps()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; copy 1 GiB: {cg:.0f} GB/s\n")
    print("| case | eager ms (of copy) | torch.compile ms (of copy) |" + (" max-autotune-no-cudagraphs ms (of copy) |" if autotune else ""))
    print("|---|---|---|" + ("---|" if autotune else ""))
    for name, fn, sets, nbytes in cases:
        cols = []
        fns = [fn, torch.compile(fn)] + ([torch.compile(fn, mode="max-autotune-no-cudagraphs")] if autotune else [])
        for f in fns:
            m = ms(f, sets)
            cols.append(f"{m:.4f} ({100 * nbytes / (m * 1e6) / cg:.0f}%)")
        print(f"| {name} | " + " | ".join(cols) + " |")


if __name__ == "__main__":
    main()
