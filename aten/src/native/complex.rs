//! Complex tensors (complex64, complex128): the views between complex and real
//! (`view_as_real`, `view_as_complex`, `real`, `imag`), construction (`complex`, `polar`),
//! conversions, and the elementwise kernels that know complex arithmetic (`add`, `sub`, `mul`,
//! `div`, `neg`, `conj_physical`, `abs`, `angle`, `sgn`), with the reductions that are linear
//! (`sum`, `mean`) written over the real view.
//!
//! Note [Complex operands]: most kernels' element loops are written for the real dtypes (complex
//! numbers have no order, no integer conversion, no `Element` impl). The `TensorIterator` refuses
//! complex operands unless the kernel opted in with `allow_complex`, and `dispatch_all_types!`
//! returns PyTorch's `"..." not implemented for 'ComplexFloat'` for them, so an operator that has
//! not learned complex arithmetic fails with that error instead of reading complex memory as
//! something else. Shape operators are dtype-blind (they move bytes by the element size) and work
//! on complex tensors as they are.
//!
//! Unlike PyTorch, `conj` is not a lazy view with a conjugate bit: it returns a new tensor (for a
//! real tensor, the tensor itself, as PyTorch does). Values agree; only writes through a
//! conjugate view differ.

use c10::tensor_impl::DimVec;
use c10::{Complex, Element, Error, Result, Scalar, ScalarType};

use crate::native::cpu::loops::{binary_loop, unary_loop};
use crate::native::tensor_iterator::{TensorIterator, TensorIteratorConfig};
use crate::{ops, wrap_dim, Tensor};

/// The real types complex numbers are made of: `f32` (complex64) and `f64` (complex128).
pub trait Real: c10::Element + num_traits::Float + num_traits::FloatConst + rustfft::FftNum {
    /// The complex dtype with parts of this type.
    const COMPLEX: ScalarType;
}

impl Real for f32 {
    const COMPLEX: ScalarType = ScalarType::C64;
}

impl Real for f64 {
    const COMPLEX: ScalarType = ScalarType::C128;
}

fn require_complex(op: &str, t: &Tensor) -> Result<()> {
    if !t.dtype().is_complex() {
        return Err(Error::invalid(
            op,
            format!("{op} is only supported for complex tensors, but got a tensor of dtype {}", t.dtype()),
        ));
    }
    Ok(())
}

/// `view_as_real(Tensor(a) self) -> Tensor(a)`: a complex tensor's storage read as pairs of
/// reals, with a last dimension of size 2 (real, imaginary).
pub fn view_as_real(self_: &Tensor) -> Result<Tensor> {
    if !self_.dtype().is_complex() {
        return Err(Error::invalid("view_as_real", "view_as_real is only supported for complex tensors"));
    }
    let mut sizes = DimVec::from_slice(self_.sizes());
    sizes.push(2);
    let overflow = || Error::invalid("view_as_real", "the real view's strides or offset overflow int64");
    let mut strides: DimVec =
        self_.strides().iter().map(|&s| s.checked_mul(2).ok_or_else(overflow)).collect::<Result<_>>()?;
    strides.push(1);
    let real = self_.dtype().to_real();
    let offset = self_.storage_offset().checked_mul(2).ok_or_else(overflow)?;
    Ok(Tensor::from_impl(self_.imp().view_of_dtype(sizes, strides, offset, real)))
}

/// `view_as_complex(Tensor(a) self) -> Tensor(a)`: a float32/float64 tensor whose last
/// dimension is 2 with stride 1, read as complex numbers. PyTorch's conditions and messages.
pub fn view_as_complex(self_: &Tensor) -> Result<Tensor> {
    const OP: &str = "view_as_complex";
    let dtype = self_.dtype();
    let Some(complex) = dtype.to_complex().filter(|_| matches!(dtype, ScalarType::F32 | ScalarType::F64)) else {
        return Err(Error::invalid(
            OP,
            format!("view_as_complex is only supported for float and double tensors, but got a tensor of scalar type: {dtype}"),
        ));
    };
    let n = self_.dim();
    if n == 0 {
        return Err(Error::invalid(OP, "Input tensor must have one or more dimensions"));
    }
    if self_.sizes()[n - 1] != 2 {
        return Err(Error::invalid(OP, "Tensor must have a last dimension of size 2"));
    }
    if self_.strides()[n - 1] != 1 {
        return Err(Error::invalid(OP, "Tensor must have a last dimension with stride 1"));
    }
    let sizes = &self_.sizes()[..n - 1];
    let mut strides = DimVec::new();
    for &s in &self_.strides()[..n - 1] {
        if s % 2 != 0 {
            return Err(Error::invalid(OP, "Tensor must have a stride divisible by 2 for all but last dimension"));
        }
        strides.push(s / 2);
    }
    if self_.storage_offset() % 2 != 0 {
        return Err(Error::invalid(OP, "Tensor must have a storage_offset divisible by 2"));
    }
    Ok(Tensor::from_impl(self_.imp().view_of_dtype(
        DimVec::from_slice(sizes),
        strides,
        self_.storage_offset() / 2,
        complex,
    )))
}

