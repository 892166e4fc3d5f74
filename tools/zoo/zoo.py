#!/usr/bin/env python3
"""The model zoo (issue 33): real architectures from torchvision, timm and transformers, exported
with torch.export (.pt2) and torch.onnx.export(dynamo=True) (.onnx), compiled by lowerscope-cli on
the CPU and on CUDA, for inference and a training step, each checked against PyTorch's own output
(and gradients) on the CPU in float32; beside ours, ONNX Runtime on the same .onnx and Inductor
(torch.compile) on CUDA, whose TORCH_TRACE log becomes a corpus of torch-level graphs that
`lowerscope-cli trace` compiles too.

Runs on the GPU machine (PyTorch 2.11, torchvision, timm, transformers, onnx, onnxscript,
onnxruntime; no network: weights are random and seeded, transformers configs are tiny). The machine
gives a command a few minutes and starts bare, so the zoo runs in batches, each one command that
exports its own models and keeps its results in a JSON file written after every job (a command cut
by the machine keeps what finished); `table` merges the files:

  tools/zoo/gpu_batch.sh run 1/8          # one command each: 1/8 .. 8/8; builds the CLI where missing
  tools/zoo/gpu_batch.sh inductor 1/8     # Inductor under TORCH_TRACE, the trimmed corpus of its graphs
  tools/zoo/gpu_batch.sh trace 1/8        # our compile of the corpus's graphs (where inductor left some)
  python3 tools/zoo/zoo.py table --runs 'tools/zoo/runs/run_*.json' --inductor 'tools/zoo/runs/inductor_*.json' \
      --traces 'tools/zoo/runs/zoo_trace_*.json' --results tools/zoo/results.md   # here, the files copied into tools/zoo/runs/

which run, for example:

  python3 tools/zoo/zoo.py run --models /tmp/zoo --cli build-gpu/app/lowerscope-cli --export --batch 1/8 \
      --budget 540 --out-json $OUT/run_1_of_8.json
  TORCH_TRACE=/tmp/zoo/_torch_trace_1_of_8 python3 tools/zoo/zoo.py inductor --models /tmp/zoo --export --batch 1/8 \
      --budget 400 --out-json $OUT/inductor_1_of_8.json
  python3 tools/zoo/zoo.py trace --models /tmp/zoo --inductor $OUT/inductor_1_of_8.json --out-log $OUT/zoo_trace_1_of_8.log \
      --out-json $OUT/zoo_trace_1_of_8.json --cli build-gpu/app/lowerscope-cli --budget 100

A batch takes every N-th model of the zoo in an order that alternates the sources (torchvision,
timm, transformers, recurrent), so that each batch holds some of each. `--only tv,hf_gpt2` keeps
the models of those sources or names.

The export (DIR/<model>/) writes in*.npy and out.npy (PyTorch, CPU, float32), model.pt2, model.onnx
(weights inside), ort_out.npy (ONNX Runtime, CPU) with its error against out.npy, grad_in*.npy
(the gradient of out.sum() for each float input, what `compile --train` checks) and, where those
were written, out64.npy and grad64_in*.npy: the same in float64 (model.double(), float inputs
converted; not for models over --max-params64 parameters or whose float32 gradients took over
--max-grad-s64 seconds: summary.json's "float64" says which); each step is tried on its own and
summary.json says what each gave.

`run` unpacks each model.pt2 into a folder (the GPU machine's build has no libzip) and runs
`lowerscope-cli compile <folder or model.onnx> --device cpu|cuda [--train] --report r.json
--no-reference` with a time limit, for each of --kinds (pt2/cuda, pt2/cpu, onnx/cuda, onnx/cpu,
train/cuda, train/cpu; queued in that order over all the batch's models, so a cut batch has the
inference of all it reached). The check is against PyTorch's out.npy (the reference interpreter,
plain loops in double, is left out where out.npy exists: `--reference` keeps it), and for a training
step against grad_in*.npy; a model of token ids has no float input, so its training step keeps the
reference interpreter, the only check of its parameters' gradients. Where out64.npy and
grad64_in*.npy are there, the CLI holds a result beyond the elementwise float32 tolerance of
PyTorch's (two float32 computations in other orders: a deep net's input gradients) to
torch._dynamo's accuracy check against them, as PyTorch 2.11's torch._dynamo.utils.same(): RMSE
against the float64 result at most 2 x float32 PyTorch's (3 x for half precision, results of fewer
than 1000 elements or of 1x1 planes) + 1e-5; the results record which float64 result decided (rmse_checks, decided_by). Each job's CPU threads are the
cores divided by the jobs at once (OMP_NUM_THREADS, LOWERSCOPE_COMPILE_THREADS), so that parallel
jobs do not oversubscribe the cores.

The CI subset (issue 33: a representative subset run in CI on the CPU, tests/data/zoo,
tests/data/zoo/README.md): `export --ci` exports ci_models(), about 36 of the zoo's architectures at
tiny sizes (transformers configs of hidden 16, 2 heads of 8, 1-2 layers, vocabulary 64, token inputs
2 x 8; timm's model classes at small configs, its MobileNetV3/EfficientNet classes with short arch
strings where the channel counts are fixed; torchvision's ShuffleNetV2 and DenseNet classes;
LSTM and GRU; images 1 x 3 x 32 x 32), each by export_one as the zoo's (seed 0, float64 results
included), then model.pt2's entries deflated (torch.export.save stores them uncompressed; the JSON
graph shrinks about tenfold), model.onnx's per-node metadata (the exporter's stack traces and scopes)
stripped, ort_out.npy dropped (its error stays in summary.json), and a model left
out where its files pass --max-kb (150) or the subset's pass --max-total-kb (4096), in ci_models()'s
order; DIR/ci.json says what each gave and its size. On the GPU machine (torch is not needed
elsewhere), the whole subset in a minute or two:

  python3 tools/zoo/zoo.py export --ci --out tests/data/zoo      # or tools/zoo/ci_export.sh

and here `ctest -L zoo` (tests/zoo/CMakeLists.txt: zoo.<model>.pt2, .onnx and .train for each folder,
tests/zoo/run_zoo_case.py running `lowerscope-cli compile ... --device cpu` against PyTorch's files).

`inductor` builds each model again (same seed, same weights as its export), moves it and its
inputs to CUDA and measures eager and torch.compile (default mode): the first call's time (the
compile), the Triton kernels and library calls in the generated code, and the median of CUDA
event timings; its output is checked against out.npy too. Under TORCH_TRACE it records each
model's byte span of the log; `trace` cuts those spans out (after the "str" records they need),
trims them (tests/data/trace/trim_trace.py; Inductor's output code dropped where the corpus would
pass --max-mb), renumbers their frame ids (Dynamo counts from 0 again after each reset) and appends
them to one corpus log that `lowerscope-cli trace` reads whole; then compiles each model's span
with `lowerscope-cli trace --report` and keeps a summary per model.
"""
import argparse
import collections
import concurrent.futures
import glob
import hashlib
import heapq
import json
import logging
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
import zlib


def torchvision_models():
    import torch
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

    class Segmentation(torch.nn.Module):  # a segmentation model's dict output: its "out" tensor
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x)["out"]

    for n in ["lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large"]:
        def make(n=n):
            import torchvision.models.segmentation as seg
            return Segmentation(getattr(seg, n)(weights=None, weights_backbone=None, num_classes=21)), "image"
        out["tv_" + n] = make
    return out


def timm_models():
    names = ["resnet18", "vit_tiny_patch16_224", "deit_tiny_patch16_224", "convnext_atto", "efficientnet_b0",
             "mobilevitv2_050", "levit_128s", "regnetx_002", "ghostnet_100", "poolformer_s12", "mixer_s16_224",
             "resmlp_12_224", "coat_tiny", "cait_xxs24_224", "pit_ti_224", "tnt_s_patch16_224", "xcit_nano_12_p16_224",
             "dla34", "hrnet_w18_small", "rexnet_100", "mobilenetv3_small_050", "lcnet_050", "edgenext_xx_small",
             "efficientformer_l1", "fastvit_t8", "repvgg_a0", "densenet121", "inception_v3", "nfnet_l0", "cspresnet50",
             # small models of further families (names as timm registers them)
             "convnextv2_atto", "regnety_002", "resnet10t", "efficientvit_b0", "mobilenetv4_conv_small", "tinynet_e",
             "mixnet_s", "semnasnet_050", "ese_vovnet19b_dw", "gcvit_xxtiny", "eva02_tiny_patch14_224", "hgnetv2_b0",
             "visformer_tiny", "selecsls42b", "pvt_v2_b0", "gmlp_ti16_224"]
    out = {}
    for n in names:
        def make(n=n):
            import timm
            m = timm.create_model(n, pretrained=False)
            size = m.default_cfg.get("input_size", (3, 224, 224))
            return m, ("image", size)
        out["timm_" + n] = make
    return out


def hf_wrap_class(torch):
    class Wrap(torch.nn.Module):  # the tensor a model's output holds first (logits, last_hidden_state)
        def __init__(self, m, key):
            super().__init__()
            self.m, self.key = m, key

        def forward(self, *args):
            o = self.m(*args)
            return o[self.key] if self.key in o else o[0]
    return Wrap


def hf_class_getter(tf):
    def cls(name):  # a class this transformers lacks fails the model's export, not the zoo
        if not hasattr(tf, name):
            raise RuntimeError(f"transformers {tf.__version__} has no {name}")
        return getattr(tf, name)
    return cls


