//! Attention. `scaled_dot_product_attention`, PyTorch's math path: `softmax(q @ k^T * scale +
//! mask) @ v` with a causal (top-left aligned) or explicit boolean/additive mask, optional
//! dropout and grouped-query attention. Fully masked rows give zeros (PyTorch's
//! `_safe_softmax`), not NaN. f16/bf16 compute in f32 and round once. And
//! `_native_multi_head_attention`, the fused `nn.MultiheadAttention` of PyTorch's inference fast
//! path, composed from linear layers, matrix products and a softmax.

use c10::{Error, Result, Scalar, ScalarType};

use crate::{ops, Tensor};

/// Repeats dim -3 of `t` `r` times per entry (`repeat_interleave(r, dim=-3)`).
fn repeat_heads(t: &Tensor, r: i64) -> Result<Tensor> {
    if r == 1 {
        return Ok(t.clone());
    }
    let n = t.dim();
    let s = t.sizes();
    let mut ex: Vec<i64> = s[..n - 2].to_vec();
    ex.insert(n - 2, r);
    ex.extend(&s[n - 2..]);
    let u = ops::unsqueeze(t, (n - 2) as i64)?;
    let e = ops::expand(&u, &ex, false)?;
    let mut shape: Vec<i64> = s.to_vec();
    shape[n - 3] *= r;
    ops::reshape(&e, &shape)
}

/// In place over contiguous `scores` (`rows x len`): adds the additive mask (same shape,
/// contiguous, or none), applies the causal mask (column j allowed when `j <= row % l`), and
/// replaces each row with its softmax; a row without any finite logit becomes zeros.
fn masked_softmax<T: num_traits::Float>(scores: &mut [T], len: usize, l: usize, mask: Option<&[T]>, causal: bool) {
    if len == 0 {
        return;
    }
    for (r, row) in scores.chunks_mut(len).enumerate() {
        if let Some(m) = mask {
            for (x, &v) in row.iter_mut().zip(&m[r * len..(r + 1) * len]) {
                *x = *x + v;
            }
        }
        if causal {
            let i = r % l.max(1);
            for x in row.iter_mut().skip(i + 1) {
                *x = T::neg_infinity();
            }
        }
        let mx = row.iter().fold(T::neg_infinity(), |a, &b| if b > a || b.is_nan() { b } else { a });
        if mx == T::neg_infinity() {
            row.iter_mut().for_each(|x| *x = T::zero());
            continue;
        }
        let mut sum = T::zero();
        for x in row.iter_mut() {
            *x = (*x - mx).exp();
            sum = sum + *x;
        }
        let inv = T::one() / sum;
        row.iter_mut().for_each(|x| *x = *x * inv);
    }
}

/// [`masked_softmax`] on a device, from the device's operators: the additive mask, the causal
/// mask as `-inf` above the diagonal (`tril` of an `[l, s]` mask), the softmax over the last dim,
/// and zeros for rows without a finite logit (PyTorch's `_safe_softmax`).
fn device_masked_softmax(scores: Tensor, mask: Option<&Tensor>, l: i64, s: i64, causal: bool) -> Result<Tensor> {
    let mut sc = scores;
    if let Some(m) = mask {
        sc = ops::add(&sc, m, Scalar::Int(1))?;
    }
    if causal {
        let ones = ops::ones(&[l, s], Some(ScalarType::Bool), None, Some(sc.device()), None)?;
        let above = ops::logical_not(&ops::tril(&ones, 0)?)?;
        sc = ops::masked_fill(&sc, &above, Scalar::Float(f64::NEG_INFINITY))?;
    }
    let dead = ops::isneginf(&ops::amax(&sc, &[-1], true)?)?;
    ops::masked_fill(&ops::softmax(&sc, -1, None)?, &dead, Scalar::Int(0))
}

