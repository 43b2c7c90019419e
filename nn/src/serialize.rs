//! Saving and loading named tensors (state_dicts, checkpoints) as safetensors, the format
//! PyTorch users export with `safetensors.torch.save_file`.
//!
//! Note [Decoding safetensors]: entries are little-endian, packed back to back after a JSON
//! header, so their data need not be aligned for the dtype. [`load_file`] reads the file and
//! decodes every entry into a fresh, aligned tensor; no file handle outlives the load, so a
//! loaded checkpoint can be overwritten in place. [`load_file_mmap`] maps the file instead and
//! uses every aligned entry in place (zero-copy), copying only the misaligned ones.
//!
//! Note [Sparse entries in safetensors]: safetensors has no layouts, so a sparse tensor `k` is
//! written as its members, each a strided entry: `k::indices` and `k::values` for COO,
//! `k::crow_indices`, `k::col_indices` and `k::values` for CSR, with a metadata marker
//! `__layout__.k` = `sparse_coo <sizes> coalesced|uncoalesced` or `sparse_csr <sizes>` (sizes
//! comma-separated). A reader without the convention (`safetensors.torch.load_file`) sees the
//! members as plain tensors; ours rebuilds the sparse tensor at the place of its first member,
//! through the constructors' invariant checks (bounds, and sortedness when the marker says
//! coalesced), so a damaged or hostile file is an error, never a tensor that reads out of
//! bounds. Markers are taken out of the metadata the caller sees, and a caller's metadata may
//! not use the prefix.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use aten::{ops, Tensor};
use c10::{bf16, f16, Element, Error, Layout, Result, ScalarType};
use safetensors::{Dtype, SafeTensors, View};

use crate::module::{IncompatibleKeys, Module, StateDict};

fn io_err(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Io(format!("{}: {what}", path.display()))
}

/// The safetensors dtype of a tensor dtype. safetensors has complex64 (`C64`, two float32
/// parts) but no complex128.
pub fn dtype_of(t: ScalarType) -> Result<Dtype> {
    Ok(match t {
        ScalarType::F32 => Dtype::F32,
        ScalarType::F64 => Dtype::F64,
        ScalarType::F16 => Dtype::F16,
        ScalarType::BF16 => Dtype::BF16,
        ScalarType::I64 => Dtype::I64,
        ScalarType::I32 => Dtype::I32,
        ScalarType::I16 => Dtype::I16,
        ScalarType::I8 => Dtype::I8,
        ScalarType::U8 => Dtype::U8,
        ScalarType::Bool => Dtype::BOOL,
        ScalarType::C64 => Dtype::C64,
        ScalarType::C128 => {
            return Err(Error::invalid(
                "save_file",
                "safetensors has no complex128 dtype; save view_as_real(t) instead",
            ))
        }
    })
}

