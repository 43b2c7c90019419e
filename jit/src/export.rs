//! Loading `torch.export` programs (`.pt2`, PyTorch's current export format): the serialized
//! `ExportedProgram` (`models/<name>.json`), its weights (`data/weights`) and constants
//! (`data/constants`) become a [`ScriptModule`] whose graph calls our operators.
//!
//! Note [Exported programs]: the JSON graph is a list of nodes, each a call of
//! `torch.ops.aten.<name>.<overload>` with its arguments by schema name (defaults left out) and
//! its outputs by name. A node becomes an `aten::` node of the overload named (`default` is the
//! unnamed overload), every schema argument filled from the node or the schema's default.
//! The graph signature says what each placeholder is: parameters and buffers (by their
//! state-dict names) become the module's parameters and buffers, tensor constants the graph's
//! tensor constants, user inputs the forward's inputs. Sizes: every dimension of a user input
//! is checked when the module runs, a static one for its exact size and a symbolic one
//! (`s77`) against its `range_constraints`, and an input outside them is an error naming the
//! input, the dimension and the range. Buffers the signature lists under `buffer_mutation` are
//! written back in place (`copy_`) at the end, as `ep.module()` does. The file's
//! `schema_version` must have major version 8 (PyTorch 2.15's); other versions are refused.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use aten::Tensor;
use c10::{Error, Result, ScalarType};
use nn::{Buffer, Parameter};
use serde_json::Value as Json;
use zip::ZipArchive;

use crate::import::jit_type;
use crate::interpreter::memory_format_code;
use crate::ir::{Constant, Graph, ValueId};
use crate::module::ScriptModule;
use crate::types::{JitType, TensorType};

/// The `schema_version.major` this build reads.
pub const SCHEMA_MAJOR: u64 = 8;

fn err(path: &Path, msg: impl std::fmt::Display) -> Error {
    Error::invalid("jit::load", format!("{}: {msg}", path.display()))
}

/// The dtype of the export schema's `ScalarType` enum (not c10's numbering).
fn dtype(code: i64) -> Option<ScalarType> {
    Some(match code {
        1 => ScalarType::U8,
        2 => ScalarType::I8,
        3 => ScalarType::I16,
        4 => ScalarType::I32,
        5 => ScalarType::I64,
        6 => ScalarType::F16,
        7 => ScalarType::F32,
        8 => ScalarType::F64,
        10 => ScalarType::C64,
        11 => ScalarType::C128,
        12 => ScalarType::Bool,
        13 => ScalarType::BF16,
        _ => return None,
    })
}

/// Whether the zip at `path` is a `.pt2` archive (it has an `archive_format` record).
pub fn is_pt2(names: &[String]) -> bool {
    names.iter().any(|n| n.ends_with("/archive_format") && n.matches('/').count() == 1)
}

struct Reader<'a> {
    path: &'a Path,
    zip: ZipArchive<std::fs::File>,
    prefix: String,
}

