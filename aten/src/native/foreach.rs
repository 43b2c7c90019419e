//! The `_foreach_*` operators: one operator over lists of tensors (PyTorch's `foreach=True`
//! optimizer paths and `clip_grad_norm_`).
//!
//! Note [Foreach operators]: PyTorch runs a foreach operator on CUDA as few multi-tensor
//! kernels ("fast path") when every list holds dense tensors of one device and dtype, and
//! otherwise as a loop of the per-tensor operator ("slow path"). Both give the per-tensor
//! operator's values. Here every foreach operator is that loop, registered as
//! CompositeImplicitAutograd: each tensor's operator dispatches to its device's kernel, and
//! autograd records the per-tensor operators. The single-launch optimizer steps are the fused
//! kernels (Note [Fused optimizer kernels] in kernels-cuda), which nn's optimizers use on a
//! device. The argument checks and their messages are PyTorch's: a list must not be empty,
//! and lists must have the same length.

use c10::{Error, Result, Scalar, ScalarType};

use crate::{ops, Tensor};

fn check_nonempty(op: &str, tensors: &[Tensor]) -> Result<()> {
    if tensors.is_empty() {
        return Err(Error::invalid(op, "Tensor list must have at least one tensor."));
    }
    Ok(())
}

fn check_lists(op: &str, a: &[Tensor], b: &[Tensor]) -> Result<()> {
    check_nonempty(op, a)?;
    if a.len() != b.len() {
        return Err(Error::invalid(
            op,
            format!("Tensor lists must have the same number of tensors, got {} and {}", a.len(), b.len()),
        ));
    }
    Ok(())
}

