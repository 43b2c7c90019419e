//! Element movement shared by the shape, indexing and sorting kernels: gathering elements of a
//! tensor by flat (row-major) position into a new contiguous tensor, per-dimension index maps,
//! and the little arithmetic that scatter/index_put accumulation needs, for every dtype.
//!
//! Note [Reference data movement]: these kernels read their input once into a row-major `Vec`
//! (`Tensor::to_vec`, which handles any strides), compute flat source positions, and build the
//! result with `Tensor::from_vec`. Everything is safe, bounds-checked code that works for every
//! dtype and layout; a vectorised strided path is performance work for later (as for
//! Note [Reference reductions]).

use c10::tensor_impl::contiguous_strides;
use c10::{bf16, f16, Element, Result, Scalar};

use crate::Tensor;

/// `s` converted to `T` with PyTorch's cast rules.
pub fn scalar_as<T: Element>(s: Scalar) -> T {
    match s {
        Scalar::Bool(b) => T::from_bool(b),
        Scalar::Int(i) => T::from_i64(i),
        Scalar::Float(f) => T::from_f64(f),
    }
}

/// A new contiguous tensor of `sizes` whose elements are `t`'s elements at the row-major
/// positions `idx` (`None` gives `fill`).
pub fn take_flat(t: &Tensor, idx: &[Option<usize>], sizes: &[i64], fill: Scalar) -> Result<Tensor> {
    if t.dtype().is_complex() {
        // Complex elements move as they are; a fill value is real (imaginary part 0).
        return c10::dispatch_complex_types!(t.dtype(), R => {
            let v = t.to_complex_vec::<R>()?;
            let f = c10::Complex::new(scalar_as::<R>(fill), <R as Element>::from_f64(0.0));
            Tensor::from_complex_vec(c10::size::try_collect(idx.len(), idx.iter().map(|i| i.map_or(f, |i| v[i])))?, sizes)
        });
    }
    c10::dispatch_all_types!(t.dtype(), T => {
        let v = t.to_vec::<T>()?;
        let f: T = scalar_as(fill);
        Tensor::from_vec(c10::size::try_collect(idx.len(), idx.iter().map(|i| i.map_or(f, |i| v[i])))?, sizes)
    })
}

/// A new contiguous tensor of zeros (false for bool).
pub fn zeros_of(sizes: &[i64], dtype: c10::ScalarType) -> Result<Tensor> {
    let n = c10::size::numel("zeros", sizes)? as usize;
    if dtype.is_complex() {
        return c10::dispatch_complex_types!(dtype, R => {
            let zero = c10::Complex::new(<R as Element>::from_f64(0.0), <R as Element>::from_f64(0.0));
            Tensor::from_complex_vec(c10::size::try_vec_filled(zero, n)?, sizes)
        });
    }
    c10::dispatch_all_types!(dtype, T => Tensor::from_vec(c10::size::try_vec_filled(T::default(), n)?, sizes))
}

/// Like [`take_flat`] with every position present.
pub fn take_all(t: &Tensor, idx: &[usize], sizes: &[i64]) -> Result<Tensor> {
    if t.dtype().is_complex() {
        return c10::dispatch_complex_types!(t.dtype(), R => {
            let v = t.to_complex_vec::<R>()?;
            Tensor::from_complex_vec(c10::size::try_collect(idx.len(), idx.iter().map(|&i| v[i]))?, sizes)
        });
    }
    c10::dispatch_all_types!(t.dtype(), T => {
        let v = t.to_vec::<T>()?;
        Tensor::from_vec(c10::size::try_collect(idx.len(), idx.iter().map(|&i| v[i]))?, sizes)
    })
}

