//! Comparisons `eq ne lt le gt ge` (Tensor and Scalar overloads, in-place and `out=`): inputs
//! are promoted to their common dtype, the result is `Bool`.

use c10::{Element, Result, Scalar, ScalarType};

use crate::native::cpu::loops::binary_loop;
use crate::native::tensor_iterator::{TensorIterator, TensorIteratorConfig};
use crate::Tensor;

/// Which comparison.
#[derive(Copy, Clone, Debug)]
pub enum Cmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

#[inline(always)]
fn apply<T: PartialOrd>(c: Cmp, a: T, b: T) -> bool {
    match c {
        Cmp::Eq => a == b,
        Cmp::Ne => a != b,
        Cmp::Lt => a < b,
        Cmp::Le => a <= b,
        Cmp::Gt => a > b,
        Cmp::Ge => a >= b,
    }
}

fn kernel(iter: &TensorIterator, c: Cmp) -> Result<()> {
    let out = iter.output_dtype();
    c10::dispatch_all_types!(iter.common_dtype(), T => {
        if out == ScalarType::Bool {
            binary_loop::<bool, T, T>(iter, move |a, b| apply(c, a, b));
        } else {
            // An in-place comparison writes 0/1 in self's dtype.
            c10::dispatch_all_types!(out, O => binary_loop::<O, T, T>(iter, move |a, b| O::from_bool(apply(c, a, b))));
        }
    });
    Ok(())
}

/// The device kernel of comparison `c` (Note [Kernel handles]).
fn device_kernel(c: Cmp) -> &'static crate::native::stub::Kernel {
    match c {
        Cmp::Eq => crate::device_kernel!("eq"),
        Cmp::Ne => crate::device_kernel!("ne"),
        Cmp::Lt => crate::device_kernel!("lt"),
        Cmp::Le => crate::device_kernel!("le"),
        Cmp::Gt => crate::device_kernel!("gt"),
        Cmp::Ge => crate::device_kernel!("ge"),
    }
}

fn name(c: Cmp) -> &'static str {
    match c {
        Cmp::Eq => "eq",
        Cmp::Ne => "ne",
        Cmp::Lt => "lt",
        Cmp::Le => "le",
        Cmp::Gt => "gt",
        Cmp::Ge => "ge",
    }
}

/// Runs comparison `c` of `a` and `b` into `out` (or a new Bool tensor).
pub fn compare(c: Cmp, a: &Tensor, b: &Tensor, out: Option<&Tensor>) -> Result<Tensor> {
    let inplace = out.is_some_and(|o| o.is_same(a));
    let mut cfg = TensorIteratorConfig::new(name(c)).add_output(out).add_input(a).add_input(b).promote_all();
    cfg = if inplace { cfg.static_output_dtype(a.dtype()) } else { cfg.static_output_dtype(ScalarType::Bool) };
    let iter = cfg.build()?;
    if iter.is_cpu() {
        kernel(&iter, c)?;
    } else {
        crate::native::stub::run(device_kernel(c), &iter, &[])?;
    }
    iter.output(0)
}

macro_rules! comparison {
    ($c:ident, $t:ident, $s:ident, $to:ident, $so:ident, $ti:ident, $si:ident, $n:literal) => {
        #[doc = concat!("`", $n, ".Tensor(Tensor self, Tensor other) -> Tensor`")]
        pub fn $t(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            compare(Cmp::$c, self_, other, None)
        }
        #[doc = concat!("`", $n, ".Scalar(Tensor self, Scalar other) -> Tensor`")]
        pub fn $s(self_: &Tensor, other: Scalar) -> Result<Tensor> {
            compare(Cmp::$c, self_, &Tensor::wrapped_scalar(other), None)
        }
        #[doc = concat!("`", $n, ".Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)`")]
        pub fn $to(self_: &Tensor, other: &Tensor, out: &Tensor) -> Result<Tensor> {
            compare(Cmp::$c, self_, other, Some(out))
        }
        #[doc = concat!("`", $n, ".Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)`")]
        pub fn $so(self_: &Tensor, other: Scalar, out: &Tensor) -> Result<Tensor> {
            compare(Cmp::$c, self_, &Tensor::wrapped_scalar(other), Some(out))
        }
        #[doc = concat!("`", $n, "_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)`")]
        pub fn $ti(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            compare(Cmp::$c, self_, other, Some(self_))
        }
        #[doc = concat!("`", $n, "_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)`")]
        pub fn $si(self_: &Tensor, other: Scalar) -> Result<Tensor> {
            compare(Cmp::$c, self_, &Tensor::wrapped_scalar(other), Some(self_))
        }
    };
}

comparison!(Eq, eq, eq_scalar, eq_out, eq_scalar_out, eq_, eq_scalar_, "eq");
comparison!(Ne, ne, ne_scalar, ne_out, ne_scalar_out, ne_, ne_scalar_, "ne");
comparison!(Lt, lt, lt_scalar, lt_out, lt_scalar_out, lt_, lt_scalar_, "lt");
comparison!(Le, le, le_scalar, le_out, le_scalar_out, le_, le_scalar_, "le");
comparison!(Gt, gt, gt_scalar, gt_out, gt_scalar_out, gt_, gt_scalar_, "gt");
comparison!(Ge, ge, ge_scalar, ge_out, ge_scalar_out, ge_, ge_scalar_, "ge");
