//! Pooling (`max_pool1d/2d/3d` with and without indices, `avg_pool1d/2d/3d`, adaptive average
//! and max pooling), upsampling (`upsample_nearest1d/2d/3d.vec`, `upsample_bilinear2d.vec`) and
//! `pixel_shuffle` / `pixel_unshuffle`.
//!
//! Note [Pooling windows]: every pooling runs on 3 spatial dims (1-d and 2-d inputs get leading
//! size-1 dims). Each output position's window is, per dimension, an arithmetic run of valid
//! input indices (`first`, `step`, `count`) plus the count the average divides by with
//! `count_include_pad`; the windows are computed once per dimension, and the planes (`N * C`)
//! are split over rayon threads. Values are computed in the opmath type (f32 for f16/bf16).

use num_traits::{Float, One, Zero};

use c10::{Error, Result, ScalarType};

use crate::native::opmath::OpMath;
use crate::native::stub::{self, PoolGeometry, PoolMode};
use crate::{ops, Tensor};

/// One output position's window along one dimension.
#[derive(Clone, Copy, Debug)]
struct Win {
    first: usize,
    step: usize,
    count: usize,
    /// Positions counted by `count_include_pad` (window clipped to the padded extent).
    padded_count: usize,
}

/// Windows of a strided, padded, dilated pooling along one dim.
fn strided_windows(input: i64, out: i64, k: i64, s: i64, p: i64, d: i64) -> Result<Vec<Win>> {
    // In i128: with a huge dilation, kernel or padding (accepted as long as the output is not
    // empty), `j * d`, `start + k` and `-start + d` pass int64. Every stored value is inside
    // the input (or the padded input), so it fits a usize.
    let (input, k, s, p, d) = (input as i128, k as i128, s as i128, p as i128, d as i128);
    c10::size::try_collect(
        out as usize,
        (0..out as i128).map(|o| {
            let start = o * s - p;
            let skip = if start < 0 { (-start + d - 1) / d } else { 0 };
            let mut count = 0;
            let mut j = skip;
            while j < k && start + j * d < input {
                count += 1;
                j += 1;
            }
            let padded_end = (start + k).min(input + p);
            Win {
                first: (start + skip * d).max(0) as usize,
                step: d as usize,
                count: count as usize,
                padded_count: (padded_end - start).max(0) as usize,
            }
        }),
    )
}

/// Windows of adaptive pooling along one dim: `[floor(o*in/out), ceil((o+1)*in/out))`.
fn adaptive_windows(input: i64, out: i64) -> Result<Vec<Win>> {
    let (input, out) = (input as i128, out as i128);
    c10::size::try_collect(
        out as usize,
        (0..out).map(|o| {
            let start = (o * input) / out;
            let end = ((o + 1) * input + out - 1) / out;
            let n = (end - start) as usize;
            Win { first: start as usize, step: 1, count: n, padded_count: n }
        }),
    )
}

/// The windows of every spatial dim, or none at all when the output is empty (its other dims
/// can be huge: `[0, C, 2^50]` pools to an empty tensor without 2^50 windows).
fn all_windows(o: &[i64], lead: &[i64], per_dim: impl Fn(usize) -> Result<Vec<Win>>) -> Result<[Vec<Win>; 3]> {
    let empty = o.contains(&0) || lead.contains(&0);
    let wins = (0..o.len()).map(|i| if empty { Ok(Vec::new()) } else { per_dim(i) }).collect::<Result<Vec<_>>>()?;
    Ok(pad3(wins, vec![Win { first: 0, step: 1, count: 1, padded_count: 1 }]))
}

#[derive(Clone, Copy)]
enum Reduce {
    Max,
    /// `Some(d)` divides by `d`; `None` by the window (padded or not, per `include_pad`).
    Avg {
        include_pad: bool,
        divisor: Option<i64>,
    },
}

// Workers write disjoint planes of the output and only read the input (Note [Sharing raw
// pointers with workers]).
use crate::parallel::SendPtr;

/// Pools contiguous `x` (`[planes, D, H, W]`) over the windows `wins` (per dim) into
/// `[planes, oD, oH, oW]`, with flat in-plane indices of the maxima for `Reduce::Max`.
fn pool_kernel(
    op: &str,
    x: &Tensor,
    in_sp: [usize; 3],
    wins: &[Vec<Win>; 3],
    red: Reduce,
    out_shape: &[i64],
) -> Result<(Tensor, Option<Tensor>)> {
    if crate::native::on_device(x) {
        return device_pool(op, x, in_sp, wins, red, out_shape);
    }
    let out = Tensor::empty_uninit(out_shape, x.dtype(), x.device())?;
    let idx = match red {
        Reduce::Max => Some(Tensor::empty_uninit(out_shape, ScalarType::I64, x.device())?),
        Reduce::Avg { .. } => None,
    };
    let in_plane = in_sp[0] * in_sp[1] * in_sp[2];
    let out_plane = wins[0].len() * wins[1].len() * wins[2].len();
    if out_plane == 0 || out.numel() == 0 {
        return Ok((out, idx));
    }
    let planes = out.numel() as usize / out_plane;
    let (hw, w) = (in_sp[1] * in_sp[2], in_sp[2]);
    if !x.dtype().is_floating_point() {
        return int_pool(x, in_sp, wins, red, out, idx, planes, out_plane);
    }
    match_float!(x.dtype(), T, A => {
        let xp = SendPtr(x.data_ptr() as *mut T);
        let op = SendPtr(out.data_ptr() as *mut T);
        let ip = idx.as_ref().map(|t| SendPtr(t.data_ptr() as *mut i64));
        let plane_fn = |p: usize| {
            // SAFETY: p < planes: the plane's input and output blocks are in range.
            let xs = unsafe { std::slice::from_raw_parts(xp.get().add(p * in_plane), in_plane) };
            // SAFETY: as above; planes are disjoint between workers.
            let os = unsafe { std::slice::from_raw_parts_mut(op.get().add(p * out_plane), out_plane) };
            let mut o = 0;
            for wd in &wins[0] {
                for wh in &wins[1] {
                    for ww in &wins[2] {
                        match red {
                            Reduce::Max => {
                                let mut best = A::neg_infinity();
                                let mut best_i = wd.first * hw + wh.first * w + ww.first;
                                for a in 0..wd.count {
                                    let zd = (wd.first + a * wd.step) * hw;
                                    for b in 0..wh.count {
                                        let zh = zd + (wh.first + b * wh.step) * w;
                                        for c in 0..ww.count {
                                            let i = zh + ww.first + c * ww.step;
                                            let v = xs[i].to_acc();
                                            if v > best || v.is_nan() {
                                                best = v;
                                                best_i = i;
                                            }
                                        }
                                    }
                                }
                                os[o] = T::from_acc(best);
                                if let Some(ip) = ip {
                                    // SAFETY: same position in the index tensor.
                                    unsafe { *ip.get().add(p * out_plane + o) = best_i as i64 };
                                }
                            }
                            Reduce::Avg { include_pad, divisor } => {
                                let mut sum = A::zero();
                                for a in 0..wd.count {
                                    let zd = (wd.first + a) * hw;
                                    for b in 0..wh.count {
                                        let zh = zd + (wh.first + b) * w;
                                        for c in 0..ww.count {
                                            sum += xs[zh + ww.first + c].to_acc();
                                        }
                                    }
                                }
                                // A divisor_override may be negative (PyTorch only rejects 0).
                                let div = match divisor {
                                    Some(d) => d,
                                    None if include_pad => (wd.padded_count * wh.padded_count * ww.padded_count) as i64,
                                    None => (wd.count * wh.count * ww.count) as i64,
                                };
                                os[o] = T::from_acc(sum / num_traits::cast::<i64, A>(div).unwrap_or(A::one()));
                            }
                        }
                        o += 1;
                    }
                }
            }
        };
        if planes * out_plane >= 16384 && rayon::current_num_threads() > 1 {
            crate::parallel::for_each(planes, plane_fn);
        } else {
            (0..planes).for_each(plane_fn);
        }
        Ok((out, idx))
    }, d => Err(Error::UnsupportedDtype { op: "max_pool2d".into(), dtype: d }))
}

