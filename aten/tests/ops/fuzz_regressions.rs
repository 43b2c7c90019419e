//! Inputs the `op_surface` fuzz target (fuzz/) found to panic inside aten kernels, replayed as
//! plain calls with the values PyTorch gives.

use aten::{ops, Tensor};

/// `logit(x, eps)` with `eps > 0.5` (lower clamp bound above the upper one) panicked in
/// `f64::clamp`; PyTorch clamps with `x < eps ? eps : (x > 1 - eps ? 1 - eps : x)`.
#[test]
fn logit_with_eps_above_one_half_does_not_panic() {
    let x = Tensor::from_vec(vec![0.1f64, 0.9], &[2]).unwrap();
    let y = ops::logit(&x, Some(0.75)).unwrap().to_vec::<f64>().unwrap();
    // 0.1 < 0.75 → 0.75; 0.9 ≥ 0.75 and > 0.25 → 0.25.
    assert_eq!(y, vec![(0.75f64 / 0.25).ln(), (0.25f64 / 0.75).ln()]);
    let y = ops::logit(&x, Some(f64::NAN)).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(y, vec![(0.1f64 / 0.9).ln(), (0.9f64 / 0.1).ln()]);
}

/// Integer floor division of `i64::MIN` by `-1` overflowed in the remainder test; the quotient
/// wraps to `i64::MIN`, as in PyTorch.
#[test]
fn floor_divide_min_by_minus_one_wraps() {
    let a = Tensor::from_vec(vec![i64::MIN, -7, 7], &[3]).unwrap();
    let b = Tensor::from_vec(vec![-1i64, 2, -2], &[3]).unwrap();
    assert_eq!(ops::floor_divide(&a, &b).unwrap().to_vec::<i64>().unwrap(), vec![i64::MIN, -4, -4]);
}

/// An empty input with a 2^50-sized dimension (found with 2^40 by `op_surface`).
fn huge_empty() -> Tensor {
    ops::empty(&[1 << 50, 0], Some(c10::ScalarType::F32), None, None, None, None).unwrap()
}

fn assert_oom(r: c10::Result<Tensor>) {
    match r {
        Err(e @ c10::Error::OutOfMemory { .. }) => {
            assert!(e.to_string().starts_with("DefaultCPUAllocator: can't allocate memory"), "{e}")
        }
        Err(e) => panic!("expected an out-of-memory error, got {e}"),
        Ok(t) => panic!("expected an out-of-memory error, got a tensor of shape {:?}", t.sizes()),
    }
}

/// Reductions over the empty dim of `[2^50, 0]` have 2^50 outputs: PyTorch reports the failed
/// allocation; our kernels sized a `Vec` by the output and aborted the process
/// (Note [Fallible scratch buffers]).
#[test]
fn reductions_with_huge_outputs_fail_as_values() {
    let x = huge_empty();
    assert_oom(ops::logsumexp(&x, &[1], false));
    assert_oom(ops::prod(&x, 1, false, None));
    assert_oom(ops::any_dim(&x, 1, false));
    assert_oom(ops::sum_dim_intlist(&x, Some(&[1]), false, None));
    assert_oom(ops::mean_dim(&x, Some(&[1]), true, None));
    assert_oom(ops::var(&x, Some(&[1]), None, false));
    // amax over an empty dim is PyTorch's "Expected reduction dim 1 to have non-zero size".
    assert!(ops::amax(&x, &[1], false).is_err());
    // Reducing the huge dim instead leaves an empty result, as in PyTorch.
    assert_eq!(ops::sum_dim_intlist(&x, Some(&[0]), false, None).unwrap().sizes(), &[0]);
    // Kept sizes whose product overflows i64 are an error, not an overflow.
    let y = ops::empty(&[1 << 40, 1 << 40, 0], Some(c10::ScalarType::F32), None, None, None, None).unwrap();
    let e = ops::logsumexp(&y, &[2], false).unwrap_err().to_string();
    assert!(e.contains("numel: integer multiplication overflow"), "{e}");
}

/// Shape ops of an empty input with a huge dim: an empty result is returned without building
/// per-dim maps as long as the dims; a huge non-empty result is an out-of-memory error.
#[test]
fn shape_ops_on_huge_empty_inputs() {
    let x = huge_empty();
    assert_eq!(ops::flip(&x, &[0, 1]).unwrap().sizes(), &[1 << 50, 0]);
    assert_eq!(ops::rot90(&x, 1, &[0, 1]).unwrap().sizes(), &[0, 1 << 50]);
    assert_eq!(ops::roll(&x, &[3], &[0]).unwrap().sizes(), &[1 << 50, 0]);
    assert_eq!(ops::constant_pad_nd(&x, &[0, 0, 1, 1], c10::Scalar::Int(0)).unwrap().sizes(), &[(1 << 50) + 2, 0]);
    assert_eq!(ops::repeat(&x, &[2, 3]).unwrap().sizes(), &[1 << 51, 0]);
    let idx = Tensor::from_vec(vec![0i64, 0], &[2]).unwrap();
    assert_eq!(
        ops::index_select(&x, 1, &Tensor::from_vec(Vec::<i64>::new(), &[0]).unwrap()).unwrap().sizes(),
        &[1 << 50, 0]
    );
    assert!(ops::index_select(&x, 1, &idx).is_err()); // index 0 out of range for a size-0 dim
    assert_oom(ops::constant_pad_nd(&x, &[1, 1], c10::Scalar::Int(0)));
    assert_oom(ops::pad(&x, &[1, 1], "constant", None));
    assert_oom(ops::diag_embed(
        &ops::empty(&[1 << 25], Some(c10::ScalarType::F32), None, None, None, None).unwrap(),
        0,
        -2,
        -1,
    ));
    let e = ops::repeat(&x, &[1 << 20, 1]).unwrap_err().to_string();
    assert!(e.contains("numel: integer multiplication overflow"), "{e}");
}

