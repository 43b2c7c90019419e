//! `autograd/derivatives.yaml` and the autograd emitters: one backward `Node` type per entry
//! and one `Autograd` kernel per operator (and per in-place variant of it), checked in under
//! `autograd/src/generated/`.
//!
//! An entry names a schema of `native_functions.yaml` and gives, per differentiable input, a
//! Rust expression of type `Result<Tensor>` (`Result<Vec<Tensor>>` for a `Tensor[]` input):
//!
//! ```yaml
//! - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
//!   self: mul_tensor_backward(grad, other, self.scalar_type())
//!   other: mul_tensor_backward(grad, self, other.scalar_type())
//! ```
//!
//! In scope: `grad` (the gradient of the single output, `&Tensor`), `grads[i]` (of output
//! `i`), every argument by its schema name (`self` included; tensors as `&Tensor`,
//! `Option<&Tensor>` or `&[Tensor]`, other arguments as the operator's Rust types), `result` /
//! `resultN` (the outputs), `X.sizes()`, `X.scalar_type()`, `X.device()`, `X.dim()` and `X.numel()` of tensor
//! arguments, and everything in `autograd::formulas` and `aten::ops`.
//!
//! Note [Saved variables from formula text]: what a node keeps is computed from the names its
//! formulas use, as PyTorch's `load_derivatives.py` does: a tensor used whole is saved (and
//! version-checked); one used only through `X.sizes()` and the like saves just that metadata;
//! outputs used as `result` are saved after the call, without owning their own node.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use serde_saphyr::Spanned;

use crate::gen::{arg_ident, compute_names, ty_map, GeneratedFile};
use crate::yaml::{is_blank_or_comment, line_of, LoadError, Loader, Location, NativeFunction, Node};
use schema::{parse_schema, FunctionSchema, Type};

/// One entry of `derivatives.yaml`.
#[derive(Debug, Clone)]
pub struct Derivative {
    /// The parsed `name:` schema.
    pub schema: FunctionSchema,
    /// Where the entry starts.
    pub loc: Location,
    /// `(argument name, formula)` in file order.
    pub formulas: Vec<(String, String)>,
    /// `output_differentiability: [True, False]`: which outputs get a `grad_fn`.
    pub output_differentiability: Option<Vec<bool>>,
    /// `decompose: path`: when an input requires grad, the kernel calls
    /// `crate::decompositions::path` (built from differentiable operators) instead of recording
    /// a node; otherwise it runs the fused kernel below autograd.
    pub decompose: Option<String>,
}

/// Parses the text of a `derivatives.yaml`; `file` is used only in locations.
pub fn parse_derivatives(file: &str, text: &str) -> Result<Vec<Derivative>, LoadError> {
    let loader = Loader { file };
    if text.lines().all(is_blank_or_comment) {
        return Ok(Vec::new());
    }
    let root: Spanned<Node> = serde_saphyr::from_str(text).map_err(|e| loader.yaml_error(&e))?;
    let Node::Seq(entries) = root.value else {
        return Err(loader.error(1, "expected a list of `- name:` entries at the top level"));
    };
    let mut out: Vec<Derivative> = Vec::new();
    let mut seen: HashMap<String, Location> = HashMap::new();
    for entry in entries {
        let line = line_of(&entry);
        let Node::Map(pairs) = entry.value else {
            return Err(loader.error(line, "expected a mapping with a `name:` key"));
        };
        let mut schema = None;
        let mut formulas = Vec::new();
        let mut diff = None;
        let mut decompose = None;
        for (k, v) in pairs {
            let vline = line_of(&v);
            match (k.value.as_str(), v.value) {
                ("name", Node::Scalar(s)) => {
                    schema = Some(parse_schema(&s).map_err(|e| loader.error(vline, format!("bad schema: {e}")))?)
                }
                ("output_differentiability", Node::Seq(items)) => {
                    let mut flags = Vec::new();
                    for it in items {
                        match it.value {
                            Node::Bool(b) => flags.push(b),
                            other => {
                                return Err(loader.error(vline, format!("expected True/False, found {}", other.kind())))
                            }
                        }
                    }
                    diff = Some(flags);
                }
                ("decompose", Node::Scalar(f)) => decompose = Some(f),
                (name, Node::Scalar(f)) => {
                    if name.contains(',') {
                        return Err(loader.error(vline, format!("`{name}`: one formula per input is supported")));
                    }
                    formulas.push((name.to_string(), f));
                }
                (name, other) => {
                    return Err(loader.error(vline, format!("`{name}`: expected a formula, found {}", other.kind())))
                }
            }
        }
        let Some(schema) = schema else {
            return Err(loader.error(line, "entry without `name:`"));
        };
        let loc = loader.loc(line);
        let full = schema.full_name();
        if let Some(first) = seen.insert(full.clone(), loc.clone()) {
            return Err(loader.error(line, format!("duplicate entry for `{full}` (first at {first})")));
        }
        if decompose.is_some() && !formulas.is_empty() {
            return Err(
                loader.error(line, format!("`{full}`: `decompose` replaces the formulas; give one or the other"))
            );
        }
        out.push(Derivative { schema, loc, formulas, output_differentiability: diff, decompose });
    }
    Ok(out)
}