/// `scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None,
/// float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor`
#[allow(clippy::too_many_arguments)]
pub fn scaled_dot_product_attention(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attn_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
    enable_gqa: bool,
) -> Result<Tensor> {
    let op = "scaled_dot_product_attention";
    // One device for all (a CPU query with a meta mask would otherwise read the mask's
    // missing data on the CPU path).
    crate::native::check_device(op, query.device(), [key, value].into_iter().chain(attn_mask))?;
    let dt = query.dtype();
    if key.dtype() != dt || value.dtype() != dt {
        return Err(Error::invalid(
            op,
            format!(
                "Expected query, key, and value to have the same dtype, but got query.dtype: {} key.dtype: {} and value.dtype: {} instead.",
                dt.cpp_name(),
                key.dtype().cpp_name(),
                value.dtype().cpp_name()
            ),
        ));
    }
    if !dt.is_floating_point() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: dt });
    }
    if query.dim() < 2 || key.dim() < 2 || value.dim() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "Expected query, key and value to have at least 2 dimensions, but got query.dim: {}, key.dim: {} and value.dim: {} instead.",
                query.dim(),
                key.dim(),
                value.dim()
            ),
        ));
    }
    let e = query.sizes()[query.dim() - 1];
    if key.sizes()[key.dim() - 1] != e {
        return Err(Error::shape(
            op,
            format!(
                "Expected query and key to have the same embedding dimension, but got {} and {}",
                e,
                key.sizes()[key.dim() - 1]
            ),
        ));
    }
    if key.sizes()[key.dim() - 2] != value.sizes()[value.dim() - 2] {
        return Err(Error::shape(
            op,
            format!(
                "Expected key and value to have the same sequence length, but got {} and {}",
                key.sizes()[key.dim() - 2],
                value.sizes()[value.dim() - 2]
            ),
        ));
    }
    if is_causal && attn_mask.is_some() {
        return Err(Error::invalid(
            op,
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True",
        ));
    }
    if !(0.0..=1.0).contains(&dropout_p) {
        return Err(Error::invalid(op, format!("dropout probability has to be between 0 and 1, but got {dropout_p}")));
    }
    if let Some(m) = attn_mask {
        if m.dtype() != ScalarType::Bool && m.dtype() != dt {
            return Err(Error::invalid(
                op,
                format!(
                    "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: {} and  query.dtype: {} instead.",
                    m.dtype().cpp_name(),
                    dt.cpp_name()
                ),
            ));
        }
    }
    let compute = if matches!(dt, ScalarType::F16 | ScalarType::BF16) { ScalarType::F32 } else { dt };
    let up = |t: &Tensor| -> Result<Tensor> {
        if t.dtype() == compute {
            Ok(t.clone())
        } else {
            crate::native::copy::to_dtype(t, compute)
        }
    };
    let (q, mut k, mut v) = (up(query)?, up(key)?, up(value)?);
    if enable_gqa && q.dim() >= 3 && k.dim() >= 3 {
        let (hq, hk, hv) = (q.sizes()[q.dim() - 3], k.sizes()[k.dim() - 3], v.sizes()[v.dim() - 3]);
        if hk == 0 || hv == 0 || hq % hk != 0 || hq % hv != 0 {
            return Err(Error::shape(
                op,
                format!("number of heads in query ({hq}) must be divisible by the number of heads in key ({hk}) and value ({hv})"),
            ));
        }
        k = repeat_heads(&k, hq / hk)?;
        v = repeat_heads(&v, hq / hv)?;
    }
    let scale = scale.unwrap_or(1.0 / (e as f64).sqrt());
    let kt = ops::transpose(&k, -2, -1)?;
    let scores = ops::mul_scalar(&ops::matmul(&q, &kt)?, Scalar::Float(scale))?;
    let scores = ops::contiguous(&scores, c10::MemoryFormat::Contiguous)?;
    let sh = scores.sizes().to_vec();
    let (l, s) = (sh[sh.len() - 2] as usize, sh[sh.len() - 1] as usize);
    // The additive mask, broadcast to the scores and made contiguous.
    let mask = match attn_mask {
        None => None,
        Some(m) => {
            let add = if m.dtype() == ScalarType::Bool {
                let z = ops::zeros(m.sizes(), Some(compute), None, Some(m.device()), None)?;
                ops::masked_fill(&z, &ops::logical_not(m)?, Scalar::Float(f64::NEG_INFINITY))?
            } else {
                up(m)?
            };
            let ex = ops::expand(&add, &sh, false).map_err(|_| {
                Error::shape(
                    op,
                    format!("attn_mask of shape {:?} cannot be broadcast to the attention weights {:?}", m.sizes(), sh),
                )
            })?;
            Some(ops::contiguous(&ex, c10::MemoryFormat::Contiguous)?)
        }
    };
    if crate::native::on_device(&scores) {
        let probs = device_masked_softmax(scores, mask.as_ref(), l as i64, s as i64, is_causal)?;
        let probs = if dropout_p > 0.0 { ops::dropout(&probs, dropout_p, true)? } else { probs };
        let out = ops::matmul(&probs, &v)?;
        return if compute != dt { crate::native::copy::to_dtype(&out, dt) } else { Ok(out) };
    }
    let n = scores.numel() as usize;
    match compute {
        // On the meta device the softmax has no values to normalise (Note [Meta loops]).
        ScalarType::F32 | ScalarType::F64 if n > 0 && !scores.device().is_meta() => {
            match_float!(compute, T, A => {
                // SAFETY: `scores` is a fresh contiguous tensor of n elements of T owned here.
                let sc = unsafe { std::slice::from_raw_parts_mut(scores.data_ptr() as *mut T, n) };
                // SAFETY: the mask is contiguous with the scores' shape and dtype.
                let mk = mask.as_ref().map(|m| unsafe { std::slice::from_raw_parts(m.data_ptr() as *const T, n) });
                masked_softmax::<T>(sc, s, l, mk, is_causal);
                Ok::<(), Error>(())
            }, d => Err(Error::UnsupportedDtype { op: op.into(), dtype: d }))?;
        }
        _ => {}
    }
    let probs = if dropout_p > 0.0 {
        let keep = ops::empty_like(&scores, None, None, None, None, None)?;
        let keep = ops::bernoulli_(&keep, 1.0 - dropout_p, None)?;
        let scaled = ops::mul(&scores, &keep)?;
        if dropout_p < 1.0 {
            ops::mul_scalar(&scaled, Scalar::Float(1.0 / (1.0 - dropout_p)))?
        } else {
            scaled
        }
    } else {
        scores
    };
    let out = ops::matmul(&probs, &v)?;
    if compute != dt {
        crate::native::copy::to_dtype(&out, dt)
    } else {
        Ok(out)
    }
}

