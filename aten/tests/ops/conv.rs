//! Convolution, pooling and upsampling: values against naive reference loops, non-contiguous
//! inputs, dtypes and errors.

use aten::{ops, Tensor};
use c10::{Error, ScalarType};

fn vals(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) as f64 / (1u64 << 31) as f64) * 2.0 - 1.0
        })
        .collect()
}

fn rand(shape: &[i64], seed: u64) -> Tensor {
    let n = shape.iter().product::<i64>() as usize;
    Tensor::from_vec(vals(n, seed).into_iter().map(|v| v as f32).collect::<Vec<f32>>(), shape).unwrap()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: {g} vs {w}");
    }
}

/// Naive 2-d convolution (NCHW, weight [O, C/g, KH, KW]).
#[allow(clippy::too_many_arguments)]
fn naive_conv2d(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    stride: [i64; 2],
    pad: [i64; 2],
    dil: [i64; 2],
    groups: i64,
) -> (Vec<f64>, Vec<i64>) {
    let (xs, ws) = (x.sizes(), w.sizes());
    let (n, c, h, wd) = (xs[0], xs[1], xs[2], xs[3]);
    let (o, cg, kh, kw) = (ws[0], ws[1], ws[2], ws[3]);
    let oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) / stride[0] + 1;
    let ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) / stride[1] + 1;
    let xv = x.to_vec::<f64>().unwrap();
    let wv = w.to_vec::<f64>().unwrap();
    let bv = b.map(|b| b.to_vec::<f64>().unwrap());
    let og = o / groups;
    let mut out = Vec::new();
    for ni in 0..n {
        for oi in 0..o {
            let g = oi / og;
            for y in 0..oh {
                for z in 0..ow {
                    let mut acc = bv.as_ref().map_or(0.0, |b| b[oi as usize]);
                    for ci in 0..cg {
                        let cin = g * cg + ci;
                        for a in 0..kh {
                            for e in 0..kw {
                                let iy = y * stride[0] - pad[0] + a * dil[0];
                                let ix = z * stride[1] - pad[1] + e * dil[1];
                                if iy < 0 || iy >= h || ix < 0 || ix >= wd {
                                    continue;
                                }
                                acc += xv[(((ni * c + cin) * h + iy) * wd + ix) as usize]
                                    * wv[(((oi * cg + ci) * kh + a) * kw + e) as usize];
                            }
                        }
                    }
                    out.push(acc);
                }
            }
        }
    }
    let _ = c;
    (out, vec![n, o, oh, ow])
}

/// Input shape, weight shape, stride, padding, dilation, groups.
type ConvCase = ([i64; 4], [i64; 4], [i64; 2], [i64; 2], [i64; 2], i64);

#[test]
fn conv2d_matches_reference() {
    // (input, weight, stride, padding, dilation, groups)
    let cases: &[ConvCase] = &[
        ([2, 3, 7, 6], [4, 3, 3, 3], [1, 1], [1, 1], [1, 1], 1),
        ([2, 4, 9, 8], [6, 2, 3, 2], [2, 1], [1, 0], [1, 2], 2),
        ([1, 2, 10, 10], [3, 2, 3, 3], [1, 2], [0, 2], [2, 2], 1),
        ([3, 5, 4, 4], [7, 5, 1, 1], [1, 1], [0, 0], [1, 1], 1),
    ];
    for (i, &(xs, ws, st, pd, dl, g)) in cases.iter().enumerate() {
        let x = rand(&xs, 100 + i as u64);
        let w = rand(&ws, 200 + i as u64);
        let b = rand(&[ws[0]], 300 + i as u64);
        let (want, shape) = naive_conv2d(&x, &w, Some(&b), st, pd, dl, g);
        let r = ops::conv2d(&x, &w, Some(&b), &st, &pd, &dl, g).unwrap();
        assert_eq!(r.sizes(), &shape[..], "case {i}");
        assert_close(&r.to_vec::<f64>().unwrap(), &want, 1e-5);
        // f64 and non-contiguous input give the same values.
        let x64 = ops::_to_copy(&x, Some(ScalarType::F64), None, None, None, false, None).unwrap();
        let w64 = ops::_to_copy(&w, Some(ScalarType::F64), None, None, None, false, None).unwrap();
        let b64 = ops::_to_copy(&b, Some(ScalarType::F64), None, None, None, false, None).unwrap();
        let xt = ops::transpose(
            &ops::contiguous(&ops::transpose(&x64, 2, 3).unwrap(), c10::MemoryFormat::Contiguous).unwrap(),
            2,
            3,
        )
        .unwrap();
        assert!(!xt.is_contiguous());
        let r = ops::conv2d(&xt, &w64, Some(&b64), &st, &pd, &dl, g).unwrap();
        assert_eq!(r.dtype(), ScalarType::F64);
        assert_close(&r.to_vec::<f64>().unwrap(), &want, 1e-5);
    }
}

