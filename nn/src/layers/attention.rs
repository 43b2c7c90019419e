//! `MultiheadAttention` (PyTorch's `nn.MultiheadAttention` and
//! `F.multi_head_attention_forward`): packed or separate input projections, boolean or additive
//! masks, optional `bias_k`/`bias_v` and zero attention, per-head or averaged weights.
//!
//! Note [Two attention paths]: as in PyTorch, when the attention weights are requested the
//! softmax is computed explicitly (`softmax(q k^T / sqrt(d) + mask)`, a fully masked row gives
//! NaN), and when they are not the heads go through `scaled_dot_product_attention` (a fully
//! masked row gives zeros, and `is_causal` can replace the mask). PyTorch's inference fast path
//! (`_native_multi_head_attention`) computes the same values and is not reproduced.

use aten::{ops, Tensor};
use c10::{Error, Result, Scalar, ScalarType};

use crate::init;
use crate::layers::invalid;
use crate::layers::linear::{empty, Linear};
use crate::module::Parameter;
use crate::Module;

const OP: &str = "MultiheadAttention";

fn shape_err(msg: impl Into<String>) -> Error {
    Error::shape(OP, msg)
}

/// The constructor arguments of [`MultiheadAttention`] beyond `embed_dim` and `num_heads`,
/// with PyTorch's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct MultiheadAttentionOptions {
    /// `dropout` (default 0) on the attention weights, in training.
    pub dropout: f64,
    /// `bias` (default true): `in_proj_bias` and `out_proj.bias`.
    pub bias: bool,
    /// `add_bias_kv` (default false): learned `bias_k` / `bias_v` appended to the key and value
    /// sequences.
    pub add_bias_kv: bool,
    /// `add_zero_attn` (default false): a zero key/value appended after the projections.
    pub add_zero_attn: bool,
    /// `kdim` (default `embed_dim`): features of the key.
    pub kdim: Option<i64>,
    /// `vdim` (default `embed_dim`): features of the value.
    pub vdim: Option<i64>,
    /// `batch_first` (default false): inputs and output are `(N, L, E)` instead of `(L, N, E)`.
    pub batch_first: bool,
}

impl Default for MultiheadAttentionOptions {
    fn default() -> Self {
        MultiheadAttentionOptions {
            dropout: 0.0,
            bias: true,
            add_bias_kv: false,
            add_zero_attn: false,
            kdim: None,
            vdim: None,
            batch_first: false,
        }
    }
}

impl MultiheadAttentionOptions {
    /// Sets `dropout`.
    pub fn dropout(mut self, p: f64) -> Self {
        self.dropout = p;
        self
    }
    /// Sets `bias`.
    pub fn bias(mut self, b: bool) -> Self {
        self.bias = b;
        self
    }
    /// Sets `add_bias_kv`.
    pub fn add_bias_kv(mut self, b: bool) -> Self {
        self.add_bias_kv = b;
        self
    }
    /// Sets `add_zero_attn`.
    pub fn add_zero_attn(mut self, b: bool) -> Self {
        self.add_zero_attn = b;
        self
    }
    /// Sets `kdim`.
    pub fn kdim(mut self, d: i64) -> Self {
        self.kdim = Some(d);
        self
    }
    /// Sets `vdim`.
    pub fn vdim(mut self, d: i64) -> Self {
        self.vdim = Some(d);
        self
    }
    /// Sets `batch_first`.
    pub fn batch_first(mut self, b: bool) -> Self {
        self.batch_first = b;
        self
    }
}

/// The keyword arguments of [`MultiheadAttention::forward_with`], with PyTorch's defaults.
///
/// Masks are boolean (`true` = may not attend) or floating point (added to the attention
/// logits).
#[derive(Clone, Copy, Debug)]
pub struct AttentionOptions<'a> {
    /// `key_padding_mask`: `(N, S)` (or `(S,)` for unbatched input); masks out keys.
    pub key_padding_mask: Option<&'a Tensor>,
    /// `need_weights` (default true): also return the attention weights.
    pub need_weights: bool,
    /// `attn_mask`: `(L, S)` or `(N * num_heads, L, S)` (`(num_heads, L, S)` unbatched).
    pub attn_mask: Option<&'a Tensor>,
    /// `average_attn_weights` (default true): average the returned weights over the heads.
    pub average_attn_weights: bool,
    /// `is_causal` (default false): a hint that `attn_mask` is the causal mask (it must be
    /// given).
    pub is_causal: bool,
}

