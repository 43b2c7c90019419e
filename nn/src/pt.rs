//! Reading the zip archives `torch.save` writes (PyTorch 1.6 and later): `<prefix>/data.pkl`,
//! the raw storages `<prefix>/data/<key>`, `<prefix>/byteorder` and `<prefix>/version`. The
//! state_dicts in them load into our modules with [`load_pt`] and [`load_pt_into`];
//! [`PtArchive`] is the level below, shared with `torch.jit.save` archives: it reads records,
//! unpickles any pickle of the archive and resolves torch's storage persistent ids to storages
//! read from it.
//!
//! Note [Storages of an archive]: a storage record is read and decoded once, when a persistent
//! id first names it, and kept by record name, so every tensor over it (views saved together, a
//! tied weight) shares its data, as after `torch.load`. The record must hold exactly the
//! `numel` elements the persistent id gives, and every tensor's size, stride and offset must stay
//! inside its storage: a corrupt file is an error, never an out-of-bounds read. Records are
//! decoded into fresh memory aligned for their dtype (byte-swapped when `byteorder` says `big`).
//! Every storage is loaded on the CPU whatever location the archive names, as
//! `torch.load(..., map_location="cpu")` does.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek};
use std::path::{Path, PathBuf};

use c10::{Error, Result, ScalarType};
use zip::ZipArchive;

use crate::module::{IncompatibleKeys, Module, StateDict};
use crate::pickle::{self, Global, PickleHooks, StorageRef, Value};

fn io_err(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Io(format!("{}: {what}", path.display()))
}

/// What an archive is read from: a file or bytes in memory.
trait ReadSeek: Read + Seek + Send {}
impl<T: Read + Seek + Send> ReadSeek for T {}

/// The first bytes of a file `torch.save` wrote before PyTorch 1.6 (or with
/// `_use_new_zipfile_serialization=False`): pickle protocol 2, then the magic number
/// 0x1950a86a20f9469cfc6c as a `LONG1`.
const LEGACY_MAGIC: [u8; 14] = [0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];

/// Opens a zip archive that starts at the reader's first byte, as every archive PyTorch writes
/// does (Note [Zip archive offsets]).
///
/// Note [Zip archive offsets]: the `zip` crate's default reader looks for an archive that may
/// sit after a prefix (a self-extracting stub), and it guesses the central directory's start as
/// the end record's offset minus the directory's size. PyTorch's writer puts zip64 end records
/// (76 bytes) between the two, so the guess lands 76 bytes into the directory, and when the
/// first directory entry is itself 76 bytes long (a 30-character first record name:
/// `mymodel_checkpoint_v1/data.pkl`) the guess finds an entry header there and reads every
/// entry from the wrong place ("Invalid Central Directory header"). One file in twelve of
/// `gen_modules.py`'s was refused so. The offset is given instead: 0.
pub fn open_zip<R: Read + Seek>(reader: R) -> zip::result::ZipResult<ZipArchive<R>> {
    let config = zip::read::Config { archive_offset: zip::read::ArchiveOffset::Known(0) };
    ZipArchive::with_config(config, reader)
}

/// A zip archive written by `torch.save` or `torch.jit.save`. Record names are relative to the
/// archive's prefix (the directory holding `data.pkl`, whatever it is called).
///
/// ```no_run
/// let mut archive = nn::PtArchive::open("checkpoint.pt").unwrap();
/// let value = archive.unpickle("data.pkl").unwrap(); // storages from `data/`
/// println!("{value:?}");
/// ```
pub struct PtArchive {
    zip: ZipArchive<Box<dyn ReadSeek>>,
    path: PathBuf,
    prefix: String,
    /// The archive's size in bytes, which bounds what a record may claim to hold.
    len: u64,
    big_endian: bool,
    /// Decoded storages by record name (see Note [Storages of an archive]).
    storages: HashMap<String, StorageRef>,
}

