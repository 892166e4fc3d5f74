#!/usr/bin/env python3
"""The model zoo (issue 33): real architectures from torchvision, timm and transformers, exported
with torch.export and compiled by lowerscope-cli on the CPU and on CUDA, each checked against
PyTorch's own output on the CPU in float32; beside ours, Inductor (torch.compile) on CUDA.

Runs on the GPU machine (PyTorch 2.11, torchvision, timm, transformers; no network: weights are
random and seeded, transformers configs are tiny). The machine gives a command a few minutes and
starts bare, so the zoo runs in batches, each one command that exports its own models and keeps
its results in a JSON file written after every job (a command cut by the machine keeps what
finished); `table` merges the files:

  tools/zoo/gpu_batch.sh run 1/4          # one command each: 1/4 .. 4/4; builds the CLI where missing
  tools/zoo/gpu_batch.sh inductor 1/4     # $OUT/run_1_of_4.json, $OUT/inductor_1_of_4.json
  python3 tools/zoo/zoo.py table --runs 'tools/zoo/runs/run_*.json' --inductor 'tools/zoo/runs/inductor_*.json' \
      --results tools/zoo/results.md      # here, with the JSON files copied into tools/zoo/runs/

which run, for example:

  python3 tools/zoo/zoo.py run --models /tmp/zoo --cli build-gpu/app/lowerscope-cli --export --batch 1/4 \
      --budget 240 --out-json $OUT/run_1_of_4.json
  python3 tools/zoo/zoo.py inductor --models /tmp/zoo --export --batch 1/4 --budget 240 --out-json $OUT/inductor_1_of_4.json

A batch takes every N-th model of the zoo in an order that alternates the sources (torchvision,
timm, transformers, recurrent), so that each batch holds some of each, and its jobs alternate CPU
and CUDA. `--only tv,hf_gpt2` keeps the models of those sources or names.

`run` unpacks each model.pt2 into a folder (the GPU machine's build has no libzip) and runs
`lowerscope-cli compile <folder> --device cpu|cuda --report r.json --no-reference` with a time
limit: the check is against PyTorch's out.npy (the reference interpreter, plain loops in double,
is left out where out.npy exists: `--reference` keeps it). Each job's CPU threads are the cores
divided by the jobs at once (OMP_NUM_THREADS, LOWERSCOPE_COMPILE_THREADS), so that parallel
jobs do not oversubscribe the cores.

`inductor` builds each model again (same seed, same weights as its export), moves it and its
inputs to CUDA and measures eager and torch.compile (default mode): the first call's time (the
compile), the Triton kernels and library calls in the generated code, and the median of CUDA
event timings; its output is checked against out.npy too.
"""
import argparse
import concurrent.futures
import glob
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
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
                                                                    max_source_positions=32, pad_token_id=0, bos_token_id=1,
                                                                    eos_token_id=2, decoder_start_token_id=3)).encoder,
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


def build(make, torch):
    """The model and its inputs, as the export made them (seed 0 before the constructor)."""
    torch.manual_seed(0)
    made = make()
    m, kind = made if isinstance(made, tuple) else (made, "image")
    return m.eval(), inputs_for(kind, torch)


# ---------------------------------------------------------------------------------------------
# Which models a command takes
# ---------------------------------------------------------------------------------------------

SOURCES = ("tv", "timm", "hf", "rnn")


def source_of(name):
    return name.split("_", 1)[0]


def interleaved(names):
    """The models in an order that alternates the sources: tv, timm, hf, rnn, tv, timm, ..."""
    groups = [sorted(n for n in names if source_of(n) == s) for s in SOURCES]
    groups.append(sorted(n for n in names if source_of(n) not in SOURCES))
    out = []
    for i in range(max((len(g) for g in groups), default=0)):
        out += [g[i] for g in groups if i < len(g)]
    return out


def parse_batch(text):
    if not text:
        return 1, 1
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise SystemExit(f"--batch takes I/N with 1 <= I <= N, e.g. 2/4 (got {text!r})")
    return int(m.group(1)), int(m.group(2))