/// Convolutions whose unfolded image outgrows half an L2 cache of up to 8 MiB are computed a
/// block of output positions at a time (Note [Blocked convolution columns]): one group with
/// the bias folded into the product, and two strided groups with the bias added first. Each
/// matches the reference, and 1, 2 and 3 threads give the same bits (every output element
/// comes from one block's product).
#[test]
fn blocked_convolutions_match_the_reference_on_any_number_of_threads() {
    let cases: &[ConvCase] = &[
        ([2, 64, 48, 48], [8, 64, 3, 3], [1, 1], [1, 1], [1, 1], 1),
        ([1, 64, 96, 97], [4, 32, 3, 3], [2, 2], [1, 1], [1, 1], 2),
    ];
    for (i, &(xs, ws, st, pd, dl, g)) in cases.iter().enumerate() {
        let (x, w, b) = (rand(&xs, 10 + i as u64), rand(&ws, 20 + i as u64), rand(&[ws[0]], 30 + i as u64));
        let (want, shape) = naive_conv2d(&x, &w, Some(&b), st, pd, dl, g);
        // The unfolded image ([C * k + 1, L] f32) is larger than 4 MiB, so it is cut into blocks.
        assert!((xs[1] * 9 + 1) * shape[2] * shape[3] * 4 > 4 << 20, "case {i} is not blocked");
        let mut runs = Vec::new();
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let r = pool.install(|| ops::conv2d(&x, &w, Some(&b), &st, &pd, &dl, g)).unwrap();
            assert_eq!(r.sizes(), &shape[..], "case {i}, {threads} threads");
            assert_close(&r.to_vec::<f64>().unwrap(), &want, 1e-5);
            runs.push(r.to_vec::<f32>().unwrap());
        }
        assert!(runs.iter().all(|r| r.iter().map(|v| v.to_bits()).eq(runs[0].iter().map(|v| v.to_bits()))), "case {i}");
    }
}

/// Naive 3-d convolution of one group (NCDHW, weight [O, C, KD, KH, KW]), no bias.
fn naive_conv3d(x: &Tensor, w: &Tensor, stride: [i64; 3], pad: [i64; 3], dil: [i64; 3]) -> (Vec<f64>, Vec<i64>) {
    let (xs, ws) = (x.sizes(), w.sizes());
    let (n, c, o) = (xs[0], xs[1], ws[0]);
    let (inp, k) = ([xs[2], xs[3], xs[4]], [ws[2], ws[3], ws[4]]);
    let out: Vec<i64> = (0..3).map(|d| (inp[d] + 2 * pad[d] - dil[d] * (k[d] - 1) - 1) / stride[d] + 1).collect();
    let (xv, wv) = (x.to_vec::<f64>().unwrap(), w.to_vec::<f64>().unwrap());
    let mut res = Vec::new();
    for ni in 0..n {
        for oi in 0..o {
            for z in 0..out[0] {
                for y in 0..out[1] {
                    for q in 0..out[2] {
                        let mut acc = 0.0;
                        for ci in 0..c {
                            for a in 0..k[0] {
                                for b in 0..k[1] {
                                    for e in 0..k[2] {
                                        let iz = z * stride[0] - pad[0] + a * dil[0];
                                        let iy = y * stride[1] - pad[1] + b * dil[1];
                                        let ix = q * stride[2] - pad[2] + e * dil[2];
                                        if iz < 0 || iz >= inp[0] || iy < 0 || iy >= inp[1] || ix < 0 || ix >= inp[2] {
                                            continue;
                                        }
                                        let xi = (((ni * c + ci) * inp[0] + iz) * inp[1] + iy) * inp[2] + ix;
                                        let wi = (((oi * c + ci) * k[0] + a) * k[1] + b) * k[2] + e;
                                        acc += xv[xi as usize] * wv[wi as usize];
                                    }
                                }
                            }
                        }
                        res.push(acc);
                    }
                }
            }
        }
    }
    (res, [vec![n, o], out].concat())
}