/// One tensor's bytes, little-endian and contiguous, ready for the safetensors writer.
struct Entry {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Entry {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

fn le_bytes<T: Element, const N: usize>(t: &Tensor, to_le: fn(T) -> [u8; N]) -> Result<Vec<u8>> {
    Ok(t.to_vec::<T>()?.into_iter().flat_map(to_le).collect())
}

fn encode(t: &Tensor) -> Result<Entry> {
    if t.device().ty != c10::DeviceType::Cpu {
        return Err(Error::InvalidArgument {
            op: "save_file".into(),
            msg: "move tensors to the CPU before saving".into(),
        });
    }
    let dtype = dtype_of(t.dtype())?;
    Ok(Entry { dtype, shape: t.sizes().iter().map(|&s| s as usize).collect(), bytes: le_bytes_of(t)? })
}

/// The elements of a CPU tensor in row-major order as little-endian bytes (bools as one byte
/// each, complex numbers as real then imaginary part), as safetensors and `torch.save` store
/// them on every host.
pub(crate) fn le_bytes_of(t: &Tensor) -> Result<Vec<u8>> {
    Ok(match t.dtype() {
        ScalarType::F32 => le_bytes(t, f32::to_le_bytes)?,
        ScalarType::F64 => le_bytes(t, f64::to_le_bytes)?,
        ScalarType::F16 => le_bytes(t, f16::to_le_bytes)?,
        ScalarType::BF16 => le_bytes(t, bf16::to_le_bytes)?,
        ScalarType::I64 => le_bytes(t, i64::to_le_bytes)?,
        ScalarType::I32 => le_bytes(t, i32::to_le_bytes)?,
        ScalarType::I16 => le_bytes(t, i16::to_le_bytes)?,
        ScalarType::I8 => le_bytes(t, i8::to_le_bytes)?,
        ScalarType::U8 => le_bytes(t, u8::to_le_bytes)?,
        ScalarType::Bool => t.to_vec::<bool>()?.into_iter().map(u8::from).collect(),
        ScalarType::C64 => t
            .to_complex_vec::<f32>()?
            .into_iter()
            .flat_map(|z| [z.re.to_le_bytes(), z.im.to_le_bytes()])
            .flatten()
            .collect(),
        ScalarType::C128 => t
            .to_complex_vec::<f64>()?
            .into_iter()
            .flat_map(|z| [z.re.to_le_bytes(), z.im.to_le_bytes()])
            .flatten()
            .collect(),
    })
}

/// Writes `tensors` to `path` as safetensors with optional string `metadata`
/// (`safetensors.torch.save_file`). The file is written to a temporary name beside it
/// (`<path>.partial`) and renamed, so an existing file is replaced only by a complete one; on
/// any failure the temporary file is removed and `path` is left as it was.
pub fn save_file<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a Tensor)>,
    metadata: Option<HashMap<String, String>>,
    path: impl AsRef<Path>,
) -> Result<()> {
    let path = path.as_ref();
    let (entries, metadata) = encode_all(tensors, metadata)?;
    let tmp = partial_path(path);
    let written = safetensors::serialize_to_file(entries.iter().map(|(n, e)| (n.clone(), e)), metadata, &tmp)
        .map_err(|e| io_err(&tmp, e))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| io_err(path, e)));
    if written.is_err() {
        // The temporary file may or may not exist, depending on where the write failed.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The metadata key prefix of sparse markers (Note [Sparse entries in safetensors]).
const LAYOUT_PREFIX: &str = "__layout__.";

/// Every entry of `tensors`, sparse ones as their members with a marker added to `metadata`
/// (Note [Sparse entries in safetensors]).
#[allow(clippy::type_complexity)]
fn encode_all<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a Tensor)>,
    metadata: Option<HashMap<String, String>>,
) -> Result<(Vec<(String, Entry)>, Option<HashMap<String, String>>)> {
    let op = "save_file";
    if let Some(k) = metadata.iter().flatten().map(|(k, _)| k).find(|k| k.starts_with(LAYOUT_PREFIX)) {
        return Err(Error::invalid(
            op,
            format!("metadata key '{k}': the prefix '{LAYOUT_PREFIX}' marks sparse tensors"),
        ));
    }
    let mut markers = HashMap::new();
    let mut entries: Vec<(String, Entry)> = Vec::new();
    for (name, t) in tensors {
        let sizes = t.sizes().iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let (marker, members) = match t.layout() {
            Layout::Strided => {
                entries.push((name.to_string(), encode(t)?));
                continue;
            }
            Layout::SparseCoo => {
                let flag = if ops::is_coalesced(t)? { "coalesced" } else { "uncoalesced" };
                (
                    format!("sparse_coo {sizes} {flag}"),
                    vec![("indices", ops::_indices(t)?), ("values", ops::_values(t)?)],
                )
            }
            Layout::SparseCsr => (
                format!("sparse_csr {sizes}"),
                vec![
                    ("crow_indices", ops::crow_indices(t)?),
                    ("col_indices", ops::col_indices(t)?),
                    ("values", ops::values(t)?),
                ],
            ),
        };
        for (member, m) in members {
            entries.push((format!("{name}::{member}"), encode(&m)?));
        }
        markers.insert(format!("{LAYOUT_PREFIX}{name}"), marker);
    }
    let mut seen = std::collections::HashSet::new();
    if let Some((n, _)) = entries.iter().find(|(n, _)| !seen.insert(n.as_str())) {
        return Err(Error::invalid(
            op,
            format!("two entries are named '{n}' (a sparse tensor's members are '<name>::<member>')"),
        ));
    }
    let metadata = match (metadata, markers.is_empty()) {
        (m, true) => m,
        (m, false) => Some(m.unwrap_or_default().into_iter().chain(markers).collect()),
    };
    Ok((entries, metadata))
}

