# Writes PyTorch's structured trace (TORCH_TRACE) of two real models compiled with torch.compile on
# CUDA: a torchvision ResNet-18 (inference, 1x3x64x64) and a tiny transformers GPT-2 (2 layers,
# 64 wide; inference and one training step). Seeded, random weights (no network).
#   TORCH_TRACE=DIR python3 make_model_traces.py resnet18|gpt2
import sys
import torch

which = sys.argv[1]
dev = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
if which == "resnet18":
    import torchvision
    m = torchvision.models.resnet18(weights=None).to(dev).eval()
    with torch.no_grad():
        torch.compile(m)(torch.randn(1, 3, 64, 64, device=dev))
elif which == "gpt2":
    import transformers as tf
    cfg = tf.GPT2Config(vocab_size=512, n_embd=64, n_layer=2, n_head=4, n_positions=64)
    m = tf.GPT2LMHeadModel(cfg).to(dev)
    cm = torch.compile(m)
    ids = torch.randint(0, 512, (2, 16), device=dev)
    m.eval()
    with torch.no_grad():
        cm(ids)
    m.train()
    cfg.attn_pdrop = cfg.resid_pdrop = cfg.embd_pdrop = 0.0
    out = cm(ids, labels=ids)
    out.loss.backward()
else:
    raise SystemExit("make_model_traces.py resnet18|gpt2")
print(which, "traced")