/// Flat source positions for an output whose coordinate `o` along dimension `d` reads input
/// coordinate `maps[d][o]` (`None`: no input element). The output has sizes `maps[d].len()`,
/// the input `in_sizes` (row-major). The output's element count is checked and its buffer
/// reserved fallibly (Note [Fallible scratch buffers]).
pub fn separable_index(in_sizes: &[i64], maps: &[Vec<Option<i64>>]) -> Result<Vec<Option<usize>>> {
    let cs = contiguous_strides(in_sizes);
    let lens: Vec<i64> = maps.iter().map(|m| m.len() as i64).collect();
    let n = c10::size::numel("index", &lens)? as usize;
    let mut out = c10::size::try_vec(n)?;
    if n == 0 {
        return Ok(out);
    }
    let nd = maps.len();
    let mut idx = vec![0usize; nd];
    loop {
        let mut off = Some(0i64);
        for d in 0..nd {
            off = match (off, maps[d][idx[d]]) {
                (Some(o), Some(i)) => Some(o + i * cs[d]),
                _ => None,
            };
        }
        out.push(off.map(|o| o as usize));
        let mut d = nd;
        loop {
            if d == 0 {
                return Ok(out);
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < maps[d].len() {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// The identity map of a dimension of size `n`.
pub fn identity_map(n: i64) -> Result<Vec<Option<i64>>> {
    dim_map(n, Some)
}

/// The map of a dimension of size `n` whose output coordinate `o` reads `f(o)`, in a buffer
/// reserved fallibly: a dimension of an empty tensor can be huge (Note [Fallible scratch
/// buffers]).
pub fn dim_map(n: i64, f: impl FnMut(i64) -> Option<i64>) -> Result<Vec<Option<i64>>> {
    c10::size::try_collect(n.max(0) as usize, (0..n).map(f))
}

/// Calls `f` with every multi-index of `sizes`, in row-major order.
pub fn for_each_index(sizes: &[i64], mut f: impl FnMut(&[i64])) {
    if sizes.contains(&0) {
        return;
    }
    let mut idx = vec![0i64; sizes.len()];
    loop {
        f(&idx);
        let mut d = sizes.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < sizes[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// The arithmetic accumulation kernels need, for every element type: integers wrap, `f16`/`bf16`
/// compute in `f32`, and `bool` adds as `or` and multiplies as `and`.
pub trait ElemArith: Element {
    /// `self + o`.
    fn add(self, o: Self) -> Self;
    /// `self * o`.
    fn mul(self, o: Self) -> Self;
    /// `self / n` (the mean of a sum of `n` values; integers round toward zero).
    fn div_count(self, n: i64) -> Self;
}

macro_rules! int_arith {
    ($($t:ty),*) => {$(
        impl ElemArith for $t {
            #[inline]
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline]
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline]
            fn div_count(self, n: i64) -> Self { Self::from_i64(self.to_i64() / n.max(1)) }
        }
    )*};
}
int_arith!(u8, i8, i16, i32, i64);

macro_rules! float_arith {
    ($($t:ty),*) => {$(
        impl ElemArith for $t {
            #[inline]
            fn add(self, o: Self) -> Self { self + o }
            #[inline]
            fn mul(self, o: Self) -> Self { self * o }
            #[inline]
            fn div_count(self, n: i64) -> Self { self / n as $t }
        }
    )*};
}
float_arith!(f32, f64);

macro_rules! half_arith {
    ($($t:ty),*) => {$(
        impl ElemArith for $t {
            #[inline]
            fn add(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() + o.to_f32()) }
            #[inline]
            fn mul(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() * o.to_f32()) }
            #[inline]
            fn div_count(self, n: i64) -> Self { <$t>::from_f32(self.to_f32() / n as f32) }
        }
    )*};
}
half_arith!(f16, bf16);

impl ElemArith for bool {
    #[inline]
    fn add(self, o: Self) -> Self {
        self || o
    }
    #[inline]
    fn mul(self, o: Self) -> Self {
        self && o
    }
    #[inline]
    fn div_count(self, _n: i64) -> Self {
        self
    }
}

/// A total order with NaN greater than every number (PyTorch's sort order); equal values
/// compare equal, so a stable sort keeps their original order.
#[inline]
pub fn cmp_nan_last<T: PartialOrd>(a: &T, b: &T) -> std::cmp::Ordering {
    #[allow(clippy::eq_op)]
    a.partial_cmp(b).unwrap_or_else(|| {
        let (an, bn) = (a != a, b != b);
        an.cmp(&bn)
    })
}