/// Rebuilds the sparse tensors that `metadata`'s markers name from their member entries, each
/// at the place of its first member, and takes the markers out of `metadata` (Note [Sparse
/// entries in safetensors]).
fn assemble_sparse(tensors: StateDict, metadata: &mut HashMap<String, String>, path: &Path) -> Result<StateDict> {
    let markers: HashMap<String, String> = metadata
        .iter()
        .filter_map(|(k, v)| k.strip_prefix(LAYOUT_PREFIX).map(|name| (name.to_string(), v.clone())))
        .collect();
    if markers.is_empty() {
        return Ok(tensors);
    }
    metadata.retain(|k, _| !k.starts_with(LAYOUT_PREFIX));
    fn owner<'n>(entry: &'n str, markers: &HashMap<String, String>) -> Option<&'n str> {
        entry.rsplit_once("::").map(|(n, _)| n).filter(|n| markers.contains_key(*n))
    }
    let mut out = StateDict::new();
    for (name, t) in tensors.iter() {
        match owner(name, &markers) {
            None if markers.contains_key(name) => {
                return Err(io_err(path, format!("'{name}' is both a plain entry and a sparse tensor's marker")));
            }
            None => out.insert(name, t.clone()),
            Some(n) if !out.contains_key(n) => {
                let sparse = rebuild_sparse(n, &markers[n], &tensors)
                    .map_err(|e| io_err(path, format!("sparse tensor '{n}': {e}")))?;
                out.insert(n, sparse);
            }
            Some(_) => {}
        }
    }
    if let Some(n) = markers.keys().find(|n| !out.contains_key(n.as_str())) {
        return Err(io_err(path, format!("sparse tensor '{n}': the file has a marker but no members")));
    }
    Ok(out)
}

/// One sparse tensor from its marker and member entries.
fn rebuild_sparse(name: &str, marker: &str, tensors: &StateDict) -> Result<Tensor> {
    let op = "load_file";
    let bad = |what: String| Error::invalid(op, what);
    let member =
        |m: &str| tensors.get(&format!("{name}::{m}")).cloned().ok_or_else(|| bad(format!("no '{name}::{m}' entry")));
    let parts: Vec<&str> = marker.split(' ').collect();
    let sizes = |s: &str| -> Result<Vec<i64>> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(|x| x.parse().map_err(|_| bad(format!("bad sizes in marker '{marker}'"))))
            .collect()
    };
    match parts.as_slice() {
        ["sparse_coo", size, flag @ ("coalesced" | "uncoalesced")] => ops::sparse_coo_tensor(
            &member("indices")?,
            &member("values")?,
            &sizes(size)?,
            None,
            None,
            None,
            None,
            Some(*flag == "coalesced"),
        ),
        ["sparse_csr", size] => ops::sparse_csr_tensor(
            &member("crow_indices")?,
            &member("col_indices")?,
            &member("values")?,
            &sizes(size)?,
            None,
            None,
            None,
            None,
        ),
        _ => Err(bad(format!("unknown layout marker '{marker}'"))),
    }
}

/// The safetensors bytes of `tensors` with optional string `metadata` (what [`save_file`]
/// writes), for files that hold a safetensors record among others (the jit's archives).
pub fn save_bytes<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a Tensor)>,
    metadata: Option<HashMap<String, String>>,
) -> Result<Vec<u8>> {
    let (entries, metadata) = encode_all(tensors, metadata)?;
    safetensors::serialize(entries.iter().map(|(n, e)| (n.clone(), e)), metadata)
        .map_err(|e| Error::Io(format!("safetensors: {e}")))
}