/// `randperm(n)` for an `n` whose permutation cannot be held panicked with "capacity overflow".
#[test]
fn randperm_of_a_huge_n_is_an_out_of_memory_error() {
    assert_oom(ops::randperm(1 << 61, None, None, None, None));
    assert_oom(ops::randperm(1 << 50, None, None, None, None));
}

/// `tensordot` over a dim of a zero-dim tensor indexed its (empty) sizes; PyTorch's
/// `sym_size(dim)` refuses it.
#[test]
fn tensordot_of_a_zero_dim_tensor_is_an_error() {
    let s = Tensor::from_vec(vec![2.0f32], &[]).unwrap();
    let v = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let e = ops::tensordot(&s, &v, &[0], &[0]).unwrap_err().to_string();
    assert!(e.contains("Dimension specified as 0 but tensor has no dimensions"), "{e}");
    let e = ops::tensordot(&v, &s, &[-1], &[-1]).unwrap_err().to_string();
    assert!(e.contains("Dimension specified as -1 but tensor has no dimensions"), "{e}");
    // With no dims it is the outer product, as in PyTorch.
    assert_eq!(ops::tensordot(&s, &v, &[], &[]).unwrap().to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
    assert_eq!(ops::tensordot(&v, &v, &[0], &[0]).unwrap().to_vec::<f32>().unwrap(), vec![5.0]);
}

/// `diagonal` with an offset of `i64::MIN` negated it; the diagonal is empty.
#[test]
fn diagonal_with_extreme_offsets_is_empty() {
    let m = Tensor::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]).unwrap();
    for offset in [i64::MIN, i64::MAX, -3, 3] {
        assert_eq!(ops::diagonal(&m, offset, 0, 1).unwrap().sizes(), &[0], "offset {offset}");
    }
    assert_eq!(ops::diagonal(&m, -1, 0, 1).unwrap().to_vec::<f32>().unwrap(), vec![3.0]);
    assert_eq!(ops::diagonal(&m, 2, 0, 1).unwrap().to_vec::<f32>().unwrap(), vec![2.0]);
}

/// `native_group_norm` checked `N * C * HxW` against the element count with an overflowing
/// product.
#[test]
fn native_group_norm_with_overflowing_sizes_is_an_error() {
    let x = Tensor::from_vec(vec![1.0f32; 4], &[1, 2, 2]).unwrap();
    let e = ops::native_group_norm(&x, None, None, 1 << 40, 2, 1 << 40, 1, 1e-5).unwrap_err().to_string();
    assert!(e.contains("to have N * C * HxW"), "{e}");
}

/// `convolution` computed its output size in int64: a huge padding, stride or dilation
/// overflowed it (a panic in debug builds). The arithmetic is exact now; a size past int64 is an
/// error and a merely huge one an out-of-memory error.
#[test]
fn convolution_output_size_arithmetic_does_not_overflow() {
    let x = Tensor::from_vec(vec![1.0f32; 4], &[1, 1, 4]).unwrap();
    let w = Tensor::from_vec(vec![1.0f32; 2], &[1, 1, 2]).unwrap();
    let e = ops::convolution(&x, &w, None, &[1], &[i64::MAX / 2 + 1], &[1], false, &[0], 1).unwrap_err().to_string();
    assert!(e.contains("does not fit in int64"), "{e}");
    let e = ops::convolution(&x, &w, None, &[i64::MAX], &[0], &[1], true, &[0], 1).unwrap_err().to_string();
    assert!(e.contains("does not fit in int64"), "{e}");
    // A kernel dilated past any input is PyTorch's "Kernel size can't be greater" error.
    let e = ops::convolution(&x, &w, None, &[1], &[0], &[i64::MAX], false, &[0], 1).unwrap_err().to_string();
    assert!(e.contains("Kernel size can't be greater than actual input size"), "{e}");
    assert!(matches!(
        ops::convolution(&x, &w, None, &[1], &[1 << 40], &[1], false, &[0], 1),
        Err(c10::Error::OutOfMemory { .. })
    ));
    let y = ops::convolution(&x, &w, None, &[1], &[0], &[1], false, &[0], 1).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, 2.0, 2.0]);
}

/// `roll` by `i64::MIN` overflowed `o - shift` (found by the ten-minute op_surface run).
#[test]
fn roll_by_extreme_shifts() {
    let x = Tensor::from_vec(vec![0i64, 1, 2], &[3]).unwrap();
    // i64::MIN ≡ 1 (mod 3), i64::MAX ≡ 1 (mod 3).
    assert_eq!(ops::roll(&x, &[i64::MIN], &[0]).unwrap().to_vec::<i64>().unwrap(), vec![2, 0, 1]);
    assert_eq!(ops::roll(&x, &[i64::MAX], &[0]).unwrap().to_vec::<i64>().unwrap(), vec![2, 0, 1]);
    assert_eq!(ops::roll(&x, &[-1], &[0]).unwrap().to_vec::<i64>().unwrap(), vec![1, 2, 0]);
}