/// [`pool_kernel`] on a device: the same windows, as a table of `(first, step, count,
/// padded_count)` rows, go with the launch of the device's pooling loop, whose threads walk
/// each output's window in this kernel's order (`kernels/pool.cu` for CUDA).
fn device_pool(
    op: &str,
    x: &Tensor,
    in_sp: [usize; 3],
    wins: &[Vec<Win>; 3],
    red: Reduce,
    out_shape: &[i64],
) -> Result<(Tensor, Option<Tensor>)> {
    let out = Tensor::empty_uninit(out_shape, x.dtype(), x.device())?;
    let idx = match red {
        Reduce::Max => Some(Tensor::empty_uninit(out_shape, ScalarType::I64, x.device())?),
        Reduce::Avg { .. } => None,
    };
    let out_plane = wins[0].len() * wins[1].len() * wins[2].len();
    if out_plane == 0 || out.numel() == 0 {
        return Ok((out, idx));
    }
    let table: Vec<[i64; 4]> =
        wins.iter().flatten().map(|w| [w.first as i64, w.step as i64, w.count as i64, w.padded_count as i64]).collect();
    let mode = match red {
        Reduce::Max => PoolMode::Max,
        Reduce::Avg { include_pad, divisor } => PoolMode::Avg { include_pad, divisor },
    };
    let geometry = PoolGeometry {
        planes: out.numel() / out_plane as i64,
        input: in_sp.map(|v| v as i64),
        out: std::array::from_fn(|d| wins[d].len() as i64),
        mode,
    };
    stub::run_pool(op, x, &out, idx.as_ref(), &table, &geometry)?;
    Ok((out, idx))
}

/// [`pool_kernel`] for integer inputs, exactly: the values in i64 (every integer dtype fits),
/// maxima by comparison, averages as the i64 sum divided with truncation (PyTorch's integer
/// average pooling), cast back to the dtype.
#[allow(clippy::too_many_arguments)]
fn int_pool(
    x: &Tensor,
    in_sp: [usize; 3],
    wins: &[Vec<Win>; 3],
    red: Reduce,
    out: Tensor,
    idx: Option<Tensor>,
    planes: usize,
    out_plane: usize,
) -> Result<(Tensor, Option<Tensor>)> {
    let xs = x.to_vec::<i64>()?;
    let in_plane = in_sp[0] * in_sp[1] * in_sp[2];
    let (hw, w) = (in_sp[1] * in_sp[2], in_sp[2]);
    let mut vals = Vec::with_capacity(planes * out_plane);
    let mut picks = Vec::with_capacity(if idx.is_some() { planes * out_plane } else { 0 });
    for p in 0..planes {
        let xs = &xs[p * in_plane..(p + 1) * in_plane];
        for wd in &wins[0] {
            for wh in &wins[1] {
                for ww in &wins[2] {
                    match red {
                        Reduce::Max => {
                            let mut best_i = wd.first * hw + wh.first * w + ww.first;
                            let mut best = i64::MIN;
                            for a in 0..wd.count {
                                for b in 0..wh.count {
                                    for c in 0..ww.count {
                                        let i = (wd.first + a * wd.step) * hw
                                            + (wh.first + b * wh.step) * w
                                            + ww.first
                                            + c * ww.step;
                                        if xs[i] > best || (a, b, c) == (0, 0, 0) {
                                            best = xs[i];
                                            best_i = i;
                                        }
                                    }
                                }
                            }
                            vals.push(best);
                            if idx.is_some() {
                                picks.push(best_i as i64);
                            }
                        }
                        Reduce::Avg { include_pad, divisor } => {
                            let mut sum = 0i64;
                            for a in 0..wd.count {
                                for b in 0..wh.count {
                                    for c in 0..ww.count {
                                        sum = sum
                                            .wrapping_add(xs[(wd.first + a) * hw + (wh.first + b) * w + ww.first + c]);
                                    }
                                }
                            }
                            let div = match divisor {
                                Some(d) => d,
                                None if include_pad => (wd.padded_count * wh.padded_count * ww.padded_count) as i64,
                                None => (wd.count * wh.count * ww.count) as i64,
                            };
                            vals.push(if div == 0 { 0 } else { sum.wrapping_div(div) });
                        }
                    }
                }
            }
        }
    }
    let shape = out.sizes().to_vec();
    let values = crate::native::copy::to_dtype(&Tensor::from_vec(vals, &shape)?, x.dtype())?;
    let idx = match idx {
        Some(_) => Some(Tensor::from_vec(picks, &shape)?),
        None => None,
    };
    Ok((values, idx))
}

/// Checks the rank (`nsp + 1` unbatched or `nsp + 2` batched) and returns the contiguous input
/// with its spatial sizes padded to 3, plus the leading (batch, channel) shape.
/// A meta output of pooling (Note [Meta loops]): the kernels below check and size their outputs
/// the same way on both devices, and stop here on the meta device.
fn meta_like(shape: &[i64], dtype: ScalarType) -> Result<Tensor> {
    Tensor::empty_uninit(shape, dtype, c10::Device::META)
}

fn pool_input(op: &str, x: &Tensor, nsp: usize) -> Result<(Tensor, [usize; 3], Vec<i64>)> {
    check_pool_input(op, x, nsp)?;
    let d = x.dim();
    let c = ops::contiguous(x, c10::MemoryFormat::Contiguous)?;
    let sp = &x.sizes()[d - nsp..];
    let mut in_sp = [1usize; 3];
    for (i, &s) in sp.iter().enumerate() {
        in_sp[3 - nsp + i] = s as usize;
    }
    Ok((c, in_sp, x.sizes()[..d - nsp].to_vec()))
}

/// The rank and dtype checks of [`pool_input`].
fn check_pool_input(op: &str, x: &Tensor, nsp: usize) -> Result<()> {
    let d = x.dim();
    if !(d == nsp + 1 || d == nsp + 2) || x.sizes()[d - nsp..].contains(&0) {
        return Err(Error::shape(
            op,
            format!(
                "Expected {}D or {}D (batch mode) tensor with optional 0 dim batch size for input, but got:{:?}",
                nsp + 1,
                nsp + 2,
                x.sizes()
            ),
        ));
    }
    if !x.dtype().is_floating_point() && !allows_int(op, x.dtype()) {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: x.dtype() });
    }
    Ok(())
}

/// The integer dtypes PyTorch's CPU kernels pool: every one for max pooling, int64 for average
/// pooling (which divides with truncation, as C++ integer division does).
fn allows_int(op: &str, dtype: ScalarType) -> bool {
    match dtype {
        ScalarType::Bool => false,
        d if d.is_floating_point() => false,
        d => op.starts_with("max_pool") || (op.starts_with("avg_pool") && d == ScalarType::I64),
    }
}

/// A per-dimension parameter (`int[n]`): one value repeats; `[]` takes `default`.
fn param(op: &str, name: &str, v: &[i64], n: usize, default: Option<&[i64]>) -> Result<Vec<i64>> {
    match (v.len(), default) {
        (0, Some(d)) => Ok(d.to_vec()),
        (1, _) => Ok(vec![v[0]; n]),
        (l, _) if l == n => Ok(v.to_vec()),
        _ => Err(Error::invalid(op, format!("{op}: {name} must either be a single int, or a tuple of {n} ints"))),
    }
}

