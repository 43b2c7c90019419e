//! The transformer layers of PyTorch's `torch/nn/modules/transformer.py`:
//! `TransformerEncoderLayer`, `TransformerDecoderLayer`, the stacks `TransformerEncoder` /
//! `TransformerDecoder`, and the full encoder-decoder `Transformer`.
//!
//! PyTorch's inference fast paths (`_transformer_encoder_layer_fwd`, nested tensors) are not
//! reproduced; they compute the same values as the plain path written here, except that
//! PyTorch's `TransformerEncoder` fast path (eval mode, no grad, with `src_key_padding_mask`)
//! returns zeros at padded positions, where this module returns the plain path's values.

use aten::{ops, Tensor};
use c10::{Result, Scalar, ScalarType};

use crate::init;
use crate::layers::attention::{AttentionOptions, MultiheadAttention, MultiheadAttentionOptions};
use crate::layers::invalid;
use crate::layers::{Dropout, LayerNorm, Linear};
use crate::module::{Forward, Hooks, Member, MemberMut, Members};
use crate::Module;

/// The feed-forward activation of the transformer layers (`activation="relu"` or `"gelu"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TransformerActivation {
    /// `F.relu` (the default).
    #[default]
    Relu,
    /// `F.gelu` (exact, erf form).
    Gelu,
}

impl TransformerActivation {
    /// Parses PyTorch's activation string.
    pub fn from_name(name: &str) -> Result<TransformerActivation> {
        match name {
            "relu" => Ok(TransformerActivation::Relu),
            "gelu" => Ok(TransformerActivation::Gelu),
            other => Err(invalid("TransformerEncoderLayer", format!("activation should be relu/gelu, not {other}"))),
        }
    }

    fn apply(self, x: &Tensor) -> Result<Tensor> {
        match self {
            TransformerActivation::Relu => ops::relu(x),
            TransformerActivation::Gelu => ops::gelu(x, "none"),
        }
    }
}

