"""Writes the loss trajectory of nn/tests/nn/sparse.rs's recommendation model to
sparse_recsys_expected.txt (PyTorch 2.15: python3 gen_sparse_recsys.py > sparse_recsys_expected.txt).

The model: EmbeddingBag(100000, 64, mode="mean", sparse=True) -> Linear(64, 32) -> ReLU ->
Linear(32, 1), BCE with logits, SparseAdam(lr=0.01) for the table and Adam(lr=0.01) for the
rest, 100 steps of 32 bags of 8 ids, in float32. Every weight and every batch comes from a
formula both sides compute (`wave` in float64, then float32), so no weights are stored.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

V, D, H, B, L, STEPS = 100_000, 64, 32, 32, 8, 100


def wave(shape, a, b, scale):
    n = 1
    for s in shape:
        n *= s
    return (torch.sin(a * torch.arange(n, dtype=torch.float64) + b) * scale).reshape(shape).float()


def batch(t):
    k = torch.arange(B * L, dtype=torch.int64)
    ids = ((k * 2654435761 + t * 40503) % 2000) * 50 + (k % 7)
    target = (torch.sin(torch.arange(B, dtype=torch.float64) * 1.3 + t) > 0).float()
    return ids.reshape(B, L), target


emb = nn.EmbeddingBag(V, D, mode="mean", sparse=True)
fc1 = nn.Linear(D, H)
fc2 = nn.Linear(H, 1)
with torch.no_grad():
    emb.weight.copy_(wave([V, D], 0.37, 0.1, 0.5))
    fc1.weight.copy_(wave([H, D], 0.71, 0.2, 0.1))
    fc1.bias.copy_(wave([H], 0.3, 0.5, 0.1))
    fc2.weight.copy_(wave([1, H], 0.53, 0.9, 0.2))
    fc2.bias.copy_(wave([1], 0.1, 0.1, 0.1))
sparse_opt = torch.optim.SparseAdam(emb.parameters(), lr=0.01)
dense_opt = torch.optim.Adam(list(fc1.parameters()) + list(fc2.parameters()), lr=0.01)
losses = []
for t in range(STEPS):
    ids, target = batch(t)
    sparse_opt.zero_grad()
    dense_opt.zero_grad()
    logits = fc2(torch.relu(fc1(emb(ids)))).squeeze(1)
    loss = F.binary_cross_entropy_with_logits(logits, target)
    loss.backward()
    sparse_opt.step()
    dense_opt.step()
    losses.append(loss.item())
print(f"// losses [{STEPS}]")
print("[" + ", ".join(repr(x) for x in losses) + "]")
w = emb.weight.detach()[batch(STEPS - 1)[0].reshape(-1)[:4]]
print(f"// last rows {list(w.shape)}")
print("[" + ", ".join(repr(float(x)) for x in w.reshape(-1)) + "]")
