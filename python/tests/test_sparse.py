"""Sparse tensors from Python against PyTorch itself: the same calls on both sides, with the
same inputs, give the same patterns, values, gradients, optimizer steps and printed text.
Needs PyTorch (the `pytorch` fixture of conftest.py: CI installs it and requires these to run)."""

import math

import pytest

import torchrs as torch


def _wave(lib, shape, a=0.7, b=0.3):
    n = math.prod(shape)
    return lib.tensor([math.sin(a * i + b) for i in range(n)], dtype=lib.float64).reshape(shape)


def _coo(lib):
    i = lib.tensor([[0, 1, 1, 0, 2], [2, 0, 2, 2, 3]])
    return lib.sparse_coo_tensor(i, _wave(lib, [5], 0.9, 0.2), (3, 4))


def _close(ours, theirs):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.reshape(-1).tolist() == pytest.approx(theirs.reshape(-1).tolist(), rel=1e-12, abs=1e-12)


def test_layouts_and_members_match(pytorch):
    s, p = _coo(torch), _coo(pytorch)
    assert s.layout is torch.sparse_coo and repr(torch.sparse_coo) == "torch.sparse_coo"
    assert s.is_sparse and not s.is_sparse_csr and not torch.tensor([1.0]).is_sparse
    assert (s._nnz(), s.sparse_dim(), s.dense_dim(), s.is_coalesced()) == (5, 2, 0, False)
    c, pc = s.coalesce(), p.coalesce()
    assert c.indices().tolist() == pc.indices().tolist()
    _close(c.values(), pc.values())
    _close(s.to_dense(), p.to_dense())
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        s.indices()
    r = s.to_sparse_csr()
    assert r.layout is torch.sparse_csr
    pr = p.to_sparse_csr()
    assert r.crow_indices().tolist() == pr.crow_indices().tolist()
    assert r.col_indices().tolist() == pr.col_indices().tolist()


def test_operators_match(pytorch):
    s, p = _coo(torch), _coo(pytorch)
    d, pd = _wave(torch, [3, 4], 0.3, 0.1), _wave(pytorch, [3, 4], 0.3, 0.1)
    m, pm = _wave(torch, [4, 2], 0.6, 0.4), _wave(pytorch, [4, 2], 0.6, 0.4)
    _close(d + s, pd + p)
    _close((s + s).to_dense(), (p + p).to_dense())
    assert (s + s)._nnz() == (p + p)._nnz()
    _close((s * 3).to_dense(), (p * 3).to_dense())
    _close(torch.sparse.mm(s, m), pytorch.sparse.mm(p, pm))
    _close(torch.mm(s.to_sparse_csr(), m), pytorch.mm(p.to_sparse_csr(), pm))
    _close(torch.sparse.sum(s, 1).to_dense(), pytorch.sparse.sum(p, 1).to_dense())
    _close(torch.sparse.sum(s), pytorch.sparse.sum(p))
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s + d


def test_softmax_hspmm_and_sspaddmm_match(pytorch):
    s, p = _coo(torch), _coo(pytorch)
    for d in (0, 1, -1):
        for f in ("softmax", "log_softmax"):
            ours, theirs = getattr(torch.sparse, f)(s, d), getattr(pytorch.sparse, f)(p, d)
            assert ours.indices().tolist() == theirs.indices().tolist()
            _close(ours.values(), theirs.values())
    m, pm = _wave(torch, [4, 3], 0.6, 0.4), _wave(pytorch, [4, 3], 0.6, 0.4)
    h, ph = torch.hspmm(s, m), pytorch.hspmm(p, pm)
    assert (h.sparse_dim(), h.dense_dim(), h._indices().tolist()) == (ph.sparse_dim(), ph.dense_dim(), ph._indices().tolist())
    _close(h._values(), ph._values())
    i = [[0, 2, 2], [1, 0, 0]]
    t = torch.sparse_coo_tensor(torch.tensor(i), _wave(torch, [3], 0.3, 0.9), (3, 3))
    pt = pytorch.sparse_coo_tensor(pytorch.tensor(i), _wave(pytorch, [3], 0.3, 0.9), (3, 3))
    r, pr = torch.sspaddmm(t, s, m, beta=0.5, alpha=2.0), pytorch.sspaddmm(pt, p, pm, beta=0.5, alpha=2.0)
    assert r._indices().tolist() == pr._indices().tolist()
    _close(r._values(), pr._values())