/// The temporary name [`save_file`] writes before renaming: `path` with `.partial` appended.
pub(crate) fn partial_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}

/// Checks, before any work is done, that [`save_file`] will be able to write `path`: it must not
/// be a directory, and its directory must exist and accept a new file (tried by creating and
/// removing the temporary file). Long jobs call this first so that a typo in a checkpoint path
/// fails at once instead of after the first epoch.
pub fn check_writable(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    if path.as_os_str().is_empty() {
        return Err(Error::Io("checkpoint path is empty".into()));
    }
    if path.is_dir() {
        return Err(io_err(path, "is a directory, not a file name"));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(io_err(path, format!("the directory {} does not exist", dir.display())));
    }
    // A `.partial` file left by a killed writer is garbage; opening it again is harmless.
    let tmp = partial_path(path);
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| io_err(path, format!("cannot be written: {e}")))?;
    std::fs::remove_file(&tmp).map_err(|e| io_err(&tmp, e))
}

/// Saves a state_dict (`save_file(model.state_dict(), path)`).
pub fn save_state_dict(state: &StateDict, path: impl AsRef<Path>) -> Result<()> {
    save_file(state.iter(), None, path)
}

fn decode_le<T: Element, const N: usize>(data: &[u8], shape: &[i64], from_le: fn([u8; N]) -> T) -> Result<Tensor> {
    if !data.len().is_multiple_of(N) {
        return Err(Error::InvalidArgument {
            op: "load_file".into(),
            msg: format!("{} bytes is not a whole number of {N}-byte elements", data.len()),
        });
    }
    let values: Vec<T> = data
        .chunks_exact(N)
        .map(|c| {
            let mut b = [0u8; N];
            b.copy_from_slice(c);
            from_le(b)
        })
        .collect();
    Tensor::from_vec(values, shape)
}

/// Decodes the bytes of one safetensors entry into a contiguous CPU tensor (see Note
/// [Decoding safetensors]).
pub fn decode(dtype: Dtype, shape: &[usize], data: &[u8]) -> Result<Tensor> {
    let shape: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    let bad = |what: &str| Error::InvalidArgument { op: "load_file".into(), msg: what.to_string() };
    match dtype {
        Dtype::F32 => decode_le(data, &shape, f32::from_le_bytes),
        Dtype::F64 => decode_le(data, &shape, f64::from_le_bytes),
        Dtype::F16 => decode_le(data, &shape, f16::from_le_bytes),
        Dtype::BF16 => decode_le(data, &shape, bf16::from_le_bytes),
        Dtype::I64 => decode_le(data, &shape, i64::from_le_bytes),
        Dtype::I32 => decode_le(data, &shape, i32::from_le_bytes),
        Dtype::I16 => decode_le(data, &shape, i16::from_le_bytes),
        Dtype::I8 => decode_le(data, &shape, i8::from_le_bytes),
        Dtype::U8 => decode_le(data, &shape, u8::from_le_bytes),
        Dtype::BOOL => decode_le(data, &shape, |[b]: [u8; 1]| b != 0),
        Dtype::C64 => {
            // Pairs of float32 parts, read as a real tensor with a last dim of 2 and viewed.
            let mut parts = shape.clone();
            parts.push(2);
            aten::ops::view_as_complex(&decode_le(data, &parts, f32::from_le_bytes)?)
        }
        other => Err(bad(&format!("dtype {other:?} is not supported"))),
    }
}

/// The tensors of a safetensors file and its metadata.
pub struct Loaded {
    /// The tensors in file order.
    pub tensors: StateDict,
    /// The `__metadata__` strings.
    pub metadata: HashMap<String, String>,
}