/// How a schema argument is kept in a node and bound for the formulas.
struct ArgInfo {
    name: String,
    ident: String,
    ty: Type,
    rust: String,
}

impl ArgInfo {
    fn is_tensor(&self) -> bool {
        self.ty == Type::Tensor
    }
    fn is_opt_tensor(&self) -> bool {
        matches!(&self.ty, Type::Optional(t) if **t == Type::Tensor)
    }
    fn is_tensor_list(&self) -> bool {
        matches!(&self.ty, Type::List(e, _) if **e == Type::Tensor)
    }
    fn is_any_tensor(&self) -> bool {
        self.is_tensor() || self.is_opt_tensor() || self.is_tensor_list()
    }
    /// (field type, expression saving the argument, binding in `apply`).
    fn plain_storage(&self) -> Result<(String, String, String), String> {
        let n = &self.ident;
        Ok(match self.rust.as_str() {
            "i64"
            | "f64"
            | "bool"
            | "ScalarType"
            | "Option<ScalarType>"
            | "Option<i64>"
            | "Option<f64>"
            | "Option<bool>"
            | "Layout"
            | "Option<Layout>"
            | "MemoryFormat"
            | "Option<MemoryFormat>"
            | "Device"
            | "Option<Device>" => (self.rust.clone(), n.clone(), format!("self.{n}")),
            "Scalar" | "Option<Scalar>" => (self.rust.clone(), format!("{n}.clone()"), format!("self.{n}.clone()")),
            "&[i64]" => ("Vec<i64>".into(), format!("{n}.to_vec()"), format!("&self.{n}[..]")),
            "&[f64]" => ("Vec<f64>".into(), format!("{n}.to_vec()"), format!("&self.{n}[..]")),
            "&[bool]" => ("Vec<bool>".into(), format!("{n}.to_vec()"), format!("&self.{n}[..]")),
            "Option<&[i64]>" => {
                ("Option<Vec<i64>>".into(), format!("{n}.map(|v| v.to_vec())"), format!("self.{n}.as_deref()"))
            }
            "&str" => ("String".into(), format!("{n}.to_string()"), format!("self.{n}.as_str()")),
            "&[Option<Tensor>]" => ("Vec<Option<Tensor>>".into(), format!("{n}.to_vec()"), format!("&self.{n}[..]")),
            "Option<&str>" => {
                ("Option<String>".into(), format!("{n}.map(|v| v.to_string())"), format!("self.{n}.as_deref()"))
            }
            other => return Err(format!("argument `{}` of type `{other}` cannot be saved for backward", self.name)),
        })
    }
}

/// What the formulas of an entry use (see Note [Saved variables from formula text]).
#[derive(Default)]
struct Uses {
    tensors: BTreeSet<String>,
    plain: BTreeSet<String>,
    /// `(argument, kind)` with kind one of sizes / scalar_type / dim / numel.
    meta: BTreeSet<(String, &'static str)>,
    results: BTreeSet<usize>,
    grads: BTreeSet<usize>,
    all_grads: bool,
}

impl Uses {
    fn merge(&mut self, other: Uses) {
        self.tensors.extend(other.tensors);
        self.plain.extend(other.plain);
        self.meta.extend(other.meta);
        self.results.extend(other.results);
        self.grads.extend(other.grads);
        self.all_grads |= other.all_grads;
    }
}

impl Entry<'_> {
    /// Note [Saving only what the wanted gradients read]: as PyTorch's generated code, a tensor
    /// that only some formulas read is saved only if one of those formulas' edges is valid
    /// (its input requires grad): `x * w` with a constant `w` keeps `w` (read by the gradient
    /// of `x`) but not `x`. The result maps such a (plain tensor) argument to the formulas,
    /// i.e. edge numbers, that read it; arguments read by every formula, optional tensors,
    /// lists, and every argument of an entry with a list formula (whose edges are not one per
    /// formula) are saved whenever the node is made.
    fn conditional_saves(&self) -> BTreeMap<String, Vec<usize>> {
        let mut out = BTreeMap::new();
        if self.formulas.iter().any(|(p, _)| self.args[*p].is_tensor_list()) {
            return out;
        }
        for a in &self.args {
            if !self.uses.tensors.contains(&a.name) || !a.is_tensor() {
                continue;
            }
            let readers: Vec<usize> =
                self.formula_tensors.iter().enumerate().filter(|(_, t)| t.contains(&a.name)).map(|(k, _)| k).collect();
            if readers.len() < self.formulas.len() {
                out.insert(a.name.clone(), readers);
            }
        }
        out
    }
}