def test_printing_matches(pytorch):
    x = [[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]
    assert repr(torch.tensor(x).to_sparse()) == repr(pytorch.tensor(x).to_sparse())
    assert str(torch.tensor(x).to_sparse_csr()) == str(pytorch.tensor(x).to_sparse_csr())
    a = torch.tensor(x, requires_grad=True).to_sparse()
    assert repr(a).endswith("layout=torch.sparse_coo, grad_fn=<ToSparseBackward1>)") or "grad_fn=<" in repr(a)


def test_gradients_match(pytorch):
    def run(lib):
        v = _wave(lib, [5], 0.9, 0.2).requires_grad_()
        i = lib.tensor([[0, 1, 1, 0, 2], [2, 0, 2, 2, 3]])
        m = _wave(lib, [4, 3], 0.6, 0.4).requires_grad_()
        s = lib.sparse_coo_tensor(i, v, (3, 4))
        (lib.sparse.mm(s, m) * _wave(lib, [3, 3], 0.5, 0.5)).sum().backward()
        return v.grad, m.grad

    (v, m), (pv, pm) = run(torch), run(pytorch)
    _close(v, pv)
    _close(m, pm)


@pytest.mark.parametrize("name, kwargs", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adagrad", dict(lr=0.1)),
                                          ("SparseAdam", dict(lr=0.05))])
def test_sparse_embeddings_train_as_pytorchs(pytorch, name, kwargs):
    def run(lib):
        emb = lib.nn.Embedding(10, 4, sparse=True).double()
        with lib.no_grad():
            emb.weight.copy_(_wave(lib, [10, 4], 1.3, 0.1))
        opt = getattr(lib.optim, name)(emb.parameters(), **kwargs)
        ids = [lib.tensor([1, 3, 3, 0]), lib.tensor([9, 1, 3, 3])]
        for k in range(3):
            opt.zero_grad()
            (emb(ids[k % 2]) * _wave(lib, [4, 4], 0.5 + 0.1 * k, 0.2)).sum().backward()
            assert emb.weight.grad.is_sparse
            opt.step()
        return emb.weight

    _close(run(torch).detach(), run(pytorch).detach())


def test_sparse_gradients_are_refused_where_pytorch_refuses_them(pytorch):
    emb = torch.nn.Embedding(10, 4, sparse=True)
    emb(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="Adam does not support sparse gradients, please consider SparseAdam"):
        torch.optim.Adam(emb.parameters()).step()
    dense = torch.nn.Embedding(10, 4)
    dense(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        torch.optim.SparseAdam(dense.parameters()).step()
    bag = torch.nn.EmbeddingBag(10, 4, mode="mean", sparse=True)
    bag(torch.tensor([[1, 2], [2, 3]])).sum().backward()
    assert bag.weight.grad.is_sparse


def test_norms_and_clipping_take_sparse_gradients(pytorch):
    s, p = _coo(torch), _coo(pytorch)
    for order in [2.0, 1.0, float("inf"), 0.0]:
        _close(s.norm(order), p.norm(order))
        _close(torch.linalg.vector_norm(s, order), pytorch.linalg.vector_norm(p, order))

    def run(lib):
        emb = lib.nn.Embedding(10, 4, sparse=True).double()
        with lib.no_grad():
            emb.weight.copy_(_wave(lib, [10, 4], 1.3, 0.1))
        (emb(lib.tensor([1, 3, 3, 0])) * _wave(lib, [4, 4], 0.5, 0.2)).sum().backward()
        total = lib.nn.utils.clip_grad_norm_(emb.parameters(), 0.5)
        return total, emb.weight.grad

    (total, g), (ptotal, pg) = run(torch), run(pytorch)
    _close(total, ptotal)
    assert g.is_sparse and g._indices().tolist() == pg._indices().tolist()
    _close(g._values(), pg._values())


def test_batched_and_hybrid_csr_match(pytorch):
    def batched(lib):
        ar = lib.arange(24).reshape(2, 3, 4)
        return _wave(lib, [2, 3, 4], 0.35, 0.15).masked_fill((ar // 12 + ar // 4 % 3 + ar % 4) % 3 != 0, 0)

    b, pb = batched(torch).to_sparse_csr(), batched(pytorch).to_sparse_csr()
    assert b.crow_indices().tolist() == pb.crow_indices().tolist()
    assert b.col_indices().tolist() == pb.col_indices().tolist()
    assert (b._nnz(), b.dense_dim()) == (pb._nnz(), pb.dense_dim())
    _close(b.to_dense(), pb.to_dense())
    assert b.to_sparse()._indices().tolist() == pb.to_sparse()._indices().tolist()
    h, ph = _wave(torch, [3, 4, 2]).to_sparse_csr(dense_dim=1), _wave(pytorch, [3, 4, 2]).to_sparse_csr(dense_dim=1)
    assert (h.crow_indices().tolist(), h.dense_dim()) == (ph.crow_indices().tolist(), ph.dense_dim())
    _close(h.values(), ph.values())
    with pytest.raises(RuntimeError, match="Expect the same number of specified elements per batch."):
        torch.tensor([[[1.0, 0.0]], [[1.0, 1.0]]]).to_sparse_csr()
