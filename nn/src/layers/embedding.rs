//! Embedding and EmbeddingBag.

use aten::{ops, Tensor};
use c10::{Result, Scalar, ScalarType};

use crate::init;
use crate::layers::invalid;
use crate::layers::linear::empty;
use crate::module::{Forward, Hooks, Parameter};
use crate::Module;

/// `nn.Embedding(num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
/// scale_grad_by_freq=False)`: a lookup table initialised from N(0, 1), the `padding_idx` row
/// zeroed (and its gradient always zero).
#[derive(Module, Clone)]
pub struct Embedding {
    /// `(num_embeddings, embedding_dim)`.
    pub weight: Parameter,
    /// `padding_idx`, normalised to a non-negative index.
    pub padding_idx: Option<i64>,
    /// `max_norm`: before each lookup, the rows looked up whose `norm_type`-norm exceeds it are
    /// rescaled in place to norm `max_norm` (as `torch.embedding_renorm_`).
    pub max_norm: Option<f64>,
    /// `norm_type` of `max_norm` (default 2).
    pub norm_type: f64,
    /// `scale_grad_by_freq`.
    pub scale_grad_by_freq: bool,
    /// `sparse`: the weight's gradient is a sparse COO tensor with one row per lookup (for
    /// `optim::SparseAdam`, SGD and Adagrad).
    pub sparse: bool,
    hooks: Hooks,
}

/// `torch.embedding_renorm_(weight, indices, max_norm, norm_type)`: rescales, in place and
/// without recording history, every row of `weight` that `indices` refers to whose
/// `norm_type`-norm exceeds `max_norm`, by `max_norm / (norm + 1e-7)`.
pub fn embedding_renorm_(weight: &Tensor, indices: &Tensor, max_norm: f64, norm_type: f64) -> Result<()> {
    let _no_grad = autograd::no_grad();
    let num = weight.sizes().first().copied().unwrap_or(0);
    let mut rows = indices.to(ScalarType::I64).call()?.reshape(&[-1])?.to_vec::<i64>()?;
    rows.sort_unstable();
    rows.dedup();
    if let Some(&bad) = rows.iter().find(|&&r| r < 0 || r >= num) {
        return Err(invalid("embedding_renorm_", format!("index {bad} is out of range for {num} embeddings")));
    }
    if rows.is_empty() {
        return Ok(());
    }
    // Index and factor tensors are built on the host and moved to the table's device.
    let dev = weight.device();
    let all = Tensor::from_vec(rows.clone(), &[rows.len() as i64])?.to_device(dev)?;
    let norms = ops::norm_scalaropt_dim(&weight.index_select(0, &all)?, Some(Scalar::Float(norm_type)), &[1], false)?
        .to(ScalarType::F64)
        .call()?
        .to_vec::<f64>()?;
    let (over, factors): (Vec<i64>, Vec<f64>) =
        rows.iter().zip(&norms).filter(|(_, &n)| n > max_norm).map(|(&r, &n)| (r, max_norm / (n + 1e-7))).unzip();
    if over.is_empty() {
        return Ok(());
    }
    let k = over.len() as i64;
    let over = Tensor::from_vec(over, &[k])?.to_device(dev)?;
    let factors = Tensor::from_vec(factors, &[k, 1])?.to(weight.dtype()).call()?.to_device(dev)?;
    let scaled = weight.index_select(0, &over)?.mul(&factors)?;
    weight.index_copy_(0, &over, &scaled)?;
    Ok(())
}

fn normalise_padding_idx(num: i64, padding_idx: Option<i64>) -> Result<Option<i64>> {
    match padding_idx {
        None => Ok(None),
        Some(p) if p >= 0 && p < num => Ok(Some(p)),
        Some(p) if p < 0 && p >= -num => Ok(Some(p + num)),
        Some(_) => Err(invalid("Embedding", "Padding_idx must be within num_embeddings")),
    }
}