/// Note [Unfolding by shifted copies]: convolutions with stride 1 along H and W whose output is
/// as wide as the input unfold each plane with one shifted copy and zero what wrapped around.
/// Kernels wider than tall and taller than wide, dilations, one-sided and larger-than-kernel
/// paddings along D and H, images one pixel wide or tall, 3-d inputs with a D stride, and
/// blocked unfoldings whose blocks start mid-row all match the reference loops.
#[test]
fn same_width_convolutions_unfold_by_shifted_copies() {
    // (input [N, C, D, H, W], weight [O, C, KD, KH, KW], stride, padding, dilation)
    type Case = ([i64; 5], [i64; 5], [i64; 3], [i64; 3], [i64; 3]);
    let cases: &[Case] = &[
        ([2, 3, 1, 7, 6], [4, 3, 1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        ([1, 2, 1, 5, 9], [3, 2, 1, 1, 5], [1, 1, 1], [0, 0, 2], [1, 1, 1]),
        ([1, 2, 1, 8, 4], [3, 2, 1, 5, 1], [1, 1, 1], [0, 2, 0], [1, 1, 1]),
        ([1, 2, 1, 9, 9], [2, 2, 1, 3, 3], [1, 1, 1], [0, 2, 2], [1, 2, 2]),
        ([1, 2, 1, 6, 7], [2, 2, 1, 3, 3], [1, 1, 1], [0, 3, 1], [1, 1, 1]),
        ([2, 1, 1, 1, 5], [2, 1, 1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
        ([1, 2, 1, 6, 1], [2, 2, 1, 3, 3], [1, 1, 1], [0, 0, 1], [1, 1, 1]),
        ([1, 2, 5, 4, 6], [3, 2, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
        ([1, 2, 7, 5, 5], [2, 2, 3, 3, 3], [2, 1, 1], [2, 1, 1], [2, 1, 1]),
        ([1, 2, 4, 3, 4], [2, 2, 2, 3, 3], [1, 1, 1], [0, 1, 1], [3, 1, 1]),
        ([1, 24, 1, 140, 150], [3, 24, 1, 3, 3], [1, 1, 1], [0, 1, 1], [1, 1, 1]),
    ];
    for (i, &(xs, ws, st, pd, dl)) in cases.iter().enumerate() {
        let (x, w) = (rand(&xs, 40 + i as u64), rand(&ws, 50 + i as u64));
        let (want, shape) = naive_conv3d(&x, &w, st, pd, dl);
        assert_eq!(shape[4], xs[4], "case {i} is not as wide as its input");
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let r = pool.install(|| ops::conv3d(&x, &w, None, &st, &pd, &dl, 1)).unwrap();
            assert_eq!(r.sizes(), &shape[..], "case {i}");
            assert_close(&r.to_vec::<f64>().unwrap(), &want, 1e-5);
        }
    }
}

#[test]
fn conv1d_unbatched_bf16_and_same_padding() {
    let x = rand(&[3, 10], 1);
    let w = rand(&[2, 3, 4], 2);
    let r = ops::conv1d(&x, &w, None, &[1], &[0], &[1], 1).unwrap();
    assert_eq!(r.sizes(), &[2, 7]);
    // Same as conv2d with a height of 1.
    let r2 = ops::conv2d(
        &ops::unsqueeze(&ops::unsqueeze(&x, 0).unwrap(), 2).unwrap(),
        &ops::unsqueeze(&w, 2).unwrap(),
        None,
        &[1],
        &[0],
        &[1],
        1,
    )
    .unwrap();
    assert_close(&r.to_vec::<f64>().unwrap(), &r2.to_vec::<f64>().unwrap(), 1e-6);
    let xb = ops::_to_copy(&x, Some(ScalarType::BF16), None, None, None, false, None).unwrap();
    let wb = ops::_to_copy(&w, Some(ScalarType::BF16), None, None, None, false, None).unwrap();
    let rb = ops::conv1d(&xb, &wb, None, &[1], &[0], &[1], 1).unwrap();
    assert_eq!(rb.dtype(), ScalarType::BF16);
    assert_close(&rb.to_vec::<f64>().unwrap(), &r.to_vec::<f64>().unwrap(), 5e-2);
    // padding='same' with an even kernel keeps the length (extra pad on the right).
    let s = ops::conv1d_padding(&x, &w, None, &[1], "same", &[1], 1).unwrap();
    assert_eq!(s.sizes(), &[2, 10]);
    let xp = pad_1_2(&x);
    let want = ops::conv1d(&xp, &w, None, &[1], &[0], &[1], 1).unwrap();
    assert_close(&s.to_vec::<f64>().unwrap(), &want.to_vec::<f64>().unwrap(), 1e-6);
    assert_eq!(ops::conv1d_padding(&x, &w, None, &[1], "valid", &[1], 1).unwrap().sizes(), &[2, 7]);
    assert!(ops::conv1d_padding(&x, &w, None, &[2], "same", &[1], 1).is_err());
}

/// Pads the last dim of `x` by 1 on the left and 2 on the right ('same' for k = 4).
fn pad_1_2(x: &Tensor) -> Tensor {
    let n = x.sizes()[1];
    let out = ops::zeros(&[x.sizes()[0], n + 3], Some(ScalarType::F32), None, None, None).unwrap();
    let v = ops::narrow(&out, 1, 1, n).unwrap();
    ops::copy_(&v, x, false).unwrap();
    out
}

#[test]
fn conv_transpose_is_the_adjoint_of_conv() {
    // <conv(x, w), y> == <x, conv_transpose(y, w)> for matching geometry.
    let x = rand(&[2, 4, 7, 6], 3);
    let w = rand(&[6, 2, 3, 3], 4); // groups = 2: O = 6, C/g = 2
    let (st, pd) = ([2i64, 2], [1i64, 1]);
    let y = ops::conv2d(&x, &w, None, &st, &pd, &[1], 2).unwrap();
    let gy = rand(y.sizes(), 5);
    // Output size (4-1)*2 - 2 + 3 = 7 (+0) and (3-1)*2 - 2 + 3 = 5 (+1) to reach 6.
    let gx = ops::conv_transpose2d(&gy, &w, None, &st, &pd, &[0, 1], 2, &[1]).unwrap();
    assert_eq!(gx.sizes(), x.sizes());
    let lhs: f64 = y.to_vec::<f64>().unwrap().iter().zip(gy.to_vec::<f64>().unwrap()).map(|(a, b)| a * b).sum();
    let rhs: f64 = x.to_vec::<f64>().unwrap().iter().zip(gx.to_vec::<f64>().unwrap()).map(|(a, b)| a * b).sum();
    assert!((lhs - rhs).abs() < 1e-4 * (1.0 + lhs.abs()), "{lhs} vs {rhs}");
    // Bias is added per output channel; conv_transpose1d matches the 2-d case with height 1.
    let b = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0]);
    let xt = rand(&[1, 6, 5], 6);
    let wt = rand(&[6, 2, 3], 7);
    let r1 = ops::conv_transpose1d(&xt, &wt, Some(&b), &[2], &[0], &[1], 2, &[1]).unwrap();
    assert_eq!(r1.sizes(), &[1, 4, 12]);
    let r0 = ops::conv_transpose1d(&xt, &wt, None, &[2], &[0], &[1], 2, &[1]).unwrap();
    let d: Vec<f64> = r1.to_vec::<f64>().unwrap().iter().zip(r0.to_vec::<f64>().unwrap()).map(|(a, b)| a - b).collect();
    for (i, v) in d.iter().enumerate() {
        assert!((v - (1 + i / 12) as f64).abs() < 1e-5);
    }
}

#[test]
fn conv_errors() {
    let x = rand(&[1, 3, 5, 5], 1);
    let w = rand(&[4, 2, 3, 3], 2);
    match ops::conv2d(&x, &w, None, &[1], &[0], &[1], 1) {
        Err(Error::Shape { msg, .. }) => {
            assert!(msg.contains("expected input[1, 3, 5, 5] to have 2 channels, but got 3 channels instead"), "{msg}")
        }
        other => panic!("{other:?}"),
    }
    let w3 = rand(&[4, 3, 7, 7], 2);
    assert!(matches!(ops::conv2d(&x, &w3, None, &[1], &[0], &[1], 1), Err(Error::Shape { .. })));
    let w33 = rand(&[4, 3, 3, 3], 2);
    assert!(ops::conv2d(&x, &w33, None, &[0], &[0], &[1], 1).is_err());
    assert!(ops::conv2d(&x, &w33, None, &[1], &[-1], &[1], 1).is_err());
    assert!(ops::conv2d(&rand(&[5, 5], 1), &w33, None, &[1], &[0], &[1], 1).is_err());
    assert!(ops::conv2d(&x, &w33, Some(&rand(&[3], 1)), &[1], &[0], &[1], 1).is_err());
    let x64 = ops::_to_copy(&x, Some(ScalarType::F64), None, None, None, false, None).unwrap();
    assert!(ops::conv2d(&x64, &w33, None, &[1], &[0], &[1], 1).is_err());
    assert!(
        ops::conv_transpose2d(&x, &rand(&[3, 2, 3, 3], 1), None, &[1], &[0], &[1], 1, &[1]).is_err(),
        "output_padding >= stride and dilation"
    );
}

#[test]
fn max_and_avg_pool() {
    let x = Tensor::from_vec((0..16).map(|v| v as f32).collect::<Vec<_>>(), &[1, 1, 4, 4]).unwrap();
    let r = ops::max_pool2d(&x, &[2], &[], &[0], &[1], false).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![5.0, 7.0, 13.0, 15.0]);
    let (v, i) = ops::max_pool2d_with_indices(&x, &[3], &[2], &[1], &[1], false).unwrap();
    assert_eq!(v.sizes(), &[1, 1, 2, 2]);
    assert_eq!(v.to_vec::<f32>().unwrap(), vec![5.0, 7.0, 13.0, 15.0]);
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![5, 7, 13, 15]);
    // With ceil_mode the last window starting inside the input is kept: (4 + 2 - 3) / 2 rounds up.
    let (v, i) = ops::max_pool2d_with_indices(&x, &[3], &[2], &[1], &[1], true).unwrap();
    assert_eq!(v.sizes(), &[1, 1, 3, 3]);
    assert_eq!(v.to_vec::<f32>().unwrap()[8], 15.0);
    assert_eq!(i.to_vec::<i64>().unwrap()[2], 7);
    // ceil_mode adds a partial window: 5 -> (5-2)/2+1 = 2 floor, 3 ceil.
    let x5 = rand(&[2, 5, 5], 3);
    assert_eq!(ops::max_pool2d(&x5, &[2], &[2], &[0], &[1], true).unwrap().sizes(), &[2, 3, 3]);
    assert_eq!(ops::max_pool2d(&x5, &[2], &[2], &[0], &[1], false).unwrap().sizes(), &[2, 2, 2]);
    // NaN propagates.
    let n = Tensor::from_vec(vec![1.0f32, f32::NAN, 3.0, 0.0], &[1, 1, 4]).unwrap();
    let (v, i) = ops::max_pool1d_with_indices(&n, &[2], &[2], &[0], &[1], false).unwrap();
    assert!(v.to_vec::<f32>().unwrap()[0].is_nan());
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, 2]);
    // avg: padding counted or not, divisor override.
    let r = ops::avg_pool2d(&x, &[2], &[], &[0], false, true, None).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2.5, 4.5, 10.5, 12.5]);
    let p = ops::avg_pool2d(&x, &[2], &[2], &[1], false, true, None).unwrap();
    assert_eq!(p.to_vec::<f32>().unwrap()[0], 0.0 / 4.0);
    let p = ops::avg_pool2d(&x, &[2], &[2], &[1], false, false, None).unwrap();
    assert_eq!(p.to_vec::<f32>().unwrap()[..2], [0.0, 1.5]);
    let p = ops::avg_pool2d(&x, &[2], &[], &[0], false, true, Some(1)).unwrap();
    assert_eq!(p.to_vec::<f32>().unwrap(), vec![10.0, 18.0, 42.0, 50.0]);
    let a1 =
        ops::avg_pool1d(&Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[1, 1, 3]).unwrap(), &[2], &[1], &[1], false, false)
            .unwrap();
    assert_eq!(a1.to_vec::<f32>().unwrap(), vec![1.0, 1.5, 2.5, 3.0]);
    // Non-contiguous input.
    let xt = ops::transpose(&x, 2, 3).unwrap();
    assert_eq!(
        ops::max_pool2d(&xt, &[2], &[], &[0], &[1], false).unwrap().to_vec::<f32>().unwrap(),
        vec![5.0, 13.0, 7.0, 15.0]
    );
    // Errors.
    assert!(ops::max_pool2d(&x, &[2], &[], &[2], &[1], false).is_err(), "pad > kernel/2");
    assert!(ops::max_pool2d(&x, &[0], &[], &[0], &[1], false).is_err());
    assert!(ops::max_pool2d(&rand(&[4], 1), &[2], &[], &[0], &[1], false).is_err());
    assert!(ops::avg_pool2d(&x, &[2], &[], &[0], false, true, Some(0)).is_err());
    assert!(ops::max_pool2d(&x, &[5], &[], &[0], &[1], false).is_err(), "output too small");
}

