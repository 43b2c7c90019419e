//! Writing archives PyTorch reads: [`save_pt`] writes a state dict as `torch.save` does, for
//! `torch.load(weights_only=True)`; [`PtWriter`] is the level below, shared with the `jit`
//! crate's TorchScript writer: records, tensors pickled with their storages, and the zip.
//!
//! Note [Writing torch.save archives]: the layout is `torch.save`'s (PyTorch 2.15,
//! `shared/reference/formats-and-protocols.md` sections 0 and 3). Under one folder named after
//! the file's stem: `data.pkl` (pickle protocol 2), one record per storage (`data/0`,
//! `data/1`, ...), `byteorder` (`little`), `version` (`3`), `.format_version` (`1`) and
//! `.storage_alignment` (`64`). Records are stored uncompressed, their data 64-byte aligned
//! (so `torch.load(mmap=True)` can map them). A tensor is
//! `torch._utils._rebuild_tensor_v2(pid, offset, size, stride, requires_grad, OrderedDict())`
//! with the persistent id `('storage', torch.<T>Storage, key, 'cpu', numel)`; its storage is
//! written whole, once, however many tensors view it, so views and tied weights come back
//! sharing memory, with their strides and offsets, as they were. Tensors on another device are
//! written from a copy on the CPU and named `'cpu'` (what `map_location="cpu"` would give).
//! The file is written under a temporary name and renamed: an existing file is only ever
//! replaced by a complete one.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use aten::Tensor;
use c10::tensor_impl::DimVec;
use c10::{Device, Error, Result, Storage};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use autograd::TensorAutograd;

use crate::module::StateDict;
use crate::pickler::{storage_class, Pickler};
use crate::serialize::{check_writable, le_bytes_of, partial_path};

fn io_err(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Io(format!("{}: {what}", path.display()))
}

/// An archive being written: its records, and the storages already written (by identity) so
/// that tensors over one storage share one record.
pub struct PtWriter {
    records: Vec<(String, Vec<u8>)>,
    /// (storage, directory, key): a storage is one record per directory it is pickled from
    /// (`data/` and `constants/` are read separately).
    storages: Vec<(Storage, String, usize)>,
}

impl Default for PtWriter {
    fn default() -> Self {
        PtWriter::new()
    }
}

impl PtWriter {
    /// An empty archive.
    pub fn new() -> PtWriter {
        PtWriter { records: Vec::new(), storages: Vec::new() }
    }

    /// Adds the record `name` (relative to the archive's folder). A name already written is
    /// an error.
    pub fn record(&mut self, name: impl Into<String>, bytes: Vec<u8>) -> Result<()> {
        let name = name.into();
        if self.records.iter().any(|(n, _)| *n == name) {
            return Err(Error::invalid("PtWriter", format!("record {name} is written twice")));
        }
        self.records.push((name, bytes));
        Ok(())
    }

    /// Pickles `t` onto `p` as `_rebuild_tensor_v2(...)` (Note [Writing torch.save archives]),
    /// writing its storage to `<dir>/<key>` unless a tensor over the same storage was written
    /// before. The tensor's data is read as it is now; its autograd history is not written.
    pub fn tensor(&mut self, p: &mut Pickler, t: &Tensor, dir: &str, requires_grad: bool) -> Result<()> {
        let dtype = t.dtype();
        let itemsize = dtype.size();
        let storage = t.storage();
        let numel = (storage.nbytes() / itemsize) as i64;
        let written = self.storages.iter().find(|(s, d, _)| d == dir && s.is_same(storage));
        let key = match written {
            Some(&(_, _, key)) => key,
            None => {
                let key = self.storages.iter().filter(|(_, d, _)| d == dir).count();
                // The whole storage, as a flat view from its first element.
                let whole = Tensor::from_storage(storage.clone(), &[numel], DimVec::from_slice(&[1]), 0, dtype);
                let whole = if whole.device() == Device::CPU { whole } else { whole.to_device(Device::CPU)? };
                self.record(format!("{dir}/{key}"), le_bytes_of(&whole)?)?;
                self.storages.push((storage.clone(), dir.to_string(), key));
                key
            }
        };
        let key = key.to_string();
        p.global("torch._utils", "_rebuild_tensor_v2");
        p.mark();
        {
            p.mark().str("storage").global("torch", storage_class(dtype)).str(&key).str("cpu").int(numel).tuple();
            p.persid();
        }
        p.int(t.storage_offset());
        p.mark();
        for &s in t.sizes() {
            p.int(s);
        }
        p.tuple();
        p.mark();
        for &s in t.strides() {
            p.int(s);
        }
        p.tuple();
        p.bool(requires_grad);
        p.ordered_dict();
        p.tuple().reduce();
        Ok(())
    }