def hf_models():
    import torch
    import transformers as tf

    Wrap = hf_wrap_class(torch)
    cls = hf_class_getter(tf)

    # hidden 64, 2 layers, 4 heads of 16; token ids (pad, bos, eos) inside the vocabulary of 512
    tiny = dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                max_position_embeddings=128)
    ids = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    gpt = dict(vocab_size=512, n_embd=64, n_layer=2, n_head=4, n_positions=128, bos_token_id=1, eos_token_id=2)
    # a tiny speech feature encoder: two convolutions (stride 5, 2) over a raw waveform
    speech = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, conv_dim=(32, 32),
                  conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                  vocab_size=32, **ids)

    def lm(config, model, **kw):  # a decoder-only LM: rotary embeddings, grouped-query attention, RMSNorm, gated MLP
        return lambda: cls(model)(cls(config)(**dict(tiny, **kw)))

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
        # decoder-only LMs: GPT-J and CodeGen (partial rotary, parallel attention and MLP), GPT-BigCode
        # (multi-query attention), StableLM (partial rotary), Starcoder2, OLMo, Phi-3 and Qwen3 (GQA, RMSNorm,
        # gated MLP; Qwen3 with q/k norms)
        "gptj": lambda: cls("GPTJForCausalLM")(cls("GPTJConfig")(rotary_dim=8, n_inner=128, **gpt)),
        "codegen": lambda: cls("CodeGenForCausalLM")(cls("CodeGenConfig")(rotary_dim=8, n_inner=128, n_ctx=128, **gpt)),
        "gpt_bigcode": lambda: cls("GPTBigCodeForCausalLM")(cls("GPTBigCodeConfig")(n_inner=128, multi_query=True, **gpt)),
        "stablelm": lm("StableLmConfig", "StableLmForCausalLM", num_key_value_heads=2, partial_rotary_factor=0.25, **ids),
        "starcoder2": lm("Starcoder2Config", "Starcoder2ForCausalLM", num_key_value_heads=2, **ids),
        "olmo": lm("OlmoConfig", "OlmoForCausalLM", num_key_value_heads=2, **ids),
        "phi3": lm("Phi3Config", "Phi3ForCausalLM", num_key_value_heads=2, **ids),
        "qwen3": lm("Qwen3Config", "Qwen3ForCausalLM", num_key_value_heads=2, head_dim=16, **ids),
        # encoders
        "xlm_roberta": lambda: cls("XLMRobertaModel")(cls("XLMRobertaConfig")(pad_token_id=1, bos_token_id=0, eos_token_id=2, **tiny)),
        "mpnet": lambda: cls("MPNetModel")(cls("MPNetConfig")(pad_token_id=1, bos_token_id=0, eos_token_id=2, **tiny)),
        # an encoder-decoder: BartModel makes the decoder's input by shifting input_ids right
        "bart": lambda: cls("BartModel")(cls("BartConfig")(vocab_size=512, d_model=64, encoder_layers=2, decoder_layers=2,
                                                          encoder_attention_heads=4, decoder_attention_heads=4,
                                                          encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=128,
                                                          pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                                          decoder_start_token_id=2, forced_eos_token_id=2)),
        # audio encoders on a raw waveform
        "wav2vec2": lambda: cls("Wav2Vec2Model")(cls("Wav2Vec2Config")(**speech)),
        "hubert": lambda: cls("HubertModel")(cls("HubertConfig")(**speech)),
    }
    vision = {"vit", "swin", "convnext_hf"}
    waveform = {"wav2vec2", "hubert"}
    out = {}
    for n, f in specs.items():
        def make(n=n, f=f):
            m = f()
            key = "logits" if "ForCausalLM" in type(m).__name__ else "last_hidden_state"
            if n in vision:
                return Wrap(m, key), ("image", (3, 32, 32))
            if n == "whisper_encoder":
                return Wrap(m, key), ("audio", (16, 64))
            if n in waveform:
                return Wrap(m, key), ("waveform", (1600,))
            return Wrap(m, key), "tokens"
        out["hf_" + n] = make
    return out


def recurrent_models(features=16, hidden=32, steps=10):
    """Two-layer LSTM and GRU with a linear head (the CI subset's: ci_recurrent_models)."""
    import torch

    class Rnn(torch.nn.Module):
        def __init__(self, cell):
            super().__init__()
            self.rnn = cell(features, hidden, num_layers=2, batch_first=True)
            self.head = torch.nn.Linear(hidden, 4)

        def forward(self, x):
            return self.head(self.rnn(x)[0])

    return {"rnn_lstm": lambda: (Rnn(torch.nn.LSTM), ("sequence", (steps, features))),
            "rnn_gru": lambda: (Rnn(torch.nn.GRU), ("sequence", (steps, features)))}


def all_models():
    models = {}
    for f in (torchvision_models, timm_models, hf_models, recurrent_models):
        try:
            models.update(f())
        except Exception as e:  # a library missing on this machine
            print(f"{f.__name__}: {e}", file=sys.stderr)
    return models


# ---------------------------------------------------------------------------------------------
# The CI subset (export --ci): the zoo's architectures at a size the tests can hold
# ---------------------------------------------------------------------------------------------

def ci_hf_models():
    """transformers models of tiny configs: hidden 16, 2 heads of 8, intermediate 32, one layer (two
    for gpt2, llama and bert), vocabulary 64; token inputs 2 x 8 (ci_kind_of)."""
    import torch
    import transformers as tf
    Wrap = hf_wrap_class(torch)
    cls = hf_class_getter(tf)
    tiny = dict(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                max_position_embeddings=32)
    two = dict(tiny, num_hidden_layers=2)
    ids = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    gpt = dict(vocab_size=64, n_embd=16, n_layer=1, n_head=2, n_positions=32, n_inner=32, bos_token_id=1, eos_token_id=2)
    specs = {
        # decoder-only LMs: rotary embeddings, grouped-query attention (2 heads, 1 key/value head), RMSNorm, gated MLP
        "gpt2": lambda: cls("GPT2LMHeadModel")(cls("GPT2Config")(**dict(gpt, n_layer=2))),
        "llama": lambda: cls("LlamaForCausalLM")(cls("LlamaConfig")(num_key_value_heads=1, **two, **ids)),
        "qwen3": lambda: cls("Qwen3ForCausalLM")(cls("Qwen3Config")(num_key_value_heads=1, head_dim=8, **tiny, **ids)),
        "gemma": lambda: cls("GemmaForCausalLM")(cls("GemmaConfig")(num_key_value_heads=1, head_dim=8, **tiny)),
        "phi": lambda: cls("PhiForCausalLM")(cls("PhiConfig")(**tiny, **ids)),
        "gpt_neox": lambda: cls("GPTNeoXForCausalLM")(cls("GPTNeoXConfig")(**tiny, **ids)),
        "bloom": lambda: cls("BloomForCausalLM")(cls("BloomConfig")(vocab_size=64, hidden_size=16, n_layer=1, n_head=2)),
        "opt": lambda: cls("OPTForCausalLM")(cls("OPTConfig")(vocab_size=64, hidden_size=16, num_hidden_layers=1,
                                                            num_attention_heads=2, ffn_dim=32, max_position_embeddings=32,
                                                            word_embed_proj_dim=16)),
        "falcon": lambda: cls("FalconForCausalLM")(cls("FalconConfig")(vocab_size=64, hidden_size=16, num_hidden_layers=1,
                                                                       num_attention_heads=2, **ids)),
        "gptj": lambda: cls("GPTJForCausalLM")(cls("GPTJConfig")(rotary_dim=4, **gpt)),
        # encoders
        "bert": lambda: cls("BertModel")(cls("BertConfig")(**two, pad_token_id=0)),
        "distilbert": lambda: cls("DistilBertModel")(cls("DistilBertConfig")(vocab_size=64, dim=16, n_layers=1, n_heads=2,
                                                                             hidden_dim=32, max_position_embeddings=32)),
        "albert": lambda: cls("AlbertModel")(cls("AlbertConfig")(embedding_size=8, **tiny, **ids)),
        "t5_encoder": lambda: cls("T5EncoderModel")(cls("T5Config")(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1,
                                                                    num_heads=2, relative_attention_num_buckets=8)),
        "bart": lambda: cls("BartModel")(cls("BartConfig")(vocab_size=64, d_model=16, encoder_layers=1, decoder_layers=1,
                                                          encoder_attention_heads=2, decoder_attention_heads=2,
                                                          encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=32,
                                                          pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                                          decoder_start_token_id=2, forced_eos_token_id=2)),
        # vision and audio
        "vit": lambda: cls("ViTModel")(cls("ViTConfig")(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                                         intermediate_size=32, image_size=32, patch_size=8)),
        "swin": lambda: cls("SwinModel")(cls("SwinConfig")(image_size=32, patch_size=4, embed_dim=8, depths=[1, 1],
                                                           num_heads=[2, 2], window_size=4)),
        "whisper_encoder": lambda: cls("WhisperModel")(cls("WhisperConfig")(vocab_size=64, d_model=16, encoder_layers=1,
                                                                            decoder_layers=1, encoder_attention_heads=2,
                                                                            decoder_attention_heads=2, encoder_ffn_dim=32,
                                                                            decoder_ffn_dim=32, num_mel_bins=8,
                                                                            max_source_positions=8, max_target_positions=16,
                                                                            pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                                                            decoder_start_token_id=3)).encoder,
        # a raw waveform of 400 samples: two convolutions (stride 5, 2) give 39 frames
        "wav2vec2": lambda: cls("Wav2Vec2Model")(cls("Wav2Vec2Config")(
            hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8),
            conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=2,
            vocab_size=32, **ids)),
        # near-duplicates of the above (llama; bert; gpt2 with multi-query attention): last, the first left out
        "mistral": lambda: cls("MistralForCausalLM")(cls("MistralConfig")(num_key_value_heads=1, **tiny, **ids)),
        "qwen2": lambda: cls("Qwen2ForCausalLM")(cls("Qwen2Config")(num_key_value_heads=1, **tiny, **ids)),
        "roberta": lambda: cls("RobertaModel")(cls("RobertaConfig")(**tiny, pad_token_id=1, bos_token_id=0, eos_token_id=2)),
        "electra": lambda: cls("ElectraModel")(cls("ElectraConfig")(embedding_size=8, **tiny, pad_token_id=0)),
        "gpt_bigcode": lambda: cls("GPTBigCodeForCausalLM")(cls("GPTBigCodeConfig")(multi_query=True, **gpt)),
    }
    kinds = {"vit": ("image", (3, 32, 32), 1), "swin": ("image", (3, 32, 32), 1),
             "whisper_encoder": ("audio", (8, 16), 1), "wav2vec2": ("waveform", (400,), 1)}
    out = {}
    for n, f in specs.items():
        def make(n=n, f=f):
            m = f()
            key = "logits" if "ForCausalLM" in type(m).__name__ or "LMHead" in type(m).__name__ else "last_hidden_state"
            return Wrap(m, key), kinds.get(n, ("tokens", (2, 8), 64))
        out["hf_" + n] = make
    return out