/// Reads every tensor of a safetensors file (`safetensors.torch.load_file`), in file order.
pub fn load_file(path: impl AsRef<Path>) -> Result<Loaded> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| io_err(path, e))?;
    load_bytes(&bytes, path)
}

/// Parses safetensors bytes already in memory; `path` names the source in errors.
pub fn load_bytes(bytes: &[u8], path: &Path) -> Result<Loaded> {
    let header = parse_header(bytes, path)?;
    let mut tensors = StateDict::new();
    for (name, info) in header.entries {
        let data = &bytes[info.bytes.clone()];
        let shape: Vec<usize> = info.sizes.iter().map(|&s| s as usize).collect();
        let t = decode(info.dtype, &shape, data).map_err(|e| io_err(path, format!("tensor '{name}': {e}")))?;
        tensors.insert(name, t);
    }
    let mut metadata = header.metadata;
    let tensors = assemble_sparse(tensors, &mut metadata, path)?;
    Ok(Loaded { tensors, metadata })
}

/// One entry of a parsed header: its safetensors dtype, shape and byte range in the file.
struct HeaderEntry {
    dtype: Dtype,
    sizes: Vec<i64>,
    bytes: std::ops::Range<usize>,
}

/// A parsed (and validated) safetensors header: entries in file order and the metadata.
struct Header {
    entries: Vec<(String, HeaderEntry)>,
    metadata: HashMap<String, String>,
}

/// Parses the header once: `read_metadata` validates the offsets against the dtypes, shapes and
/// the file length.
fn parse_header(bytes: &[u8], path: &Path) -> Result<Header> {
    let (n, meta) =
        SafeTensors::read_metadata(bytes).map_err(|e| io_err(path, format!("not a valid safetensors file: {e}")))?;
    let start = 8 + n;
    let mut entries: Vec<(String, HeaderEntry)> = meta
        .tensors()
        .into_iter()
        .map(|(name, info)| {
            let entry = HeaderEntry {
                dtype: info.dtype,
                sizes: info.shape.iter().map(|&s| s as i64).collect(),
                bytes: start + info.data_offsets.0..start + info.data_offsets.1,
            };
            (name, entry)
        })
        .collect();
    entries.sort_by_key(|(_, e)| e.bytes.start);
    Ok(Header { entries, metadata: meta.metadata().clone().unwrap_or_default() })
}

fn scalar_type_of(d: Dtype) -> Option<ScalarType> {
    Some(match d {
        Dtype::F32 => ScalarType::F32,
        Dtype::F64 => ScalarType::F64,
        Dtype::F16 => ScalarType::F16,
        Dtype::BF16 => ScalarType::BF16,
        Dtype::I64 => ScalarType::I64,
        Dtype::I32 => ScalarType::I32,
        Dtype::I16 => ScalarType::I16,
        Dtype::I8 => ScalarType::I8,
        Dtype::U8 => ScalarType::U8,
        Dtype::BOOL => ScalarType::Bool,
        Dtype::C64 => ScalarType::C64,
        _ => return None,
    })
}

/// Reads every tensor of a safetensors file through a private memory map, in file order
/// (what `safetensors.safe_open` does). Entries whose data is aligned for their dtype are used
/// in place, without a copy (the pages are read from the page cache when first touched);
/// the others are copied. Writing to a loaded tensor never changes the file. See
/// `aten::mapped` (Note [Mapped tensors]) for the one caveat: the file must not be truncated
/// in place while the tensors are alive (replacing it by rename, as [`save_file`] does, is
/// fine).
pub fn load_file_mmap(path: impl AsRef<Path>) -> Result<Loaded> {
    Ok(load_file_mmap_counted(path)?.0)
}

