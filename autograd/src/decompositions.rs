//! Decompositions used by autograd kernels marked `decompose:` in `derivatives.yaml`: when an
//! input requires grad, the operator is computed from differentiable operators (recording
//! their nodes, so every order of derivative works); otherwise the fused kernel runs.

use aten::{ops, Tensor};
use c10::{Result, Scalar};

use crate::formulas::{one, scale};

/// `cross_entropy_loss` as PyTorch composes it: `log_softmax` then `nll_loss_nd` (index
/// targets) or a weighted sum with the probabilities, plus label smoothing.
pub fn cross_entropy_loss(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let cd: i64 = if self_.dim() == 1 { 0 } else { 1 };
    // `log_softmax` first: it rejects a zero-dim input (class dim 1 out of range) before the
    // class count is read from the sizes.
    let logp = ops::log_softmax(self_, cd, None)?;
    let c = self_.sizes()[cd as usize];
    let class_view = |w: &Tensor| -> Result<Tensor> {
        let mut shape = vec![1i64; self_.dim()];
        shape[cd as usize] = c;
        ops::reshape(w, &shape)
    };
    if self_.sizes() == target.sizes() && target.dtype().is_floating_point() {
        let t = if label_smoothing > 0.0 {
            crate::formulas::add_s(&scale(target, 1.0 - label_smoothing)?, label_smoothing / c as f64)?
        } else {
            target.clone()
        };
        let mut prod = ops::mul(&logp, &t)?;
        if let Some(w) = weight {
            prod = ops::mul(&prod, &class_view(w)?)?;
        }
        let per = ops::neg(&ops::sum_dim_intlist(&prod, Some(&[cd]), false, None)?)?;
        return match reduction {
            0 => Ok(per),
            2 => ops::sum(&per, None),
            _ => scale(&ops::sum(&per, None)?, c as f64 / self_.numel().max(1) as f64),
        };
    }
    let nll = ops::nll_loss_nd(&logp, target, weight, reduction, ignore_index)?;
    if label_smoothing <= 0.0 {
        return Ok(nll);
    }
    let weighted = match weight {
        Some(w) => ops::mul(&logp, &class_view(w)?)?,
        None => logp.clone(),
    };
    let ignored = ops::eq_scalar(target, Scalar::Int(ignore_index))?;
    let smooth = ops::neg(&ops::sum_dim_intlist(&weighted, Some(&[cd]), false, None)?)?;
    let smooth = ops::masked_fill(&smooth, &ignored, Scalar::Int(0))?;
    let smooth = match reduction {
        0 => smooth,
        2 => ops::sum(&smooth, None)?,
        _ => {
            let kept = ops::logical_not(&ignored)?;
            let denom = match weight {
                Some(w) => {
                    let t = ops::masked_select(target, &kept)?;
                    ops::sum(&ops::index_select(w, 0, &t)?, None)?
                }
                None => ops::sum(&kept.to(self_.dtype()).call()?, None)?,
            };
            ops::div(&ops::sum(&smooth, None)?, &denom)?
        }
    };
    ops::add(&scale(&nll, 1.0 - label_smoothing)?, &scale(&smooth, label_smoothing / c as f64)?, one())
}

/// `native_layer_norm` from means and variances: `(out, mean, rstd)` with `mean` and `rstd`
/// kept over the normalised dims, as the fused kernel returns them.
pub fn native_layer_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let nd = input.dim() as i64;
    let dims: Vec<i64> = (nd - normalized_shape.len() as i64..nd).collect();
    let mean = ops::mean_dim(input, Some(&dims), true, None)?;
    let xc = ops::sub(input, &mean, one())?;
    let var = ops::mean_dim(&ops::mul(&xc, &xc)?, Some(&dims), true, None)?;
    let rstd = ops::rsqrt(&crate::formulas::add_s(&var, eps)?)?;
    let mut out = ops::mul(&xc, &rstd)?;
    if let Some(w) = weight {
        out = ops::mul(&out, w)?;
    }
    if let Some(b) = bias {
        out = ops::add(&out, b, one())?;
    }
    Ok((out, mean, rstd))
}

/// `max_pool2d` through `max_pool2d_with_indices` (whose formula scatters to the argmax).
pub fn max_pool2d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(ops::max_pool2d_with_indices(self_, kernel_size, stride, padding, dilation, ceil_mode)?.0)
}

