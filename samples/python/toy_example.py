# The walkthrough's toy_example: `if b.sum() < 0:` needs a tensor's value, so capture breaks
# there: the first graph is compiled and run, Python takes the branch, and capture resumes in a
# second graph (torch_dynamo_resume_in_toy_example_at_...). 2 graphs, 1 graph break.
import torch


def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


torch.manual_seed(0)
a, b = torch.randn(10), -torch.ones(10)
out = torch.compile(toy_example)(a, b)
print(out)
print("matches eager:", torch.allclose(out, toy_example(a, b)))
print(torch._dynamo.explain(toy_example)(a, b))
