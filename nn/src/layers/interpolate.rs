//! `torch.nn.functional.interpolate`: every mode of `nn.Upsample`.
//!
//! `nearest` and `bilinear` run the ATen kernels; `area` is adaptive average pooling. The other
//! modes (`linear`, `bicubic`, `trilinear`, `nearest-exact`) are separable: each output position
//! along a spatial dimension is a weighted sum of a few input positions (two for the linear
//! modes, four for bicubic, one for nearest-exact), and a multi-dimensional interpolation is the
//! one-dimensional one applied per dimension. They are built here from `index_select`, `mul` and
//! `add`, so autograd differentiates them through that decomposition. The source positions and
//! weights follow PyTorch's kernels (`area_pixel_compute_source_index`, the cubic convolution
//! with A = -0.75, borders clamped).

use aten::{ops, Tensor};
use c10::{Error, Result, Scalar};

use crate::layers::invalid;

/// The modes `interpolate` takes.
pub(crate) const MODES: &str = "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact";

/// The cubic convolution constant PyTorch uses (as OpenCV).
const CUBIC_A: f64 = -0.75;

/// `F.interpolate(input, size=None, scale_factor=None, mode='nearest', align_corners=None)`:
/// resizes the spatial dimensions (all but the first two) of a 3-D, 4-D or 5-D `input` to `size`
/// or to `floor(in * scale_factor)`. `size` and `scale_factor` take one value for every spatial
/// dimension or a single value for all. With `scale_factor`, the source positions use the given
/// factor (PyTorch's default `recompute_scale_factor=None`). `align_corners` may only be given for
/// the interpolating modes and defaults to false.
pub fn interpolate(
    input: &Tensor,
    size: Option<&[i64]>,
    scale_factor: Option<&[f64]>,
    mode: &str,
    align_corners: Option<bool>,
) -> Result<Tensor> {
    let op = "interpolate";
    check_mode(op, mode, align_corners.is_some(), || {
        format!(
            "Input Error: Only 3D, 4D and 5D input Tensors supported (got {}D) for the modes: {MODES} (got {mode})",
            input.dim()
        )
    })?;
    let align_corners = align_corners.unwrap_or(false);
    let dim = input.dim();
    if !(3..=5).contains(&dim) {
        return Err(Error::shape(
            op,
            format!(
                "Input Error: Only 3D, 4D and 5D input Tensors supported (got {dim}D) for the modes: {MODES} (got {mode})"
            ),
        ));
    }
    let needs = match mode {
        "linear" => Some(3),
        "bilinear" | "bicubic" => Some(4),
        "trilinear" => Some(5),
        _ => None,
    };
    if let Some(n) = needs.filter(|&n| n != dim) {
        return Err(Error::shape(op, format!("Got {dim}D input, but {mode} mode needs {n}D input")));
    }
    let spatial = dim - 2;
    let in_sizes = &input.sizes()[2..];
    let (out_sizes, scales): (Vec<i64>, Vec<Option<f64>>) = match (size, scale_factor) {
        (Some(_), Some(_)) => return Err(invalid(op, "only one of size or scale_factor should be defined")),
        (None, None) => return Err(invalid(op, "either size or scale_factor should be defined")),
        (Some(s), None) => {
            let s = per_dim(s, spatial).ok_or_else(|| {
                invalid(
                    op,
                    format!(
                        "Input and output must have the same number of spatial dimensions, but got input with spatial \
                         dimensions of {in_sizes:?} and output size of {s:?}. Please provide input tensor in (N, C, \
                         d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
                    ),
                )
            })?;
            if let Some(&bad) = s.iter().find(|&&v| v < 0) {
                return Err(invalid(op, format!("output size must be non-negative, got {bad}")));
            }
            (s, vec![None; spatial])
        }
        (None, Some(f)) => {
            let f = per_dim(f, spatial).ok_or_else(|| {
                invalid(
                    op,
                    format!(
                        "Input and scale_factor must have the same number of spatial dimensions, but got input with \
                         spatial dimensions of {in_sizes:?} and scale_factor of shape {f:?}. Please provide input \
                         tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
                    ),
                )
            })?;
            if let Some(&bad) = f.iter().find(|&&v| !(v.is_finite() && v > 0.0)) {
                return Err(invalid(op, format!("scale_factor must be positive and finite, got {bad}")));
            }
            let out = in_sizes.iter().zip(&f).map(|(&i, &s)| (i as f64 * s).floor() as i64).collect();
            (out, f.into_iter().map(Some).collect())
        }
    };
    let scale_list: Option<Vec<f64>> = scales.iter().copied().collect();
    match mode {
        "nearest" => match spatial {
            1 => ops::upsample_nearest1d(input, size.map(|_| out_sizes.as_slice()), scale_list.as_deref()),
            2 => ops::upsample_nearest2d(input, size.map(|_| out_sizes.as_slice()), scale_list.as_deref()),
            _ => ops::upsample_nearest3d(input, size.map(|_| out_sizes.as_slice()), scale_list.as_deref()),
        },
        "bilinear" => {
            ops::upsample_bilinear2d(input, size.map(|_| out_sizes.as_slice()), align_corners, scale_list.as_deref())
        }
        "area" => match spatial {
            1 => ops::adaptive_avg_pool1d(input, &out_sizes),
            2 => ops::adaptive_avg_pool2d(input, &out_sizes),
            _ => ops::adaptive_avg_pool3d(input, &out_sizes),
        },
        _ => {
            if mode != "nearest-exact" && !input.dtype().is_floating_point() {
                return Err(Error::UnsupportedDtype { op: format!("interpolate ({mode})"), dtype: input.dtype() });
            }
            let mut x = input.clone();
            for d in 0..spatial {
                let (n_in, n_out) = (in_sizes[d], out_sizes[d]);
                if n_out > 0 && n_in == 0 {
                    return Err(Error::shape(
                        op,
                        format!("Input and output sizes should be greater than 0, but got input size {in_sizes:?}"),
                    ));
                }
                let taps = match mode {
                    "nearest-exact" => nearest_exact_taps(n_in, n_out, scales[d]),
                    "bicubic" => cubic_taps(n_in, n_out, align_corners, scales[d]),
                    _ => linear_taps(n_in, n_out, align_corners, scales[d]),
                };
                x = gather_weighted(&x, (d + 2) as i64, taps)?;
            }
            Ok(x)
        }
    }
}