impl Reader<'_> {
    fn read(&mut self, name: &str) -> Result<Vec<u8>> {
        let full = format!("{}/{name}", self.prefix);
        let mut f = self.zip.by_name(&full).map_err(|e| err(self.path, format!("{full}: {e}")))?;
        // A corrupted size field must not make us allocate it.
        let mut out = Vec::with_capacity((f.size() as usize).min(1 << 26));
        f.read_to_end(&mut out).map_err(|e| err(self.path, format!("{full}: {e}")))?;
        Ok(out)
    }

    fn json(&mut self, name: &str) -> Result<Json> {
        let bytes = self.read(name)?;
        serde_json::from_slice(&bytes).map_err(|e| err(self.path, format!("{}/{name}: {e}", self.prefix)))
    }

    fn has(&self, name: &str) -> bool {
        self.zip.index_for_name(&format!("{}/{name}", self.prefix)).is_some()
    }

    /// The tensors of `data/<dir>/<config>`: fqn → tensor, viewed as its metadata says.
    fn tensors(&mut self, dir: &str, config: &str) -> Result<HashMap<String, Tensor>> {
        let record = format!("data/{dir}/{config}");
        if !self.has(&record) {
            return Ok(HashMap::new());
        }
        let cfg = self.json(&record)?;
        let entries = cfg["config"].as_object().cloned().unwrap_or_default();
        let mut out = HashMap::new();
        let mut storages: HashMap<String, Tensor> = HashMap::new();
        for (fqn, e) in entries {
            let bad = |what: &str| err(self.path, format!("{record}: {fqn}: {what}"));
            if e["use_pickle"].as_bool() == Some(true) {
                return Err(bad("a pickled tensor (a tensor subclass or custom object) is not supported"));
            }
            let file = e["path_name"].as_str().ok_or_else(|| bad("no path_name"))?.to_string();
            let meta = &e["tensor_meta"];
            let dt = meta["dtype"].as_i64().and_then(dtype).ok_or_else(|| bad(&format!("dtype {}", meta["dtype"])))?;
            let ints =
                |k: &str| -> Option<Vec<i64>> { meta[k].as_array()?.iter().map(|s| s["as_int"].as_i64()).collect() };
            let sizes = ints("sizes").ok_or_else(|| bad("sizes"))?;
            let strides = ints("strides").ok_or_else(|| bad("strides"))?;
            let offset = meta["storage_offset"]["as_int"].as_i64().unwrap_or(0);
            let flat = match storages.get(&file) {
                Some(t) => t.clone(),
                None => {
                    let bytes = self.read(&format!("data/{dir}/{file}"))?;
                    let n = bytes.len() / dt.size();
                    if n * dt.size() != bytes.len() {
                        return Err(bad(&format!(
                            "{} bytes is not a whole number of {} elements",
                            bytes.len(),
                            dt.name()
                        )));
                    }
                    let t = nn::serialize::decode(nn::serialize::dtype_of(dt)?, &[n], &bytes)?;
                    storages.insert(file.clone(), t.clone());
                    t
                }
            };
            // The extent the view reaches must lie inside the storage.
            let numel = flat.numel();
            let last = sizes.iter().zip(&strides).try_fold(offset, |acc, (&s, &st)| {
                if s == 0 {
                    None
                } else {
                    acc.checked_add((s - 1).checked_mul(st)?)
                }
            });
            if sizes.iter().any(|&s| s < 0)
                || strides.iter().any(|&s| s < 0)
                || offset < 0
                || sizes.len() != strides.len()
            {
                return Err(bad("invalid sizes or strides"));
            }
            if let Some(l) = last {
                if l >= numel {
                    return Err(bad(&format!("the view reaches element {l} of a storage of {numel}")));
                }
            }
            let t = if sizes.contains(&0) {
                aten::ops::zeros(&sizes, Some(dt), None, None, None)?
            } else {
                aten::ops::as_strided(&flat, sizes.as_slice(), strides.as_slice(), Some(offset))?
            };
            out.insert(fqn, t);
        }
        Ok(out)
    }
}

/// Loads a `.pt2` archive written by `torch.export.save` (Note [Exported programs]).
pub fn load_pt2(path: &Path, zip: ZipArchive<std::fs::File>) -> Result<ScriptModule> {
    let names: Vec<String> =
        zip.file_names_raw().filter_map(|n| std::str::from_utf8(n).ok()).map(str::to_string).collect();
    let prefix = names
        .iter()
        .find_map(|n| n.strip_suffix("/archive_format"))
        .ok_or_else(|| err(path, "not a .pt2 archive: no archive_format record"))?
        .to_string();
    let mut r = Reader { path, zip, prefix };
    let format = String::from_utf8(r.read("archive_format")?).unwrap_or_default();
    if format.trim() != "pt2" {
        return Err(err(path, format!("archive_format is {:?}, not \"pt2\"", format.trim())));
    }
    let model = names
        .iter()
        .filter_map(|n| n.strip_prefix(&format!("{}/models/", r.prefix))?.strip_suffix(".json"))
        .min()
        .ok_or_else(|| err(path, "no models/<name>.json record (the 2.7 layout is not read)"))?
        .to_string();
    let record = format!("models/{model}.json");
    let ep = r.json(&record)?;
    let at = |what: String| err(path, format!("{}/{record}: {what}", r.prefix));
    let major = ep["schema_version"]["major"].as_u64();
    let minor = ep["schema_version"]["minor"].as_u64().unwrap_or(0);
    if major != Some(SCHEMA_MAJOR) {
        return Err(at(format!(
            "schema version {}.{minor} is not read by this build (it reads {SCHEMA_MAJOR}.x, PyTorch 2.15's)",
            major.map_or("?".to_string(), |m| m.to_string())
        )));
    }
    let weights = r.tensors("weights", "model_weights_config.json")?;
    let constants = r.tensors("constants", "model_constants_config.json")?;
    Builder { path, record: format!("{}/{record}", r.prefix), graph: Graph::new(), values: HashMap::new() }
        .build(&ep, weights, constants)
}

