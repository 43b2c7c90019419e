//! Python's `x[...]` for Rust: `x.i((.., 1..3, NewAxis))` through the [`IndexOp`] trait, with
//! PyTorch's meaning for every kind of index (`TensorIndexing.h`'s `applySlicing`). The kernels
//! behind it are `select`, `slice`, `unsqueeze` and `index` (`native/shape.rs`,
//! `native/indexing.rs`).
//!
//! | Python            | Rust                                  | result          |
//! |-------------------|---------------------------------------|-----------------|
//! | `x[1]`, `x[-1]`   | `x.i(1)`, `x.i(-1)`                   | view (`select`) |
//! | `x[1:3]`, `x[:3]`, `x[1:]`, `x[:]` | `x.i(1..3)`, `x.i(..3)`, `x.i(1..)`, `x.i(..)` | view (`slice`) |
//! | `x[1:5:2]`, `x[::2]` | `x.i(step(1..5, 2))`, `x.i(step(.., 2))` | view (`slice`) |
//! | `x[None]`         | `x.i(NewAxis)`                        | view (`unsqueeze`) |
//! | `x[..., 0]`       | `x.i((Ellipsis, 0))`                  | view            |
//! | `x[mask]`, `x[idx]`, `x[[0, 2]]` | `x.i(&mask)`, `x.i(&idx)`, `x.i([0, 2])` | copy (`index`) |
//! | `x[:, 1]`         | `x.i((.., 1))`                        | view            |
//!
//! Several indices are a tuple (up to six) or a `Vec<TensorIndex>` built at run time.
//! Inclusive ranges (`1..=2`) are `1:3`; `..=-1` runs to the end.
//!
//! Rejected: `(a..b).step_by(k)` as the strided slice. `StepBy` keeps its range and step private,
//! and rebuilding `a:b:k` from the numbers it yields is wrong for negative bounds, which count
//! from the end in a slice but not in an iterator (`(-4..2).step_by(4)` yields `-4, 0`).

use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

use c10::{Error, Result, ScalarType};
use smallvec::SmallVec;

use crate::Tensor;

/// A slice `start:stop:step`: Python's `slice` object, PyTorch C++'s `indexing::Slice`. Bounds
/// count from the end when negative and are clamped to the dimension, as in Python; the step must
/// be positive (PyTorch has no negative steps). Every range converts into one; [`step`] adds a
/// step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slice {
    /// First index (`None`: from the start).
    pub start: Option<i64>,
    /// One past the last index (`None`: to the end).
    pub stop: Option<i64>,
    /// Distance between taken indices.
    pub step: i64,
}

impl Slice {
    /// `slice(start, stop, step)`.
    pub const fn new(start: Option<i64>, stop: Option<i64>, step: i64) -> Slice {
        Slice { start, stop, step }
    }

    /// The same bounds with another step.
    pub const fn with_step(self, step: i64) -> Slice {
        Slice { step, ..self }
    }
}

impl Default for Slice {
    /// `:`, the whole dimension.
    fn default() -> Slice {
        Slice::new(None, None, 1)
    }
}

/// The strided slice `start:stop:step` of a range: `x.i(step(1..7, 2))` is `x[1:7:2]`,
/// `x.i(step(.., 2))` is `x[::2]`.
///
/// ```
/// use aten::indexing::{step, IndexOp};
/// let x = aten::Tensor::from_slice(&[0i64, 1, 2, 3, 4, 5, 6]);
/// assert_eq!(x.i(step(1..6, 2)).unwrap().to_vec::<i64>().unwrap(), vec![1, 3, 5]);
/// assert_eq!(x.i(step(.., 3)).unwrap().to_vec::<i64>().unwrap(), vec![0, 3, 6]);
/// ```
pub fn step(range: impl Into<Slice>, step: i64) -> Slice {
    range.into().with_step(step)
}

/// `None` in an index (`x[None]`): a new dimension of size one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NewAxis;

/// `...` in an index (`x[..., 0]`): as many whole dimensions as the other indices leave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ellipsis;

/// One index of `x[i0, i1, ...]`. Everything that can be one converts into it.
#[derive(Clone, Debug)]
pub enum TensorIndex {
    /// An integer: selects one position and drops the dimension (a view). Negative counts from
    /// the end.
    Select(i64),
    /// A slice (a view).
    Slice(Slice),
    /// `None`: inserts a dimension of size one (a view).
    NewAxis,
    /// `...`: whole dimensions, as many as the other indices leave.
    Ellipsis,
    /// `True` / `False`: inserts a dimension of size one / zero.
    Bool(bool),
    /// A tensor of integer positions (advanced indexing) or a bool mask over as many dimensions
    /// as it has; the result is a copy. A zero-dim integer tensor selects like an integer.
    Tensor(Tensor),
}