/// Checks that `mode` is one of `interpolate`'s (else the error `unknown` words) and that
/// `align_corners` is set only for the interpolating modes.
pub(crate) fn check_mode(
    op: &str,
    mode: &str,
    align_corners_set: bool,
    unknown: impl FnOnce() -> String,
) -> Result<()> {
    let interpolating = matches!(mode, "linear" | "bilinear" | "bicubic" | "trilinear");
    if !interpolating && !matches!(mode, "nearest" | "area" | "nearest-exact") {
        return Err(invalid(op, unknown()));
    }
    if align_corners_set && !interpolating {
        return Err(invalid(
            op,
            "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear",
        ));
    }
    Ok(())
}

/// One value per spatial dimension from a list of one value or of `n`.
fn per_dim<T: Copy>(v: &[T], n: usize) -> Option<Vec<T>> {
    match v.len() {
        1 => Some(vec![v[0]; n]),
        k if k == n => Some(v.to_vec()),
        _ => None,
    }
}

/// The input positions and weights that make each output position along one dimension: one
/// entry per tap, each with an index and a weight per output position (weight None: 1).
type Taps = Vec<(Vec<i64>, Option<Vec<f64>>)>;

/// The ratio input/output PyTorch's kernels use: `1 / scale_factor` when the factor was given,
/// otherwise `in / out`.
fn source_scale(n_in: i64, n_out: i64, align_corners: bool, scale: Option<f64>) -> f64 {
    if align_corners {
        if n_out > 1 {
            (n_in - 1) as f64 / (n_out - 1) as f64
        } else {
            0.0
        }
    } else {
        match scale {
            Some(s) if s > 0.0 => 1.0 / s,
            _ => n_in as f64 / n_out as f64,
        }
    }
}