/// Pooling with a kernel, dilation and padding near int64's limit: the effective kernel
/// `(k - 1) * d + 1` overflowed in the padding check (found by the ten-minute op_surface run),
/// and the window arithmetic (`j * d`, `start + k`) could too.
#[test]
fn pooling_with_extreme_kernels_does_not_overflow() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[1, 1, 4]).unwrap();
    // Effective kernel 2^63 - 1, so padding up to 2^62 - 1 is allowed. Output size
    // 4 + 2 (2^62 - 1) - (2^63 - 2) - 1 + 1 = 4, and every window spans the whole input.
    let y = ops::max_pool1d(&x, &[i64::MAX], &[1], &[(1 << 62) - 1], &[1], false).unwrap();
    assert_eq!(y.sizes(), &[1, 1, 4]);
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![4.0; 4]);
    // Padding above half the effective kernel is PyTorch's error, not an overflow.
    let e = ops::max_pool1d(&x, &[2], &[1], &[i64::MAX], &[i64::MAX], false).unwrap_err().to_string();
    assert!(e.contains("pad should be at most half of effective kernel size"), "{e}");
    // Kernel 2 dilated by 2^63 - 1 with padding 2^62: 3 windows, whose second tap is past the end.
    let (y, i) = ops::max_pool1d_with_indices(&x, &[2], &[2], &[1 << 62], &[i64::MAX], false).unwrap();
    assert_eq!(y.sizes(), &[1, 1, 3]);
    assert_eq!(i.sizes(), &[1, 1, 3]);
    // avg_pool1d over the same huge windows: the divisor is the window clipped to the padded
    // input, 2^63 - 1 positions, or the 4 real ones without count_include_pad.
    let y = ops::avg_pool1d(&x, &[i64::MAX], &[1], &[(1 << 62) - 1], false, true).unwrap();
    for v in y.to_vec::<f32>().unwrap() {
        let want = 10.0 / i64::MAX as f64;
        assert!(((v as f64) - want).abs() <= 1e-6 * want, "{v} vs {want}");
    }
    let y = ops::avg_pool1d(&x, &[i64::MAX], &[1], &[(1 << 62) - 1], false, false).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.5; 4]);
}

/// Pooling an empty batch with a huge spatial dim gives an empty result without building one
/// window per output position, as in PyTorch; a huge non-empty output is an out-of-memory error.
#[test]
fn pooling_of_huge_empty_inputs() {
    let f32_ = Some(c10::ScalarType::F32);
    let x = ops::empty(&[0, 1, 1 << 50], f32_, None, None, None, None).unwrap();
    assert_eq!(ops::max_pool1d(&x, &[1], &[1], &[0], &[1], false).unwrap().sizes(), &[0, 1, 1 << 50]);
    assert_eq!(ops::avg_pool1d(&x, &[2], &[2], &[0], false, true).unwrap().sizes(), &[0, 1, 1 << 49]);
    assert_eq!(ops::adaptive_avg_pool1d(&x, &[1 << 45]).unwrap().sizes(), &[0, 1, 1 << 45]);
    let x = ops::ones(&[1, 1, 4], f32_, None, None, None).unwrap();
    assert_oom(ops::adaptive_avg_pool1d(&x, &[1 << 50]));
}

/// Distances and norms over an empty last dim with a huge batch: `triplet_margin_loss` built a
/// row-sized `Vec` with `vec![..; n]` and aborted (found by the ten-minute op_surface run).
#[test]
fn losses_and_norms_of_huge_empty_inputs() {
    let x = huge_empty();
    // 2^50 distances of empty rows, reduced to a scalar: the buffer cannot be allocated.
    assert_oom(ops::triplet_margin_loss(&x, &x, &x, 1.0, 2.0, 1e-6, false, 1));
    // Over a small batch the distances of empty rows are |eps|-free zeros: loss = margin.
    let e = ops::empty(&[3, 0], Some(c10::ScalarType::F32), None, None, None, None).unwrap();
    let l = ops::triplet_margin_loss(&e, &e, &e, 1.0, 2.0, 1e-6, false, 0).unwrap();
    assert_eq!(l.to_vec::<f32>().unwrap(), vec![1.0; 3]);
    // norm over the empty dim: 2^50 results (found by the ten-minute op_surface run).
    assert_oom(ops::norm_scalaropt_dim(&huge_empty(), None, &[1], false));
    assert_eq!(ops::norm_scalaropt_dim(&e, None, &[1], false).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 3]);
    // Reducing the huge dims of a tensor empty elsewhere: an empty result, no overflow.
    let y = ops::empty(&[0, 1 << 40, 1 << 40], Some(c10::ScalarType::F32), None, None, None, None).unwrap();
    assert_eq!(ops::norm_scalaropt_dim(&y, None, &[1, 2], false).unwrap().sizes(), &[0]);
    let x = ops::empty(&[1 << 40, 3, 0], Some(c10::ScalarType::F32), None, None, None, None).unwrap();
    let w = ops::ones(&[3], Some(c10::ScalarType::F32), None, None, None).unwrap();
    let y = ops::instance_norm(&x, Some(&w), Some(&w), None, None, true, 0.1, 1e-5, false).unwrap();
    assert_eq!(y.sizes(), &[1 << 40, 3, 0]);
}

/// `repeat_interleave` of an empty input built its index map (one entry per output position)
/// before noticing there was nothing to copy: `[0, 4]` repeated 2^28 times along dim 1 ran for
/// minutes (found by the ten-minute op_surface run as a timeout).
#[test]
fn repeat_interleave_of_empty_inputs_builds_no_map() {
    let x = ops::empty(&[0, 4], Some(c10::ScalarType::F32), None, None, None, None).unwrap();
    let y = ops::repeat_interleave_self_int(&x, 1 << 40, Some(1), None).unwrap();
    assert_eq!(y.sizes(), &[0, 1 << 42]);
    let e = ops::repeat_interleave_self_int(&x, i64::MAX, Some(1), None).unwrap_err().to_string();
    assert!(e.contains("overflow"), "{e}");
    let e = ops::repeat_interleave_self_int(&x, 2, Some(1), Some(7)).unwrap_err().to_string();
    assert!(e.contains("allocated size does not match required size: 7 vs 8"), "{e}");
    let r = Tensor::from_vec(vec![2i64, 0, 1], &[3]).unwrap();
    assert_eq!(ops::repeat_interleave(&r, None).unwrap().to_vec::<i64>().unwrap(), vec![0, 0, 2]);
}