/// `max_pool1d` through `max_pool1d_with_indices`.
pub fn max_pool1d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(ops::max_pool1d_with_indices(self_, kernel_size, stride, padding, dilation, ceil_mode)?.0)
}

/// `[1, C, 1, ...]`: a per-channel vector shaped to broadcast against an `[N, C, ...]` input.
fn channel_shape(input: &Tensor) -> Vec<i64> {
    let mut s = vec![1i64; input.dim()];
    if input.dim() > 1 {
        s[1] = input.sizes()[1];
    }
    s
}

/// `native_batch_norm`: the fused kernel runs (without history) for its running-statistics
/// update and saved statistics; the output is recomputed from differentiable operators.
#[allow(clippy::too_many_arguments)]
pub fn native_batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (_, save_mean, save_invstd) = {
        let _g = crate::grad_mode::no_grad();
        ops::native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)?
    };
    let shape = channel_shape(input);
    let (mean, invstd) = if training {
        let dims: Vec<i64> = (0..input.dim() as i64).filter(|&d| d != 1).collect();
        let mean = ops::mean_dim(input, Some(&dims), true, None)?;
        let xc = ops::sub(input, &mean, one())?;
        let var = ops::mean_dim(&ops::mul(&xc, &xc)?, Some(&dims), true, None)?;
        (mean, ops::rsqrt(&crate::formulas::add_s(&var, eps)?)?)
    } else {
        let rm = running_mean.expect("checked by the fused kernel");
        let rv = running_var.expect("checked by the fused kernel");
        (ops::reshape(rm, &shape)?, ops::reshape(&ops::rsqrt(&crate::formulas::add_s(rv, eps)?)?, &shape)?)
    };
    let mut out = ops::mul(&ops::sub(input, &mean, one())?, &invstd)?;
    if let Some(w) = weight {
        out = ops::mul(&out, &ops::reshape(w, &shape)?)?;
    }
    if let Some(b) = bias {
        out = ops::add(&out, &ops::reshape(b, &shape)?, one())?;
    }
    Ok((out, save_mean, save_invstd))
}

/// `native_group_norm`: statistics from the fused kernel (no history), the output from
/// differentiable operators over `[N, group, C/group * HxW]`.
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    // The fused kernel checks the arguments (with PyTorch's messages); its results are
    // recomputed from differentiable operators, the saved mean and rstd included: PyTorch
    // differentiates all three outputs of native_group_norm.
    {
        let _g = crate::grad_mode::no_grad();
        ops::native_group_norm(input, weight, bias, n, c, hxw, group, eps)?;
    }
    let x = ops::reshape(input, &[n, group, -1])?;
    let mean = ops::mean_dim(&x, Some(&[2]), true, None)?;
    let xc = ops::sub(&x, &mean, one())?;
    let var = ops::mean_dim(&ops::mul(&xc, &xc)?, Some(&[2]), true, None)?;
    let rstd = ops::rsqrt(&crate::formulas::add_s(&var, eps)?)?;
    let normed = ops::mul(&xc, &rstd)?;
    let mean_out = ops::reshape(&mean, &[n, group])?;
    let rstd_out = ops::reshape(&rstd, &[n, group])?;
    let mut out = ops::reshape(&normed, input.sizes())?;
    let shape = channel_shape(input);
    if let Some(w) = weight {
        out = ops::mul(&out, &ops::reshape(w, &shape)?)?;
    }
    if let Some(b) = bias {
        out = ops::add(&out, &ops::reshape(b, &shape)?, one())?;
    }
    Ok((out, mean_out, rstd_out))
}

/// `avg_pool2d` as a grouped convolution with a ones kernel, divided by `divisor_override` or
/// by each window's count of cells: those inside the padded input (`count_include_pad`) or
/// inside the input. `ceil_mode`'s last windows, which may start in the padding and end past
/// it, get extra zeros on the far sides (counted by neither divisor).
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    avg_pool_nd(2, self_, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
}

/// `avg_pool3d` as [`avg_pool2d`], over three spatial dimensions.
#[allow(clippy::too_many_arguments)]
pub fn avg_pool3d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    avg_pool_nd(3, self_, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
}