def ci_timm_models():
    """timm's model classes at small configs (the arguments its registered models pass, shrunk;
    the classes themselves, since several registered functions refuse a second patch_size or
    width), or with a short architecture string where the channel counts are fixed (MobileNetV3,
    EfficientNet): 32 x 32 images, 10 classes."""
    import torch
    image = ("image", (3, 32, 32), 1)

    def vit():  # vit_tiny_patch16_224's class: patch embedding, class token, pre-norm blocks
        from timm.models.vision_transformer import VisionTransformer
        return VisionTransformer(img_size=32, patch_size=8, embed_dim=16, depth=1, num_heads=2, num_classes=10), image

    def eva02():  # eva02_tiny_patch14_224's: rotary position embeddings, SwiGLU MLP
        from timm.models.eva import Eva
        return Eva(img_size=32, patch_size=8, embed_dim=16, depth=1, num_heads=2, mlp_ratio=4 * 2 / 3, swiglu_mlp=True,
                   use_rot_pos_emb=True, ref_feat_shape=(4, 4), num_classes=10), image

    def mixer():  # mixer_s16_224's: token- and channel-mixing MLPs
        from timm.models.mlp_mixer import MlpMixer
        return MlpMixer(img_size=32, patch_size=8, num_blocks=1, embed_dim=16, num_classes=10), image

    def convnext(v2):  # convnext_atto's (conv_mlp) and convnextv2_atto's (global response norm)
        from timm.models.convnext import ConvNeXt
        extra = dict(use_grn=True, ls_init_value=None) if v2 else {}
        return ConvNeXt(depths=(1, 1, 1, 1), dims=(8, 8, 8, 16), conv_mlp=True, num_classes=10, **extra), image

    def resnet10t():  # resnet10t's: a deep tiered stem, average-pool downsampling
        from timm.models.resnet import BasicBlock, ResNet
        return ResNet(BasicBlock, (1, 1, 1, 1), stem_width=4, stem_type="deep_tiered", avg_down=True,
                      channels=(8, 8, 8, 16), num_classes=10), image

    def regnetx():  # regnetx_002's: grouped bottlenecks (widths 8, 16, 32; groups of 4)
        from timm.models.regnet import RegNet, RegNetCfg
        return RegNet(RegNetCfg(w0=8, wa=8.0, wm=2.0, group_size=4, depth=3, stem_width=8), num_classes=10), image

    def mobilenetv3():  # mobilenetv3_small's blocks (hard-swish, hard-sigmoid squeeze-excite), 8-16 channels
        from functools import partial
        from timm.layers import get_act_layer
        from timm.models._efficientnet_blocks import SqueezeExcite
        from timm.models._efficientnet_builder import decode_arch_def, round_channels
        from timm.models.mobilenetv3 import MobileNetV3
        arch = [["ds_r1_k3_s2_e1_c8_se0.25_nre"], ["ir_r1_k3_s2_e4.5_c8_nre"], ["ir_r1_k5_s2_e4_c16_se0.25"],
                ["cn_r1_k1_s1_c32"]]
        se = partial(SqueezeExcite, gate_layer="hard_sigmoid", force_act_layer=torch.nn.ReLU, rd_round_fn=round_channels)
        return MobileNetV3(block_args=decode_arch_def(arch), num_classes=10, stem_size=8, fix_stem=True, num_features=32,
                           act_layer=get_act_layer("hard_swish"), se_layer=se), image

    def efficientnet():  # efficientnet_b0's blocks (swish, squeeze-excite), 8-16 channels
        from timm.layers import get_act_layer
        from timm.models._efficientnet_builder import decode_arch_def
        from timm.models.efficientnet import EfficientNet
        arch = [["ds_r1_k3_s1_e1_c8_se0.25"], ["ir_r1_k3_s2_e4_c8_se0.25"], ["ir_r1_k5_s2_e4_c16_se0.25"],
                ["ir_r1_k3_s2_e4_c16_se0.25"]]
        return EfficientNet(block_args=decode_arch_def(arch), num_classes=10, stem_size=8, fix_stem=True, num_features=32,
                            act_layer=get_act_layer("swish")), image

    return {
        "timm_vit_tiny_patch16_224": vit,
        "timm_eva02_tiny_patch14_224": eva02,
        "timm_mixer_s16_224": mixer,
        "timm_convnext_atto": lambda: convnext(False),
        "timm_convnextv2_atto": lambda: convnext(True),
        "timm_resnet10t": resnet10t,
        "timm_regnetx_002": regnetx,
        "timm_mobilenetv3_tiny": mobilenetv3,
        "timm_efficientnet_tiny": efficientnet,
    }


def ci_torchvision_models():
    """torchvision model classes at small widths: 32 x 32 images, 10 classes."""
    image = ("image", (3, 32, 32), 1)

    def shufflenet():  # channel shuffles between the split branches
        from torchvision.models.shufflenetv2 import ShuffleNetV2
        return ShuffleNetV2(stages_repeats=[1, 1, 1], stages_out_channels=[8, 16, 24, 32, 32], num_classes=10), image

    def densenet():  # concatenated features, transitions with average pooling
        from torchvision.models.densenet import DenseNet
        return DenseNet(growth_rate=4, block_config=(2, 2), num_init_features=8, bn_size=2, num_classes=10), image

    return {"tv_shufflenet_v2": shufflenet, "tv_densenet": densenet}


def ci_recurrent_models():
    return recurrent_models(features=8, hidden=16, steps=6)


def ci_models():
    """The CI subset, in the order export --ci takes them (a model that would take the subset past
    --max-total-kb is left out, so the order decides: the recurrent and torchvision models, timm's,
    then transformers' with near-duplicates last): name -> make, as all_models()."""
    models = {}
    for f in (ci_recurrent_models, ci_torchvision_models, ci_timm_models, ci_hf_models):
        try:
            models.update(f())
        except Exception as e:  # a library missing on this machine
            print(f"{f.__name__}: {e}", file=sys.stderr)
    return models


def inputs_for(kind, torch):
    """The model's inputs, seeded: "image" (2 x 3 x 224 x 224), "tokens" (2 x 16 ids below 512),
    (name, shape) for 2 x shape normal floats, (name, shape, batch) for batch x shape, and the CI
    subset's ("tokens", (batch, length), vocabulary)."""
    g = torch.Generator().manual_seed(0)
    if kind == "image":
        kind = ("image", (3, 224, 224))
    if kind == "tokens":
        return (torch.randint(0, 512, (2, 16), generator=g),)
    if kind[0] == "tokens":
        return (torch.randint(0, kind[2], tuple(kind[1]), generator=g),)
    name, shape = kind[:2]
    batch = kind[2] if len(kind) > 2 else 2
    return (torch.randn((batch,) + tuple(shape), generator=g),)


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
    return [d for d in os.listdir(folder) if os.path.exists(os.path.join(folder, d, "summary.json"))
            or os.path.exists(os.path.join(folder, d, "model.pt2"))]


def zoo_names(args):
    """Every model name: the zoo's own list where it is asked to export (that needs torch), else
    the models the folder holds."""
    if getattr(args, "export", False):
        return sorted(all_models())
    return sorted(exported_names(args.models))


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------

def first_tensor(out):
    """The tensor a model returns, or the first of a tuple it returns."""
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


def short_error(e):
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]


def export_onnx(torch, m, ep, ins, path):
    """model.onnx by the dynamo exporter, weights inside the file (none of these models reaches
    ONNX's 2 GB); from the ExportedProgram where it converts (no second trace), else from the
    module (the exporter's own torch.export, with its fallbacks). Returns how, or raises."""
    tmp = os.path.join(os.path.dirname(path), "partial.onnx")  # the file appears whole; .onnx: its format
    errors = []
    for what, how in ((ep, "from the ExportedProgram"), (m, "from the module")):
        if what is None:
            continue
        try:
            torch.onnx.export(what, ins, tmp, dynamo=True, external_data=False, verbose=False)
            os.replace(tmp, path)
            return how
        except Exception as e:
            errors.append(f"{how}: {short_error(e)}")
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    raise RuntimeError("; ".join(errors))