impl PtArchive {
    /// Opens the archive at `path`. A legacy (pre-1.6, non-zip) `torch.save` file or any other
    /// non-zip file is an error saying so.
    pub fn open(path: impl AsRef<Path>) -> Result<PtArchive> {
        let path = path.as_ref();
        let mut file = File::open(path).map_err(|e| io_err(path, e))?;
        let len = file.metadata().map_err(|e| io_err(path, e))?.len();
        let mut head = Vec::with_capacity(LEGACY_MAGIC.len());
        (&mut file).take(LEGACY_MAGIC.len() as u64).read_to_end(&mut head).map_err(|e| io_err(path, e))?;
        check_signature(&head, path)?;
        file.rewind().map_err(|e| io_err(path, e))?;
        PtArchive::from_reader(Box::new(BufReader::new(file)), len, path)
    }

    /// Reads an archive from bytes in memory; `name` stands for the file in errors.
    pub fn from_bytes(bytes: Vec<u8>, name: impl AsRef<Path>) -> Result<PtArchive> {
        let path = name.as_ref();
        check_signature(&bytes[..bytes.len().min(LEGACY_MAGIC.len())], path)?;
        let len = bytes.len() as u64;
        PtArchive::from_reader(Box::new(Cursor::new(bytes)), len, path)
    }

    fn from_reader(reader: Box<dyn ReadSeek>, len: u64, path: &Path) -> Result<PtArchive> {
        let zip = open_zip(reader).map_err(|e| io_err(path, format!("not a valid zip archive: {e}")))?;
        let prefix = zip
            .file_names_raw()
            .filter_map(|n| std::str::from_utf8(n).ok()?.strip_suffix("/data.pkl"))
            .find(|p| !p.is_empty() && !p.contains('/'))
            .map(String::from)
            .ok_or_else(|| io_err(path, "not a torch.save archive: it has no <name>/data.pkl record"))?;
        let mut archive =
            PtArchive { zip, path: path.to_path_buf(), prefix, len, big_endian: false, storages: HashMap::new() };
        if archive.has_record("byteorder") {
            let order = archive.read_record("byteorder")?;
            archive.big_endian = match order.trim_ascii() {
                b"little" => false,
                b"big" => true,
                other => {
                    return Err(io_err(path, format!("unknown byteorder '{}'", String::from_utf8_lossy(other))));
                }
            };
        }
        Ok(archive)
    }

    /// The file (or the name given to [`PtArchive::from_bytes`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory inside the zip that holds the records (`archive`, or the saved file's stem).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The names of the records, relative to the prefix (`data.pkl`, `data/0`, `version`, ...).
    pub fn record_names(&self) -> Vec<String> {
        let prefix = format!("{}/", self.prefix);
        self.zip
            .file_names_raw()
            .filter_map(|n| std::str::from_utf8(n).ok()?.strip_prefix(&prefix))
            .map(String::from)
            .collect()
    }

    /// Whether the record `name` (relative to the prefix) exists.
    pub fn has_record(&self, name: &str) -> bool {
        self.zip.index_for_name_raw(format!("{}/{name}", self.prefix).as_bytes()).is_some()
    }

    /// How errors inside record `name` name their source: `archive/data.pkl in model.pt`.
    pub fn source(&self, name: &str) -> String {
        format!("{}/{name} in {}", self.prefix, self.path.display())
    }

    /// The bytes of record `name` (relative to the prefix).
    pub fn read_record(&mut self, name: &str) -> Result<Vec<u8>> {
        self.read_record_inner(name).map_err(|e| io_err(&self.path, e))
    }

    fn read_record_inner(&mut self, name: &str) -> Result<Vec<u8>> {
        let full = format!("{}/{name}", self.prefix);
        let Some(index) = self.zip.index_for_name_raw(full.as_bytes()) else {
            return Err(Error::Io(format!("the archive has no record {full}")));
        };
        let mut entry = self.zip.by_index(index).map_err(|e| Error::Io(format!("record {full}: {e}")))?;
        // The size a record claims is only trusted up to the archive's own size.
        let mut bytes = Vec::new();
        let cap = entry.size().min(self.len) as usize;
        bytes.try_reserve_exact(cap).map_err(|_| Error::OutOfMemory { device: c10::DeviceType::Cpu, nbytes: cap })?;
        entry.read_to_end(&mut bytes).map_err(|e| Error::Io(format!("record {full}: {e}")))?;
        Ok(bytes)
    }

