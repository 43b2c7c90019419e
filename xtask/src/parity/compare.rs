//! Comparing returned tensors with PyTorch's: shapes and dtypes exactly, floating values within
//! `atol + rtol * |expected|` (NaN matches NaN, infinities match exactly), integers and bools
//! exactly.

use aten::{IValue, Stack, Tensor};

/// Tolerances of a float comparison: `|ours - expected| <= atol + rtol * |expected|`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Tolerance {
    /// Exact equality (NaN still matches NaN).
    pub const EXACT: Tolerance = Tolerance { rtol: 0.0, atol: 0.0 };
}

/// Whether one float element matches its expected value.
pub fn close(ours: f64, expected: f64, tol: Tolerance) -> bool {
    if expected.is_nan() {
        ours.is_nan()
    } else if expected.is_infinite() || !ours.is_finite() {
        ours == expected
    } else {
        (ours - expected).abs() <= tol.atol + tol.rtol * expected.abs()
    }
}

/// Row-major multi-index of a flat index.
fn unravel(mut flat: usize, sizes: &[i64]) -> Vec<usize> {
    let mut idx = vec![0; sizes.len()];
    for (i, &s) in sizes.iter().enumerate().rev() {
        let s = s.max(1) as usize;
        idx[i] = flat % s;
        flat /= s;
    }
    idx
}

/// Describes the first mismatch of two equally long value lists, or `None` if all match.
fn first_mismatch<T: Copy + std::fmt::Display>(
    ours: &[T],
    expected: &[T],
    sizes: &[i64],
    matches: impl Fn(T, T) -> bool,
    abs_diff: impl Fn(T, T) -> Option<f64>,
) -> Option<String> {
    let mut first = None;
    let mut count = 0usize;
    let mut max_diff = 0.0f64;
    for (i, (&o, &e)) in ours.iter().zip(expected).enumerate() {
        if let Some(d) = abs_diff(o, e) {
            max_diff = max_diff.max(d);
        }
        if !matches(o, e) {
            count += 1;
            first.get_or_insert(i);
        }
    }
    let i = first?;
    Some(format!(
        "mismatch at {:?} (flat {i}): got {}, expected {}; {count} of {} elements differ, max abs diff {max_diff:e}",
        unravel(i, sizes),
        ours[i],
        expected[i],
        ours.len()
    ))
}

/// Compares a returned tensor with the expected one.
pub fn compare_tensors(ours: &Tensor, expected: &Tensor, tol: Tolerance) -> Result<(), String> {
    if ours.sizes() != expected.sizes() {
        return Err(format!("shape {:?}, expected {:?}", ours.sizes(), expected.sizes()));
    }
    if ours.dtype() != expected.dtype() {
        return Err(format!("dtype {}, expected {}", ours.dtype().name(), expected.dtype().name()));
    }
    if expected.dtype().is_complex() {
        // Real and imaginary parts compared as a real tensor with a last dim of 2.
        let parts = |t: &Tensor| {
            aten::ops::view_as_real(&t.contiguous().call().map_err(|e| e.to_string())?).map_err(|e| e.to_string())
        };
        return compare_tensors(&parts(ours)?, &parts(expected)?, tol);
    }
    let sizes = expected.sizes();
    let mismatch = if expected.dtype().is_floating_point() {
        let o = ours.to_vec::<f64>().map_err(|e| e.to_string())?;
        let e = expected.to_vec::<f64>().map_err(|e| e.to_string())?;
        let diff = |a: f64, b: f64| (a.is_finite() && b.is_finite()).then(|| (a - b).abs());
        first_mismatch(&o, &e, sizes, |a, b| close(a, b, tol), diff)
    } else {
        // i64 holds every integer and bool value exactly (f64 would not beyond 2^53).
        let o = ours.to_vec::<i64>().map_err(|e| e.to_string())?;
        let e = expected.to_vec::<i64>().map_err(|e| e.to_string())?;
        let diff = |a: i64, b: i64| Some(a.abs_diff(b) as f64);
        first_mismatch(&o, &e, sizes, |a, b| a == b, diff)
    };
    match mismatch {
        None => Ok(()),
        Some(m) if expected.dtype().is_floating_point() => {
            Err(format!("{m} (rtol {:e}, atol {:e})", tol.rtol, tol.atol))
        }
        Some(m) => Err(m),
    }
}

/// A returned number or list of ints as the tensor PyTorch's generators store for it: a 0-dim
/// i64/f64/bool tensor, a 1-d i64 tensor for an `int[]`; `None` for other non-tensor values.
pub fn value_as_tensor(v: &IValue) -> Option<Tensor> {
    use c10::Scalar;
    Some(match v {
        IValue::Tensor(t) => t.clone(),
        IValue::Int(i) | IValue::Scalar(Scalar::Int(i)) => Tensor::scalar_tensor(*i),
        IValue::Double(x) | IValue::Scalar(Scalar::Float(x)) => Tensor::scalar_tensor(*x),
        IValue::Bool(b) | IValue::Scalar(Scalar::Bool(b)) => Tensor::scalar_tensor(*b),
        IValue::IntList(v) => Tensor::from_vec(v.clone(), &[v.len() as i64]).ok()?,
        _ => return None,
    })
}