#[allow(clippy::too_many_arguments)]
fn avg_pool_nd(
    nsp: usize,
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    let out =
        aten::native::pool::check_avg_pool(nsp, self_, kernel_size, stride, padding, ceil_mode, divisor_override)?;
    let per_dim = |v: &[i64], d: i64| -> Vec<i64> {
        match v.len() {
            0 => vec![d; nsp],
            1 => vec![v[0]; nsp],
            _ => v.to_vec(),
        }
    };
    let k = per_dim(kernel_size, 1);
    let s = if stride.is_empty() { k.clone() } else { per_dim(stride, 1) };
    let p = per_dim(padding, 0);
    let batched = self_.dim() == nsp + 2;
    let x = if batched { self_.clone() } else { ops::unsqueeze(self_, 0)? };
    let c = x.sizes()[1];
    let sp = x.sizes()[2..].to_vec();
    // The windows span (out - 1) * stride + kernel cells; past the padded input, zeros.
    let extra: Vec<i64> = (0..nsp).map(|i| ((out[i] - 1) * s[i] + k[i] - (sp[i] + 2 * p[i])).max(0)).collect();
    // constant_pad_nd takes (before, after) pairs from the last dimension back.
    let pads = |before: &dyn Fn(usize) -> i64, after: &dyn Fn(usize) -> i64| -> Vec<i64> {
        (0..nsp).rev().flat_map(|i| [before(i), after(i)]).collect()
    };
    let window = |t: &Tensor, groups: i64| -> Result<Tensor> {
        let mut shape = vec![groups, 1];
        shape.extend(&k);
        let kernel = ops::ones(&shape, Some(x.dtype()), None, Some(x.device()), None)?;
        let zeros = vec![0; nsp];
        ops::convolution(t, &kernel, None, &s, &zeros, &vec![1; nsp], false, &zeros, groups)
    };
    let xp = ops::constant_pad_nd(&x, &pads(&|i| p[i], &|i| p[i] + extra[i]), Scalar::Int(0))?;
    let sum = window(&xp, c)?;
    let result = if let Some(d) = divisor_override {
        scale(&sum, 1.0 / d as f64)?
    } else {
        let mut shape = vec![1, 1];
        shape.extend(&sp);
        let plane = ops::ones(&shape, Some(x.dtype()), None, Some(x.device()), None)?;
        let fill = if count_include_pad { 1.0 } else { 0.0 };
        let plane = ops::constant_pad_nd(&plane, &pads(&|i| p[i], &|i| p[i]), Scalar::Float(fill))?;
        let plane = ops::constant_pad_nd(&plane, &pads(&|_| 0, &|i| extra[i]), Scalar::Int(0))?;
        ops::div(&sum, &window(&plane, 1)?)?
    };
    if batched {
        Ok(result)
    } else {
        ops::squeeze_dim(&result, 0)
    }
}

/// `max_pool3d` as the values of `max_pool3d_with_indices` (whose derivative scatters the
/// gradient to the maxima).
pub fn max_pool3d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(ops::max_pool3d_with_indices(self_, kernel_size, stride, padding, dilation, ceil_mode)?.0)
}

/// The `[out, in]` matrix averaging each adaptive-pooling window.
fn adaptive_matrix(input: i64, output: i64, like: &Tensor) -> Result<Tensor> {
    let n = input
        .checked_mul(output)
        .ok_or_else(|| c10::Error::invalid("adaptive_avg_pool2d", "numel: integer multiplication overflow"))?;
    let mut m = c10::size::try_vec_filled(0.0f64, n as usize)?;
    for i in 0..output {
        let start = (i * input) / output;
        let end = ((i + 1) * input + output - 1) / output;
        for j in start..end {
            m[(i * input + j) as usize] = 1.0 / (end - start) as f64;
        }
    }
    Tensor::from_vec(m, &[output, input])?.to(like.dtype()).call()?.to_device(like.device())
}

/// `adaptive_avg_pool2d` as `A_h @ x @ A_w^T` with averaging matrices.
pub fn adaptive_avg_pool2d(self_: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    let output_size = &aten::native::pool::check_adaptive_avg_pool(2, self_, output_size)?;
    let nd = self_.dim();
    let (h, w) = (self_.sizes()[nd - 2], self_.sizes()[nd - 1]);
    let ah = adaptive_matrix(h, output_size[0], self_)?;
    let aw = adaptive_matrix(w, output_size[1], self_)?;
    ops::matmul(&ops::matmul(&ah, self_)?, &ops::t(&aw)?)
}