/// `_native_multi_head_attention(Tensor query, Tensor key, Tensor value, int embed_dim, int
/// num_head, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, Tensor?
/// mask=None, bool need_weights=True, bool average_attn_weights=True, int? mask_type=None) ->
/// (Tensor, Tensor)`: what `nn.MultiheadAttention` calls in eval mode (batch first, no extra
/// key/value biases), and so what a model traced that way holds.
///
/// `query`, `key` and `value` are `(B, L, E)`; `qkv_weight` (`3E x E`) and `qkv_bias` (`3E`)
/// stack the query, key and value projections. Each of the `num_head` heads attends with
/// `softmax(q k^T / sqrt(E / num_head))`; the heads' outputs are concatenated and projected by
/// `proj_weight`, `proj_bias`. `mask` is true where attention is not allowed (a non-bool mask is
/// taken as `mask != 0`, as PyTorch does): with `mask_type` 1 a `(B, L)` key padding mask,
/// otherwise any mask that broadcasts to `(B, num_head, L, L)`; a query that may attend to
/// nothing gets NaN, as in PyTorch. The second output is the attention weights, averaged over
/// the heads (`(B, L, L)`) or per head (`(B, num_head, L, L)`); without `need_weights` it is an
/// empty tensor (PyTorch's is undefined, `None` in Python: our tensors are always defined).
#[allow(clippy::too_many_arguments)]
pub fn native_multi_head_attention(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    embed_dim: i64,
    num_head: i64,
    qkv_weight: &Tensor,
    qkv_bias: &Tensor,
    proj_weight: &Tensor,
    proj_bias: &Tensor,
    mask: Option<&Tensor>,
    need_weights: bool,
    average_attn_weights: bool,
    mask_type: Option<i64>,
) -> Result<(Tensor, Tensor)> {
    let op = "_native_multi_head_attention";
    if query.dim() != 3 || key.dim() != 3 || value.dim() != 3 {
        return Err(Error::shape(
            op,
            format!(
                "expected query, key and value of shape (batch, sequence, embed_dim), got {:?}, {:?} and {:?}",
                query.sizes(),
                key.sizes(),
                value.sizes()
            ),
        ));
    }
    let (b, l, e) = (query.sizes()[0], query.sizes()[1], query.sizes()[2]);
    let s = l;
    if key.sizes() != query.sizes() || value.sizes() != query.sizes() {
        return Err(Error::shape(
            op,
            format!(
                "expected `query`/`key`/`value` shapes to match, got {:?}, {:?} and {:?}",
                query.sizes(),
                key.sizes(),
                value.sizes()
            ),
        ));
    }
    if e != embed_dim {
        return Err(Error::shape(op, format!("query's last dimension ({e}) must be embed_dim ({embed_dim})")));
    }
    if num_head <= 0 || embed_dim % num_head != 0 {
        return Err(Error::invalid(op, format!("embed_dim ({embed_dim}) must be divisible by num_head ({num_head})")));
    }
    for (name, t, want) in [
        ("qkv_weight", qkv_weight, &[3 * e, e][..]),
        ("qkv_bias", qkv_bias, &[3 * e][..]),
        ("proj_weight", proj_weight, &[e, e][..]),
        ("proj_bias", proj_bias, &[e][..]),
    ] {
        if t.sizes() != want {
            return Err(Error::shape(op, format!("expected {name} of shape {want:?}, got {:?}", t.sizes())));
        }
    }
    let dh = embed_dim / num_head;
    // The query, key and value rows of the stacked projection (narrowed rather than chunked:
    // `chunk` gives fewer than three pieces when embed_dim is 0).
    let third = |t: &Tensor, k: i64| ops::narrow(t, 0, k * e, e);
    let w = [third(qkv_weight, 0)?, third(qkv_weight, 1)?, third(qkv_weight, 2)?];
    let bias = [third(qkv_bias, 0)?, third(qkv_bias, 1)?, third(qkv_bias, 2)?];
    // (B, n, E) -> (B, heads, n, E / heads).
    let heads = |x: &Tensor, n: i64| ops::transpose(&ops::reshape(x, &[b, n, num_head, dh])?, 1, 2);
    // The query is scaled before the product, as PyTorch's fused kernel does.
    let q = ops::mul_scalar(&ops::linear(query, &w[0], Some(&bias[0]))?, Scalar::Float(1.0 / (dh as f64).sqrt()))?;
    let q = heads(&q, l)?;
    let k = heads(&ops::linear(key, &w[1], Some(&bias[1]))?, s)?;
    let v = heads(&ops::linear(value, &w[2], Some(&bias[2]))?, s)?;
    let scores = ops::matmul(&q, &ops::transpose(&k, 2, 3)?)?;
    let weights = match mask {
        None => ops::softmax(&scores, -1, None)?,
        Some(m) => {
            let m = if m.dtype() == ScalarType::Bool { m.clone() } else { ops::ne_scalar(m, Scalar::Int(0))? };
            let m = if mask_type == Some(1) {
                if m.sizes() != [b, s] {
                    return Err(Error::shape(
                        op,
                        format!("expected a key padding mask (mask_type 1) of shape {:?}, got {:?}", [b, s], m.sizes()),
                    ));
                }
                ops::reshape(&m, &[b, 1, 1, s])?
            } else {
                m
            };
            let full = [b, num_head, l, s];
            let m = ops::expand(&m, &full, false).map_err(|_| {
                Error::shape(
                    op,
                    format!("mask of shape {:?} cannot be broadcast to the attention weights {full:?}", m.sizes()),
                )
            })?;
            // A fully masked row's softmax is NaN, as PyTorch's is.
            ops::softmax(&ops::masked_fill(&scores, &m, Scalar::Float(f64::NEG_INFINITY))?, -1, None)?
        }
    };
    let ctx = ops::matmul(&weights, &v)?;
    let ctx = ops::reshape(&ops::transpose(&ctx, 1, 2)?, &[b, l, e])?;
    let out = ops::linear(&ctx, proj_weight, Some(proj_bias))?;
    let weights = if !need_weights {
        ops::empty(&[0], Some(query.dtype()), None, Some(query.device()), None, None)?
    } else if average_attn_weights {
        ops::div_scalar(&ops::sum_dim_intlist(&weights, Some(&[1]), false, None)?, Scalar::Int(num_head))?
    } else {
        weights
    };
    Ok((out, weights))
}