/// TensorIterator merged the two 2^40 dims of an empty `[2^40, 2^40, 0]` into one of 2^80
/// (found by the ten-minute op_surface run through clamp_min): the product now saturates, and an
/// empty iteration never runs its loops.
#[test]
fn elementwise_ops_of_empty_tensors_with_huge_dims() {
    let x = ops::empty(&[1 << 40, 1 << 40, 0], Some(c10::ScalarType::F32), None, None, None, None).unwrap();
    let zero = Tensor::from_vec(vec![0.0f32], &[]).unwrap();
    assert_eq!(ops::clamp_min_tensor(&x, &zero).unwrap().sizes(), &[1 << 40, 1 << 40, 0]);
    assert_eq!(ops::neg(&x).unwrap().sizes(), &[1 << 40, 1 << 40, 0]);
}

/// `diag_embed` and `diag` with an offset of `i64::MIN` negated it (found by the ten-minute
/// op_surface run); the output size `n + |offset|` is checked.
#[test]
fn diag_offsets_at_the_int64_limits() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    for off in [i64::MIN, i64::MAX] {
        let e = ops::diag_embed(&x, off, -2, -1).unwrap_err().to_string();
        assert!(e.contains("overflow"), "{e}");
        let e = ops::diag(&x, off).unwrap_err().to_string();
        assert!(e.contains("overflow"), "{e}");
    }
    let y = ops::diag_embed(&x, -1, -2, -1).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0]);
}

/// `slice` with a huge step overflowed `stride * step` and `e - s + step - 1` (found by the
/// op_surface run in CI): a dim the step leaves with one element keeps its stride, so
/// `x[:, ::2**63-1]` is the first column.
#[test]
fn slice_with_a_huge_step() {
    let x = Tensor::from_vec((0..6).map(|v| v as f32).collect::<Vec<_>>(), &[2, 3]).unwrap();
    for step in [i64::MAX, 1 << 62, 3] {
        let y = ops::slice(&x, 1, Some(0), None, step).unwrap();
        assert_eq!(y.sizes(), &[2, 1], "step {step}");
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0, 3.0], "step {step}");
    }
    let y = ops::slice(&x, 1, Some(1), Some(i64::MAX), i64::MAX).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, 4.0]);
    let empty = ops::slice(&x, 1, Some(3), None, i64::MAX).unwrap();
    assert_eq!(empty.sizes(), &[2, 0]);
    let two = ops::slice(&x, 1, Some(0), None, 2).unwrap();
    assert_eq!(two.to_vec::<f32>().unwrap(), vec![0.0, 2.0, 3.0, 5.0]);
}

/// `pixel_shuffle` with an upscale factor whose square overflows i64 multiplied with overflow
/// checking on; the factor cannot divide any channel count, and empty channels with a factor
/// that overflows the output's height are an error too (so is `pixel_unshuffle`'s `c * r * r`).
#[test]
fn pixel_shuffle_with_a_huge_factor() {
    let x = ops::zeros(&[1, 4, 2, 2], Some(c10::ScalarType::F32), None, None, None).unwrap();
    let e = ops::pixel_shuffle(&x, 1 << 40).unwrap_err().to_string();
    assert!(e.contains("divisible by the square of upscale_factor"), "{e}");
    assert!(e.contains(&(1i128 << 80).to_string()), "{e}");
    let empty = ops::zeros(&[1, 0, 2, 2], Some(c10::ScalarType::F32), None, None, None).unwrap();
    assert!(ops::pixel_shuffle(&empty, 1 << 62).is_err());
    // A small factor still works: 4 channels of 2x2 become 1 channel of 4x4.
    assert_eq!(ops::pixel_shuffle(&x, 2).unwrap().sizes(), &[1, 1, 4, 4]);
    let y = ops::zeros(&[1, 1 << 62, 0, 0], Some(c10::ScalarType::F32), None, None, None).unwrap();
    let e = ops::pixel_unshuffle(&y, 4).unwrap_err().to_string();
    assert!(e.contains("overflow"), "{e}");
}

/// `chunk` of an empty dimension into 2^40 chunks sized a `Vec` of 2^40 split sizes and
/// aborted; it is an out-of-memory error value now. Split sizes near i64::MAX overflowed the
/// ceiling division of `chunk` and `split` and the sum check of `split_with_sizes`.
#[test]
fn chunk_and_split_with_huge_counts() {
    let empty = ops::zeros(&[0], Some(c10::ScalarType::F32), None, None, None).unwrap();
    assert_oom_list(ops::chunk(&empty, 1 << 40, 0));
    assert_eq!(ops::chunk(&empty, 3, 0).unwrap().len(), 3);
    let x = ops::zeros(&[5], Some(c10::ScalarType::F32), None, None, None).unwrap();
    let parts = ops::chunk(&x, i64::MAX, 0).unwrap();
    assert_eq!(parts.iter().map(|t| t.sizes()[0]).collect::<Vec<_>>(), vec![1; 5]);
    let parts = ops::split(&x, i64::MAX, 0).unwrap();
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].sizes(), &[5]);
    let e = ops::split_with_sizes(&x, &[i64::MAX, i64::MAX, 7], 0).unwrap_err().to_string();
    assert!(e.contains("to sum exactly to 5"), "{e}");
}

fn assert_oom_list(r: c10::Result<Vec<Tensor>>) {
    match r {
        Err(c10::Error::OutOfMemory { .. }) => {}
        Err(e) => panic!("expected an out-of-memory error, got {e}"),
        Ok(ts) => panic!("expected an out-of-memory error, got {} tensors", ts.len()),
    }
}