    /// The storage in record `name` (relative to the prefix, `data/0`) as `numel` elements of
    /// `dtype`, read once and shared afterwards (see Note [Storages of an archive]).
    pub fn storage(&mut self, name: &str, dtype: ScalarType, numel: i64) -> Result<StorageRef> {
        self.storage_inner(name, dtype, numel).map_err(|e| io_err(&self.path, e))
    }

    fn storage_inner(&mut self, name: &str, dtype: ScalarType, numel: i64) -> Result<StorageRef> {
        let full = format!("{}/{name}", self.prefix);
        if let Some(s) = self.storages.get(name) {
            if s.dtype() != dtype || s.numel() != numel {
                return Err(Error::Io(format!(
                    "storage {full} is used both as {} elements of {} and as {numel} elements of {}",
                    s.numel(),
                    s.dtype().name(),
                    dtype.name()
                )));
            }
            return Ok(s.clone());
        }
        let nbytes = u64::try_from(numel)
            .ok()
            .and_then(|n| n.checked_mul(dtype.size() as u64))
            .ok_or_else(|| Error::Io(format!("storage {full}: invalid element count {numel}")))?;
        let mut bytes = self.read_record_inner(name)?;
        if bytes.len() as u64 != nbytes {
            return Err(Error::Io(format!(
                "storage {full} holds {} bytes, but the pickle asks for {numel} elements of {} ({nbytes} bytes)",
                bytes.len(),
                dtype.name()
            )));
        }
        if self.big_endian {
            bytes.chunks_exact_mut(dtype.size()).for_each(|e| e.reverse());
        }
        let decoded = crate::serialize::decode(crate::serialize::dtype_of(dtype)?, &[numel as usize], &bytes)?;
        let s = StorageRef::new(decoded.storage().clone(), dtype)?;
        self.storages.insert(name.to_string(), s.clone());
        Ok(s)
    }

    /// Resolves one of torch's persistent ids, `('storage', torch.FloatStorage, key, location,
    /// numel)`, to the storage in record `<storage_dir>/<key>` (torch's pickles name storages
    /// this way; `data.pkl` keeps them under `data`, a scripted module's `constants.pkl` under
    /// `constants`). For a [`PickleHooks`] of one's own.
    pub fn persistent_load(&mut self, pid: &Value, storage_dir: &str) -> Result<Value> {
        self.persistent_load_inner(pid, storage_dir).map_err(|e| io_err(&self.path, e))
    }

    fn persistent_load_inner(&mut self, pid: &Value, storage_dir: &str) -> Result<Value> {
        let bad = || {
            Error::Io(format!("unsupported persistent id {pid:?}: expected ('storage', type, key, location, numel)"))
        };
        let Some([tag, ty, key, _location, numel]) = pid.as_tuple().map(|t| &t[..]) else { return Err(bad()) };
        let (Some("storage"), Value::Global(ty), Some(key), Some(numel)) =
            (tag.as_str(), ty, key.as_str(), numel.as_int())
        else {
            return Err(bad());
        };
        let dtype = ty.storage_dtype().ok_or_else(|| Error::Io(format!("unsupported storage type {ty}")))?;
        Ok(Value::Storage(self.storage_inner(&format!("{storage_dir}/{key}"), dtype, numel)?))
    }

    /// Unpickles record `name` (`data.pkl`, `constants.pkl`), resolving storages from the records
    /// under its stem (`data/`, `constants/`), with the built-in classes of
    /// [`crate::pickle::PickleHooks`]. Only the globals PyTorch's `weights_only` loader allows
    /// may appear, as for `torch.load` (see Note [Allowed globals] in `pickle.rs`). For classes
    /// of one's own, read the record and call [`crate::pickle::unpickle`] with hooks that use
    /// [`PtArchive::persistent_load`].
    pub fn unpickle(&mut self, name: &str) -> Result<Value> {
        self.unpickle_allowing(name, &|_| false)
    }