impl Members for TransformerActivation {
    fn members<'a>(&'a self, _: &str, _: &mut dyn FnMut(&str, Member<'a>)) {}
    fn members_mut<'a>(&'a mut self, _: &str, _: &mut dyn FnMut(&str, MemberMut<'a>)) {}
}

/// The constructor arguments of the encoder and decoder layers beyond `d_model` and `nhead`,
/// with PyTorch's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct TransformerLayerOptions {
    /// `dim_feedforward` (default 2048).
    pub dim_feedforward: i64,
    /// `dropout` (default 0.1).
    pub dropout: f64,
    /// `activation` (default relu).
    pub activation: TransformerActivation,
    /// `layer_norm_eps` (default 1e-5).
    pub layer_norm_eps: f64,
    /// `batch_first` (default false): `(N, L, E)` instead of `(L, N, E)`.
    pub batch_first: bool,
    /// `norm_first` (default false): pre-norm (`x + f(norm(x))`) instead of post-norm
    /// (`norm(x + f(x))`).
    pub norm_first: bool,
    /// `bias` (default true): biases of the linear layers and LayerNorms.
    pub bias: bool,
}

impl Default for TransformerLayerOptions {
    fn default() -> Self {
        TransformerLayerOptions {
            dim_feedforward: 2048,
            dropout: 0.1,
            activation: TransformerActivation::Relu,
            layer_norm_eps: 1e-5,
            batch_first: false,
            norm_first: false,
            bias: true,
        }
    }
}

impl TransformerLayerOptions {
    /// Sets `dim_feedforward`.
    pub fn dim_feedforward(mut self, d: i64) -> Self {
        self.dim_feedforward = d;
        self
    }
    /// Sets `dropout`.
    pub fn dropout(mut self, p: f64) -> Self {
        self.dropout = p;
        self
    }
    /// Sets `activation`.
    pub fn activation(mut self, a: TransformerActivation) -> Self {
        self.activation = a;
        self
    }
    /// Sets `layer_norm_eps`.
    pub fn layer_norm_eps(mut self, eps: f64) -> Self {
        self.layer_norm_eps = eps;
        self
    }
    /// Sets `batch_first`.
    pub fn batch_first(mut self, b: bool) -> Self {
        self.batch_first = b;
        self
    }
    /// Sets `norm_first`.
    pub fn norm_first(mut self, b: bool) -> Self {
        self.norm_first = b;
        self
    }
    /// Sets `bias`.
    pub fn bias(mut self, b: bool) -> Self {
        self.bias = b;
        self
    }
}

/// The masks and causal hints of the decoder side (and, for [`Transformer`], the encoder
/// side), PyTorch's keyword arguments. All default to `None` / `false`.
///
/// `*_is_causal: None` (the default of the stacks) lets [`TransformerEncoder`] /
/// [`TransformerDecoder`] detect a causal mask; the single layers read it as `false`.
#[derive(Clone, Copy, Debug, Default)]
pub struct TransformerMasks<'a> {
    /// `src_mask` (`mask` of the encoder): `(S, S)` or `(N * nhead, S, S)`.
    pub src_mask: Option<&'a Tensor>,
    /// `src_key_padding_mask`: `(N, S)`.
    pub src_key_padding_mask: Option<&'a Tensor>,
    /// `src_is_causal`.
    pub src_is_causal: Option<bool>,
    /// `tgt_mask`: `(T, T)` or `(N * nhead, T, T)`.
    pub tgt_mask: Option<&'a Tensor>,
    /// `memory_mask`: `(T, S)` or `(N * nhead, T, S)`.
    pub memory_mask: Option<&'a Tensor>,
    /// `tgt_key_padding_mask`: `(N, T)`.
    pub tgt_key_padding_mask: Option<&'a Tensor>,
    /// `memory_key_padding_mask`: `(N, S)`.
    pub memory_key_padding_mask: Option<&'a Tensor>,
    /// `tgt_is_causal`.
    pub tgt_is_causal: Option<bool>,
    /// `memory_is_causal`.
    pub memory_is_causal: bool,
}

/// Copies a module with fresh parameter storage (PyTorch's `copy.deepcopy`; `Clone` on a module
/// shares its parameters).
fn deep_copy<M: Module + Clone>(m: &M) -> Result<M> {
    let mut c = m.clone();
    c.apply_tensors(&mut |t| ops::clone(t, None))?;
    Ok(c)
}

fn self_attention(d_model: i64, nhead: i64, o: &TransformerLayerOptions) -> Result<MultiheadAttention> {
    MultiheadAttention::with_options(
        d_model,
        nhead,
        &MultiheadAttentionOptions::default().dropout(o.dropout).bias(o.bias).batch_first(o.batch_first),
    )
}

/// One attention sub-block: `dropout(attn(x, mem, mem, mask, key_padding_mask))`.
fn attention_block(
    attn: &MultiheadAttention,
    drop: &Dropout,
    x: &Tensor,
    mem: &Tensor,
    mask: Option<&Tensor>,
    key_padding_mask: Option<&Tensor>,
    is_causal: bool,
) -> Result<Tensor> {
    let opts = AttentionOptions {
        key_padding_mask,
        need_weights: false,
        attn_mask: mask,
        average_attn_weights: true,
        is_causal,
    };
    let (y, _) = attn.forward_with(x, mem, mem, &opts)?;
    drop.call(&y)
}

/// `dropout_out(linear2(dropout(activation(linear1(x)))))`.
fn feed_forward(
    linear1: &Linear,
    linear2: &Linear,
    act: TransformerActivation,
    dropout: &Dropout,
    dropout_out: &Dropout,
    x: &Tensor,
) -> Result<Tensor> {
    let y = act.apply(&linear1.call(x)?)?;
    let y = linear2.call(&dropout.call(&y)?)?;
    dropout_out.call(&y)
}

