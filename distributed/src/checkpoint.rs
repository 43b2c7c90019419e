//! Distributed checkpoints of [`FullyShardedDataParallel`] models (the role of
//! `torch.distributed.checkpoint`): each rank writes its own shards, one metadata file says
//! where every piece of every parameter is, and loading reads whichever pieces the loading
//! rank's shards need, at any world size (resharding). [`consolidate`] assembles an ordinary
//! state dict from a checkpoint directory, without a process group.
//!
//! Note [Distributed checkpoint layout]: a checkpoint is a directory holding
//! - `__<rank>_0.safetensors` per rank: the rank's pieces of each original parameter, as 1-D
//!   tensors keyed `<name>|<first element>`; rank 0's file also holds the buffers, whole, keyed
//!   by name;
//! - `.metadata` (JSON, written by rank 0 after every rank's file is complete, so a directory
//!   without it is an unfinished save): the format version, the world size it was saved at, and
//!   per parameter its shape, dtype, other names (tied parameters) and pieces (file, key, first
//!   element of the flattened parameter, length); per buffer its file, shape and dtype.
//!
//! Pieces are ranges of the row-major flattened parameter, which is how FSDP shards it, so
//! loading at another world size intersects each new shard with the saved ranges. Our own
//! format (PyTorch's `.distcp` files are pickles of its planner's objects); optimizer state is
//! not part of it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aten::Tensor;
use autograd::TensorAutograd;
use c10::{Error, Result, ScalarType};
use nn::{Forward, Member, StateDict};
use serde_json::{json, Value};

use crate::fsdp::{fsdp_error, FullyShardedDataParallel, ShardingStrategy, Unit};

/// The version of the layout this module writes and reads.
pub const CHECKPOINT_VERSION: u64 = 1;
/// The metadata file's name.
pub const METADATA_FILE: &str = ".metadata";

fn ckpt_error(msg: impl Into<String>) -> Error {
    Error::Distributed { op: "distributed checkpoint".into(), msg: msg.into() }
}

fn rank_file(rank: usize) -> String {
    format!("__{rank}_0.safetensors")
}

/// One parameter of a unit with its full name.
struct Param<'a> {
    unit: &'a Arc<Unit>,
    index: usize,
    name: String,
}

/// Every unit's parameters, by full name, and the units' buffers (full names, tensors).
fn walk<'a>(unit: &'a Arc<Unit>, prefix: &str) -> (Vec<Param<'a>>, Vec<(String, Tensor)>) {
    let mut params = Vec::new();
    let mut buffers = Vec::new();
    fn go<'a>(u: &'a Arc<Unit>, prefix: &str, params: &mut Vec<Param<'a>>, buffers: &mut Vec<(String, Tensor)>) {
        for (i, p) in u.params.iter().enumerate() {
            params.push(Param { unit: u, index: i, name: format!("{prefix}{}", p.names[0]) });
        }
        let m = u.module.lock().unwrap_or_else(|e| e.into_inner());
        m.visit_tensors("", &mut |name, mem| {
            if let Member::Buffer(b) = mem {
                if b.is_persistent() {
                    buffers.push((format!("{prefix}{name}"), b.tensor().clone()));
                }
            }
        });
        drop(m);
        for (cp, c) in &u.children {
            go(c, &format!("{prefix}{cp}."), params, buffers);
        }
    }
    go(unit, prefix, &mut params, &mut buffers);
    (params, buffers)
}

/// The pieces of parameter `p` that rank `r` holds: (first element in the parameter, element in
/// the rank's shard, length).
fn pieces(unit: &Unit, index: usize, r: usize) -> Option<(i64, i64, i64)> {
    let p = &unit.params[index];
    let (lo, hi) = unit.shard_range(r);
    let (a, b) = (p.offset.max(lo), (p.offset + p.numel).min(hi));
    (a < b).then_some((a - p.offset, a - lo, b - a))
}