/// `adaptive_avg_pool3d` as an averaging matrix applied along each of the three dimensions.
pub fn adaptive_avg_pool3d(self_: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    let output_size = aten::native::pool::check_adaptive_avg_pool(3, self_, output_size)?;
    let nd = self_.dim() as i64;
    let mut x = self_.clone();
    for (k, &o) in output_size.iter().enumerate() {
        // Dimension `nd - 3 + k` to the second-to-last place, averaged there, and back.
        let d = nd - 3 + k as i64;
        let moved = ops::transpose(&x, d, nd - 2)?;
        let a = adaptive_matrix(moved.sizes()[(nd - 2) as usize], o, self_)?;
        x = ops::transpose(&ops::matmul(&a, &moved)?, d, nd - 2)?;
    }
    Ok(x)
}

/// `upsample_nearest{1,2,3}d` as one `index_select` per spatial dimension with the kernel's
/// source indices (aten's `upsample_nearest_by_index_select`).
fn upsample_nearest_nd(
    nsp: usize,
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    aten::native::pool::upsample_nearest_by_index_select(nsp, input, output_size, scale_factors)
}

/// `upsample_nearest1d.vec` (see [`upsample_nearest_nd`]).
pub fn upsample_nearest1d(
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    upsample_nearest_nd(1, input, output_size, scale_factors)
}

/// `upsample_nearest2d.vec` (see [`upsample_nearest_nd`]).
pub fn upsample_nearest2d(
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    upsample_nearest_nd(2, input, output_size, scale_factors)
}

/// `upsample_nearest3d.vec` (see [`upsample_nearest_nd`]).
pub fn upsample_nearest3d(
    input: &Tensor,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    upsample_nearest_nd(3, input, output_size, scale_factors)
}

/// `upsample_bilinear2d.vec` as `A_h @ x @ A_w^T`, with the kernel's interpolation weights
/// (aten's `upsample_bilinear2d_by_matmul`).
pub fn upsample_bilinear2d(
    input: &Tensor,
    output_size: Option<&[i64]>,
    align_corners: bool,
    scale_factors: Option<&[f64]>,
) -> Result<Tensor> {
    aten::native::pool::upsample_bilinear2d_by_matmul(input, output_size, align_corners, scale_factors)
}

/// `prelu` as `where(x > 0, x, w * x)`, the weight shaped as the kernel shapes it.
pub fn prelu(self_: &Tensor, weight: &Tensor) -> Result<Tensor> {
    aten::native::pointwise::prelu_by_where(self_, weight)
}

/// `binary_cross_entropy` as PyTorch defines it: `-(t log x + (1 - t) log(1 - x))` with each log
/// clamped at -100, times `weight`, reduced.
pub fn binary_cross_entropy(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    aten::native::loss::check_binary_cross_entropy(self_, target, weight, reduction)?;
    let log_x = ops::clamp_min(&ops::log(self_)?, Scalar::Int(-100))?;
    let log_1mx = ops::clamp_min(&ops::log(&ops::rsub(self_, Scalar::Int(1), Scalar::Int(1))?)?, Scalar::Int(-100))?;
    let one_minus_t = ops::rsub(target, Scalar::Int(1), Scalar::Int(1))?;
    let mut loss = ops::neg(&ops::add(&ops::mul(target, &log_x)?, &ops::mul(&one_minus_t, &log_1mx)?, one())?)?;
    if let Some(w) = weight {
        loss = ops::mul(&loss, w)?;
    }
    match reduction {
        0 => Ok(loss),
        2 => ops::sum(&loss, None),
        _ => ops::mean(&loss, None),
    }
}

/// `instance_norm` as PyTorch composes it: `batch_norm` of the input viewed as one sample of
/// `N * C` channels, with the affine parameters and running statistics repeated `N` times;
/// the running statistics then get the mean over `N` of what `batch_norm` wrote.
#[allow(clippy::too_many_arguments)]
pub fn instance_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
    cudnn_enabled: bool,
) -> Result<Tensor> {
    aten::native::normalization::instance_norm_by_batch_norm(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        use_input_stats,
        momentum,
        eps,
        cudnn_enabled,
    )
}