/// PyTorch's `pooling_output_shape`.
/// In i128: kernel sizes, dilations and paddings are any positive int64 values, and their
/// products must not wrap. The result is at most the input size plus 2 (padding is at most half
/// the effective kernel), so it saturates only on inputs that are already rejected.
fn pooling_out(input: i64, k: i64, p: i64, s: i64, d: i64, ceil: bool) -> i64 {
    let (input, k, p, s, d) = (input as i128, k as i128, p as i128, s as i128, d as i128);
    let num = input + 2 * p - d * (k - 1) - 1 + if ceil { s - 1 } else { 0 };
    let mut o = num.div_euclid(s) + 1;
    if ceil && (o - 1) * s >= input + p {
        o -= 1;
    }
    o.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

struct PoolArgs {
    k: Vec<i64>,
    s: Vec<i64>,
    p: Vec<i64>,
    d: Vec<i64>,
}

#[allow(clippy::too_many_arguments)]
fn pool_args(
    op: &str,
    nsp: usize,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
) -> Result<PoolArgs> {
    let k = param(op, "kernel_size", kernel_size, nsp, None)?;
    let s = param(op, "stride", stride, nsp, Some(&k))?;
    let p = param(op, "padding", padding, nsp, None)?;
    let d = param(op, "dilation", dilation, nsp, None)?;
    if k.iter().any(|&v| v <= 0) {
        return Err(Error::invalid(op, format!("kernel size should be greater than zero, but got kernel size {k:?}")));
    }
    if s.iter().any(|&v| v <= 0) {
        return Err(Error::invalid(op, format!("stride should be greater than zero, but got stride {s:?}")));
    }
    if d.iter().any(|&v| v <= 0) {
        return Err(Error::invalid(op, format!("dilation should be greater than zero, but got dilation {d:?}")));
    }
    for i in 0..nsp {
        // The effective kernel (k - 1) * d + 1 can exceed int64: compare in i128.
        if p[i] < 0 || p[i] as i128 > ((k[i] as i128 - 1) * d[i] as i128 + 1) / 2 {
            return Err(Error::invalid(
                op,
                format!(
                    "pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}",
                    p[i], k[i], d[i]
                ),
            ));
        }
    }
    Ok(PoolArgs { k, s, p, d })
}

fn out_sizes(op: &str, in_sp: &[i64], a: &PoolArgs, ceil: bool) -> Result<Vec<i64>> {
    let o: Vec<i64> = (0..in_sp.len()).map(|i| pooling_out(in_sp[i], a.k[i], a.p[i], a.s[i], a.d[i], ceil)).collect();
    if o.iter().any(|&v| v <= 0) {
        return Err(Error::shape(
            op,
            format!("Given input size: {in_sp:?}. Calculated output size: {o:?}. Output size is too small"),
        ));
    }
    Ok(o)
}

/// Pads per-dim values to 3 spatial dims, the missing leading ones `fill`.
fn pad3<T: Clone>(v: Vec<T>, fill: T) -> [T; 3] {
    let off = 3 - v.len();
    std::array::from_fn(|i| if i < off { fill.clone() } else { v[i - off].clone() })
}

#[allow(clippy::too_many_arguments)]
fn max_pool_nd(
    op: &str,
    nsp: usize,
    x: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    let a = pool_args(op, nsp, kernel_size, stride, padding, dilation)?;
    let (c, in_sp, lead) = pool_input(op, x, nsp)?;
    let sp = &x.sizes()[x.dim() - nsp..];
    let o = out_sizes(op, sp, &a, ceil_mode)?;
    let wins = all_windows(&o, &lead, |i| strided_windows(sp[i], o[i], a.k[i], a.s[i], a.p[i], a.d[i]))?;
    let mut shape = lead;
    shape.extend(&o);
    if x.device().is_meta() {
        return Ok((meta_like(&shape, x.dtype())?, meta_like(&shape, ScalarType::I64)?));
    }
    let full_windows = wins.iter().flatten().all(|w| w.step == 1 && w.padded_count == w.count)
        && wins[2].iter().all(|w| w.count == wins[2][0].count);
    if c.dtype() == ScalarType::F32
        && c.device().is_cpu()
        && full_windows
        && wins[0].len() == 1
        && wins[0][0].count == 1
    {
        return max_pool2d_f32(&c, in_sp, &wins, &shape);
    }
    let (out, idx) = pool_kernel(op, &c, in_sp, &wins, Reduce::Max, &shape)?;
    Ok((out, idx.unwrap_or_else(|| Tensor::from_slice::<i64>(&[]))))
}

/// Note [Max pooling fast path]: the common 2-d case (f32, no padding, no dilation, every
/// window inside the input, equally wide) without the general window machinery: each output
/// reads `kh` runs of `kw` adjacent inputs. Same results (first maximum wins, NaN propagates) and the same
/// flat in-plane indices as [`pool_kernel`].
fn max_pool2d_f32(x: &Tensor, in_sp: [usize; 3], wins: &[Vec<Win>; 3], shape: &[i64]) -> Result<(Tensor, Tensor)> {
    let out = Tensor::empty_uninit(shape, ScalarType::F32, x.device())?;
    let idx = Tensor::empty_uninit(shape, ScalarType::I64, x.device())?;
    let (ih, iw) = (in_sp[1], in_sp[2]);
    let (hw, ww) = (&wins[1], &wins[2]);
    let (oh, ow) = (hw.len(), ww.len());
    let (in_plane, out_plane) = (ih * iw, oh * ow);
    if out_plane == 0 || out.numel() == 0 {
        return Ok((out, idx));
    }
    let planes = out.numel() as usize / out_plane;
    // (first, count) of each window along the rows and the columns.
    let spans = |ws: &[Win]| -> Vec<(usize, usize)> { ws.iter().map(|w| (w.first, w.count)).collect() };
    let (rows, cols) = (spans(hw), spans(ww));
    // 2 x 2 windows that are adjacent pairs along the rows (stride 2): the vectorised kernel.
    let pairs = rows.iter().all(|r| r.1 == 2) && cols.iter().enumerate().all(|(c, w)| *w == (cols[0].0 + 2 * c, 2));
    let (xp, op, ip) =
        (SendPtr(x.data_ptr() as *mut f32), SendPtr(out.data_ptr() as *mut f32), SendPtr(idx.data_ptr() as *mut i64));
    let plane_fn = |p: usize| {
        // SAFETY: p < planes, so the plane's input block is inside the contiguous input.
        let xs = unsafe { std::slice::from_raw_parts(xp.get().add(p * in_plane), in_plane) };
        // SAFETY: as above for the output; planes are disjoint between workers.
        let os = unsafe { std::slice::from_raw_parts_mut(op.get().add(p * out_plane), out_plane) };
        // SAFETY: the index tensor has the output's shape.
        let is = unsafe { std::slice::from_raw_parts_mut(ip.get().add(p * out_plane), out_plane) };
        if pairs {
            crate::native::cpu::vec::max_pool_2x2_f32(xs, iw, &rows, cols[0].0, os, is);
        } else {
            crate::native::cpu::vec::max_pool_plane_f32(xs, iw, &rows, &cols, os, is);
        }
    };
    if planes * out_plane >= 16384 && rayon::current_num_threads() > 1 {
        crate::parallel::for_each(planes, plane_fn);
    } else {
        (0..planes).for_each(plane_fn);
    }
    Ok((out, idx))
}

/// `max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size,
/// int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor`:
/// scatters each output gradient to the input position its maximum came from (the indices are
/// flat within each `H * W` plane), summing where windows overlap.
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d_with_indices_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    _kernel_size: &[i64],
    _stride: &[i64],
    _padding: &[i64],
    _dilation: &[i64],
    _ceil_mode: bool,
    indices: &Tensor,
) -> Result<Tensor> {
    max_pool_backward_nd("max_pool2d_with_indices_backward", 2, grad_output, self_, indices)
}

