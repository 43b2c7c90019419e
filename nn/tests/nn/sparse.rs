//! Sparse COO tensors against PyTorch's numbers: construction, coalescing, conversion, the
//! operators with sparse kernels (uncoalesced inputs with duplicates, a hybrid tensor with a
//! dense dimension, an empty one), gradients through the constructor, `to_dense`,
//! `torch.sparse.mm` and `torch.sparse.sum`, `Embedding(sparse=true)`'s gradient, and SGD,
//! Adagrad and SparseAdam over sparse gradients. The expected values are in
//! `sparse_expected.txt`, written by `gen_sparse.py` with PyTorch 2.15 from the same inputs.

use aten::{ops, Tensor};
use autograd::TensorAutograd;
use c10::{DispatchKey, Layout, Result, Scalar, ScalarType};
use nn::optim::{Adagrad, Adam, Optimizer, SGDOptions, SparseAdam, SparseAdamOptions, SGD};
use nn::{Embedding, Forward, Module};

/// `sin(a * arange(n) + b)` in f64, reshaped: the inputs of `gen_sparse.py`.
fn wave(shape: &[i64], a: f64, b: f64) -> Tensor {
    let n: i64 = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| (a * i as f64 + b).sin()).collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn expected(name: &str) -> (Vec<f64>, Vec<i64>) {
    expected_in(include_str!("sparse_expected.txt"), name)
}

pub(crate) fn expected_in(text: &str, name: &str) -> (Vec<f64>, Vec<i64>) {
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("// ") else { continue };
        let (label, shape) = rest.rsplit_once(" [").expect("a shape");
        if label != name {
            continue;
        }
        let shape = shape.trim_end_matches(']').split(", ").filter(|s| !s.is_empty()).map(|s| s.parse().unwrap());
        let vals = lines.next().unwrap().trim_matches(|c| c == '[' || c == ']');
        let vals = vals.split(", ").filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
        return (vals, shape.collect());
    }
    panic!("no expected values named {name:?}");
}

/// Asserts `t` (its dense form if sparse) has the recorded shape and values.
fn check(name: &str, t: &Tensor) {
    let (want, shape) = expected(name);
    let d = ops::to_dense(t, None, None).unwrap();
    assert_eq!(d.sizes(), shape.as_slice(), "{name}: shape");
    let got = ops::to(&d, ScalarType::F64, false, false, None).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(got.len(), want.len(), "{name}: count");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{name}[{i}]: got {g}, expected {w}\n{got:?}\n{want:?}");
    }
}

/// Asserts the stored pattern of COO tensor `s`: indices, values, nnz and the coalesced flag,
/// as PyTorch stores them.
fn check_coo(name: &str, s: &Tensor) {
    assert_eq!(s.layout(), Layout::SparseCoo, "{name}: layout");
    check(&format!("{name} indices"), &ops::_indices(s).unwrap());
    check(&format!("{name} values"), &ops::_values(s).unwrap());
    let (want, _) = expected(&format!("{name} nnz"));
    let nnz = ops::_nnz(s).unwrap();
    assert_eq!(nnz, want[0].abs() as i64, "{name}: nnz");
    assert_eq!(ops::is_coalesced(s).unwrap(), want[0] > 0.0 || nnz == 0, "{name}: coalesced flag");
}

fn coo(indices: &[i64], sparse_dim: i64, values: Tensor, size: &[i64]) -> Tensor {
    let nnz = indices.len() as i64 / sparse_dim;
    let i = Tensor::from_vec(indices.to_vec(), &[sparse_dim, nnz]).unwrap();
    ops::sparse_coo_tensor(&i, &values, size, None, None, None, None, None).unwrap()
}

const IA: [i64; 10] = [0, 1, 1, 0, 2, 2, 0, 2, 2, 3];

fn a() -> Tensor {
    coo(&IA, 2, wave(&[5], 0.9, 0.2), &[3, 4])
}
fn a2() -> Tensor {
    coo(&[2, 0, 1, 3, 1, 0], 2, wave(&[3], 0.5, 1.0), &[3, 4])
}
fn b() -> Tensor {
    coo(&[0, 2, 0], 1, wave(&[3, 2], 0.4, 0.7), &[4, 2])
}

fn masked(t: &Tensor, below: f64) -> Tensor {
    let m = ops::lt_scalar(&ops::abs(t).unwrap(), Scalar::Float(below)).unwrap();
    ops::masked_fill(t, &m, Scalar::Int(0)).unwrap()
}

#[test]
fn construction_coalescing_and_conversion_match_pytorch() -> Result<()> {
    let a = a();
    assert_eq!(a.layout(), Layout::SparseCoo);
    assert!(a.key_set().has(DispatchKey::SparseCPU) && a.key_set().has(DispatchKey::AutogradCPU));
    assert!(!a.key_set().has(DispatchKey::CPU));
    assert_eq!((ops::sparse_dim(&a)?, ops::dense_dim(&a)?, ops::_nnz(&a)?), (2, 0, 5));
    assert!(!ops::is_coalesced(&a)?);
    check("A dense", &a);
    check_coo("A coalesce", &ops::coalesce(&a)?);
    check("B dense", &b());
    check_coo("B coalesce", &ops::coalesce(&b())?);
    assert_eq!(ops::dense_dim(&b())?, 1);
    let d = wave(&[3, 4], 0.3, 0.1);
    check_coo("dense to_sparse", &ops::to_sparse_op(&masked(&d, 0.5), None, None, None)?);
    let h = wave(&[3, 2], 1.7, 0.0);
    let rows = Tensor::from_vec(vec![true, false, true], &[3, 1])?;
    check_coo("hybrid to_sparse 1", &ops::to_sparse(&ops::masked_fill(&h, &rows, Scalar::Int(0))?, 1)?);
    // A coalesced tensor is its own coalesce; values() needs one.
    let c = ops::coalesce(&a)?;
    assert!(ops::coalesce(&c)?.is_same(&c));
    let e = ops::values(&a).expect_err("uncoalesced").to_string();
    assert!(e.contains("Cannot get values on an uncoalesced tensor, please call .coalesce() first"), "{e}");
    assert_eq!(ops::values(&c)?.sizes(), &[4]);
    // Inferred sizes: one past the largest index.
    let i = Tensor::from_vec(vec![0i64, 4, 1, 2], &[2, 2])?;
    let s = ops::sparse_coo_tensor_indices(&i, &wave(&[2, 3], 1.0, 0.0), None, None, None, None, None)?;
    assert_eq!(s.sizes(), &[5, 3, 3]);
    // An empty tensor.
    let e = ops::sparse_coo_tensor_size(&[3, 4], Some(ScalarType::F64), None, None, None)?;
    assert_eq!((ops::_nnz(&e)?, e.dtype()), (0, ScalarType::F64));
    assert_eq!(ops::to_dense(&e, None, None)?.to_vec::<f64>()?, vec![0.0; 12]);
    Ok(())
}

