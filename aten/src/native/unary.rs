//! Unary elementwise operators on the TensorIterator (this issue: `neg` and `abs`; the full
//! family follows the same pattern).

use c10::{Error, Result};

use crate::native::tensor_iterator::{unary_loop, TensorIterator, TensorIteratorConfig};
use crate::Tensor;

fn run_unary(
    op: &'static str,
    out: Option<&Tensor>,
    a: &Tensor,
    kernel: impl FnOnce(&TensorIterator) -> Result<()>,
) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new(op).add_output(out).add_input(a).promote_all().build()?;
    kernel(&iter)?;
    iter.output(0)
}

fn neg_kernel(iter: &TensorIterator) -> Result<()> {
    match_float!(iter.common_dtype(), T, A => {
        unary_loop::<T, T>(iter, |a| -a);
        Ok(())
    }, other => match_int!(other, T => {
        unary_loop::<T, T>(iter, |a| (0 as T).wrapping_sub(a));
        Ok(())
    }, _ => Err(Error::invalid(
        "neg",
        "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
    ))))
}

/// `neg(Tensor self) -> Tensor`
pub fn neg(self_: &Tensor) -> Result<Tensor> {
    run_unary("neg", None, self_, neg_kernel)
}
/// `neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`
pub fn neg_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    run_unary("neg", Some(out), self_, neg_kernel)
}
/// `neg_(Tensor(a!) self) -> Tensor(a!)`
pub fn neg_(self_: &Tensor) -> Result<Tensor> {
    run_unary("neg_", Some(self_), self_, neg_kernel)
}

fn abs_kernel(iter: &TensorIterator) -> Result<()> {
    match_float!(iter.common_dtype(), T, A => {
        unary_loop::<T, T>(iter, |a| if a < T::default() { -a } else { a });
        Ok(())
    }, other => match_int!(other, T => {
        #[allow(unused_comparisons)]
        unary_loop::<T, T>(iter, |a| if a < (0 as T) { (0 as T).wrapping_sub(a) } else { a });
        Ok(())
    }, _ => {
        unary_loop::<bool, bool>(iter, |a| a);
        Ok(())
    }))
}

/// `abs(Tensor self) -> Tensor`
pub fn abs(self_: &Tensor) -> Result<Tensor> {
    run_unary("abs", None, self_, abs_kernel)
}
/// `abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`
pub fn abs_out(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    run_unary("abs", Some(out), self_, abs_kernel)
}
/// `abs_(Tensor(a!) self) -> Tensor(a!)`
pub fn abs_(self_: &Tensor) -> Result<Tensor> {
    run_unary("abs_", Some(self_), self_, abs_kernel)
}