/// Repeats the head dimension (`-3`) `r` times, each head kept together (`repeat_interleave`).
fn repeat_heads(t: &Tensor, r: i64) -> Result<Tensor> {
    if r == 1 {
        return Ok(t.clone());
    }
    let n = t.dim();
    let s = t.sizes();
    let mut ex: Vec<i64> = s[..n - 2].to_vec();
    ex.insert(n - 2, r);
    ex.extend(&s[n - 2..]);
    let e = ops::expand(&ops::unsqueeze(t, (n - 2) as i64)?, &ex, false)?;
    let mut out: Vec<i64> = s.to_vec();
    out[n - 3] *= r;
    ops::reshape(&e, &out)
}

/// `scaled_dot_product_attention` by PyTorch's math reference: `softmax(q k^T * scale + mask)
/// @ v`, with the causal mask as `-inf` above the diagonal and dropout on the weights.
#[allow(clippy::too_many_arguments)]
pub fn scaled_dot_product_attention(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attn_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale_: Option<f64>,
    enable_gqa: bool,
) -> Result<Tensor> {
    // The fused kernel's argument checks, without history.
    {
        let _g = crate::grad_mode::no_grad();
        ops::scaled_dot_product_attention(
            &crate::meta::detach(query),
            &crate::meta::detach(key),
            &crate::meta::detach(value),
            attn_mask,
            0.0,
            is_causal,
            scale_,
            enable_gqa,
        )?;
    }
    let (mut k, mut v) = (key.clone(), value.clone());
    if enable_gqa && query.dim() >= 3 && key.dim() >= 3 {
        let hq = query.sizes()[query.dim() - 3];
        k = repeat_heads(&k, hq / key.sizes()[key.dim() - 3])?;
        v = repeat_heads(&v, hq / value.sizes()[value.dim() - 3])?;
    }
    let e = query.sizes()[query.dim() - 1];
    let sc = scale_.unwrap_or(1.0 / (e as f64).sqrt());
    let mut scores = scale(&ops::matmul(query, &ops::transpose(&k, -2, -1)?)?, sc)?;
    let (l, s) = (query.sizes()[query.dim() - 2], k.sizes()[k.dim() - 2]);
    if is_causal {
        let keep = ops::tril(&ops::ones(&[l, s], Some(c10::ScalarType::Bool), None, Some(query.device()), None)?, 0)?;
        scores = ops::masked_fill(&scores, &ops::logical_not(&keep)?, Scalar::Float(f64::NEG_INFINITY))?;
    }
    if let Some(m) = attn_mask {
        scores = if m.dtype() == c10::ScalarType::Bool {
            ops::masked_fill(&scores, &ops::logical_not(m)?, Scalar::Float(f64::NEG_INFINITY))?
        } else {
            ops::add(&scores, m, one())?
        };
    }
    let mut attn = ops::softmax(&scores, -1, None)?;
    if dropout_p > 0.0 {
        attn = ops::dropout(&attn, dropout_p, true)?;
    }
    ops::matmul(&attn, &v)
}

/// `var_mean.correction` as `var` and `mean`.
pub fn var_mean(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    Ok((ops::var(self_, dim, correction, keepdim)?, ops::mean_dim(self_, dim, keepdim, None)?))
}

/// `std_mean.correction` as `std` and `mean`.
pub fn std_mean(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    Ok((ops::std(self_, dim, correction, keepdim)?, ops::mean_dim(self_, dim, keepdim, None)?))
}

/// The part of `src` that `index` covers (its leading `index.sizes()` block).
fn covered(src: &Tensor, index: &Tensor) -> Result<Tensor> {
    let mut part = src.clone();
    if src.dim() > 0 {
        for (k, &n) in index.sizes().iter().enumerate() {
            part = ops::narrow(&part, k as i64, 0, n)?;
        }
    }
    Ok(part)
}

