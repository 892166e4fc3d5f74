#!/usr/bin/env python3
"""The model zoo (issue 33): real architectures from torchvision, timm and transformers, exported
with torch.export and compiled by lowerscope-cli on the CPU and on CUDA, each checked against
PyTorch's own output on the CPU in float32.

Runs on the GPU machine (PyTorch 2.11, torchvision, timm, transformers; no network: weights are
random and seeded, transformers configs are tiny):

  python3 tools/zoo/zoo.py export --out DIR [--only NAME,NAME]   # DIR/<model>/model.pt2, in*.npy, out.npy
  python3 tools/zoo/zoo.py run --models DIR --cli build-gpu/app/lowerscope-cli --results FILE.md [--jobs 8]

`run` unpacks each model.pt2 into a folder (the GPU machine's build has no libzip), runs
`lowerscope-cli compile <model> --device cpu|cuda --report r.json` with a time limit, and writes
a table: per model, export, our CPU and CUDA results (check against PyTorch's out.npy, kernel
count, compile time) or the first line of the error; then the pass rates per source.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
import zipfile


def torchvision_models():
    import torchvision.models as tvm
    names = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "regnet_y_400mf",
             "shufflenet_v2_x0_5", "squeezenet1_0", "densenet121", "convnext_tiny", "alexnet", "vgg11", "mnasnet0_5",
             "resnext50_32x4d", "vit_b_16", "swin_t", "googlenet", "efficientnet_v2_s", "maxvit_t"]
    out = {}
    for n in names:
        def make(n=n):
            kw = {"weights": None}
            if n == "googlenet":
                kw.update(aux_logits=False, init_weights=False)
            return getattr(tvm, n)(**kw), "image"
        out["tv_" + n] = make
    return out


def timm_models():
    names = ["resnet18", "vit_tiny_patch16_224", "deit_tiny_patch16_224", "convnext_atto", "efficientnet_b0",
             "mobilevitv2_050", "levit_128s", "regnetx_002", "ghostnet_100", "poolformer_s12", "mixer_s16_224",
             "resmlp_12_224", "coat_tiny", "cait_xxs24_224", "pit_ti_224", "tnt_s_patch16_224", "xcit_nano_12_p16_224",
             "dla34", "hrnet_w18_small", "rexnet_100", "mobilenetv3_small_050", "lcnet_050", "edgenext_xx_small",
             "efficientformer_l1", "fastvit_t8", "repvgg_a0", "densenet121", "inception_v3", "nfnet_l0", "cspresnet50"]
    out = {}
    for n in names:
        def make(n=n):
            import timm
            m = timm.create_model(n, pretrained=False)
            size = m.default_cfg.get("input_size", (3, 224, 224))
            return m, ("image", size)
        out["timm_" + n] = make
    return out


class Logits(object):
    pass


def hf_models():
    import torch
    import transformers as tf

    class Wrap(torch.nn.Module):  # the tensor a model's output holds first (logits, last_hidden_state)
        def __init__(self, m, key):
            super().__init__()
            self.m, self.key = m, key

        def forward(self, *args):
            o = self.m(*args)
            return o[self.key] if self.key in o else o[0]

    tiny = dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                max_position_embeddings=128)
    specs = {
        "gpt2": lambda: tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=512, n_embd=64, n_layer=2, n_head=4, n_positions=128)),
        "llama": lambda: tf.LlamaForCausalLM(tf.LlamaConfig(num_key_value_heads=2, **tiny)),
        "mistral": lambda: tf.MistralForCausalLM(tf.MistralConfig(num_key_value_heads=2, **tiny)),
        "qwen2": lambda: tf.Qwen2ForCausalLM(tf.Qwen2Config(num_key_value_heads=2, **tiny)),
        "phi": lambda: tf.PhiForCausalLM(tf.PhiConfig(**tiny)),
        "gemma": lambda: tf.GemmaForCausalLM(tf.GemmaConfig(num_key_value_heads=2, head_dim=16, **tiny)),
        "opt": lambda: tf.OPTForCausalLM(tf.OPTConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                     ffn_dim=128, max_position_embeddings=128, word_embed_proj_dim=64)),
        "bloom": lambda: tf.BloomForCausalLM(tf.BloomConfig(vocab_size=512, hidden_size=64, n_layer=2, n_head=4)),
        "gpt_neox": lambda: tf.GPTNeoXForCausalLM(tf.GPTNeoXConfig(**tiny)),
        "falcon": lambda: tf.FalconForCausalLM(tf.FalconConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4)),
        "bert": lambda: tf.BertModel(tf.BertConfig(**tiny)),
        "roberta": lambda: tf.RobertaModel(tf.RobertaConfig(**tiny)),
        "distilbert": lambda: tf.DistilBertModel(tf.DistilBertConfig(vocab_size=512, dim=64, n_layers=2, n_heads=4, hidden_dim=128)),
        "albert": lambda: tf.AlbertModel(tf.AlbertConfig(embedding_size=32, **tiny)),
        "electra": lambda: tf.ElectraModel(tf.ElectraConfig(embedding_size=32, **tiny)),
        "deberta_v2": lambda: tf.DebertaV2Model(tf.DebertaV2Config(**tiny)),
        "t5_encoder": lambda: tf.T5EncoderModel(tf.T5Config(vocab_size=512, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)),
        "vit": lambda: tf.ViTModel(tf.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                                                image_size=32, patch_size=8)),
        "swin": lambda: tf.SwinModel(tf.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4)),
        "convnext_hf": lambda: tf.ConvNextModel(tf.ConvNextConfig(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2, image_size=32)),
        "mobilebert": lambda: tf.MobileBertModel(tf.MobileBertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                                     intermediate_size=64, embedding_size=32, intra_bottleneck_size=32)),
        "whisper_encoder": lambda: tf.WhisperModel(tf.WhisperConfig(vocab_size=512, d_model=64, encoder_layers=2, decoder_layers=2,
                                                                    encoder_attention_heads=4, decoder_attention_heads=4,
                                                                    encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16,
                                                                    max_source_positions=32)).encoder,
    }
    vision = {"vit", "swin", "convnext_hf"}
    out = {}
    for n, f in specs.items():
        def make(n=n, f=f):
            m = f()
            key = "logits" if "ForCausalLM" in type(m).__name__ else "last_hidden_state"
            if n in vision:
                return Wrap(m, key), ("image", (3, 32, 32))
            if n == "whisper_encoder":
                return Wrap(m, key), ("audio", (16, 64))
            return Wrap(m, key), "tokens"
        out["hf_" + n] = make
    return out


def recurrent_models():
    import torch

    class Rnn(torch.nn.Module):
        def __init__(self, cell):
            super().__init__()
            self.rnn = cell(16, 32, num_layers=2, batch_first=True)
            self.head = torch.nn.Linear(32, 4)

        def forward(self, x):
            return self.head(self.rnn(x)[0])

    return {"rnn_lstm": lambda: (Rnn(torch.nn.LSTM), ("sequence", (10, 16))),
            "rnn_gru": lambda: (Rnn(torch.nn.GRU), ("sequence", (10, 16)))}


def all_models():
    models = {}
    for f in (torchvision_models, timm_models, hf_models, recurrent_models):
        try:
            models.update(f())
        except Exception as e:  # a library missing on this machine
            print(f"{f.__name__}: {e}", file=sys.stderr)
    return models


def inputs_for(kind, torch):
    g = torch.Generator().manual_seed(0)
    if kind == "image":
        kind = ("image", (3, 224, 224))
    if kind == "tokens":
        return (torch.randint(0, 512, (2, 16), generator=g),)
    name, shape = kind
    return (torch.randn((2,) + tuple(shape), generator=g),)


def export(args):
    import numpy as np
    import torch
    torch.manual_seed(0)
    models = all_models()
    only = set(args.only.split(",")) if args.only else None
    os.makedirs(args.out, exist_ok=True)
    summary = {}
    for name, make in models.items():
        if only and name not in only:
            continue
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        t0 = time.time()
        try:
            torch.manual_seed(0)
            made = make()
            m, kind = made if isinstance(made, tuple) else (made, "image")
            m = m.eval()
            ins = inputs_for(kind, torch)
            with torch.no_grad():
                out = m(*ins)
            ep = torch.export.export(m, ins)
            torch.export.save(ep, os.path.join(d, "model.pt2"))
            for i, x in enumerate(ins):
                np.save(os.path.join(d, f"in{i}.npy"), x.numpy())
            np.save(os.path.join(d, "out.npy"), out.detach().float().numpy())
            summary[name] = {"export": "ok", "s": round(time.time() - t0, 1),
                             "params": sum(p.numel() for p in m.parameters())}
        except Exception as e:
            summary[name] = {"export": "failed: " + (str(e).strip().splitlines() or [type(e).__name__])[0][:300]}
            shutil.rmtree(d, ignore_errors=True)
        print(name, summary[name], flush=True)
    json.dump(summary, open(os.path.join(args.out, "export.json"), "w"), indent=1)


def unpack(pt2, dst):
    if os.path.isdir(dst):
        return
    zipfile.ZipFile(pt2).extractall(dst + ".tmp")
    os.rename(dst + ".tmp", dst)


def run_one(cli, folder, device, timeout):
    report = os.path.join(folder, f"r_{device}.json")
    t0 = time.time()
    try:
        p = subprocess.run([cli, "compile", folder, "--device", device, "--quiet", "--report", report],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout ({timeout} s)"}
    res = {"exit": p.returncode, "wall_s": round(time.time() - t0, 1)}
    try:
        r = json.load(open(report))
        chk = r.get("check", {})
        res["ok"] = bool(chk.get("ok"))
        res["max_err"] = chk.get("max_abs_err", chk.get("max_err"))
        res["kernels"] = len(r.get("kernels", []))
        res["compile_ms"] = r.get("compile_ms")
        if r.get("error"):
            res["error"] = (r.get("error_stage", "") + ": " + r["error"]).splitlines()[0][:300]
    except Exception:
        err = (p.stderr or p.stdout).strip().splitlines()
        res["error"] = (err[-1] if err else f"exit {p.returncode}")[:300]
    return res


def run(args):
    models = sorted(d for d in os.listdir(args.models) if os.path.exists(os.path.join(args.models, d, "model.pt2")))
    work = os.path.join(args.models, "_unpacked")
    os.makedirs(work, exist_ok=True)
    jobs = []
    for m in models:
        src = os.path.join(args.models, m)
        dst = os.path.join(work, m)
        os.makedirs(dst, exist_ok=True)
        for f in os.listdir(src):
            if f.endswith(".npy"):
                shutil.copy(os.path.join(src, f), dst)
        unpack(os.path.join(src, "model.pt2"), os.path.join(dst, "model.pt2"))
        for dev in args.devices.split(","):
            jobs.append((m, dev, dst))
    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        futs = {ex.submit(run_one, args.cli, d, dev, args.timeout): (m, dev) for m, dev, d in jobs}
        for f in concurrent.futures.as_completed(futs):
            m, dev = futs[f]
            results.setdefault(m, {})[dev] = f.result()
            print(m, dev, results[m][dev], flush=True)  # `zoo.py table --log` rebuilds the table from these lines
    exported = {}
    ej = os.path.join(args.models, "export.json")
    if os.path.exists(ej):
        exported = json.load(open(ej))
    json.dump({"export": exported, "results": results}, open(args.results + ".json", "w"), indent=1)
    write_table(exported, results, args)


def write_table(exported, results, args):
    def cell(r):
        if not r:
            return "-"
        if "status" in r:
            return r["status"]
        if r.get("ok"):
            return f"ok ({r.get('kernels')} kernels, {r.get('compile_ms', 0) or 0:.0f} ms)"
        return "FAIL: " + (r.get("error") or f"check failed, max err {r.get('max_err')}").replace("|", "/")
    devices = args.devices.split(",")
    lines = ["# Model zoo: torch.export models through lowerscope-cli", "",
             f"Command (GPU machine): `python3 tools/zoo/zoo.py export --out DIR && python3 tools/zoo/zoo.py run --models DIR "
             f"--cli build-gpu/app/lowerscope-cli --results tools/zoo/results.md`", "",
             "Inputs: batch 2, seeded random (token ids for language models); weights random and seeded; reference: PyTorch "
             "on the CPU in float32 (out.npy). A check compares our outputs with it (and with our reference interpreter).", ""]
    names = sorted(set(exported) | set(results))
    for src in ("tv_", "timm_", "hf_", "rnn_"):
        group = [n for n in names if n.startswith(src)]
        if not group:
            continue
        ok = {d: sum(1 for n in group if results.get(n, {}).get(d, {}).get("ok")) for d in devices}
        exp_ok = sum(1 for n in group if exported.get(n, {}).get("export") == "ok" or n in results)
        lines.append(f"**{src[:-1]}**: {len(group)} models, {exp_ok} exported; " +
                     ", ".join(f"{d}: {ok[d]} correct" for d in devices))
    lines += ["", "| model | export | " + " | ".join(devices) + " |", "|---|---|" + "---|" * len(devices)]
    for n in names:
        e = exported.get(n, {}).get("export", "ok" if n in results else "-")
        e = e if e == "ok" else e.replace("|", "/")[:160]
        lines.append(f"| {n} | {e} | " + " | ".join(cell(results.get(n, {}).get(d)) for d in devices) + " |")
    open(args.results, "w").write("\n".join(lines) + "\n")


def table(args):
    """The table from a run's printed lines (a run cut short by the machine's time limit)."""
    import ast
    results = {}
    for line in open(args.log):
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in ("cpu", "cuda") and parts[2].startswith("{"):
            results.setdefault(parts[0], {})[parts[1]] = ast.literal_eval(parts[2].strip())
    exported = json.load(open(args.export)) if args.export else {}
    write_table(exported, results, args)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--out", required=True)
    e.add_argument("--only", default="")
    r = sub.add_parser("run")
    r.add_argument("--models", required=True)
    r.add_argument("--cli", required=True)
    r.add_argument("--results", required=True)
    r.add_argument("--devices", default="cpu,cuda")
    r.add_argument("--jobs", type=int, default=8)
    r.add_argument("--timeout", type=int, default=240)
    t = sub.add_parser("table")
    t.add_argument("--log", required=True)
    t.add_argument("--export", default="")
    t.add_argument("--results", required=True)
    t.add_argument("--devices", default="cpu,cuda")
    a = ap.parse_args()
    try:
        {"export": export, "run": run, "table": table}[a.cmd](a)
    except Exception:
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main()