/// The composites op_db brought in indexed a 0-dim tensor's sizes at a wrapped dimension
/// (`trapz.dx` of a scalar, found by `op_surface`); they report PyTorch's "no dimensions"
/// error. Index factories with huge extents and no columns return at once.
#[test]
fn composites_of_zero_dim_tensors_and_huge_factories() {
    let s = ops::zeros(&[], Some(c10::ScalarType::F32), None, None, None).unwrap();
    for r in [
        ops::trapz_dx(&s, 1.0, -1),
        ops::trapezoid_dx(&s, c10::Scalar::Int(1), 0),
        ops::cumulative_trapezoid_dx(&s, c10::Scalar::Int(1), -1),
        ops::select_scatter(&s, &s, 0, 0),
        ops::take_along_dim(&s, &Tensor::from_vec(vec![0i64], &[]).unwrap(), Some(0)),
        ops::linalg_cross(&s, &s, -1),
    ] {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("no dimensions"), "{e}");
    }
    let t = ops::tril_indices(i64::MAX, 0, 0, None, None, None, None).unwrap();
    assert_eq!(t.sizes(), &[2, 0]);
    let t = ops::triu_indices(1 << 62, 3, 1, None, None, None, None).unwrap();
    // Only rows 0 and 1 have columns right of the first superdiagonal: (0,1) (0,2) (1,2).
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![0, 0, 1, 1, 2, 2]);
}

/// A Chebyshev polynomial of degree ~10^18 ran its recurrence for ever (`op_surface` timed
/// out); degrees above `special::MAX_DEGREE` are an error value, `polygamma` of a huge order
/// stops its factorial at infinity.
#[test]
fn special_functions_with_huge_orders_terminate() {
    let x = Tensor::from_vec(vec![2.0f64, 0.5], &[2]).unwrap();
    let n = Tensor::from_vec(vec![1e18f64, 3.0], &[2]).unwrap();
    let e = ops::special_shifted_chebyshev_polynomial_w(&x, &n).unwrap_err().to_string();
    assert!(e.contains("degrees above"), "{e}");
    let n = Tensor::from_vec(vec![3.0f64, 3.0], &[2]).unwrap();
    // T_3(x) = 4x^3 - 3x.
    let t = ops::special_chebyshev_polynomial_t(&x, &n).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(t, vec![26.0, -1.0]);
    assert!(ops::polygamma(i64::MAX, &x).is_ok());
}

/// `one_hot` of the class i64::MAX computed the class count `max + 1` with overflow.
#[test]
fn one_hot_of_the_largest_class() {
    let x = Tensor::from_vec(vec![i64::MAX], &[1]).unwrap();
    assert!(ops::one_hot(&x, -1).is_err());
    let y = Tensor::from_vec(vec![2i64, 0], &[2]).unwrap();
    assert_eq!(ops::one_hot(&y, -1).unwrap().to_vec::<i64>().unwrap(), vec![0, 0, 1, 1, 0, 0]);
}

/// `empty_like` (through `cumprod`'s dtype conversion) of an empty tensor whose other sizes
/// multiply past i64 computed its dense strides with overflow.
#[test]
fn dense_strides_of_huge_empty_tensors() {
    let x = ops::empty(&[1 << 40, 1 << 40, 0], Some(c10::ScalarType::I32), None, None, None, None).unwrap();
    let y = ops::empty_like(&x, Some(c10::ScalarType::F64), None, None, None, None).unwrap();
    assert_eq!(y.sizes(), x.sizes());
    assert_eq!(ops::cumprod(&x, 2, Some(c10::ScalarType::F64)).unwrap().sizes(), x.sizes());
}

/// The TensorIterator multiplied element strides by the element size with overflow for an
/// operand whose huge stride sits on an empty or single-element dimension (`op_surface` found
/// it through `add`; that input is replayed from `fuzz/seeds/op_surface/crash_iterator_huge_stride.bin`
/// by CI's fuzz step). These are the nearby cases as plain calls: elementwise ops of empty
/// tensors whose sizes multiply past i64, and of views with a 2^62 stride on such a dimension.
#[test]
fn elementwise_ops_of_empty_tensors_with_wrapped_strides() {
    let x = ops::empty(&[1 << 40, 1 << 40, 0], Some(c10::ScalarType::F64), None, None, None, None).unwrap();
    let y = ops::permute(&x, &[2, 1, 0]).unwrap();
    let z = ops::add(&ops::contiguous(&y, c10::MemoryFormat::Contiguous).unwrap(), &y, c10::Scalar::Int(1)).unwrap();
    assert_eq!(z.sizes(), &[0, 1 << 40, 1 << 40]);
    let w = ops::add(&x, &x, c10::Scalar::Int(1)).unwrap();
    assert_eq!(w.sizes(), x.sizes());
    // A view with a huge stride on an empty (or single-element) dimension.
    let base = ops::zeros(&[2], Some(c10::ScalarType::F64), None, None, None).unwrap();
    let v = ops::as_strided(&base, &[0, 2], &[1 << 62, 1], None).unwrap();
    assert_eq!(ops::add(&v, &v, c10::Scalar::Int(1)).unwrap().sizes(), &[0, 2]);
    let v = ops::as_strided(&base, &[1, 2], &[1 << 62, 1], None).unwrap();
    assert_eq!(ops::mul(&v, &v).unwrap().sizes(), &[1, 2]);
}