/// `real(Tensor(a) self) -> Tensor(a)`: the real parts of a complex tensor as a view; a real
/// tensor is its own real part.
pub fn real(self_: &Tensor) -> Result<Tensor> {
    if self_.dtype().is_complex() {
        ops::select(&ops::view_as_real(self_)?, -1, 0)
    } else {
        Ok(self_.clone())
    }
}

/// `imag(Tensor(a) self) -> Tensor(a)`: the imaginary parts of a complex tensor as a view.
pub fn imag(self_: &Tensor) -> Result<Tensor> {
    if !self_.dtype().is_complex() {
        return Err(Error::invalid("imag", "imag is not implemented for tensors with non-complex dtypes."));
    }
    ops::select(&ops::view_as_real(self_)?, -1, 1)
}

/// `complex(Tensor real, Tensor imag) -> Tensor`: `real + i imag`, broadcast. Both must be
/// float32 or float64 (or half), of one dtype.
pub fn complex(real: &Tensor, imag: &Tensor) -> Result<Tensor> {
    const OP: &str = "complex";
    build_from_parts(OP, real, imag, |re, im| (re, im))
}

/// `polar(Tensor abs, Tensor angle) -> Tensor`: `abs * (cos(angle) + i sin(angle))`.
pub fn polar(abs: &Tensor, angle: &Tensor) -> Result<Tensor> {
    build_from_parts("polar", abs, angle, |r, t| (r * t.cos(), r * t.sin()))
}

fn build_from_parts(op: &'static str, a: &Tensor, b: &Tensor, f: fn(f64, f64) -> (f64, f64)) -> Result<Tensor> {
    let (da, db) = (a.dtype(), b.dtype());
    if !matches!(da, ScalarType::F32 | ScalarType::F64) || !matches!(db, ScalarType::F32 | ScalarType::F64) {
        return Err(Error::invalid(
            op,
            format!("Expected both inputs to be Half, Float or Double tensors but got {da} and {db}"),
        ));
    }
    if da != db {
        return Err(Error::invalid(
            op,
            format!("Expected object of scalar type {da} but got scalar type {db} for second argument"),
        ));
    }
    crate::native::check_device(op, a.device(), [b])?;
    let complex = da.to_complex().expect("float32/float64 have complex dtypes");
    let iter = TensorIteratorConfig::new(op)
        .add_output(None)
        .add_input(a)
        .add_input(b)
        .static_output_dtype(complex)
        .allow_complex()
        .build()?;
    if iter.is_cpu() {
        c10::dispatch_complex_types!(complex, R => {
            binary_loop::<Complex<R>, R, R>(&iter, move |x, y| {
                let (re, im) = f(Element::to_f64(x), Element::to_f64(y));
                Complex::new(<R as Element>::from_f64(re), <R as Element>::from_f64(im))
            })
        });
    } else if !iter.device().is_meta() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: complex });
    }
    iter.output(0)
}

/// The element loops of complex arithmetic, for an iterator whose common dtype is complex.
#[doc(hidden)]
pub mod kernels {
    use super::*;