def run_ort(path, ins, threads):
    """ONNX Runtime (CPU) on the .onnx with the same inputs: its first output as a numpy array."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = max(1, threads)
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    if len(names) != len(ins):
        raise RuntimeError(f"the .onnx takes {len(names)} inputs ({', '.join(names)}), the model {len(ins)}")
    return sess.run(None, {n: x.numpy() for n, x in zip(names, ins)})[0]


# The float64 reference (out64.npy, grad64_in*.npy) is left out of models larger than this, or whose
# float32 gradients took longer than MAX_GRAD_S64 seconds: PyTorch's CPU kernels in float64 have no
# oneDNN path (convolutions fall back to im2col loops), several times float32's time.
MAX_PARAMS64 = 150_000_000
MAX_GRAD_S64 = 10.0


def export_float64(torch, np, m, ins, d, floats):
    """out64.npy and grad64_in<i>.npy: the model in float64 on the CPU (model.double(), float
    inputs converted), its first output and the gradient of its sum for each float input, the
    yardstick of torch._dynamo's accuracy check where ours differs from PyTorch's float32 results
    beyond the elementwise tolerance (`lowerscope-cli compile` reads them beside out.npy and
    grad_in*.npy). Converts `m` in place (the export's last use of it); tensors the forward creates
    without a dtype are float64 meanwhile (torch.set_default_dtype), as its parameters are."""
    m.double()
    xs = [x.detach().double().requires_grad_(True) if x.is_floating_point() else x for x in ins]
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with torch.enable_grad():
            out = first_tensor(m(*xs))
            if out.dtype != torch.float64:  # a float32 result would be no float64 yardstick
                raise RuntimeError(f"the float64 model's first output is {out.dtype}")
            np.save(os.path.join(d, "out64.npy"), out.detach().numpy())
            out.sum().backward()
    finally:
        torch.set_default_dtype(default)
    for i in floats:
        g = xs[i].grad if xs[i].grad is not None else torch.zeros_like(xs[i])
        np.save(os.path.join(d, f"grad64_in{i}.npy"), g.detach().double().numpy())


def export_one(name, make, folder, threads=0, max_params64=MAX_PARAMS64, max_grad_s64=MAX_GRAD_S64):
    """DIR/<name>/: in*.npy and out.npy (PyTorch on the CPU in float32), model.pt2 (torch.export),
    model.onnx (torch.onnx.export, dynamo) with ort_out.npy (ONNX Runtime on the same inputs),
    grad_in*.npy (the gradient of out.sum() for each float input, in eval mode as exported: what
    `lowerscope-cli compile --train` checks) and, where those were written, out64.npy and
    grad64_in*.npy (the same in float64: export_float64; not for models over max_params64
    parameters or whose float32 gradients took over max_grad_s64 seconds). Each step is tried on
    its own; summary.json, written last, says what each gave (a folder without it is exported
    again)."""
    import numpy as np
    import torch
    d = os.path.join(folder, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    t0 = time.time()
    s = {}
    try:
        m, ins = build(make, torch)
        with torch.no_grad():
            out = first_tensor(m(*ins))
        for i, x in enumerate(ins):
            np.save(os.path.join(d, f"in{i}.npy"), x.numpy())
        np.save(os.path.join(d, "out.npy"), out.detach().float().numpy())
        s["params"] = sum(p.numel() for p in m.parameters())
    except Exception as e:
        shutil.rmtree(d, ignore_errors=True)
        return {"export": "failed: " + short_error(e), "onnx": "not tried: the model did not build or run"}
    ep = None
    try:
        ep = torch.export.export(m, ins)
        partial = os.path.join(d, "partial")  # model.pt2 appears whole
        os.makedirs(partial, exist_ok=True)
        torch.export.save(ep, os.path.join(partial, "model.pt2"))
        os.replace(os.path.join(partial, "model.pt2"), os.path.join(d, "model.pt2"))
        os.rmdir(partial)
        s["export"] = "ok"
    except Exception as e:
        s["export"] = "failed: " + short_error(e)
    s["s"] = round(time.time() - t0, 1)
    t1 = time.time()
    onnx_path = os.path.join(d, "model.onnx")
    try:
        s["onnx_how"] = export_onnx(torch, m, ep, ins, onnx_path)
        s["onnx"] = "ok"
        s["onnx_mb"] = round(os.path.getsize(onnx_path) / 2**20, 1)
    except Exception as e:
        s["onnx"] = "failed: " + short_error(e)
    s["onnx_s"] = round(time.time() - t1, 1)
    if s["onnx"] == "ok":
        try:
            got = run_ort(onnx_path, ins, threads or (os.cpu_count() or 1))
            np.save(os.path.join(d, "ort_out.npy"), got.astype(np.float32))
            want = out.detach().float().numpy()
            if got.shape != want.shape:
                s["ort"] = f"failed: shape {list(got.shape)} vs PyTorch's {list(want.shape)}"
            else:
                err = float(np.abs(got.astype(np.float64) - want).max()) if want.size else 0.0
                s["ort"], s["ort_max_err"] = "ok", err
                s["ort_close"] = bool(np.allclose(got, want, rtol=1e-3, atol=1e-3))
        except Exception as e:
            s["ort"] = "failed: " + short_error(e)
    floats = [i for i, x in enumerate(ins) if x.is_floating_point()]
    if not floats:
        s["grads"] = "no float input"
    else:
        t_grads = time.time()
        try:
            xs = [x.clone().requires_grad_(x.is_floating_point()) for x in ins]
            with torch.enable_grad():
                first_tensor(m(*xs)).sum().backward()
            for i in floats:
                g = xs[i].grad if xs[i].grad is not None else torch.zeros_like(xs[i])
                np.save(os.path.join(d, f"grad_in{i}.npy"), g.detach().float().numpy())
            s["grads"] = len(floats)
        except Exception as e:
            s["grads"] = "failed: " + short_error(e)
        s["grads_s"] = round(time.time() - t_grads, 1)
    if s["export"] != "ok" and s["onnx"] != "ok":
        shutil.rmtree(d, ignore_errors=True)
        return s
    # PyTorch in float64, where the float32 gradients were written (and the model is not too large).
    if not isinstance(s.get("grads"), int):
        s["float64"] = "not tried: no float32 gradients"
    elif s.get("params", 0) > max_params64:
        s["float64"] = f"skipped: {s['params'] / 1e6:.1f}M parameters (over {max_params64 / 1e6:.1f}M)"
    elif s.get("grads_s", 0) > max_grad_s64:
        s["float64"] = f"skipped: the float32 gradients took {s['grads_s']:.0f} s (over {max_grad_s64:.0f} s)"
    else:
        t64 = time.time()
        try:
            export_float64(torch, np, m, ins, d, floats)
            s["float64"] = "ok"
        except Exception as e:
            for f in ["out64.npy"] + [f"grad64_in{i}.npy" for i in floats]:  # a partial set is no yardstick
                if os.path.exists(os.path.join(d, f)):
                    os.remove(os.path.join(d, f))
            s["float64"] = "failed: " + short_error(e)
        s["float64_s"] = round(time.time() - t64, 1)
    write_json(os.path.join(d, "summary.json"), s)
    return s


def export_summary(folder, name):
    """The export's summary of a model already in DIR, or None."""
    p = os.path.join(folder, name, "summary.json")
    if os.path.exists(p):
        return json.load(open(p))
    if os.path.exists(os.path.join(folder, name, "model.pt2")):  # an export of the first zoo (.pt2 only)
        return {"export": "ok", "onnx": "not tried (an older export)"}
    return None


def merge_export_json(folder, summary):
    import fcntl
    path = os.path.join(folder, "export.json")
    with open(path + ".lock", "w") as lock:  # export processes of one batch merge in turn
        fcntl.flock(lock, fcntl.LOCK_EX)
        old = json.load(open(path)) if os.path.exists(path) else {}
        old.update(summary)
        write_json(path, old)


def export(args):
    """The batch's models (--part K/M: every M-th of them from the K-th, so that M export processes
    can share a batch), within --budget seconds: no export starts after it."""
    if args.ci:
        return ci_export(args)
    models = all_models()
    os.makedirs(args.out, exist_ok=True)
    deadline = time.time() + args.budget if args.budget else float("inf")
    k, m = parse_batch(args.part)
    summary = {}
    for name in select(sorted(models), args.only, args.batch)[k - 1::m]:
        if time.time() > deadline:
            break
        summary[name] = export_summary(args.out, name) or export_one(name, models[name], args.out, args.threads,
                                                                     args.max_params64, args.max_grad_s64)
        print(name, summary[name], flush=True)
    merge_export_json(args.out, summary)


# The CI subset's limits: one model's files, and all of them (tests/data/zoo/).
CI_MAX_KB = 150
CI_MAX_TOTAL_KB = 4096


def deflate_zip(path):
    """The archive again with its entries deflated: torch.export.save stores them uncompressed, and
    a model's JSON graph shrinks about tenfold. Names, order and contents are kept and dates fixed
    (1980), so one export gives the same bytes; libzip (our importer) and Python's zipfile inflate
    them as they read."""
    tmp = path + ".deflate"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w") as dst:
        for info in src.infolist():
            z = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            data = src.read(info.filename)
            # entries that deflate would not shrink (a version number, random weights) stay stored
            z.compress_type = zipfile.ZIP_DEFLATED if len(zlib.compress(data, 9)) < len(data) else zipfile.ZIP_STORED
            z.external_attr = info.external_attr
            dst.writestr(z, data, compresslevel=9)
    os.replace(tmp, path)


def strip_onnx_metadata(path):
    """model.onnx again without its metadata_props and doc_strings (the dynamo exporter's stack
    traces, name scopes, class hierarchies and FX node names: about 500 bytes a node, most of a
    small transformer's file); the graph, its types and weights as they were. Our importer reads
    none of it."""
    import onnx
    m = onnx.load(path)

    def walk(msg):
        for field, value in msg.ListFields():
            if field.name in ("metadata_props", "doc_string"):
                msg.ClearField(field.name)
            elif field.type == field.TYPE_MESSAGE:
                repeated = getattr(field, "is_repeated", None)
                if repeated is None:
                    repeated = field.label == field.LABEL_REPEATED
                for v in (value if repeated else [value]):
                    walk(v)
    walk(m)
    tmp = path + ".strip"
    onnx.save(m, tmp)
    os.replace(tmp, path)


def folder_kb(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs) / 1024


def ci_worker(argv):
    """zoo.py ci-worker NAME DIR THREADS MAX_PARAMS64 MAX_GRAD_S64: one model of the CI subset
    exported in a process of its own (ci_export starts them); its summary, as JSON, is the last
    line printed."""
    name, folder, threads, max_params64, max_grad_s64 = argv
    import torch
    torch.set_num_threads(max(1, int(threads)))
    s = export_one(name, ci_models()[name], folder, int(threads), float(max_params64), float(max_grad_s64))
    print(json.dumps(s), flush=True)


def ci_export(args):
    """export --ci: the CI subset (ci_models) into --out, one model after the other in its order,
    each by export_one (the zoo's own export, so its files are exactly the zoo's), then: ort_out.npy
    dropped (its error stays in summary.json), model.pt2's entries deflated, model.onnx's metadata
    (stack traces, scopes) stripped (strip_onnx_metadata), and the folder left
    out where it holds more than --max-kb or would take the subset past --max-total-kb. DIR/ci.json
    says what each model gave and its size; folders of earlier CI exports whose model is no longer
    in the list are removed."""
    models = ci_models()
    names = list(models)
    if args.only:
        keep = {x.strip() for x in args.only.split(",") if x.strip()}
        names = [n for n in names if n in keep or source_of(n) in keep]
    os.makedirs(args.out, exist_ok=True)
    if not args.only:
        for d in exported_names(args.out):
            if d not in models and os.path.exists(os.path.join(args.out, d, "summary.json")):
                shutil.rmtree(os.path.join(args.out, d))
    deadline = time.time() + args.budget if args.budget else float("inf")
    out = {"meta": dict(machine(), started=time.strftime("%Y-%m-%d %H:%M:%S"), command=" ".join(sys.argv),
                        max_kb=args.max_kb, max_total_kb=args.max_total_kb),
           "models": {}, "kept": [], "left_out": {}}
    try:
        import torch
        out["meta"]["torch"] = torch.__version__
        import transformers
        out["meta"]["transformers"] = transformers.__version__
        import timm
        out["meta"]["timm"] = timm.__version__
    except Exception:
        pass
    # The exports run in --jobs processes at once, a process per model (a crash costs that model
    # alone; seed 0 as always); sizes are then taken in ci_models()'s order, so the subset kept
    # does not depend on which export finished first.
    jobs = max(1, args.jobs)
    threads = args.threads or max(1, (os.cpu_count() or 1) // jobs)

    def one(n):
        if time.time() > deadline:
            return None
        cmd = [sys.executable, os.path.abspath(__file__), "ci-worker", n, args.out, str(threads),
               str(args.max_params64), str(args.max_grad_s64)]
        p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
        lines = p.stdout.strip().splitlines()
        try:
            return json.loads(lines[-1])
        except Exception:
            shutil.rmtree(os.path.join(args.out, n), ignore_errors=True)
            err = first_line("\n".join((p.stderr or "").strip().splitlines()[-1:])) or f"exit {p.returncode}"
            return {"export": f"failed: the export process: {err}"}

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        summaries = dict(zip(names, pool.map(one, names)))
    total = 0.0
    for name in names:
        d = os.path.join(args.out, name)
        s = summaries[name]
        if s is None:
            out["left_out"][name] = "not tried: --budget"
            continue
        if os.path.isdir(d):
            if os.path.exists(os.path.join(d, "ort_out.npy")):
                os.remove(os.path.join(d, "ort_out.npy"))
            if os.path.exists(os.path.join(d, "model.pt2")):
                deflate_zip(os.path.join(d, "model.pt2"))
            onnx_path = os.path.join(d, "model.onnx")
            if os.path.exists(onnx_path):
                before = os.path.getsize(onnx_path) / 1024
                try:
                    strip_onnx_metadata(onnx_path)
                    s["onnx_metadata"] = f"stripped: {before:.0f} KB -> {os.path.getsize(onnx_path) / 1024:.0f} KB"
                except Exception as e:
                    s["onnx_metadata"] = "kept: " + short_error(e)
            kb = folder_kb(d)
            s["kb"] = round(kb, 1)
            if kb > args.max_kb:
                s["ci"] = f"left out: {kb:.0f} KB, over --max-kb {args.max_kb:.0f}"
            elif total + kb > args.max_total_kb:
                s["ci"] = f"left out: {kb:.0f} KB would take the subset past --max-total-kb {args.max_total_kb:.0f}"
            else:
                s["ci"] = "kept"
                total += kb
                write_json(os.path.join(d, "summary.json"), s)
            if s["ci"] != "kept":
                shutil.rmtree(d, ignore_errors=True)
        else:
            s["ci"] = "left out: " + (s.get("export") if str(s.get("export", "")).startswith("failed") else
                                      "neither .pt2 nor .onnx exported")
        out["models"][name] = s
        if s["ci"] == "kept":
            out["kept"].append(name)
        else:
            out["left_out"][name] = s["ci"]
        out["total_kb"] = round(total, 1)
        write_json(os.path.join(args.out, "ci.json"), out)
        print(f"{name}: {s['ci']}" + (f" ({s['kb']:.0f} KB)" if "kb" in s else ""), {k: v for k, v in s.items() if k != "ci"},
              flush=True)
    write_json(os.path.join(args.out, "ci.json"), out)
    print(f"CI subset in {args.out}: {len(out['kept'])} models, {total:.0f} KB; left out {len(out['left_out'])}:",
          flush=True)
    for n, why in out["left_out"].items():
        print(f"  {n}: {why}", flush=True)


# ---------------------------------------------------------------------------------------------
# Our CLI on each model (run)
# ---------------------------------------------------------------------------------------------

# What `run` does with each model, in the order its jobs are queued: the format (the .pt2 through
# torch.export's importer, the .onnx through ours of ONNX; train: a training step of the .pt2)
# and the device.
KINDS = ("pt2/cuda", "pt2/cpu", "onnx/cuda", "onnx/cpu", "train/cuda", "train/cpu")


def kind_of(key):
    """A result's key: the first zoo's were the device alone (the .pt2's inference)."""
    return key if "/" in key else "pt2/" + key


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
    """The folder the CLI compiles: model.pt2 unpacked (the GPU machine's build has no libzip),
    with the model's .npy files beside it; the .onnx is compiled where it lies."""
    src = os.path.join(models_dir, name)
    dst = os.path.join(models_dir, "_unpacked", name)
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if f.endswith(".npy"):
            shutil.copy(os.path.join(src, f), dst)
    if os.path.exists(os.path.join(src, "model.pt2")):
        unpack(os.path.join(src, "model.pt2"), os.path.join(dst, "model.pt2"))
    return dst


def first_line(text, limit=300):
    lines = [l for l in (text or "").strip().splitlines() if l.strip()]
    return (lines[0] if lines else "")[:limit]


def model_input(models_dir, name, kind):
    """What the CLI compiles for a kind, or None where the export did not make it."""
    fmt = kind.split("/")[0]
    if fmt == "onnx":
        p = os.path.join(models_dir, name, "model.onnx")
    else:
        p = os.path.join(models_dir, "_unpacked", name, "model.pt2")
    return p if os.path.exists(p) else None


def has_grad_files(folder):
    ins = glob.glob(os.path.join(folder, "in*.npy"))
    return bool(ins) and all(os.path.exists(os.path.join(folder, "grad_" + os.path.basename(p))) for p in ins)


def rmse_checks(chk):
    """The checks of a report that went to torch._dynamo's RMSE criterion (failed elementwise, then
    measured against a float64 result): [{"check", "yardstick", "ok"}], the yardstick as the CLI
    names it ("PyTorch float64 (out64.npy)", "PyTorch float64 (grad64_in0.npy)", "the reference
    interpreter in float64")."""
    out = []
    for what, cs in (("output", chk.get("outputs", []) or []), ("reference", chk.get("reference", []) or []),
                     ("gradient", chk.get("gradients", []) or [])):
        for i, c in enumerate(cs):
            m = re.search(r"RMSE against (.+?) \S+ (?:<=|>) \d+(?:\.\d+)? x", str(c.get("why") or ""))
            if m:
                name = f"gradient of {c['input']}" if c.get("input") else f"{what} {i}"
                out.append({"check": f"{name} vs {c.get('against')}", "yardstick": m.group(1), "ok": bool(c.get("ok"))})
    return out


def all_alone(runs):
    """Whether every pt2/cuda result ran one job at a time (zoo.py run --jobs 1)."""
    rs = [per_model.get("pt2/cuda") for per_model in runs.values() if per_model.get("pt2/cuda")]
    return bool(rs) and all(r.get("jobs") == 1 for r in rs)


def compile_threads_text(runs):
    """What the compile-time column's compiles had of the machine, from the jobs each pt2/cuda
    result records (results before that field ran 6 jobs at once, 2 threads each of 16)."""
    shares = collections.Counter()
    for per_model in runs.values():
        r = per_model.get("pt2/cuda") or {}
        if r.get("compile_ms"):
            shares[(r.get("jobs", 6), r.get("threads", 2))] += 1
    parts = []
    for (jobs, threads), n in sorted(shares.items()):
        parts.append(f"{n} models one compile at a time, with the CLI's own thread defaults ({threads} threads)" if jobs == 1 else
                     f"{n} models {jobs} compiles at once, {threads} threads each")
    return ("Compile times: ours " + ("; ".join(parts) or "none") +
            "; Inductor's first call with all the machine's cores (its parallel Triton compiles), alone.")


def run_one(cli, model, folder, kind, timeout, threads, reference, shared):
    """One compile of `model` (an unpacked .pt2 or a .onnx) as `kind`; its report goes into
    `folder`, which holds the inputs and PyTorch's outputs. A dict: ok, error, kernels, compile
    and run times, for a training step the gradients checked (or status 'timeout')."""
    fmt, device = kind.split("/")
    report = os.path.join(folder, f"r_{fmt}_{device}.json")
    if os.path.exists(report):
        os.remove(report)
    cmd = [cli, "compile", model, "--device", device, "--quiet", "--report", report]
    res = {}
    if fmt == "train":
        cmd.append("--train")
        # PyTorch's gradients of the inputs (grad_in*.npy) check the backward where the inputs are
        # float; a model of token ids has none, and its parameters' gradients are checked only
        # against the reference interpreter on the joint graph: kept on for those.
        grads = has_grad_files(folder)
        if not reference and grads:
            cmd.append("--no-reference")
        res["reference"] = reference or not grads
    elif not reference and os.path.exists(os.path.join(folder, "out.npy")):
        cmd.append("--no-reference")  # the check is against PyTorch's out.npy
    # Jobs that share the machine get its cores divided among them; one job at a time runs as a
    # user's compile does, with the CLI's own defaults (a part a core for g++, NVRTC 3 programs at
    # once: compile/split_source.h).
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    if shared:
        env["LOWERSCOPE_COMPILE_THREADS"] = str(threads)
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
    res.update({"exit": p.returncode, "wall_s": round(time.time() - t0, 1)})
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
    # Which float64 result decided the checks that failed elementwise (the CLI uses PyTorch's,
    # out64.npy and grad64_in*.npy, where the reference interpreter's float64 run is absent).
    res["float64_files"] = os.path.exists(os.path.join(folder, "out64.npy"))
    decided = rmse_checks(chk)
    if decided:
        res["rmse_checks"] = decided[:8]
        res["decided_by"] = sorted({d["yardstick"] for d in decided})
    if fmt == "train":
        gs = chk.get("gradients", []) or []
        res["grads_vs_pytorch"] = sum(1 for g in gs if str(g.get("against", "")).startswith("grad_in"))
        res["grads_vs_reference"] = len(gs) - res["grads_vs_pytorch"]
        res["grads_failed"] = [g.get("input") for g in gs if not g.get("ok")][:5]
        res["gradients_of"] = len((r.get("training") or {}).get("gradients_of", []) or [])
        res["kernels_per_phase"] = r.get("kernels_per_phase")
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
        bad = f"; gradients of {', '.join(map(str, res['grads_failed']))} differ" if res.get("grads_failed") else ""
        beyond = sorted({d["yardstick"] for d in decided if not d["ok"]})
        rmse = f"; beyond torch._dynamo's RMSE check against {', '.join(beyond)}" if beyond else ""
        res["error"] = res.get("not_run") or f"check failed, max abs err {res['max_err']}{bad}{rmse}"
    return res


class Results:
    """A batch's JSON: {"meta", "export", "results": {model: {kind: result}}}, rewritten after
    every job; an earlier file of the same name is resumed (its jobs are not run again, but for
    those the budget cut)."""

    def __init__(self, path, meta):
        self.path = path
        self.lock = threading.Lock()
        self.data = {"meta": meta, "export": {}, "results": {}}
        if os.path.exists(path):
            old = json.load(open(path))
            self.data["export"] = old.get("export", {})
            self.data["results"] = {m: {kind_of(k): r for k, r in devs.items() if not r.get("status", "").startswith("cut by")}
                                    for m, devs in old.get("results", {}).items()}
            self.data["meta"]["resumed"] = old.get("meta", {}).get("started")

    def done(self, model, kind):
        return kind in self.data["results"].get(model, {})

    def set(self, model, kind, res):
        with self.lock:
            self.data["results"].setdefault(model, {})[kind] = res
            write_json(self.path, self.data)

    def set_export(self, model, summary):
        with self.lock:
            self.data["export"][model] = summary
            write_json(self.path, self.data)


def possible(summary, kind):
    """Whether the export made what a kind compiles."""
    fmt = kind.split("/")[0]
    return (summary or {}).get("onnx" if fmt == "onnx" else "export") == "ok"


def run(args):
    t_start = time.time()
    deadline = t_start + args.budget if args.budget else float("inf")
    names = select(zoo_names(args), args.only, args.batch)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    for k in kinds:
        if k not in KINDS:
            raise SystemExit(f"--kinds: '{k}' is none of {', '.join(KINDS)}")
    cores = os.cpu_count() or 1
    threads = args.threads or max(1, cores // max(1, args.jobs))
    out_json = args.out_json or os.path.join(args.models, "run_%s.json" % (args.batch or "all").replace("/", "_of_"))
    meta = dict(machine(), started=time.strftime("%Y-%m-%d %H:%M:%S"), command=" ".join(sys.argv),
                jobs=args.jobs, threads=threads, timeout=args.timeout, kinds=kinds, models=names)
    res = Results(out_json, meta)
    models = all_models() if args.export else {}
    os.makedirs(args.models, exist_ok=True)
    print(f"{len(names)} models, {len(kinds)} kinds ({', '.join(kinds)}), {args.jobs} at once, {threads} threads each; "
          f"results in {out_json}", flush=True)

    def job(m, kind, folder):
        left = deadline - time.time()
        if left < args.min_job_s:  # no time left for it: a later command resumes it
            return
        model = model_input(args.models, m, kind)
        timeout = args.train_timeout if kind.startswith("train/") else args.timeout
        try:
            if model is None:
                raise RuntimeError(f"no {kind.split('/')[0]} file of this model in {args.models}")
            r = run_one(args.cli, model, folder, kind, min(timeout, left), threads, args.reference, args.jobs > 1)
        except Exception as e:  # a job that cannot start is its failure, not the worker's end
            r = {"ok": False, "error": "zoo.py: " + first_line(f"{type(e).__name__}: {e}")}
        r["jobs"], r["threads"] = args.jobs, threads  # what its compile time had of the machine
        if "status" in r and left < timeout:
            r["status"] = f"cut by the budget after {r['wall_s']:.0f} s"
        res.set(m, kind, r)
        print(m, kind, r, flush=True)

    # Jobs wait in a queue ordered by kind, then model: workers take every model's inference
    # before any training step, so a batch cut by its budget has the inference of all it reached.
    queue, cv, state = [], threading.Condition(), {"exported": False}

    def worker():
        while True:
            with cv:
                while not queue and not state["exported"]:
                    cv.wait()
                if not queue:
                    return
                _, _, m, d, folder = heapq.heappop(queue)
            job(m, d, folder)

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, args.jobs))]
    for w in workers:
        w.start()
    for k, m in enumerate(names):
        summary = res.data["export"].get(m)
        if summary is not None and summary.get("export") != "ok" and summary.get("onnx") != "ok":
            continue  # its export failed in an earlier try
        todo = [d for d in kinds if not res.done(m, d) and (summary is None or possible(summary, d))]
        if not todo:
            continue
        if time.time() > deadline - args.min_job_s:
            break
        # Export what the folder lacks (in this process, while earlier jobs compile).
        have = export_summary(args.models, m)
        if have is None:
            if not args.export or m not in models:
                continue
            have = export_one(m, models[m], args.models, threads)
            merge_export_json(args.models, {m: have})
            print(m, "export", have, flush=True)
        if summary != have:
            res.set_export(m, have)
        todo = [d for d in todo if possible(have, d)]
        if not todo:
            continue
        try:
            folder = prepare(args.models, m)
        except Exception as e:
            for d in todo:
                res.set(m, d, {"ok": False, "error": "unpack: " + first_line(str(e))})
            continue
        with cv:
            for d in todo:
                heapq.heappush(queue, (kinds.index(d), k, m, d, folder))
            cv.notify_all()
    with cv:
        state["exported"] = True
        cv.notify_all()
    for w in workers:
        w.join()
    left = [m for m in names if any(not res.done(m, d) and possible(res.data["export"].get(m), d) for d in kinds)
            or m not in res.data["export"]]
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