impl Embedding {
    /// `Embedding(num_embeddings, embedding_dim)`.
    pub fn new(num_embeddings: i64, embedding_dim: i64) -> Result<Embedding> {
        Embedding::with_options(num_embeddings, embedding_dim, None, false)
    }
    /// `Embedding(num_embeddings, embedding_dim, padding_idx, scale_grad_by_freq=...)`.
    pub fn with_options(
        num_embeddings: i64,
        embedding_dim: i64,
        padding_idx: Option<i64>,
        scale_grad_by_freq: bool,
    ) -> Result<Embedding> {
        let padding_idx = normalise_padding_idx(num_embeddings, padding_idx)?;
        let w = empty(&[num_embeddings, embedding_dim])?;
        init::normal_(&w, 0.0, 1.0)?;
        if let Some(p) = padding_idx {
            init::zeros_(&w.select(0, p)?)?;
        }
        Ok(Embedding {
            weight: Parameter::new(w)?,
            padding_idx,
            max_norm: None,
            norm_type: 2.0,
            scale_grad_by_freq,
            sparse: false,
            hooks: Hooks::default(),
        })
    }
    /// Sets `max_norm` and `norm_type` (PyTorch's `Embedding(..., max_norm=..., norm_type=...)`).
    pub fn with_max_norm(mut self, max_norm: f64, norm_type: f64) -> Embedding {
        self.max_norm = Some(max_norm);
        self.norm_type = norm_type;
        self
    }
    /// `Embedding.from_pretrained(embeddings, freeze=True, padding_idx=None)`.
    pub fn from_pretrained(embeddings: &Tensor, freeze: bool, padding_idx: Option<i64>) -> Result<Embedding> {
        if embeddings.dim() != 2 {
            return Err(invalid("Embedding.from_pretrained", "Embeddings parameter is expected to be 2-dimensional"));
        }
        let padding_idx = normalise_padding_idx(embeddings.sizes()[0], padding_idx)?;
        let w = ops::clone(embeddings, None)?;
        Ok(Embedding {
            weight: Parameter::with_requires_grad(w, !freeze)?,
            padding_idx,
            max_norm: None,
            norm_type: 2.0,
            scale_grad_by_freq: false,
            sparse: false,
            hooks: Hooks::default(),
        })
    }
    /// Sets `sparse` (PyTorch's `Embedding(..., sparse=True)`): the weight's gradient becomes a
    /// sparse COO tensor.
    pub fn with_sparse(mut self, sparse: bool) -> Embedding {
        self.sparse = sparse;
        self
    }
}

impl Forward for Embedding {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(max_norm) = self.max_norm {
            embedding_renorm_(&self.weight, x, max_norm, self.norm_type)?;
        }
        ops::embedding(&self.weight, x, self.padding_idx.unwrap_or(-1), self.scale_grad_by_freq, self.sparse)
    }
}

/// How `EmbeddingBag` reduces each bag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BagMode {
    /// `mode="sum"`.
    Sum,
    /// `mode="mean"` (the default).
    #[default]
    Mean,
    /// `mode="max"`.
    Max,
}

/// The options of [`embedding_bag`] (an [`EmbeddingBag`]'s settings): PyTorch's defaults are
/// `BagOptions::default()`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BagOptions {
    /// The reduction (default `Mean`).
    pub mode: BagMode,
    /// `padding_idx`: entries equal to it are left out of their bag (negative counts from the
    /// end of the table).
    pub padding_idx: Option<i64>,
    /// `max_norm`: rows looked up are first renormalised in place to at most this norm.
    pub max_norm: Option<f64>,
    /// `norm_type` of `max_norm` (default 2).
    pub norm_type: f64,
    /// `include_last_offset`: `offsets` has one entry more than there are bags (CSR layout).
    pub include_last_offset: bool,
    /// `sparse`: `weight`'s gradient is a sparse COO tensor, one row per kept entry.
    pub sparse: bool,
}

impl Default for BagOptions {
    fn default() -> BagOptions {
        BagOptions {
            mode: BagMode::Mean,
            padding_idx: None,
            max_norm: None,
            norm_type: 2.0,
            include_last_offset: false,
            sparse: false,
        }
    }
}

/// `nn.EmbeddingBag(num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, mode="mean",
/// include_last_offset=False, padding_idx=None)`: sums, averages or takes the maximum of the
/// embeddings of each bag without materialising them per bag in the caller. An empty bag gives
/// zeros.
#[derive(Module, Clone)]
pub struct EmbeddingBag {
    /// `(num_embeddings, embedding_dim)`, N(0, 1).
    pub weight: Parameter,
    /// The reduction.
    #[module(skip)]
    pub mode: BagMode,
    /// `padding_idx`: entries equal to it are left out of their bag.
    pub padding_idx: Option<i64>,
    /// `max_norm`, as for [`Embedding`].
    pub max_norm: Option<f64>,
    /// `norm_type` of `max_norm` (default 2).
    pub norm_type: f64,
    /// `include_last_offset`: `offsets` has one entry more than there are bags, the last one
    /// ending the last bag (the CSR layout).
    pub include_last_offset: bool,
    /// `sparse`: the weight's gradient is a sparse COO tensor (for `optim::SparseAdam`).
    pub sparse: bool,
}

