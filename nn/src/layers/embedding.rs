//! Embedding and EmbeddingBag.

use aten::{ops, Tensor};
use c10::{Result, ScalarType};

use crate::init;
use crate::layers::invalid;
use crate::layers::linear::empty;
use crate::module::{Forward, Hooks, Parameter};
use crate::Module;

/// `nn.Embedding(num_embeddings, embedding_dim, padding_idx=None)`: a lookup table initialised
/// from N(0, 1), the `padding_idx` row zeroed (and its gradient always zero).
#[derive(Module, Clone)]
pub struct Embedding {
    /// `(num_embeddings, embedding_dim)`.
    pub weight: Parameter,
    /// `padding_idx`, normalised to a non-negative index.
    pub padding_idx: Option<i64>,
    /// `scale_grad_by_freq`.
    pub scale_grad_by_freq: bool,
    hooks: Hooks,
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
        Ok(Embedding { weight: Parameter::new(w)?, padding_idx, scale_grad_by_freq, hooks: Hooks::default() })
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
            scale_grad_by_freq: false,
            hooks: Hooks::default(),
        })
    }
}

impl Forward for Embedding {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::embedding(&self.weight, x, self.padding_idx.unwrap_or(-1), self.scale_grad_by_freq, false)
    }
}

/// How `EmbeddingBag` reduces each bag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BagMode {
    /// `mode="sum"`.
    Sum,
    /// `mode="mean"` (the default).
    Mean,
    /// `mode="max"`.
    Max,
}

/// `nn.EmbeddingBag(num_embeddings, embedding_dim, mode="mean")`: sums, averages or takes the
/// maximum of the embeddings of each bag without materialising them per bag in the caller.
#[derive(Module, Clone)]
pub struct EmbeddingBag {
    /// `(num_embeddings, embedding_dim)`, N(0, 1).
    pub weight: Parameter,
    /// The reduction.
    #[module(skip)]
    pub mode: BagMode,
    /// `padding_idx`: entries equal to it are left out of their bag.
    pub padding_idx: Option<i64>,
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
        Ok(EmbeddingBag { weight: Parameter::new(w)?, mode, padding_idx })
    }

    /// `forward(input, offsets=None, per_sample_weights=None)`: a 2-D `input` is one bag per
    /// row; a 1-D `input` is split into bags starting at `offsets`. `per_sample_weights`
    /// (mode `Sum` only) scales each embedding.
    pub fn forward_bags(
        &self,
        input: &Tensor,
        offsets: Option<&Tensor>,
        per_sample_weights: Option<&Tensor>,
    ) -> Result<Tensor> {
        if per_sample_weights.is_some() && self.mode != BagMode::Sum {
            return Err(invalid(
                "EmbeddingBag",
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum'",
            ));
        }
        let (flat, starts): (Tensor, Vec<i64>) = match (input.dim(), offsets) {
            (2, None) => {
                let (b, n) = (input.sizes()[0], input.sizes()[1]);
                (input.reshape(&[b * n])?, (0..b).map(|i| i * n).collect())
            }
            (2, Some(_)) => return Err(invalid("EmbeddingBag", "if input is 2D, then offsets has to be None")),
            (1, Some(o)) => (input.clone(), o.to(ScalarType::I64)?.to_vec::<i64>()?),
            (1, None) => return Err(invalid("EmbeddingBag", "offsets has to be a 1D Tensor but got None")),
            (d, _) => {
                return Err(invalid(
                    "EmbeddingBag",
                    format!("input has to be 1D or 2D Tensor, but got Tensor of dimension {d}"),
                ))
            }
        };
        let n = flat.numel();
        let idx = flat.to(ScalarType::I64)?.to_vec::<i64>()?;
        let psw = match per_sample_weights {
            Some(w) => Some(w.reshape(&[n])?),
            None => None,
        };
        let dim = self.weight.sizes()[1];
        let mut bags = Vec::with_capacity(starts.len());
        for (b, &s) in starts.iter().enumerate() {
            let e = starts.get(b + 1).copied().unwrap_or(n);
            if s < 0 || s > e || e > n {
                return Err(invalid(
                    "EmbeddingBag",
                    format!("offsets must be non-decreasing and within the input, got start {s} end {e}"),
                ));
            }
            let keep: Vec<i64> = (s..e).filter(|&i| Some(idx[i as usize]) != self.padding_idx).collect();
            if keep.is_empty() {
                bags.push(ops::zeros(&[dim], Some(self.weight.dtype()), None, None, None)?);
                continue;
            }
            let pos = Tensor::from_vec(keep.clone(), &[keep.len() as i64])?;
            let rows_idx = flat.index_select(0, &pos)?;
            let mut rows = ops::embedding(&self.weight, &rows_idx, -1, false, false)?;
            if let Some(w) = &psw {
                rows = rows.mul(&w.index_select(0, &pos)?.unsqueeze(1)?)?;
            }
            bags.push(match self.mode {
                BagMode::Sum => rows.sum_dim_intlist(Some(&[0]))?,
                BagMode::Mean => rows.mean_dim(Some(&[0]))?,
                BagMode::Max => rows.amax_with(&[0], false)?,
            });
        }
        ops::stack(&bags, 0)
    }
}
