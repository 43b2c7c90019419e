//! The parts of a sparse tensor (PyTorch's `SparseTensorImpl` and `SparseCsrTensorImpl`).
//!
//! Note [Sparse tensors]: a sparse tensor is a `TensorImpl` like any other (one `Tensor`
//! handle, one autograd slot, one version counter) whose key set holds the `Sparse` or
//! `SparseCsr` functionality instead of `Dense`, so the dispatcher's first decision sends it
//! to sparse kernels. It has no storage of its own: its elements live in member tensors,
//! held here.
//! - COO (`Layout::SparseCoo`): `indices` is int64 `[sparse_dim, nnz]`, `values` is
//!   `[nnz, *dense_sizes]`; the tensor's sizes are `[*sparse_sizes, *dense_sizes]`. The
//!   coalesced flag promises that the index columns are sorted (row-major) and distinct.
//! - CSR (`Layout::SparseCsr`): `indices` holds `crow_indices [*batch, nrows + 1]`,
//!   `col_indices [*batch, nnz]` and `values [*batch, nnz, *dense_sizes]`.
//!
//! The member tensors are swapped as a whole by in-place operations (`zero_`, `copy_`,
//! `add_`), under a lock shared with the tensor's aliases (`detach`): geometry (sizes, sparse and dense dims) stays fixed
//! (Note [Immutable geometry]). Strided-only paths read `TensorImpl::layout` and refuse.

use std::sync::{Arc, RwLock, RwLockReadGuard};

use crate::{Layout, TensorImpl};

/// The member tensors of a sparse tensor, replaced together.
#[derive(Clone, Debug)]
pub struct SparseParts {
    /// COO: the indices `[sparse_dim, nnz]`. CSR: `crow_indices`.
    pub indices: Arc<TensorImpl>,
    /// CSR only: `col_indices`.
    pub col_indices: Option<Arc<TensorImpl>>,
    /// The stored values.
    pub values: Arc<TensorImpl>,
    /// COO: the indices are known sorted and distinct. CSR: always true.
    pub coalesced: bool,
}

/// What a sparse `TensorImpl` holds beyond its sizes, dtype and keys.
#[derive(Debug)]
pub struct SparseImpl {
    layout: Layout,
    sparse_dim: i64,
    dense_dim: i64,
    /// Shared with the tensor's aliases (`detach`), so an in-place change shows in all.
    parts: Arc<RwLock<SparseParts>>,
}

impl SparseImpl {
    /// Parts of a sparse tensor of `layout` with `sparse_dim` sparse and `dense_dim` dense
    /// dimensions (for CSR: `sparse_dim` is 2 plus the batch dimensions).
    pub fn new(layout: Layout, sparse_dim: i64, dense_dim: i64, parts: SparseParts) -> Self {
        debug_assert!(layout != Layout::Strided);
        SparseImpl { layout, sparse_dim, dense_dim, parts: Arc::new(RwLock::new(parts)) }
    }
    /// The layout (never `Strided`).
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// The number of sparse dimensions.
    pub fn sparse_dim(&self) -> i64 {
        self.sparse_dim
    }
    /// The number of dense dimensions (those of each stored value).
    pub fn dense_dim(&self) -> i64 {
        self.dense_dim
    }
    /// Another handle on the same members (an alias of the tensor).
    pub fn alias(&self) -> SparseImpl {
        SparseImpl {
            layout: self.layout,
            sparse_dim: self.sparse_dim,
            dense_dim: self.dense_dim,
            parts: self.parts.clone(),
        }
    }
    /// The member tensors now (a snapshot: in-place operations replace them as a whole).
    pub fn parts(&self) -> SparseParts {
        self.read().clone()
    }
    fn read(&self) -> RwLockReadGuard<'_, SparseParts> {
        self.parts.read().unwrap_or_else(|e| e.into_inner())
    }
    /// Sets the coalesced flag (`_coalesced_`).
    pub fn set_coalesced(&self, c: bool) {
        self.parts.write().unwrap_or_else(|e| e.into_inner()).coalesced = c;
    }
    /// Replaces the member tensors (what `zero_`, `copy_` and in-place arithmetic do).
    pub fn set_parts(&self, parts: SparseParts) {
        *self.parts.write().unwrap_or_else(|e| e.into_inner()) = parts;
    }
    /// The number of stored elements (`_nnz()`).
    pub fn nnz(&self) -> i64 {
        let p = self.read();
        match self.layout {
            Layout::SparseCsr => p.col_indices.as_ref().map_or(0, |c| c.sizes().last().copied().unwrap_or(0)),
            _ => p.values.sizes().first().copied().unwrap_or(0),
        }
    }
}