#[test]
fn adaptive_pools_upsampling_and_pixel_shuffle() {
    let x = Tensor::from_vec((0..10).map(|v| v as f32).collect::<Vec<_>>(), &[1, 1, 10]).unwrap();
    // Windows [0,4) [3,7) [6,10).
    let r = ops::adaptive_avg_pool1d(&x, &[3]).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![1.5, 4.5, 7.5]);
    let (v, i) = ops::adaptive_max_pool1d(&x, &[3]).unwrap();
    assert_eq!((v.to_vec::<f32>().unwrap(), i.to_vec::<i64>().unwrap()), (vec![3.0, 6.0, 9.0], vec![3, 6, 9]));
    let x2 = Tensor::from_vec((0..16).map(|v| v as f32).collect::<Vec<_>>(), &[1, 4, 4]).unwrap();
    assert_eq!(ops::adaptive_avg_pool2d(&x2, &[1, 1]).unwrap().to_vec::<f32>().unwrap(), vec![7.5]);
    assert_eq!(ops::adaptive_max_pool2d(&x2, &[2, 2]).unwrap().1.to_vec::<i64>().unwrap(), vec![5, 7, 13, 15]);
    // Nearest: 2 -> 3 maps 0,0,1; 2 -> 4 repeats.
    let s = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[1, 1, 2, 2]).unwrap();
    let u = ops::upsample_nearest2d(&s, Some(&[3, 4]), None).unwrap();
    assert_eq!(u.to_vec::<f32>().unwrap(), vec![1., 1., 2., 2., 1., 1., 2., 2., 3., 3., 4., 4.]);
    let u = ops::upsample_nearest2d(&s, None, Some(&[2.0, 1.0])).unwrap();
    assert_eq!(u.sizes(), &[1, 1, 4, 2]);
    assert!(ops::upsample_nearest2d(&s, None, None).is_err());
    // Bilinear: align_corners interpolates the corners exactly.
    let b = ops::upsample_bilinear2d(&s, Some(&[3, 3]), true, None).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![1.0, 1.5, 2.0, 2.0, 2.5, 3.0, 3.0, 3.5, 4.0]);
    let b = ops::upsample_bilinear2d(&s, Some(&[4, 4]), false, None).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap()[..4], [1.0, 1.25, 1.75, 2.0]);
    // Pixel shuffle round trip.
    let p = rand(&[2, 8, 3, 3], 9);
    let sh = ops::pixel_shuffle(&p, 2).unwrap();
    assert_eq!(sh.sizes(), &[2, 2, 6, 6]);
    assert_eq!(ops::pixel_unshuffle(&sh, 2).unwrap().to_vec::<f32>().unwrap(), p.to_vec::<f32>().unwrap());
    // out[0, 0, 0, 1] = in[0, 1, 0, 0].
    assert_eq!(sh.to_vec::<f32>().unwrap()[1], p.to_vec::<f32>().unwrap()[9]);
    assert!(ops::pixel_shuffle(&rand(&[1, 3, 2, 2], 1), 2).is_err());
}