/// The new catalogue operators on inputs that would loop, overflow or abort if unchecked:
/// a non-finite matrix exponential (the scaling count), histogram bins at `i64::MAX`, empty
/// segments under a huge leading dimension, upsampling an empty batch to a huge size, a
/// batch of empty matrices whose count overflows, and huge tensor-inverse shapes.
#[test]
fn catalogue_operators_on_degenerate_inputs_return_errors_or_empties() {
    use c10::ScalarType;
    let inf = Tensor::from_vec(vec![f64::INFINITY, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
    let e = ops::linalg_matrix_exp(&inf).unwrap();
    assert!(e.to_vec::<f64>().unwrap().iter().any(|v| !v.is_finite()));
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    assert!(ops::histogram(&x, i64::MAX, None, None, false).is_err());
    let data = ops::empty(&[1 << 40, 0], Some(ScalarType::F32), None, None, None, None).unwrap();
    let lens = ops::empty(&[1 << 40, 0], Some(ScalarType::I64), None, None, None, None).unwrap();
    let r = ops::segment_reduce(&data, "sum", Some(&lens), None, None, 1, false, None).unwrap();
    assert_eq!(r.sizes(), &[1 << 40, 0]);
    let empty_batch = ops::empty(&[0, 1, 2], Some(ScalarType::F32), None, None, None, None).unwrap();
    let up = ops::_upsample_nearest_exact1d(&empty_batch, Some(&[1 << 50]), None).unwrap();
    assert_eq!(up.sizes(), &[0, 1, 1 << 50]);
    let one = ops::ones(&[1, 1, 2], Some(ScalarType::F32), None, None, None).unwrap();
    assert!(ops::_upsample_nearest_exact1d(&one, Some(&[1 << 50]), None).is_err());
    let mats = ops::empty(&[1 << 40, 1 << 40, 0, 0], Some(ScalarType::F64), None, None, None, None).unwrap();
    assert!(ops::linalg_lu_factor_ex(&mats, true, false).is_err());
    let wide = ops::empty(&[1 << 40, 1 << 40, 0], Some(ScalarType::F64), None, None, None, None).unwrap();
    assert!(ops::linalg_tensorinv(&wide, 2).is_err());
}

/// A real-output FFT of a 0-dim tensor indexed its (missing) last size.
#[test]
fn fft_of_a_scalar_is_an_error() {
    let s = Tensor::from_vec(vec![1.0f64], &[]).unwrap();
    assert!(ops::fft_irfft(&s, None, -1, None).unwrap_err().to_string().contains("tensor has no dimensions"));
    assert!(ops::fft_hfftn(&s, None, None, None).is_err());
}

/// `mvlgamma` with a huge `p` looped over `p` (op_surface timeout); its `p` shifted arguments
/// are one tensor now, as in PyTorch, so a `p` too large fails to allocate.
#[test]
fn mvlgamma_with_a_huge_p_fails_instead_of_looping() {
    let x = Tensor::from_vec(vec![1e30f64], &[1]).unwrap();
    assert!(ops::mvlgamma(&x, 1 << 50).is_err());
    // p = 2: ln(pi)/2 + lgamma(x) + lgamma(x - 1/2).
    let y = ops::mvlgamma(&Tensor::from_vec(vec![3.0f64], &[1]).unwrap(), 2).unwrap().to_vec::<f64>().unwrap()[0];
    let want = std::f64::consts::PI.ln() / 2.0 + libm::lgamma(3.0) + libm::lgamma(2.5);
    assert!((y - want).abs() < 1e-12, "{y} vs {want}");
}

/// Bilinear and nearest upsampling built their per-row source indices for the requested output
/// size before allocating the output, so a size of 2^50 aborted on the index list (op_surface);
/// the list is now collected fallibly.
#[test]
fn upsampling_to_a_huge_size_is_an_error() {
    let x = ops::ones(&[1, 1, 2, 2], Some(c10::ScalarType::F32), None, None, None).unwrap();
    assert!(ops::upsample_bilinear2d(&x, Some(&[1 << 50, 2]), false, None).is_err());
    assert!(ops::upsample_nearest2d(&x, Some(&[2, 1 << 50]), None).is_err());
}

/// A huge batch of empty matrices visited every matrix in the QR, LU and SVD kernels
/// (op_surface timeout in `linalg_qr`); batches with nothing to write are skipped.
#[test]
fn linalg_on_a_huge_batch_of_empty_matrices_is_immediate() {
    let empty = ops::empty(&[1 << 26, 3, 0], Some(c10::ScalarType::F64), None, None, None, None).unwrap();
    let (q, r) = ops::linalg_qr(&empty, "reduced").unwrap();
    assert_eq!((q.sizes(), r.sizes()), (&[1 << 26, 3, 0][..], &[1 << 26, 0, 0][..]));
    assert_eq!(ops::geqrf(&empty).unwrap().1.sizes(), &[1 << 26, 0]);
    assert_eq!(ops::linalg_lu_factor_ex(&empty, true, false).unwrap().0.sizes(), &[1 << 26, 3, 0]);
    assert_eq!(ops::linalg_svdvals(&empty, None).unwrap().sizes(), &[1 << 26, 0]);
}

/// `diff` of an empty tensor with a long dimension took one difference at a time (op_surface
/// timeout); the result's shape is known at once.
#[test]
fn diff_of_a_long_empty_dimension_is_immediate() {
    let e = ops::empty(&[0, 1 << 40], Some(c10::ScalarType::F32), None, None, None, None).unwrap();
    assert_eq!(ops::diff(&e, i64::MAX, -1, None, None).unwrap().sizes(), &[0, 0]);
    assert_eq!(ops::diff(&e, 3, -1, None, None).unwrap().sizes(), &[0, (1 << 40) - 3]);
    let x = Tensor::from_vec(vec![1i64, 4, 9, 16], &[4]).unwrap();
    assert_eq!(ops::diff(&x, 2, -1, None, None).unwrap().to_vec::<i64>().unwrap(), vec![2, 2]);
}

/// A full SVD of a tall matrix flipped the rows of Vh paired with U's completion columns, past
/// the end of Vh (op_surface panic in `_linalg_svd`'s sign fix-up): only the k singular-vector
/// pairs flip together.
#[test]
fn full_svd_of_a_tall_matrix_is_a_valid_factorisation() {
    // 16 tall matrices: the completion columns of U take both signs among them.
    aten::manual_seed(5);
    let a = ops::randn(&[16, 5, 2], Some(c10::ScalarType::F64), None, None, None).unwrap();
    let (u, s, vh) = ops::_linalg_svd(&a, true, true, None).unwrap();
    assert_eq!((u.sizes(), s.sizes(), vh.sizes()), (&[16i64, 5, 5][..], &[16i64, 2][..], &[16i64, 2, 2][..]));
    // U[..., :2] diag(S) Vh reproduces A.
    let u2 = u.narrow(2, 0, 2).unwrap();
    let back = u2.mul(&s.unsqueeze(1).unwrap()).unwrap().matmul(&vh).unwrap();
    for (x, y) in back.to_vec::<f64>().unwrap().iter().zip(a.to_vec::<f64>().unwrap()) {
        assert!((x - y).abs() < 1e-12, "{x} vs {y}");
    }
    // Wide matrices too (more rows of Vh than columns of U).
    let w = a.transpose(1, 2).unwrap().contiguous().call().unwrap();
    let (u, _, vh) = ops::_linalg_svd(&w, true, true, None).unwrap();
    assert_eq!((u.sizes(), vh.sizes()), (&[16i64, 2, 2][..], &[16i64, 5, 5][..]));
}

/// `combinations` with a huge `r` and no combinations to list allocated per-position state of
/// length `r` before noticing (op_surface abort on allocation); the empty result comes first.
#[test]
fn combinations_with_a_huge_r_and_nothing_to_list_is_empty() {
    let x = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
    let r = 1i64 << 40;
    assert_eq!(ops::combinations(&x, r, false).unwrap().sizes(), &[0, r]);
    let e = Tensor::from_vec(Vec::<i64>::new(), &[0]).unwrap();
    assert_eq!(ops::combinations(&e, r, true).unwrap().sizes(), &[0, r]);
    assert_eq!(ops::combinations(&x, 2, false).unwrap().to_vec::<i64>().unwrap(), vec![1, 2, 1, 3, 2, 3]);
}

/// `diag_embed` of an empty tensor with a huge negative offset took the diagonal of an empty
/// result whose strides times the offset overflow (op_surface panic in `diagonal`): an empty
/// tensor's diagonal view starts at 0.
#[test]
fn diagonal_of_an_empty_tensor_with_huge_strides_and_offset() {
    let e = ops::empty(&[0, 2], Some(c10::ScalarType::F32), None, None, None, None).unwrap();
    let big = 1i64 << 40;
    let out = ops::diag_embed(&e, -big, -2, -1).unwrap();
    assert_eq!(out.sizes(), &[0, 2 + big, 2 + big]);
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    assert_eq!(ops::diagonal(&x, -1, 0, 1).unwrap().to_vec::<f32>().unwrap(), vec![3.0]);
}

/// An integer `conv_transpose1d` of an empty input with 2^40 channels walked every channel
/// (op_surface timeout): with nothing to accumulate, the result is the bias or zeros at once.
#[test]
fn integer_convolution_of_an_empty_input_with_huge_channels_returns_at_once() {
    let big = 1i64 << 40;
    let x = ops::empty(&[big, 0], Some(c10::ScalarType::I32), None, None, None, None).unwrap();
    let w = ops::empty(&[big, 0, 5], Some(c10::ScalarType::I32), None, None, None, None).unwrap();
    let out = ops::conv_transpose1d(&x, &w, None, &[1], &[0], &[0], 1, &[1]).unwrap();
    assert_eq!((out.sizes(), out.dtype()), (&[0i64, 4][..], c10::ScalarType::I32));
    // Complex tensors are refused by the random fills before any arithmetic on their range.
    let z = ops::zeros(&[3], Some(c10::ScalarType::C64), None, None, None).unwrap();
    assert!(matches!(ops::random_op_(&z, None).unwrap_err(), c10::Error::UnsupportedDtype { .. }));
    assert!(matches!(ops::random_(&z, 0, Some(5), None).unwrap_err(), c10::Error::UnsupportedDtype { .. }));
}

/// Batch norm in training on an empty input with 2^40 channels collected its per-channel
/// statistics into a plain `Vec` and aborted the process on the failed allocation (found by
/// `op_surface`); PyTorch reports its per-channel outputs' allocation as out of memory, and so
/// do we. Instance norm on the same input returns the empty input at once.
#[test]
fn batch_norm_of_an_empty_input_with_huge_channels_is_out_of_memory() {
    let x = ops::empty(&[0, 1 << 40], Some(c10::ScalarType::F32), None, None, None, None).unwrap();
    match ops::native_batch_norm(&x, None, None, None, None, true, 0.1, 1e-5) {
        Err(c10::Error::OutOfMemory { .. }) => {}
        Err(e) => panic!("expected an out-of-memory error, got {e}"),
        Ok(_) => panic!("expected an out-of-memory error"),
    }
    // Evaluation needs running statistics of 2^40 elements, which cannot exist: a shape error.
    let rm = Tensor::from_vec(vec![0f32; 3], &[3]).unwrap();
    assert!(ops::native_batch_norm(&x, None, None, Some(&rm), Some(&rm), false, 0.1, 1e-5).is_err());
    // A normal batch still normalises: two values per channel become -1 and 1.
    let x = Tensor::from_vec(vec![1f32, 10.0, 3.0, 30.0], &[2, 2]).unwrap();
    let (y, mean, _) = ops::native_batch_norm(&x, None, None, None, None, true, 0.1, 0.0).unwrap();
    assert_eq!(mean.to_vec::<f32>().unwrap(), vec![2.0, 20.0]);
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![-1.0, -1.0, 1.0, 1.0]);
}

/// CSR conversion and sparse @ dense sized their row offsets from the shape with plain `Vec`s,
/// so a sparse `[2^50, 3]` holding one element aborted the process on the failed allocation
/// (found by `op_surface`); PyTorch reports the `[2^50 + 1]` row offsets as out of memory, and so
/// do we.
#[test]
fn sparse_row_offsets_of_a_huge_shape_are_out_of_memory() {
    let indices = Tensor::from_vec(vec![5i64, 1], &[2, 1]).unwrap();
    let values = Tensor::from_vec(vec![2.0f32], &[1]).unwrap();
    let s = ops::sparse_coo_tensor(&indices, &values, &[1 << 50, 3], None, None, None, None, None).unwrap();
    assert_oom(ops::to_sparse_csr(&s, None));
    let d = ops::zeros(&[3, 0], Some(c10::ScalarType::F32), None, None, None).unwrap();
    assert_oom(ops::mm(&s, &d));
    // The same shapes at an ordinary size still convert and multiply.
    let s = ops::sparse_coo_tensor(&indices, &values, &[6, 3], None, None, None, None, None).unwrap();
    let csr = ops::to_sparse_csr(&s, None).unwrap();
    assert_eq!(ops::crow_indices(&csr).unwrap().to_vec::<i64>().unwrap(), vec![0, 0, 0, 0, 0, 0, 1]);
    assert_eq!(ops::mm(&s, &d).unwrap().sizes(), &[6, 0]);
}

/// `to_sparse(layout=COO, dense_dim=d)` subtracted `d` from the rank unchecked, so `i64::MIN`
/// overflowed (found by `op_surface`): a dense_dim outside `[0, dim]` is an error.
#[test]
fn to_sparse_with_an_out_of_range_dense_dim_is_an_error() {
    let x = ops::ones(&[2, 3], Some(c10::ScalarType::F32), None, None, None).unwrap();
    for dd in [i64::MIN, -1, 3, i64::MAX] {
        let e = ops::to_sparse_op(&x, Some(c10::Layout::SparseCoo), None, Some(dd)).unwrap_err().to_string();
        assert!(e.contains("dense_dim argument must be in [0, 2]"), "{dd}: {e}");
    }
    let s = ops::to_sparse_op(&x, Some(c10::Layout::SparseCoo), None, Some(1)).unwrap();
    assert_eq!(ops::_values(&s).unwrap().sizes(), &[2, 3]);
}

/// `sparse_coo_tensor(indices, values)` sized its shape list by the indices' first dimension
/// with a plain `Vec`, so indices of `[2^50, 0]` (2^50 sparse dims, no elements) aborted the
/// process (found by `op_surface`): an out-of-memory error now.
#[test]
fn coo_size_inference_with_huge_sparse_dims_is_out_of_memory() {
    let indices = ops::empty(&[1 << 50, 0], Some(c10::ScalarType::I64), None, None, None, None).unwrap();
    let values = ops::empty(&[0], Some(c10::ScalarType::F32), None, None, None, None).unwrap();
    assert_oom(ops::sparse_coo_tensor_indices(&indices, &values, None, None, None, None, None));
    let indices = Tensor::from_vec(vec![0i64, 2, 1, 0], &[2, 2]).unwrap();
    let values = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let s = ops::sparse_coo_tensor_indices(&indices, &values, None, None, None, None, None).unwrap();
    assert_eq!(s.sizes(), &[3, 2]);
}

/// `sparse_csr_tensor(crow, col, values)` infers the column count as the largest column index
/// plus one: a column index of i64::MAX is an error, not an overflow (found by `op_surface`).
#[test]
fn csr_size_inference_with_the_largest_column_index_is_an_error() {
    let crow = Tensor::from_vec(vec![0i64, 1], &[2]).unwrap();
    let col = Tensor::from_vec(vec![i64::MAX], &[1]).unwrap();
    let values = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let e = ops::sparse_csr_tensor_crow_col_value(&crow, &col, &values, None, None, None, None).unwrap_err();
    assert!(matches!(e, c10::Error::InvalidArgument { .. }), "{e}");
    assert!(e.to_string().contains("overflows int64"), "{e}");
    let col = Tensor::from_vec(vec![4i64], &[1]).unwrap();
    let s = ops::sparse_csr_tensor_crow_col_value(&crow, &col, &values, None, None, None, None).unwrap();
    assert_eq!(s.sizes(), &[1, 5]);
}

/// `to_sparse_csr(dense_dim=i64::MAX)` of a strided tensor is an error, not an overflow in the
/// dimension check (found by `op_surface`).
#[test]
fn to_sparse_csr_with_the_largest_dense_dim_is_an_error() {
    let t = Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 2.0], &[2, 2]).unwrap();
    let e = t.to_sparse_csr().dense_dim(i64::MAX).call().unwrap_err();
    assert!(e.to_string().contains("expected at least"), "{e}");
    assert_eq!(t.to_sparse_csr().call().unwrap().sizes(), &[2, 2]);
}

/// COO size inference with an index of i64::MAX, and explicit dims whose sum overflows, are
/// errors rather than overflows (the same pattern as the CSR column count).
#[test]
fn coo_size_inference_with_the_largest_index_is_an_error() {
    let indices = Tensor::from_vec(vec![i64::MAX], &[1, 1]).unwrap();
    let values = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let e = ops::sparse_coo_tensor_indices(&indices, &values, None, None, None, None, None).unwrap_err();
    assert!(e.to_string().contains("overflows int64"), "{e}");
}