const META: &[(&str, &str)] = &[
    (".sizes()", "sizes"),
    (".sym_sizes()", "sizes"),
    (".scalar_type()", "scalar_type"),
    (".dtype()", "scalar_type"),
    (".device()", "device"),
    (".dim()", "dim"),
    (".numel()", "numel"),
];

/// Rewrites a formula into Rust over the bindings of `apply`, recording what it uses.
fn rewrite(formula: &str, args: &[ArgInfo], n_returns: usize, uses: &mut Uses) -> Result<String, String> {
    let b = formula.as_bytes();
    let mut out = String::with_capacity(formula.len() + 16);
    let mut i = 0;
    let mut prev_sig: u8 = b' ';
    while i < b.len() {
        let c = b[i];
        if c == b'"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push_str(&formula[start..i]);
            prev_sig = b'"';
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let ident = &formula[start..i];
            let member = prev_sig == b'.' || (prev_sig == b':' && start >= 2 && &b[start - 2..start] == b"::");
            prev_sig = b'a';
            if member {
                out.push_str(ident);
                continue;
            }
            if ident == "grads" {
                let rest = &formula[i..];
                if let Some(r) = rest.strip_prefix('[') {
                    let digits: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
                    if !digits.is_empty() && r[digits.len()..].starts_with(']') {
                        let k: usize = digits.parse().map_err(|_| "bad grads index".to_string())?;
                        if k >= n_returns {
                            return Err(format!("`grads[{k}]` but the operator has {n_returns} outputs"));
                        }
                        uses.grads.insert(k);
                        let _ = write!(out, "grads_{k}");
                        i += 1 + digits.len() + 1;
                        continue;
                    }
                }
                uses.all_grads = true;
                out.push_str("grads_all");
                continue;
            }
            if ident == "grad" {
                uses.grads.insert(0);
                out.push_str("grad");
                continue;
            }
            if ident == "result" {
                if n_returns != 1 {
                    return Err("`result` names the single output; use `result0`, `result1`, ...".into());
                }
                uses.results.insert(0);
                out.push_str("result");
                continue;
            }
            if let Some(k) = ident.strip_prefix("result").and_then(|d| d.parse::<usize>().ok()) {
                if k >= n_returns {
                    return Err(format!("`{ident}` but the operator has {n_returns} outputs"));
                }
                uses.results.insert(k);
                out.push_str(ident);
                continue;
            }
            if let Some(a) = args.iter().find(|a| a.name == ident) {
                if a.is_any_tensor() {
                    let rest = &formula[i..];
                    if let Some((pat, kind)) = META.iter().find(|(p, _)| rest.starts_with(p)) {
                        if a.is_opt_tensor() {
                            return Err(format!("`{ident}{pat}` of an optional tensor: save the tensor instead"));
                        }
                        uses.meta.insert((a.name.clone(), kind));
                        let _ = write!(out, "{}_{kind}", stem(&a.ident));
                        i += pat.len();
                        continue;
                    }
                    uses.tensors.insert(a.name.clone());
                } else {
                    uses.plain.insert(a.name.clone());
                }
                out.push_str(&a.ident);
                continue;
            }
            out.push_str(ident);
            continue;
        }
        if !c.is_ascii_whitespace() {
            prev_sig = c;
        }
        out.push(c as char);
        i += 1;
    }
    Ok(out)
}

/// `log_softmax` → `LogSoftmax` (leading and trailing underscores dropped).
fn camel(name: &str) -> String {
    name.trim_matches('_')
        .split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

const HEADER: &str = "// @generated by cargo xtask codegen from autograd/derivatives.yaml — DO NOT EDIT\n";

/// One entry ready for emission.
struct Entry<'a> {
    d: &'a Derivative,
    node: String,
    module: String,
    inplace_module: Option<String>,
    args: Vec<ArgInfo>,
    /// Formulas rewritten, per differentiable argument (schema order).
    formulas: Vec<(usize, String)>,
    /// The saved tensors each formula reads (same order as `formulas`).
    formula_tensors: Vec<BTreeSet<String>>,
    uses: Uses,
    n_returns: usize,
    ret_ty: String,
    returns_list: bool,
    /// The outputs are views of `self` (`Tensor(a) self -> Tensor(a)`).
    is_view: bool,
}