/// `nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1,
/// activation=relu, layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True)`:
/// self-attention then a feed-forward block, each with a residual connection and LayerNorm.
///
/// Children (PyTorch's names): `self_attn`, `linear1`, `dropout`, `linear2`, `norm1`, `norm2`,
/// `dropout1`, `dropout2`. `forward` (the [`Forward`] trait) runs without masks;
/// [`forward_with`](Self::forward_with) takes them.
///
/// ```
/// use nn::{Forward, TransformerEncoderLayer, TransformerLayerOptions};
/// aten::manual_seed(0);
/// let layer = TransformerEncoderLayer::with_options(8, 2, &TransformerLayerOptions::default().dim_feedforward(16)).unwrap();
/// let src = aten::ops::randn(&[5, 2, 8], None, None, None, None).unwrap();
/// assert_eq!(layer.call(&src).unwrap().sizes(), &[5, 2, 8]);
/// ```
#[derive(Module, Clone)]
pub struct TransformerEncoderLayer {
    /// Self-attention.
    pub self_attn: MultiheadAttention,
    /// `d_model -> dim_feedforward`.
    pub linear1: Linear,
    /// Dropout inside the feed-forward block.
    pub dropout: Dropout,
    /// `dim_feedforward -> d_model`.
    pub linear2: Linear,
    /// `norm_first`.
    pub norm_first: bool,
    /// LayerNorm of the attention block.
    pub norm1: LayerNorm,
    /// LayerNorm of the feed-forward block.
    pub norm2: LayerNorm,
    /// Dropout after self-attention.
    pub dropout1: Dropout,
    /// Dropout after the feed-forward block.
    pub dropout2: Dropout,
    /// The feed-forward activation.
    pub activation: TransformerActivation,
    training: bool,
    hooks: Hooks,
}

impl TransformerEncoderLayer {
    /// `TransformerEncoderLayer(d_model, nhead)` with PyTorch's defaults.
    pub fn new(d_model: i64, nhead: i64) -> Result<TransformerEncoderLayer> {
        TransformerEncoderLayer::with_options(d_model, nhead, &TransformerLayerOptions::default())
    }

    /// `TransformerEncoderLayer(d_model, nhead, **opts)`. The children are built (and draw
    /// their random initial values) in PyTorch's order.
    pub fn with_options(d_model: i64, nhead: i64, o: &TransformerLayerOptions) -> Result<TransformerEncoderLayer> {
        let norm = || LayerNorm::with_options(&[d_model], o.layer_norm_eps, true, o.bias);
        Ok(TransformerEncoderLayer {
            self_attn: self_attention(d_model, nhead, o)?,
            linear1: Linear::with_bias(d_model, o.dim_feedforward, o.bias)?,
            dropout: Dropout::new(o.dropout)?,
            linear2: Linear::with_bias(o.dim_feedforward, d_model, o.bias)?,
            norm_first: o.norm_first,
            norm1: norm()?,
            norm2: norm()?,
            dropout1: Dropout::new(o.dropout)?,
            dropout2: Dropout::new(o.dropout)?,
            activation: o.activation,
            training: true,
            hooks: Hooks::default(),
        })
    }

    /// `layer(src, src_mask, src_key_padding_mask, is_causal)`: `src` `(S, N, E)` (`(N, S, E)`
    /// if `batch_first`, `(S, E)` unbatched); `src_mask` `(S, S)` or `(N * nhead, S, S)`;
    /// `src_key_padding_mask` `(N, S)`. Boolean masks are `true` where attention is not
    /// allowed, float masks are added.
    pub fn forward_with(
        &self,
        src: &Tensor,
        src_mask: Option<&Tensor>,
        src_key_padding_mask: Option<&Tensor>,
        is_causal: bool,
    ) -> Result<Tensor> {
        let sa = |x: &Tensor| {
            attention_block(&self.self_attn, &self.dropout1, x, x, src_mask, src_key_padding_mask, is_causal)
        };
        let ff =
            |x: &Tensor| feed_forward(&self.linear1, &self.linear2, self.activation, &self.dropout, &self.dropout2, x);
        if self.norm_first {
            let x = src.add(&sa(&self.norm1.call(src)?)?).call()?;
            x.add(&ff(&self.norm2.call(&x)?)?).call()
        } else {
            let x = self.norm1.call(&src.add(&sa(src)?).call()?)?;
            self.norm2.call(&x.add(&ff(&x)?).call()?)
        }
    }
}