/// The returns left on the stack, one entry per returned value: a `Tensor[]` (or a tuple)
/// counts as its elements in order.
pub fn flatten_returns(stack: Stack) -> Vec<IValue> {
    let mut out = Vec::with_capacity(stack.len());
    for v in stack {
        match v {
            IValue::TensorList(ts) => out.extend(ts.into_iter().map(IValue::Tensor)),
            IValue::Tuple(vs) => out.extend(flatten_returns(vs)),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32], shape: &[i64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), shape).unwrap()
    }

    const TOL: Tolerance = Tolerance { rtol: 1e-3, atol: 1e-5 };

    #[test]
    fn elementwise_rule() {
        assert!(close(f64::NAN, f64::NAN, TOL));
        assert!(!close(0.0, f64::NAN, TOL));
        assert!(!close(f64::NAN, 0.0, TOL));
        assert!(close(f64::INFINITY, f64::INFINITY, TOL));
        assert!(close(f64::NEG_INFINITY, f64::NEG_INFINITY, TOL));
        assert!(!close(f64::INFINITY, f64::NEG_INFINITY, TOL));
        assert!(!close(1e308, f64::INFINITY, TOL));
        assert!(!close(f64::INFINITY, 1e308, Tolerance { rtol: 1.0, atol: 1.0 }));
        // The edge: |d| == atol + rtol * |e| passes, a little more fails.
        let tol = Tolerance { rtol: 0.5, atol: 0.25 };
        assert!(close(3.25, 2.0, tol));
        assert!(close(0.75, 2.0, tol));
        assert!(!close(3.25 + 1e-9, 2.0, tol));
        assert!(!close(0.75 - 1e-9, 2.0, tol));
        assert!(close(-0.25, 0.0, tol));
        assert!(!close(-0.25 - 1e-9, 0.0, tol));
        assert!(close(0.0, -0.0, Tolerance::EXACT));
    }

    #[test]
    fn tensors_with_nan_and_inf_compare_equal() {
        let a = f32s(&[f32::NAN, f32::INFINITY, -1.0, f32::NEG_INFINITY], &[2, 2]);
        let b = f32s(&[f32::NAN, f32::INFINITY, -1.000001, f32::NEG_INFINITY], &[2, 2]);
        compare_tensors(&a, &b, TOL).unwrap();
    }

    #[test]
    fn reports_first_mismatch_and_max_diff() {
        let a = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let b = f32s(&[1.0, 2.0, 3.5, 4.0, 5.0, 7.0], &[2, 3]);
        let e = compare_tensors(&a, &b, TOL).unwrap_err();
        assert_eq!(
            e,
            "mismatch at [0, 2] (flat 2): got 3, expected 3.5; 2 of 6 elements differ, max abs diff 1e0 \
             (rtol 1e-3, atol 1e-5)"
        );
        let n = f32s(&[f32::NAN], &[1]);
        let z = f32s(&[0.0], &[1]);
        assert!(compare_tensors(&n, &z, TOL).unwrap_err().starts_with("mismatch at [0] (flat 0): got NaN, expected 0"));
        assert!(compare_tensors(&z, &n, TOL).is_err());
    }

    #[test]
    fn shape_and_dtype_must_match_exactly() {
        let a = f32s(&[1.0, 2.0], &[2]);
        let e = compare_tensors(&a, &f32s(&[1.0, 2.0], &[1, 2]), TOL).unwrap_err();
        assert_eq!(e, "shape [2], expected [1, 2]");
        let d = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
        assert_eq!(compare_tensors(&a, &d, TOL).unwrap_err(), "dtype float32, expected float64");
        let i = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
        assert_eq!(compare_tensors(&i, &d, TOL).unwrap_err(), "dtype int64, expected float64");
    }

    #[test]
    fn integers_compare_exactly_beyond_f64() {
        let big = 1i64 << 60;
        let a = Tensor::from_vec(vec![big, 3], &[2]).unwrap();
        let b = Tensor::from_vec(vec![big + 1, 3], &[2]).unwrap();
        let e = compare_tensors(&a, &b, Tolerance { rtol: 1.0, atol: 1.0 }).unwrap_err();
        assert!(e.starts_with(&format!("mismatch at [0] (flat 0): got {big}, expected {}", big + 1)), "{e}");
        compare_tensors(&a, &a.clone(), Tolerance::EXACT).unwrap();
        let t = Tensor::from_vec(vec![true, false], &[2]).unwrap();
        let f = Tensor::from_vec(vec![true, true], &[2]).unwrap();
        assert!(compare_tensors(&t, &f, TOL).unwrap_err().starts_with("mismatch at [1] (flat 1): got 0, expected 1"));
    }

    #[test]
    fn tensor_lists_flatten() {
        let t = f32s(&[1.0], &[1]);
        let stack = vec![IValue::TensorList(vec![t.clone(), t.clone()]), IValue::Tensor(t), IValue::Int(3)];
        let kinds: Vec<&str> = flatten_returns(stack).iter().map(IValue::kind).collect();
        assert_eq!(kinds, ["Tensor", "Tensor", "Tensor", "int"]);
    }
}