/// Generates `autograd/src/generated/` from the derivatives and the operators they name.
pub fn generate_autograd(fns: &[NativeFunction], ders: &[Derivative]) -> Result<Vec<GeneratedFile>, LoadError> {
    let names = compute_names(fns)?;
    let by_name: HashMap<String, usize> = fns.iter().enumerate().map(|(i, f)| (f.func.full_name(), i)).collect();
    let mut counters: HashMap<String, usize> = HashMap::new();
    let mut entries = Vec::new();
    for d in ders {
        let err = |message: String| LoadError { loc: d.loc.clone(), message };
        let full = d.schema.full_name();
        let Some(&fi) = by_name.get(&full) else {
            return Err(err(format!("`{full}` is not an operator of native_functions.yaml")));
        };
        let f = &fns[fi];
        if f.func.arguments.len() != d.schema.arguments.len()
            || f.func.arguments.iter().zip(&d.schema.arguments).any(|(a, b)| a.name != b.name || a.ty != b.ty)
        {
            return Err(err(format!("the schema of `{full}` differs from native_functions.yaml ({})", f.loc)));
        }
        if f.func.is_mutable() {
            return Err(err(format!(
                "`{full}` writes its arguments; give the out-of-place operator and its in-place variant follows"
            )));
        }
        let mut args = Vec::new();
        for a in &f.func.arguments {
            let ident = if a.name == "self" { "self_".to_string() } else { arg_ident(&a.name) };
            let rust = ty_map(&a.ty).map_err(&err)?.rust;
            args.push(ArgInfo { name: a.name.clone(), ident, ty: a.ty.clone(), rust });
        }
        let n_returns = f.func.returns.len();
        let returns_list = n_returns == 1 && matches!(&f.func.returns[0].ty, Type::List(e, _) if **e == Type::Tensor);
        if f.func.returns.iter().any(|r| !r.ty.is_tensor_like()) {
            return Err(err(format!("`{full}` returns something other than tensors")));
        }
        let ret_ty = crate::gen::ret_map(&f.func).map_err(&err)?.0;
        let is_view = f.func.returns.first().is_some_and(|r| r.alias.is_some())
            && f.func.argument("self").is_some_and(|a| a.alias.is_some());
        let mut uses = Uses::default();
        let mut formulas = Vec::new();
        for (name, formula) in &d.formulas {
            let Some(pos) = args.iter().position(|a| &a.name == name) else {
                return Err(err(format!("`{name}` is not an argument of `{full}`")));
            };
            if !args[pos].is_any_tensor() {
                return Err(err(format!("`{name}` of `{full}` is not a tensor")));
            }
            let mut own = Uses::default();
            let code = rewrite(formula, &args, n_returns, &mut own).map_err(|m| err(format!("`{name}`: {m}")))?;
            formulas.push((pos, code, own.tensors.clone()));
            uses.merge(own);
        }
        formulas.sort_by_key(|(p, _, _)| *p);
        let formula_tensors: Vec<BTreeSet<String>> = formulas.iter().map(|(_, _, t)| t.clone()).collect();
        let formulas: Vec<(usize, String)> = formulas.into_iter().map(|(p, c, _)| (p, c)).collect();
        if uses.all_grads && !returns_list {
            return Err(err("bare `grads` is only for operators returning `Tensor[]`".into()));
        }
        let base = camel(&d.schema.name);
        let k = counters.entry(base.clone()).or_default();
        let node = format!("{base}Backward{k}");
        *k += 1;
        let inplace_name = format!(
            "{}_{}",
            d.schema.name,
            if d.schema.overload.is_empty() { String::new() } else { format!(".{}", d.schema.overload) }
        );
        let inplace_module = by_name.get(&inplace_name).and_then(|&j| {
            let g = &fns[j];
            let same_args = g.func.arguments.len() == f.func.arguments.len()
                && g.func.arguments.iter().zip(&f.func.arguments).all(|(a, b)| a.name == b.name && a.ty == b.ty);
            (same_args && g.func.returns.len() == 1 && !returns_list && d.decompose.is_none())
                .then(|| names[j].module.clone())
        });
        entries.push(Entry {
            d,
            node,
            module: names[fi].module.clone(),
            inplace_module,
            args,
            formulas,
            formula_tensors,
            uses,
            n_returns,
            ret_ty,
            returns_list,
            is_view,
        });
    }
    let mut nodes = String::new();
    let mut kernels = String::new();
    nodes.push_str(HEADER);
    nodes.push_str(
        "//! Backward nodes, one per entry of `autograd/derivatives.yaml`.\n\n\
         #![allow(unused_imports, unused_variables, unused_mut, unused_assignments, clippy::clone_on_copy, clippy::needless_borrow, clippy::redundant_clone, clippy::useless_conversion, clippy::let_and_return)]\n\n\
         use aten::ops;\nuse aten::Tensor;\nuse c10::{Device, Layout, MemoryFormat, Result, Scalar, ScalarType};\n\n\
         use crate::formulas::*;\nuse crate::node::{Grads, Node, NodeCore};\nuse crate::saved::SavedVariable;\n\n",
    );
    kernels.push_str(HEADER);
    kernels.push_str(
        "//! Autograd kernels: record a node when an input requires grad, then run the operator below\n\
         //! the autograd keys. In-place variants check the leaf rule and rebase the history of `self`.\n\n\
         #![allow(unused_imports, unused_variables, unused_mut, clippy::too_many_arguments, clippy::clone_on_copy, clippy::redundant_clone, clippy::redundant_field_names)]\n\n\
         use std::sync::Arc;\n\n\
         use aten::handles;\nuse aten::{Generator, Tensor};\n\
         use c10::{Device, DispatchKey, DispatchKeySet, Layout, MemoryFormat, Result, Scalar, ScalarType};\n\n\
         use super::nodes::*;\nuse crate::kernel_support as ks_;\nuse crate::node::{NodeCore, NodeRef};\nuse crate::saved::SavedVariable;\n\n",
    );
    let mut regs = String::new();
    for e in &entries {
        if let Some(path) = &e.d.decompose {
            emit_decomposing_kernel(&mut kernels, e, path);
            let _ = writeln!(
                regs,
                "    d.register_kernel(handles::{m}::NAME, DispatchKey::Autograd, handles::{m}::kernel({m})).expect(\"generated registration\");",
                m = e.module
            );
            continue;
        }
        emit_node(&mut nodes, e).map_err(|m| LoadError { loc: e.d.loc.clone(), message: m })?;
        emit_kernel(&mut kernels, e, false).map_err(|m| LoadError { loc: e.d.loc.clone(), message: m })?;
        let _ = writeln!(
            regs,
            "    d.register_kernel(handles::{m}::NAME, DispatchKey::Autograd, handles::{m}::kernel({m})).expect(\"generated registration\");",
            m = e.module
        );
        if let Some(im) = &e.inplace_module {
            emit_kernel(&mut kernels, e, true).map_err(|m| LoadError { loc: e.d.loc.clone(), message: m })?;
            let _ = writeln!(
                regs,
                "    d.register_kernel(handles::{im}::NAME, DispatchKey::Autograd, handles::{im}::kernel({im})).expect(\"generated registration\");"
            );
        }
    }
    let _ = write!(
        kernels,
        "/// Registers every generated autograd kernel.\npub fn register_all(d: &aten::Dispatcher) {{\n{regs}}}\n"
    );
    let module = format!(
        "{HEADER}//! Code generated from `autograd/derivatives.yaml`: backward nodes and autograd kernels.\n\n\
         pub mod kernels;\npub mod nodes;\n"
    );
    Ok(vec![
        GeneratedFile { name: "mod.rs".into(), contents: module },
        GeneratedFile { name: "nodes.rs".into(), contents: nodes },
        GeneratedFile { name: "kernels.rs".into(), contents: kernels },
    ])
}