impl Forward for TransformerEncoderLayer {
    fn forward(&self, src: &Tensor) -> Result<Tensor> {
        self.forward_with(src, None, None, false)
    }
}

/// `nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1,
/// activation=relu, layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True)`:
/// self-attention, attention over the encoder's memory, and a feed-forward block.
///
/// Children (PyTorch's names): `self_attn`, `multihead_attn`, `linear1`, `dropout`, `linear2`,
/// `norm1`, `norm2`, `norm3`, `dropout1`, `dropout2`, `dropout3`.
///
/// ```
/// use nn::{TransformerDecoderLayer, TransformerLayerOptions};
/// aten::manual_seed(0);
/// let layer = TransformerDecoderLayer::with_options(8, 2, &TransformerLayerOptions::default().dim_feedforward(16)).unwrap();
/// let tgt = aten::ops::randn(&[4, 2, 8], None, None, None, None).unwrap();
/// let memory = aten::ops::randn(&[6, 2, 8], None, None, None, None).unwrap();
/// assert_eq!(layer.forward(&tgt, &memory).unwrap().sizes(), &[4, 2, 8]);
/// ```
#[derive(Module, Clone)]
pub struct TransformerDecoderLayer {
    /// Self-attention over the target.
    pub self_attn: MultiheadAttention,
    /// Attention from the target to the memory.
    pub multihead_attn: MultiheadAttention,
    /// `d_model -> dim_feedforward`.
    pub linear1: Linear,
    /// Dropout inside the feed-forward block.
    pub dropout: Dropout,
    /// `dim_feedforward -> d_model`.
    pub linear2: Linear,
    /// `norm_first`.
    pub norm_first: bool,
    /// LayerNorm of the self-attention block.
    pub norm1: LayerNorm,
    /// LayerNorm of the memory-attention block.
    pub norm2: LayerNorm,
    /// LayerNorm of the feed-forward block.
    pub norm3: LayerNorm,
    /// Dropout after self-attention.
    pub dropout1: Dropout,
    /// Dropout after memory attention.
    pub dropout2: Dropout,
    /// Dropout after the feed-forward block.
    pub dropout3: Dropout,
    /// The feed-forward activation.
    pub activation: TransformerActivation,
    training: bool,
}

impl TransformerDecoderLayer {
    /// `TransformerDecoderLayer(d_model, nhead)` with PyTorch's defaults.
    pub fn new(d_model: i64, nhead: i64) -> Result<TransformerDecoderLayer> {
        TransformerDecoderLayer::with_options(d_model, nhead, &TransformerLayerOptions::default())
    }

    /// `TransformerDecoderLayer(d_model, nhead, **opts)`, built in PyTorch's order.
    pub fn with_options(d_model: i64, nhead: i64, o: &TransformerLayerOptions) -> Result<TransformerDecoderLayer> {
        let norm = || LayerNorm::with_options(&[d_model], o.layer_norm_eps, true, o.bias);
        Ok(TransformerDecoderLayer {
            self_attn: self_attention(d_model, nhead, o)?,
            multihead_attn: self_attention(d_model, nhead, o)?,
            linear1: Linear::with_bias(d_model, o.dim_feedforward, o.bias)?,
            dropout: Dropout::new(o.dropout)?,
            linear2: Linear::with_bias(o.dim_feedforward, d_model, o.bias)?,
            norm_first: o.norm_first,
            norm1: norm()?,
            norm2: norm()?,
            norm3: norm()?,
            dropout1: Dropout::new(o.dropout)?,
            dropout2: Dropout::new(o.dropout)?,
            dropout3: Dropout::new(o.dropout)?,
            activation: o.activation,
            training: true,
        })
    }

