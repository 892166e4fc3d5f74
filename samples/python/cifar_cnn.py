# The classic CIFAR-10 CNN (conv-relu-pool x2, three Linear), compiled: one graph with two
# convolutions and three matrix multiplies as library calls, the rest fused around them. Then one
# SGD step through the compiled training step, checked against eager.
import torch
import torch.nn as nn
import torch.nn.functional as F


class CifarNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


torch.manual_seed(0)
net = CifarNet()
images = torch.randn(8, 3, 32, 32)
compiled = torch.compile(net)

with torch.no_grad():
    logits = compiled(images)
    print("logits", logits.shape, "match eager:", torch.allclose(logits, net(images), rtol=1e-4, atol=1e-5))

# One training step, compiled and eager, from the same weights.
eager = CifarNet()
eager.load_state_dict(net.state_dict())
labels = torch.randn(8, 10)
for model, m in ((compiled, net), (eager, eager)):
    loss = F.mse_loss(model(images), labels)
    loss.backward()
    torch.optim.SGD(m.parameters(), lr=0.1).step()
print("weights after one step match eager:",
      all(torch.allclose(p, q, rtol=1e-4, atol=1e-5) for p, q in zip(net.parameters(), eager.parameters())))
