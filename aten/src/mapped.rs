//! Tensors over a memory-mapped file: zero-copy loading of checkpoints.
//!
//! Note [Mapped tensors]: the file is mapped privately (copy-on-write). A tensor over it reads
//! the page cache without a copy; writing to it (an in-place operation, an optimizer step)
//! copies the touched pages into this process only, so the file never changes. Every tensor
//! made from the mapping holds it, and it is unmapped when the last one is dropped. Replacing
//! the file by rename (as savers that write a temporary file do) leaves the mapped version
//! intact; truncating the file in place while tensors use it is not supported (the operating
//! system faults on access, as for any mapped file).
//!
//! An entry is used in place when the host is little-endian, its bytes are aligned for its
//! dtype, and (for `Bool`) every byte is 0 or 1; any other entry is copied into a fresh
//! tensor.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use c10::{Device, Error, Result, ScalarType};

use crate::tensor::{checked_numel, Tensor};

/// One tensor to take from a mapped file: its byte range, shape and dtype (little-endian,
/// packed, row-major).
#[derive(Clone, Debug)]
pub struct MappedEntry {
    /// Byte range in the file.
    pub bytes: Range<usize>,
    /// The tensor's shape.
    pub sizes: Vec<i64>,
    /// The element type.
    pub dtype: ScalarType,
}

/// A file mapped into memory (see Note [Mapped tensors]).
pub struct MappedFile {
    map: memmap2::MmapMut,
    path: PathBuf,
}

impl MappedFile {
    /// Maps `path` privately. An empty file is an error (no format this serves is empty).
    pub fn open(path: impl AsRef<Path>) -> Result<MappedFile> {
        let path = path.as_ref();
        let io = |e: &dyn std::fmt::Display| Error::Io(format!("{}: {e}", path.display()));
        let file = std::fs::File::open(path).map_err(|e| io(&e))?;
        let len = file.metadata().map_err(|e| io(&e))?.len();
        if len == 0 {
            return Err(io(&"the file is empty"));
        }
        // SAFETY: a private (copy-on-write) mapping: writes through it never reach the file.
        // Another process truncating the file while it is mapped is the caveat of Note
        // [Mapped tensors], as with every mapped-file reader.
        let map = unsafe { memmap2::MmapOptions::new().map_copy(&file) }.map_err(|e| io(&e))?;
        Ok(MappedFile { map, path: path.to_path_buf() })
    }

    /// The file's bytes, to parse its header.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The mapped path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes one tensor per entry, over the mapping where the entry allows (see Note [Mapped
    /// tensors]) and copied otherwise; also says, per entry, whether it was mapped. Consumes
    /// the mapping, so no borrow of [`MappedFile::bytes`] outlives the tensors' creation.
    pub fn into_tensors(self, entries: &[MappedEntry]) -> Result<Vec<(Tensor, bool)>> {
        let path = self.path.clone();
        let bad = |i: usize, what: String| Error::Io(format!("{}: entry {i}: {what}", path.display()));
        let map = Arc::new(self.map);
        let mut out = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let numel = checked_numel("load", &e.sizes)? as usize;
            let want = c10::size::contiguous_nbytes("load", &e.sizes, e.dtype.size())?;
            let Some(bytes) = map.get(e.bytes.clone()) else {
                return Err(bad(i, format!("bytes {:?} are outside the file ({} bytes)", e.bytes, map.len())));
            };
            if bytes.len() != want {
                return Err(bad(
                    i,
                    format!("{} bytes do not hold {numel} elements of {:?} ({want} bytes)", bytes.len(), e.dtype),
                ));
            }
            let aligned = (bytes.as_ptr() as usize).is_multiple_of(e.dtype.size());
            let valid = e.dtype != ScalarType::Bool || bytes.iter().all(|&b| b <= 1);
            if cfg!(target_endian = "little") && aligned && valid && numel > 0 {
                let ptr = NonNull::new(bytes.as_ptr() as *mut u8).expect("mapped memory is non-null");
                let strides = c10::tensor_impl::contiguous_strides(&e.sizes);
                let keep = Arc::clone(&map);
                // SAFETY: the range is inside the mapping (checked above) and aligned for the
                // dtype; the deleter keeps the mapping alive until the last tensor over it is
                // dropped; the mapping is private and writable, and after this function no one
                // borrows it as a slice (the MappedFile was consumed), so tensors are its only
                // users. Bool bytes were checked to be 0 or 1.
                let t = unsafe { Tensor::from_blob(ptr, &e.sizes, &strides, e.dtype, move || drop(keep)) }?;
                out.push((t, true));
            } else {
                out.push((copy_le(bytes, &e.sizes, e.dtype)?, false));
            }
        }
        Ok(out)
    }
}

/// A fresh contiguous tensor holding the little-endian elements in `bytes`.
fn copy_le(bytes: &[u8], sizes: &[i64], dtype: ScalarType) -> Result<Tensor> {
    let t = Tensor::empty_uninit(sizes, dtype, Device::CPU)?;
    let n = bytes.len();
    if n == 0 {
        return Ok(t);
    }
    // SAFETY: `t` is a fresh contiguous tensor of exactly `n` bytes that nothing else uses.
    let dst = unsafe { std::slice::from_raw_parts_mut(t.data_ptr(), n) };
    let width = dtype.size();
    if cfg!(target_endian = "little") {
        dst.copy_from_slice(bytes);
    } else {
        for (d, s) in dst.chunks_exact_mut(width).zip(bytes.chunks_exact(width)) {
            d.iter_mut().zip(s.iter().rev()).for_each(|(d, s)| *d = *s);
        }
    }
    if dtype == ScalarType::Bool {
        dst.iter_mut().for_each(|b| *b = u8::from(*b != 0));
    }
    Ok(t)
}