/// [`load_file_mmap`], also counting the entries used in place (for tests and diagnostics).
pub fn load_file_mmap_counted(path: impl AsRef<Path>) -> Result<(Loaded, usize)> {
    let path = path.as_ref();
    let mapped = aten::mapped::MappedFile::open(path)?;
    let (names, entries, metadata) = {
        let header = parse_header(mapped.bytes(), path)?;
        let mut names = Vec::with_capacity(header.entries.len());
        let mut entries = Vec::with_capacity(header.entries.len());
        for (name, e) in header.entries {
            let Some(dtype) = scalar_type_of(e.dtype) else {
                return Err(io_err(path, format!("tensor '{name}': dtype {:?} is not supported", e.dtype)));
            };
            entries.push(aten::mapped::MappedEntry { bytes: e.bytes, sizes: e.sizes, dtype });
            names.push(name);
        }
        (names, entries, header.metadata)
    };
    let made = mapped.into_tensors(&entries)?;
    let in_place = made.iter().filter(|(_, mapped)| *mapped).count();
    let mut tensors = StateDict::new();
    for (name, (t, _)) in names.into_iter().zip(made) {
        tensors.insert(name, t);
    }
    let mut metadata = metadata;
    let tensors = assemble_sparse(tensors, &mut metadata, path)?;
    Ok((Loaded { tensors, metadata }, in_place))
}

/// Loads a state_dict file into `module` (strict or not). Nothing is copied unless every entry
/// checks out, so a failed load leaves the module unchanged.
pub fn load_into(module: &mut dyn Module, path: impl AsRef<Path>, strict: bool) -> Result<IncompatibleKeys> {
    let loaded = load_file(path)?;
    module.load_state_dict(&loaded.tensors, strict)
}

/// A training checkpoint: the model's state_dict, the optimizer's state and the number of
/// epochs done, in one safetensors file (model entries under `model.`, optimizer entries
/// under `optimizer.`, the epoch in the metadata).
pub struct Checkpoint {
    /// The model's state_dict.
    pub model: StateDict,
    /// The optimizer's state.
    pub optimizer: crate::optim::OptimizerStateDict,
    /// Epochs completed.
    pub epoch: usize,
}

impl Checkpoint {
    /// Writes the checkpoint (atomically: a complete file replaces the old one). Tensors on a
    /// device are copied to the CPU first; [`Checkpoint::load`] gives CPU tensors, which
    /// `load_state_dict` of a model or optimizer copies to their parameters' devices.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let mut all: Vec<(String, Tensor)> = Vec::new();
        for (k, t) in self.model.iter() {
            all.push((format!("model.{k}"), t.to_device(c10::Device::CPU)?));
        }
        for (k, t) in self.optimizer.to_tensors() {
            all.push((format!("optimizer.{k}"), t.to_device(c10::Device::CPU)?));
        }
        let meta = HashMap::from([
            ("epoch".to_string(), self.epoch.to_string()),
            ("format".to_string(), "checkpoint-1".to_string()),
        ]);
        save_file(all.iter().map(|(k, t)| (k.as_str(), t)), Some(meta), path)
    }

    /// Reads a checkpoint written by [`Checkpoint::save`].
    pub fn load(path: impl AsRef<Path>) -> Result<Checkpoint> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| io_err(path, e))?;
        Checkpoint::from_bytes(&bytes, path)
    }

    /// [`Checkpoint::load`] from the bytes of a checkpoint already in memory; `path` names the
    /// source in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Checkpoint> {
        let loaded = load_bytes(bytes, path)?;
        let epoch = loaded
            .metadata
            .get("epoch")
            .and_then(|e| e.parse().ok())
            .ok_or_else(|| io_err(path, "not a checkpoint: the metadata has no epoch"))?;
        let (mut model, mut optimizer) = (StateDict::new(), StateDict::new());
        for (k, t) in loaded.tensors {
            if let Some(rest) = k.strip_prefix("model.") {
                model.insert(rest, t);
            } else if let Some(rest) = k.strip_prefix("optimizer.") {
                optimizer.insert(rest, t);
            } else {
                return Err(io_err(path, format!("not a checkpoint: unexpected entry '{k}'")));
            }
        }
        let optimizer = crate::optim::OptimizerStateDict::from_tensors(&optimizer).map_err(|e| io_err(path, e))?;
        Ok(Checkpoint { model, optimizer, epoch })
    }
}
