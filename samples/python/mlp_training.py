# An MLP trained with SGD, its forward compiled. The compiled graph runs as a training step (the
# joint graph partitioned into forward and backward, as AOTAutograd does); loss.backward() runs
# the compiled backward with the real gradient of the loss.
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


torch.manual_seed(0)
model = MLP()
reference = MLP()
reference.load_state_dict(model.state_dict())
compiled = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
ref_opt = torch.optim.SGD(reference.parameters(), lr=0.05)

x = torch.randn(64, 784)
target = torch.randn(64, 10)
for step in range(5):
    opt.zero_grad()
    loss = F.mse_loss(compiled(x), target)
    loss.backward()
    opt.step()
    # The same step in eager mode, for comparison.
    ref_opt.zero_grad()
    ref_loss = F.mse_loss(reference(x), target)
    ref_loss.backward()
    ref_opt.step()
    print("step %d: loss %.5f (eager %.5f)" % (step, loss.item(), ref_loss.item()))

same = all(torch.allclose(p, q, rtol=1e-4, atol=1e-5) for p, q in zip(model.parameters(), reference.parameters()))
print("weights after training match eager:", same)