macro_rules! index_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for TensorIndex {
            #[inline]
            fn from(i: $t) -> Self {
                TensorIndex::Select(saturate(i))
            }
        }
        impl From<Range<$t>> for Slice {
            #[inline]
            fn from(r: Range<$t>) -> Self {
                Slice::new(Some(saturate(r.start)), Some(saturate(r.end)), 1)
            }
        }
        impl From<RangeFrom<$t>> for Slice {
            #[inline]
            fn from(r: RangeFrom<$t>) -> Self {
                Slice::new(Some(saturate(r.start)), None, 1)
            }
        }
        impl From<RangeTo<$t>> for Slice {
            #[inline]
            fn from(r: RangeTo<$t>) -> Self {
                Slice::new(None, Some(saturate(r.end)), 1)
            }
        }
        impl From<RangeInclusive<$t>> for Slice {
            #[inline]
            fn from(r: RangeInclusive<$t>) -> Self {
                let (start, end) = r.into_inner();
                Slice::new(Some(saturate(start)), inclusive_stop(saturate(end)), 1)
            }
        }
        impl From<RangeToInclusive<$t>> for Slice {
            #[inline]
            fn from(r: RangeToInclusive<$t>) -> Self {
                Slice::new(None, inclusive_stop(saturate(r.end)), 1)
            }
        }
        index_from_slice!(Range<$t>, RangeFrom<$t>, RangeTo<$t>, RangeInclusive<$t>, RangeToInclusive<$t>);
    )*};
}

macro_rules! index_from_slice {
    ($($t:ty),*) => {$(
        impl From<$t> for TensorIndex {
            #[inline]
            fn from(r: $t) -> Self {
                TensorIndex::Slice(r.into())
            }
        }
    )*};
}

/// An index as `i64`; a `usize` past `i64::MAX` is out of range either way, and a bound past
/// the end is clamped, so saturating keeps the meaning.
#[inline]
fn saturate<T: TryInto<i64>>(i: T) -> i64 {
    i.try_into().unwrap_or(i64::MAX)
}

/// The exclusive stop of an inclusive end: `..=-1` runs to the end.
#[inline]
fn inclusive_stop(end: i64) -> Option<i64> {
    if end == -1 {
        None
    } else {
        Some(end.saturating_add(1))
    }
}

index_from_int!(i64, i32, usize);
index_from_slice!(Slice, RangeFull);

impl From<RangeFull> for Slice {
    #[inline]
    fn from(_: RangeFull) -> Self {
        Slice::default()
    }
}

impl From<NewAxis> for TensorIndex {
    #[inline]
    fn from(_: NewAxis) -> Self {
        TensorIndex::NewAxis
    }
}

impl From<Ellipsis> for TensorIndex {
    #[inline]
    fn from(_: Ellipsis) -> Self {
        TensorIndex::Ellipsis
    }
}

impl From<bool> for TensorIndex {
    #[inline]
    fn from(b: bool) -> Self {
        TensorIndex::Bool(b)
    }
}

impl From<Tensor> for TensorIndex {
    #[inline]
    fn from(t: Tensor) -> Self {
        TensorIndex::Tensor(t)
    }
}

impl From<&Tensor> for TensorIndex {
    #[inline]
    fn from(t: &Tensor) -> Self {
        TensorIndex::Tensor(t.clone())
    }
}

// Python lists as indices (`x[[0, 2]]`, `x[[True, False]]`): index tensors.
macro_rules! index_from_list {
    ($($t:ty),*) => {$(
        impl From<Vec<$t>> for TensorIndex {
            fn from(v: Vec<$t>) -> Self {
                let n = v.len() as i64;
                TensorIndex::Tensor(Tensor::from_vec(v, &[n]).expect("a Vec is its length"))
            }
        }
        impl From<&[$t]> for TensorIndex {
            fn from(v: &[$t]) -> Self {
                TensorIndex::Tensor(Tensor::from_slice(v))
            }
        }
        impl<const N: usize> From<[$t; N]> for TensorIndex {
            fn from(v: [$t; N]) -> Self {
                TensorIndex::Tensor(Tensor::from_slice(&v))
            }
        }
    )*};
}
index_from_list!(i64, bool);

/// The indices of one indexing call: one index, a tuple of them, or a list built at run time.
#[derive(Clone, Debug, Default)]
pub struct Indices(SmallVec<[TensorIndex; 4]>);