impl Default for AttentionOptions<'_> {
    fn default() -> Self {
        AttentionOptions {
            key_padding_mask: None,
            need_weights: true,
            attn_mask: None,
            average_attn_weights: true,
            is_causal: false,
        }
    }
}

impl<'a> AttentionOptions<'a> {
    /// Sets `key_padding_mask`.
    pub fn key_padding_mask(mut self, m: &'a Tensor) -> Self {
        self.key_padding_mask = Some(m);
        self
    }
    /// Sets `need_weights`.
    pub fn need_weights(mut self, b: bool) -> Self {
        self.need_weights = b;
        self
    }
    /// Sets `attn_mask`.
    pub fn attn_mask(mut self, m: &'a Tensor) -> Self {
        self.attn_mask = Some(m);
        self
    }
    /// Sets `average_attn_weights`.
    pub fn average_attn_weights(mut self, b: bool) -> Self {
        self.average_attn_weights = b;
        self
    }
    /// Sets `is_causal`.
    pub fn is_causal(mut self, b: bool) -> Self {
        self.is_causal = b;
        self
    }
}

/// PyTorch's `_canonical_mask`: a boolean mask becomes an additive one (`-inf` where `true`) of
/// `dtype`; a floating-point mask is kept.
pub(crate) fn canonical_mask(mask: Option<&Tensor>, name: &str, dtype: ScalarType) -> Result<Option<Tensor>> {
    let Some(m) = mask else { return Ok(None) };
    if m.dtype() == ScalarType::Bool {
        let z = ops::zeros(m.sizes(), Some(dtype), None, Some(m.device()), None)?;
        Ok(Some(ops::masked_fill(&z, m, Scalar::Float(f64::NEG_INFINITY))?))
    } else if m.is_floating_point() {
        Ok(Some(m.clone()))
    } else {
        Err(invalid(OP, format!("only bool and floating types of {name} are supported")))
    }
}

/// Appends one zero column to the last dimension of an additive mask (`F.pad(mask, (0, 1))`).
fn pad_last(m: &Tensor) -> Result<Tensor> {
    let mut shape = m.sizes().to_vec();
    let last = shape.len() - 1;
    shape[last] = 1;
    let z = ops::zeros(&shape, Some(m.dtype()), None, Some(m.device()), None)?;
    ops::cat(&[m.clone(), z], -1)
}

/// `nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
/// add_zero_attn=False, kdim=None, vdim=None, batch_first=False)`.
///
/// Parameters (PyTorch's names and `state_dict` order): `in_proj_weight` `(3E, E)` when key and
/// value have `embed_dim` features, else `q_proj_weight` `(E, E)`, `k_proj_weight` `(E, kdim)`,
/// `v_proj_weight` `(E, vdim)`; `in_proj_bias` `(3E,)`; `bias_k`, `bias_v` `(1, 1, E)`; and the
/// child `out_proj` (a [`Linear`]). The projection weights are xavier-uniform, the biases
/// zero, `bias_k`/`bias_v` xavier-normal, `out_proj.weight` has Linear's initialisation; the
/// random draws come in PyTorch's order (`out_proj` first).
///
/// ```
/// use nn::{AttentionOptions, MultiheadAttention, MultiheadAttentionOptions};
/// aten::manual_seed(0);
/// let mha = MultiheadAttention::with_options(8, 2, &MultiheadAttentionOptions::default().batch_first(true)).unwrap();
/// let x = aten::ops::randn(&[2, 5, 8], None, None, None, None).unwrap();
/// let (out, weights) = mha.forward(&x, &x, &x).unwrap();
/// assert_eq!(out.sizes(), &[2, 5, 8]);
/// assert_eq!(weights.unwrap().sizes(), &[2, 5, 5]); // averaged over the heads
/// let (_, none) = mha.forward_with(&x, &x, &x, &AttentionOptions::default().need_weights(false)).unwrap();
/// assert!(none.is_none());
/// ```
#[derive(Module, Clone)]
pub struct MultiheadAttention {
    /// `(3 * embed_dim, embed_dim)`: the query, key and value projections stacked (when
    /// `kdim == vdim == embed_dim`).
    pub in_proj_weight: Option<Parameter>,
    /// `(embed_dim, embed_dim)` (when `kdim` or `vdim` differ from `embed_dim`).
    pub q_proj_weight: Option<Parameter>,
    /// `(embed_dim, kdim)`.
    pub k_proj_weight: Option<Parameter>,
    /// `(embed_dim, vdim)`.
    pub v_proj_weight: Option<Parameter>,
    /// `(3 * embed_dim,)`, if `bias`.
    pub in_proj_bias: Option<Parameter>,
    /// `(1, 1, embed_dim)`, if `add_bias_kv`.
    pub bias_k: Option<Parameter>,
    /// `(1, 1, embed_dim)`, if `add_bias_kv`.
    pub bias_v: Option<Parameter>,
    /// The output projection.
    pub out_proj: Linear,
    /// `embed_dim` (`E`).
    pub embed_dim: i64,
    /// `kdim`.
    pub kdim: i64,
    /// `vdim`.
    pub vdim: i64,
    /// `num_heads`.
    pub num_heads: i64,
    /// `embed_dim / num_heads`.
    pub head_dim: i64,
    /// Dropout probability on the attention weights.
    pub dropout: f64,
    /// `batch_first`.
    pub batch_first: bool,
    /// `add_zero_attn`.
    pub add_zero_attn: bool,
    training: bool,
}