    /// PyTorch's (and NumPy's) complex division: Smith's scaling, so that `|c|` or `|d|` near the
    /// end of the float range does not overflow in `c^2 + d^2`.
    #[inline]
    pub fn div<R: Real>(x: Complex<R>, y: Complex<R>) -> Complex<R> {
        let (a, b, c, d) = (x.re, x.im, y.re, y.im);
        let (ac, ad) = (c.abs(), d.abs());
        if ac >= ad {
            if ac == R::zero() && ad == R::zero() {
                // Division by zero gives the infinities and NaNs of the parts' divisions.
                Complex::new(a / ac, b / ad)
            } else {
                let rat = d / c;
                let scl = R::one() / (c + d * rat);
                Complex::new((a + b * rat) * scl, (b - a * rat) * scl)
            }
        } else {
            let rat = c / d;
            let scl = R::one() / (d + c * rat);
            Complex::new((a * rat + b) * scl, (b * rat - a) * scl)
        }
    }

    /// `a + alpha * b` (alpha real).
    pub fn add(iter: &TensorIterator, alpha: Scalar) -> Result<()> {
        c10::dispatch_complex_types!(iter.common_dtype(), R => {
            let al = <R as Element>::from_f64(alpha.to_f64());
            binary_loop::<Complex<R>, Complex<R>, Complex<R>>(iter, move |a, b| a + b * al);
        });
        Ok(())
    }

    /// `a * b`.
    pub fn mul(iter: &TensorIterator) -> Result<()> {
        c10::dispatch_complex_types!(iter.common_dtype(), R => {
            binary_loop::<Complex<R>, Complex<R>, Complex<R>>(iter, |a, b| a * b);
        });
        Ok(())
    }

    /// `a / b`.
    pub fn true_div(iter: &TensorIterator) -> Result<()> {
        c10::dispatch_complex_types!(iter.common_dtype(), R => {
            binary_loop::<Complex<R>, Complex<R>, Complex<R>>(iter, div::<R>);
        });
        Ok(())
    }
}

/// A unary map of a complex tensor to a tensor of `out_dtype` (complex or its real dtype).
fn complex_unary<R: Real, O: Copy>(
    op: &'static str,
    self_: &Tensor,
    out_dtype: ScalarType,
    f: fn(Complex<R>) -> O,
) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new(op)
        .add_output(None)
        .add_input(self_)
        .check_all_same_dtype(false)
        .static_output_dtype(out_dtype)
        .allow_complex()
        .build()?;
    if iter.is_cpu() {
        unary_loop::<O, Complex<R>>(&iter, f);
    } else if !iter.device().is_meta() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: self_.dtype() });
    }
    iter.output(0)
}

/// `abs` of a complex tensor: `hypot(re, im)`, real.
pub fn abs(self_: &Tensor) -> Result<Tensor> {
    require_complex("abs", self_)?;
    let real = self_.dtype().to_real();
    match self_.dtype() {
        ScalarType::C64 => complex_unary::<f32, f32>("abs", self_, real, |z| z.re.hypot(z.im)),
        _ => complex_unary::<f64, f64>("abs", self_, real, |z| z.re.hypot(z.im)),
    }
}

/// `angle` of a complex tensor: `atan2(im, re)`, real.
pub fn angle(self_: &Tensor) -> Result<Tensor> {
    require_complex("angle", self_)?;
    let real = self_.dtype().to_real();
    match self_.dtype() {
        ScalarType::C64 => complex_unary::<f32, f32>("angle", self_, real, |z| z.im.atan2(z.re)),
        _ => complex_unary::<f64, f64>("angle", self_, real, |z| z.im.atan2(z.re)),
    }
}

fn sgn_of<R: Real>(z: Complex<R>) -> Complex<R> {
    let a = z.re.hypot(z.im);
    if a == R::zero() {
        Complex::new(R::zero(), R::zero())
    } else {
        Complex::new(z.re / a, z.im / a)
    }
}

/// `sgn` of a complex tensor: `z / |z|`, and 0 at 0.
pub fn sgn(self_: &Tensor) -> Result<Tensor> {
    require_complex("sgn", self_)?;
    match self_.dtype() {
        ScalarType::C64 => complex_unary::<f32, Complex<f32>>("sgn", self_, ScalarType::C64, sgn_of),
        _ => complex_unary::<f64, Complex<f64>>("sgn", self_, ScalarType::C128, sgn_of),
    }
}

