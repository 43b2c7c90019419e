//! `Layout` and `MemoryFormat`, the schema types `Layout?` and `MemoryFormat?`.

/// How elements are arranged (`torch.layout`). See Note [Sparse tensors] in `tensor_impl`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Layout {
    /// Dense elements addressed by sizes and strides (`torch.strided`).
    #[default]
    Strided,
    /// Coordinate format: an index column per stored element (`torch.sparse_coo`).
    SparseCoo,
    /// Compressed rows: row offsets, column indices and values (`torch.sparse_csr`).
    SparseCsr,
}

impl Layout {
    /// PyTorch's name, as printed (`torch.sparse_coo`).
    pub const fn name(self) -> &'static str {
        match self {
            Layout::Strided => "torch.strided",
            Layout::SparseCoo => "torch.sparse_coo",
            Layout::SparseCsr => "torch.sparse_csr",
        }
    }
    /// The name inside PyTorch's messages (`Strided`, `Sparse`, `SparseCsr`).
    pub const fn short_name(self) -> &'static str {
        match self {
            Layout::Strided => "Strided",
            Layout::SparseCoo => "Sparse",
            Layout::SparseCsr => "SparseCsr",
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The stride order asked for by `contiguous`, `empty`, `clone`, ... (`torch.memory_format`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum MemoryFormat {
    /// Row-major.
    #[default]
    Contiguous,
    /// Keep the input's layout when it is dense, else row-major.
    Preserve,
    /// NHWC for 4-d tensors.
    ChannelsLast,
    /// NDHWC for 5-d tensors.
    ChannelsLast3d,
}