/// Saves `model`'s shards into `dir` (created if missing) as Note [Distributed checkpoint
/// layout] describes. A collective: every rank of the model's group calls it with the same
/// directory, on a file system they share.
pub fn save<M: Forward + 'static>(model: &FullyShardedDataParallel<M>, dir: impl AsRef<Path>) -> Result<()> {
    let dir = dir.as_ref();
    let unit = model.unit();
    let (rank, world) = (unit.rank, unit.world);
    std::fs::create_dir_all(dir).map_err(|e| ckpt_error(format!("{}: {e}", dir.display())))?;
    if rank == 0 {
        // A save over an older checkpoint: the old metadata goes first, so a failed save
        // never leaves old metadata beside new pieces.
        match std::fs::remove_file(dir.join(METADATA_FILE)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(ckpt_error(format!("{}: {e}", dir.join(METADATA_FILE).display())))
            }
            _ => {}
        }
    }
    unit.group.barrier()?.wait()?;
    let (params, buffers) = walk(unit, "");
    // Pieces held by several ranks (NO_SHARD) are written by the lowest one only.
    let writer = |u: &Unit, r: usize| u.strategy != ShardingStrategy::NoShard || r == 0;
    let mut mine: Vec<(String, Tensor)> = Vec::new();
    for p in &params {
        if let (true, Some((start, at, len))) = (writer(p.unit, rank), pieces(p.unit, p.index, rank)) {
            mine.push((format!("{}|{start}", p.name), p.unit.shard.tensor().detach().narrow(0, at, len)?));
        }
    }
    if rank == 0 {
        mine.extend(buffers.iter().map(|(n, t)| (n.clone(), t.detach())));
    }
    let written = nn::serialize::save_file(mine.iter().map(|(n, t)| (n.as_str(), t)), None, dir.join(rank_file(rank)));
    // Every rank reports whether its file was written, so that no rank writes metadata for a
    // checkpoint another rank failed to complete.
    let all_written: Vec<bool> = crate::api::all_gather_object_in(&unit.group, &written.is_ok())?;
    written?;
    if all_written.contains(&false) {
        return Err(ckpt_error("another rank failed to write its part of the checkpoint"));
    }
    if rank == 0 {
        let mut tensors = serde_json::Map::new();
        for p in &params {
            let info = &p.unit.params[p.index];
            let mut list = Vec::new();
            for r in 0..world {
                if let (true, Some((start, _, len))) = (writer(p.unit, r), pieces(p.unit, p.index, r)) {
                    list.push(
                        json!({"file": rank_file(r), "key": format!("{}|{start}", p.name), "start": start, "len": len}),
                    );
                }
            }
            let aliases: Vec<String> =
                info.names[1..].iter().map(|n| replace_last(&p.name, &info.names[0], n)).collect();
            tensors.insert(
                p.name.clone(),
                json!({"shape": info.shape, "dtype": p.unit.dtype.name(), "aliases": aliases, "pieces": list}),
            );
        }
        let mut bufs = serde_json::Map::new();
        for (n, t) in &buffers {
            bufs.insert(n.clone(), json!({"file": rank_file(0), "shape": t.sizes(), "dtype": t.dtype().name()}));
        }
        let meta = json!({"version": CHECKPOINT_VERSION, "world_size": world, "tensors": tensors, "buffers": bufs});
        let path = dir.join(METADATA_FILE);
        let tmp = dir.join(".metadata.partial");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&meta).map_err(|e| ckpt_error(e.to_string()))?)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| ckpt_error(format!("{}: {e}", path.display())))?;
    }
    unit.group.barrier()?.wait()?;
    Ok(())
}

/// `name` with its last occurrence of `from` (a unit-relative name at its end) replaced by `to`.
fn replace_last(name: &str, from: &str, to: &str) -> String {
    match name.strip_suffix(from) {
        Some(prefix) => format!("{prefix}{to}"),
        None => to.to_string(),
    }
}

/// A parsed checkpoint directory, its files opened as needed.
struct Reader {
    dir: PathBuf,
    meta: Value,
    files: HashMap<String, StateDict>,
}