/// Note [Max pooling backward in one pass]: the input gradient is allocated uninitialised and
/// each worker zeroes a plane just before scattering into it, checking each index on the way.
/// A zero-filled allocation, a separate pass over the indices and then the scatter read and
/// wrote the whole gradient three times, two of them on one thread: 1.6 ms for the CNN step's
/// first pooling ([64, 32, 26, 26]) at 1 or 2 threads, against PyTorch's 0.3 ms. An index out
/// of range is still an error value, not a partly written result: the tensor is dropped.
fn max_pool_backward_nd(
    op: &str,
    nsp: usize,
    grad_output: &Tensor,
    self_: &Tensor,
    indices: &Tensor,
) -> Result<Tensor> {
    if grad_output.sizes() != indices.sizes() || indices.dtype() != ScalarType::I64 {
        return Err(Error::shape(
            op,
            format!(
                "grad_output {:?} and indices {:?} ({}) must have the same shape, indices int64",
                grad_output.sizes(),
                indices.sizes(),
                indices.dtype().name()
            ),
        ));
    }
    // The leading (batch and channel) dims must agree too: planes of grad_output are scattered
    // into the planes of self_ with the same index.
    let lead = grad_output.dim().saturating_sub(nsp);
    if grad_output.dim() != self_.dim()
        || grad_output.dim() < nsp
        || grad_output.sizes()[..lead] != self_.sizes()[..lead]
    {
        return Err(Error::shape(
            op,
            format!("grad_output {:?} does not match the input {:?}", grad_output.sizes(), self_.sizes()),
        ));
    }
    let d = self_.dim();
    let in_plane: usize = c10::size::sub_numel(&self_.sizes()[d - nsp..]);
    let out_plane: usize = c10::size::sub_numel(&grad_output.sizes()[d - nsp..]);
    if out_plane == 0 || in_plane == 0 || grad_output.numel() == 0 {
        return ops::zeros(self_.sizes(), Some(grad_output.dtype()), None, Some(self_.device()), None);
    }
    let planes = grad_output.numel() as usize / out_plane;
    if crate::native::on_device(grad_output) {
        // Each plane's gradients added at its indices by the device's scatter_add, which
        // refuses an index outside the plane and sums repeated ones in a fixed order.
        let flat = |t: &Tensor, n: usize| ops::reshape(t, &[planes as i64, n as i64]);
        let zeros =
            ops::zeros(&[planes as i64, in_plane as i64], Some(grad_output.dtype()), None, Some(self_.device()), None)?;
        let summed = ops::scatter_add(&zeros, 1, &flat(indices, out_plane)?, &flat(grad_output, out_plane)?)?;
        return ops::reshape(&summed, self_.sizes());
    }
    let go = ops::contiguous(grad_output, c10::MemoryFormat::Contiguous)?;
    let ix = ops::contiguous(indices, c10::MemoryFormat::Contiguous)?;
    let ip = SendPtr(ix.typed_data_ptr::<i64>()?);
    // Each worker zeroes its planes of the input gradient and scatters into them while they are
    // in cache, checking every index as it goes (Note [Max pooling backward in one pass]).
    let gi = Tensor::empty_uninit(self_.sizes(), grad_output.dtype(), self_.device())?;
    match_float!(go.dtype(), T, A => {
        let gp = SendPtr(go.data_ptr() as *mut T);
        let xp = SendPtr(gi.data_ptr() as *mut T);
        let plane_fn = |p: usize| -> Result<()> {
            // SAFETY: p < planes; the output-gradient plane is inside the contiguous tensor.
            let g = unsafe { std::slice::from_raw_parts(gp.get().add(p * out_plane), out_plane) };
            // SAFETY: `ix` is a contiguous int64 tensor of grad_output's shape, only read.
            let ixs = unsafe { std::slice::from_raw_parts(ip.get().add(p * out_plane), out_plane) };
            // SAFETY: as above for the input gradient; planes are disjoint between workers.
            let dst = unsafe { std::slice::from_raw_parts_mut(xp.get().add(p * in_plane), in_plane) };
            dst.fill(T::from_acc(0.0));
            for (&v, &i) in g.iter().zip(ixs) {
                let Some(d) = usize::try_from(i).ok().and_then(|i| dst.get_mut(i)) else {
                    return Err(Error::invalid(
                        op,
                        format!("index {i} is out of bounds for a pooling plane of {in_plane} elements"),
                    ));
                };
                *d = T::from_acc(d.to_acc() + v.to_acc());
            }
            Ok(())
        };
        if planes * out_plane >= 16384 && rayon::current_num_threads() > 1 {
            crate::parallel::try_for_each_init(planes, || (), |_, p| plane_fn(p))?;
        } else {
            (0..planes).try_for_each(plane_fn)?;
        }
        Ok(gi)
    }, d => Err(Error::UnsupportedDtype { op: op.into(), dtype: d }))
}

/// `max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, int[1] dilation=1, bool ceil_mode=False) -> Tensor`
pub fn max_pool1d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(max_pool_nd("max_pool1d", 1, self_, kernel_size, stride, padding, dilation, ceil_mode)?.0)
}
/// `max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor`
pub fn max_pool2d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(max_pool_nd("max_pool2d", 2, self_, kernel_size, stride, padding, dilation, ceil_mode)?.0)
}
/// `max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> Tensor`
pub fn max_pool3d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(max_pool_nd("max_pool3d", 3, self_, kernel_size, stride, padding, dilation, ceil_mode)?.0)
}
/// `max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, int[1] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)`
pub fn max_pool1d_with_indices(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    max_pool_nd("max_pool1d_with_indices", 1, self_, kernel_size, stride, padding, dilation, ceil_mode)
}
/// `max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)`
pub fn max_pool2d_with_indices(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    max_pool_nd("max_pool2d_with_indices", 2, self_, kernel_size, stride, padding, dilation, ceil_mode)
}
/// `max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)`
pub fn max_pool3d_with_indices(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    max_pool_nd("max_pool3d_with_indices", 3, self_, kernel_size, stride, padding, dilation, ceil_mode)
}

#[allow(clippy::too_many_arguments)]
fn avg_pool_nd(
    op: &str,
    nsp: usize,
    x: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    if divisor_override == Some(0) {
        return Err(Error::invalid(op, "divisor must be not zero"));
    }
    let a = pool_args(op, nsp, kernel_size, stride, padding, &[1])?;
    let (c, in_sp, lead) = pool_input(op, x, nsp)?;
    let sp = &x.sizes()[x.dim() - nsp..];
    let o = out_sizes(op, sp, &a, ceil_mode)?;
    let wins = all_windows(&o, &lead, |i| strided_windows(sp[i], o[i], a.k[i], a.s[i], a.p[i], 1))?;
    let mut shape = lead;
    shape.extend(&o);
    if x.device().is_meta() {
        return meta_like(&shape, x.dtype());
    }
    Ok(pool_kernel(
        op,
        &c,
        in_sp,
        &wins,
        Reduce::Avg { include_pad: count_include_pad, divisor: divisor_override },
        &shape,
    )?
    .0)
}

/// The argument checks of `avg_pool{nsp}d` (2 or 3 spatial dimensions: divisor, kernel size,
/// stride, padding, rank, dtype, output size) without the pooling, returning the output's
/// spatial sizes: autograd's decomposition runs them first, so a bad call fails with the
/// kernel's message instead of indexing sizes the input does not have.
pub fn check_avg_pool(
    nsp: usize,
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    divisor_override: Option<i64>,
) -> Result<Vec<i64>> {
    let op = format!("avg_pool{nsp}d");
    if divisor_override == Some(0) {
        return Err(Error::invalid(&op, "divisor must be not zero"));
    }
    let a = pool_args(&op, nsp, kernel_size, stride, padding, &[1])?;
    check_pool_input(&op, self_, nsp)?;
    out_sizes(&op, &self_.sizes()[self_.dim() - nsp..], &a, ceil_mode)
}

/// The source rows of `upsample_bilinear2d` along height and width, as its kernel computes
/// them: per output index, the two input indices and their weights. Checks the arguments as the
/// kernel does; autograd's decomposition builds its interpolation matrices from these.
#[allow(clippy::type_complexity)]
pub fn bilinear_plan(
    input: &Tensor,
    output_size: Option<&[i64]>,
    align_corners: bool,
    scale_factors: Option<&[f64]>,
) -> Result<[Vec<(usize, usize, f64, f64)>; 2]> {
    let (o, scales) = upsample_sizes("upsample_bilinear2d", input, 2, output_size, scale_factors)?;
    let (ih, iw) = (input.sizes()[2], input.sizes()[3]);
    Ok([linear_weights(ih, o[0], align_corners, scales[0])?, linear_weights(iw, o[1], align_corners, scales[1])?])
}

