//! The front end's argument types: what the generated calls with defaults
//! ([`crate::builders`], the `Tensor` methods, `torch::zeros` and friends) take where the
//! explicit layer ([`crate::ops`]) takes a fixed Rust type.
//!
//! Note [Front-end calls]: every operator has two Rust spellings. The explicit one,
//! `ops::sum_dim_intlist(&x, Some(&[1]), true, None)`, takes every schema argument in schema
//! order, one function per overload; generated and generic code uses it. The front end takes
//! only the arguments without a default, in PyTorch's order, and returns a builder with a
//! setter per defaulted argument, finished by `.call()`: `x.sum().dim(1).keepdim(true).call()`.
//! Overloads that differ only in a `Tensor`/`Scalar` argument or in extra defaulted arguments
//! share one name (`x.pow(2)` and `x.pow(&e)`; `x.sum()` and `x.sum().dim(1)`), and the builder
//! picks the first overload in `native_functions.yaml` order that takes every argument that
//! was set; a call that has no defaulted argument returns the result directly (`x.relu()?`,
//! `x.mul(2.0)?`). Rust has no stable way to make `?` finish a builder (the `Try` trait is
//! unstable), hence the one `.call()`. The builders are plain structs of borrowed arguments;
//! `.call()` is `#[inline]` and goes straight to the operator's handle, so a front-end call
//! costs what the explicit call costs (bench rows `W1.add1_front` and friends).

use std::ops::Deref;

pub use crate::generated::front::*;

use c10::{Error, Result, Scalar};

use crate::Tensor;

/// An `int[]` or `int[N]` argument: a borrowed slice or array (`&[2, 2]`), a vector or one
/// integer. (Owned arrays are left out on purpose: `[2, 2]` would have to be copied to the
/// heap, and clippy would then ask every `&[2, 2]` to drop its borrow.) One integer
/// stands for `N` copies of it where the schema says `int[N]` (`2` is `[2, 2]` for
/// `max_pool2d`'s `kernel_size`), as PyTorch's argument parser does, and for `[i]` elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IntList<'a> {
    /// One integer, expanded to the schema's length.
    One(i64),
    /// Borrowed values.
    Slice(&'a [i64]),
    /// Owned values.
    Vec(Vec<i64>),
}

impl<'a> IntList<'a> {
    /// The values for a schema list of fixed length `n` (`int[2]`: `Some(2)`), or of any length.
    #[inline]
    pub fn expand(&self, n: Option<usize>) -> IntListRef<'_> {
        match self {
            IntList::One(i) => {
                let n = n.unwrap_or(1);
                if n > INLINE {
                    return IntListRef::Owned(vec![*i; n]);
                }
                let mut buf = [0; INLINE];
                buf[..n].fill(*i);
                IntListRef::Inline(buf, n)
            }
            IntList::Slice(s) => IntListRef::Slice(s),
            IntList::Vec(v) => IntListRef::Slice(v),
        }
    }
}

const INLINE: usize = 8;

/// The values of an [`IntList`], ready to pass as `&[i64]`.
#[derive(Clone, Debug)]
pub enum IntListRef<'a> {
    /// A list of `len` copies of one integer, kept inline.
    Inline([i64; INLINE], usize),
    /// The caller's values.
    Slice(&'a [i64]),
    /// A list too long to keep inline (no schema has one today).
    Owned(Vec<i64>),
}

impl Deref for IntListRef<'_> {
    type Target = [i64];
    #[inline]
    fn deref(&self) -> &[i64] {
        match self {
            IntListRef::Inline(b, n) => &b[..*n],
            IntListRef::Slice(s) => s,
            IntListRef::Owned(v) => v,
        }
    }
}

impl From<i64> for IntList<'_> {
    #[inline]
    fn from(i: i64) -> Self {
        IntList::One(i)
    }
}

impl<'a> From<&'a [i64]> for IntList<'a> {
    #[inline]
    fn from(s: &'a [i64]) -> Self {
        IntList::Slice(s)
    }
}

impl<'a, const N: usize> From<&'a [i64; N]> for IntList<'a> {
    #[inline]
    fn from(s: &'a [i64; N]) -> Self {
        IntList::Slice(s)
    }
}

impl<'a> From<&'a Vec<i64>> for IntList<'a> {
    #[inline]
    fn from(s: &'a Vec<i64>) -> Self {
        IntList::Slice(s)
    }
}

impl From<Vec<i64>> for IntList<'_> {
    #[inline]
    fn from(s: Vec<i64>) -> Self {
        IntList::Vec(s)
    }
}

/// A `Tensor[]` argument (`torch::cat`, `torch::stack`): a slice, array or vector of tensors,
/// or of references to tensors (`&[&a, &b]`, PyTorch's `[a, b]`), so a list needs no clones.
/// A list of references is gathered into handles (a reference-count increment each).
#[derive(Clone, Debug)]
pub enum TensorList<'a> {
    /// Borrowed tensors.
    Slice(&'a [Tensor]),
    /// Handles gathered from references.
    Owned(Vec<Tensor>),
}