#[test]
fn operators_match_pytorch() -> Result<()> {
    let (a, a2, b) = (a(), a2(), b());
    let d = wave(&[3, 4], 0.3, 0.1);
    let m = wave(&[4, 3], 0.6, 0.4);
    let one = Scalar::Int(1);
    check_coo("A + A2", &ops::add(&a, &a2, one)?);
    check_coo("coalesced A + A2", &ops::add(&ops::coalesce(&a)?, &ops::coalesce(&a2)?, one)?);
    check("D + A", &ops::add(&d, &a, one)?);
    check("D + 2.5 A", &ops::add(&d, &a, Scalar::Float(2.5))?);
    check("A * A2", &ops::mul(&a, &a2)?);
    check_coo("A * 3", &ops::mul_scalar(&a, Scalar::Int(3))?);
    check_coo("A * D", &ops::mul(&a, &d)?);
    check_coo("-A", &ops::neg(&a)?);
    check_coo("abs A", &ops::abs(&a)?);
    check_coo("sqrt abs A", &ops::sqrt(&ops::abs(&a)?)?);
    check_coo("A pow 3", &ops::pow_tensor_scalar(&a, Scalar::Int(3))?);
    check("sum A", &ops::sum(&a, None)?);
    check("sparse.sum A 0", &ops::_sparse_sum_dim(&a, &[0])?);
    check("sparse.sum A 1", &ops::_sparse_sum_dim(&a, &[1])?);
    check("sparse.sum B 1", &ops::_sparse_sum_dim(&b, &[1])?);
    check("sparse.sum B 0", &ops::_sparse_sum_dim(&b, &[0])?);
    assert_eq!(ops::_sparse_sum_dim(&b, &[0])?.layout(), Layout::Strided);
    check_coo("A t", &ops::t(&a)?);
    check_coo("A index_select 1", &ops::index_select(&a, 1, &Tensor::from_slice(&[2i64, 0, 2]))?);
    check_coo("A index_select 0", &ops::index_select(&a, 0, &Tensor::from_slice(&[1i64, 1]))?);
    check_coo("A narrow_copy", &ops::narrow_copy(&a, 1, 1, 2)?);
    check_coo("cat A A2 0", &ops::cat(&[a.clone(), a2.clone()], 0)?);
    check_coo("cat B B 1", &ops::cat(&[b.clone(), b.clone()], 1)?);
    check("A mm M", &ops::mm(&a, &m)?);
    check("sparse.mm A M", &ops::_sparse_mm(&a, &m)?);
    check("addmm", &ops::addmm(&wave(&[3, 3], 0.2, 0.3), &a, &m, Scalar::Float(0.5), Scalar::Float(2.0))?);
    check_coo("A mm A2t", &ops::mm(&a, &ops::t(&a2)?)?);
    check("A mv", &ops::mv(&a, &wave(&[4], 0.8, 0.8))?);
    check("M mm A2", &ops::mm(&wave(&[2, 3], 0.9, 0.1), &a2)?);
    let empty = ops::sparse_coo_tensor(
        &ops::zeros(&[2, 0], Some(ScalarType::I64), None, None, None)?,
        &ops::zeros(&[0], Some(ScalarType::F64), None, None, None)?,
        &[3, 4],
        None,
        None,
        None,
        None,
        None,
    )?;
    check("empty mm M", &ops::mm(&empty, &m)?);
    check_coo("empty + A2", &ops::add(&empty, &a2, one)?);
    check_coo("sparse_mask", &ops::sparse_mask(&d, &ops::coalesce(&a)?)?);
    // A sparse `self` is read at the mask's positions (zero where it stores nothing), not made
    // dense: the same values as its dense form gives.
    let from_sparse = ops::sparse_mask(&a2, &ops::coalesce(&a)?)?;
    let from_dense = ops::sparse_mask(&ops::to_dense(&a2, None, None)?, &ops::coalesce(&a)?)?;
    assert_eq!(ops::_values(&from_sparse)?.to_vec::<f64>()?, ops::_values(&from_dense)?.to_vec::<f64>()?);
    // Dimensions far longer than what is stored: index_select and sparse @ sparse work from
    // the stored elements (no table as long as a dimension).
    let huge = 1i64 << 40;
    let tall = coo(&[5, huge - 1, 0, 3], 2, wave(&[2], 1.0, 0.5), &[huge, 4]);
    let picked = ops::index_select(&tall, 0, &Tensor::from_slice(&[huge - 1, 5, huge - 1]))?;
    assert_eq!((picked.sizes(), ops::_nnz(&picked)?), (&[3i64, 4][..], 3));
    let wide = coo(&[0, 1, 5, huge - 1], 2, wave(&[2], 1.0, 0.5), &[2, huge]);
    let p = ops::mm(&wide, &tall)?;
    assert_eq!((p.sizes(), ops::_nnz(&p)?), (&[2i64, 4][..], 2));
    // In place: dense += sparse, sparse += sparse, sparse *= scalar, zero_.
    let dd = ops::clone(&d, None)?;
    ops::add_(&dd, &a, Scalar::Float(2.5))?;
    check("D + 2.5 A", &dd);
    let s = ops::clone(&a, None)?;
    ops::add_(&s, &a2, one)?;
    check_coo("A + A2", &s);
    ops::mul_scalar_(&s, Scalar::Int(0))?;
    assert_eq!(ops::to_dense(&s, None, None)?.to_vec::<f64>()?, vec![0.0; 12]);
    ops::zero_(&s)?;
    assert_eq!(ops::_nnz(&s)?, 0);
    // A conversion keeps the pattern.
    let f = ops::_to_copy(&a, Some(ScalarType::F32), None, None, None, false, None)?;
    assert_eq!((f.layout(), f.dtype(), ops::_nnz(&f)?), (Layout::SparseCoo, ScalarType::F32, 5));
    Ok(())
}

#[test]
fn gradients_through_sparse_tensors_match_pytorch() -> Result<()> {
    let ia = Tensor::from_vec(IA.to_vec(), &[2, 5])?;
    let mk = |v: &Tensor| ops::sparse_coo_tensor(&ia, v, &[3, 4], None, None, None, None, None);
    let m = wave(&[4, 3], 0.6, 0.4);
    let w = wave(&[3, 3], 0.5, 0.5);

    let v = wave(&[5], 0.9, 0.2).requires_grad_(true)?;
    let dm = m.clone().requires_grad_(true)?;
    ops::_sparse_mm(&mk(&v)?, &dm)?.mul(&w)?.sum().call()?.backward()?;
    check("grad sparse.mm values", &v.grad().unwrap());
    check("grad sparse.mm dense", &dm.grad().unwrap());

    let v = wave(&[5], 0.9, 0.2).requires_grad_(true)?;
    ops::to_dense(&mk(&v)?, None, None)?.mul(&wave(&[3, 4], 0.3, 0.1))?.sum().call()?.backward()?;
    check("grad to_dense values", &v.grad().unwrap());

    let v = wave(&[5], 0.9, 0.2).requires_grad_(true)?;
    let s = ops::to_dense(&ops::_sparse_sum_dim(&mk(&v)?, &[1])?, None, None)?;
    s.mul(&wave(&[3], 1.1, 0.0))?.sum().call()?.backward()?;
    check("grad sparse.sum values", &v.grad().unwrap());

    let v = wave(&[5], 0.9, 0.2).requires_grad_(true)?;
    ops::values(&ops::coalesce(&mk(&v)?)?)?.mul(&wave(&[4], 0.7, 0.7))?.sum().call()?.backward()?;
    check("grad coalesce values", &v.grad().unwrap());

    // A sparse leaf: torch.sparse.mm's gradient keeps its pattern.
    let s = mk(&wave(&[5], 0.9, 0.2))?.requires_grad_(true)?;
    ops::_sparse_mm(&s, &m)?.mul(&w)?.sum().call()?.backward()?;
    let g = s.grad().unwrap();
    assert_eq!(g.layout(), Layout::SparseCoo);
    check_coo("grad leaf sparse.mm", &g);

    let dd = wave(&[3, 4], 0.3, 0.1).requires_grad_(true)?;
    let sp = ops::to_sparse_op(&dd, None, None, None)?;
    let other = ops::to_sparse_op(&wave(&[3, 4], 0.4, 0.9), None, None, None)?;
    ops::to_dense(&ops::mul(&sp, &other)?, None, None)?.sum().call()?.backward()?;
    check("grad to_sparse", &dd.grad().unwrap());
    Ok(())
}