/// `avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True) -> Tensor`
///
/// A composite, as in PyTorch: `avg_pool2d` over the input with a unit height (so autograd
/// differentiates it through `avg_pool2d`).
pub fn avg_pool1d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
) -> Result<Tensor> {
    const OP: &str = "avg_pool1d";
    if self_.dim() != 2 && self_.dim() != 3 {
        return Err(Error::shape(
            OP,
            format!("Expected 2D or 3D (batch mode) tensor for avg_pool1d, but got input of size {:?}", self_.sizes()),
        ));
    }
    let one = |v: &[i64], what: &str| -> Result<i64> {
        match v {
            [x] => Ok(*x),
            _ => Err(Error::invalid(OP, format!("{what} must be a single int, got {v:?}"))),
        }
    };
    let k = one(kernel_size, "kernel_size")?;
    let s = if stride.is_empty() { k } else { one(stride, "stride")? };
    let p = one(padding, "padding")?;
    let x = ops::unsqueeze(self_, -2)?;
    let out = ops::avg_pool2d(&x, &[1, k], &[1, s], &[0, p], ceil_mode, count_include_pad, None)?;
    ops::squeeze_dim(&out, -2)
}
/// `avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor`
pub fn avg_pool2d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    avg_pool_nd("avg_pool2d", 2, self_, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
}
/// `avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor`
pub fn avg_pool3d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    avg_pool_nd("avg_pool3d", 3, self_, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
}

fn adaptive_nd(op: &str, nsp: usize, x: &Tensor, output_size: &[i64], red: Reduce) -> Result<(Tensor, Option<Tensor>)> {
    let o = param(op, "output_size", output_size, nsp, None)?;
    if o.iter().any(|&v| v < 0) {
        return Err(Error::invalid(
            op,
            format!("{op}: elements of output_size must be greater than or equal to 0 but received {o:?}"),
        ));
    }
    let (c, in_sp, lead) = pool_input(op, x, nsp)?;
    let sp = &x.sizes()[x.dim() - nsp..];
    let wins = all_windows(&o, &lead, |i| adaptive_windows(sp[i], o[i]))?;
    let mut shape = lead;
    shape.extend(&o);
    if x.device().is_meta() {
        let indices = matches!(red, Reduce::Max).then(|| meta_like(&shape, ScalarType::I64)).transpose()?;
        return Ok((meta_like(&shape, x.dtype())?, indices));
    }
    pool_kernel(op, &c, in_sp, &wins, red, &shape)
}

const AVG: Reduce = Reduce::Avg { include_pad: false, divisor: None };

/// The argument checks of `adaptive_avg_pool{nsp}d` (`output_size` of one or `nsp`
/// non-negative sizes, an input of rank `nsp + 1` or `nsp + 2` with non-empty non-batch dims)
/// without the pooling; returns the output size with every entry, for autograd's
/// decomposition (see [`check_avg_pool`]).
pub fn check_adaptive_avg_pool(nsp: usize, self_: &Tensor, output_size: &[i64]) -> Result<Vec<i64>> {
    let op = &format!("adaptive_avg_pool{nsp}d");
    let o = param(op, "output_size", output_size, nsp, None)?;
    if o.iter().any(|&v| v < 0) {
        return Err(Error::invalid(
            op,
            format!("{op}: elements of output_size must be greater than or equal to 0 but received {o:?}"),
        ));
    }
    check_pool_input(op, self_, nsp)?;
    Ok(o.to_vec())
}

/// `adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor`
///
/// A composite, as in PyTorch: `adaptive_avg_pool2d` over the input with a unit height.
pub fn adaptive_avg_pool1d(self_: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    const OP: &str = "adaptive_avg_pool1d";
    if self_.dim() != 2 && self_.dim() != 3 {
        return Err(Error::shape(
            OP,
            format!("adaptive_avg_pool1d(): Expected 2D or 3D tensor, but got {:?}", self_.sizes()),
        ));
    }
    let [o] = output_size else {
        return Err(Error::invalid(OP, format!("adaptive_avg_pool1d: output_size must be 1, got {output_size:?}")));
    };
    let out = ops::adaptive_avg_pool2d(&ops::unsqueeze(self_, -2)?, &[1, *o])?;
    ops::squeeze_dim(&out, -2)
}
/// `adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor`
pub fn adaptive_avg_pool2d(self_: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    Ok(adaptive_nd("adaptive_avg_pool2d", 2, self_, output_size, AVG)?.0)
}
/// `adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor`
pub fn adaptive_avg_pool3d(self_: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    Ok(adaptive_nd("adaptive_avg_pool3d", 3, self_, output_size, AVG)?.0)
}

fn with_indices(r: (Tensor, Option<Tensor>)) -> (Tensor, Tensor) {
    let (v, i) = r;
    (v, i.unwrap_or_else(|| Tensor::from_slice::<i64>(&[])))
}

/// `adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)`
pub fn adaptive_max_pool1d(self_: &Tensor, output_size: &[i64]) -> Result<(Tensor, Tensor)> {
    Ok(with_indices(adaptive_nd("adaptive_max_pool1d", 1, self_, output_size, Reduce::Max)?))
}
/// `adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)`
pub fn adaptive_max_pool2d(self_: &Tensor, output_size: &[i64]) -> Result<(Tensor, Tensor)> {
    Ok(with_indices(adaptive_nd("adaptive_max_pool2d", 2, self_, output_size, Reduce::Max)?))
}
/// `adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)`
pub fn adaptive_max_pool3d(self_: &Tensor, output_size: &[i64]) -> Result<(Tensor, Tensor)> {
    Ok(with_indices(adaptive_nd("adaptive_max_pool3d", 3, self_, output_size, Reduce::Max)?))
}

// ---- upsampling -------------------------------------------------------------------------------