def max_abs_err(got, want):
    got = got.detach().float().cpu()
    if got.shape != want.shape:
        return f"shape {list(got.shape)} vs {list(want.shape)}"
    return float((got - want).abs().max()) if want.numel() else 0.0


def inductor_one(torch, name, make, folder, runs):
    import numpy as np
    from torch._inductor.utils import run_and_get_code
    m, ins = build(make, torch)
    stored = sorted(glob.glob(os.path.join(folder, "in*.npy")))
    if stored:  # the export's inputs, as our CLI reads them
        ins = tuple(torch.from_numpy(np.load(p)) for p in stored)
    if os.path.exists(os.path.join(folder, "out.npy")):
        want = torch.from_numpy(np.load(os.path.join(folder, "out.npy")))
    else:  # not exported on this machine: PyTorch on the CPU in float32, as the export's out.npy
        with torch.no_grad():
            want = first_tensor(m(*ins)).detach().float()
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
        res["max_err"] = max_abs_err(first_tensor(out), want)
    res["ok"] = True
    return res


def trace_position():
    """The TORCH_TRACE log this process writes and its size now (None, 0 without one): the records
    between two positions are those of the compiles between them. The log is created at the first
    record; each record is flushed as it is written (a logging.FileHandler)."""
    d = os.environ.get("TORCH_TRACE")
    if not d or not os.path.isdir(d):
        return None, 0
    for h in logging.getLogger("torch.__trace").handlers:
        try:
            h.flush()
        except Exception:
            pass
    mine = [p for p in glob.glob(os.path.join(d, "*.log")) if TRACE_LOGS.get(p, os.getpid()) == os.getpid()]
    if not mine:
        return None, 0
    p = max(mine, key=os.path.getmtime)
    return p, os.path.getsize(p)