impl MultiheadAttention {
    /// `MultiheadAttention(embed_dim, num_heads)` with PyTorch's defaults.
    pub fn new(embed_dim: i64, num_heads: i64) -> Result<MultiheadAttention> {
        MultiheadAttention::with_options(embed_dim, num_heads, &MultiheadAttentionOptions::default())
    }

    /// `MultiheadAttention(embed_dim, num_heads, **opts)`.
    pub fn with_options(
        embed_dim: i64,
        num_heads: i64,
        opts: &MultiheadAttentionOptions,
    ) -> Result<MultiheadAttention> {
        if embed_dim <= 0 || num_heads <= 0 {
            return Err(invalid(
                OP,
                format!("embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and num_heads={num_heads} instead"),
            ));
        }
        if embed_dim % num_heads != 0 {
            return Err(invalid(OP, "embed_dim must be divisible by num_heads"));
        }
        if !(0.0..=1.0).contains(&opts.dropout) {
            return Err(invalid(
                OP,
                format!("dropout probability has to be between 0 and 1, but got {}", opts.dropout),
            ));
        }
        let kdim = opts.kdim.unwrap_or(embed_dim);
        let vdim = opts.vdim.unwrap_or(embed_dim);
        if kdim <= 0 || vdim <= 0 {
            return Err(invalid(OP, format!("kdim and vdim must be greater than 0, got kdim={kdim} and vdim={vdim}")));
        }
        let same = kdim == embed_dim && vdim == embed_dim;
        let param = |shape: &[i64]| -> Result<Parameter> { Parameter::new(empty(shape)?) };
        let (in_w, q_w, k_w, v_w) = if same {
            (Some(param(&[3 * embed_dim, embed_dim])?), None, None, None)
        } else {
            (
                None,
                Some(param(&[embed_dim, embed_dim])?),
                Some(param(&[embed_dim, kdim])?),
                Some(param(&[embed_dim, vdim])?),
            )
        };
        let in_b = if opts.bias { Some(param(&[3 * embed_dim])?) } else { None };
        // Linear's initialisation draws first (PyTorch builds `out_proj` in `__init__`, then
        // `_reset_parameters` initialises the rest).
        let out_proj = Linear::with_bias(embed_dim, embed_dim, opts.bias)?;
        let (bias_k, bias_v) = if opts.add_bias_kv {
            (Some(param(&[1, 1, embed_dim])?), Some(param(&[1, 1, embed_dim])?))
        } else {
            (None, None)
        };
        let mha = MultiheadAttention {
            in_proj_weight: in_w,
            q_proj_weight: q_w,
            k_proj_weight: k_w,
            v_proj_weight: v_w,
            in_proj_bias: in_b,
            bias_k,
            bias_v,
            out_proj,
            embed_dim,
            kdim,
            vdim,
            num_heads,
            head_dim: embed_dim / num_heads,
            dropout: opts.dropout,
            batch_first: opts.batch_first,
            add_zero_attn: opts.add_zero_attn,
            training: true,
        };
        mha.reset_parameters()?;
        Ok(mha)
    }

