import torch, torch.nn.functional as F
B,H,L,D=4,16,2048,128
q=torch.randn(B,H,L,D,device='cuda',dtype=torch.bfloat16,requires_grad=True)
k=torch.randn(B,H,L,D,device='cuda',dtype=torch.bfloat16,requires_grad=True)
v=torch.randn(B,H,L,D,device='cuda',dtype=torch.bfloat16,requires_grad=True)
for i in range(3):
    y=F.scaled_dot_product_attention(q,k,v,is_causal=True); y.sum().backward()
torch.cuda.synchronize()
