"""Writes the expected values of nn/tests/nn/sparse.rs to sparse_expected.txt
(PyTorch 2.15: python3 gen_sparse.py > sparse_expected.txt).

Inputs are deterministic: `wave(shape, a, b)` is sin(a * arange(n) + b) in float64. Sparse results
are written as their dense form plus, where the pattern matters, `indices`/`values`/`nnz` of the
tensor as PyTorch returns it (coalesced or not).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def wave(shape, a=0.7, b=0.3):
    n = 1
    for s in shape:
        n *= s
    return torch.sin(a * torch.arange(n, dtype=torch.float64) + b).reshape(shape)


def show(name, t):
    t = t.detach()
    if t.layout != torch.strided:
        t = t.to_dense()
    vals = ", ".join(repr(float(v)) for v in t.reshape(-1))
    print(f"// {name} {list(t.shape)}\n[{vals}]")


def show_coo(name, s):
    """The pattern as stored: indices, values, and the coalesced flag as nnz (negated if not)."""
    show(name + " indices", s._indices().to(torch.float64))
    show(name + " values", s._values())
    flag = 1.0 if s.is_coalesced() else -1.0
    show(name + " nnz", torch.tensor([flag * s._nnz()], dtype=torch.float64))


# A [3, 4] with a duplicate position (0, 2); B hybrid [4, 2] (one dense dim), duplicate row 0.
IA = torch.tensor([[0, 1, 1, 0, 2], [2, 0, 2, 2, 3]])
VA = wave([5], 0.9, 0.2)
A = torch.sparse_coo_tensor(IA, VA, (3, 4))
IA2 = torch.tensor([[2, 0, 1], [3, 1, 0]])
A2 = torch.sparse_coo_tensor(IA2, wave([3], 0.5, 1.0), (3, 4))
IB = torch.tensor([[0, 2, 0]])
B = torch.sparse_coo_tensor(IB, wave([3, 2], 0.4, 0.7), (4, 2))
D = wave([3, 4], 0.3, 0.1)
M = wave([4, 3], 0.6, 0.4)

show("A dense", A)
show_coo("A coalesce", A.coalesce())
show("B dense", B)
show_coo("B coalesce", B.coalesce())
show_coo("dense to_sparse", D.masked_fill(D.abs() < 0.5, 0).to_sparse())
show_coo("hybrid to_sparse 1", wave([3, 2], 1.7, 0.0).masked_fill(torch.tensor([[True], [False], [True]]), 0).to_sparse(1))
show_coo("A + A2", A + A2)
show_coo("coalesced A + A2", A.coalesce() + A2.coalesce())
show("D + A", D + A)
show("D + 2.5 A", torch.add(D, A, alpha=2.5))
show("A * A2", A * A2)
show_coo("A * 3", A * 3)
show_coo("A * D", A * D)
show_coo("-A", -A)
show_coo("abs A", A.abs())
show_coo("sqrt abs A", A.abs().sqrt())
show_coo("A pow 3", A.pow(3))
show("sum A", torch.sum(A))
show("sparse.sum A 0", torch.sparse.sum(A, 0))
show("sparse.sum A 1", torch.sparse.sum(A, 1))
show("sparse.sum B 1", torch.sparse.sum(B, 1))
show("sparse.sum B 0", torch.sparse.sum(B, 0))
show_coo("A t", A.t())
show_coo("A index_select 1", A.index_select(1, torch.tensor([2, 0, 2])))
show_coo("A index_select 0", A.index_select(0, torch.tensor([1, 1])))
show_coo("A narrow_copy", A.narrow_copy(1, 1, 2))
show_coo("cat A A2 0", torch.cat([A, A2], 0))
show_coo("cat B B 1", torch.cat([B, B], 1))
show("A mm M", torch.mm(A, M))
show("sparse.mm A M", torch.sparse.mm(A, M))
show("addmm", torch.addmm(wave([3, 3], 0.2, 0.3), A, M, beta=0.5, alpha=2.0))
show_coo("A mm A2t", torch.mm(A, A2.t()))
show("A mv", torch.mv(A, wave([4], 0.8, 0.8)))
show("M mm A2", torch.mm(wave([2, 3], 0.9, 0.1), A2))
E = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (3, 4))
show("empty mm M", torch.mm(E, M))
show_coo("empty + A2", E + A2)
show_coo("sparse_mask", D.sparse_mask(A.coalesce()))

# Softmax over the stored elements (A uncoalesced, along each dim; hybrid B along its sparse
# and its dense dim), hspmm, and sspaddmm onto an uncoalesced self.
for d in [0, 1, -1]:
    show_coo(f"softmax A {d}", torch.sparse.softmax(A, d))
    show_coo(f"log_softmax A {d}", torch.sparse.log_softmax(A, d))
show_coo("softmax B 0", torch.sparse.softmax(B, 0))
show_coo("softmax B 1", torch.sparse.softmax(B, 1))
show_coo("log_softmax B 0", torch.sparse.log_softmax(B, 0))
show_coo("softmax A f32", torch.sparse.softmax(A, 1, dtype=torch.float32))
show_coo("softmax empty", torch.sparse.softmax(E.double(), 1))
show_coo("hspmm", torch.hspmm(A, M))
S33 = torch.sparse_coo_tensor(torch.tensor([[0, 2, 2], [1, 0, 0]]), wave([3], 0.3, 0.9), (3, 3))
show_coo("sspaddmm", torch.sspaddmm(S33, A, M, beta=0.5, alpha=2.0))
show_coo("sspaddmm empty", torch.sspaddmm(S33, E.double(), M))

# Gradients.
v = VA.clone().requires_grad_()
dm = M.clone().requires_grad_()
S = torch.sparse_coo_tensor(IA, v, (3, 4))
(torch.sparse.mm(S, dm) * wave([3, 3], 0.5, 0.5)).sum().backward()
show("grad sparse.mm values", v.grad)
show("grad sparse.mm dense", dm.grad)

v = VA.clone().requires_grad_()
S = torch.sparse_coo_tensor(IA, v, (3, 4))
(S.to_dense() * D).sum().backward()
show("grad to_dense values", v.grad)

v = VA.clone().requires_grad_()
S = torch.sparse_coo_tensor(IA, v, (3, 4))
(torch.sparse.sum(S, 1).to_dense() * wave([3], 1.1, 0.0)).sum().backward()
show("grad sparse.sum values", v.grad)

v = VA.clone().requires_grad_()
(torch.sparse_coo_tensor(IA, v, (3, 4)).coalesce().values() * wave([4], 0.7, 0.7)).sum().backward()
show("grad coalesce values", v.grad)

# PyTorch 2.15's backward of torch.sparse.softmax with dim=-1 is wrong (its dim=1 gradient,
# which a masked dense softmax confirms, differs); sparse.rs checks that -1 gives dim 1's.
for d, f in [(0, torch.sparse.softmax), (1, torch.sparse.log_softmax), (1, torch.sparse.softmax)]:
    v = VA.clone().requires_grad_()
    (f(torch.sparse_coo_tensor(IA, v, (3, 4)), d).to_dense() * D).sum().backward()
    show(f"grad {f.__name__} {d} values", v.grad)

for d, f in [(0, torch.sparse.softmax), (1, torch.sparse.log_softmax), (1, torch.sparse.softmax)]:
    vb = wave([3, 2], 0.4, 0.7).requires_grad_()
    (f(torch.sparse_coo_tensor(IB, vb, (4, 2)), d).to_dense() * wave([4, 2], 0.3, 0.3)).sum().backward()
    show(f"grad {f.__name__} B {d} values", vb.grad)


S = torch.sparse_coo_tensor(IA, VA, (3, 4)).requires_grad_()
(torch.sparse.mm(S, M) * wave([3, 3], 0.5, 0.5)).sum().backward()
show_coo("grad leaf sparse.mm", S.grad)

dd = D.clone().requires_grad_()
(dd.to_sparse() * wave([3, 4], 0.4, 0.9).to_sparse()).to_dense().sum().backward()
show("grad to_sparse", dd.grad)

# Embedding with sparse gradients.
ids = torch.tensor([[1, 3, 3, 0], [9, 1, 3, 3]])
go = wave([2, 4, 4], 0.9, 0.1)
for pad, scale in [(None, False), (3, False)]:
    w = wave([10, 4], 1.1, 0.5).requires_grad_()
    F.embedding(ids, w, padding_idx=pad, sparse=True, scale_grad_by_freq=scale).backward(go)
    show_coo(f"embedding sparse grad padding {pad} scale {scale}", w.grad)


# Optimizers over sparse gradients: three steps each, the same lookups every step.
def steps(make_opt, n=3):
    emb = nn.Embedding(10, 4, sparse=True).double()
    with torch.no_grad():
        emb.weight.copy_(wave([10, 4], 1.3, 0.1))
    opt = make_opt(emb.parameters())
    for k in range(n):
        opt.zero_grad()
        out = emb(ids[k % 2])
        (out * wave([4, 4], 0.5 + 0.1 * k, 0.2)).sum().backward()
        opt.step()
    return emb.weight


show("SGD sparse", steps(lambda p: torch.optim.SGD(p, lr=0.1)))
show("SGD momentum sparse", steps(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)))
show("SGD nesterov sparse", steps(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, dampening=0.0)))
show("Adagrad sparse", steps(lambda p: torch.optim.Adagrad(p, lr=0.1)))
show("SparseAdam", steps(lambda p: torch.optim.SparseAdam(p, lr=0.05)))
show("SparseAdam maximize", steps(lambda p: torch.optim.SparseAdam(p, lr=0.05, betas=(0.8, 0.9), maximize=True)))

# Norms of sparse tensors: the norm of the coalesced values (A stores (0, 2) twice).
for p in [2, 1, 3, float("inf"), float("-inf"), 0]:
    show(f"norm A {p}", A.norm(p))
show("vector_norm B", torch.linalg.vector_norm(B))
show("norm B all dims", torch.norm(B, 2, dim=(0, 1)))
show("norm A f32", A.float().norm())


# clip_grad_norm_ over a sparse embedding gradient (a looked-up row twice) and a dense one.
def clipped(norm_type):
    emb = nn.Embedding(10, 4, sparse=True).double()
    lin = nn.Linear(4, 2).double()
    with torch.no_grad():
        emb.weight.copy_(wave([10, 4], 1.3, 0.1))
        lin.weight.copy_(wave([2, 4], 0.7, 0.4))
        lin.bias.copy_(wave([2], 0.9, 0.1))
    (lin(emb(ids[0])) * wave([4, 2], 0.5, 0.2)).sum().backward()
    params = list(emb.parameters()) + list(lin.parameters())
    total = torch.nn.utils.clip_grad_norm_(params, 0.5, norm_type=norm_type)
    show(f"clip total {norm_type}", total)
    show_coo(f"clip emb grad {norm_type}", emb.weight.grad)
    show(f"clip lin grad {norm_type}", lin.weight.grad)


clipped(2.0)
clipped(float("inf"))

# CSR: row 1 empty.
DC = wave([4, 5], 0.8, 0.3).masked_fill(wave([4, 5], 0.8, 0.3).abs() < 0.6, 0)
DC[1] = 0
C = DC.to_sparse_csr()
show("C crow", C.crow_indices().to(torch.float64))
show("C col", C.col_indices().to(torch.float64))
show("C values", C.values())
show("C dense", C)
show_coo("C to_sparse", C.to_sparse())
AC = A.to_sparse_csr()
show("A csr crow", AC.crow_indices().to(torch.float64))
show("A csr col", AC.col_indices().to(torch.float64))
show("A csr values", AC.values())
MC = wave([5, 3], 0.45, 0.2)
show("C mm M", torch.mm(C, MC))
show("C addmm", torch.addmm(wave([4, 3], 0.2, 0.3), C, MC, beta=0.5, alpha=2.0))
show("C mv", torch.mv(C, wave([5], 0.8, 0.8)))
show("C + C", C + C)
show("D + C", wave([4, 5], 0.1, 0.1) + C)
show("C * 2", C * 2)
show("C sum", torch.sum(C))

# Batched CSR (two batches of [3, 4], four elements each) and hybrid CSR (a dense dim of 2).
ar = torch.arange(2 * 3 * 4).reshape(2, 3, 4)
BD = wave([2, 3, 4], 0.35, 0.15).masked_fill((ar // 12 + ar // 4 % 3 + ar % 4) % 3 != 0, 0)
BC = BD.to_sparse_csr()
show("BC crow", BC.crow_indices().to(torch.float64))
show("BC col", BC.col_indices().to(torch.float64))
show("BC values", BC.values())
show("BC dense", BC)
show_coo("BC to_sparse", BC.to_sparse())
show("BC * 2", BC * 2)
show("BC + BC", BC + BC)
show("BC sum", torch.sum(BC))
BCI = torch.sparse_csr_tensor(BC.crow_indices(), BC.col_indices(), BC.values())
show("BC inferred dense", BCI)
HD = wave([3, 4, 2], 0.55, 0.25).masked_fill((torch.arange(12).reshape(3, 4, 1) % 5 != 1), 0)
HC = HD.to_sparse_csr(dense_dim=1)
show("HC crow", HC.crow_indices().to(torch.float64))
show("HC col", HC.col_indices().to(torch.float64))
show("HC values", HC.values())
show("HC dense", HC)
show_coo("HC to_sparse", HC.to_sparse())

# A torch.save file with sparse tensors (nn/tests/nn/pt/sparse.pt), loaded by sparse.rs.
import os  # noqa: E402

torch.save({"coo": A, "coalesced": A.coalesce(), "hybrid": B, "csr": C, "empty": E},
           os.path.join(os.path.dirname(os.path.abspath(__file__)), "pt", "sparse.pt"))