def select(names, only, batch):
    """The models of this command: those --only names (sources or models), every N-th of --batch I/N."""
    if only:
        keep = {x.strip() for x in only.split(",") if x.strip()}
        names = [n for n in names if n in keep or source_of(n) in keep]
    i, n = parse_batch(batch)
    return interleaved(names)[i - 1::n]


def exported_names(folder):
    if not os.path.isdir(folder):
        return []
    return [d for d in os.listdir(folder) if os.path.exists(os.path.join(folder, d, "model.pt2"))]


def zoo_names(args):
    """Every model name: the zoo's own list where it is asked to export (that needs torch), else
    the models the folder holds."""
    if getattr(args, "export", False):
        return sorted(all_models())
    return sorted(exported_names(args.models))


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------

def export_one(name, make, folder):
    """DIR/<name>/model.pt2, in*.npy, out.npy (PyTorch on the CPU in float32); a summary dict."""
    import numpy as np
    import torch
    d = os.path.join(folder, name)
    os.makedirs(d, exist_ok=True)
    t0 = time.time()
    try:
        m, ins = build(make, torch)
        with torch.no_grad():
            out = m(*ins)
        ep = torch.export.export(m, ins)
        partial = os.path.join(d, "partial")  # model.pt2 appears whole, after its inputs and output
        os.makedirs(partial, exist_ok=True)
        torch.export.save(ep, os.path.join(partial, "model.pt2"))
        for i, x in enumerate(ins):
            np.save(os.path.join(d, f"in{i}.npy"), x.numpy())
        np.save(os.path.join(d, "out.npy"), out.detach().float().numpy())
        os.replace(os.path.join(partial, "model.pt2"), os.path.join(d, "model.pt2"))
        os.rmdir(partial)
        return {"export": "ok", "s": round(time.time() - t0, 1), "params": sum(p.numel() for p in m.parameters())}
    except Exception as e:
        shutil.rmtree(d, ignore_errors=True)
        return {"export": "failed: " + (str(e).strip().splitlines() or [type(e).__name__])[0][:300]}


def merge_export_json(folder, summary):
    path = os.path.join(folder, "export.json")
    old = json.load(open(path)) if os.path.exists(path) else {}
    old.update(summary)
    write_json(path, old)


def export(args):
    models = all_models()
    os.makedirs(args.out, exist_ok=True)
    summary = {}
    for name in select(sorted(models), args.only, args.batch):
        summary[name] = export_one(name, models[name], args.out)
        print(name, summary[name], flush=True)
    merge_export_json(args.out, summary)


# ---------------------------------------------------------------------------------------------
# Our CLI on each model (run)
# ---------------------------------------------------------------------------------------------

def write_json(path, obj):
    """Written whole, then renamed: a command killed meanwhile leaves the last complete file."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def machine():
    info = {"cores": os.cpu_count()}
    try:
        info["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                     text=True, timeout=20).stdout.strip().splitlines()[0]
    except Exception:
        pass
    try:
        info["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                        timeout=20, cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except Exception:
        pass
    return info


def unpack(pt2, dst):
    if os.path.isdir(dst):
        return
    shutil.rmtree(dst + ".tmp", ignore_errors=True)
    zipfile.ZipFile(pt2).extractall(dst + ".tmp")
    os.rename(dst + ".tmp", dst)


def prepare(models_dir, name):
    """The folder the CLI compiles: model.pt2 unpacked, with the model's .npy files beside it."""
    src = os.path.join(models_dir, name)
    dst = os.path.join(models_dir, "_unpacked", name)
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if f.endswith(".npy"):
            shutil.copy(os.path.join(src, f), dst)
    unpack(os.path.join(src, "model.pt2"), os.path.join(dst, "model.pt2"))
    return dst


def first_line(text, limit=300):
    lines = [l for l in (text or "").strip().splitlines() if l.strip()]
    return (lines[0] if lines else "")[:limit]