/// Applies `f` to every tensor of `self_` and collects the results.
fn map(op: &str, self_: &[Tensor], f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Vec<Tensor>> {
    check_nonempty(op, self_)?;
    self_.iter().map(f).collect()
}

/// Applies `f` to every pair of `self_` and `other`.
fn zip(
    op: &str,
    self_: &[Tensor],
    other: &[Tensor],
    f: impl Fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Vec<Tensor>> {
    check_lists(op, self_, other)?;
    self_.iter().zip(other).map(|(a, b)| f(a, b)).collect()
}

/// Applies the in-place `f` to every tensor of `self_`.
fn each(op: &str, self_: &[Tensor], f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<()> {
    map(op, self_, f).map(|_| ())
}

/// Applies the in-place `f` to every pair of `self_` and `other`.
fn each_pair(
    op: &str,
    self_: &[Tensor],
    other: &[Tensor],
    f: impl Fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<()> {
    zip(op, self_, other, f).map(|_| ())
}

/// The three lists of addcmul/addcdiv/lerp-like operators, checked.
fn check_three(op: &str, a: &[Tensor], b: &[Tensor], c: &[Tensor]) -> Result<()> {
    check_lists(op, a, b)?;
    check_lists(op, a, c)
}

/// `_foreach_add.Scalar(Tensor[] self, Scalar scalar) -> Tensor[]`
pub fn foreach_add_scalar(self_: &[Tensor], scalar: Scalar) -> Result<Vec<Tensor>> {
    map("_foreach_add", self_, |t| ops::add_scalar(t, scalar, Scalar::Int(1)))
}

/// `_foreach_add_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()`
pub fn foreach_add_scalar_(self_: &[Tensor], scalar: Scalar) -> Result<()> {
    each("_foreach_add_", self_, |t| ops::add_scalar_(t, scalar, Scalar::Int(1)))
}

/// `_foreach_add.List(Tensor[] self, Tensor[] other, *, Scalar alpha=1) -> Tensor[]`
pub fn foreach_add_list(self_: &[Tensor], other: &[Tensor], alpha: Scalar) -> Result<Vec<Tensor>> {
    zip("_foreach_add", self_, other, |a, b| ops::add(a, b, alpha))
}

/// `_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()`
pub fn foreach_add_list_(self_: &[Tensor], other: &[Tensor], alpha: Scalar) -> Result<()> {
    each_pair("_foreach_add_", self_, other, |a, b| ops::add_(a, b, alpha))
}

/// `_foreach_mul.Scalar(Tensor[] self, Scalar scalar) -> Tensor[]`
pub fn foreach_mul_scalar(self_: &[Tensor], scalar: Scalar) -> Result<Vec<Tensor>> {
    map("_foreach_mul", self_, |t| ops::mul_scalar(t, scalar))
}

/// `_foreach_mul_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()`
pub fn foreach_mul_scalar_(self_: &[Tensor], scalar: Scalar) -> Result<()> {
    each("_foreach_mul_", self_, |t| ops::mul_scalar_(t, scalar))
}

/// `_foreach_mul.List(Tensor[] self, Tensor[] other) -> Tensor[]`
pub fn foreach_mul_list(self_: &[Tensor], other: &[Tensor]) -> Result<Vec<Tensor>> {
    zip("_foreach_mul", self_, other, ops::mul)
}

/// `_foreach_mul_.List(Tensor(a!)[] self, Tensor[] other) -> ()`
pub fn foreach_mul_list_(self_: &[Tensor], other: &[Tensor]) -> Result<()> {
    each_pair("_foreach_mul_", self_, other, ops::mul_)
}

/// `_foreach_div.Scalar(Tensor[] self, Scalar scalar) -> Tensor[]`
pub fn foreach_div_scalar(self_: &[Tensor], scalar: Scalar) -> Result<Vec<Tensor>> {
    map("_foreach_div", self_, |t| ops::div_scalar(t, scalar))
}

/// `_foreach_div_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()`
pub fn foreach_div_scalar_(self_: &[Tensor], scalar: Scalar) -> Result<()> {
    each("_foreach_div_", self_, |t| ops::div_scalar_(t, scalar))
}

type Ternary = fn(&Tensor, &Tensor, &Tensor, Scalar) -> Result<Tensor>;

/// Applies `f` (an addcmul-like operator) to every triple of the three lists.
fn triples(op: &str, a: &[Tensor], b: &[Tensor], c: &[Tensor], value: Scalar, f: Ternary) -> Result<Vec<Tensor>> {
    check_three(op, a, b, c)?;
    (0..a.len()).map(|i| f(&a[i], &b[i], &c[i], value)).collect()
}

/// `_foreach_addcmul.Scalar(Tensor[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar value=1) -> Tensor[]`
pub fn foreach_addcmul_scalar(s: &[Tensor], t1: &[Tensor], t2: &[Tensor], value: Scalar) -> Result<Vec<Tensor>> {
    triples("_foreach_addcmul", s, t1, t2, value, ops::addcmul)
}

/// `_foreach_addcmul_.Scalar(Tensor(a!)[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar value=1) -> ()`
pub fn foreach_addcmul_scalar_(s: &[Tensor], t1: &[Tensor], t2: &[Tensor], value: Scalar) -> Result<()> {
    triples("_foreach_addcmul_", s, t1, t2, value, ops::addcmul_).map(|_| ())
}

/// `_foreach_addcdiv.Scalar(Tensor[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar value=1) -> Tensor[]`
pub fn foreach_addcdiv_scalar(s: &[Tensor], t1: &[Tensor], t2: &[Tensor], value: Scalar) -> Result<Vec<Tensor>> {
    triples("_foreach_addcdiv", s, t1, t2, value, ops::addcdiv)
}

/// `_foreach_addcdiv_.Scalar(Tensor(a!)[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar value=1) -> ()`
pub fn foreach_addcdiv_scalar_(s: &[Tensor], t1: &[Tensor], t2: &[Tensor], value: Scalar) -> Result<()> {
    triples("_foreach_addcdiv_", s, t1, t2, value, ops::addcdiv_).map(|_| ())
}

/// `_foreach_lerp.Scalar(Tensor[] self, Tensor[] tensors1, Scalar weight) -> Tensor[]`
pub fn foreach_lerp_scalar(self_: &[Tensor], tensors1: &[Tensor], weight: Scalar) -> Result<Vec<Tensor>> {
    zip("_foreach_lerp", self_, tensors1, |a, b| ops::lerp(a, b, weight))
}

/// `_foreach_lerp_.Scalar(Tensor(a!)[] self, Tensor[] tensors1, Scalar weight) -> ()`: each
/// tensor takes `lerp(self, end, weight)` in place.
pub fn foreach_lerp_scalar_(self_: &[Tensor], tensors1: &[Tensor], weight: Scalar) -> Result<()> {
    each_pair("_foreach_lerp_", self_, tensors1, |a, b| ops::copy_(a, &ops::lerp(a, b, weight)?, false))
}

/// `_foreach_sqrt(Tensor[] self) -> Tensor[]`
pub fn foreach_sqrt(self_: &[Tensor]) -> Result<Vec<Tensor>> {
    map("_foreach_sqrt", self_, ops::sqrt)
}

/// `_foreach_sqrt_(Tensor(a!)[] self) -> ()`
pub fn foreach_sqrt_(self_: &[Tensor]) -> Result<()> {
    each("_foreach_sqrt_", self_, ops::sqrt_)
}

/// `_foreach_neg(Tensor[] self) -> Tensor[]`
pub fn foreach_neg(self_: &[Tensor]) -> Result<Vec<Tensor>> {
    map("_foreach_neg", self_, ops::neg)
}

/// `_foreach_neg_(Tensor(a!)[] self) -> ()`
pub fn foreach_neg_(self_: &[Tensor]) -> Result<()> {
    each("_foreach_neg_", self_, ops::neg_)
}

/// `_foreach_maximum.List(Tensor[] self, Tensor[] other) -> Tensor[]`
pub fn foreach_maximum_list(self_: &[Tensor], other: &[Tensor]) -> Result<Vec<Tensor>> {
    zip("_foreach_maximum", self_, other, ops::maximum)
}

/// `_foreach_maximum_.List(Tensor(a!)[] self, Tensor[] other) -> ()`: each tensor takes
/// `maximum(self, other)` in place (NaN propagates).
pub fn foreach_maximum_list_(self_: &[Tensor], other: &[Tensor]) -> Result<()> {
    each_pair("_foreach_maximum_", self_, other, |a, b| ops::copy_(a, &ops::maximum(a, b)?, false))
}

/// `_foreach_zero_(Tensor(a!)[] self) -> ()`
pub fn foreach_zero_(self_: &[Tensor]) -> Result<()> {
    each("_foreach_zero_", self_, ops::zero_)
}

/// `_foreach_copy_(Tensor(a!)[] self, Tensor[] src, bool non_blocking=False) -> ()`
pub fn foreach_copy_(self_: &[Tensor], src: &[Tensor], non_blocking: bool) -> Result<()> {
    each_pair("_foreach_copy_", self_, src, |a, b| ops::copy_(a, b, non_blocking))
}

/// `_foreach_norm.Scalar(Tensor[] self, Scalar ord=2, ScalarType? dtype=None) -> Tensor[]`:
/// each tensor's `linalg.vector_norm` over all its elements.
pub fn foreach_norm_scalar(self_: &[Tensor], ord: Scalar, dtype: Option<ScalarType>) -> Result<Vec<Tensor>> {
    map("_foreach_norm", self_, |t| ops::linalg_vector_norm(t, ord, None, false, dtype))
}