/// The f32 max-pool fast path (Note [Max pooling fast path]) and the general kernel (which f64
/// takes) agree on values and indices, with ties (the first maximum in row-major window order
/// wins), NaN (propagates, the last NaN's index), -inf everywhere in a window, and overlapping
/// or strided windows.
#[test]
fn max_pool2d_fast_path_matches_the_general_kernel() {
    let n = 2 * 3 * 9 * 11;
    // Sparse NaN, then NaN in every third position (two in many 2 x 2 windows).
    for nan_every in [23, 3] {
        let v: Vec<f64> = (0..n)
            .map(|i| match i % 23 {
                _ if i % nan_every == 5 % nan_every => f64::NAN,
                7..=10 => f64::NEG_INFINITY,
                r => ((r * 7) % 4) as f64 - 1.0,
            })
            .collect();
        let x64 = Tensor::from_vec(v, &[2, 3, 9, 11]).unwrap();
        let x32 = x64.to(ScalarType::F32).call().unwrap();
        for (k, s) in [(2i64, 2i64), (3, 2), (2, 1), (3, 3)] {
            let (v32, i32_) = ops::max_pool2d_with_indices(&x32, &[k], &[s], &[0], &[1], false).unwrap();
            let (v64, i64_) = ops::max_pool2d_with_indices(&x64, &[k], &[s], &[0], &[1], false).unwrap();
            assert_eq!(i32_.to_vec::<i64>().unwrap(), i64_.to_vec::<i64>().unwrap(), "indices, kernel {k} stride {s}");
            let (a, b) = (v32.to_vec::<f64>().unwrap(), v64.to_vec::<f64>().unwrap());
            for (j, (x, y)) in a.iter().zip(&b).enumerate() {
                assert!(x == y || (x.is_nan() && y.is_nan()), "value {j}, kernel {k} stride {s}: {x} vs {y}");
            }
        }
    }
}