def run_one(cli, folder, device, timeout, threads, reference):
    """One compile; a dict: ok, error, kernels, compile and run times (or status 'timeout')."""
    report = os.path.join(folder, f"r_{device}.json")
    if os.path.exists(report):
        os.remove(report)
    cmd = [cli, "compile", folder, "--device", device, "--quiet", "--report", report]
    if not reference and os.path.exists(os.path.join(folder, "out.npy")):
        cmd.append("--no-reference")  # the check is against PyTorch's out.npy
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               LOWERSCOPE_COMPILE_THREADS=str(threads))
    t0 = time.time()
    # A session of its own: a timeout ends the CLI and its kernel worker together.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.communicate()
        return {"status": f"timeout ({timeout:.0f} s)", "wall_s": round(time.time() - t0, 1)}
    res = {"exit": p.returncode, "wall_s": round(time.time() - t0, 1)}
    try:
        r = json.load(open(report))
    except Exception:
        res["ok"] = False
        res["error"] = first_line("\n".join((err or out or "").strip().splitlines()[-1:])) or f"exit {p.returncode}"
        return res
    chk = r.get("check", {})
    res["ok"] = bool(r.get("ok", chk.get("ok")))
    res["max_err"] = chk.get("max_abs_err")
    res["against"] = [c.get("against") for c in chk.get("outputs", [])][:2]
    res["kernels"] = len(r.get("kernels", [])) or (r.get("generated_kernels", 0) + r.get("extern_kernels", 0))
    res["generated_kernels"] = r.get("generated_kernels")
    res["extern_kernels"] = r.get("extern_kernels")
    res["compile_ms"] = r.get("compile_ms")
    res["run_ms"] = r.get("run_ms")
    ks = sorted((k for k in r.get("kernels", []) if k.get("ms")), key=lambda k: -k["ms"])
    res["slowest"] = [[k.get("name"), round(k["ms"], 4)] for k in ks[:3]]
    phases = sorted(r.get("compile_phases", []) or [], key=lambda x: -(x.get("ms") or 0))
    res["compile_phases"] = [[x.get("name"), round(x.get("ms") or 0)] for x in phases[:3]]
    if r.get("not_run"):
        res["not_run"] = first_line(r["not_run"])
    e = r.get("error")
    if e:
        res["error"] = first_line((e.get("stage", "") + ": " + e.get("message", "")) if isinstance(e, dict) else str(e))
    elif not res["ok"]:
        res["error"] = res.get("not_run") or f"check failed, max abs err {res['max_err']}"
    return res


class Results:
    """A batch's JSON: {"meta", "export", "results": {model: {device: result}}}, rewritten after
    every job; an earlier file of the same name is resumed (its jobs are not run again, but for
    those the budget cut)."""

    def __init__(self, path, meta):
        self.path = path
        self.lock = threading.Lock()
        self.data = {"meta": meta, "export": {}, "results": {}}
        if os.path.exists(path):
            old = json.load(open(path))
            self.data["export"] = old.get("export", {})
            self.data["results"] = {m: {d: r for d, r in devs.items() if not r.get("status", "").startswith("cut by")}
                                    for m, devs in old.get("results", {}).items()}
            self.data["meta"]["resumed"] = old.get("meta", {}).get("started")

    def done(self, model, device):
        return device in self.data["results"].get(model, {})

    def set(self, model, device, res):
        with self.lock:
            self.data["results"].setdefault(model, {})[device] = res
            write_json(self.path, self.data)

    def set_export(self, model, summary):
        with self.lock:
            self.data["export"][model] = summary
            write_json(self.path, self.data)