    /// `_reset_parameters()`: xavier-uniform projection weights, zero biases, xavier-normal
    /// `bias_k` / `bias_v` (`out_proj.weight` keeps its Linear initialisation).
    pub fn reset_parameters(&self) -> Result<()> {
        for w in
            [&self.in_proj_weight, &self.q_proj_weight, &self.k_proj_weight, &self.v_proj_weight].into_iter().flatten()
        {
            init::xavier_uniform_(w, 1.0)?;
        }
        if let Some(b) = &self.in_proj_bias {
            init::zeros_(b)?;
            if let Some(ob) = &self.out_proj.bias {
                init::zeros_(ob)?;
            }
        }
        for b in [&self.bias_k, &self.bias_v].into_iter().flatten() {
            init::xavier_normal_(b, 1.0)?;
        }
        Ok(())
    }

    /// `mha(query, key, value)` with the default keyword arguments: returns the output and the
    /// head-averaged attention weights.
    pub fn forward(&self, query: &Tensor, key: &Tensor, value: &Tensor) -> Result<(Tensor, Option<Tensor>)> {
        self.forward_with(query, key, value, &AttentionOptions::default())
    }

    /// `mha(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
    /// is_causal)`.
    ///
    /// Shapes (`L` target length, `S` source length, `N` batch, `E` embed_dim): `query`
    /// `(L, N, E)`, `key` `(S, N, kdim)`, `value` `(S, N, vdim)` (batch first if `batch_first`;
    /// no batch dimension for unbatched input). Returns `attn_output` shaped like `query` and,
    /// if `need_weights`, the weights `(N, L, S)` (averaged) or `(N, num_heads, L, S)`.
    pub fn forward_with(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        opts: &AttentionOptions,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let batched = self.shape_check(query, key, value, opts)?;
        let dtype = query.dtype();
        let key_padding_mask = canonical_mask(opts.key_padding_mask, "key_padding_mask", dtype)?;
        let attn_mask = canonical_mask(opts.attn_mask, "attn_mask", dtype)?;
        // The packed projection is one matmul when the three inputs are the same tensor.
        let self_attention = query.is_same(key) && key.is_same(value);
        let (q_in, k_in, v_in) = if !batched {
            (query.unsqueeze(1)?, key.unsqueeze(1)?, value.unsqueeze(1)?)
        } else if self.batch_first {
            (query.transpose(0, 1)?, key.transpose(0, 1)?, value.transpose(0, 1)?)
        } else {
            (query.clone(), key.clone(), value.clone())
        };
        let key_padding_mask = match key_padding_mask {
            Some(m) if !batched => Some(m.unsqueeze(0)?),
            m => m,
        };
        let (out, weights) = self.attend(&q_in, &k_in, &v_in, self_attention, key_padding_mask, attn_mask, opts)?;
        let out = if !batched {
            out.squeeze_dim(1)?
        } else if self.batch_first {
            out.transpose(0, 1)?
        } else {
            out
        };
        let weights = match weights {
            Some(w) if !batched => Some(w.squeeze_dim(0)?),
            w => w,
        };
        Ok((out, weights))
    }

    /// PyTorch's `_mha_shape_check`: returns whether the input is batched.
    fn shape_check(&self, query: &Tensor, key: &Tensor, value: &Tensor, opts: &AttentionOptions) -> Result<bool> {
        match query.dim() {
            3 => {
                if key.dim() != 3 || value.dim() != 3 {
                    return Err(shape_err(format!(
                        "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found {}-D and {}-D tensors respectively",
                        key.dim(),
                        value.dim()
                    )));
                }
                if let Some(m) = opts.key_padding_mask {
                    if m.dim() != 2 {
                        return Err(shape_err(format!(
                            "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found {}-D tensor instead",
                            m.dim()
                        )));
                    }
                }
                if let Some(m) = opts.attn_mask {
                    if m.dim() != 2 && m.dim() != 3 {
                        return Err(shape_err(format!(
                            "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found {}-D tensor instead",
                            m.dim()
                        )));
                    }
                }
                Ok(true)
            }
            2 => {
                if key.dim() != 2 || value.dim() != 2 {
                    return Err(shape_err(format!(
                        "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found {}-D and {}-D tensors respectively",
                        key.dim(),
                        value.dim()
                    )));
                }
                if let Some(m) = opts.key_padding_mask {
                    if m.dim() != 1 {
                        return Err(shape_err(format!(
                            "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but found {}-D tensor instead",
                            m.dim()
                        )));
                    }
                }
                if let Some(m) = opts.attn_mask {
                    if m.dim() != 2 && m.dim() != 3 {
                        return Err(shape_err(format!(
                            "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found {}-D tensor instead",
                            m.dim()
                        )));
                    }
                    if m.dim() == 3 {
                        let expected = [self.num_heads, query.sizes()[0], key.sizes()[0]];
                        if m.sizes() != expected {
                            return Err(shape_err(format!(
                                "Expected `attn_mask` shape to be {expected:?} but got {:?}",
                                m.sizes()
                            )));
                        }
                    }
                }
                Ok(false)
            }
            d => Err(shape_err(format!(
                "query should be unbatched 2D or batched 3D tensor but received {d}-D query tensor"
            ))),
        }
    }