impl Indices {
    /// The indices, in order.
    #[inline]
    pub fn as_slice(&self) -> &[TensorIndex] {
        &self.0
    }
}

macro_rules! indices_from_one {
    ($($t:ty),*) => {$(
        impl From<$t> for Indices {
            #[inline]
            fn from(i: $t) -> Self {
                Indices(smallvec::smallvec![i.into()])
            }
        }
    )*};
}
indices_from_one!(
    i64,
    i32,
    usize,
    bool,
    Slice,
    RangeFull,
    NewAxis,
    Ellipsis,
    Tensor,
    &Tensor,
    TensorIndex,
    Vec<i64>,
    &[i64],
    Vec<bool>,
    &[bool]
);
macro_rules! indices_from_ranges {
    ($($t:ty),*) => {$(
        indices_from_one!(Range<$t>, RangeFrom<$t>, RangeTo<$t>, RangeInclusive<$t>, RangeToInclusive<$t>);
    )*};
}
indices_from_ranges!(i64, i32, usize);

impl<const N: usize> From<[i64; N]> for Indices {
    #[inline]
    fn from(i: [i64; N]) -> Self {
        Indices(smallvec::smallvec![i.into()])
    }
}

impl<const N: usize> From<[bool; N]> for Indices {
    #[inline]
    fn from(i: [bool; N]) -> Self {
        Indices(smallvec::smallvec![i.into()])
    }
}

impl From<Vec<TensorIndex>> for Indices {
    #[inline]
    fn from(v: Vec<TensorIndex>) -> Self {
        Indices(v.into())
    }
}

impl From<&[TensorIndex]> for Indices {
    #[inline]
    fn from(v: &[TensorIndex]) -> Self {
        Indices(v.iter().cloned().collect())
    }
}

macro_rules! indices_from_tuple {
    ($($name:ident),+) => {
        impl<$($name: Into<TensorIndex>),+> From<($($name,)+)> for Indices {
            #[inline]
            #[allow(non_snake_case)]
            fn from(($($name,)+): ($($name,)+)) -> Self {
                Indices(smallvec::smallvec![$($name.into()),+])
            }
        }
    };
}
indices_from_tuple!(A);
indices_from_tuple!(A, B);
indices_from_tuple!(A, B, C);
indices_from_tuple!(A, B, C, D);
indices_from_tuple!(A, B, C, D, E);
indices_from_tuple!(A, B, C, D, E, F);

impl From<()> for Indices {
    /// `x[()]`: no index, the tensor itself (as an alias).
    #[inline]
    fn from(_: ()) -> Self {
        Indices::default()
    }
}

/// `x[...]` as a method: `x.i(1)`, `x.i((.., 1..3))`, `x.i((Ellipsis, NewAxis))`, `x.i(&mask)`.
/// Integers, slices, `NewAxis` and `Ellipsis` give views of `self` (writes through them are
/// seen by `self`); tensors and lists as indices give copies, as in PyTorch. Errors are values.
///
/// ```
/// use aten::indexing::{IndexOp, NewAxis, Ellipsis};
/// use aten::tensor;
/// let x = tensor![[1., 2., 3.], [4., 5., 6.]].unwrap();
/// assert_eq!(x.i((.., 1)).unwrap().to_vec::<f32>().unwrap(), vec![2., 5.]);
/// assert_eq!(x.i((1, 1..)).unwrap().to_vec::<f32>().unwrap(), vec![5., 6.]);
/// assert_eq!(x.i((-1, ..-1)).unwrap().to_vec::<f32>().unwrap(), vec![4., 5.]);
/// assert_eq!(x.i((NewAxis, Ellipsis, 0)).unwrap().sizes(), &[1, 2]);
/// let mask = tensor![true, false, true].unwrap();
/// assert_eq!(x.i((.., &mask)).unwrap().to_vec::<f32>().unwrap(), vec![1., 3., 4., 6.]);
/// assert!(x.i((0, 0, 0)).is_err()); // too many indices for tensor of dimension 2
/// assert!(x.i(2).is_err()); // index 2 is out of bounds for dimension 0 with size 2
/// ```
pub trait IndexOp {
    /// `self[index]`.
    fn i<I: Into<Indices>>(&self, index: I) -> Result<Tensor>;
}

impl IndexOp for Tensor {
    #[inline]
    fn i<I: Into<Indices>>(&self, indices: I) -> Result<Tensor> {
        index(self, indices.into().as_slice())
    }
}

const OP: &str = "index";

/// Whether a tensor index is a mask (bool, or uint8 as PyTorch still accepts), which spans as
/// many dimensions as it has.
fn is_mask(t: &Tensor) -> bool {
    matches!(t.dtype(), ScalarType::Bool | ScalarType::U8)
}