TRACE_LOGS = {}  # logs of the folder that were there before this process: {path: None}


def inductor(args):
    if os.environ.get("TORCH_TRACE"):
        TRACE_LOGS.update({p: None for p in glob.glob(os.path.join(os.environ["TORCH_TRACE"], "*.log"))})
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
                         torch=torch.__version__, runs=args.runs, torch_trace=os.environ.get("TORCH_TRACE")),
            "results": {}}
    if os.path.exists(out_json):
        data["results"] = {m: r for m, r in json.load(open(out_json)).get("results", {}).items() if r.get("ok")}
    for m in names:
        if m in data["results"]:
            continue
        if time.time() > deadline - args.min_job_s:
            break
        folder = os.path.join(args.models, m)
        if m not in models:
            continue
        log0, at0 = trace_position()
        try:
            r = inductor_one(torch, m, models[m], folder, args.runs)
        except Exception as e:
            r = {"ok": False, "error": first_line(f"{type(e).__name__}: {e}")}
        torch._dynamo.reset()
        torch.cuda.empty_cache()
        log1, at1 = trace_position()
        if log1 and at1 > (at0 if log0 == log1 else 0):  # this model's records in the TORCH_TRACE log
            r["trace"] = {"log": log1, "span": [at0 if log0 == log1 else 0, at1]}
        data["results"][m] = r
        write_json(out_json, data)
        print(m, r, flush=True)
    print(f"done in {time.time() - t_start:.0f} s; results in {out_json}", flush=True)


# ---------------------------------------------------------------------------------------------
# Torch-level graphs: the TORCH_TRACE log of the inductor step, a corpus for `lowerscope-cli trace`
# ---------------------------------------------------------------------------------------------

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRIM = os.path.join(REPO, "tests", "data", "trace", "trim_trace.py")


def records(text):
    """A structured trace's records: (head line, [payload lines]) in order."""
    out, cur = [], None
    for line in text.splitlines(keepends=True):
        if line.startswith("\t") and cur is not None:
            cur[1].append(line)
            continue
        cur = (line, [])
        out.append(cur)
    return out


def raw_slice(log, span, dst):
    """The records of one model (bytes span[0]..span[1] of the raw log), after every "str" record
    written before them: a trace names files by the ids those records intern, once per process."""
    a, b = span
    with open(log, "rb") as f:
        before = f.read(a).decode("utf-8", "replace")
        body = f.read(b - a).decode("utf-8", "replace")
    strs = [l for l in before.splitlines(keepends=True) if '] {"str": [' in l]
    with open(dst, "w", encoding="utf-8") as f:
        f.write("".join(strs) + body)


def renumber_frames(text, offset):
    """A trimmed log with every frame id moved up by `offset` (envelopes, and the compile ids
    "F/C" of chromium events, their md5 made anew): Dynamo numbers frames from 0 again after each
    torch._dynamo.reset(), so the models of one corpus would share compile ids. Returns the text
    and the largest frame id it held (-1 for none)."""
    out, top = [], -1
    for head, payload in records(text):
        at = head.find("] {")
        if at < 0:
            out.append(head)
            out += payload
            continue
        env = json.loads(head[at + 2:])
        changed = False
        if isinstance(env.get("frame_id"), int) and env["frame_id"] >= 0:
            top = max(top, env["frame_id"])
            env["frame_id"] += offset
            changed = True
        if "chromium_event" in env and payload:
            try:
                ev = json.loads("".join(l[1:] for l in payload))
            except ValueError:
                ev = None
            cid = ((ev or {}).get("args") or {}).get("compile_id")
            mm = re.fullmatch(r"(\d+)/(.+)", cid or "")
            if mm:
                top = max(top, int(mm.group(1)))
                ev["args"]["compile_id"] = f"{int(mm.group(1)) + offset}/{mm.group(2)}"
                body = json.dumps(ev, indent=0)
                env["has_payload"] = hashlib.md5(body.encode()).hexdigest()
                payload = ["\t" + l + "\n" for l in body.split("\n")]
                changed = True
        if changed:
            head = head[:at + 2] + json.dumps(env) + "\n"
        out.append(head)
        out += payload
    return "".join(out), top


def trace_summary(rep):
    """What a `lowerscope-cli trace` report says of one model, in brief."""
    graphs = rep.get("graphs", []) or []
    tried = [g for g in graphs if (g.get("ours") or {}).get("attempted")]

    def n(x):
        return x if isinstance(x, (int, float)) else (len(x) if isinstance(x, (list, dict)) else 0)

    s = {"compiles": len(graphs), "dynamo_graphs": len(tried),
         "ours_ok": sum(1 for g in tried if g["ours"].get("check") == "ok"),
         "ours_not_run": sum(1 for g in tried if g["ours"].get("check") == "not run"),
         "ours_kernels": sum(n(g["ours"].get("kernels")) for g in tried),
         "inductor_kernels": sum(n(g.get("inductor_kernels")) for g in graphs),
         "ours_compile_ms": round(sum(g["ours"].get("compile_ms") or 0 for g in tried), 1),
         "inductor_compile_s": round(sum(g.get("compile_time_s") or 0 for g in graphs), 2),
         "graph_breaks": len(rep.get("graph_breaks", []) or []),
         "recompiles": len(rep.get("recompiles", []) or []),
         "warnings": len(rep.get("warnings", []) or [])}
    s["failed"] = [{"compile_id": g.get("compile_id"), "error": first_line(g["ours"].get("error") or g["ours"].get("check"))}
                   for g in tried if g["ours"].get("check") != "ok"][:10]
    s["pytorch_failures"] = [first_line(f"{f.get('fail_type')}: {f.get('reason') or f.get('summary')}")
                             for f in rep.get("failures", []) or []][:5]
    return s


def trace_cmd(args):
    """Cuts each model's records out of the inductor step's TORCH_TRACE log, trims them
    (tests/data/trace/trim_trace.py) and appends them, frame ids renumbered, to one corpus log;
    then compiles each model's graphs with `lowerscope-cli trace` and keeps a summary per model.
    Both files are resumed: a model already in the corpus is not cut again, one with a summary is
    not compiled again."""
    t_start = time.time()
    deadline = t_start + args.budget if args.budget else float("inf")
    work = os.path.join(args.models, "_trace")
    os.makedirs(work, exist_ok=True)
    data = {"meta": dict(machine(), started=time.strftime("%Y-%m-%d %H:%M:%S"), command=" ".join(sys.argv),
                         log=os.path.basename(args.out_log)), "spans": {}, "results": {}}
    if os.path.exists(args.out_json):
        old = json.load(open(args.out_json))
        data["spans"], data["results"] = old.get("spans", {}), old.get("results", {})
        data["meta"]["resumed"] = old.get("meta", {}).get("started")
    if not os.path.exists(args.out_log):  # spans into a corpus that is not here are void
        data["spans"] = {}
        open(args.out_log, "w").close()
    data["results"] = {m: r for m, r in data["results"].items() if m in data["spans"] and "status" not in r}
    script_dir = os.path.dirname(os.path.abspath(__file__))
    limit = args.max_mb * 2**20
    # 1. The corpus: each model's records, trimmed.
    for path in expand(args.inductor):
        for m, r in json.load(open(path)).get("results", {}).items():
            t = r.get("trace") or {}
            if m in data["spans"] or not t.get("log") or not os.path.exists(t["log"]):
                continue
            if time.time() > deadline - args.min_job_s:
                break
            raw, trimmed = os.path.join(work, m + ".raw.log"), os.path.join(work, m + ".log")
            try:
                raw_slice(t["log"], t["span"], raw)
                size = os.path.getsize(args.out_log)
                for drop in ([] if args.drop_output_code else [False]) + [True]:
                    cmd = [sys.executable, TRIM, raw, trimmed, script_dir] + (["--drop-output-code"] if drop else [])
                    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300)
                    text, top = renumber_frames(open(trimmed, encoding="utf-8").read(), data["meta"].get("next_frame", 0))
                    if size + len(text.encode()) <= limit:
                        break
                if size + len(text.encode()) > limit:
                    data["results"][m] = {"status": f"left out: the corpus would pass {args.max_mb} MB"}
                    continue
                with open(args.out_log, "a", encoding="utf-8") as f:
                    f.write(text)
                data["spans"][m] = [size, os.path.getsize(args.out_log)]
                data["meta"]["next_frame"] = data["meta"].get("next_frame", 0) + top + 1
                if drop:
                    data["meta"].setdefault("output_code_dropped", []).append(m)
            except Exception as e:
                data["results"][m] = {"status": "cut: " + first_line(str(e))}
            finally:
                if os.path.exists(raw):
                    os.remove(raw)
            write_json(args.out_json, data)
    # 2. Our compile of each model's graphs, from its span of the corpus (a fresh machine has only that).
    if not args.cli:
        return
    lock = threading.Lock()

    def one(m):
        left = deadline - time.time()
        if left < args.min_job_s:
            return
        a, b = data["spans"][m]
        log, rep = os.path.join(work, m + ".corpus.log"), os.path.join(work, m + ".report.json")
        with open(args.out_log, "rb") as f:
            f.seek(a)
            open(log, "wb").write(f.read(b - a))
        if os.path.exists(rep):
            os.remove(rep)
        cmd = [args.cli, "trace", log, "--device", args.device, "--quiet", "--report", rep]
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), LOWERSCOPE_COMPILE_THREADS=str(args.threads))
        t0 = time.time()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
        try:
            _, err = p.communicate(timeout=min(args.timeout, left))
            try:
                r = trace_summary(json.load(open(rep)))
            except Exception:
                r = {"error": first_line(err) or f"exit {p.returncode}"}
            r["exit"] = p.returncode
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.communicate()
            r = {"status": f"timeout ({min(args.timeout, left):.0f} s)"}
        r["wall_s"] = round(time.time() - t0, 1)
        with lock:
            data["results"][m] = r
            write_json(args.out_json, data)
        print(m, "trace", r, flush=True)

    todo = [m for m in data["spans"] if m not in data["results"]]
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
        list(ex.map(one, todo))
    write_json(args.out_json, data)
    print(f"trace done in {time.time() - t_start:.0f} s: {len(data['spans'])} models in {args.out_log} "
          f"({os.path.getsize(args.out_log) / 2**20:.1f} MB), {len(data['results'])} compiled", flush=True)


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
    """{model: export summary}, {model: {kind: result}}, {model: Inductor's result}, {model: trace
    summary} and the kinds some batch ran (its meta's kinds, or a result of it) from every file
    given (later files win, but a timeout never hides a finished result), the exports' JSON and a
    legacy printed log."""
    import ast
    exported, results, ran_kinds = {}, {}, set()

    def put(m, k, r):
        k = kind_of(k)
        ran_kinds.add(k)
        old = results.setdefault(m, {}).get(k)
        if finished(old) and not finished(r):
            return
        results[m][k] = r

    for path in expand(args.export):
        exported.update(json.load(open(path)))
    for path in expand([args.log] if args.log else []):
        for line in open(path):
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[1] in ("cpu", "cuda") and parts[2].startswith("{"):
                put(parts[0], parts[1], ast.literal_eval(parts[2].strip()))
    for path in expand(args.runs):
        j = json.load(open(path))
        ran_kinds.update(kind_of(k) for k in (j.get("meta", {}).get("kinds") or []))
        for m, e in j.get("export", {}).items():
            exported[m] = dict(exported.get(m, {}), **e)
        for m, devs in j.get("results", {}).items():
            for k, r in devs.items():
                put(m, k, r)
    inductor = {}
    for path in expand(args.inductor):
        for m, r in json.load(open(path)).get("results", {}).items():
            if r.get("ok") or m not in inductor:
                inductor[m] = r
    traces = {}
    for path in expand(args.traces):
        for m, r in json.load(open(path)).get("results", {}).items():
            if "status" not in r or m not in traces:
                traces[m] = r
    return exported, results, inductor, traces, ran_kinds


