//! Operators added for PyTorch's OpInfo catalogue, on closed-form values: numbers out of
//! tensors, histograms, consecutive uniques, finite differences, sliding blocks, integer
//! convolution and pooling, real-output FFTs, margin losses, and their errors. PyTorch's values
//! for every op_db sample are checked by `cargo xtask opinfo`.

use aten::{ops, Tensor};
use c10::{Scalar, ScalarType};

fn f64s(v: &[f64], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn i64s(v: &[i64], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn close(t: &Tensor, want: &[f64]) {
    let got = t.to_vec::<f64>().unwrap();
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{got:?} vs {want:?}");
    }
}

#[test]
fn item_equal_allclose() {
    assert_eq!(ops::item(&f64s(&[2.5], &[1])).unwrap(), Scalar::Float(2.5));
    assert_eq!(ops::item(&i64s(&[7], &[])).unwrap(), Scalar::Int(7));
    assert!(ops::item(&f64s(&[1.0, 2.0], &[2]))
        .unwrap_err()
        .to_string()
        .contains("a Tensor with 2 elements cannot be converted to Scalar"));
    let a = f64s(&[1.0, 2.0], &[2]);
    assert!(ops::equal(&a, &i64s(&[1, 2], &[2])).unwrap());
    assert!(!ops::equal(&a, &f64s(&[1.0, 2.0], &[1, 2])).unwrap());
    assert!(!ops::equal(&f64s(&[f64::NAN], &[1]), &f64s(&[f64::NAN], &[1])).unwrap());
    assert!(ops::allclose(&a, &f64s(&[1.0 + 1e-9, 2.0], &[2]), 1e-5, 1e-8, false).unwrap());
    assert!(!ops::allclose(&a, &f64s(&[1.1, 2.0], &[2]), 1e-5, 1e-8, false).unwrap());
}

#[test]
fn histograms_count_weights_and_densities() {
    let x = f64s(&[0.0, 1.0, 2.0, 3.0, 4.0], &[5]);
    let (h, e) = ops::histogram(&x, 4, None, None, false).unwrap();
    close(&h, &[1.0, 1.0, 1.0, 2.0]);
    close(&e, &[0.0, 1.0, 2.0, 3.0, 4.0]);
    // Outside the range is not counted; the density integrates to 1.
    let (h, e) = ops::histogram(&x, 2, Some(&[0.5, 3.0]), None, true).unwrap();
    close(&e, &[0.5, 1.75, 3.0]);
    close(&h, &[1.0 / 3.0 / 1.25, 2.0 / 3.0 / 1.25]);
    // Equal min and max widen by a half each way.
    let (_, e) = ops::histogram(&f64s(&[1.0, 1.0], &[2]), 2, None, None, false).unwrap();
    close(&e, &[0.5, 1.0, 1.5]);
    let (h, _) = ops::histogram_bins_tensor(
        &x,
        &f64s(&[0.0, 2.0, 10.0], &[3]),
        Some(&f64s(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5])),
        false,
    )
    .unwrap();
    close(&h, &[3.0, 12.0]);
    let pts = f64s(&[0.0, 0.0, 1.0, 2.0, 2.0, 4.0], &[3, 2]);
    let (h, e) = ops::histogramdd(&pts, &[2, 2], None, None, false).unwrap();
    assert_eq!(h.sizes(), &[2, 2]);
    close(&h, &[1.0, 0.0, 0.0, 2.0]);
    close(&e[1], &[0.0, 2.0, 4.0]);
    assert!(ops::histogram(&x, 0, None, None, false).is_err());
}

#[test]
fn unique_consecutive_runs_inverse_and_counts() {
    let x = i64s(&[1, 1, 2, 2, 3, 1, 1, 2], &[8]);
    let (v, inv, cnt) = ops::unique_consecutive(&x, true, true, None).unwrap();
    assert_eq!(v.to_vec::<i64>().unwrap(), vec![1, 2, 3, 1, 2]);
    assert_eq!(inv.to_vec::<i64>().unwrap(), vec![0, 0, 1, 1, 2, 3, 3, 4]);
    assert_eq!(cnt.to_vec::<i64>().unwrap(), vec![2, 2, 1, 2, 1]);
    let (_, inv, cnt) = ops::unique_consecutive(&x, false, false, None).unwrap();
    assert_eq!((inv.numel(), cnt.numel(), inv.dtype()), (0, 0, ScalarType::I64));
    let m = i64s(&[1, 1, 2, 1, 1, 2, 3, 3, 3], &[3, 3]);
    let (v, inv, cnt) = ops::unique_consecutive(&m, true, true, Some(0)).unwrap();
    assert_eq!(v.sizes(), &[2, 3]);
    assert_eq!((inv.to_vec::<i64>().unwrap(), cnt.to_vec::<i64>().unwrap()), (vec![0, 0, 1], vec![2, 1]));
}