    /// `layer(tgt, memory)` without masks.
    pub fn forward(&self, tgt: &Tensor, memory: &Tensor) -> Result<Tensor> {
        self.forward_with(tgt, memory, &TransformerMasks::default())
    }

    /// `layer(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
    /// memory_key_padding_mask, tgt_is_causal, memory_is_causal)` (the `src_*` fields of
    /// `masks` are ignored). `tgt` `(T, N, E)`, `memory` `(S, N, E)` (batch first if
    /// `batch_first`).
    pub fn forward_with(&self, tgt: &Tensor, memory: &Tensor, masks: &TransformerMasks) -> Result<Tensor> {
        let tgt_causal = masks.tgt_is_causal.unwrap_or(false);
        let sa = |x: &Tensor| {
            attention_block(
                &self.self_attn,
                &self.dropout1,
                x,
                x,
                masks.tgt_mask,
                masks.tgt_key_padding_mask,
                tgt_causal,
            )
        };
        let mha = |x: &Tensor| {
            attention_block(
                &self.multihead_attn,
                &self.dropout2,
                x,
                memory,
                masks.memory_mask,
                masks.memory_key_padding_mask,
                masks.memory_is_causal,
            )
        };
        let ff =
            |x: &Tensor| feed_forward(&self.linear1, &self.linear2, self.activation, &self.dropout, &self.dropout3, x);
        if self.norm_first {
            let x = tgt.add(&sa(&self.norm1.call(tgt)?)?).call()?;
            let x = x.add(&mha(&self.norm2.call(&x)?)?).call()?;
            x.add(&ff(&self.norm3.call(&x)?)?).call()
        } else {
            let x = self.norm1.call(&tgt.add(&sa(tgt)?).call()?)?;
            let x = self.norm2.call(&x.add(&mha(&x)?).call()?)?;
            self.norm3.call(&x.add(&ff(&x)?).call()?)
        }
    }
}

/// PyTorch's `_detect_is_causal_mask`: an explicit hint wins; otherwise a mask equal to
/// `generate_square_subsequent_mask(seq_len)` counts as causal. (The flag only selects a faster
/// path in attention; the values are the same either way.)
fn detect_is_causal(mask: Option<&Tensor>, is_causal: Option<bool>, seq_len: i64) -> Result<bool> {
    match (is_causal, mask) {
        (Some(flag), _) => Ok(flag),
        (None, Some(m)) if m.sizes() == [seq_len, seq_len] => {
            let dtype = if m.dtype() == ScalarType::Bool { ScalarType::F32 } else { m.dtype() };
            let causal = Transformer::generate_square_subsequent_mask_with(seq_len, dtype)?;
            let m = if m.dtype() == ScalarType::Bool {
                ops::masked_fill(
                    &ops::zeros(m.sizes(), Some(dtype), None, None, None)?,
                    m,
                    Scalar::Float(f64::NEG_INFINITY),
                )?
            } else {
                m.clone()
            };
            Ok(m.eq(&causal)?.all().call()?.item::<bool>()?)
        }
        _ => Ok(false),
    }
}

fn seq_len(x: &Tensor, batch_first: bool) -> i64 {
    if x.dim() == 2 || !batch_first {
        x.sizes()[0]
    } else {
        x.sizes()[1]
    }
}