/// The output sizes and the per-dim scales passed to the kernels (`None` when sizes were given).
fn upsample_sizes(
    op: &str,
    x: &Tensor,
    nsp: usize,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<(Vec<i64>, Vec<Option<f64>>)> {
    if x.dim() != nsp + 2 {
        return Err(Error::shape(
            op,
            format!("Expected a {}D input tensor for {op}, but got input of size {:?}", nsp + 2, x.sizes()),
        ));
    }
    let sp = &x.sizes()[2..];
    let r = match (output_size, scale_factors) {
        (Some(o), None) => {
            if o.len() != nsp {
                return Err(Error::invalid(
                    op,
                    format!("It is expected output_size equals to {nsp}, but got size {}", o.len()),
                ));
            }
            (o.to_vec(), vec![None; nsp])
        }
        (None, Some(s)) => {
            if s.len() != nsp {
                return Err(Error::invalid(
                    op,
                    format!("It is expected scale_factors equals to {nsp}, but got size {}", s.len()),
                ));
            }
            ((0..nsp).map(|i| (sp[i] as f64 * s[i]).floor() as i64).collect(), s.iter().map(|&v| Some(v)).collect())
        }
        _ => return Err(Error::invalid(op, "Must specify exactly one of output_size and scale_factors")),
    };
    if r.0.iter().any(|&v| v <= 0) || sp.iter().any(|&v| v <= 0) {
        return Err(Error::invalid(
            op,
            format!("Input and output sizes should be greater than 0, but got input ({sp:?}) and output ({:?})", r.0),
        ));
    }
    Ok(r)
}

/// `in/out`, or `1/scale` when a positive scale factor was given (`compute_scales_value`).
fn scale_value(scale: Option<f64>, input: i64, out: i64) -> f64 {
    match scale {
        Some(s) if s > 0.0 => 1.0 / s,
        _ => input as f64 / out as f64,
    }
}

fn nearest_indices(input: i64, out: i64, scale: Option<f64>) -> Result<Vec<usize>> {
    let sc = scale_value(scale, input, out) as f32;
    c10::size::try_collect(
        out.max(0) as usize,
        (0..out).map(|o| {
            if out == input {
                o as usize
            } else if out == 2 * input {
                (o >> 1) as usize
            } else {
                ((o as f32 * sc).floor() as i64).min(input - 1) as usize
            }
        }),
    )
}

/// The source index of every output position of `upsample_nearest{nsp}d`, per spatial
/// dimension, as the kernel computes them (after its checks): autograd's decomposition gathers
/// with these.
pub fn nearest_plan(
    nsp: usize,
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Vec<Vec<usize>>> {
    let op = format!("upsample_nearest{nsp}d");
    let (o, scales) = upsample_sizes(&op, input, nsp, output_size, scale_factors)?;
    let sp = &input.sizes()[2..];
    (0..nsp).map(|i| nearest_indices(sp[i], o[i], scales[i])).collect()
}

/// `upsample_nearest{nsp}d` as one `index_select` per spatial dimension with the kernel's
/// source indices ([`nearest_plan`]): autograd's decomposition, which differentiates it through
/// `index_select`.
pub fn upsample_nearest_by_index_select(
    nsp: usize,
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    let plan = nearest_plan(nsp, input, output_size, scale_factors)?;
    let mut x = input.clone();
    for (k, idx) in plan.into_iter().enumerate() {
        let n = idx.len() as i64;
        let idx: Vec<i64> = idx.into_iter().map(|i| i as i64).collect();
        x = ops::index_select(&x, (2 + k) as i64, &Tensor::from_vec(idx, &[n])?.to_device(x.device())?)?;
    }
    Ok(x)
}

fn upsample_nearest_nd(
    op: &str,
    nsp: usize,
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    if crate::native::on_device(input) {
        // One gather through per-dim maps (Note [Device gathers]): the batch and channel dims
        // read themselves, each spatial dim its source indices (in range by construction).
        let plan = nearest_plan(nsp, input, output_size, scale_factors)?;
        let mut maps: Vec<Vec<Option<i64>>> = input.sizes()[..2].iter().map(|&n| (0..n).map(Some).collect()).collect();
        maps.extend(plan.into_iter().map(|idx| idx.into_iter().map(|i| Some(i as i64)).collect()));
        return crate::native::shape_ops::remap(input, &maps, c10::Scalar::Int(0));
    }
    let (o, scales) = upsample_sizes(op, input, nsp, output_size, scale_factors)?;
    let sp = &input.sizes()[2..];
    // A gather along each dim with the index lists, via a strided copy per output row.
    let idx: Vec<Vec<usize>> = (0..nsp).map(|i| nearest_indices(sp[i], o[i], scales[i])).collect::<Result<_>>()?;
    let x = ops::contiguous(input, c10::MemoryFormat::Contiguous)?;
    let mut shape = input.sizes()[..2].to_vec();
    shape.extend(&o);
    let out = Tensor::empty_uninit(&shape, x.dtype(), x.device())?;
    let planes = (shape[0] * shape[1]) as usize;
    let one = vec![0usize];
    let i3 = pad3(idx, one);
    let in3 = pad3(sp.iter().map(|&v| v as usize).collect(), 1usize);
    let in_plane = in3.iter().fold(1usize, |n, &s| n.saturating_mul(s));
    let out_plane = i3[0].len() * i3[1].len() * i3[2].len();
    c10::dispatch_all_types!(x.dtype(), T => {
        let xs: &[T] = if x.numel() == 0 { &[] } else {
            // SAFETY: x is contiguous with numel elements of T.
            unsafe { std::slice::from_raw_parts(x.data_ptr() as *const T, x.numel() as usize) }
        };
        let os: &mut [T] = if out.numel() == 0 { &mut [] } else {
            // SAFETY: out is a fresh contiguous tensor of T.
            unsafe { std::slice::from_raw_parts_mut(out.data_ptr() as *mut T, out.numel() as usize) }
        };
        for p in 0..planes {
            let xp = &xs[p * in_plane..(p + 1) * in_plane];
            let op = &mut os[p * out_plane..(p + 1) * out_plane];
            let mut k = 0;
            for &d in &i3[0] {
                for &h in &i3[1] {
                    let row = (d * in3[1] + h) * in3[2];
                    for &w in &i3[2] {
                        op[k] = xp[row + w];
                        k += 1;
                    }
                }
            }
        }
    });
    Ok(out)
}

/// `upsample_nearest1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor`
pub fn upsample_nearest1d(
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    upsample_nearest_nd("upsample_nearest1d", 1, input, output_size, scale_factors)
}
/// `upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor`
pub fn upsample_nearest2d(
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    upsample_nearest_nd("upsample_nearest2d", 2, input, output_size, scale_factors)
}
/// `upsample_nearest3d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor`
pub fn upsample_nearest3d(
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    upsample_nearest_nd("upsample_nearest3d", 3, input, output_size, scale_factors)
}

/// Source index pairs and weights of linear interpolation along one dim
/// (`area_pixel_compute_source_index`).
fn linear_weights(
    input: i64,
    out: i64,
    align_corners: bool,
    scale: Option<f64>,
) -> Result<Vec<(usize, usize, f64, f64)>> {
    let sc = if align_corners {
        if out > 1 {
            (input - 1) as f64 / (out - 1) as f64
        } else {
            0.0
        }
    } else {
        scale_value(scale, input, out)
    };
    // Fallibly: an output size too large to hold is an error, not an abort.
    c10::size::try_collect(
        out.max(0) as usize,
        (0..out).map(|o| {
            let src = if align_corners { sc * o as f64 } else { (sc * (o as f64 + 0.5) - 0.5).max(0.0) };
            let i0 = (src as i64).min(input - 1);
            let i1 = if i0 < input - 1 { i0 + 1 } else { i0 };
            let l1 = (src - i0 as f64).clamp(0.0, 1.0);
            (i0 as usize, i1 as usize, 1.0 - l1, l1)
        }),
    )
}

/// The `[out, in]` interpolation matrix of one dimension of `upsample_bilinear2d`, from the
/// kernel's source indices and weights, in `like`'s dtype and on its device.
fn interpolation_matrix(plan: &[(usize, usize, f64, f64)], input: i64, like: &Tensor) -> Result<Tensor> {
    let out = plan.len();
    let mut m = c10::size::try_vec_filled(0.0f64, out * input as usize)?;
    for (o, &(i0, i1, l0, l1)) in plan.iter().enumerate() {
        m[o * input as usize + i0] += l0;
        m[o * input as usize + i1] += l1;
    }
    Tensor::from_vec(m, &[out as i64, input])?.to(like.dtype()).call()?.to_device(like.device())
}

/// `upsample_bilinear2d.vec` as `A_h @ x @ A_w^T`, with the kernel's interpolation weights
/// ([`bilinear_plan`]): autograd's decomposition. (Not the device kernel: a NaN or an infinity
/// times a zero weight would spread along its row and column, which the kernel's two taps do
/// not.)
pub fn upsample_bilinear2d_by_matmul(
    input: &Tensor,
    output_size: Option<&[i64]>,
    align_corners: bool,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    let [hp, wp] = bilinear_plan(input, output_size, align_corners, scale_factors)?;
    if !input.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: "upsample_bilinear2d".into(), dtype: input.dtype() });
    }
    let ah = interpolation_matrix(&hp, input.sizes()[2], input)?;
    let aw = interpolation_matrix(&wp, input.sizes()[3], input)?;
    ops::matmul(&ops::matmul(&ah, input)?, &ops::t(&aw)?)
}