#[test]
fn gradient_uses_central_and_one_sided_differences() {
    let x = i64s(&[1, 4, 9, 16, 25], &[5]);
    let g = ops::gradient(&x, None, None, 1).unwrap();
    assert_eq!(g[0].dtype(), ScalarType::F32);
    close(&g[0], &[3.0, 4.0, 6.0, 8.0, 9.0]);
    let g = ops::gradient(&x, Some(Scalar::Float(2.0)), None, 1).unwrap();
    close(&g[0], &[1.5, 2.0, 3.0, 4.0, 4.5]);
    let g = ops::gradient(&f64s(&[1.0, 4.0, 9.0, 16.0, 25.0], &[5]), None, None, 2).unwrap();
    close(&g[0], &[2.0, 4.0, 6.0, 8.0, 10.0]);
    let g = ops::gradient(&f64s(&[1.0, 2.0, 4.0, 2.0, 5.0, 9.0], &[2, 3]), None, None, 1).unwrap();
    close(&g[0], &[1.0, 3.0, 5.0, 1.0, 3.0, 5.0]);
    close(&g[1], &[1.0, 1.5, 2.0, 3.0, 3.5, 4.0]);
    assert!(ops::gradient(&f64s(&[1.0, 2.0], &[2]), None, None, 2).is_err());
}

#[test]
fn chunk_cat_pads_and_interleaves_chunks() {
    let a = f64s(&(0..10).map(|v| v as f64).collect::<Vec<_>>(), &[2, 5]);
    let b = f64s(&(0..6).map(|v| v as f64).collect::<Vec<_>>(), &[2, 3]);
    let r = ops::_chunk_cat(&[a, b], 1, 2).unwrap();
    assert_eq!(r.sizes(), &[2, 2, 5]);
    close(&r, &[0.0, 1.0, 2.0, 0.0, 1.0, 3.0, 4.0, 0.0, 2.0, 0.0, 5.0, 6.0, 7.0, 3.0, 4.0, 8.0, 9.0, 0.0, 5.0, 0.0]);
}

