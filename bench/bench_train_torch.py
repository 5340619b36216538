#!/usr/bin/env python3
"""Peer of bench/bench_train.cpp: the same Llama-style model (d 256, 4 layers, 4 heads, SwiGLU 688,
T 256, batch 8, vocab 512; RMSNorm pre-norm, RoPE half-split, tied head, no biases) and the same
optimizer step (AdamW with the same decay groups, global-norm clipping) in PyTorch on the CPU, float32,
with PyTorch's fused causal attention (F.scaled_dot_product_attention). Prints one JSON line like
bench_train: tokens_per_s (median step), step_s, peak_rss_mb.
    usage: bench_train_torch.py [steps=6] [threads=0 (= all cores)]
"""
import json, math, os, resource, sys, time
import torch
import torch.nn.functional as F

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 0
torch.set_num_threads(threads if threads > 0 else os.cpu_count())
torch.manual_seed(0)
L, d, H, dh, ff, V, T, B = 4, 256, 4, 64, 688, 512, 256, 8


class RMSNorm(torch.nn.Module):
    def __init__(self, n, eps=1e-5):
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.ones(n)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)
        self.wq, self.wk, self.wv, self.wo = (torch.nn.Linear(d, d, bias=False) for _ in range(4))
        self.w_gate, self.w_up = torch.nn.Linear(d, ff, bias=False), torch.nn.Linear(d, ff, bias=False)
        self.w_down = torch.nn.Linear(ff, d, bias=False)

    def forward(self, x, cos, sin):
        b, n, _ = x.shape
        h = self.ln1(x)
        q, k, v = (w(h).view(b, n, H, dh).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        rot = lambda t: t * cos + torch.cat([-t[..., dh // 2:], t[..., : dh // 2]], -1) * sin
        z = F.scaled_dot_product_attention(rot(q), rot(k), v, is_causal=True)
        x = x + self.wo(z.transpose(1, 2).reshape(b, n, d))
        h = self.ln2(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(V, d)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(L))
        self.ln_f = RMSNorm(d)
        inv = 10000.0 ** (-torch.arange(0, dh, 2, dtype=torch.float32) / dh)
        ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
        self.register_buffer("cos", torch.cat([ang.cos(), ang.cos()], -1))
        self.register_buffer("sin", torch.cat([ang.sin(), ang.sin()], -1))

    def forward(self, tokens):
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x, self.cos, self.sin)
        return self.ln_f(x) @ self.embed.weight.T


model = Model()
for n, p in model.named_parameters():
    if p.dim() >= 2:
        torch.nn.init.normal_(p, std=0.02)
decay = [p for p in model.parameters() if p.dim() >= 2]
no_decay = [p for p in model.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                        lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
gen = torch.Generator().manual_seed(1)
times, loss = [], None
for s in range(steps + 1):  # step 0 is a warm-up
    batch = torch.randint(0, V, (B, T + 1), generator=gen)
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    logits = model(batch[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), batch[:, 1:].reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if s:
        times.append(time.perf_counter() - t0)
times.sort()
step_s = times[len(times) // 2]
print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(), "steps": steps,
                  "tokens_per_step": T * B, "step_s": step_s, "tokens_per_s": T * B / step_s,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, "last_loss": loss.item()}))