/// `nn.TransformerEncoder(encoder_layer, num_layers, norm=None)`: `num_layers` deep copies of
/// `encoder_layer` (`layers.0`, `layers.1`, ...; all start from the same weights, as in
/// PyTorch), then the optional final `norm`.
///
/// ```
/// use nn::{Forward, Module, TransformerEncoder, TransformerEncoderLayer, TransformerLayerOptions};
/// aten::manual_seed(0);
/// let layer = TransformerEncoderLayer::with_options(8, 2, &TransformerLayerOptions::default().dim_feedforward(16)).unwrap();
/// let enc = TransformerEncoder::new(&layer, 2, None).unwrap();
/// assert_eq!(enc.state_dict().keys().next(), Some("layers.0.self_attn.in_proj_weight"));
/// let src = aten::ops::randn(&[5, 2, 8], None, None, None, None).unwrap();
/// assert_eq!(enc.call(&src).unwrap().sizes(), &[5, 2, 8]);
/// ```
#[derive(Module, Clone)]
pub struct TransformerEncoder {
    /// The layers.
    pub layers: Vec<TransformerEncoderLayer>,
    /// The final LayerNorm, if any.
    pub norm: Option<LayerNorm>,
    hooks: Hooks,
}

impl TransformerEncoder {
    /// `TransformerEncoder(encoder_layer, num_layers, norm)`.
    pub fn new(
        encoder_layer: &TransformerEncoderLayer,
        num_layers: i64,
        norm: Option<LayerNorm>,
    ) -> Result<TransformerEncoder> {
        let layers = (0..num_layers).map(|_| deep_copy(encoder_layer)).collect::<Result<Vec<_>>>()?;
        Ok(TransformerEncoder { layers, norm, hooks: Hooks::default() })
    }

    /// `encoder(src, mask, src_key_padding_mask, is_causal)`, shapes as in
    /// [`TransformerEncoderLayer::forward_with`]; `is_causal: None` detects a causal `mask`.
    pub fn forward_with(
        &self,
        src: &Tensor,
        mask: Option<&Tensor>,
        src_key_padding_mask: Option<&Tensor>,
        is_causal: Option<bool>,
    ) -> Result<Tensor> {
        let batch_first = self.layers.first().is_some_and(|l| l.self_attn.batch_first);
        let is_causal = detect_is_causal(mask, is_causal, seq_len(src, batch_first))?;
        let mut x = src.clone();
        for layer in &self.layers {
            x = layer.forward_with(&x, mask, src_key_padding_mask, is_causal)?;
        }
        match &self.norm {
            Some(n) => n.call(&x),
            None => Ok(x),
        }
    }
}

impl Forward for TransformerEncoder {
    fn forward(&self, src: &Tensor) -> Result<Tensor> {
        self.forward_with(src, None, None, None)
    }
}

/// `nn.TransformerDecoder(decoder_layer, num_layers, norm=None)`: `num_layers` deep copies of
/// `decoder_layer` (`layers.0`, ...), then the optional final `norm`.
#[derive(Module, Clone)]
pub struct TransformerDecoder {
    /// The layers.
    pub layers: Vec<TransformerDecoderLayer>,
    /// The final LayerNorm, if any.
    pub norm: Option<LayerNorm>,
}

impl TransformerDecoder {
    /// `TransformerDecoder(decoder_layer, num_layers, norm)`.
    pub fn new(
        decoder_layer: &TransformerDecoderLayer,
        num_layers: i64,
        norm: Option<LayerNorm>,
    ) -> Result<TransformerDecoder> {
        let layers = (0..num_layers).map(|_| deep_copy(decoder_layer)).collect::<Result<Vec<_>>>()?;
        Ok(TransformerDecoder { layers, norm })
    }

    /// `decoder(tgt, memory)` without masks.
    pub fn forward(&self, tgt: &Tensor, memory: &Tensor) -> Result<Tensor> {
        self.forward_with(tgt, memory, &TransformerMasks::default())
    }