#[test]
fn sparse_embedding_gradients_match_pytorch() -> Result<()> {
    let ids = Tensor::from_vec(vec![1i64, 3, 3, 0, 9, 1, 3, 3], &[2, 4])?;
    let go = wave(&[2, 4, 4], 0.9, 0.1);
    for pad in [None, Some(3)] {
        let w = wave(&[10, 4], 1.1, 0.5).requires_grad_(true)?;
        let out = ops::embedding(&w, &ids, pad.unwrap_or(-1), false, true)?;
        out.backward_with(Some(&go), None, false)?;
        let name =
            format!("embedding sparse grad padding {} scale False", pad.map_or("None".into(), |p: i64| p.to_string()));
        check_coo(&name, &w.grad().unwrap());
    }
    let w = wave(&[10, 4], 1.1, 0.5).requires_grad_(true)?;
    let out = ops::embedding(&w, &ids, -1, true, true)?;
    let e = out.backward_with(Some(&go), None, false).expect_err("PyTorch refuses it").to_string();
    assert!(e.contains("scale_grad_by_freq not supported with sparse gradients"), "{e}");
    // Two backward passes of a sum: the sparse gradients (views of an expanded gradient)
    // add up by concatenation, 16 entries, as PyTorch's (Note [The pattern of a sparse sum]).
    let w = wave(&[10, 4], 1.1, 0.5).requires_grad_(true)?;
    for _ in 0..2 {
        ops::embedding(&w, &ids, -1, false, true)?.sum().call()?.backward()?;
    }
    let g = w.grad().unwrap();
    assert_eq!((g.layout(), ops::_nnz(&g)?, ops::is_coalesced(&g)?), (Layout::SparseCoo, 16, false));
    let twice = ops::to_dense(&g, None, None)?;
    let w1 = wave(&[10, 4], 1.1, 0.5).requires_grad_(true)?;
    ops::embedding(&w1, &ids, -1, false, true)?.sum().call()?.backward()?;
    let single = ops::to_dense(&w1.grad().unwrap(), None, None)?;
    let want = ops::mul_scalar(&single, Scalar::Int(2))?.to_vec::<f64>()?;
    for (g, w) in twice.to_vec::<f64>()?.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{g} vs {w}");
    }
    Ok(())
}

/// Three optimizer steps on an `Embedding(10, 4, sparse=True)` in f64, as `gen_sparse.py`'s
/// `steps`.
fn steps(name: &str, make: impl FnOnce(Vec<nn::Parameter>) -> Result<Box<dyn Optimizer>>) -> Result<()> {
    let mut emb = Embedding::new(10, 4)?.with_sparse(true);
    emb.to_dtype(ScalarType::F64)?;
    {
        let _g = autograd::no_grad();
        ops::copy_(&emb.weight, &wave(&[10, 4], 1.3, 0.1), false)?;
    }
    let mut opt = make(emb.parameters())?;
    let ids = [Tensor::from_slice(&[1i64, 3, 3, 0]), Tensor::from_slice(&[9i64, 1, 3, 3])];
    for k in 0..3 {
        opt.zero_grad(true)?;
        let out = emb.forward(&ids[k % 2])?;
        out.mul(&wave(&[4, 4], 0.5 + 0.1 * k as f64, 0.2))?.sum().call()?.backward()?;
        assert_eq!(emb.weight.grad().unwrap().layout(), Layout::SparseCoo);
        opt.step()?;
    }
    check(name, &emb.weight);
    Ok(())
}

#[test]
fn optimizers_over_sparse_gradients_match_pytorch() -> Result<()> {
    steps("SGD sparse", |p| Ok(Box::new(SGD::new(p, 0.1)?)))?;
    steps("SGD momentum sparse", |p| Ok(Box::new(SGD::new(p, SGDOptions::from(0.1).momentum(0.9))?)))?;
    steps("SGD nesterov sparse", |p| Ok(Box::new(SGD::new(p, SGDOptions::from(0.1).momentum(0.9).nesterov(true))?)))?;
    steps("Adagrad sparse", |p| Ok(Box::new(Adagrad::new(p, 0.1)?)))?;
    steps("SparseAdam", |p| Ok(Box::new(SparseAdam::new(p, 0.05)?)))?;
    steps("SparseAdam maximize", |p| {
        Ok(Box::new(SparseAdam::new(p, SparseAdamOptions::from(0.05).betas(0.8, 0.9).maximize(true))?))
    })?;
    // The refusals, in PyTorch's words.
    let err = |make: &dyn Fn(Vec<nn::Parameter>) -> Result<Box<dyn Optimizer>>| {
        let emb = Embedding::new(10, 4).unwrap().with_sparse(true);
        let mut opt = make(emb.parameters()).unwrap();
        emb.forward(&Tensor::from_slice(&[1i64, 2])).unwrap().sum().call().unwrap().backward().unwrap();
        opt.step().expect_err("refused").to_string()
    };
    let e = err(&|p| Ok(Box::new(Adam::new(p, 0.1)?)));
    assert!(e.contains("Adam does not support sparse gradients, please consider SparseAdam instead"), "{e}");
    let e = err(&|p| Ok(Box::new(SGD::new(p, SGDOptions::from(0.1).weight_decay(0.1))?)));
    assert!(e.contains("add(sparse, dense) is not supported. Use add(dense, sparse) instead."), "{e}");
    let e = err(&|p| Ok(Box::new(Adagrad::new(p, nn::optim::AdagradOptions::from(0.1).weight_decay(0.1))?)));
    assert!(e.contains("weight_decay option is not compatible with sparse gradients"), "{e}");
    let e = err(&|p| Ok(Box::new(nn::optim::RMSprop::new(p, 0.1)?)));
    assert!(e.contains("RMSprop does not support sparse gradients"), "{e}");
    // SparseAdam refuses dense gradients.
    let emb = Embedding::new(10, 4)?;
    let mut opt = SparseAdam::new(emb.parameters(), 0.1)?;
    emb.forward(&Tensor::from_slice(&[1i64, 2]))?.sum().call()?.backward()?;
    let e = opt.step().expect_err("dense").to_string();
    assert!(e.contains("SparseAdam does not support dense gradients, please consider Adam instead"), "{e}");
    let e = SparseAdam::new(Embedding::new(3, 2)?.parameters(), 0.0).err().expect("lr 0").to_string();
    assert!(e.contains("Invalid learning rate: 0.0"), "{e}");
    Ok(())
}