/// The name stem of an argument's derived fields: `self_` → `self`.
fn stem(ident: &str) -> &str {
    ident.trim_end_matches('_')
}

fn result_ident(k: usize, n_returns: usize) -> String {
    if n_returns == 1 {
        "result".into()
    } else {
        format!("result{k}")
    }
}

fn meta_field_ty(kind: &str, list: bool) -> &'static str {
    match (kind, list) {
        ("sizes", false) => "Vec<i64>",
        ("sizes", true) => "Vec<Vec<i64>>",
        ("scalar_type", false) => "ScalarType",
        ("scalar_type", true) => "Vec<ScalarType>",
        ("device", false) => "c10::Device",
        ("device", true) => "Vec<c10::Device>",
        ("dim", false) => "usize",
        ("dim", true) => "Vec<usize>",
        (_, false) => "i64",
        (_, true) => "Vec<i64>",
    }
}

fn meta_save_expr(ident: &str, kind: &str, list: bool) -> String {
    let one = match kind {
        "sizes" => "t.sizes().to_vec()",
        "scalar_type" => "t.scalar_type()",
        "device" => "t.device()",
        "dim" => "t.dim()",
        _ => "t.numel()",
    };
    if list {
        format!("{ident}.iter().map(|t| {one}).collect()")
    } else {
        one.replace("t.", &format!("{ident}."))
    }
}