/// The 2 x 2, stride-2 kernel on a plane wider than its windows reach (odd width: the last
/// column is not read): a closed form, each window's maximum at its bottom-right corner, and
/// the backward scatters each gradient there and zeroes the rest.
#[test]
fn max_pool2d_2x2_values_indices_and_backward() {
    let (h, w) = (5usize, 7usize);
    let v: Vec<f32> = (0..2 * h * w).map(|i| i as f32).collect();
    let x = Tensor::from_vec(v, &[1, 2, h as i64, w as i64]).unwrap();
    let (out, idx) = ops::max_pool2d_with_indices(&x, &[2], &[2], &[0], &[1], false).unwrap();
    assert_eq!(out.sizes(), &[1, 2, 2, 3]);
    let mut want_i = Vec::new();
    let mut want_v = Vec::new();
    for p in 0..2 {
        for r in 0..2 {
            for c in 0..3 {
                let i = (2 * r + 1) * w + 2 * c + 1;
                want_i.push(i as i64);
                want_v.push((p * h * w + i) as f32);
            }
        }
    }
    assert_eq!(idx.to_vec::<i64>().unwrap(), want_i);
    assert_eq!(out.to_vec::<f32>().unwrap(), want_v);
    let g = Tensor::from_vec((1..=12).map(|i| i as f32).collect::<Vec<f32>>(), &[1, 2, 2, 3]).unwrap();
    let gi = ops::max_pool2d_with_indices_backward(&g, &x, &[2], &[2], &[0], &[1], false, &idx).unwrap();
    let gi = gi.to_vec::<f32>().unwrap();
    for p in 0..2 {
        for i in 0..h * w {
            let want =
                want_i[p * 6..p * 6 + 6].iter().position(|&j| j as usize == i).map_or(0.0, |k| (p * 6 + k + 1) as f32);
            assert_eq!(gi[p * h * w + i], want, "plane {p}, position {i}");
        }
    }
    // An index outside the plane is an error value, not a write out of bounds.
    let bad = Tensor::from_vec(vec![0i64, 1, 2, 3, 4, (h * w) as i64, 0, 1, 2, 3, 4, 5], &[1, 2, 2, 3]).unwrap();
    let err = ops::max_pool2d_with_indices_backward(&g, &x, &[2], &[2], &[0], &[1], false, &bad).unwrap_err();
    assert!(err.to_string().contains("out of bounds"), "{err}");
    let neg = Tensor::from_vec(vec![-1i64; 12], &[1, 2, 2, 3]).unwrap();
    assert!(ops::max_pool2d_with_indices_backward(&g, &x, &[2], &[2], &[0], &[1], false, &neg).is_err());
    // More planes in the gradient than in the input: a shape error, not writes past the input.
    let g2 = ops::cat(&[g.clone(), g.clone()], 0).unwrap();
    let idx2 = ops::cat(&[idx.clone(), idx.clone()], 0).unwrap();
    let err = ops::max_pool2d_with_indices_backward(&g2, &x, &[2], &[2], &[0], &[1], false, &idx2).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }), "{err:?}");
}

