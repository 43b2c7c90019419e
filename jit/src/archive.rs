//! Saving and loading [`ScriptModule`]s.
//!
//! Note [Archive format]: our archive is a zip (entries stored, not compressed) with, under one
//! directory `<name>/`:
//! - `jit.json`: `{"format": "torch-rs-jit", "version": 1, "inputs": N, "parameters": [names],
//!   "buffers": [names], "constants": K}` — what the graph's inputs are and how many tensor
//!   constants it has;
//! - `graph.txt`: the graph in the text form (`text.rs`), tensor constants as `<Tensor k>`;
//! - `tensors.safetensors`: the parameters (`parameters.<name>`), buffers (`buffers.<name>`)
//!   and tensor constants (`constants.<k>`).
//!
//! A reader refuses another `format` or a newer `version`. [`load`] also reads PyTorch's
//! `torch.jit.save` archives (they have `data.pkl` and `code/` instead of `jit.json`;
//! `import.rs`) and `torch.export` programs (`.pt2`: an `archive_format` record; `export.rs`). Either way the graph is compiled when loaded, so an operator we lack is an
//! error of the load, naming the file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use c10::{Error, Result};
use nn::{Buffer, Module, Parameter, PtArchive};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use crate::module::ScriptModule;
use crate::text::parse_with;

/// The `format` of our archives.
pub const FORMAT: &str = "torch-rs-jit";
/// The newest `version` this build reads and the one it writes.
pub const VERSION: u64 = 1;

fn io_err(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Io(format!("{}: {what}", path.display()))
}

impl ScriptModule {
    /// Writes the module to `path` (Note [Archive format]). The file is written under a
    /// temporary name and renamed, so an existing file is only replaced by a complete one.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let name = path.file_stem().and_then(|s| s.to_str()).filter(|s| !s.is_empty()).unwrap_or("archive").to_string();
        let graph = self.graph();
        let text = graph.to_string();
        let params = self.named_parameters();
        let buffers = self.named_buffers();
        let mut tensors: Vec<(String, aten::Tensor)> = Vec::new();
        tensors.extend(params.iter().map(|(n, p)| (format!("parameters.{n}"), p.tensor().clone())));
        tensors.extend(buffers.iter().map(|(n, t)| (format!("buffers.{n}"), t.clone())));
        tensors.extend(graph.tensor_constants.iter().enumerate().map(|(k, t)| (format!("constants.{k}"), t.clone())));
        let detached: Vec<(String, aten::Tensor)> =
            tensors.into_iter().map(|(n, t)| (n, autograd::TensorAutograd::detach(&t))).collect();
        let st = nn::serialize::save_bytes(detached.iter().map(|(n, t)| (n.as_str(), t)), None)?;
        let meta = serde_json::json!({
            "format": FORMAT,
            "version": VERSION,
            "inputs": self.num_inputs(),
            "parameters": params.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
            "buffers": buffers.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
            "constants": graph.tensor_constants.len(),
        });
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".partial");
        let tmp = PathBuf::from(tmp);
        let write = || -> std::result::Result<(), String> {
            let file = File::create(&tmp).map_err(|e| e.to_string())?;
            let mut zip = ZipWriter::new(file);
            let opts = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
            for (entry, bytes) in [
                ("jit.json", serde_json::to_vec_pretty(&meta).map_err(|e| e.to_string())?),
                ("graph.txt", text.into_bytes()),
                ("tensors.safetensors", st),
            ] {
                zip.start_file(format!("{name}/{entry}"), opts).map_err(|e| e.to_string())?;
                zip.write_all(&bytes).map_err(|e| e.to_string())?;
            }
            zip.finish().map_err(|e| e.to_string())?;
            std::fs::rename(&tmp, path).map_err(|e| e.to_string())
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io_err(path, e)
        })
    }
}