    /// `decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
    /// memory_key_padding_mask, tgt_is_causal, memory_is_causal)` (the `src_*` fields of
    /// `masks` are ignored); `tgt_is_causal: None` detects a causal `tgt_mask`.
    pub fn forward_with(&self, tgt: &Tensor, memory: &Tensor, masks: &TransformerMasks) -> Result<Tensor> {
        let batch_first = self.layers.first().is_some_and(|l| l.self_attn.batch_first);
        let tgt_is_causal = detect_is_causal(masks.tgt_mask, masks.tgt_is_causal, seq_len(tgt, batch_first))?;
        let masks = TransformerMasks { tgt_is_causal: Some(tgt_is_causal), ..*masks };
        let mut x = tgt.clone();
        for layer in &self.layers {
            x = layer.forward_with(&x, memory, &masks)?;
        }
        match &self.norm {
            Some(n) => n.call(&x),
            None => Ok(x),
        }
    }
}

/// The constructor arguments of [`Transformer`], with PyTorch's defaults
/// (`d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
/// dropout=0.1, activation=relu, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
/// bias=True`).
#[derive(Clone, Debug, PartialEq)]
pub struct TransformerOptions {
    /// `d_model`.
    pub d_model: i64,
    /// `nhead`.
    pub nhead: i64,
    /// `num_encoder_layers`.
    pub num_encoder_layers: i64,
    /// `num_decoder_layers`.
    pub num_decoder_layers: i64,
    /// The per-layer arguments (`dim_feedforward`, `dropout`, `activation`, `layer_norm_eps`,
    /// `batch_first`, `norm_first`, `bias`).
    pub layer: TransformerLayerOptions,
}

impl Default for TransformerOptions {
    fn default() -> Self {
        TransformerOptions {
            d_model: 512,
            nhead: 8,
            num_encoder_layers: 6,
            num_decoder_layers: 6,
            layer: TransformerLayerOptions::default(),
        }
    }
}

impl TransformerOptions {
    /// Sets `d_model`.
    pub fn d_model(mut self, d: i64) -> Self {
        self.d_model = d;
        self
    }
    /// Sets `nhead`.
    pub fn nhead(mut self, n: i64) -> Self {
        self.nhead = n;
        self
    }
    /// Sets `num_encoder_layers`.
    pub fn num_encoder_layers(mut self, n: i64) -> Self {
        self.num_encoder_layers = n;
        self
    }
    /// Sets `num_decoder_layers`.
    pub fn num_decoder_layers(mut self, n: i64) -> Self {
        self.num_decoder_layers = n;
        self
    }
    /// Sets the per-layer arguments.
    pub fn layer(mut self, layer: TransformerLayerOptions) -> Self {
        self.layer = layer;
        self
    }
}

/// `nn.Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
/// dim_feedforward=2048, dropout=0.1, activation=relu, layer_norm_eps=1e-5, batch_first=False,
/// norm_first=False, bias=True)`: a [`TransformerEncoder`] (`encoder`, with `encoder.norm`) and
/// a [`TransformerDecoder`] (`decoder`, with `decoder.norm`). After construction every parameter
/// with more than one dimension is re-drawn xavier-uniform, in `parameters()` order, as PyTorch
/// does.
///
/// ```
/// use nn::{Module, Transformer, TransformerLayerOptions, TransformerOptions};
/// aten::manual_seed(0);
/// let opts = TransformerOptions::default().d_model(8).nhead(2).num_encoder_layers(1).num_decoder_layers(1)
///     .layer(TransformerLayerOptions::default().dim_feedforward(16));
/// let model = Transformer::with_options(&opts).unwrap();
/// let src = aten::ops::randn(&[5, 2, 8], None, None, None, None).unwrap();
/// let tgt = aten::ops::randn(&[3, 2, 8], None, None, None, None).unwrap();
/// assert_eq!(model.forward(&src, &tgt).unwrap().sizes(), &[3, 2, 8]);
/// let mask = Transformer::generate_square_subsequent_mask(3).unwrap();
/// assert_eq!(mask.to_vec::<f32>().unwrap()[1], f32::NEG_INFINITY);
/// ```
#[derive(Module, Clone)]
pub struct Transformer {
    /// The encoder stack.
    pub encoder: TransformerEncoder,
    /// The decoder stack.
    pub decoder: TransformerDecoder,
    /// `d_model`.
    pub d_model: i64,
    /// `nhead`.
    pub nhead: i64,
    /// `batch_first`.
    pub batch_first: bool,
}