    /// [`PtArchive::unpickle`], also allowing the globals `also_allowed` accepts (a reader of
    /// another kind of pickle than a `torch.save` checkpoint: a TorchScript archive's modules are
    /// `__torch__.*` classes).
    pub fn unpickle_allowing(&mut self, name: &str, also_allowed: &dyn Fn(&Global) -> bool) -> Result<Value> {
        let data = self.read_record(name)?;
        let source = self.source(name);
        let storage_dir = name.strip_suffix(".pkl").unwrap_or(name).to_string();
        pickle::unpickle(&data, &source, &mut ArchiveHooks { archive: self, storage_dir, also_allowed })
    }
}

/// The archive's storages as persistent ids, the built-in classes, and the globals allowed
/// beyond PyTorch's weights_only list.
struct ArchiveHooks<'a> {
    archive: &'a mut PtArchive,
    storage_dir: String,
    also_allowed: &'a dyn Fn(&Global) -> bool,
}

impl PickleHooks for ArchiveHooks<'_> {
    fn persistent_load(&mut self, pid: &Value) -> Result<Value> {
        // The unpickler adds the source and position.
        self.archive.persistent_load_inner(pid, &self.storage_dir)
    }

    fn allows_global(&self, global: &Global) -> bool {
        (self.also_allowed)(global)
    }
}

fn check_signature(head: &[u8], path: &Path) -> Result<()> {
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return Ok(());
    }
    if head.starts_with(&LEGACY_MAGIC) {
        return Err(io_err(
            path,
            "legacy torch.save format (PyTorch before 1.6, or _use_new_zipfile_serialization=False), which this \
             reader does not support; re-save it with torch.save(..., _use_new_zipfile_serialization=True)",
        ));
    }
    Err(io_err(path, "not a PyTorch archive: torch.save (PyTorch 1.6 or later) writes a zip file, and this is not one"))
}

/// The state_dict a pickle holds: a dict (`OrderedDict` or plain) of names to tensors.
fn state_dict_of(value: &Value) -> Result<StateDict> {
    let Some(dict) = value.as_dict() else {
        return Err(Error::Io(format!("expected a state_dict (a dict of names to tensors), found a {}", value.kind())));
    };
    let mut state = StateDict::new();
    for (k, v) in dict.borrow().iter() {
        let Some(name) = k.as_str() else {
            return Err(Error::Io(format!("a state_dict key is a {}, not a str", k.kind())));
        };
        let Some(t) = v.as_tensor() else {
            return Err(Error::Io(format!(
                "state_dict entry '{name}' is a {}, not a tensor (PtArchive::unpickle reads any pickle)",
                v.kind()
            )));
        };
        state.insert(name, t.clone());
    }
    Ok(state)
}

/// Reads a state_dict saved by PyTorch with `torch.save(model.state_dict(), path)` (or any dict
/// of names to tensors), in the file's order. Tensors keep their dtype, shape, strides and
/// storage sharing; parameters saved as `nn.Parameter` keep `requires_grad`.
///
/// ```no_run
/// let state = nn::load_pt("model.pt").unwrap();
/// for (name, t) in state.iter() {
///     println!("{name}: {:?}", t.sizes());
/// }
/// ```
pub fn load_pt(path: impl AsRef<Path>) -> Result<StateDict> {
    let path = path.as_ref();
    let mut archive = PtArchive::open(path)?;
    let value = archive.unpickle("data.pkl")?;
    state_dict_of(&value).map_err(|e| io_err(path, e))
}

/// Loads a state_dict saved by PyTorch into `module` (strict or not), as
/// [`crate::serialize::load_into`] does for safetensors: nothing is copied unless every entry
/// checks out.
pub fn load_pt_into(module: &mut dyn Module, path: impl AsRef<Path>, strict: bool) -> Result<IncompatibleKeys> {
    let state = load_pt(path)?;
    module.load_state_dict(&state, strict)
}