impl EmbeddingBag {
    /// `EmbeddingBag(num_embeddings, embedding_dim, mode=mode)`.
    pub fn new(num_embeddings: i64, embedding_dim: i64, mode: BagMode) -> Result<EmbeddingBag> {
        EmbeddingBag::with_padding_idx(num_embeddings, embedding_dim, mode, None)
    }
    /// With a `padding_idx`.
    pub fn with_padding_idx(
        num_embeddings: i64,
        embedding_dim: i64,
        mode: BagMode,
        padding_idx: Option<i64>,
    ) -> Result<EmbeddingBag> {
        let padding_idx = normalise_padding_idx(num_embeddings, padding_idx)?;
        let w = empty(&[num_embeddings, embedding_dim])?;
        init::normal_(&w, 0.0, 1.0)?;
        if let Some(p) = padding_idx {
            init::zeros_(&w.select(0, p)?)?;
        }
        Ok(EmbeddingBag {
            weight: Parameter::new(w)?,
            mode,
            padding_idx,
            max_norm: None,
            norm_type: 2.0,
            include_last_offset: false,
            sparse: false,
        })
    }
    /// Sets `sparse` (PyTorch's `EmbeddingBag(..., sparse=True)`).
    pub fn with_sparse(mut self, sparse: bool) -> EmbeddingBag {
        self.sparse = sparse;
        self
    }
    /// Sets `include_last_offset`.
    pub fn with_include_last_offset(mut self, include_last_offset: bool) -> EmbeddingBag {
        self.include_last_offset = include_last_offset;
        self
    }
    /// Sets `max_norm` and `norm_type`.
    pub fn with_max_norm(mut self, max_norm: f64, norm_type: f64) -> EmbeddingBag {
        self.max_norm = Some(max_norm);
        self.norm_type = norm_type;
        self
    }

    /// `forward(input, offsets=None, per_sample_weights=None)`: a 2-D `input` is one bag per
    /// row; a 1-D `input` is split into bags starting at `offsets`. `per_sample_weights`
    /// (mode `Sum` only) scales each embedding.
    ///
    /// Every kept entry is looked up once; `Sum` and `Mean` then add the rows into their bags
    /// with one `index_add`, `Max` reduces each bag's (contiguous) rows.
    pub fn forward_bags(
        &self,
        input: &Tensor,
        offsets: Option<&Tensor>,
        per_sample_weights: Option<&Tensor>,
    ) -> Result<Tensor> {
        let options = BagOptions {
            mode: self.mode,
            padding_idx: self.padding_idx,
            max_norm: self.max_norm,
            norm_type: self.norm_type,
            include_last_offset: self.include_last_offset,
            sparse: self.sparse,
        };
        embedding_bag(&self.weight, input, offsets, per_sample_weights, &options)
    }
}

/// `F.embedding_bag(input, weight, offsets, per_sample_weights=..., mode=..., ...)`: sums,
/// averages or takes the maximum of the rows of `weight` looked up by each bag of `input`
/// without materialising them per bag in the caller; an empty bag gives zeros. A 2-D `input`
/// is one bag per row; a 1-D `input` is split into bags starting at `offsets`.
/// `per_sample_weights` (mode `Sum` only) scales each embedding.
///
/// The bags are computed by aten's `embedding_bag.padding_idx` (what PyTorch's traced and
/// scripted `EmbeddingBag`s call).
pub fn embedding_bag(
    weight: &Tensor,
    input: &Tensor,
    offsets: Option<&Tensor>,
    per_sample_weights: Option<&Tensor>,
    options: &BagOptions,
) -> Result<Tensor> {
    if weight.dim() != 2 {
        return Err(invalid(
            "EmbeddingBag",
            format!("weight has to be a 2D Tensor, but got Tensor of dimension {}", weight.dim()),
        ));
    }
    let padding_idx = normalise_padding_idx(weight.sizes()[0], options.padding_idx)?;
    let op = "EmbeddingBag";
    if per_sample_weights.is_some() && options.mode != BagMode::Sum {
        return Err(invalid(
            op,
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum'",
        ));
    }
    // A 2-D input is one bag per row: PyTorch's F.embedding_bag flattens it with offsets of
    // its row starts (ignoring include_last_offset).
    let (flat, offsets, include_last_offset) = match (input.dim(), offsets) {
        (2, None) => {
            let (b, n) = (input.sizes()[0], input.sizes()[1]);
            let starts = Tensor::from_vec((0..b).map(|i| i * n).collect(), &[b])?.to_device(weight.device())?;
            (input.reshape(&[b * n])?, starts, false)
        }
        (2, Some(_)) => return Err(invalid(op, "if input is 2D, then offsets has to be None")),
        (1, Some(o)) => (input.clone(), o.clone(), options.include_last_offset),
        (1, None) => return Err(invalid(op, "offsets has to be a 1D Tensor but got None")),
        (d, _) => return Err(invalid(op, format!("input has to be 1D or 2D Tensor, but got Tensor of dimension {d}"))),
    };
    if let Some(max_norm) = options.max_norm {
        embedding_renorm_(weight, &flat, max_norm, options.norm_type)?;
    }
    let mode = match options.mode {
        BagMode::Sum => 0,
        BagMode::Mean => 1,
        BagMode::Max => 2,
    };
    let (out, ..) = ops::embedding_bag_padding_idx(
        weight,
        &flat,
        &offsets,
        false,
        mode,
        options.sparse,
        per_sample_weights,
        include_last_offset,
        padding_idx,
    )?;
    Ok(out)
}