#[test]
fn bad_input_is_an_error_in_pytorchs_words() -> Result<()> {
    let v = wave(&[2], 1.0, 0.0);
    let i = |data: Vec<i64>, shape: &[i64]| Tensor::from_vec(data, shape).unwrap();
    let mk = |ix: &Tensor, v: &Tensor, size: &[i64]| {
        ops::sparse_coo_tensor(ix, v, size, None, None, None, None, None).expect_err("bad input").to_string()
    };
    let e = mk(&i(vec![0, 5], &[1, 2]), &v, &[2]);
    assert!(e.contains("size is inconsistent with indices: for dim 0, size is 2 but found index 5"), "{e}");
    let e = mk(&i(vec![0, -1], &[1, 2]), &v, &[2]);
    assert!(e.contains("found negative index -1 for dim 0"), "{e}");
    let e = mk(&i(vec![0, 1, 1], &[1, 3]), &v, &[2]);
    assert!(
        e.contains("indices and values must have same nnz, but got nnz from indices: 3, nnz from values: 2"),
        "{e}"
    );
    let e = mk(&i(vec![0, 1], &[1, 2]), &wave(&[2, 3], 1.0, 0.0), &[2, 4]);
    assert!(e.contains("values has incorrect size, expected [2, 4], got [2, 3]"), "{e}");
    let e = mk(&i(vec![0, 1], &[1, 2]), &v, &[2, 2]);
    assert!(e.contains("number of dimensions must be sparse_dim (1) + dense_dim (0), but got 2"), "{e}");
    let f = ops::sparse_coo_tensor(
        &ops::to(&i(vec![0, 1], &[1, 2]), ScalarType::I32, false, false, None)?,
        &v,
        &[2],
        None,
        None,
        None,
        None,
        None,
    );
    assert!(f.expect_err("int32").to_string().contains("indices must be an int64 tensor"));
    // An operator without a sparse kernel: the dispatcher's error naming the key.
    let a = a();
    let e = ops::cumsum(&a, 0, None).expect_err("no kernel").to_string();
    assert!(e.contains("Could not run 'aten::cumsum' with arguments from the 'SparseCPU' backend"), "{e}");
    let e = ops::view(&a, &[12]).expect_err("no kernel").to_string();
    assert!(e.contains("'SparseCPU' backend"), "{e}");
    // Strided-only paths refuse instead of reading memory the tensor does not have.
    let e = a.to_vec::<f64>().expect_err("no storage").to_string();
    assert!(e.contains("Cannot access data pointer of Tensor that doesn't have storage"), "{e}");
    assert!(a.typed_data_ptr::<f64>().is_err());
    let e = ops::add(&a, &wave(&[3, 4], 1.0, 0.0), Scalar::Int(1)).expect_err("sparse + dense").to_string();
    assert!(e.contains("add(sparse, dense) is not supported. Use add(dense, sparse) instead."), "{e}");
    let e = ops::mm(&a, &wave(&[3, 3], 1.0, 0.0)).expect_err("shapes").to_string();
    assert!(e.contains("mat1 and mat2 shapes cannot be multiplied (3x4 and 3x3)"), "{e}");
    let e = ops::pow_tensor_scalar(&a, Scalar::Int(0)).expect_err("zero power").to_string();
    assert!(e.contains("cannot raise to zeroth power on sparse tensor"), "{e}");
    // In place, PyTorch's canCast: a wider result may land in a narrower float, not in an int.
    let a32 = ops::_to_copy(&a, Some(ScalarType::F32), None, None, None, false, None)?;
    ops::add_(&a32, &a, Scalar::Int(1))?;
    assert_eq!(a32.dtype(), ScalarType::F32);
    let want = ops::mul_scalar(&ops::to_dense(&a, None, None)?, Scalar::Int(2))?.to_vec::<f64>()?;
    for (g, w) in ops::to_dense(&a32, None, None)?.to_vec::<f64>()?.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 * (1.0 + w.abs()), "{g} vs {w}");
    }
    let ints = coo(&[0, 1], 1, Tensor::from_slice(&[1i64, 2]), &[2]);
    let e = ops::mul_scalar_(&ints, Scalar::Float(2.5)).expect_err("float into long").to_string();
    assert!(e.contains("can't be cast to the desired output type"), "{e}");
    let fsp = coo(&[0, 1], 1, wave(&[2], 1.0, 0.0), &[2]);
    let e = ops::add_(&Tensor::from_slice(&[1i64, 2]), &fsp, Scalar::Int(1)).expect_err("long += float").to_string();
    assert!(e.contains("can't be cast to the desired output type"), "{e}");
    // A crow_indices without elements, negative sizes: errors, not panics.
    let none = Tensor::from_vec(Vec::<i64>::new(), &[0])?;
    assert!(ops::sparse_csr_tensor_crow_col_value(&none, &none, &wave(&[0], 1.0, 0.0), None, None, None, None).is_err());
    let crow = Tensor::from_slice(&[0i64]);
    let e = ops::sparse_csr_tensor(&crow, &none, &wave(&[0], 1.0, 0.0), &[-1, 2], None, None, None, None);
    assert!(e.expect_err("negative size").to_string().contains("negative dimension"));
    // An index checked where it is used: a tensor built unchecked with a bad index.
    let bad = aten::native::sparse::new_coo(&[2], &i(vec![0, 7], &[1, 2]), &v, false)?;
    let e = ops::to_dense(&bad, None, None).expect_err("bad index").to_string();
    assert!(e.contains("size is 2 but found index 7"), "{e}");
    Ok(())
}

/// `gen_sparse_recsys.py`'s `wave`: float64 then float32.
fn wave32(shape: &[i64], a: f64, b: f64, scale: f64) -> Tensor {
    let n: i64 = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((a * i as f64 + b).sin() * scale) as f32).collect();
    Tensor::from_vec(v, shape).unwrap()
}

#[test]
fn an_embedding_recommendation_model_trains_as_pytorchs() -> Result<()> {
    // The model, data and optimizers of gen_sparse_recsys.py; its 100 losses are the fixture.
    let (v, d, h, b, l) = (100_000i64, 64i64, 32i64, 32i64, 8i64);
    let emb = nn::EmbeddingBag::new(v, d, nn::BagMode::Mean)?.with_sparse(true);
    let fc1 = nn::Linear::new(d, h)?;
    let fc2 = nn::Linear::new(h, 1)?;
    {
        let _g = autograd::no_grad();
        let set = |p: &Tensor, t: Tensor| ops::copy_(p, &t, false).map(|_| ());
        set(&emb.weight, wave32(&[v, d], 0.37, 0.1, 0.5))?;
        set(&fc1.weight, wave32(&[h, d], 0.71, 0.2, 0.1))?;
        set(fc1.bias.as_ref().unwrap(), wave32(&[h], 0.3, 0.5, 0.1))?;
        set(&fc2.weight, wave32(&[1, h], 0.53, 0.9, 0.2))?;
        set(fc2.bias.as_ref().unwrap(), wave32(&[1], 0.1, 0.1, 0.1))?;
    }
    let mut sparse_opt = SparseAdam::new(emb.parameters(), 0.01)?;
    let dense: Vec<nn::Parameter> = fc1.parameters().into_iter().chain(fc2.parameters()).collect();
    let mut dense_opt = Adam::new(dense, 0.01)?;
    let batch = |t: i64| -> Result<(Tensor, Tensor)> {
        let ids: Vec<i64> = (0..b * l).map(|k| ((k * 2654435761 + t * 40503) % 2000) * 50 + k % 7).collect();
        let target: Vec<f32> =
            (0..b).map(|i| if (i as f64 * 1.3 + t as f64).sin() > 0.0 { 1.0 } else { 0.0 }).collect();
        Ok((Tensor::from_vec(ids, &[b, l])?, Tensor::from_vec(target, &[b])?))
    };
    let (want, _) = expected_in(include_str!("sparse_recsys_expected.txt"), "losses");
    let mut worst = 0.0f64;
    for (t, w) in want.iter().enumerate() {
        let (ids, target) = batch(t as i64)?;
        sparse_opt.zero_grad(true)?;
        dense_opt.zero_grad(true)?;
        let hidden = ops::relu(&fc1.forward(&emb.forward_bags(&ids, None, None)?)?)?;
        let logits = ops::squeeze_dim(&fc2.forward(&hidden)?, 1)?;
        let loss = ops::binary_cross_entropy_with_logits(&logits, &target, None, None, 1)?;
        loss.backward()?;
        assert_eq!(emb.weight.grad().unwrap().layout(), Layout::SparseCoo);
        sparse_opt.step()?;
        dense_opt.step()?;
        let got = loss.item::<f64>()?;
        worst = worst.max((got - w).abs() / w.abs());
        assert!((got - w).abs() <= 1e-5 * w.abs(), "step {t}: loss {got}, PyTorch {w}");
    }
    // The rows of the last batch, after 100 steps.
    let (want_rows, _) = expected_in(include_str!("sparse_recsys_expected.txt"), "last rows");
    let last = batch(want.len() as i64 - 1)?.0;
    let first4 = ops::narrow(&ops::reshape(&last, &[-1])?, 0, 0, 4)?;
    let rows = ops::index_select(&emb.weight, 0, &first4)?.to_vec::<f32>()?;
    for (g, w) in rows.iter().zip(&want_rows) {
        assert!((*g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()), "row value {g} vs PyTorch {w}");
    }
    eprintln!("recommendation model: worst relative loss difference over 100 steps {worst:.2e}");
    Ok(())
}

