"""The training benchmark's model in PyTorch, shared by the CPU peer (bench_train_torch.py) and the GPU
peer (bench_cuda_torch.py): Llama-style, d 256, 4 layers, 4 heads, SwiGLU 688, T 256, batch 8, vocab 512;
RMSNorm pre-norm, RoPE half-split, tied head, no biases; AdamW with decay on matrices only.
Attention is F.scaled_dot_product_attention ("sdpa") or written out ("eager": scores, mask, softmax, matmul)."""
import math

import torch
import torch.nn.functional as F

L, d, H, dh, ff, V, T, B = 4, 256, 4, 64, 688, 512, 256, 8


class RMSNorm(torch.nn.Module):
    def __init__(self, n, eps=1e-5):
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.ones(n)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def eager_attention(q, k, v):
    n = q.shape[-2]
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(s.masked_fill(mask, float("-inf")), -1) @ v


class Block(torch.nn.Module):
    def __init__(self, attn):
        super().__init__()
        self.attn = attn
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)
        self.wq, self.wk, self.wv, self.wo = (torch.nn.Linear(d, d, bias=False) for _ in range(4))
        self.w_gate, self.w_up = torch.nn.Linear(d, ff, bias=False), torch.nn.Linear(d, ff, bias=False)
        self.w_down = torch.nn.Linear(ff, d, bias=False)

    def forward(self, x, cos, sin):
        b, n, _ = x.shape
        h = self.ln1(x)
        q, k, v = (w(h).view(b, n, H, dh).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        rot = lambda t: t * cos + torch.cat([-t[..., dh // 2:], t[..., : dh // 2]], -1) * sin
        if self.attn == "sdpa":
            z = F.scaled_dot_product_attention(rot(q), rot(k), v, is_causal=True)
        else:
            z = eager_attention(rot(q), rot(k), v)
        x = x + self.wo(z.transpose(1, 2).reshape(b, n, d))
        h = self.ln2(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class Model(torch.nn.Module):
    def __init__(self, attn="sdpa"):
        super().__init__()
        self.embed = torch.nn.Embedding(V, d)
        self.blocks = torch.nn.ModuleList(Block(attn) for _ in range(L))
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


def model_and_optimizer(attn="sdpa", device="cpu"):
    """The model with N(0, 0.02) matrices, and AdamW (decay 0.1 on matrices, none on gains)."""
    model = Model(attn).to(device)
    for p in model.parameters():
        if p.dim() >= 2:
            torch.nn.init.normal_(p, std=0.02)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    return model, opt


def train_step(model, opt, batch, bf16=False):
    """One AdamW step on a (B, T + 1) token batch: next-token cross-entropy, global-norm clipping at 1.
    bf16: forward and loss under CPU autocast to bfloat16 (PyTorch's mixed precision: float32 master
    weights; linear layers, matmuls and attention in bf16; the backward follows the forward's types)."""
    opt.zero_grad(set_to_none=True)
    with torch.autocast(device_type=batch.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V).float(), batch[:, 1:].reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss
