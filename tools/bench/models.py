"""The models both benchmarks run (CPU: tools/bench/cpu_bench.py, CUDA: tools/gpu/cuda_bench.py):
the fixtures' models as the fixture generator defines them (restated here), and the large
memory-bound cases of the backend issues."""
import torch

nn, F = torch.nn, torch.nn.functional


class SinCos(nn.Module):
    def forward(self, x):
        return torch.sin(x) ** 2 + torch.cos(x) ** 2


class Mse(nn.Module):
    def forward(self, x, y):
        return F.mse_loss(torch.sin(x) ** 2 + torch.cos(x) ** 2, y)


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x * 0.125, dim=-1)


class LnGeluOnly(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.ln = nn.LayerNorm(h)

    def forward(self, x):
        return F.gelu(self.ln(x))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(784, 256), nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Cifar(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(3, 6, 5), nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class LnGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln, self.fc = nn.LayerNorm(256), nn.Linear(256, 1024)

    def forward(self, x):
        return F.gelu(self.fc(self.ln(x)))


class Attn(nn.Module):
    def __init__(self, d=128, h=4):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # torch 1.13
            s = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
            s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
            y = torch.softmax(s, dim=-1) @ v
        y = y.transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class RMSNorm(nn.Module):
    """As transformers' LlamaRMSNorm: computed in float32, the result in the input's dtype."""
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class DecoderLayer(nn.Module):
    """A decoder-only LM layer as Llama writes it: RMSNorm, rotary position embeddings,
    grouped-query causal attention (kv_heads < heads) and a gated SiLU MLP."""
    def __init__(self, d=2048, heads=16, kv_heads=4, ffn=5632, max_len=2048):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv_heads, d // heads
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate, self.up = nn.Linear(d, ffn, bias=False), nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        ang = torch.outer(torch.arange(max_len).float(), inv)
        emb = torch.cat([ang, ang], dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    @staticmethod
    def rotate_half(x):
        a, b = x.chunk(2, dim=-1)
        return torch.cat([-b, a], dim=-1)

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln1(x)
        q = self.q(h).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k(h).view(b, t, self.kv, self.hd).transpose(1, 2)
        v = self.v(h).view(b, t, self.kv, self.hd).transpose(1, 2)
        cos, sin = self.cos[:t].to(x.dtype), self.sin[:t].to(x.dtype)
        q = q * cos + self.rotate_half(q) * sin
        k = k * cos + self.rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(y.transpose(1, 2).reshape(b, t, d))
        h = self.ln2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Res(nn.Module):
    def __init__(self, c=32):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1, self.bn2 = nn.BatchNorm2d(c), nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


def fixture_models():
    """name -> (model in eval mode, input shape), at the fixtures' sizes."""
    models = {"mlp": (MLP(), (64, 784)), "cifar_net": (Cifar(), (8, 3, 32, 32)), "layernorm_gelu": (LnGelu(), (32, 64, 256)),
              "softmax": (Softmax(), (64, 512)), "attn_block": (Attn(), (4, 64, 128)), "res_block": (Res(), (4, 32, 16, 16))}
    try:
        import torchvision
        models["mobilenet_v3_small"] = (torchvision.models.mobilenet_v3_small(), (1, 3, 224, 224))
    except ImportError:
        pass
    for m, _ in models.values():
        m.eval()
    return models