#[test]
fn compressed_rows_match_pytorch() -> Result<()> {
    let w = wave(&[4, 5], 0.8, 0.3);
    let mut dc = masked(&w, 0.6);
    ops::fill_(&ops::select(&dc, 0, 1)?, Scalar::Int(0))?;
    dc = ops::clone(&dc, None)?;
    let c = ops::to_sparse_csr(&dc, None)?;
    assert_eq!(c.layout(), Layout::SparseCsr);
    assert!(c.key_set().has(DispatchKey::SparseCsrCPU));
    check("C crow", &ops::crow_indices(&c)?);
    check("C col", &ops::col_indices(&c)?);
    check("C values", &ops::values(&c)?);
    check("C dense", &c);
    check_coo("C to_sparse", &ops::to_sparse(&c, 2)?);
    let ac = ops::to_sparse_csr(&a(), None)?;
    check("A csr crow", &ops::crow_indices(&ac)?);
    check("A csr col", &ops::col_indices(&ac)?);
    check("A csr values", &ops::values(&ac)?);
    let mc = wave(&[5, 3], 0.45, 0.2);
    check("C mm M", &ops::mm(&c, &mc)?);
    check("C addmm", &ops::addmm(&wave(&[4, 3], 0.2, 0.3), &c, &mc, Scalar::Float(0.5), Scalar::Float(2.0))?);
    check("C mv", &ops::mv(&c, &wave(&[5], 0.8, 0.8))?);
    let cc = ops::add(&c, &c, Scalar::Int(1))?;
    assert_eq!(cc.layout(), Layout::SparseCsr);
    check("C + C", &cc);
    check("D + C", &ops::add(&wave(&[4, 5], 0.1, 0.1), &c, Scalar::Int(1))?);
    check("C * 2", &ops::mul_scalar(&c, Scalar::Int(2))?);
    check("C sum", &ops::sum(&c, None)?);
    // Built from members; PyTorch's invariant checks in its words.
    let t = |v: Vec<i64>| Tensor::from_vec(v.clone(), &[v.len() as i64]).unwrap();
    let vals = wave(&[2], 1.0, 0.0);
    let ok = ops::sparse_csr_tensor(&t(vec![0, 1, 2]), &t(vec![1, 0]), &vals, &[2, 2], None, None, None, None)?;
    assert_eq!(ops::to_dense(&ok, None, None)?.to_vec::<f64>()?, vec![0.0, 0.0, 1f64.sin(), 0.0]);
    let bad = |crow: Vec<i64>, col: Vec<i64>, n: i64| {
        let v = wave(&[n], 1.0, 0.0);
        ops::sparse_csr_tensor(&t(crow), &t(col), &v, &[2, 2], None, None, None, None).expect_err("bad").to_string()
    };
    assert!(bad(vec![1, 1, 2], vec![0, 1], 2).contains("`crow_indices[..., 0] == 0` is not satisfied."));
    assert!(bad(vec![0, 2, 1], vec![0, 1], 2).contains("`crow_indices[..., -1] == nnz` is not satisfied."));
    assert!(bad(vec![0, 3, 3], vec![0, 1, 2], 3)
        .contains("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not satisfied."));
    assert!(bad(vec![0, 2, 2], vec![0, 5], 2).contains("`0 <= col_indices < ncols` is not satisfied."));
    let e = bad(vec![0, 2, 2], vec![1, 0], 2);
    assert!(e.contains("are sorted and distinct along the last dimension values` is not satisfied."), "{e}");
    let e = bad(vec![0, 1, 2, 2], vec![0, 1], 2);
    assert!(e.contains("crow_indices.shape[-1] must be equal to the number of rows + 1 (=3), but got 4"), "{e}");
    let e = bad(vec![0, 1, 2], vec![0, 1], 3);
    assert!(
        e.contains("col_indices.shape[-1] must be equal to nnz (=3) as defined by values.shape[0], but got 2"),
        "{e}"
    );
    let e = ops::is_coalesced(&c).expect_err("COO only").to_string();
    assert!(e.contains("is_coalesced expected sparse coordinate tensor layout but got SparseCsr"), "{e}");
    let e = ops::cumsum(&c, 0, None).expect_err("no kernel").to_string();
    assert!(e.contains("'SparseCsrCPU' backend"), "{e}");
    Ok(())
}

#[test]
fn sparse_tensors_print_as_pytorchs() -> Result<()> {
    // PyTorch 2.15's str() of the same tensors.
    let d = Tensor::from_vec(vec![0.0f32, 1.0, 0.0, 2.0, 0.0, 3.0], &[2, 3])?;
    assert_eq!(
        ops::to_sparse(&d, 2)?.to_string(),
        "tensor(indices=tensor([[0, 1, 1],\n                       [1, 0, 2]]),\n       values=tensor([1., 2., 3.]),\n       size=(2, 3), nnz=3, layout=torch.sparse_coo)"
    );
    assert_eq!(
        ops::to_sparse_csr(&d, None)?.to_string(),
        "tensor(crow_indices=tensor([0, 1, 3]),\n       col_indices=tensor([1, 0, 2]),\n       values=tensor([1., 2., 3.]), size=(2, 3), nnz=3,\n       layout=torch.sparse_csr)"
    );
    let z = ops::to_sparse(&ops::zeros(&[2, 3], Some(ScalarType::F64), None, None, None)?, 2)?;
    assert_eq!(
        z.to_string(),
        "tensor(indices=tensor([], size=(2, 0)),\n       values=tensor([], size=(0,)),\n       size=(2, 3), nnz=0, dtype=torch.float64, layout=torch.sparse_coo)"
    );
    let h = coo(&[0, 1], 1, ops::ones(&[2, 2], Some(ScalarType::F32), None, None, None)?, &[3, 2]);
    assert_eq!(
        h.to_string(),
        "tensor(indices=tensor([[0, 1]]),\n       values=tensor([[1., 1.],\n                      [1., 1.]]),\n       size=(3, 2), nnz=2, layout=torch.sparse_coo)"
    );
    Ok(())
}

#[test]
fn sparse_tensors_load_from_pytorch_archives() -> Result<()> {
    // gen_sparse.py's torch.save of A (uncoalesced), A.coalesce(), B (hybrid), C (CSR) and an
    // empty COO tensor, read through `_rebuild_sparse_tensor`.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nn/pt/sparse.pt");
    let sd = nn::load_pt(&path)?;
    let get = |k: &str| sd.get(k).cloned().unwrap_or_else(|| panic!("{k} is in the archive"));
    let a = get("coo");
    assert_eq!((a.layout(), ops::_nnz(&a)?, ops::is_coalesced(&a)?), (Layout::SparseCoo, 5, false));
    check("A dense", &a);
    check_coo("A coalesce", &get("coalesced"));
    check("B dense", &get("hybrid"));
    let c = get("csr");
    assert_eq!(c.layout(), Layout::SparseCsr);
    check("C dense", &c);
    check("C crow", &ops::crow_indices(&c)?);
    let e = get("empty");
    assert_eq!((e.sizes(), ops::_nnz(&e)?), (&[3i64, 4][..], 0));
    Ok(())
}