impl TensorList<'_> {
    /// The tensors, ready to pass as `&[Tensor]`.
    #[inline]
    pub fn as_slice(&self) -> &[Tensor] {
        match self {
            TensorList::Slice(s) => s,
            TensorList::Owned(v) => v,
        }
    }
}

impl<'a> From<&'a [Tensor]> for TensorList<'a> {
    #[inline]
    fn from(s: &'a [Tensor]) -> Self {
        TensorList::Slice(s)
    }
}

impl<'a, const N: usize> From<&'a [Tensor; N]> for TensorList<'a> {
    #[inline]
    fn from(s: &'a [Tensor; N]) -> Self {
        TensorList::Slice(s)
    }
}

impl<'a> From<&'a Vec<Tensor>> for TensorList<'a> {
    #[inline]
    fn from(s: &'a Vec<Tensor>) -> Self {
        TensorList::Slice(s)
    }
}

impl From<Vec<Tensor>> for TensorList<'_> {
    #[inline]
    fn from(v: Vec<Tensor>) -> Self {
        TensorList::Owned(v)
    }
}

impl From<&[&Tensor]> for TensorList<'_> {
    #[inline]
    fn from(s: &[&Tensor]) -> Self {
        TensorList::Owned(s.iter().map(|t| (*t).clone()).collect())
    }
}

impl<const N: usize> From<&[&Tensor; N]> for TensorList<'_> {
    #[inline]
    fn from(s: &[&Tensor; N]) -> Self {
        TensorList::Owned(s.iter().map(|t| (*t).clone()).collect())
    }
}

/// An argument that is a tensor in one overload and a number in another (`pow`'s exponent,
/// `add`'s `other`): `&Tensor`, or anything that converts to a [`Scalar`].
#[derive(Clone, Copy, Debug)]
pub enum TensorOrScalar<'a> {
    /// A tensor.
    Tensor(&'a Tensor),
    /// A number.
    Scalar(Scalar),
}

impl<'a> TensorOrScalar<'a> {
    /// Whether this is a tensor.
    #[inline]
    pub fn is_tensor(&self) -> bool {
        matches!(self, TensorOrScalar::Tensor(_))
    }
    /// Whether this is a number.
    #[inline]
    pub fn is_scalar(&self) -> bool {
        matches!(self, TensorOrScalar::Scalar(_))
    }
    /// The tensor, or an error naming the operator `op` and the argument `name`.
    #[inline]
    pub fn tensor(&self, op: &str, name: &str) -> Result<&'a Tensor> {
        match self {
            TensorOrScalar::Tensor(t) => Ok(t),
            TensorOrScalar::Scalar(_) => Err(invalid(op, format!("argument '{name}' must be a Tensor, not a number"))),
        }
    }
    /// The number, or an error naming the operator `op` and the argument `name`.
    #[inline]
    pub fn scalar(&self, op: &str, name: &str) -> Result<Scalar> {
        match self {
            TensorOrScalar::Scalar(s) => Ok(*s),
            TensorOrScalar::Tensor(_) => Err(invalid(op, format!("argument '{name}' must be a number, not a Tensor"))),
        }
    }
}

impl<'a> From<&'a Tensor> for TensorOrScalar<'a> {
    #[inline]
    fn from(t: &'a Tensor) -> Self {
        TensorOrScalar::Tensor(t)
    }
}

macro_rules! scalar_into_tensor_or_scalar {
    ($($t:ty),*) => {$(
        impl From<$t> for TensorOrScalar<'_> {
            #[inline]
            fn from(v: $t) -> Self {
                TensorOrScalar::Scalar(Scalar::from(v))
            }
        }
    )*};
}
scalar_into_tensor_or_scalar!(Scalar, f64, f32, i64, i32, bool);

/// How a loss reduces over its elements (`reduction='mean'` in PyTorch). The explicit layer
/// takes the integer ATen uses ([`Reduction::code`]); the front end and the loss modules take
/// this.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// `reduction='none'`: one loss per element.
    None,
    /// `reduction='mean'` (the default).
    #[default]
    Mean,
    /// `reduction='sum'`.
    Sum,
}

impl Reduction {
    /// The integer ATen's loss operators take (0 none, 1 mean, 2 sum).
    #[inline]
    pub fn code(self) -> i64 {
        match self {
            Reduction::None => 0,
            Reduction::Mean => 1,
            Reduction::Sum => 2,
        }
    }
}

/// The value of an argument that the chosen overload needs and the call did not set: the
/// builder only picks an overload whose arguments are all present, so this is never an error
/// in practice, but it is an error value rather than a panic.
#[inline]
pub fn required<T>(v: Option<T>, op: &str, name: &str) -> Result<T> {
    v.ok_or_else(|| invalid(op, format!("missing required argument '{name}'")))
}

/// The error of a builder whose arguments match none of its operator's overloads.
#[cold]
pub fn no_overload(op: &str, overloads: &[&str]) -> Error {
    invalid(
        op,
        format!("received an invalid combination of arguments; the overloads are:\n  {}", overloads.join("\n  ")),
    )
}

fn invalid(op: &str, msg: String) -> Error {
    Error::InvalidArgument { op: op.to_string(), msg }
}