/// `upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor`
pub fn upsample_bilinear2d(
    input: &Tensor,
    output_size: Option<&[i64]>,
    align_corners: bool,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    let [hw, ww] = bilinear_plan(input, output_size, align_corners, scale_factors)?;
    let (ih, iw) = (input.sizes()[2], input.sizes()[3]);
    let o = [hw.len() as i64, ww.len() as i64];
    let x = ops::contiguous(input, c10::MemoryFormat::Contiguous)?;
    let shape = [input.sizes()[0], input.sizes()[1], o[0], o[1]];
    let out = Tensor::empty_uninit(&shape, x.dtype(), x.device())?;
    let planes = (shape[0] * shape[1]) as usize;
    let (in_plane, out_plane) = ((ih * iw) as usize, (o[0] * o[1]) as usize);
    let iw = iw as usize;
    match_float!(x.dtype(), T, A => {
        if out.numel() > 0 {
            // SAFETY: x is contiguous with numel elements of T.
            let xs = unsafe { std::slice::from_raw_parts(x.data_ptr() as *const T, x.numel() as usize) };
            // SAFETY: out is a fresh contiguous tensor of T.
            let os = unsafe { std::slice::from_raw_parts_mut(out.data_ptr() as *mut T, out.numel() as usize) };
            let cast = |v: f64| -> A { num_traits::cast::<f64, A>(v).unwrap_or(A::zero()) };
            for p in 0..planes {
                let xp = &xs[p * in_plane..(p + 1) * in_plane];
                let op = &mut os[p * out_plane..(p + 1) * out_plane];
                let mut k = 0;
                for &(h0, h1, hl0, hl1) in &hw {
                    let (hl0, hl1) = (cast(hl0), cast(hl1));
                    for &(w0, w1, wl0, wl1) in &ww {
                        let (wl0, wl1) = (cast(wl0), cast(wl1));
                        let v = hl0 * (wl0 * xp[h0 * iw + w0].to_acc() + wl1 * xp[h0 * iw + w1].to_acc())
                            + hl1 * (wl0 * xp[h1 * iw + w0].to_acc() + wl1 * xp[h1 * iw + w1].to_acc());
                        op[k] = T::from_acc(v);
                        k += 1;
                    }
                }
            }
        }
        Ok(out)
    }, d => Err(Error::UnsupportedDtype { op: "upsample_bilinear2d".into(), dtype: d }))
}

// ---- pixel shuffle ----------------------------------------------------------------------------

fn check_shuffle(op: &str, x: &Tensor, factor: i64, what: &str) -> Result<()> {
    if x.dim() < 3 {
        return Err(Error::shape(
            op,
            format!("{op} expects input to have at least 3 dimensions, but got input with {} dimension(s)", x.dim()),
        ));
    }
    if factor <= 0 {
        return Err(Error::invalid(op, format!("{op} expects a positive {what}, but got {factor}")));
    }
    Ok(())
}

/// `pixel_shuffle(Tensor self, int upscale_factor) -> Tensor`
pub fn pixel_shuffle(self_: &Tensor, upscale_factor: i64) -> Result<Tensor> {
    let op = "pixel_shuffle";
    check_shuffle(op, self_, upscale_factor, "upscale_factor")?;
    let r = upscale_factor;
    let n = self_.dim();
    let s = self_.sizes();
    let (c, h, w) = (s[n - 3], s[n - 2], s[n - 1]);
    // r * r larger than i64 is larger than any channel count, so only c == 0 divides by it.
    let rr = r.checked_mul(r);
    if rr.is_none_or(|rr| c % rr != 0) {
        return Err(Error::shape(
            op,
            format!("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)={c} is not divisible by {}", r as i128 * r as i128),
        ));
    }
    let rr = rr.unwrap_or(1);
    let (Some(oh), Some(ow)) = (h.checked_mul(r), w.checked_mul(r)) else {
        return Err(Error::shape(op, format!("pixel_shuffle: output size {h}*{r} x {w}*{r} overflows int64")));
    };
    let lead = &s[..n - 3];
    let mut split: Vec<i64> = lead.to_vec();
    split.extend([c / rr, r, r, h, w]);
    let b = lead.len() as i64;
    let mut perm: Vec<i64> = (0..b).collect();
    perm.extend([b, b + 3, b + 1, b + 4, b + 2]);
    let mut out_shape: Vec<i64> = lead.to_vec();
    out_shape.extend([c / rr, oh, ow]);
    let p = ops::permute(&ops::reshape(self_, &split)?, &perm)?;
    ops::reshape(&ops::clone(&p, Some(c10::MemoryFormat::Contiguous))?, &out_shape)
}

/// `pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor`
pub fn pixel_unshuffle(self_: &Tensor, downscale_factor: i64) -> Result<Tensor> {
    let op = "pixel_unshuffle";
    check_shuffle(op, self_, downscale_factor, "downscale_factor")?;
    let r = downscale_factor;
    let n = self_.dim();
    let s = self_.sizes();
    let (c, h, w) = (s[n - 3], s[n - 2], s[n - 1]);
    if h % r != 0 || w % r != 0 {
        let (dim, size) = if h % r != 0 { ("height", h) } else { ("width", w) };
        return Err(Error::shape(
            op,
            format!("pixel_unshuffle expects {dim} to be divisible by downscale_factor, but input.size({}) = {size} is not divisible by {r}", if h % r != 0 { -2 } else { -1 }),
        ));
    }
    let lead = &s[..n - 3];
    let mut split: Vec<i64> = lead.to_vec();
    split.extend([c, h / r, r, w / r, r]);
    let b = lead.len() as i64;
    let mut perm: Vec<i64> = (0..b).collect();
    perm.extend([b, b + 2, b + 4, b + 1, b + 3]);
    let Some(oc) = c.checked_mul(r).and_then(|cr| cr.checked_mul(r)) else {
        return Err(Error::shape(op, format!("pixel_unshuffle: output channels {c}*{r}*{r} overflow int64")));
    };
    let mut out_shape: Vec<i64> = lead.to_vec();
    out_shape.extend([oc, h / r, w / r]);
    let p = ops::permute(&ops::reshape(self_, &split)?, &perm)?;
    ops::reshape(&ops::clone(&p, Some(c10::MemoryFormat::Contiguous))?, &out_shape)
}

/// `nearest-exact` source indices: `min(floor((o + 1/2) * scale), input - 1)` in float, as
/// PyTorch's `nearest_neighbor_exact_compute_source_index`.
fn nearest_exact_indices(input: i64, out: i64, scale: Option<f64>) -> Vec<i64> {
    let sc = scale_value(scale, input, out) as f32;
    (0..out).map(|o| (((o as f32 + 0.5) * sc).floor() as i64).min(input - 1)).collect()
}

/// `_upsample_nearest_exact{nsp}d`: a gather (`index_select`) along each spatial dim, so
/// autograd differentiates it.
fn upsample_nearest_exact_nd(
    nsp: usize,
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
    scales: Option<&[Option<f64>]>,
) -> Result<Tensor> {
    let op = format!("_upsample_nearest_exact{nsp}d");
    let (o, sc) = upsample_sizes(&op, input, nsp, output_size, scale_factors)?;
    if o.iter().any(|&v| v <= 0) || input.sizes()[2..].iter().any(|&v| v <= 0) {
        return Err(Error::invalid(
            &op,
            format!(
                "Input and output sizes should be greater than 0, but got input {:?} and output {o:?}",
                &input.sizes()[2..]
            ),
        ));
    }
    if let Some(empty) = upsample_output_check(input, &o)? {
        return Ok(empty);
    }
    let mut x = input.clone();
    for i in 0..nsp {
        let s = scales.map_or(sc[i], |v| v[i]);
        let idx = nearest_exact_indices(input.sizes()[2 + i], o[i], s);
        let n = idx.len() as i64;
        x = ops::index_select(&x, 2 + i as i64, &Tensor::from_vec(idx, &[n])?.to_device(x.device())?)?;
    }
    Ok(x)
}