#[test]
fn softmax_hspmm_and_sspaddmm_match_pytorch() -> Result<()> {
    // Note [Sparse softmax]: over the stored elements, along sparse and dense dims.
    let (a, b) = (a(), b());
    for d in [0i64, 1, -1] {
        check_coo(&format!("softmax A {d}"), &ops::_sparse_softmax(&a, d, None)?);
        check_coo(&format!("log_softmax A {d}"), &ops::_sparse_log_softmax(&a, d, None)?);
    }
    check_coo("softmax B 0", &ops::_sparse_softmax(&b, 0, None)?);
    check_coo("softmax B 1", &ops::_sparse_softmax(&b, 1, None)?);
    check_coo("log_softmax B 0", &ops::_sparse_log_softmax(&b, 0, None)?);
    let f32_result = ops::_sparse_softmax(&a, 1, Some(ScalarType::F32))?;
    assert_eq!(f32_result.dtype(), ScalarType::F32);
    let (want, _) = expected("softmax A f32 values");
    let got = ops::to(&ops::_values(&f32_result)?, ScalarType::F64, false, false, None)?.to_vec::<f64>()?;
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 * w.abs(), "softmax A f32: got {g}, expected {w}");
    }
    let empty = coo(&[], 2, Tensor::from_vec(Vec::<f64>::new(), &[0])?, &[3, 4]);
    check_coo("softmax empty", &ops::_sparse_softmax(&empty, 1, None)?);

    let m = wave(&[4, 3], 0.6, 0.4);
    let h = ops::hspmm(&a, &m)?;
    assert_eq!((ops::sparse_dim(&h)?, ops::dense_dim(&h)?), (1, 1));
    check_coo("hspmm", &h);
    let s33 = coo(&[0, 2, 2, 1, 0, 0], 2, wave(&[3], 0.3, 0.9), &[3, 3]);
    check_coo("sspaddmm", &ops::sspaddmm(&s33, &a, &m, Scalar::Float(0.5), Scalar::Float(2.0))?);
    check_coo("sspaddmm empty", &ops::sspaddmm(&s33, &empty, &m, Scalar::Int(1), Scalar::Int(1))?);

    // Gradients through the values (the incoming gradient read at the result's pattern).
    let ia = Tensor::from_vec(IA.to_vec(), &[2, 5])?;
    let dm = wave(&[3, 4], 0.3, 0.1);
    // Dim -1 is dim 1 (PyTorch 2.15's own gradient for -1 is wrong: see gen_sparse.py).
    for (d, log, name) in [(0i64, false, "0"), (1, true, "1"), (1, false, "1"), (-1, false, "1")] {
        let v = wave(&[5], 0.9, 0.2).requires_grad_(true)?;
        let s = ops::sparse_coo_tensor(&ia, &v, &[3, 4], None, None, None, None, None)?;
        let y = if log { ops::_sparse_log_softmax(&s, d, None)? } else { ops::_sparse_softmax(&s, d, None)? };
        ops::to_dense(&y, None, None)?.mul(&dm)?.sum().call()?.backward()?;
        let f = if log { "_sparse_log_softmax" } else { "_sparse_softmax" };
        check(&format!("grad {f} {name} values"), &v.grad().unwrap());
    }
    let ib = Tensor::from_vec(vec![0i64, 2, 0], &[1, 3])?;
    for (d, log) in [(0i64, false), (1, true), (1, false)] {
        let v = wave(&[3, 2], 0.4, 0.7).requires_grad_(true)?;
        let s = ops::sparse_coo_tensor(&ib, &v, &[4, 2], None, None, None, None, None)?;
        let y = if log { ops::_sparse_log_softmax(&s, d, None)? } else { ops::_sparse_softmax(&s, d, None)? };
        ops::to_dense(&y, None, None)?.mul(&wave(&[4, 2], 0.3, 0.3))?.sum().call()?.backward()?;
        let name = if log { "_sparse_log_softmax" } else { "_sparse_softmax" };
        check(&format!("grad {name} B {d} values"), &v.grad().unwrap());
    }

    // PyTorch has no derivative for hspmm or sspaddmm: the backward is an error, not zeros.
    let v = wave(&[5], 0.9, 0.2).requires_grad_(true)?;
    let s = ops::sparse_coo_tensor(&ia, &v, &[3, 4], None, None, None, None, None)?;
    let out = ops::to_dense(&ops::hspmm(&s, &m)?, None, None)?.sum().call()?;
    let e = out.backward().unwrap_err().to_string();
    assert!(e.contains("derivative for 'hspmm' is not implemented"), "{e}");

    // Bad input in PyTorch's words: a dim out of range, an integer tensor, a strided input.
    assert!(matches!(ops::_sparse_softmax(&a, 2, None), Err(c10::Error::DimOutOfRange { .. })));
    let ints = coo(&IA, 2, Tensor::from_vec(vec![1i64, 2, 3, 4, 5], &[5])?, &[3, 4]);
    assert!(ops::_sparse_softmax(&ints, 0, None).is_err());
    assert!(ops::_sparse_softmax_op(&a, 0, true).unwrap_err().to_string().contains("half to float"));
    let e = ops::_sparse_softmax(&dm, 0, None).unwrap_err().to_string();
    assert!(e.contains("_sparse_softmax") && e.contains("CPU"), "{e}");
    let e = ops::sspaddmm(&s33, &a, &wave(&[4, 2], 0.6, 0.4), Scalar::Int(1), Scalar::Int(1)).unwrap_err().to_string();
    assert!(e.contains("sspaddmm"), "{e}");
    Ok(())
}

#[test]
fn gradcheck_takes_sparse_inputs_and_outputs() -> Result<()> {
    // Note [Gradcheck with sparse tensors]: the Jacobian over a sparse input's stored values
    // (the uncoalesced A is coalesced first), sparse outputs compared in their dense form.
    let o = autograd::GradcheckOptions::default();
    let s = a().requires_grad_(true)?;
    let m = wave(&[4, 3], 0.6, 0.4).requires_grad_(true)?;
    autograd::gradcheck(&|x: &[Tensor]| Ok(vec![ops::_sparse_mm(&x[0], &x[1])?]), &[s.clone(), m.clone()], o)?;
    autograd::gradcheck(&|x: &[Tensor]| Ok(vec![ops::mm(&x[0], &x[1])?]), &[s.clone(), m.clone()], o)?;
    autograd::gradcheck(&|x: &[Tensor]| Ok(vec![ops::_sparse_sum_dim(&x[0], &[1])?]), std::slice::from_ref(&s), o)?;
    autograd::gradcheck(
        &|x: &[Tensor]| Ok(vec![ops::mul_scalar(&x[0], Scalar::Float(1.5))?]),
        std::slice::from_ref(&s),
        o,
    )?;
    for d in [0i64, 1] {
        autograd::gradcheck(
            &|x: &[Tensor]| Ok(vec![ops::_sparse_softmax(&x[0], d, None)?]),
            std::slice::from_ref(&s),
            o,
        )?;
        autograd::gradcheck(
            &|x: &[Tensor]| Ok(vec![ops::_sparse_log_softmax(&x[0], d, None)?]),
            std::slice::from_ref(&s),
            o,
        )?;
    }
    // The hybrid B along its sparse and its dense dimension.
    let hb = b().requires_grad_(true)?;
    for d in [0i64, 1] {
        autograd::gradcheck(
            &|x: &[Tensor]| Ok(vec![ops::_sparse_softmax(&x[0], d, None)?]),
            std::slice::from_ref(&hb),
            o,
        )?;
    }
    // A gradient that misses a path is found: the detached term's derivative is not in it.
    let wrong = |x: &[Tensor]| -> Result<Vec<Tensor>> {
        let seen = ops::to_dense(&x[0], None, None)?;
        let unseen = ops::mul_scalar(&ops::to_dense(&x[0].detach(), None, None)?, Scalar::Int(2))?;
        Ok(vec![ops::add(&seen, &unseen, Scalar::Int(1))?])
    };
    let e = autograd::gradcheck(&wrong, &[s], o).unwrap_err().to_string();
    assert!(e.contains("Jacobian mismatch"), "{e}");
    Ok(())
}