fn emit_node(o: &mut String, e: &Entry) -> Result<(), String> {
    let d = e.d;
    let _ = writeln!(o, "/// Backward of `{}` ({}).", d.schema.full_name(), d.loc);
    let _ = writeln!(o, "pub struct {} {{\n    pub(crate) core: NodeCore,", e.node);
    for a in &e.args {
        if e.uses.tensors.contains(&a.name) {
            let ty = if a.is_tensor_list() { "Vec<SavedVariable>" } else { "SavedVariable" };
            let _ = writeln!(o, "    pub(crate) {}: {ty},", a.ident);
        }
        if e.uses.plain.contains(&a.name) {
            let (ty, _, _) = a.plain_storage()?;
            let _ = writeln!(o, "    pub(crate) {}: {ty},", a.ident);
        }
        for (n, kind) in &e.uses.meta {
            if n == &a.name {
                let _ = writeln!(
                    o,
                    "    pub(crate) {}_{kind}: {},",
                    stem(&a.ident),
                    meta_field_ty(kind, a.is_tensor_list())
                );
            }
        }
        if a.is_tensor_list() && e.formulas.iter().any(|(p, _)| e.args[*p].name == a.name) {
            let _ = writeln!(o, "    pub(crate) {}_len_: usize,", stem(&a.ident));
        }
    }
    for k in &e.uses.results {
        let _ = writeln!(o, "    pub(crate) {}: SavedVariable,", result_ident(*k, e.n_returns));
    }
    o.push_str("}\n\n");

    let _ = writeln!(o, "impl Node for {} {{", e.node);
    let _ = writeln!(o, "    fn name(&self) -> String {{\n        \"{}\".into()\n    }}", e.node);
    o.push_str("    fn core(&self) -> &NodeCore {\n        &self.core\n    }\n");
    o.push_str("    fn apply(&self, grads: Grads) -> Result<Grads> {\n");
    o.push_str("        let mut out = Grads::from_elem(None, self.core.next_edges().len());\n");
    o.push_str("        if grads.iter().all(|g| g.is_none()) {\n            return Ok(out);\n        }\n");
    let _ = writeln!(o, "        let name = \"{}\";", e.node);
    o.push_str("        let grads = crate::kernel_support::materialize(&self.core, grads)?;\n");
    let conditional = e.conditional_saves();
    if e.uses.grads.contains(&0) {
        o.push_str("        let grad = &grads[0];\n");
    }
    for k in &e.uses.grads {
        let _ = writeln!(o, "        let grads_{k} = &grads[{k}];");
    }
    if e.uses.all_grads {
        o.push_str("        let grads_all = &grads[..];\n");
    }
    for a in &e.args {
        let n = &a.ident;
        if e.uses.tensors.contains(&a.name) {
            if a.is_tensor_list() {
                let _ = writeln!(
                    o,
                    "        let {m}_own: Vec<Tensor> = self.{n}.iter().map(|s| s.unpack(name)).collect::<Result<_>>()?;\n        let {n}: &[Tensor] = &{m}_own;",
                    m = stem(n)
                );
            } else if a.is_opt_tensor() {
                let _ = writeln!(
                    o,
                    "        let {m}_own = self.{n}.unpack_opt(name)?;\n        let {n} = {m}_own.as_ref();",
                    m = stem(n)
                );
            } else if conditional.contains_key(&a.name) {
                // Bound in the blocks of the formulas that read it (None: not saved).
                let _ = writeln!(o, "        let {m}_own = self.{n}.unpack_opt(name)?;", m = stem(n));
            } else {
                let _ = writeln!(
                    o,
                    "        let {m}_own = self.{n}.unpack(name)?;\n        let {n} = &{m}_own;",
                    m = stem(n)
                );
            }
        }
        if e.uses.plain.contains(&a.name) {
            let (_, _, bind) = a.plain_storage()?;
            let _ = writeln!(o, "        let {n} = {bind};");
        }
        for (m, kind) in &e.uses.meta {
            if m == &a.name {
                let bind = match (*kind, a.is_tensor_list()) {
                    ("sizes", _) | (_, true) => format!("&self.{m}_{kind}[..]", m = stem(n)),
                    _ => format!("self.{m}_{kind}", m = stem(n)),
                };
                let _ = writeln!(o, "        let {m}_{kind} = {bind};", m = stem(n));
            }
        }
    }
    for k in &e.uses.results {
        let r = result_ident(*k, e.n_returns);
        let _ = writeln!(o, "        let {r}_own = self.{r}.unpack(name)?;\n        let {r} = &{r}_own;");
    }
    o.push_str("        let mut at = 0usize;\n");
    for (k, (pos, code)) in e.formulas.iter().enumerate() {
        let a = &e.args[*pos];
        let mut binds = String::new();
        for (name, readers) in &conditional {
            if readers.contains(&k) {
                let ident = &e.args.iter().find(|a| &a.name == name).expect("an argument").ident;
                let _ = write!(
                    binds,
                    "\n            let {ident} = {m}_own.as_ref().ok_or_else(|| c10::Error::invalid(\"backward\", crate::saved::ERR_BACKWARD_TWICE))?;",
                    m = stem(ident)
                );
            }
        }
        if a.is_tensor_list() {
            let _ = writeln!(
                o,
                "        let n = self.{m}_len_;\n        if (at..at + n).any(|i| self.core.should_compute_output(i)) {{\n            let gs: Vec<Tensor> = {code}?;\n            for (j, g) in gs.into_iter().enumerate().take(n) {{\n                out[at + j] = Some(g);\n            }}\n        }}\n        at += n;",
                m = stem(&a.ident)
            );
        } else {
            let _ = writeln!(
                o,
                "        if self.core.should_compute_output(at) {{{binds}\n            out[at] = Some({code}?);\n        }}\n        at += 1;"
            );
        }
    }
    o.push_str("        Ok(out)\n    }\n");
    o.push_str("    fn release_variables(&self) {\n");
    for a in &e.args {
        if e.uses.tensors.contains(&a.name) {
            if a.is_tensor_list() {
                let _ = writeln!(o, "        self.{}.iter().for_each(SavedVariable::reset);", a.ident);
            } else {
                let _ = writeln!(o, "        self.{}.reset();", a.ident);
            }
        }
    }
    for k in &e.uses.results {
        let _ = writeln!(o, "        self.{}.reset();", result_ident(*k, e.n_returns));
    }
    o.push_str("    }\n}\n\n");
    Ok(())
}