struct Builder<'a> {
    path: &'a Path,
    record: String,
    graph: Graph,
    /// JSON names (tensors and symbolic ints) → graph values.
    values: HashMap<String, ValueId>,
}

impl Builder<'_> {
    fn err(&self, msg: impl std::fmt::Display) -> Error {
        err(self.path, format!("{}: {msg}", self.record))
    }

    /// A constant, at the start of the graph (in scope in every block).
    fn constant(&mut self, c: Constant) -> ValueId {
        let b = self.graph.root();
        self.graph.insert_constant(b, Some(0), c)
    }

    fn node(&mut self, kind: &str, inputs: &[ValueId], types: Vec<JitType>) -> Vec<ValueId> {
        let b = self.graph.root();
        let n = self.graph.append_node(b, kind, inputs, types);
        self.graph.outputs_of(n).to_vec()
    }

    fn value(&self, name: &str) -> Result<ValueId> {
        self.values.get(name).copied().ok_or_else(|| self.err(format!("'{name}' is used before it is defined")))
    }

    fn build(
        mut self,
        ep: &Json,
        weights: HashMap<String, Tensor>,
        constants: HashMap<String, Tensor>,
    ) -> Result<ScriptModule> {
        let gm = &ep["graph_module"];
        let graph = &gm["graph"];
        let specs = gm["signature"]["input_specs"].as_array().cloned().unwrap_or_default();
        let metas = graph["tensor_values"].as_object().cloned().unwrap_or_default();
        // User inputs first (the forward's), then parameters, then buffers.
        let mut users = Vec::new();
        let mut params = Vec::new();
        let mut buffers = Vec::new();
        for spec in &specs {
            let (kind, body) =
                spec.as_object().and_then(|o| o.iter().next()).ok_or_else(|| self.err("an empty input spec"))?;
            let arg_name = |b: &Json| -> Option<String> {
                b["arg"]["name"].as_str().or_else(|| b["arg"]["as_tensor"]["name"].as_str()).map(str::to_string)
            };
            let name = arg_name(body).ok_or_else(|| self.err(format!("a {kind} input without a name")))?;
            match kind.as_str() {
                "user_input" => users.push(name),
                "parameter" => {
                    let fqn =
                        body["parameter_name"].as_str().ok_or_else(|| self.err("a parameter without its name"))?;
                    let t = weights.get(fqn).ok_or_else(|| self.err(format!("no weight for parameter {fqn}")))?;
                    params.push((name, fqn.to_string(), t.clone()));
                }
                "buffer" => {
                    let fqn = body["buffer_name"].as_str().ok_or_else(|| self.err("a buffer without its name"))?;
                    let t = weights
                        .get(fqn)
                        .or_else(|| constants.get(fqn))
                        .ok_or_else(|| self.err(format!("no tensor for buffer {fqn}")))?;
                    buffers.push((name, fqn.to_string(), t.clone()));
                }
                "tensor_constant" => {
                    let fqn =
                        body["tensor_constant_name"].as_str().ok_or_else(|| self.err("a constant without its name"))?;
                    let t = constants.get(fqn).ok_or_else(|| self.err(format!("no tensor for constant {fqn}")))?;
                    let k = self.graph.add_tensor_constant(t.clone());
                    let v = self.constant(Constant::Tensor(k));
                    self.values.insert(name, v);
                }
                other => return Err(self.err(format!("input kind '{other}' is not supported"))),
            }
        }
        for name in &users {
            let v = self.graph.add_input(JitType::tensor(), Some(name));
            self.values.insert(name.clone(), v);
        }
        for (name, _, t) in params.iter().chain(&buffers) {
            let v = self.graph.add_input(JitType::Tensor(TensorType::of(t)), Some(name));
            self.values.insert(name.clone(), v);
        }
        self.size_checks(&users, &metas, ep)?;
        for node in graph["nodes"].as_array().cloned().unwrap_or_default() {
            self.node_of(&node)?;
        }
        // Outputs; buffers the program mutates functionally are written back.
        let mut outs = Vec::new();
        for spec in gm["signature"]["output_specs"].as_array().cloned().unwrap_or_default() {
            let (kind, body) =
                spec.as_object().and_then(|o| o.iter().next()).ok_or_else(|| self.err("an empty output spec"))?;
            let name = body["arg"]["as_tensor"]["name"].as_str().or_else(|| body["arg"]["name"].as_str());
            match kind.as_str() {
                "user_output" => {
                    let v = match (name, &body["arg"]) {
                        (Some(n), _) => self.value(n)?,
                        (None, a) => self.argument(a)?,
                    };
                    outs.push(v);
                }
                "buffer_mutation" => {
                    let fqn =
                        body["buffer_name"].as_str().ok_or_else(|| self.err("a buffer mutation without its buffer"))?;
                    let (placeholder, _, _) = buffers
                        .iter()
                        .find(|(_, f, _)| f == fqn)
                        .ok_or_else(|| self.err(format!("buffer_mutation of unknown buffer {fqn}")))?;
                    let (buf, v) = (
                        self.value(placeholder)?,
                        self.value(name.ok_or_else(|| self.err("a mutation without a value"))?)?,
                    );
                    if buf != v {
                        self.copy_into(buf, v)?;
                    }
                }
                other => return Err(self.err(format!("output kind '{other}' is not supported"))),
            }
        }
        let out = match outs.as_slice() {
            [one] => *one,
            many => {
                let ty = JitType::Tuple(many.iter().map(|&v| self.graph.value_type(v).clone()).collect());
                self.node("prim::TupleConstruct", many, vec![ty])[0]
            }
        };
        self.graph.add_output(out);
        self.graph.lint().map_err(|e| self.err(e))?;
        let parameters = params.into_iter().map(|(_, n, t)| Ok((n, Parameter::new(t)?))).collect::<Result<Vec<_>>>()?;
        let buffers = buffers.into_iter().map(|(_, n, t)| (n, Buffer::new(t))).collect();
        let module = ScriptModule::new(self.graph, parameters, buffers)?;
        module.compile().map_err(|e| err(self.path, e))?;
        Ok(module)
    }

    fn copy_into(&mut self, dst: ValueId, src: ValueId) -> Result<()> {
        let f = self.constant(Constant::Bool(false));
        let (_, schema) = aten::dispatcher().find_schema("copy_").map_err(|e| self.err(e))?;
        let types = schema.returns.iter().map(|r| jit_type(&r.ty)).collect();
        self.node("aten::copy_", &[dst, src, f], types);
        Ok(())
    }

    /// Checks of every user input's rank and sizes (Note [Exported programs]).
    fn size_checks(&mut self, users: &[String], metas: &serde_json::Map<String, Json>, ep: &Json) -> Result<()> {
        let ranges = ep["range_constraints"].as_object().cloned().unwrap_or_default();
        for name in users {
            let Some(meta) = metas.get(name) else { continue };
            let x = self.value(name)?;
            let sizes = meta["sizes"].as_array().cloned().unwrap_or_default();
            let rank = sizes.len() as i64;
            let dim = self.node("aten::dim", &[x], vec![JitType::Int])[0];
            let want = self.constant(Constant::Int(rank));
            let msg = format!("input '{name}' must have {rank} dimensions, got {{}}");
            self.check(dim, want, want, &msg)?;
            for (d, s) in sizes.iter().enumerate() {
                let dv = self.constant(Constant::Int(d as i64));
                let size = self.node("aten::size", &[x, dv], vec![JitType::Int])[0];
                if let Some(k) = s["as_int"].as_i64() {
                    let c = self.constant(Constant::Int(k));
                    self.check(size, c, c, &format!("input '{name}' dimension {d} must be {k}, got {{}}"))?;
                    continue;
                }
                let expr = s["as_expr"]["expr_str"].as_str().unwrap_or("");
                let symbol =
                    expr.strip_prefix("Symbol('").and_then(|r| r.split('\'').next()).unwrap_or(expr).to_string();
                if !symbol.is_empty() {
                    self.values.entry(symbol.clone()).or_insert(size);
                }
                let range = ranges.get(&symbol);
                let lo = range.and_then(|r| r["min_val"].as_i64()).unwrap_or(0);
                let hi = range.and_then(|r| r["max_val"].as_i64()).unwrap_or(i64::MAX);
                let (l, h) = (self.constant(Constant::Int(lo)), self.constant(Constant::Int(hi)));
                let shown = if hi == i64::MAX { "inf".to_string() } else { hi.to_string() };
                let msg = format!("input '{name}' dimension {d} ({symbol}) must be in [{lo}, {shown}], got {{}}");
                self.check(size, l, h, &msg)?;
            }
        }
        Ok(())
    }

    /// `if not (lo <= v <= hi): raise ValueError(msg.format(v))`.
    fn check(&mut self, v: ValueId, lo: ValueId, hi: ValueId, msg: &str) -> Result<()> {
        let ge = self.node("aten::ge", &[v, lo], vec![JitType::Bool])[0];
        let le = self.node("aten::le", &[v, hi], vec![JitType::Bool])[0];
        let ok = self.node("aten::__and__", &[ge, le], vec![JitType::Bool])[0];
        let b = self.graph.root();
        let n = self.graph.append_node(b, "prim::If", &[ok], Vec::new());
        self.graph.add_block(n);
        let fail = self.graph.add_block(n);
        let fmt = self.constant(Constant::Str(msg.to_string()));
        let class = self.constant(Constant::Str("builtins.ValueError".into()));
        let f = self.graph.append_node(fail, "aten::format", &[fmt, v], vec![JitType::Str]);
        let text = self.graph.outputs_of(f)[0];
        self.graph.append_node(fail, "prim::RaiseException", &[text, class], Vec::new());
        Ok(())
    }

    /// A node of the JSON graph.
    fn node_of(&mut self, node: &Json) -> Result<()> {
        let target = node["target"].as_str().ok_or_else(|| self.err("a node without a target"))?;
        let outputs = node["outputs"].as_array().cloned().unwrap_or_default();
        // Symbolic-int arithmetic and sizes.
        let arith = match target {
            "_operator.add" => Some("aten::add"),
            "_operator.sub" => Some("aten::sub"),
            "_operator.mul" => Some("aten::mul"),
            "_operator.floordiv" => Some("aten::floordiv"),
            "_operator.mod" => Some("aten::remainder"),
            _ => None,
        };
        let Some(op) = target.strip_prefix("torch.ops.aten.") else {
            let Some(kind) = arith else {
                return Err(self.err(format!(
                    "node '{}' calls {target}, which is not supported",
                    node["name"].as_str().unwrap_or("?")
                )));
            };
            let ins = node["inputs"].as_array().cloned().unwrap_or_default();
            let vs = ins.iter().map(|a| self.argument(&a["arg"])).collect::<Result<Vec<_>>>()?;
            let v = self.node(kind, &vs, vec![JitType::Int])[0];
            self.bind_outputs(&outputs, &[v])?;
            return Ok(());
        };
        let (name, overload) =
            op.rsplit_once('.').ok_or_else(|| self.err(format!("target {target} has no overload")))?;
        let qualified = if overload == "default" { name.to_string() } else { format!("{name}.{overload}") };
        if name == "sym_size" {
            let ins = node["inputs"].as_array().cloned().unwrap_or_default();
            let vs = ins.iter().map(|a| self.argument(&a["arg"])).collect::<Result<Vec<_>>>()?;
            let v = self.node("aten::size", &vs, vec![JitType::Int])[0];
            self.bind_outputs(&outputs, &[v])?;
            return Ok(());
        }
        let (_, schema) = aten::dispatcher().find_schema(&qualified).map_err(|_| {
            self.err(format!("unknown operator aten::{qualified} (node '{}')", node["name"].as_str().unwrap_or("?")))
        })?;
        let given: HashMap<String, Json> = node["inputs"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|a| Some((a["name"].as_str()?.to_string(), a["arg"].clone())))
            .collect();
        let mut inputs = Vec::new();
        for a in &schema.arguments {
            let v = match given.get(&a.name) {
                Some(arg) => self.typed_argument(arg, &a.ty)?,
                None => {
                    let d = a
                        .default
                        .as_ref()
                        .ok_or_else(|| self.err(format!("aten::{qualified}: '{}' has no value", a.name)))?;
                    let c = crate::import::default_constant(d, &a.ty)
                        .map_err(|m| self.err(format!("aten::{qualified}: {m}")))?;
                    self.constant(c)
                }
            };
            inputs.push(v);
        }
        if let Some(extra) = given.keys().find(|k| !schema.arguments.iter().any(|a| a.name == **k)) {
            return Err(self.err(format!("aten::{qualified} has no argument '{extra}'")));
        }
        let types: Vec<JitType> = schema.returns.iter().map(|r| jit_type(&r.ty)).collect();
        let outs = self.node(&format!("aten::{}", schema.name), &inputs, types);
        self.bind_outputs(&outputs, &outs)
    }

    /// Names a node's outputs: `as_tensor`, `as_tensors` (a list output, unpacked), `as_sym_int`.
    fn bind_outputs(&mut self, outputs: &[Json], values: &[ValueId]) -> Result<()> {
        if let ([out], [v]) = (outputs, values) {
            if let Some(items) = out["as_tensors"].as_array() {
                let types = vec![JitType::tensor(); items.len()];
                let parts = self.node("prim::ListUnpack", &[*v], types);
                for (item, p) in items.iter().zip(parts) {
                    if let Some(n) = item["name"].as_str() {
                        self.values.insert(n.to_string(), p);
                    }
                }
                return Ok(());
            }
        }
        if outputs.len() > values.len() {
            return Err(self.err(format!(
                "a node names {} outputs of an operator with {}",
                outputs.len(),
                values.len()
            )));
        }
        for (out, &v) in outputs.iter().zip(values) {
            let name = out["as_tensor"]["name"]
                .as_str()
                .or_else(|| out["as_sym_int"]["as_name"].as_str())
                .or_else(|| out["as_int"].as_str());
            if let Some(n) = name {
                self.graph.set_value_name(v, Some(n));
                self.values.insert(n.to_string(), v);
            }
        }
        Ok(())
    }

    /// An argument as a graph value, converted for a schema argument of type `ty` (dtypes from
    /// the export enum to ours, ints where a float is expected).
    fn typed_argument(&mut self, arg: &Json, ty: &schema::Type) -> Result<ValueId> {
        use schema::Type;
        let inner = match ty {
            Type::Optional(t) => t.as_ref(),
            t => t,
        };
        if let (Some(k), Type::Float) = (arg["as_int"].as_i64(), inner) {
            return Ok(self.constant(Constant::Float(k as f64)));
        }
        self.argument(arg)
    }

    /// An argument of the JSON (a one-key union) as a graph value.
    fn argument(&mut self, arg: &Json) -> Result<ValueId> {
        let (kind, v) =
            arg.as_object().and_then(|o| o.iter().next()).ok_or_else(|| self.err(format!("argument {arg}")))?;
        let (path, record) = (self.path, self.record.clone());
        let bad = || err(path, format!("{record}: argument {arg}"));
        Ok(match kind.as_str() {
            "as_none" => self.constant(Constant::None),
            "as_tensor" => self.value(v["name"].as_str().ok_or_else(bad)?)?,
            "as_int" => self.constant(Constant::Int(v.as_i64().ok_or_else(bad)?)),
            "as_float" => self.constant(Constant::Float(float(v).ok_or_else(bad)?)),
            "as_bool" => self.constant(Constant::Bool(v.as_bool().ok_or_else(bad)?)),
            "as_string" => self.constant(Constant::Str(v.as_str().ok_or_else(bad)?.to_string())),
            "as_ints" => self.constant(Constant::IntList(
                v.as_array().ok_or_else(bad)?.iter().map(|x| x.as_i64().ok_or_else(bad)).collect::<Result<_>>()?,
            )),
            "as_floats" => self.constant(Constant::FloatList(
                v.as_array().ok_or_else(bad)?.iter().map(|x| float(x).ok_or_else(bad)).collect::<Result<_>>()?,
            )),
            "as_bools" => self.constant(Constant::BoolList(
                v.as_array().ok_or_else(bad)?.iter().map(|x| x.as_bool().ok_or_else(bad)).collect::<Result<_>>()?,
            )),
            "as_scalar_type" => {
                let d = v.as_i64().and_then(dtype).ok_or_else(bad)?;
                self.constant(Constant::Int(d as i64))
            }
            "as_memory_format" => {
                let f = match v.as_i64() {
                    Some(1) => c10::MemoryFormat::Contiguous,
                    Some(2) => c10::MemoryFormat::ChannelsLast,
                    Some(3) => c10::MemoryFormat::ChannelsLast3d,
                    Some(4) => c10::MemoryFormat::Preserve,
                    _ => return Err(bad()),
                };
                self.constant(Constant::Int(memory_format_code(f)))
            }
            "as_layout" => match v.as_i64() {
                Some(7) => self.constant(Constant::Int(0)),
                _ => return Err(self.err(format!("layout {v} is not supported (only strided)"))),
            },
            "as_device" => {
                let ty = v["type"].as_str().ok_or_else(bad)?;
                let text = match v["index"].as_i64() {
                    Some(i) => format!("{ty}:{i}"),
                    None => ty.to_string(),
                };
                let d = text.parse().map_err(|_| self.err(format!("device {text:?}")))?;
                self.constant(Constant::Device(d))
            }
            "as_sym_int" => match (v["as_name"].as_str(), v["as_int"].as_i64()) {
                (Some(n), _) => self.value(n)?,
                (None, Some(k)) => self.constant(Constant::Int(k)),
                _ => return Err(bad()),
            },
            "as_sym_ints" => {
                let items = v.as_array().ok_or_else(bad)?;
                let ks: Option<Vec<i64>> = items.iter().map(|x| x["as_int"].as_i64()).collect();
                match ks {
                    Some(ks) => self.constant(Constant::IntList(ks)),
                    None => {
                        let vs = items
                            .iter()
                            .map(|x| self.argument(&serde_json::json!({ "as_sym_int": x })))
                            .collect::<Result<Vec<_>>>()?;
                        self.node("prim::ListConstruct", &vs, vec![JitType::List(Box::new(JitType::Int))])[0]
                    }
                }
            }
            "as_tensors" | "as_optional_tensors" => {
                let items = v.as_array().ok_or_else(bad)?;
                let mut vs = Vec::new();
                for x in items {
                    vs.push(match x.get("as_none") {
                        Some(_) => self.constant(Constant::None),
                        None => {
                            let n = x["name"].as_str().or_else(|| x["as_tensor"]["name"].as_str()).ok_or_else(bad)?;
                            self.value(n)?
                        }
                    });
                }
                let elem = if kind == "as_tensors" {
                    JitType::tensor()
                } else {
                    JitType::Optional(Box::new(JitType::tensor()))
                };
                self.node("prim::ListConstruct", &vs, vec![JitType::List(Box::new(elem))])[0]
            }
            other => return Err(self.err(format!("argument kind '{other}' is not supported"))),
        })
    }
}

/// A JSON float (`"Infinity"`, `"-Infinity"` and `"NaN"` are strings in the format).
fn float(v: &Json) -> Option<f64> {
    match v {
        Json::String(s) => match s.as_str() {
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            "NaN" => Some(f64::NAN),
            _ => None,
        },
        other => other.as_f64(),
    }
}