/// The norm of a sparse tensor is its coalesced values' norm (a position stored twice counts
/// once, with its sum); `clip_grad_norm_` takes sparse gradients with dense ones and scales
/// them in place, their pattern kept, as PyTorch's.
#[test]
fn norms_and_gradient_clipping_take_sparse_tensors() -> Result<()> {
    let (a, b) = (a(), b());
    for (p, name) in
        [(2.0, "2"), (1.0, "1"), (3.0, "3"), (f64::INFINITY, "inf"), (f64::NEG_INFINITY, "-inf"), (0.0, "0")]
    {
        let n = ops::norm(&a, Scalar::Float(p))?;
        assert_eq!((n.layout(), n.dim()), (Layout::Strided, 0));
        check(&format!("norm A {name}"), &n);
    }
    check("vector_norm B", &ops::linalg_vector_norm(&b, Scalar::Float(2.0), None, false, None)?);
    check("norm B all dims", &ops::norm_scalaropt_dim(&b, Some(Scalar::Float(2.0)), &[0, -1], false)?);
    let a32 = ops::to(&a, ScalarType::F32, false, false, None)?;
    let n32 = ops::norm(&a32, Scalar::Float(2.0))?;
    assert_eq!(n32.dtype(), ScalarType::F32);
    let (want, _) = expected("norm A f32");
    assert!((n32.item::<f64>()? - want[0]).abs() <= 1e-6, "{} vs {}", n32.item::<f64>()?, want[0]);
    // PyTorch's refusals.
    let e = ops::norm_scalaropt_dim(&a, None, &[1], false).expect_err("partial").to_string();
    assert!(e.contains("norm_sparse currently only supports full reductions"), "{e}");
    let e = ops::norm_scalaropt_dim(&a, None, &[0, 1], true).expect_err("keepdim").to_string();
    assert!(e.contains("norm_sparse currently does not support keepdim=True"), "{e}");

    for (norm_type, name) in [(2.0, "2.0"), (f64::INFINITY, "inf")] {
        let mut emb = Embedding::new(10, 4)?.with_sparse(true);
        emb.to_dtype(ScalarType::F64)?;
        let mut lin = nn::Linear::new(4, 2)?;
        lin.to_dtype(ScalarType::F64)?;
        {
            let _g = autograd::no_grad();
            ops::copy_(&emb.weight, &wave(&[10, 4], 1.3, 0.1), false)?;
            ops::copy_(&lin.weight, &wave(&[2, 4], 0.7, 0.4), false)?;
            ops::copy_(lin.bias.as_ref().unwrap(), &wave(&[2], 0.9, 0.1), false)?;
        }
        let out = lin.forward(&emb.forward(&Tensor::from_slice(&[1i64, 3, 3, 0]))?)?;
        out.mul(&wave(&[4, 2], 0.5, 0.2))?.sum().call()?.backward()?;
        let mut params = emb.parameters();
        params.extend(lin.parameters());
        let total = nn::optim::clip_grad_norm_(&params, 0.5, norm_type, false)?;
        check(&format!("clip total {name}"), &total);
        check_coo(&format!("clip emb grad {name}"), &emb.weight.grad().unwrap());
        check(&format!("clip lin grad {name}"), &lin.weight.grad().unwrap());
    }
    Ok(())
}