/// `conj_physical` of a complex tensor: a new tensor of the conjugates.
pub fn conj_physical(self_: &Tensor) -> Result<Tensor> {
    require_complex("conj_physical", self_)?;
    match self_.dtype() {
        ScalarType::C64 => complex_unary::<f32, Complex<f32>>("conj_physical", self_, ScalarType::C64, |z| z.conj()),
        _ => complex_unary::<f64, Complex<f64>>("conj_physical", self_, ScalarType::C128, |z| z.conj()),
    }
}

/// `neg` of a complex tensor.
pub fn neg(self_: &Tensor) -> Result<Tensor> {
    require_complex("neg", self_)?;
    match self_.dtype() {
        ScalarType::C64 => complex_unary::<f32, Complex<f32>>("neg", self_, ScalarType::C64, |z| -z),
        _ => complex_unary::<f64, Complex<f64>>("neg", self_, ScalarType::C128, |z| -z),
    }
}

/// `isreal` of a complex tensor: imaginary part zero.
pub fn isreal(self_: &Tensor) -> Result<Tensor> {
    ops::eq_scalar(&imag(self_)?, Scalar::Int(0))
}

/// The dims of a complex tensor's reduction, wrapped against its rank (`None` or empty: all).
fn reduced_dims(op: &str, self_: &Tensor, dim: Option<&[i64]>) -> Result<Vec<i64>> {
    let n = self_.dim();
    match dim {
        Some(d) if !d.is_empty() => d.iter().map(|&x| wrap_dim(op, x, n).map(|w| w as i64)).collect(),
        _ => Ok((0..n as i64).collect()),
    }
}

/// `sum` of a complex tensor over `dim` as the sums of its real and imaginary parts: the real
/// view reduced over the same dims, read back as complex.
pub fn sum(self_: &Tensor, dim: Option<&[i64]>, keepdim: bool, dtype: Option<ScalarType>) -> Result<Tensor> {
    linear_reduction("sum", self_, dim, keepdim, dtype, false)
}

/// `mean` of a complex tensor (see [`sum`]).
pub fn mean(self_: &Tensor, dim: Option<&[i64]>, keepdim: bool, dtype: Option<ScalarType>) -> Result<Tensor> {
    linear_reduction("mean", self_, dim, keepdim, dtype, true)
}

fn linear_reduction(
    op: &str,
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
    mean: bool,
) -> Result<Tensor> {
    let x = match dtype {
        Some(d) if d != self_.dtype() => {
            if !d.is_complex() {
                return Err(Error::invalid(op, format!("Expected a complex dtype for a complex input, but got {d}")));
            }
            crate::native::copy::to_dtype(self_, d)?
        }
        _ => self_.clone(),
    };
    let dims = reduced_dims(op, &x, dim)?;
    let r = ops::view_as_real(&x)?;
    let out = if mean {
        ops::mean_dim(&r, Some(&dims), keepdim, None)?
    } else {
        ops::sum_dim_intlist(&r, Some(&dims), keepdim, None)?
    };
    ops::view_as_complex(&out.contiguous().call()?)
}

/// `copy_`'s element conversions when either side is complex: real to complex gets a zero
/// imaginary part; complex to real keeps the real part (PyTorch warns that it discards the
/// imaginary part).
pub(crate) fn copy_loop(iter: &TensorIterator, out: ScalarType, src: ScalarType) -> Result<()> {
    match (out.is_complex(), src.is_complex()) {
        (true, true) => c10::dispatch_complex_types!(out, O => {
            c10::dispatch_complex_types!(src, I => {
                unary_loop::<Complex<O>, Complex<I>>(iter, |z| Complex::new(<O as Element>::from_f64(Element::to_f64(z.re)), <O as Element>::from_f64(Element::to_f64(z.im))))
            })
        }),
        (true, false) => c10::dispatch_complex_types!(out, O => {
            c10::dispatch_all_types!(src, I => {
                unary_loop::<Complex<O>, I>(iter, |x| Complex::new(x.cast::<O>(), <O as num_traits::Zero>::zero()))
            })
        }),
        (false, true) => c10::dispatch_complex_types!(src, I => {
            c10::dispatch_all_types!(out, O => unary_loop::<O, Complex<I>>(iter, |z| z.re.cast::<O>()))
        }),
        (false, false) => return Err(Error::invalid("copy_", "complex copy of two real dtypes")),
    }
    Ok(())
}