    /// Writes the archive to `path`, its records under the folder `<stem of path>/`, and the
    /// records every torch archive has (`byteorder`, and `version` unless one was added as
    /// `version` or `.data/version`).
    pub fn write(mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        check_writable(path)?;
        if !self.records.iter().any(|(n, _)| n == "version" || n == ".data/version") {
            self.record("version", b"3\n".to_vec())?;
        }
        self.record("byteorder", b"little".to_vec())?;
        let folder = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty() && !s.contains(['/', '\\']))
            .unwrap_or("archive")
            .to_string();
        let tmp = partial_path(path);
        let write = || -> std::result::Result<(), String> {
            let file = File::create(&tmp).map_err(|e| e.to_string())?;
            let mut zip = ZipWriter::new(file);
            let opts = SimpleFileOptions::default()
                .compression_method(CompressionMethod::Stored)
                .with_alignment(64)
                .large_file(self.records.iter().any(|(_, b)| b.len() as u64 >= u32::MAX as u64));
            // The pickles first, as torch writes them; then the rest in the order they came.
            let (pickles, rest): (Vec<_>, Vec<_>) = self.records.iter().partition(|(n, _)| n.ends_with(".pkl"));
            for (name, bytes) in pickles.into_iter().chain(rest) {
                zip.start_file(format!("{folder}/{name}"), opts).map_err(|e| format!("{name}: {e}"))?;
                zip.write_all(bytes).map_err(|e| format!("{name}: {e}"))?;
            }
            zip.finish().map_err(|e| e.to_string())?.flush().map_err(|e| e.to_string())?;
            std::fs::rename(&tmp, path).map_err(|e| e.to_string())
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io_err(path, e)
        })
    }
}

/// Writes `state` as `torch.save(state_dict, path)` does (Note [Writing torch.save
/// archives]): an `OrderedDict` of names to tensors that `torch.load(path, weights_only=True)`
/// reads and `load_state_dict(strict=True)` takes. Names, order, dtypes, sizes, strides,
/// storage offsets, shared storages and `requires_grad` flags are kept (a module's
/// `state_dict()` has detached its tensors, so they come back as PyTorch's do, without).
///
/// ```no_run
/// use nn::{Linear, Module};
/// let fc = Linear::new(4, 2).unwrap();
/// nn::save_pt(&fc.state_dict(), "fc.pt").unwrap(); // torch.load("fc.pt") in Python
/// ```
pub fn save_pt(state: &StateDict, path: impl AsRef<Path>) -> Result<()> {
    let mut w = PtWriter::new();
    let mut p = Pickler::new();
    p.ordered_dict();
    if !state.is_empty() {
        p.mark();
        for (name, t) in state.iter() {
            p.str(name);
            w.tensor(&mut p, t, "data", t.requires_grad())?;
        }
        p.setitems();
    }
    w.record("data.pkl", p.finish())?;
    w.record(".format_version", b"1".to_vec())?;
    w.record(".storage_alignment", b"64".to_vec())?;
    w.write(path)
}