#[test]
fn im2col_matches_a_direct_unfold() {
    // One 3x3 channel, 2x2 blocks, stride 1: 4 blocks of 4 values.
    let x = f64s(&(1..=9).map(|v| v as f64).collect::<Vec<_>>(), &[1, 1, 3, 3]);
    let c = ops::im2col(&x, &[2, 2], &[1, 1], &[0, 0], &[1, 1]).unwrap();
    assert_eq!(c.sizes(), &[1, 4, 4]);
    close(&c, &[1.0, 2.0, 4.0, 5.0, 2.0, 3.0, 5.0, 6.0, 4.0, 5.0, 7.0, 8.0, 5.0, 6.0, 8.0, 9.0]);
    // Padding adds zeros; an unbatched input stays unbatched.
    let c = ops::im2col(&f64s(&[1.0], &[1, 1, 1]), &[1, 1], &[1, 1], &[1, 1], &[1, 1]).unwrap();
    assert_eq!(c.sizes(), &[1, 9]);
    close(&c, &[0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn col2im_sums_the_blocks_im2col_takes() {
    // The 2x2 blocks of a 3x3 image, folded back: each pixel counted once per block that
    // covers it (corners 1, edges 2, the centre 4).
    let x = f64s(&(1..=9).map(|v| v as f64).collect::<Vec<_>>(), &[1, 1, 3, 3]);
    let cols = ops::im2col(&x, &[2, 2], &[1, 1], &[0, 0], &[1, 1]).unwrap();
    let back = ops::col2im(&cols, &[3, 3], &[2, 2], &[1, 1], &[0, 0], &[1, 1]).unwrap();
    assert_eq!(back.sizes(), &[1, 1, 3, 3]);
    close(&back, &[1.0, 4.0, 3.0, 8.0, 20.0, 12.0, 7.0, 16.0, 9.0]);
    // Blocks that tile the image (stride = kernel) give it back; with padding, dilation and an
    // unbatched input too, folding ones counts the blocks over each pixel.
    let img: Vec<f64> = (0..2 * 4 * 6).map(|v| v as f64 * 0.5 - 3.0).collect();
    let x = f64s(&img, &[2, 4, 6]);
    let cols = ops::im2col(&x, &[2, 3], &[1, 1], &[0, 0], &[2, 3]).unwrap();
    close(&ops::col2im(&cols, &[4, 6], &[2, 3], &[1, 1], &[0, 0], &[2, 3]).unwrap(), &img);
    let ones = Tensor::from_vec(vec![1.0f64; 5 * 5], &[1, 5, 5]).unwrap();
    let cols = ops::im2col(&ones, &[2, 2], &[2, 1], &[1, 0], &[1, 2]).unwrap();
    let counts = ops::col2im(
        &ops::ones_like(&cols, None, None, None, None, None).unwrap(),
        &[5, 5],
        &[2, 2],
        &[2, 1],
        &[1, 0],
        &[1, 2],
    )
    .unwrap();
    // By hand: rows covered per pixel row (kernel rows at +0 and +2 of starts -1..=2, of which
    // only the in-image ones count) times columns covered (starts 0 and 2, widths 2).
    let rows = [1.0, 2.0, 2.0, 2.0, 1.0];
    let colsum = [1.0, 1.0, 1.0, 1.0, 0.0];
    let want: Vec<f64> = rows.iter().flat_map(|r| colsum.iter().map(move |c| r * c)).collect();
    close(&counts, &want);
    // A column count that does not match the blocks is an error.
    assert!(ops::col2im(&f64s(&[0.0; 12], &[1, 4, 3]), &[3, 3], &[2, 2], &[1, 1], &[0, 0], &[1, 1]).is_err());
    assert!(ops::col2im(&f64s(&[0.0; 12], &[1, 3, 4]), &[3, 3], &[2, 2], &[1, 1], &[0, 0], &[1, 1]).is_err());
}

#[test]
fn integer_convolution_and_pooling_are_exact() {
    let x = i64s(&[1, 2, 3, 4, 5, 6], &[1, 1, 6]);
    let w = i64s(&[1, 0, -1], &[1, 1, 3]);
    let y = ops::conv1d(&x, &w, Some(&i64s(&[10], &[1])), &[1], &[1], &[1], 1).unwrap();
    assert_eq!((y.dtype(), y.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![8, 8, 8, 8, 8, 15]));
    let t =
        ops::conv_transpose1d(&i64s(&[1, 2], &[1, 1, 2]), &i64s(&[1, 1], &[1, 1, 2]), None, &[2], &[0], &[0], 1, &[1])
            .unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![1, 1, 2, 2]);
    // int64 wraps as in PyTorch.
    let big =
        ops::conv1d(&i64s(&[i64::MAX, 1], &[1, 1, 2]), &i64s(&[1, 1], &[1, 1, 2]), None, &[1], &[0], &[1], 1).unwrap();
    assert_eq!(big.to_vec::<i64>().unwrap(), vec![i64::MIN]);
    let p = i64s(&[1, 5, 3, 2, 7, 7, -1, 0], &[1, 2, 4]);
    let (m, idx) = ops::max_pool1d_with_indices(&p, &[2], &[2], &[0], &[1], false).unwrap();
    assert_eq!((m.to_vec::<i64>().unwrap(), idx.to_vec::<i64>().unwrap()), (vec![5, 3, 7, 0], vec![1, 2, 0, 3]));
    // Integer averages truncate.
    let a = ops::avg_pool1d(&p, &[2], &[2], &[0], false, true).unwrap();
    assert_eq!(a.to_vec::<i64>().unwrap(), vec![3, 2, 7, 0]);
    assert!(
        ops::avg_pool1d(&Tensor::from_vec(vec![1i32, 2], &[1, 1, 2]).unwrap(), &[2], &[2], &[0], false, true).is_err()
    );
}

#[test]
fn real_output_ffts_match_the_inverse_dft() {
    // irfft of the half spectrum [4, 1, 0] (n = 4): x_k = (4 + 2 cos(pi k / 2)) / 4.
    let y = ops::fft_irfft(&f64s(&[4.0, 1.0, 0.0], &[3]), None, -1, None).unwrap();
    close(&y, &[1.5, 1.0, 0.5, 1.0]);
    // hfft is the unnormalized dual; "ortho" scales by 1/sqrt(n).
    close(&ops::fft_hfft(&f64s(&[4.0, 1.0, 0.0], &[3]), None, -1, None).unwrap(), &[6.0, 4.0, 2.0, 4.0]);
    close(&ops::fft_irfft(&f64s(&[4.0, 1.0, 0.0], &[3]), None, -1, Some("ortho")).unwrap(), &[3.0, 2.0, 1.0, 2.0]);
    // 2-d: a constant half spectrum bin (0, 0) gives a constant signal.
    let y = ops::fft_irfft2(&f64s(&[6.0, 0.0, 0.0, 0.0], &[2, 2]), None, &[-2, -1], None).unwrap();
    assert_eq!(y.sizes(), &[2, 2]);
    close(&y, &[1.5, 1.5, 1.5, 1.5]);
    assert!(ops::fft_irfft(&f64s(&[1.0], &[1]), None, -1, None)
        .unwrap_err()
        .to_string()
        .contains("Invalid number of data points (0) specified"));
    assert!(ops::fft_irfft(&f64s(&[1.0, 2.0], &[2]), None, -1, Some("bad")).is_err());
}

#[test]
fn margin_losses() {
    // x = [0.1, 0.2, 0.4], y = 1: (max(0, 1 - 0.2 + 0.1) + max(0, 1 - 0.2 + 0.4)) / 3.
    let x = f64s(&[0.1, 0.2, 0.4], &[1, 3]);
    let l = ops::multi_margin_loss(&x, &i64s(&[1], &[1]), Scalar::Int(1), Scalar::Int(1), None, 1).unwrap();
    close(&l, &[(0.9 + 1.2) / 3.0]);
    let l = ops::multi_margin_loss(&x, &i64s(&[1], &[1]), Scalar::Int(2), Scalar::Int(1), None, 2).unwrap();
    close(&l, &[(0.81 + 1.44) / 3.0]);
    assert!(ops::multi_margin_loss(&x, &i64s(&[1], &[1]), Scalar::Int(3), Scalar::Int(1), None, 1).is_err());
    // PyTorch's documented example: targets 3 and 0 (then -1) of x = [0.1, 0.2, 0.4, 0.8].
    let x = f64s(&[0.1, 0.2, 0.4, 0.8], &[1, 4]);
    let l = ops::multilabel_margin_loss(&x, &i64s(&[3, 0, -1, 1], &[1, 4]), 1).unwrap();
    close(&l, &[0.85]);
}

#[test]
fn separable_upsampling_and_segment_reduce() {
    // Trilinear with align_corners on a linear ramp stays a ramp.
    let x = f64s(&[0.0, 1.0], &[1, 1, 1, 1, 2]);
    let y = ops::upsample_trilinear3d(&x, Some(&[1, 1, 3]), true, None).unwrap();
    close(&y, &[0.0, 0.5, 1.0]);
    // Bicubic at the same size is the identity; integers are refused, not rounded differently.
    let img = f64s(&[1.0, 2.0, 3.0, 4.0], &[1, 1, 2, 2]);
    close(&ops::upsample_bicubic2d(&img, Some(&[2, 2]), false, None).unwrap(), &[1.0, 2.0, 3.0, 4.0]);
    let b = Tensor::from_vec(vec![1u8, 2, 3, 4], &[1, 1, 2, 2]).unwrap();
    assert!(ops::upsample_bicubic2d(&b, Some(&[4, 4]), false, None).is_err());
    // Segments [1, 2], [], [3, 4, 5].
    let d = f64s(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    let l = i64s(&[2, 0, 3], &[3]);
    let r = |red: &str, init: Option<f64>| {
        ops::segment_reduce(&d, red, Some(&l), None, None, 0, false, init.map(Scalar::Float))
            .unwrap()
            .to_vec::<f64>()
            .unwrap()
    };
    assert_eq!(r("sum", None), vec![3.0, 0.0, 12.0]);
    assert_eq!(r("max", None), vec![2.0, f64::NEG_INFINITY, 5.0]);
    assert_eq!(r("prod", Some(10.0)), vec![20.0, 10.0, 600.0]);
    assert_eq!(r("min", Some(10.0)), vec![1.0, 10.0, 3.0]);
    assert!(r("mean", None)[1].is_nan());
    assert_eq!(r("mean", Some(10.0)), vec![6.5, 10.0, 22.0 / 3.0]);
    let off = i64s(&[0, 2, 2, 5], &[4]);
    assert_eq!(
        ops::segment_reduce(&d, "sum", None, None, Some(&off), 0, false, None).unwrap().to_vec::<f64>().unwrap(),
        vec![3.0, 0.0, 12.0]
    );
    assert!(ops::segment_reduce(&d, "sum", Some(&i64s(&[2, 2], &[2])), None, None, 0, false, None).is_err());
    assert!(ops::segment_reduce(&d, "median", Some(&l), None, None, 0, false, None).is_err());
}