/// `d out / d self` and `d out / d src` (for the covered part of `src`) of `scatter_reduce.two`,
/// built from operators, so they are differentiable themselves when grad mode is on. They are 1
/// for `sum`; `1 / count` for `mean`; shared evenly among the contributors equal to the result
/// for `amax`/`amin`; for `prod` the product of the other factors (`out / x` without zeros,
/// the product of the non-zero factors for the one zero, 0 with two or more). A position no
/// index reaches keeps `self` (derivative 1).
#[allow(clippy::too_many_arguments)]
fn scatter_reduce_weights(
    self_: &Tensor,
    d: i64,
    index: &Tensor,
    part: &Tensor,
    out: &Tensor,
    reduce: &str,
    include_self: bool,
) -> Result<(Tensor, Tensor)> {
    let zeros = ops::zeros_like(self_, None, None, None, None, None)?;
    let ones = ops::ones_like(self_, None, None, None, None, None)?;
    let f = |b: &Tensor| ops::to(b, self_.dtype(), false, false, None);
    let touched = ops::scatter_value(&zeros, d, index, Scalar::Int(1))?;
    let untouched = ops::rsub(&touched, one(), one())?;
    let incl = if include_self { ones } else { untouched.clone() };
    let at = |t: &Tensor| ops::gather(t, d, index, false);
    Ok(match reduce {
        "sum" => (incl, ops::ones_like(part, None, None, None, None, None)?),
        "mean" => {
            let count = ops::scatter_add(&incl, d, index, &ops::ones_like(part, None, None, None, None, None)?)?;
            let inv = ops::reciprocal(&ops::clamp_min(&count, one())?)?;
            (
                ops::add(&ops::mul(&incl, &inv)?, &ops::mul(&untouched, &ops::rsub(&inv, one(), one())?)?, one())?,
                at(&inv)?,
            )
        }
        "amax" | "amin" => {
            let eq_self = ops::mul(&incl, &f(&ops::eq(self_, out)?)?)?;
            let eq_src = f(&ops::eq(part, &at(out)?)?)?;
            let cnt = ops::clamp_min(&ops::scatter_add(&eq_self, d, index, &eq_src)?, one())?;
            (ops::div(&eq_self, &cnt)?, ops::div(&eq_src, &at(&cnt)?)?)
        }
        _ => {
            // prod: counts of zero factors and the product of the non-zero ones. Untouched
            // positions already weigh 1 (out is self there, or 1 / 1 for a zero).
            let self_zero = ops::mul(&incl, &f(&ops::eq_scalar(self_, Scalar::Int(0))?)?)?;
            let src_zero = f(&ops::eq_scalar(part, Scalar::Int(0))?)?;
            let zeros_n = ops::scatter_add(&self_zero, d, index, &src_zero)?;
            let nz = |t: &Tensor| ops::masked_fill(t, &ops::eq_scalar(t, Scalar::Int(0))?, one());
            let nz_prod = ops::scatter_reduce_two(&nz(self_)?, d, index, &nz(part)?, "prod", include_self)?;
            // The zero factor itself (0, but its derivative is 1): the other factors' weights in a
            // group with one zero are `zero * nz_prod / x`, 0 in value with the right derivative
            // with respect to the zero.
            let zero_val = ops::scatter_add(&ops::mul(self_, &self_zero)?, d, index, &ops::mul(part, &src_zero)?)?;
            let weight = |x: &Tensor, z: &Tensor, n: &Tensor, p: &Tensor, zv: &Tensor| -> Result<Tensor> {
                let none = ops::eq_scalar(n, Scalar::Int(0))?;
                let single = ops::eq_scalar(n, one())?;
                let is_zero = ops::logical_and(&single, &ops::eq_scalar(z, one())?)?;
                let by_x = ops::div(p, &nz(x)?)?;
                let beside_zero = ops::mul(zv, &by_x)?;
                let w = ops::where_self(&single, &beside_zero, &ops::zeros_like(p, None, None, None, None, None)?)?;
                let w = ops::where_self(&none, &by_x, &w)?;
                ops::where_self(&is_zero, p, &w)
            };
            let sw = weight(self_, &self_zero, &zeros_n, &nz_prod, &zero_val)?;
            let pw = weight(part, &src_zero, &at(&zeros_n)?, &at(&nz_prod)?, &at(&zero_val)?)?;
            (ops::mul(&incl, &sw)?, pw)
        }
    })
}

/// `scatter_reduce.two` with `prod`: a node whose backward multiplies the output gradient by
/// [`scatter_reduce_weights`] computed from the saved inputs (with history when the backward is
/// itself differentiated, so second derivatives are right).
struct ScatterReduceProd {
    dim: i64,
    index: Tensor,
    include_self: bool,
}