    /// The input projections of `(L, N, E)` / `(S, N, kdim)` / `(S, N, vdim)` inputs.
    fn project(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        self_attention: bool,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let e = self.embed_dim;
        let biases = match &self.in_proj_bias {
            Some(b) => ops::chunk(b, 3, 0)?.into_iter().map(Some).collect(),
            None => vec![None, None, None],
        };
        if let Some(w) = &self.in_proj_weight {
            if self_attention {
                let proj = ops::linear(query, w, self.in_proj_bias.as_deref())?;
                let mut parts = ops::chunk(&proj, 3, -1)?;
                let v = parts.pop();
                let k = parts.pop();
                let q = parts.pop();
                if let (Some(q), Some(k), Some(v)) = (q, k, v) {
                    return Ok((q, k, v));
                }
                return Err(invalid(OP, "in_proj_weight does not hold three projections"));
            }
            let ws = ops::split(w, e, 0)?;
            Ok((
                ops::linear(query, &ws[0], biases[0].as_ref())?,
                ops::linear(key, &ws[1], biases[1].as_ref())?,
                ops::linear(value, &ws[2], biases[2].as_ref())?,
            ))
        } else {
            let (Some(wq), Some(wk), Some(wv)) = (&self.q_proj_weight, &self.k_proj_weight, &self.v_proj_weight) else {
                return Err(invalid(OP, "the separate projection weights are missing"));
            };
            Ok((
                ops::linear(query, wq, biases[0].as_ref())?,
                ops::linear(key, wk, biases[1].as_ref())?,
                ops::linear(value, wv, biases[2].as_ref())?,
            ))
        }
    }