impl Transformer {
    /// `Transformer()` with PyTorch's defaults.
    pub fn new() -> Result<Transformer> {
        Transformer::with_options(&TransformerOptions::default())
    }

    /// `Transformer(**opts)`.
    pub fn with_options(o: &TransformerOptions) -> Result<Transformer> {
        let l = &o.layer;
        let norm = || LayerNorm::with_options(&[o.d_model], l.layer_norm_eps, true, l.bias);
        let enc_layer = TransformerEncoderLayer::with_options(o.d_model, o.nhead, l)?;
        let encoder = TransformerEncoder::new(&enc_layer, o.num_encoder_layers, Some(norm()?))?;
        let dec_layer = TransformerDecoderLayer::with_options(o.d_model, o.nhead, l)?;
        let decoder = TransformerDecoder::new(&dec_layer, o.num_decoder_layers, Some(norm()?))?;
        let t = Transformer { encoder, decoder, d_model: o.d_model, nhead: o.nhead, batch_first: l.batch_first };
        for p in t.parameters() {
            if p.dim() > 1 {
                init::xavier_uniform_(&p, 1.0)?;
            }
        }
        Ok(t)
    }

    /// `transformer(src, tgt)` without masks.
    pub fn forward(&self, src: &Tensor, tgt: &Tensor) -> Result<Tensor> {
        self.forward_with(src, tgt, &TransformerMasks::default())
    }

    /// `transformer(src, tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask,
    /// tgt_key_padding_mask, memory_key_padding_mask, src_is_causal, tgt_is_causal,
    /// memory_is_causal)`: `src` `(S, N, E)`, `tgt` `(T, N, E)` (batch first if `batch_first`,
    /// no batch dimension unbatched); returns `(T, N, E)`.
    pub fn forward_with(&self, src: &Tensor, tgt: &Tensor, masks: &TransformerMasks) -> Result<Tensor> {
        let batched = src.dim() == 3;
        let bdim = if self.batch_first { 0 } else { 1 };
        if batched && (tgt.dim() != 3 || src.sizes()[bdim] != tgt.sizes()[bdim]) {
            return Err(invalid("Transformer", "the batch number of src and tgt must be equal"));
        }
        if src.sizes().last() != Some(&self.d_model) || tgt.sizes().last() != Some(&self.d_model) {
            return Err(invalid("Transformer", "the feature number of src and tgt must be equal to d_model"));
        }
        let memory = self.encoder.forward_with(src, masks.src_mask, masks.src_key_padding_mask, masks.src_is_causal)?;
        self.decoder.forward_with(tgt, &memory, masks)
    }

    /// `Transformer.generate_square_subsequent_mask(sz)`: `(sz, sz)` float mask, `-inf` above
    /// the diagonal and 0 elsewhere (the default dtype).
    pub fn generate_square_subsequent_mask(sz: i64) -> Result<Tensor> {
        let full = ops::full(&[sz, sz], Scalar::Float(f64::NEG_INFINITY), None, None, None, None)?;
        ops::triu(&full, 1)
    }

    /// [`generate_square_subsequent_mask`](Self::generate_square_subsequent_mask) in `dtype`.
    pub fn generate_square_subsequent_mask_with(sz: i64, dtype: ScalarType) -> Result<Tensor> {
        let full = ops::full(&[sz, sz], Scalar::Float(f64::NEG_INFINITY), Some(dtype), None, None, None)?;
        ops::triu(&full, 1)
    }
}
