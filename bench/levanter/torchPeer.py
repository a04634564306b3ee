# PyTorch peer of bench/levanter/throughput.bench.ts: the same pre-LN decoder (learned positions,
# layer norm, bias-free linears, tanh-GELU MLP x4, untied head, byte vocab 257), AdamW(0.9, 0.95,
# eps 1e-8, wd 0.1), global-norm clipping at 1, batch 16 x seq 64, trained on the CPU with
# --threads threads. With --llama: the Llama shape instead (Hugging Face's LlamaForCausalLM: RMSNorm,
# grouped-query attention with --kv-heads key/value heads, rotate-half rotary positions, SwiGLU MLP
# of width --ffn, no biases, untied head). Prints one JSON line: {"ms_per_step": ..., "tokens_per_s": ..., ...}.
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.up = nn.Linear(d, 4 * d, bias=False)
        self.down = nn.Linear(4 * d, d, bias=False)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(d // self.h)) + mask
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.out(y)
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))


class RmsNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d, h, hkv, ffn):
        super().__init__()
        self.h, self.hkv, self.dh = h, hkv, d // h
        self.ln1 = RmsNorm(d)
        self.qkv = nn.Linear(d, (h + 2 * hkv) * self.dh, bias=False)
        self.out = nn.Linear(h * self.dh, d, bias=False)
        self.ln2 = RmsNorm(d)
        self.gate = nn.Linear(d, ffn, bias=False)
        self.up = nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)

    def forward(self, x, mask, cos, sin):
        b, t, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, self.h + 2 * self.hkv, self.dh).transpose(1, 2)
        q, k, v = qkv.split([self.h, self.hkv, self.hkv], dim=1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        g = self.h // self.hkv
        k = k.repeat_interleave(g, dim=1)
        v = v.repeat_interleave(g, dim=1)
        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.dh)) + mask
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, self.h * self.dh)
        x = x + self.out(y)
        hn = self.ln2(x)
        return x + self.down(F.silu(self.gate(hn)) * self.up(hn))


class LlamaLm(nn.Module):
    def __init__(self, layers, d, h, hkv, ffn, t, vocab=257, theta=10000.0):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(LlamaBlock(d, h, hkv, ffn) for _ in range(layers))
        self.ln = RmsNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", torch.full((t, t), -1e9).triu(1))
        dh = d // h
        inv = 1.0 / theta ** (torch.arange(0, dh, 2, dtype=torch.float32) / dh)
        ang = torch.outer(torch.arange(t, dtype=torch.float32), inv)
        ang = torch.cat((ang, ang), dim=-1)
        self.register_buffer("cos", ang.cos())
        self.register_buffer("sin", ang.sin())

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tok(ids)
        for blk in self.blocks:
            x = blk(x, self.mask[:t, :t], self.cos[:t], self.sin[:t])
        return self.head(self.ln(x))


class Lm(nn.Module):
    def __init__(self, layers, d, h, t, vocab=257):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(t, d) * 0.02)
        self.blocks = nn.ModuleList(Block(d, h) for _ in range(layers))
        self.ln = nn.LayerNorm(d, eps=1e-5)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", torch.full((t, t), -1e9).triu(1))

    def forward(self, ids):
        x = self.tok(ids) + self.pos[: ids.shape[1]]
        for blk in self.blocks:
            x = blk(x, self.mask)
        return self.head(self.ln(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--d", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--llama", action="store_true")
    ap.add_argument("--kv-heads", type=int, default=0)
    ap.add_argument("--ffn", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.llama:
        model = LlamaLm(a.layers, a.d, a.heads, a.kv_heads or a.heads, a.ffn or 4 * a.d, a.seq)
    else:
        model = Lm(a.layers, a.d, a.heads, a.seq)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    ids = torch.randint(0, 257, (a.batch, a.seq))
    targets = torch.roll(ids, -1)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(ids).view(-1, 257), targets.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(2):
        step()
    t0 = time.perf_counter()
    c0 = time.process_time()
    for _ in range(a.steps):
        step()
    ms = (time.perf_counter() - t0) * 1000 / a.steps
    cpu_ms = (time.process_time() - c0) * 1000 / a.steps
    params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"ms_per_step": ms, "cpu_ms_per_step": cpu_ms, "tokens_per_s": a.batch * a.seq / ms * 1000, "params": params, "torch": torch.__version__, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