impl Reader {
    fn open(dir: &Path) -> Result<Reader> {
        let path = dir.join(METADATA_FILE);
        let bytes = std::fs::read(&path).map_err(|e| {
            ckpt_error(format!("{}: {e} (not a checkpoint, or its save did not finish)", path.display()))
        })?;
        let meta: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ckpt_error(format!("{}: not valid JSON: {e}", path.display())))?;
        match meta.get("version").and_then(Value::as_u64) {
            Some(CHECKPOINT_VERSION) => {}
            Some(v) => {
                return Err(ckpt_error(format!(
                    "{}: checkpoint format version {v}; this build reads version {CHECKPOINT_VERSION}",
                    path.display()
                )))
            }
            None => return Err(ckpt_error(format!("{}: no format version", path.display()))),
        }
        if !meta.get("tensors").is_some_and(Value::is_object) || !meta.get("buffers").is_some_and(Value::is_object) {
            return Err(ckpt_error(format!("{}: no tensor or buffer table", path.display())));
        }
        Ok(Reader { dir: dir.to_path_buf(), meta, files: HashMap::new() })
    }

    fn file(&mut self, name: &str) -> Result<&StateDict> {
        if name.contains('/') || name.contains('\\') || name.starts_with('.') {
            return Err(ckpt_error(format!("metadata names a file outside the checkpoint: {name:?}")));
        }
        if !self.files.contains_key(name) {
            let loaded = nn::serialize::load_file_mmap(self.dir.join(name))?;
            self.files.insert(name.to_string(), loaded.tensors);
        }
        Ok(&self.files[name])
    }

    /// The table entry of parameter `name` (or of a parameter it is an alias of).
    fn tensor_entry(&self, name: &str) -> Option<Value> {
        let tensors = self.meta["tensors"].as_object()?;
        tensors.get(name).cloned().or_else(|| {
            tensors
                .values()
                .find(|v| v["aliases"].as_array().is_some_and(|a| a.iter().any(|n| n.as_str() == Some(name))))
                .cloned()
        })
    }

    /// Elements `[start, start + len)` of the flattened parameter `name`, of `dtype`, assembled
    /// from the pieces that cover them.
    fn read_range(&mut self, name: &str, shape: &[i64], dtype: ScalarType, start: i64, len: i64) -> Result<Tensor> {
        let entry =
            self.tensor_entry(name).ok_or_else(|| ckpt_error(format!("the checkpoint has no parameter \"{name}\"")))?;
        let saved_shape: Vec<i64> = entry["shape"].as_array().into_iter().flatten().filter_map(Value::as_i64).collect();
        if saved_shape != shape {
            return Err(ckpt_error(format!(
                "size mismatch for {name}: the checkpoint has shape {saved_shape:?}, the model {shape:?}"
            )));
        }
        if entry["dtype"].as_str() != Some(dtype.name()) {
            return Err(ckpt_error(format!(
                "dtype mismatch for {name}: the checkpoint has {}, the model {}",
                entry["dtype"],
                dtype.name()
            )));
        }
        let out = aten::ops::empty(&[len], Some(dtype), None, None, None, None)?;
        let mut covered = 0;
        for piece in entry["pieces"].as_array().into_iter().flatten() {
            let (Some(file), Some(key), Some(ps), Some(pl)) =
                (piece["file"].as_str(), piece["key"].as_str(), piece["start"].as_i64(), piece["len"].as_i64())
            else {
                return Err(ckpt_error(format!("a malformed piece of {name} in the metadata: {piece}")));
            };
            let (a, b) = (ps.max(start), (ps + pl).min(start + len));
            if a >= b {
                continue;
            }
            let t = self
                .file(file)?
                .get(key)
                .ok_or_else(|| ckpt_error(format!("{file} has no tensor \"{key}\" (named by the metadata)")))?
                .clone();
            if t.dim() != 1 || t.numel() != pl || t.dtype() != dtype {
                return Err(ckpt_error(format!(
                    "{file}: \"{key}\" is {:?} {}, the metadata says [{pl}] {}",
                    t.sizes(),
                    t.dtype().name(),
                    dtype.name()
                )));
            }
            out.narrow(0, a - start, b - a)?.copy_(&t.narrow(0, a - ps, b - a)?).call()?;
            covered += b - a;
        }
        if covered != len {
            return Err(ckpt_error(format!(
                "the checkpoint's pieces of {name} cover {covered} of the {len} elements [{start}, {}) needed",
                start + len
            )));
        }
        Ok(out)
    }

    fn buffer(&mut self, name: &str) -> Result<Tensor> {
        let entry = self.meta["buffers"]
            .get(name)
            .cloned()
            .ok_or_else(|| ckpt_error(format!("the checkpoint has no buffer \"{name}\"")))?;
        let file = entry["file"].as_str().ok_or_else(|| ckpt_error(format!("no file for buffer {name}")))?.to_string();
        self.file(&file)?
            .get(name)
            .cloned()
            .ok_or_else(|| ckpt_error(format!("{file} has no tensor \"{name}\" (named by the metadata)")))
    }
}