fn emit_decomposing_kernel(o: &mut String, e: &Entry, path: &str) {
    let params: Vec<String> = e.args.iter().map(|a| format!("{}: {}", a.ident, a.rust)).collect();
    let names: Vec<String> = e.args.iter().map(|a| a.ident.clone()).collect();
    let tensors: Vec<String> = e
        .args
        .iter()
        .filter(|a| a.is_tensor() || a.is_opt_tensor())
        .map(|a| if a.is_tensor() { format!("Some({})", a.ident) } else { a.ident.clone() })
        .collect();
    let _ = writeln!(
        o,
        "/// Autograd kernel of `{}` ({}): the decomposition when an input requires grad.",
        e.d.schema.full_name(),
        e.d.loc
    );
    let _ =
        writeln!(o, "pub(crate) fn {}(ks: DispatchKeySet, {}) -> Result<{}> {{", e.module, params.join(", "), e.ret_ty);
    let _ = writeln!(o, "    if crate::meta::compute_requires_grad(&[{}]) {{", tensors.join(", "));
    let _ = writeln!(o, "        return crate::decompositions::{path}({});\n    }}", names.join(", "));
    let _ = writeln!(
        o,
        "    let _below = c10::ExcludeDispatchKeyGuard::below_ad_inplace_or_view();\n    handles::{}::redispatch(ks & DispatchKeySet::after_autograd_keyset(), {})\n}}\n",
        e.module,
        names.join(", ")
    );
}