/// Loads an archive: ours (written by [`ScriptModule::save`]) or PyTorch's (`torch.jit.save` of
/// a traced module).
pub fn load(path: impl AsRef<Path>) -> Result<ScriptModule> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let mut zip = nn::pt::open_zip(file).map_err(|e| io_err(path, format!("not a zip archive ({e})")))?;
    let names: Vec<String> =
        zip.file_names_raw().filter_map(|n| std::str::from_utf8(n).ok()).map(str::to_string).collect();
    if crate::export::is_pt2(&names) {
        return crate::export::load_pt2(path, zip);
    }
    let ours = zip
        .file_names_raw()
        .filter_map(|n| std::str::from_utf8(n).ok())
        .find(|n| n.ends_with("/jit.json") || *n == "jit.json")
        .map(str::to_string);
    let module = match ours {
        Some(meta) => load_ours(&mut zip, &meta, path)?,
        None => crate::import::load_torchscript(&mut PtArchive::open(path)?)?,
    };
    // Compile now (the module keeps the code): an operator we lack is an error of the load.
    module.compile().map_err(|e| io_err(path, e))?;
    Ok(module)
}

fn read(zip: &mut ZipArchive<File>, name: &str, path: &Path) -> Result<Vec<u8>> {
    let mut f = zip.by_name(name).map_err(|e| io_err(path, format!("{name}: {e}")))?;
    let mut out = Vec::new();
    f.read_to_end(&mut out).map_err(|e| io_err(path, format!("{name}: {e}")))?;
    Ok(out)
}

fn load_ours(zip: &mut ZipArchive<File>, meta_name: &str, path: &Path) -> Result<ScriptModule> {
    let prefix = meta_name.strip_suffix("jit.json").unwrap_or("");
    let meta: serde_json::Value =
        serde_json::from_slice(&read(zip, meta_name, path)?).map_err(|e| io_err(path, format!("{meta_name}: {e}")))?;
    let bad = |what: &str| io_err(path, format!("{meta_name}: {what}"));
    if meta["format"] != FORMAT {
        return Err(bad(&format!("format {} is not {FORMAT:?}", meta["format"])));
    }
    let version = meta["version"].as_u64().ok_or_else(|| bad("no version"))?;
    if version == 0 || version > VERSION {
        return Err(bad(&format!(
            "archive version {version} is not supported (this build reads versions 1 to {VERSION})"
        )));
    }
    let names = |key: &str| -> Result<Vec<String>> {
        meta[key]
            .as_array()
            .ok_or_else(|| bad(&format!("no {key} list")))?
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(|| bad(&format!("a {key} name is not a string"))))
            .collect()
    };
    let (param_names, buffer_names) = (names("parameters")?, names("buffers")?);
    let n_constants = meta["constants"].as_u64().ok_or_else(|| bad("no constants count"))? as usize;
    let st_name = format!("{prefix}tensors.safetensors");
    let st = read(zip, &st_name, path)?;
    let loaded = nn::serialize::load_bytes(&st, &PathBuf::from(format!("{} ({st_name})", path.display())))?;
    let mut tensors: HashMap<String, aten::Tensor> =
        loaded.tensors.iter().map(|(n, t)| (n.to_string(), t.clone())).collect();
    let mut take =
        |key: String| tensors.remove(&key).ok_or_else(|| io_err(path, format!("{st_name} has no tensor {key}")));
    let mut constants = Vec::new();
    for k in 0..n_constants {
        constants.push(take(format!("constants.{k}"))?);
    }
    let mut parameters = Vec::new();
    for n in param_names {
        parameters.push((n.clone(), Parameter::new(take(format!("parameters.{n}"))?)?));
    }
    let mut buffers = Vec::new();
    for n in buffer_names {
        buffers.push((n.clone(), Buffer::new(take(format!("buffers.{n}"))?)));
    }
    let graph_name = format!("{prefix}graph.txt");
    let text = String::from_utf8(read(zip, &graph_name, path)?)
        .map_err(|_| io_err(path, format!("{graph_name} is not UTF-8")))?;
    let graph = parse_with(&text, constants).map_err(|e| io_err(path, format!("{graph_name}: {e}")))?;
    let m = ScriptModule::new(graph, parameters, buffers).map_err(|e| io_err(path, e))?;
    let declared = meta["inputs"].as_u64().unwrap_or(u64::MAX) as usize;
    if m.num_inputs() != declared {
        return Err(bad(&format!("the graph takes {} inputs, jit.json says {declared}", m.num_inputs())));
    }
    Ok(m)
}