/// Loads a checkpoint saved by [`save`] (at any world size) into `model`: each rank reads the
/// pieces its shards need. Everything is read and checked before the model is changed.
pub fn load<M: Forward + 'static>(model: &FullyShardedDataParallel<M>, dir: impl AsRef<Path>) -> Result<()> {
    let unit = model.unit();
    let mut reader = Reader::open(dir.as_ref())?;
    let (params, buffers) = walk(unit, "");
    let mut plan: Vec<(Tensor, Tensor)> = Vec::new();
    for p in &params {
        let info = &p.unit.params[p.index];
        if let Some((start, at, len)) = pieces(p.unit, p.index, p.unit.rank) {
            let src = reader.read_range(&p.name, &info.shape, p.unit.dtype, start, len)?;
            plan.push((p.unit.shard.tensor().detach().narrow(0, at, len)?, src));
        }
    }
    for (name, t) in &buffers {
        let src = reader.buffer(name)?;
        if src.sizes() != t.sizes() {
            return Err(ckpt_error(format!(
                "size mismatch for {name}: the checkpoint has shape {:?}, the model {:?}",
                src.sizes(),
                t.sizes()
            )));
        }
        plan.push((t.clone(), src));
    }
    let _g = autograd::no_grad();
    for (dst, src) in plan {
        dst.copy_(&src).call().map_err(|e| fsdp_error(format!("loading the checkpoint: {e}")))?;
    }
    Ok(())
}

/// An ordinary state dict (original names, whole tensors, tied parameters under each name) from
/// a checkpoint directory; needs no process group.
pub fn consolidate(dir: impl AsRef<Path>) -> Result<StateDict> {
    let mut reader = Reader::open(dir.as_ref())?;
    let mut out = StateDict::new();
    let tensors: Vec<(String, Value)> =
        reader.meta["tensors"].as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
    for (name, entry) in tensors {
        let shape: Vec<i64> = entry["shape"].as_array().into_iter().flatten().filter_map(Value::as_i64).collect();
        let dtype = entry["dtype"]
            .as_str()
            .and_then(|n| ScalarType::from_name(n).ok())
            .ok_or_else(|| ckpt_error(format!("unknown dtype {} for {name}", entry["dtype"])))?;
        let numel = shape.iter().product::<i64>();
        let t = reader.read_range(&name, &shape, dtype, 0, numel)?.reshape(shape.as_slice())?;
        for alias in entry["aliases"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            out.insert(alias, t.clone());
        }
        out.insert(name, t);
    }
    let names: Vec<String> = reader.meta["buffers"].as_object().into_iter().flatten().map(|(k, _)| k.clone()).collect();
    for name in names {
        let t = reader.buffer(&name)?;
        out.insert(name, t);
    }
    Ok(out)
}