fn emit_kernel(o: &mut String, e: &Entry, inplace: bool) -> Result<(), String> {
    let module = if inplace { e.inplace_module.as_ref().expect("checked") } else { &e.module };
    let params: Vec<String> = e.args.iter().map(|a| format!("{}: {}", a.ident, a.rust)).collect();
    let names: Vec<String> = e.args.iter().map(|a| a.ident.clone()).collect();
    let ret_ty = if inplace { "Tensor".to_string() } else { e.ret_ty.clone() };
    let what = if inplace { "the in-place variant of " } else { "" };
    let _ = writeln!(o, "/// Autograd kernel of {what}`{}` ({}).", e.d.schema.full_name(), e.d.loc);
    let _ = writeln!(o, "pub(crate) fn {module}(ks: DispatchKeySet, {}) -> Result<{ret_ty}> {{", params.join(", "));
    // Differentiable inputs, in schema order.
    let mut diff: Vec<String> = Vec::new();
    let mut has_list = false;
    for (pos, _) in &e.formulas {
        let a = &e.args[*pos];
        if a.is_tensor_list() {
            has_list = true;
            diff.push(format!("LIST:{}", a.ident));
        } else if a.is_opt_tensor() {
            diff.push(a.ident.clone());
        } else {
            diff.push(format!("Some({})", a.ident));
        }
    }
    if has_list {
        o.push_str("    let mut diff_: Vec<Option<&Tensor>> = Vec::new();\n");
        for d in &diff {
            match d.strip_prefix("LIST:") {
                Some(l) => {
                    let _ = writeln!(o, "    diff_.extend({l}.iter().map(Some));");
                }
                None => {
                    let _ = writeln!(o, "    diff_.push({d});");
                }
            }
        }
    } else {
        let _ = writeln!(o, "    let diff_: [Option<&Tensor>; {}] = [{}];", diff.len(), diff.join(", "));
    }
    o.push_str("    let needs_ = crate::meta::compute_requires_grad(&diff_);\n");
    if inplace {
        o.push_str("    if needs_ {\n        ks_::check_inplace(self_)?;\n    }\n");
    }
    let _ = writeln!(
        o,
        "    let grad_fn_ = if needs_ {{\n        let core = NodeCore::new(crate::meta::collect_next_edges(&diff_));"
    );
    let conditional = e.conditional_saves();
    for a in &e.args {
        if let Some(readers) = conditional.get(&a.name) {
            let test: Vec<String> = readers.iter().map(|k| format!("core.next_edges()[{k}].is_valid()")).collect();
            let test = if test.is_empty() { "false".to_string() } else { test.join(" || ") };
            let _ = writeln!(o, "        let keep_{}_ = {test};", stem(&a.ident));
        }
    }
    let _ = writeln!(o, "        Some(Arc::new({} {{\n            core,", e.node);
    for a in &e.args {
        let n = &a.ident;
        if e.uses.tensors.contains(&a.name) {
            let expr = if a.is_tensor_list() {
                format!("{n}.iter().map(SavedVariable::new).collect::<Result<_>>()?")
            } else if a.is_opt_tensor() {
                format!("SavedVariable::new_opt({n})?")
            } else if inplace && a.name == "self" {
                "SavedVariable::new(&ks_::original_self(self_)?)?".to_string()
            } else {
                format!("SavedVariable::new({n})?")
            };
            let expr = if conditional.contains_key(&a.name) {
                format!("if keep_{}_ {{ {expr} }} else {{ SavedVariable::default() }}", stem(n))
            } else {
                expr
            };
            let _ = writeln!(o, "            {n}: {expr},");
        }
        if e.uses.plain.contains(&a.name) {
            let (_, save, _) = a.plain_storage()?;
            let _ = writeln!(o, "            {n}: {save},");
        }
        for (m, kind) in &e.uses.meta {
            if m == &a.name {
                let _ = writeln!(
                    o,
                    "            {m}_{kind}: {},",
                    meta_save_expr(n, kind, a.is_tensor_list()),
                    m = stem(n)
                );
            }
        }
        if a.is_tensor_list() && e.formulas.iter().any(|(p, _)| e.args[*p].name == a.name) {
            let _ = writeln!(o, "            {m}_len_: {n}.len(),", m = stem(n));
        }
    }
    for k in &e.uses.results {
        let _ = writeln!(o, "            {}: SavedVariable::default(),", result_ident(*k, e.n_returns));
    }
    o.push_str("        }))\n    } else {\n        None\n    };\n");
    let guard = if inplace { "below_autograd" } else { "below_ad_inplace_or_view" };
    let _ = writeln!(
        o,
        "    let result_ = {{\n        let _below = c10::ExcludeDispatchKeyGuard::{guard}();\n        handles::{module}::redispatch(ks & DispatchKeySet::after_autograd_keyset(), {})?\n    }};",
        names.join(", ")
    );
    let diff_flags: Vec<bool> = (0..e.n_returns)
        .map(|k| e.d.output_differentiability.as_ref().is_none_or(|v| v.get(k).copied().unwrap_or(true)))
        .collect();
    if !inplace && !e.returns_list && e.n_returns == 1 && e.uses.results.is_empty() {
        // The node's only use: its handle moves into the output (no reference-count traffic).
        let _ = writeln!(
            o,
            "    if let Some(f) = grad_fn_ {{\n        ks_::set_history_owned(&result_, f, 0, {})?;",
            diff_flags[0]
        );
    } else {
        o.push_str("    if let Some(f) = grad_fn_ {\n        let node: NodeRef = f.clone();\n");
        if inplace {
            o.push_str("        ks_::rebase_history(self_, &node)?;\n");
            for k in &e.uses.results {
                let _ = writeln!(
                    o,
                    "        f.{}.set_output(self_, Arc::downgrade(&node), {k})?;",
                    result_ident(*k, e.n_returns)
                );
            }
        } else if e.returns_list {
            o.push_str("        for (i, t) in result_.iter().enumerate() {\n            ks_::set_history(t, &node, i as u32, true)?;\n        }\n");
        } else if e.n_returns == 1 {
            let _ = writeln!(o, "        ks_::set_history(&result_, &node, 0, {})?;", diff_flags[0]);
            for k in &e.uses.results {
                let _ = writeln!(
                    o,
                    "        f.{}.set_output(&result_, Arc::downgrade(&node), {k})?;",
                    result_ident(*k, e.n_returns)
                );
            }
        } else {
            for (k, flag) in diff_flags.iter().enumerate() {
                let _ = writeln!(o, "        ks_::set_history(&result_.{k}, &node, {k}, {flag})?;");
            }
            for k in &e.uses.results {
                let _ = writeln!(
                    o,
                    "        f.{}.set_output(&result_.{k}, Arc::downgrade(&node), {k})?;",
                    result_ident(*k, e.n_returns)
                );
            }
        }
    }
    o.push_str("    }\n");
    if e.is_view && !inplace {
        if e.returns_list {
            o.push_str("    for t in result_.iter() {\n        ks_::mark_view(t, self_)?;\n    }\n");
        } else {
            o.push_str("    ks_::mark_view(&result_, self_)?;\n");
        }
    }
    o.push_str("    Ok(result_)\n}\n\n");
    Ok(())
}