/// A bias folded into the weights (Note [Bias as a column of the weights]: one group, a column
/// buffer) gives the convolution without bias plus the bias per channel, in f32 and f64, with
/// padding, stride and dilation; grouped and pointwise convolutions (which add the bias
/// separately) agree with the same identity.
#[test]
fn convolution_bias_is_added_per_output_channel() {
    for dtype in [ScalarType::F32, ScalarType::F64] {
        for (c, o, k, groups, stride, pad, dil) in [
            (3, 4, 3, 1, 1, 1, 1),
            (3, 5, 3, 1, 2, 0, 1),
            (2, 3, 2, 1, 1, 2, 2),
            (4, 6, 3, 2, 1, 1, 1),
            (3, 4, 1, 1, 1, 0, 1),
        ] {
            let x = rand(&[2, c, 7, 6], 1).to(dtype).call().unwrap();
            let w = rand(&[o, c / groups, k, k], 2).to(dtype).call().unwrap();
            let b = rand(&[o], 3).to(dtype).call().unwrap();
            let with = ops::conv2d(&x, &w, Some(&b), &[stride], &[pad], &[dil], groups).unwrap();
            let without = ops::conv2d(&x, &w, None, &[stride], &[pad], &[dil], groups).unwrap();
            assert_eq!(with.dtype(), dtype);
            assert_eq!(with.sizes(), without.sizes());
            let (hw, bs) = (with.sizes()[2] * with.sizes()[3], b.to_vec::<f64>().unwrap());
            let (a, z) = (with.to_vec::<f64>().unwrap(), without.to_vec::<f64>().unwrap());
            for (i, (p, q)) in a.iter().zip(&z).enumerate() {
                let ch = (i as i64 / hw) % o;
                let want = q + bs[ch as usize];
                assert!(
                    (p - want).abs() <= 1e-5 * (1.0 + want.abs()),
                    "{dtype:?} case c{c} o{o} k{k} g{groups}: {i}: {p} vs {want}"
                );
            }
        }
    }
    // No input channels: the folded bias needs a non-empty weight row, so this takes the
    // unfolded path and must not panic. (PyTorch 2.15 returns an empty [2, 0, 4, 4] here; we
    // return [2, 3, 4, 4] holding the bias, a divergence noted on issue 19.)
    let x = Tensor::from_vec(Vec::<f32>::new(), &[2, 0, 4, 4]).unwrap();
    let w = Tensor::from_vec(Vec::<f32>::new(), &[3, 0, 3, 3]).unwrap();
    let b = Tensor::from_vec(vec![1f32, 2.0, 3.0], &[3]).unwrap();
    let y = ops::conv2d(&x, &w, Some(&b), &[1], &[1], &[1], 1);
    assert!(y.is_ok(), "{y:?}");
}