/// `self[indices]` (`applySlicing`, then `index` when there are tensor indices): the basic
/// indices are applied left to right as views; the tensor indices are gathered with their
/// dimensions and applied in one `index` call at the end.
pub fn index(self_: &Tensor, indices: &[TensorIndex]) -> Result<Tensor> {
    let ndim = self_.dim() as i64;
    let mut specified = 0i64;
    let mut ellipses = 0;
    for idx in indices {
        match idx {
            TensorIndex::Select(_) | TensorIndex::Slice(_) => specified += 1,
            TensorIndex::Tensor(t) if is_mask(t) => specified += t.dim() as i64,
            TensorIndex::Tensor(_) => specified += 1,
            TensorIndex::Ellipsis => ellipses += 1,
            TensorIndex::NewAxis | TensorIndex::Bool(_) => {}
        }
    }
    if ellipses > 1 {
        return Err(Error::invalid(OP, "an index can only have a single ellipsis ('...')"));
    }
    if specified > ndim {
        return Err(Error::invalid(OP, format!("too many indices for tensor of dimension {ndim}")));
    }

    let mut result = self_.clone();
    // The dimension of `result` the next index applies to, and of `self_` (for messages).
    let mut dim = 0i64;
    let mut real_dim = 0i64;
    // Tensor indices with the dimension of `result` they start at.
    let mut advanced: Vec<(i64, Tensor)> = Vec::new();
    for idx in indices {
        match idx {
            TensorIndex::Select(i) => {
                result = select(&result, dim, *i, real_dim)?;
                real_dim += 1;
            }
            TensorIndex::Slice(s) => {
                result = crate::ops::slice(&result, dim, s.start, s.stop, s.step)?;
                dim += 1;
                real_dim += 1;
            }
            TensorIndex::NewAxis => {
                result = crate::ops::unsqueeze(&result, dim)?;
                dim += 1;
            }
            TensorIndex::Ellipsis => {
                dim += ndim - specified;
                real_dim += ndim - specified;
            }
            TensorIndex::Bool(b) => {
                result = crate::ops::unsqueeze(&result, dim)?;
                advanced.push((dim, bool_to_index(*b, self_)?));
                dim += 1;
            }
            TensorIndex::Tensor(t) if t.dim() == 0 && is_mask(t) => {
                result = crate::ops::unsqueeze(&result, dim)?;
                advanced.push((dim, bool_to_index(t.item::<bool>()?, self_)?));
                dim += 1;
            }
            TensorIndex::Tensor(t) if t.dim() == 0 && t.dtype().is_integral(false) => {
                result = select(&result, dim, t.item::<i64>()?, real_dim)?;
                real_dim += 1;
            }
            TensorIndex::Tensor(t) => {
                let span = if is_mask(t) { t.dim() as i64 } else { 1 };
                advanced.push((dim, t.clone()));
                dim += span;
                real_dim += span;
            }
        }
    }
    if advanced.is_empty() {
        // `x[()]` and `x[...]` are aliases, not the tensor itself, as in PyTorch.
        return if result.is_same(self_) { crate::ops::alias(self_) } else { Ok(result) };
    }
    // `index` takes one entry per indexed dimension, a mask one entry for all of its dimensions.
    let mut list: Vec<Option<Tensor>> = Vec::with_capacity(advanced.len());
    let mut covered = 0i64;
    for (d, t) in advanced {
        while covered < d {
            list.push(None);
            covered += 1;
        }
        covered += if is_mask(&t) { t.dim() as i64 } else { 1 };
        list.push(Some(t));
    }
    crate::ops::index(&result, &list)
}

/// `select`, with the bounds error naming the dimension of the indexed tensor (`real_dim`) as
/// PyTorch's does: `x[0, 5]` is out of bounds "for dimension 1".
fn select(t: &Tensor, dim: i64, index: i64, real_dim: i64) -> Result<Tensor> {
    if let Some(&size) = t.sizes().get(dim as usize) {
        if index < -size || index >= size {
            return Err(Error::IndexOutOfRange { op: OP.into(), index, dim: real_dim, size });
        }
    }
    crate::ops::select(t, dim, index)
}

/// The index of a new size-one dimension that `True` keeps and `False` empties
/// (`boolToIndexingTensor`), on the device of `like`.
fn bool_to_index(b: bool, like: &Tensor) -> Result<Tensor> {
    let t = Tensor::from_vec(if b { vec![0i64] } else { Vec::new() }, &[b as i64])?;
    if like.device().is_cpu() {
        Ok(t)
    } else {
        t.to_device(like.device())
    }
}