    /// `F.multi_head_attention_forward` on sequence-first, batched inputs.
    #[allow(clippy::too_many_arguments)]
    fn attend(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        self_attention: bool,
        key_padding_mask: Option<Tensor>,
        attn_mask: Option<Tensor>,
        opts: &AttentionOptions,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let (tgt_len, bsz, embed_dim) = (query.sizes()[0], query.sizes()[1], query.sizes()[2]);
        let h = self.num_heads;
        let hd = self.head_dim;
        if embed_dim != self.embed_dim {
            return Err(shape_err(format!(
                "was expecting embedding dimension of {}, but got {embed_dim}",
                self.embed_dim
            )));
        }
        if key.sizes()[2] != self.kdim || value.sizes()[2] != self.vdim {
            return Err(shape_err(format!(
                "expected key and value with {} and {} features, got {} and {}",
                self.kdim,
                self.vdim,
                key.sizes()[2],
                value.sizes()[2]
            )));
        }
        if self.in_proj_weight.is_some() {
            if key.sizes() != value.sizes() {
                return Err(shape_err(format!(
                    "key shape {:?} does not match value shape {:?}",
                    key.sizes(),
                    value.sizes()
                )));
            }
        } else if key.sizes()[..2] != value.sizes()[..2] {
            return Err(shape_err(format!(
                "key's sequence and batch dims {:?} do not match value's {:?}",
                &key.sizes()[..2],
                &value.sizes()[..2]
            )));
        }
        if opts.is_causal && attn_mask.is_none() {
            return Err(invalid(
                OP,
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method `generate_square_subsequent_mask` to create this mask.",
            ));
        }
        let mut is_causal = opts.is_causal;
        let mut attn_mask = attn_mask;
        if is_causal && key_padding_mask.is_none() && !opts.need_weights {
            // SDPA applies the causal mask itself.
            attn_mask = None;
        } else if key_padding_mask.is_some() {
            is_causal = false;
        }
        let (q, mut k, mut v) = self.project(query, key, value, self_attention)?;
        let src_len0 = k.sizes()[0];
        if let Some(m) = &attn_mask {
            attn_mask = Some(if m.dim() == 2 {
                if m.sizes() != [tgt_len, src_len0] {
                    return Err(shape_err(format!(
                        "The shape of the 2D attn_mask is {:?}, but should be {:?}.",
                        m.sizes(),
                        [tgt_len, src_len0]
                    )));
                }
                m.unsqueeze(0)?
            } else {
                if m.sizes() != [bsz * h, tgt_len, src_len0] {
                    return Err(shape_err(format!(
                        "The shape of the 3D attn_mask is {:?}, but should be {:?}.",
                        m.sizes(),
                        [bsz * h, tgt_len, src_len0]
                    )));
                }
                m.clone()
            });
        }
        let mut key_padding_mask = key_padding_mask;
        if let (Some(bk), Some(bv)) = (&self.bias_k, &self.bias_v) {
            k = ops::cat(&[k, bk.repeat(&[1, bsz, 1])?], 0)?;
            v = ops::cat(&[v, bv.repeat(&[1, bsz, 1])?], 0)?;
            attn_mask = attn_mask.as_ref().map(pad_last).transpose()?;
            key_padding_mask = key_padding_mask.as_ref().map(pad_last).transpose()?;
        }
        // (len, N, E) -> (N * heads, len, head_dim)
        let heads = |t: &Tensor| -> Result<Tensor> { t.reshape(&[t.sizes()[0], bsz * h, hd])?.transpose(0, 1) };
        let q = heads(&q)?;
        k = heads(&k)?;
        v = heads(&v)?;
        if self.add_zero_attn {
            let z = ops::zeros(&[bsz * h, 1, hd], Some(k.dtype()), None, Some(k.device()), None)?;
            k = ops::cat(&[k, z.clone()], 1)?;
            v = ops::cat(&[v, z], 1)?;
            attn_mask = attn_mask.as_ref().map(pad_last).transpose()?;
            key_padding_mask = key_padding_mask.as_ref().map(pad_last).transpose()?;
        }
        let src_len = k.sizes()[1];
        if let Some(m) = key_padding_mask {
            if m.sizes() != [bsz, src_len] {
                return Err(shape_err(format!(
                    "expecting key_padding_mask shape of ({bsz}, {src_len}), but got {:?}",
                    m.sizes()
                )));
            }
            let m =
                m.view(&[bsz, 1, 1, src_len])?.expand(&[bsz, h, 1, src_len]).call()?.reshape(&[bsz * h, 1, src_len])?;
            attn_mask = Some(match attn_mask {
                Some(a) => a.add(&m).call()?,
                None => m,
            });
        }
        let dropout_p = if self.training { self.dropout } else { 0.0 };
        let out_proj_bias = self.out_proj.bias.as_deref();
        if opts.need_weights {
            // See Note [Two attention paths].
            let q_scaled = q.mul(Scalar::Float((1.0 / hd as f64).sqrt()))?;
            let mut w = q_scaled.bmm(&k.transpose(-2, -1)?)?;
            if let Some(m) = &attn_mask {
                w = m.add(&w).call()?;
            }
            let mut w = ops::softmax(&w, -1, None)?;
            if dropout_p > 0.0 {
                w = ops::dropout(&w, dropout_p, true)?;
            }
            let out = w.bmm(&v)?.transpose(0, 1)?.reshape(&[tgt_len * bsz, embed_dim])?;
            let out = ops::linear(&out, &self.out_proj.weight, out_proj_bias)?.view(&[tgt_len, bsz, embed_dim])?;
            let w = w.view(&[bsz, h, tgt_len, src_len])?;
            let w = if opts.average_attn_weights { ops::mean_dim(&w, Some(&[1]), false, None)? } else { w };
            Ok((out, Some(w)))
        } else {
            let attn_mask = match attn_mask {
                Some(m) if m.sizes()[0] == 1 && m.dim() == 3 => Some(m.unsqueeze(0)?),
                Some(m) => Some(m.reshape(&[bsz, h, -1, src_len])?),
                None => None,
            };
            let q = q.reshape(&[bsz, h, tgt_len, hd])?;
            let k = k.reshape(&[bsz, h, src_len, hd])?;
            let v = v.reshape(&[bsz, h, src_len, hd])?;
            let out =
                ops::scaled_dot_product_attention(&q, &k, &v, attn_mask.as_ref(), dropout_p, is_causal, None, false)?;
            let out = out.permute(&[2, 0, 1, 3])?.reshape(&[bsz * tgt_len, embed_dim])?;
            let out = ops::linear(&out, &self.out_proj.weight, out_proj_bias)?.view(&[tgt_len, bsz, embed_dim])?;
            Ok((out, None))
        }
    }
}
