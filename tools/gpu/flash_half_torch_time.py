import torch, torch.nn.functional as F
def t(B,H,Hk,L,D,causal):
    q=torch.randn(B,H,L,D,device='cuda',dtype=torch.bfloat16,requires_grad=True)
    k=torch.randn(B,Hk,L,D,device='cuda',dtype=torch.bfloat16,requires_grad=True)
    v=torch.randn(B,Hk,L,D,device='cuda',dtype=torch.bfloat16,requires_grad=True)
    g=torch.randn(B,H,L,D,device='cuda',dtype=torch.bfloat16)
    f=[];b=[]
    for i in range(12):
        s=torch.cuda.Event(enable_timing=True);m=torch.cuda.Event(enable_timing=True);e=torch.cuda.Event(enable_timing=True)
        s.record(); y=F.scaled_dot_product_attention(q,k,v,is_causal=bool(causal),enable_gqa=H!=Hk); m.record(); y.backward(g); e.record(); torch.cuda.synchronize()
        if i>=2: f.append(s.elapsed_time(m)); b.append(m.elapsed_time(e))
    print(f"torch B{B} H{H}/{Hk} L{L} D{D} causal{causal}: forward {sorted(f)[5]:.3f} ms backward {sorted(b)[5]:.3f} ms")
t(4,16,16,2048,128,1); t(4,16,4,2048,128,1); t(16,8,8,512,64,1); t(16,8,8,512,64,0)