/// `_upsample_nearest_exact1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor`
pub fn upsample_nearest_exact1d_vec(
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    upsample_nearest_exact_nd(1, input, output_size, scale_factors, None)
}
/// `_upsample_nearest_exact2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor`
pub fn upsample_nearest_exact2d_vec(
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    upsample_nearest_exact_nd(2, input, output_size, scale_factors, None)
}
/// `_upsample_nearest_exact3d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor`
pub fn upsample_nearest_exact3d_vec(
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    upsample_nearest_exact_nd(3, input, output_size, scale_factors, None)
}
/// `_upsample_nearest_exact1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor`
pub fn upsample_nearest_exact1d(input: &Tensor, output_size: &[i64], scales: Option<f64>) -> Result<Tensor> {
    upsample_nearest_exact_nd(1, input, Some(output_size), None, Some(&[scales]))
}
/// `_upsample_nearest_exact2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor`
pub fn upsample_nearest_exact2d(
    input: &Tensor,
    output_size: &[i64],
    scales_h: Option<f64>,
    scales_w: Option<f64>,
) -> Result<Tensor> {
    upsample_nearest_exact_nd(2, input, Some(output_size), None, Some(&[scales_h, scales_w]))
}
/// `_upsample_nearest_exact3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor`
pub fn upsample_nearest_exact3d(
    input: &Tensor,
    output_size: &[i64],
    scales_d: Option<f64>,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
) -> Result<Tensor> {
    upsample_nearest_exact_nd(3, input, Some(output_size), None, Some(&[scales_d, scales_h, scales_w]))
}

/// Interpolation along `dim` of `x`: output `o` is `sum_t weights[t][o] * x[indices[t][o]]`,
/// one `index_select` per tap, so autograd differentiates it.
fn interpolate_along(x: &Tensor, dim: i64, taps: &[(Vec<i64>, Vec<f64>)]) -> Result<Tensor> {
    let nd = x.dim();
    let mut acc: Option<Tensor> = None;
    for (idx, w) in taps {
        let n = idx.len() as i64;
        let picked = ops::index_select(x, dim, &Tensor::from_vec(idx.clone(), &[n])?.to_device(x.device())?)?;
        // The weights broadcast along `dim`.
        let mut shape = vec![1i64; nd];
        shape[dim as usize] = n;
        let w = crate::native::copy::to_dtype(&Tensor::from_vec(w.clone(), &shape)?.to_device(x.device())?, x.dtype())?;
        let term = ops::mul(&picked, &w)?;
        acc = Some(match acc {
            None => term,
            Some(a) => ops::add(&a, &term, c10::Scalar::Int(1))?,
        });
    }
    acc.ok_or_else(|| Error::invalid("interpolate", "no interpolation taps"))
}

/// Linear interpolation taps (PyTorch's `linear_weights`) of one dimension.
fn linear_taps(input: i64, out: i64, align_corners: bool, scale: Option<f64>) -> Result<[(Vec<i64>, Vec<f64>); 2]> {
    let w = linear_weights(input, out, align_corners, scale)?;
    Ok([
        (w.iter().map(|t| t.0 as i64).collect(), w.iter().map(|t| t.2).collect()),
        (w.iter().map(|t| t.1 as i64).collect(), w.iter().map(|t| t.3).collect()),
    ])
}

/// Cubic-convolution taps (`A = -0.75`, indices clamped to the border) of one dimension, as
/// PyTorch's `upsample_bicubic2d` computes them.
fn cubic_taps(input: i64, out: i64, align_corners: bool, scale: Option<f64>) -> [(Vec<i64>, Vec<f64>); 4] {
    const A: f64 = -0.75;
    let cc1 = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let cc2 = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    let sc = if align_corners {
        if out > 1 {
            (input - 1) as f64 / (out - 1) as f64
        } else {
            0.0
        }
    } else {
        scale_value(scale, input, out)
    };
    let mut taps: [(Vec<i64>, Vec<f64>); 4] = Default::default();
    for o in 0..out {
        let src = if align_corners { sc * o as f64 } else { sc * (o as f64 + 0.5) - 0.5 };
        let base = src.floor();
        let t = src - base;
        let weights = [cc2(t + 1.0), cc1(t), cc1(1.0 - t), cc2(2.0 - t)];
        for (k, (idx, w)) in taps.iter_mut().enumerate() {
            idx.push((base as i64 - 1 + k as i64).clamp(0, input - 1));
            w.push(weights[k]);
        }
    }
    taps
}

/// For gather-based upsampling: the result directly when there is nothing to compute (an
/// empty input gives an empty output), after checking that the output can be allocated (its
/// index lists are built before any tensor is).
fn upsample_output_check(input: &Tensor, o: &[i64]) -> Result<Option<Tensor>> {
    let shape: Vec<i64> = input.sizes()[..2].iter().chain(o).copied().collect();
    let out = Tensor::empty_uninit(&shape, input.dtype(), input.device())?;
    Ok(if out.numel() == 0 || input.numel() == 0 { Some(out) } else { None })
}

fn check_interp_sizes(op: &str, input: &Tensor, o: &[i64]) -> Result<()> {
    // PyTorch's uint8 path rounds through fixed-point weights of its own: not reproduced, an
    // error rather than different values.
    if !input.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: input.dtype() });
    }
    let sp = &input.sizes()[2..];
    if o.iter().any(|&v| v <= 0) || sp.iter().any(|&v| v <= 0) {
        return Err(Error::invalid(
            op,
            format!("Input and output sizes should be greater than 0, but got input ({sp:?}) and output ({o:?})"),
        ));
    }
    Ok(())
}

/// Separable upsampling over the last `nsp` dims: linear or cubic taps per dim (`scales`
/// overrides the per-dim scales the sizes imply, for the non-`vec` overloads).
#[allow(clippy::too_many_arguments)]
fn separable_upsample(
    op: &str,
    nsp: usize,
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
    scales: Option<&[Option<f64>]>,
    align_corners: bool,
    cubic: bool,
) -> Result<Tensor> {
    let (o, sc) = upsample_sizes(op, input, nsp, output_size, scale_factors)?;
    check_interp_sizes(op, input, &o)?;
    if let Some(empty) = upsample_output_check(input, &o)? {
        return Ok(empty);
    }
    let mut x = input.clone();
    for i in 0..nsp {
        let (n, s) = (input.sizes()[2 + i], scales.map_or(sc[i], |v| v[i]));
        let dim = 2 + i as i64;
        x = if cubic {
            interpolate_along(&x, dim, &cubic_taps(n, o[i], align_corners, s))?
        } else {
            interpolate_along(&x, dim, &linear_taps(n, o[i], align_corners, s)?)?
        };
    }
    Ok(x)
}

/// `upsample_trilinear3d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor`:
/// linear interpolation along depth, height and width in turn (the weights separate).
pub fn upsample_trilinear3d_vec(
    input: &Tensor,
    output_size: Option<&[i64]>,
    align_corners: bool,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    separable_upsample("upsample_trilinear3d", 3, input, output_size, scale_factors, None, align_corners, false)
}

/// `upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor`:
/// cubic convolution along height then width (the weights separate).
pub fn upsample_bicubic2d_vec(
    input: &Tensor,
    output_size: Option<&[i64]>,
    align_corners: bool,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    separable_upsample("upsample_bicubic2d", 2, input, output_size, scale_factors, None, align_corners, true)
}

/// `upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor`
pub fn upsample_trilinear3d(
    input: &Tensor,
    output_size: &[i64],
    align_corners: bool,
    scales_d: Option<f64>,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
) -> Result<Tensor> {
    let scales = [scales_d, scales_h, scales_w];
    separable_upsample("upsample_trilinear3d", 3, input, Some(output_size), None, Some(&scales), align_corners, false)
}

/// `upsample_bicubic2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor`
pub fn upsample_bicubic2d(
    input: &Tensor,
    output_size: &[i64],
    align_corners: bool,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
) -> Result<Tensor> {
    separable_upsample(
        "upsample_bicubic2d",
        2,
        input,
        Some(output_size),
        None,
        Some(&[scales_h, scales_w]),
        align_corners,
        true,
    )
}