/// `_transformer_encoder_layer_fwd(Tensor src, int embed_dim, int num_heads, ...) -> Tensor`:
/// PyTorch's inference fast path of `nn.TransformerEncoderLayer` (what a layer traced in eval
/// mode calls), the layer's forward from its parts: self-attention through
/// [`native_multi_head_attention`] plus the residual, then the feed-forward block
/// (`linear2(act(linear1(x)))`, GELU exact or ReLU) plus the residual, each layer norm before
/// its block (`norm_first`) or after its residual. `src` is `(batch, sequence, embed_dim)`.
#[allow(clippy::too_many_arguments)]
pub fn transformer_encoder_layer_fwd(
    src: &Tensor,
    embed_dim: i64,
    num_heads: i64,
    qkv_weight: &Tensor,
    qkv_bias: &Tensor,
    proj_weight: &Tensor,
    proj_bias: &Tensor,
    use_gelu: bool,
    norm_first: bool,
    eps: f64,
    norm_weight_1: &Tensor,
    norm_bias_1: &Tensor,
    norm_weight_2: &Tensor,
    norm_bias_2: &Tensor,
    ffn_weight_1: &Tensor,
    ffn_bias_1: &Tensor,
    ffn_weight_2: &Tensor,
    ffn_bias_2: &Tensor,
    mask: Option<&Tensor>,
    mask_type: Option<i64>,
) -> Result<Tensor> {
    let norm = |x: &Tensor, w: &Tensor, b: &Tensor| ops::layer_norm(x, &[embed_dim], Some(w), Some(b), eps, true);
    let x = if norm_first { norm(src, norm_weight_1, norm_bias_1)? } else { src.clone() };
    let (attn, _) = native_multi_head_attention(
        &x,
        &x,
        &x,
        embed_dim,
        num_heads,
        qkv_weight,
        qkv_bias,
        proj_weight,
        proj_bias,
        mask,
        false,
        true,
        mask_type,
    )?;
    let mut x = ops::add(&attn, src, Scalar::Int(1))?;
    if !norm_first {
        x = norm(&x, norm_weight_1, norm_bias_1)?;
    }
    let ffn_in = if norm_first { norm(&x, norm_weight_2, norm_bias_2)? } else { x.clone() };
    let hidden = ops::linear(&ffn_in, ffn_weight_1, Some(ffn_bias_1))?;
    let hidden = if use_gelu { ops::gelu(&hidden, "none")? } else { ops::relu(&hidden)? };
    let x = ops::add(&ops::linear(&hidden, ffn_weight_2, Some(ffn_bias_2))?, &x, Scalar::Int(1))?;
    if norm_first {
        Ok(x)
    } else {
        norm(&x, norm_weight_2, norm_bias_2)
    }
}