def left_out(t):
    """A trace summary of a model the corpus had no room for (trace_cmd's --max-mb): not recorded,
    not a failure of ours."""
    return str((t or {}).get("status", "")).startswith("left out: the corpus would pass")


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def reason(r):
    """Why a job did not pass, in a line."""
    return (r.get("status") or r.get("error") or f"check failed, max err {r.get('max_err')}").replace("|", "/").replace("\n", " ")


def pct(a, b):
    return f"{a} / {b} ({100.0 * a / b:.0f}%)" if b else f"{a} / 0"


def write_table(exported, results, inductor, traces, args, ran_kinds=None):
    kinds = [k for k in args.kinds.split(",") if k]
    if ran_kinds is None:
        ran_kinds = set(kinds)
    names = sorted(set(exported) | set(results) | set(inductor) | set(traces),
                   key=lambda n: (SOURCES.index(source_of(n)) if source_of(n) in SOURCES else len(SOURCES), n))

    def exp(n, what="export"):  # "ok", "failed: ...", or "-" (not exported in these files)
        e = exported.get(n, {})
        if what == "export" and not e and n in results:
            return "ok"
        return e.get(what, "-")

    def cell(r):
        if not r:
            return "-"
        if "status" in r:
            return "timeout" if r["status"].startswith("timeout") else "cut"
        if r.get("ok"):
            # fp64: a check beyond the elementwise tolerance passed torch._dynamo's RMSE check
            fp64 = ", fp64" if any(d.get("ok") for d in r.get("rmse_checks", []) or []) else ""
            if "grads_vs_pytorch" in r:
                return f"ok ({r['grads_vs_pytorch']}+{r.get('grads_vs_reference', 0)} grads{fp64})"
            return f"ok ({fp64[2:]})" if fp64 else "ok"
        return "FAIL"

    def ok(n, k):
        return bool(results.get(n, {}).get(k, {}).get("ok"))

    def ran(n, k):
        return finished(results.get(n, {}).get(k))

    lines = ["# Model zoo: torch.export and ONNX models through lowerscope-cli, beside Inductor and ONNX Runtime", "",
             "Made with (GPU machine; each `tools/zoo/gpu_batch.sh run|inductor|trace I/N` one command, see tools/zoo/zoo.py):",
             "", "    " + (args.command or "python3 tools/zoo/zoo.py table " + " ".join(sys.argv[2:])), "",
             "Inputs: batch 2, seeded random (token ids for language models, a waveform for speech); weights random and "
             "seeded; reference: PyTorch on the CPU in float32 (out.npy; beyond its elementwise tolerance, PyTorch in float64 "
             "where the export wrote it, out64.npy and grad64_in*.npy, by torch._dynamo's RMSE check). Ours: `lowerscope-cli compile` of the "
             "exported program (`pt2`), of the `torch.onnx.export(dynamo=True)` file (`onnx`), and of a training step "
             "of the .pt2 (`train`: the gradient of out.sum() checked against PyTorch's for float inputs, "
             "grad_in*.npy; a model of token ids has its parameters' gradients checked against the reference "
             "interpreter only; `ok (P+R grads)`: P gradients checked against PyTorch, R against the reference "
             "interpreter), each against out.npy. ONNX Runtime: the same .onnx on the CPU, against out.npy. Inductor: "
             "torch.compile (default mode) of the same model on CUDA; times are medians of CUDA events; compile "
             "times: ours the CLI's compile, Inductor's its first call (with TORCH_TRACE on where the inductor step "
             "recorded the trace corpus, which slows it somewhat).", ""]
    lines += ["| source | models | .pt2 | .onnx | ONNX Runtime agrees | " + " | ".join(kinds) + " |",
              "|---|---|---|---|---|" + "---|" * len(kinds)]
    groups = [(src, [n for n in names if source_of(n) == src]) for src in SOURCES] + [("all", names)]
    for src, group in groups:
        if not group:
            continue
        row = [src, str(len(group)), str(sum(1 for n in group if exp(n) == "ok")),
               str(sum(1 for n in group if exp(n, "onnx") == "ok")),
               str(sum(1 for n in group if exported.get(n, {}).get("ort_close")))]
        for k in kinds:
            if k not in ran_kinds:  # no batch was asked to run it
                row.append("not run")
                continue
            row.append(pct(sum(1 for n in group if ok(n, k)), len(group)) +
                       f", {sum(1 for n in group if ran(n, k))} ran")
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "Pass rates are of all the zoo's models of the source (an export that failed counts as a failure); "
              "`ran`: jobs that finished, correct or not (not cut by a time limit); `not run`: a kind no batch of "
              "these files was asked to run."]
    n64 = sum(1 for n in names if exported.get(n, {}).get("float64") == "ok")
    fp64 = sorted({(n, k) for n in names for k in kinds if ok(n, k) and
                   any(d.get("ok") for d in results.get(n, {}).get(k, {}).get("rmse_checks", []) or [])})
    if n64 or fp64:
        skipped = sum(1 for n in names if str(exported.get(n, {}).get("float64", "")).startswith("skipped"))
        lines += ["", f"PyTorch's float64 results (out64.npy, grad64_in*.npy: the model in float64 on the CPU) came with "
                  f"{n64} models' exports ({skipped} skipped as too large); where ours differs from PyTorch's float32 "
                  "result beyond the elementwise tolerance, torch._dynamo's accuracy check decides: ours passes when its "
                  "RMSE against the float64 result is at most 2 x float32 PyTorch's (3 x under 1000 elements) + 1e-5, as "
                  "torch._dynamo.utils.same() (`fp64` in a cell: "
                  f"{len(fp64)} jobs of {len({n for n, _ in fp64})} models passed so)."]
    speed, comp = [], []
    for n in names:
        ours, ind = results.get(n, {}).get("pt2/cuda", {}), inductor.get(n, {})
        if ours.get("ok") and ind.get("ok") and ours.get("run_ms") and ind.get("inductor_ms"):
            speed.append(ours["run_ms"] / ind["inductor_ms"])
            if ours.get("compile_ms") and ind.get("compile_s"):
                comp.append(ours["compile_ms"] / 1000.0 / ind["compile_s"])
    lines.append("")
    g = geomean(speed)
    lines.append(f"Geometric mean of ours / Inductor on CUDA (.pt2, time of the whole model, {len(speed)} models correct on "
                 "both): " + (f"**{g:.2f}**" if g else "not measured"))
    gc = geomean(comp)
    lines.append("Geometric mean of our compile time / Inductor's first call: " + (f"**{gc:.3f}**" if gc else "not measured"))
    fewer = [(n, results[n]["pt2/cuda"].get("kernels"), inductor[n].get("launches", 0) + inductor[n].get("extern_calls", 0))
             for n in names if results.get(n, {}).get("pt2/cuda", {}).get("ok") and results[n]["pt2/cuda"].get("kernels")
             and inductor.get(n, {}).get("ok") and (inductor[n].get("launches") or 0) + (inductor[n].get("extern_calls") or 0) > 0]
    if fewer:
        at_most = [f for f in fewer if f[1] <= f[2]]
        lines.append(f"Kernels on CUDA (.pt2): ours at most Inductor's launches + library calls on {len(at_most)} of {len(fewer)} "
                     f"models; geometric mean of ours / Inductor's {geomean([f[1] / f[2] for f in fewer]):.2f}.")
    lines.append("Times: the median of CUDA event timings of the whole model, batch 2; ours from `lowerscope-cli compile` "
                 "(" + ("one compile at a time, alone on the GPU" if all_alone(results) else "jobs of a batch share the GPU") + "), Inductor's and eager's from torch.compile (default mode) in its own "
                 "process. Inductor runs convolutions through cuDNN with TF32 (PyTorch's default), ours in float32 "
                 "(`--allow-tf32` not set). " + compile_threads_text(results))
    if traces:
        tried = [t for t in traces.values() if "dynamo_graphs" in t]
        unrecorded = sum(1 for t in traces.values() if left_out(t))
        lines.append(f"Torch-level graphs (TORCH_TRACE of the inductor step, `lowerscope-cli trace`): "
                     f"{len(traces) - unrecorded} models recorded, {len(tried)} compiled; "
                     f"{sum(t['ours_ok'] for t in tried)} of {sum(t['dynamo_graphs'] for t in tried)} Dynamo graphs "
                     "compiled and correct; models with every graph correct: "
                     f"{sum(1 for t in tried if t['dynamo_graphs'] and t['ours_ok'] == t['dynamo_graphs'])}; "
                     f"not recorded (corpus size limit): {unrecorded} models, not counted as failures.")
    lines += ["", "| model | export .pt2 / .onnx | ORT max err | " + " | ".join(kinds) +
              " | ours CUDA ms | Inductor ms | eager ms | ours / Inductor | kernels ours / Inductor (Triton launches + library calls) "
              "| compile s ours / Inductor | traced graphs ours ok | our slowest CUDA kernels |",
              "|---|---|---|" + "---|" * len(kinds) + "---|---|---|---|---|---|---|---|"]

    def num(x, f="{:.3f}"):
        return f.format(x) if isinstance(x, (int, float)) else "-"

    def short(e):
        return "ok" if e == "ok" else ("-" if e == "-" else "failed" if str(e).startswith("failed") else str(e)[:20])

    for n in names:
        e = exported.get(n, {})
        ours, ind = results.get(n, {}).get("pt2/cuda", {}) or {}, inductor.get(n, {})
        ours_ms = ours.get("run_ms") if ours.get("ok") else None
        ind_ms = ind.get("inductor_ms") if ind.get("ok") else None
        ratio = ours_ms / ind_ms if ours_ms and ind_ms else None
        # launches, as ours counts them (Inductor defines a kernel once and calls it per layer)
        ind_k = f"{ind.get('launches', ind.get('triton_kernels'))} + {ind.get('extern_calls')}" if ind.get("ok") else ("FAIL" if ind else "-")
        kern = f"{ours.get('kernels', '-') if ours.get('ok') else '-'} / {ind_k}"
        comp_cell = f"{num((ours.get('compile_ms') or 0) / 1000.0 if ours.get('ok') else None, '{:.1f}')} / " \
                    f"{num(ind.get('compile_s'), '{:.1f}')}"
        slow = ", ".join(f"{k} {ms:.3f}" for k, ms in (ours.get("slowest") or [])) if ratio and ratio > 1 else ""
        t = traces.get(n, {})
        tcell = f"{t['ours_ok']} / {t['dynamo_graphs']}" if "dynamo_graphs" in t else \
            ("not recorded" if left_out(t) else "cut" if t else "-")
        ort = num(e.get("ort_max_err"), "{:.1e}") if e.get("ort") == "ok" else ("FAIL" if str(e.get("ort", "")).startswith("failed") else "-")
        lines.append(f"| {n} | {short(exp(n))} / {short(exp(n, 'onnx'))} | {ort} | " +
                     " | ".join(cell(results.get(n, {}).get(k)) for k in kinds) +
                     f" | {num(ours_ms)} | {num(ind_ms)} | {num(ind.get('eager_ms'))} | {num(ratio, '{:.2f}')} | {kern} "
                     f"| {comp_cell} | {tcell} | {slow} |")
    # Every failure with its reason: exports, ONNX Runtime, our jobs, Inductor, traced graphs.
    fails = []
    for n in names:
        e = exported.get(n, {})
        for what, label in (("export", "torch.export"), ("onnx", "torch.onnx.export"), ("ort", "ONNX Runtime"),
                            ("grads", "PyTorch's gradients"), ("float64", "PyTorch in float64")):
            if str(e.get(what, "")).startswith("failed"):
                fails.append((label, n, str(e[what])[len("failed: "):].replace("|", "/")))
        if e.get("ort") == "ok" and e.get("ort_close") is False:
            fails.append(("ONNX Runtime", n, f"differs from PyTorch: max abs err {e.get('ort_max_err'):.3g}"))
        for k in kinds:
            r = results.get(n, {}).get(k)
            if r and not r.get("ok"):
                fails.append((k, n, reason(r)))
        if inductor.get(n) and not inductor[n].get("ok"):
            fails.append(("Inductor", n, inductor[n].get("error", "")))
        t = traces.get(n, {})
        if ("status" in t and not left_out(t)) or "error" in t:  # a model the corpus had no room for is no failure
            fails.append(("trace", n, t.get("status") or t.get("error")))
        for f in t.get("failed", []) or []:
            fails.append(("trace", n, f"graph {f.get('compile_id')}: {f.get('error')}"))
    if fails:
        counts = {}
        for where, n, why in fails:
            key = re.sub(r"\b\d+(\.\d+)?(e-?\d+)?\b", "N", why)[:140]
            counts.setdefault(key, set()).add(n)
        lines += ["", "## The most common reasons (numbers replaced by N)", "", "| models | reason |", "|---|---|"]
        for key, ms in sorted(counts.items(), key=lambda kv: -len(kv[1]))[:25]:
            lines.append(f"| {len(ms)} | {key} |")
        lines += ["", "## Every failure", ""]
        for where in ["torch.export", "torch.onnx.export", "ONNX Runtime", "PyTorch's gradients", "PyTorch in float64"] + kinds + \
                ["Inductor", "trace"]:
            these = [(n, why) for w, n, why in fails if w == where]
            if these:
                lines += [f"### {where} ({len(these)})", ""] + [f"- {n}: {why}" for n, why in these] + [""]
    unrecorded = [n for n in names if left_out(traces.get(n))]
    if unrecorded:
        lines += ["", f"## Torch-level graphs not recorded (corpus size limit): {len(unrecorded)} models", "",
                  "Their TORCH_TRACE records would have taken the batch's corpus past its limit (`trace --max-mb`): "
                  "not compiled, not failures. " + ", ".join(unrecorded) + ".", ""]
    # The notes of earlier runs kept below the table, from the marker line on.
    marker = "<!-- earlier runs -->"
    old = open(args.results).read() if os.path.exists(args.results) else ""
    kept = old[old.index(marker):] if marker in old else ""
    open(args.results, "w").write("\n".join(lines).rstrip("\n") + "\n" + ("\n" + kept if kept else ""))
    print(f"{args.results}: {len(names)} models")


