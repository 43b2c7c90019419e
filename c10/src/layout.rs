//! `Layout` and `MemoryFormat`, the schema types `Layout?` and `MemoryFormat?`.

/// How elements are arranged. Only strided tensors exist so far (sparse layouts come later).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Layout {
    /// Dense elements addressed by sizes and strides.
    #[default]
    Strided,
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