def run(args):
    t_start = time.time()
    deadline = t_start + args.budget if args.budget else float("inf")
    names = select(zoo_names(args), args.only, args.batch)
    devices = [d for d in args.devices.split(",") if d]
    cores = os.cpu_count() or 1
    threads = args.threads or max(1, cores // max(1, args.jobs))
    out_json = args.out_json or os.path.join(args.models, "run_%s.json" % (args.batch or "all").replace("/", "_of_"))
    meta = dict(machine(), started=time.strftime("%Y-%m-%d %H:%M:%S"), command=" ".join(sys.argv),
                jobs=args.jobs, threads=threads, timeout=args.timeout, models=names)
    res = Results(out_json, meta)
    models = all_models() if args.export else {}
    os.makedirs(args.models, exist_ok=True)
    print(f"{len(names)} models, {len(devices)} devices, {args.jobs} at once, {threads} threads each; results in {out_json}",
          flush=True)

    def job(m, dev, folder):
        left = deadline - time.time()
        if left < args.min_job_s:  # no time left for it: a later command resumes it
            return
        r = run_one(args.cli, folder, dev, min(args.timeout, left), threads, args.reference)
        if "status" in r and left < args.timeout:
            r["status"] = f"cut by the budget after {r['wall_s']:.0f} s"
        res.set(m, dev, r)
        print(m, dev, r, flush=True)

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        futs = []
        for k, m in enumerate(names):
            todo = [d for d in devices if not res.done(m, d)]
            if not todo:
                continue
            if time.time() > deadline - args.min_job_s:
                break
            if res.data["export"].get(m, {}).get("export", "ok") != "ok":  # its export failed in an earlier try
                continue
            # Export what the folder lacks (in this process, while earlier jobs compile).
            if not os.path.exists(os.path.join(args.models, m, "model.pt2")):
                if not args.export or m not in models:
                    continue
                summary = export_one(m, models[m], args.models)
                res.set_export(m, summary)
                merge_export_json(args.models, {m: summary})
                print(m, "export", summary, flush=True)
                if summary["export"] != "ok":
                    continue
            try:
                folder = prepare(args.models, m)
            except Exception as e:
                for d in todo:
                    res.set(m, d, {"ok": False, "error": "unpack: " + first_line(str(e))})
                continue
            if k % 2:  # CPU and CUDA jobs alternate in the queue
                todo.reverse()
            futs += [ex.submit(job, m, d, folder) for d in todo]
        for f in futs:
            f.result()
    left = [m for m in names if not all(res.done(m, d) for d in devices)
            and res.data["export"].get(m, {}).get("export", "ok") == "ok"]
    print(f"done in {time.time() - t_start:.0f} s; {len(left)} models left for another command: {' '.join(left)}", flush=True)


# ---------------------------------------------------------------------------------------------
# Inductor and eager on CUDA
# ---------------------------------------------------------------------------------------------

def cuda_median_ms(torch, fn, warmup, runs):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def count_kernels(codes):
    """Triton kernels defined, library calls (extern_kernels.*, aten fallbacks) and kernel launches
    in Inductor's generated modules."""
    text = "\n".join(codes)
    triton = len(re.findall(r"=\s*async_compile\.triton\(", text))
    extern = len(re.findall(r"\bextern_kernels\.\w+\(", text)) + len(re.findall(r"\btorch\.ops\.aten\.\w+\.\w+\(", text))
    launches = len(re.findall(r"\btriton_\w+\.run\(", text))
    return triton, extern, launches


def max_abs_err(torch, got, want_path):
    import numpy as np
    if not os.path.exists(want_path):
        return None
    want = torch.from_numpy(np.load(want_path))
    got = got.detach().float().cpu()
    if got.shape != want.shape:
        return f"shape {list(got.shape)} vs {list(want.shape)}"
    return float((got - want).abs().max())


def inductor_one(torch, name, make, folder, runs):
    import numpy as np
    from torch._inductor.utils import run_and_get_code
    m, ins = build(make, torch)
    stored = sorted(glob.glob(os.path.join(folder, "in*.npy")))
    if stored:  # the export's inputs, as our CLI reads them
        ins = tuple(torch.from_numpy(np.load(p)) for p in stored)
    m = m.cuda()
    ins = tuple(x.cuda() for x in ins)
    res = {"gpu": torch.cuda.get_device_name()}
    try:  # PyTorch's CUDA defaults: TF32 convolutions (not float32's numbers), float32 matmuls
        res["tf32_conv"], res["tf32_matmul"] = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    except Exception:
        pass
    with torch.no_grad():
        res["eager_ms"] = round(cuda_median_ms(torch, lambda: m(*ins), 3, runs), 4)
        torch._dynamo.reset()
        compiled = torch.compile(m)
        torch.cuda.synchronize()
        try:
            from torch._inductor import metrics
            metrics.reset()
        except Exception:
            metrics = None
        t0 = time.time()
        out, codes = run_and_get_code(compiled, *ins)  # the first call compiles
        torch.cuda.synchronize()
        res["compile_s"] = round(time.time() - t0, 2)
        res["triton_kernels"], res["extern_calls"], res["launches"] = count_kernels(codes)
        if metrics is not None:
            res["generated_kernel_count"] = getattr(metrics, "generated_kernel_count", None)
        res["graphs"] = len(codes)
        res["inductor_ms"] = round(cuda_median_ms(torch, lambda: compiled(*ins), 3, runs), 4)
        res["max_err"] = max_abs_err(torch, out if torch.is_tensor(out) else out[0], os.path.join(folder, "out.npy"))
    res["ok"] = True
    return res


def inductor(args):
    os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")  # every model compiled cold: its code and time
    import torch
    try:
        import torch._inductor.config as inductor_config
        inductor_config.fx_graph_cache = False
    except Exception:
        pass
    t_start = time.time()
    deadline = t_start + args.budget if args.budget else float("inf")
    models = all_models()
    names = select(sorted(models) if args.export else zoo_names(args), args.only, args.batch)
    out_json = args.out_json or os.path.join(args.models, "inductor_%s.json" % (args.batch or "all").replace("/", "_of_"))
    data = {"meta": dict(machine(), started=time.strftime("%Y-%m-%d %H:%M:%S"), command=" ".join(sys.argv),
                         torch=torch.__version__, runs=args.runs), "results": {}}
    if os.path.exists(out_json):
        data["results"] = {m: r for m, r in json.load(open(out_json)).get("results", {}).items() if r.get("ok")}
    for m in names:
        if m in data["results"]:
            continue
        if time.time() > deadline - args.min_job_s:
            break
        folder = os.path.join(args.models, m)
        if args.export and not os.path.exists(os.path.join(folder, "model.pt2")) and m in models:
            summary = export_one(m, models[m], args.models)
            merge_export_json(args.models, {m: summary})
        if m not in models:
            continue
        try:
            r = inductor_one(torch, m, models[m], folder, args.runs)
        except Exception as e:
            r = {"ok": False, "error": first_line(f"{type(e).__name__}: {e}")}
        torch._dynamo.reset()
        torch.cuda.empty_cache()
        data["results"][m] = r
        write_json(out_json, data)
        print(m, r, flush=True)
    print(f"done in {time.time() - t_start:.0f} s; results in {out_json}", flush=True)


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

def expand(patterns):
    files = []
    for p in patterns or []:
        for x in p.split(","):
            hits = sorted(glob.glob(x))
            files += hits if hits else ([x] if os.path.exists(x) else [])
    return files


def finished(r):
    return bool(r) and "status" not in r


def load_runs(args):
    """{model: {device: result}} and {model: export summary} from every run file (later files win,
    but a timeout never hides a finished result), the exports' JSON and a legacy printed log."""
    import ast
    exported, results = {}, {}

    def put(m, d, r):
        old = results.setdefault(m, {}).get(d)
        if finished(old) and not finished(r):
            return
        results[m][d] = r

    for path in expand(args.export):
        exported.update(json.load(open(path)))
    for path in expand([args.log] if args.log else []):
        for line in open(path):
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[1] in ("cpu", "cuda") and parts[2].startswith("{"):
                put(parts[0], parts[1], ast.literal_eval(parts[2].strip()))
    for path in expand(args.runs):
        j = json.load(open(path))
        exported.update(j.get("export", {}))
        for m, devs in j.get("results", {}).items():
            for d, r in devs.items():
                put(m, d, r)
    inductor = {}
    for path in expand(args.inductor):
        for m, r in json.load(open(path)).get("results", {}).items():
            if r.get("ok") or m not in inductor:
                inductor[m] = r
    return exported, results, inductor


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def write_table(exported, results, inductor, args):
    devices = args.devices.split(",")

    def cell(r):
        if not r:
            return "-"
        if "status" in r:
            return r["status"]
        if r.get("ok"):
            return f"ok ({r.get('kernels')} kernels, {r.get('compile_ms', 0) or 0:.0f} ms)"
        return "FAIL: " + (r.get("error") or f"check failed, max err {r.get('max_err')}").replace("|", "/")

    names = sorted(set(exported) | set(results) | set(inductor), key=lambda n: (SOURCES.index(source_of(n))
                   if source_of(n) in SOURCES else len(SOURCES), n))
    lines = ["# Model zoo: torch.export models through lowerscope-cli, beside Inductor", "",
             "Made with (GPU machine; each `run` / `inductor` batch one command, see tools/zoo/zoo.py):", "",
             "    " + (args.command or "python3 tools/zoo/zoo.py table " + " ".join(sys.argv[2:])), "",
             "Inputs: batch 2, seeded random (token ids for language models); weights random and seeded; reference: PyTorch "
             "on the CPU in float32 (out.npy). Ours: `lowerscope-cli compile` of the exported program, checked against "
             "out.npy. Inductor: torch.compile (default mode) of the same model on CUDA; times are medians of CUDA events; "
             "compile times: ours the CLI's compile, Inductor's its first call.", ""]
    lines += ["| source | models | exported | " + " | ".join(f"{d} correct" for d in devices) + " |",
              "|---|---|---|" + "---|" * len(devices)]
    for src in SOURCES:
        group = [n for n in names if source_of(n) == src]
        if not group:
            continue
        exp_ok = sum(1 for n in group if exported.get(n, {}).get("export") == "ok" or n in results)
        ok = {d: sum(1 for n in group if results.get(n, {}).get(d, {}).get("ok")) for d in devices}
        ran = {d: sum(1 for n in group if finished(results.get(n, {}).get(d))) for d in devices}
        lines.append(f"| {src} | {len(group)} | {exp_ok} | " +
                     " | ".join(f"{ok[d]} / {exp_ok} ({ran[d]} finished)" for d in devices) + " |")
    total_exp = sum(1 for n in names if exported.get(n, {}).get("export") == "ok" or n in results)
    lines.append(f"| all | {len(names)} | {total_exp} | " +
                 " | ".join(f"{sum(1 for n in names if results.get(n, {}).get(d, {}).get('ok'))} / {total_exp}"
                            for d in devices) + " |")
    speed, comp = [], []
    for n in names:
        ours, ind = results.get(n, {}).get("cuda", {}), inductor.get(n, {})
        if ours.get("ok") and ind.get("ok") and ours.get("run_ms") and ind.get("inductor_ms"):
            speed.append(ours["run_ms"] / ind["inductor_ms"])
            if ours.get("compile_ms") and ind.get("compile_s"):
                comp.append(ours["compile_ms"] / 1000.0 / ind["compile_s"])
    lines.append("")
    g = geomean(speed)
    lines.append(f"Geometric mean of ours / Inductor on CUDA (time of the whole model, {len(speed)} models correct on both): "
                 + (f"**{g:.2f}**" if g else "not measured"))
    gc = geomean(comp)
    lines.append(f"Geometric mean of our compile time / Inductor's first call: " + (f"**{gc:.3f}**" if gc else "not measured"))
    lines += ["", "| model | export | " + " | ".join(devices) +
              " | ours CUDA ms | Inductor ms | eager ms | ours / Inductor | kernels ours / Inductor (Triton + library) "
              "| compile s ours / Inductor | our slowest CUDA kernels |",
              "|---|---|" + "---|" * len(devices) + "---|---|---|---|---|---|---|"]

    def num(x, f="{:.3f}"):
        return f.format(x) if isinstance(x, (int, float)) else "-"

    for n in names:
        e = exported.get(n, {}).get("export", "ok" if n in results else "-")
        e = e if e == "ok" else e.replace("|", "/")[:160]
        ours, ind = results.get(n, {}).get("cuda", {}) or {}, inductor.get(n, {})
        ours_ms = ours.get("run_ms") if ours.get("ok") else None
        ind_ms = ind.get("inductor_ms") if ind.get("ok") else None
        ratio = ours_ms / ind_ms if ours_ms and ind_ms else None
        ind_k = f"{ind.get('triton_kernels')} + {ind.get('extern_calls')}" if ind.get("ok") else (
            "FAIL: " + ind.get("error", "").replace("|", "/")[:80] if ind else "-")
        kern = f"{ours.get('kernels', '-') if ours.get('ok') else '-'} / {ind_k}"
        comp_cell = f"{num((ours.get('compile_ms') or 0) / 1000.0 if ours.get('ok') else None, '{:.1f}')} / " \
                    f"{num(ind.get('compile_s'), '{:.1f}')}"
        slow = ", ".join(f"{k} {ms:.3f}" for k, ms in (ours.get("slowest") or [])) if ratio and ratio > 1 else ""
        lines.append(f"| {n} | {e} | " + " | ".join(cell(results.get(n, {}).get(d)) for d in devices) +
                     f" | {num(ours_ms)} | {num(ind_ms)} | {num(ind.get('eager_ms'))} | {num(ratio, '{:.2f}')} | {kern} "
                     f"| {comp_cell} | {slow} |")
    failures = [(n, d, results[n][d]) for n in names for d in devices
                if results.get(n, {}).get(d) and not results[n][d].get("ok")]
    if failures:
        lines += ["", "## Failures", ""]
        for n, d, r in failures:
            lines.append(f"- {n} ({d}): " + (r.get("status") or r.get("error") or f"check failed, max err {r.get('max_err')}"))
    # The notes of earlier runs kept below the table, from the marker line on.
    marker = "<!-- earlier runs -->"
    old = open(args.results).read() if os.path.exists(args.results) else ""
    kept = old[old.index(marker):] if marker in old else ""
    open(args.results, "w").write("\n".join(lines) + "\n" + ("\n" + kept if kept else ""))
    print(f"{args.results}: {len(names)} models")


def table(args):
    exported, results, inductor = load_runs(args)
    write_table(exported, results, inductor, args)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def selection(p):
        p.add_argument("--only", default="", help="sources (tv, timm, hf, rnn) or model names, comma separated")
        p.add_argument("--batch", default="", help="I/N: every N-th model from the I-th, sources alternating")

    e = sub.add_parser("export", help="export the models: DIR/<model>/model.pt2, in*.npy, out.npy")
    e.add_argument("--out", required=True)
    selection(e)
    r = sub.add_parser("run", help="our CLI on each exported model, CPU and CUDA")
    r.add_argument("--models", required=True, help="the folder the models are exported into")
    r.add_argument("--cli", required=True)
    r.add_argument("--out-json", default="", help="this batch's results (default DIR/run_I_of_N.json); resumed when it exists")
    r.add_argument("--export", action="store_true", help="export the models of this batch that DIR lacks first (needs torch)")
    r.add_argument("--devices", default="cpu,cuda")
    r.add_argument("--jobs", type=int, default=6, help="compiles at once")
    r.add_argument("--threads", type=int, default=0, help="CPU threads of each job (default: cores / jobs)")
    r.add_argument("--timeout", type=float, default=150, help="seconds one compile may take")
    r.add_argument("--budget", type=float, default=0, help="seconds for the whole command: no job starts after it, "
                   "running ones are cut at it (0: none)")
    r.add_argument("--min-job-s", type=float, default=20, help="no job starts with less than this left of the budget")
    r.add_argument("--reference", action="store_true", help="also check against the reference interpreter")
    selection(r)
    i = sub.add_parser("inductor", help="eager and torch.compile on CUDA for each model: times, kernels, compile time")
    i.add_argument("--models", required=True)
    i.add_argument("--out-json", default="")
    i.add_argument("--export", action="store_true")
    i.add_argument("--runs", type=int, default=20, help="timed calls (median)")
    i.add_argument("--budget", type=float, default=0)
    i.add_argument("--min-job-s", type=float, default=40)
    selection(i)
    t = sub.add_parser("table", help="merge run and inductor JSON files into results.md")
    t.add_argument("--runs", action="append", default=[], help="run JSON files or globs (repeatable; later win)")
    t.add_argument("--inductor", action="append", default=[], help="inductor JSON files or globs")
    t.add_argument("--export", action="append", default=[], help="export.json files")
    t.add_argument("--log", default="", help="a legacy run's printed log")
    t.add_argument("--results", required=True)
    t.add_argument("--devices", default="cpu,cuda")
    t.add_argument("--command", default="", help="the commands that made the data, for the table's header")
    a = ap.parse_args()
    try:
        {"export": export, "run": run, "inductor": inductor, "table": table}[a.cmd](a)
    except Exception:
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main()