/// The (real) source position of output `o` (`area_pixel_compute_source_index`); the linear
/// modes clamp it at 0, the cubic one does not.
fn source_index(ratio: f64, o: i64, align_corners: bool, cubic: bool) -> f64 {
    if align_corners {
        ratio * o as f64
    } else {
        let src = ratio * (o as f64 + 0.5) - 0.5;
        if !cubic && src < 0.0 {
            0.0
        } else {
            src
        }
    }
}

fn linear_taps(n_in: i64, n_out: i64, align_corners: bool, scale: Option<f64>) -> Taps {
    let ratio = source_scale(n_in, n_out, align_corners, scale);
    let (mut i0, mut i1, mut w0, mut w1) = (vec![], vec![], vec![], vec![]);
    for o in 0..n_out {
        let src = source_index(ratio, o, align_corners, false);
        let lo = (src as i64).min(n_in - 1);
        let hi = if lo < n_in - 1 { lo + 1 } else { lo };
        let l1 = (src - lo as f64).clamp(0.0, 1.0);
        i0.push(lo);
        i1.push(hi);
        w0.push(1.0 - l1);
        w1.push(l1);
    }
    vec![(i0, Some(w0)), (i1, Some(w1))]
}

/// Keys' cubic convolution weights of the four taps around a position with fraction `t`.
fn cubic_weights(t: f64) -> [f64; 4] {
    let a = CUBIC_A;
    let near = |x: f64| ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    let far = |x: f64| ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

fn cubic_taps(n_in: i64, n_out: i64, align_corners: bool, scale: Option<f64>) -> Taps {
    let ratio = source_scale(n_in, n_out, align_corners, scale);
    let mut taps: Taps = (0..4).map(|_| (Vec::new(), Some(Vec::new()))).collect();
    for o in 0..n_out {
        let src = source_index(ratio, o, align_corners, true);
        let base = src.floor();
        let w = cubic_weights(src - base);
        for (k, (idx, wk)) in taps.iter_mut().enumerate() {
            idx.push((base as i64 - 1 + k as i64).clamp(0, n_in - 1));
            if let Some(wk) = wk {
                wk.push(w[k]);
            }
        }
    }
    taps
}

fn nearest_exact_taps(n_in: i64, n_out: i64, scale: Option<f64>) -> Taps {
    // PyTorch computes this index in single precision.
    let ratio = source_scale(n_in, n_out, false, scale) as f32;
    let idx = (0..n_out).map(|o| (((o as f32 + 0.5) * ratio).floor() as i64).min(n_in - 1)).collect();
    vec![(idx, None)]
}

/// `sum_k index_select(x, dim, idx_k) * w_k`, the weights broadcast along `dim`.
fn gather_weighted(x: &Tensor, dim: i64, taps: Taps) -> Result<Tensor> {
    let mut shape = vec![1i64; x.dim()];
    let mut acc: Option<Tensor> = None;
    for (idx, w) in taps {
        let n = idx.len() as i64;
        shape[dim as usize] = n;
        let mut term = x.index_select(dim, &Tensor::from_vec(idx, &[n])?)?;
        if let Some(w) = w {
            let w = Tensor::from_vec(w, &shape)?.to(x.dtype()).call()?;
            term = term.mul(&w)?;
        }
        acc = Some(match acc {
            None => term,
            Some(a) => ops::add(&a, &term, Scalar::Int(1))?,
        });
    }
    acc.ok_or_else(|| invalid("interpolate", "no taps"))
}