def table(args):
    exported, results, inductor, traces, ran_kinds = load_runs(args)
    write_table(exported, results, inductor, traces, args, ran_kinds)


def main():
    if sys.argv[1:2] == ["ci-worker"]:  # export --ci's process for one model
        return ci_worker(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def selection(p):
        p.add_argument("--only", default="", help="sources (tv, timm, hf, rnn) or model names, comma separated")
        p.add_argument("--batch", default="", help="I/N: every N-th model from the I-th, sources alternating")

    e = sub.add_parser("export", help="export the models: DIR/<model>/model.pt2, in*.npy, out.npy")
    e.add_argument("--out", required=True)
    e.add_argument("--part", default="", help="K/M: every M-th model of the selection from the K-th (parallel exports)")
    e.add_argument("--budget", type=float, default=0, help="seconds: no export starts after it")
    e.add_argument("--threads", type=int, default=0, help="torch's CPU threads (default: its own)")
    e.add_argument("--max-params64", type=float, default=MAX_PARAMS64, help="no float64 reference (out64.npy, "
                   "grad64_in*.npy) for models with more parameters")
    e.add_argument("--max-grad-s64", type=float, default=MAX_GRAD_S64, help="no float64 reference for models whose "
                   "float32 gradients took longer (seconds)")
    e.add_argument("--ci", action="store_true", help="the CI subset (ci_models: tiny configs, about 30 models) "
                   "instead of the zoo, pruned to --max-kb each and --max-total-kb in all (tests/data/zoo)")
    e.add_argument("--max-kb", type=float, default=CI_MAX_KB, help="--ci: a model's files at most (KB)")
    e.add_argument("--max-total-kb", type=float, default=CI_MAX_TOTAL_KB, help="--ci: all models' files at most (KB)")
    e.add_argument("--jobs", type=int, default=4, help="--ci: exports at once (processes; --threads each, default "
                   "cores / jobs)")
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
    r.add_argument("--reference", action="store_true", help="also check against the reference interpreter (a training "
                   "step of a model without float inputs always is: nothing else checks its parameters' gradients)")
    r.add_argument("--kinds", default=",".join(KINDS), help="what to compile, in this order of priority: format/device "
                   "of " + ", ".join(KINDS) + " (train: a training step of the .pt2, checked against grad_in*.npy)")
    r.add_argument("--train-timeout", type=float, default=240, help="seconds one training step's compile may take")
    selection(r)
    i = sub.add_parser("inductor", help="eager and torch.compile on CUDA for each model: times, kernels, compile time")
    i.add_argument("--models", required=True)
    i.add_argument("--out-json", default="")
    i.add_argument("--export", action="store_true")
    i.add_argument("--runs", type=int, default=20, help="timed calls (median)")
    i.add_argument("--budget", type=float, default=0)
    i.add_argument("--min-job-s", type=float, default=40)
    selection(i)
    tr = sub.add_parser("trace", help="the inductor step's TORCH_TRACE log cut per model, trimmed, as one corpus log; "
                        "each model's graphs compiled by lowerscope-cli trace")
    tr.add_argument("--inductor", action="append", default=[], help="inductor JSON files (their models' trace spans)")
    tr.add_argument("--models", required=True, help="the zoo's folder (work files go to DIR/_trace)")
    tr.add_argument("--out-log", required=True, help="the corpus (appended to where it exists)")
    tr.add_argument("--out-json", required=True, help="spans of the corpus per model and our compile of each (resumed)")
    tr.add_argument("--cli", default="", help="lowerscope-cli (without it, only the corpus is made)")
    tr.add_argument("--device", default="cuda")
    tr.add_argument("--jobs", type=int, default=4)
    tr.add_argument("--threads", type=int, default=0, help="CPU threads of each job (default: cores / jobs)")
    tr.add_argument("--timeout", type=float, default=240, help="seconds for one model's graphs")
    tr.add_argument("--budget", type=float, default=0)
    tr.add_argument("--min-job-s", type=float, default=20)
    tr.add_argument("--max-mb", type=float, default=19, help="the corpus's limit: a model's output code is dropped "
                    "where it would pass it, the model left out where even that does")
    tr.add_argument("--drop-output-code", action="store_true", help="drop Inductor's output code of every model")
    t = sub.add_parser("table", help="merge run and inductor JSON files into results.md")
    t.add_argument("--runs", action="append", default=[], help="run JSON files or globs (repeatable; later win)")
    t.add_argument("--inductor", action="append", default=[], help="inductor JSON files or globs")
    t.add_argument("--export", action="append", default=[], help="export.json files")
    t.add_argument("--log", default="", help="a legacy run's printed log")
    t.add_argument("--results", required=True)
    t.add_argument("--traces", action="append", default=[], help="zoo_trace JSON files of the trace step")
    t.add_argument("--kinds", default=",".join(KINDS), help="the columns: format/device")
    t.add_argument("--command", default="", help="the commands that made the data, for the table's header")
    a = ap.parse_args()
    try:
        if a.cmd == "trace" and not a.threads:
            a.threads = max(1, (os.cpu_count() or 1) // max(1, a.jobs))
        {"export": export, "run": run, "inductor": inductor, "trace": trace_cmd, "table": table}[a.cmd](a)
    except Exception:
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main()
