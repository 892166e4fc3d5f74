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