impl crate::custom::Function for ScatterReduceProd {
    fn name(&self) -> String {
        "ScatterReduceBackward0".into()
    }
    fn forward(&self, ctx: &mut crate::custom::FunctionCtx, x: &[Tensor]) -> Result<Vec<Tensor>> {
        ctx.save_for_backward(x);
        Ok(vec![ops::scatter_reduce_two(&x[0], self.dim, &self.index, &x[1], "prod", self.include_self)?])
    }
    fn backward(&self, ctx: &crate::custom::FunctionCtx, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(grad) = &g[0] else { return Ok(vec![None, None]) };
        let saved = ctx.saved_tensors()?;
        let (self_, src) = (&saved[0], &saved[1]);
        let part = covered(src, &self.index)?;
        let out = ops::scatter_reduce_two(self_, self.dim, &self.index, src, "prod", self.include_self)?;
        let (sw, pw) = scatter_reduce_weights(self_, self.dim, &self.index, &part, &out, "prod", self.include_self)?;
        let g_self = ops::mul(grad, &sw)?;
        let g_part = ops::mul(&ops::gather(grad, self.dim, &self.index, false)?, &pw)?;
        // Back to src's shape: zeros past the covered block.
        let mut pad = Vec::with_capacity(2 * src.dim());
        for k in (0..src.dim()).rev() {
            pad.extend([0, src.sizes()[k] - g_part.sizes()[k]]);
        }
        let g_src =
            if pad.iter().all(|&p| p == 0) { g_part } else { ops::constant_pad_nd(&g_part, &pad, Scalar::Int(0))? };
        Ok(vec![Some(g_self), Some(ops::to(&g_src, src.dtype(), false, false, None)?)])
    }
}

/// `scatter_reduce.two` for autograd. `prod` goes through [`ScatterReduceProd`]; the other
/// reductions are piecewise linear in their inputs, so the kernel's value plus
/// `(x - detach(x)) * d out / d x` (the weights without history) is exact to every order.
pub fn scatter_reduce_two(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
) -> Result<Tensor> {
    use crate::TensorAutograd;
    let d = aten::wrap_dim("scatter_reduce", dim, self_.dim().max(1))? as i64;
    if reduce == "prod" {
        // The kernel checks the arguments first.
        {
            let _g = crate::grad_mode::no_grad();
            ops::scatter_reduce_two(self_, dim, index, src, reduce, include_self)?;
        }
        let f = ScatterReduceProd { dim: d, index: index.clone(), include_self };
        return Ok(crate::custom::apply(f, &[self_.clone(), src.clone()])?.remove(0));
    }
    let part = covered(src, index)?;
    let (out, self_w, src_w) = {
        let _g = crate::grad_mode::no_grad();
        let out = ops::scatter_reduce_two(self_, dim, index, src, reduce, include_self)?;
        let (sw, pw) = scatter_reduce_weights(self_, d, index, &part, &out, reduce, include_self)?;
        (out, sw, ops::to(&pw, src.dtype(), false, false, None)?)
    };
    let self_term = ops::mul(&ops::sub(self_, &self_.detach(), one())?, &self_w)?;
    let src_term = ops::mul(&ops::sub(&part, &part.detach(), one())?, &src_w)?;
    let src_term = ops::scatter_add(&ops::zeros_like(self_, None, None, None, None, None)?, d, index, &src_term)?;
    ops::add(&ops::add(&out, &self_term, one())?, &src_term, one())
}

/// `index_reduce` for autograd: the same fold as `scatter_reduce` with the index spread over
/// `source`'s shape (element `m` goes to `index[m[dim]]` along `dim`).
pub fn index_reduce(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
    reduce: &str,
    include_self: bool,
) -> Result<Tensor> {
    // The kernel checks the arguments (shapes, dtypes, reduction names) with PyTorch's messages.
    {
        let _g = crate::grad_mode::no_grad();
        ops::index_reduce(self_, dim, index, source, reduce, include_self)?;
    }
    let d = aten::wrap_dim("index_reduce", dim, self_.dim().max(1))?;
    let mut shape = vec![1i64; source.dim().max(1)];
    shape[d] = index.numel();
    let idx = ops::reshape(&ops::to(index, c10::ScalarType::I64, false, false, None)?, &shape)?;
    let size = if self_.dim() == 0 { 1 } else { self_.sizes()[d] };
    let wrapped = ops::add_scalar(&idx, Scalar::Int(size), one())?;
    let idx = ops::where_self(&ops::lt_scalar(&idx, Scalar::Int(0))?, &wrapped, &idx)?;
    let idx = if source.dim() == 0 { ops::reshape(&idx, &[])? } else { ops::expand(&idx, source.sizes(), false)? };
    scatter_reduce_two(self_, d as i64, &idx, source, reduce, include_self)
}