/// Note [Sparse entries in safetensors]: the sparse tensors of a PyTorch archive (uncoalesced
/// with a duplicate, coalesced, hybrid, CSR with an empty row, nnz = 0) beside a dense one go
/// through our state_dict files and come back with the same layout, pattern, flag and values,
/// by the plain and the mapped reader; damaged files are errors.
#[test]
fn sparse_tensors_round_trip_through_state_dict_files() -> Result<()> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nn/pt/sparse.pt");
    let mut sd = nn::load_pt(&path)?;
    sd.insert("dense", wave(&[2, 3], 0.5, 0.1));
    let dir = std::env::temp_dir().join(format!("sparse_state_dict_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sd.safetensors");
    nn::serialize::save_state_dict(&sd, &file)?;
    let same = |t: &Tensor, u: &Tensor, what: &str| {
        assert_eq!((t.layout(), t.sizes(), t.dtype()), (u.layout(), u.sizes(), u.dtype()), "{what}");
        let f =
            |x: &Tensor| ops::to(&ops::to_dense(x, None, None).unwrap(), ScalarType::F64, false, false, None).unwrap();
        assert_eq!(f(t).to_vec::<f64>().unwrap(), f(u).to_vec::<f64>().unwrap(), "{what}: values");
    };
    for loaded in [nn::serialize::load_file(&file)?, nn::serialize::load_file_mmap(&file)?] {
        assert!(loaded.metadata.keys().all(|k| !k.starts_with("__layout__")), "the markers are taken out");
        // safetensors orders entries by dtype and name, not as given.
        let sorted = |d: &nn::StateDict| {
            let mut v: Vec<String> = d.keys().map(str::to_string).collect();
            v.sort();
            v
        };
        assert_eq!(sorted(&loaded.tensors), sorted(&sd), "names");
        for (k, t) in sd.iter() {
            let u = loaded.tensors.get(k).unwrap();
            same(t, u, k);
            if t.layout() == Layout::SparseCoo {
                assert_eq!(ops::is_coalesced(u)?, ops::is_coalesced(t)?, "{k}: flag");
                assert_eq!(ops::_indices(u)?.to_vec::<i64>()?, ops::_indices(t)?.to_vec::<i64>()?, "{k}: pattern");
            }
        }
        let a = loaded.tensors.get("coo").unwrap();
        assert_eq!((ops::_nnz(a)?, ops::is_coalesced(a)?), (5, false));
        check("A dense", a);
        check_coo("A coalesce", loaded.tensors.get("coalesced").unwrap());
        check("C crow", &ops::crow_indices(loaded.tensors.get("csr").unwrap())?);
    }
    // What other readers see: the members as plain tensors, and the markers.
    let bytes = std::fs::read(&file).unwrap();
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let names: Vec<String> = meta.tensors().into_keys().collect();
    for n in ["coo::indices", "coo::values", "csr::crow_indices", "csr::col_indices", "csr::values", "dense"] {
        assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
    }
    let markers = meta.metadata().clone().unwrap();
    assert_eq!(markers.get("__layout__.coo").map(String::as_str), Some("sparse_coo 3,4 uncoalesced"));
    assert_eq!(markers.get("__layout__.csr").map(String::as_str), Some("sparse_csr 4,5"));

    // A damaged file: an index past the sizes is the constructor's error, not a tensor.
    let oob = ops::sparse_coo_tensor(
        &Tensor::from_vec(vec![0i64, 1], &[1, 2])?,
        &wave(&[2], 1.0, 0.0),
        &[2],
        None,
        None,
        None,
        None,
        None,
    )?;
    let bad = dir.join("bad.safetensors");
    let mut meta = std::collections::HashMap::new();
    meta.insert("__layout__.s".to_string(), "sparse_coo 1 uncoalesced".to_string());
    let (i, v) = (ops::_indices(&oob)?, ops::_values(&oob)?);
    nn::serialize::save_file([("s::indices", &i), ("s::values", &v)], None, &bad)?;
    // Markers are ours to write: a caller's metadata may not use the prefix.
    let e = nn::serialize::save_file([("s::indices", &i)], Some(meta.clone()), &bad).expect_err("reserved").to_string();
    assert!(e.contains("marks sparse tensors"), "{e}");
    // Written by another writer (safetensors itself), with the marker.
    let le = |v: Vec<i64>| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (ib, vb) = (le(i.to_vec::<i64>()?), le(vec![0, 0]));
    fn view(b: &[u8], shape: Vec<usize>) -> Result<safetensors::tensor::TensorView<'_>> {
        safetensors::tensor::TensorView::new(safetensors::Dtype::I64, shape, b)
            .map_err(|e| c10::Error::Io(e.to_string()))
    }
    let views = [("s::indices", view(&ib, vec![1, 2])?), ("s::values", view(&vb, vec![2])?)];
    let raw = safetensors::serialize(views.iter().map(|(n, v)| (n.to_string(), v.clone())), Some(meta)).unwrap();
    std::fs::write(&bad, raw).unwrap();
    let e = nn::serialize::load_file(&bad).err().expect("out of bounds").to_string();
    assert!(e.contains("sparse tensor 's'") && e.contains("size is inconsistent with indices"), "{e}");
    // A plain entry under a marked name would hide the sparse tensor: an error, not a pick.
    let mut meta = std::collections::HashMap::new();
    meta.insert("__layout__.s".to_string(), "sparse_coo 1 uncoalesced".to_string());
    let views =
        [("s", view(&vb, vec![2])?), ("s::indices", view(&ib, vec![1, 2])?), ("s::values", view(&vb, vec![2])?)];
    let raw = safetensors::serialize(views.iter().map(|(n, v)| (n.to_string(), v.clone())), Some(meta)).unwrap();
    std::fs::write(&bad, raw).unwrap();
    let e = nn::serialize::load_file(&bad).err().expect("ambiguous").to_string();
    assert!(e.contains("'s' is both a plain entry and a sparse tensor's marker"), "{e}");
    // Hostile markers and members: errors, never a panic (the safetensors_load fuzz target
    // reaches this code with arbitrary bytes).
    let fb: Vec<u8> = [1.5f64, 2.5].iter().flat_map(|x| x.to_le_bytes()).collect();
    let ob: Vec<u8> = 0i64.to_le_bytes().to_vec();
    let float_view = safetensors::tensor::TensorView::new(safetensors::Dtype::F64, vec![1, 2], &fb).unwrap();
    let cases: Vec<(&str, Vec<(&str, safetensors::tensor::TensorView<'_>)>)> = vec![
        ("sparse_coo -3 coalesced", vec![("s::indices", view(&ib, vec![1, 2])?), ("s::values", view(&vb, vec![2])?)]),
        (
            "sparse_coo 9223372036854775807,9223372036854775807 uncoalesced",
            vec![("s::indices", view(&ib, vec![2, 1])?), ("s::values", view(&ob, vec![1])?)],
        ),
        ("sparse_coo 4 coalesced", vec![("s::indices", float_view.clone()), ("s::values", view(&vb, vec![2])?)]),
        ("sparse_coo 4 coalesced", vec![("s::indices", view(&ib, vec![2])?), ("s::values", view(&vb, vec![2])?)]),
        ("sparse_coo x,y coalesced", vec![("s::indices", view(&ib, vec![1, 2])?), ("s::values", view(&vb, vec![2])?)]),
        (
            "sparse_csr 2,2",
            vec![
                ("s::crow_indices", view(&ib, vec![2])?),
                ("s::col_indices", view(&vb, vec![2])?),
                ("s::values", float_view.clone()),
            ],
        ),
        (
            "sparse_csr 2",
            vec![
                ("s::crow_indices", view(&ib, vec![1, 2])?),
                ("s::col_indices", view(&vb, vec![2])?),
                ("s::values", view(&vb, vec![2])?),
            ],
        ),
        ("strided", vec![("s::values", view(&vb, vec![2])?)]),
        ("sparse_coo 4 coalesced", vec![("s::values", view(&vb, vec![2])?)]),
    ];
    for (marker, views) in cases {
        let meta = std::collections::HashMap::from([("__layout__.s".to_string(), marker.to_string())]);
        let raw = safetensors::serialize(views.iter().map(|(n, v)| (n.to_string(), v.clone())), Some(meta)).unwrap();
        std::fs::write(&bad, raw).unwrap();
        assert!(nn::serialize::load_file(&bad).is_err(), "marker {marker:?} loads");
        assert!(nn::serialize::load_file_mmap(&bad).is_err(), "marker {marker:?} maps");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(())
}

/// Batched CSR (`[*batch, nrows + 1]` offsets, every batch storing the same number of
/// elements) and hybrid CSR (dense dimensions in the values), against PyTorch: conversion both
/// ways, members, arithmetic, the size inferred from members; PyTorch's refusals in its words.
#[test]
fn batched_and_hybrid_csr_match_pytorch() -> Result<()> {
    let ar: Vec<i64> = (0..24).collect();
    let keep: Vec<bool> = ar.iter().map(|&i| (i / 12 + i / 4 % 3 + i % 4) % 3 == 0).collect();
    let w = wave(&[2, 3, 4], 0.35, 0.15).to_vec::<f64>()?;
    let bd = Tensor::from_vec(w.iter().zip(&keep).map(|(&x, &k)| if k { x } else { 0.0 }).collect(), &[2, 3, 4])?;
    let bc = ops::to_sparse_csr(&bd, None)?;
    assert_eq!(
        (bc.layout(), ops::_nnz(&bc)?, ops::sparse_dim(&bc)?, ops::dense_dim(&bc)?),
        (Layout::SparseCsr, 4, 2, 0)
    );
    check("BC crow", &ops::crow_indices(&bc)?);
    check("BC col", &ops::col_indices(&bc)?);
    check("BC values", &ops::values(&bc)?);
    check("BC dense", &bc);
    let coo_form = ops::to_sparse(&bc, 3)?;
    check_coo("BC to_sparse", &coo_form);
    check("BC * 2", &ops::mul_scalar(&bc, Scalar::Int(2))?);
    let twice = ops::add(&bc, &bc, Scalar::Int(1))?;
    assert_eq!(twice.layout(), Layout::SparseCsr);
    check("BC + BC", &twice);
    check("BC sum", &ops::sum(&bc, None)?);
    // The COO form back to CSR, and the size inferred from the members.
    check("BC dense", &ops::to_sparse_csr(&coo_form, None)?);
    let inferred = ops::sparse_csr_tensor_crow_col_value(
        &ops::crow_indices(&bc)?,
        &ops::col_indices(&bc)?,
        &ops::values(&bc)?,
        None,
        None,
        None,
        None,
    )?;
    assert_eq!(inferred.sizes(), &[2, 3, 4]);
    check("BC inferred dense", &inferred);

    let hw = wave(&[3, 4, 2], 0.55, 0.25).to_vec::<f64>()?;
    let hd = Tensor::from_vec(
        hw.iter().enumerate().map(|(i, &x)| if (i / 2) % 5 == 1 { x } else { 0.0 }).collect(),
        &[3, 4, 2],
    )?;
    let hc = ops::to_sparse_csr(&hd, Some(1))?;
    assert_eq!((ops::_nnz(&hc)?, ops::dense_dim(&hc)?), (3, 1));
    check("HC crow", &ops::crow_indices(&hc)?);
    check("HC col", &ops::col_indices(&hc)?);
    check("HC values", &ops::values(&hc)?);
    check("HC dense", &hc);
    check_coo("HC to_sparse", &ops::to_sparse(&hc, 2)?);

    // PyTorch's refusals.
    let uneven = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0], &[2, 2, 2])?;
    let e = ops::to_sparse_csr(&uneven, None).expect_err("uneven batches").to_string();
    assert!(e.contains("Expect the same number of specified elements per batch."), "{e}");
    let e = ops::mm(&bc, &wave(&[4, 2], 0.3, 0.1)).expect_err("batched mm").to_string();
    assert!(e.contains("addmm: self must be a matrix, got 3-D tensor"), "{e}");
    let e = ops::mv(&hc, &wave(&[4], 0.3, 0.1)).expect_err("hybrid mv").to_string();
    assert!(e.contains("vector + matrix @ vector expected, got 1, 3, 1"), "{e}");
    let t = |v: Vec<i64>, shape: &[i64]| Tensor::from_vec(v, shape).unwrap();
    let e = ops::sparse_csr_tensor(
        &t(vec![0, 1, 0, 1], &[2, 2]),
        &t(vec![0, 0, 0], &[3, 1]),
        &wave(&[2, 1], 1.0, 0.0),
        &[2, 1, 1],
        None,
        None,
        None,
        None,
    )
    .expect_err("batch sizes")
    .to_string();
    assert!(
        e.contains("all batch dimensions of crow_indices (=[2]), col_indices (=[3]), and values (=[2]) must be equal to tensor batch dimensions (=[2])"),
        "{e}"
    );
    let e = ops::sparse_csr_tensor(
        &t(vec![0, 1, 0, 2], &[2, 2]),
        &t(vec![0, 0, 1, 0], &[2, 2]),
        &wave(&[2, 2], 1.0, 0.0),
        &[2, 1, 2],
        None,
        None,
        None,
        None,
    )
    .expect_err("batch 0's offsets end at 1 of 2")
    .to_string();
    assert!(e.contains("`crow_indices[..., -1] == nnz` is not satisfied."), "{e}");
    let e = ops::sparse_csr_tensor(
        &t(vec![0, 1, 0, 1], &[2, 2]),
        &t(vec![0, 0], &[2, 1]),
        &wave(&[2], 1.0, 0.0),
        &[2, 1, 1],
        None,
        None,
        None,
        None,
    )
    .expect_err("values dims")
    .to_string();
    assert!(
        e.contains("values must have dimensionality > sum of batch and block dimensionalities (=1 + 0) but got 1"),
        "{e}"
    );
    Ok(())
}
