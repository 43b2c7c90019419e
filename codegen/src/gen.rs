//! The Rust emitters: from the [`NativeFunction`] records of a `native_functions.yaml` to the
//! dispatch glue checked in under `aten/src/generated/`.
//!
//! For every operator this writes
//! - a handle module in `handles.rs` (`handles::add_tensor`): the schema string, the typed
//!   signature `Sig`, the cached [`OperatorEntry`] lookup, `call` (key computation from the
//!   tensor arguments and the thread-local sets), `redispatch` (an explicit key set), and the
//!   adapters in both directions between the typed and the boxed convention;
//! - a free function in `functions.rs` (`ops::add`) taking every argument;
//! - for `variants: method`, `Tensor` methods in `methods.rs`, with defaults applied
//!   (`a.add(&b)`) and, when some argument has a default, a `_with` form taking them all;
//! - registrations in `registrations.rs`: schemas, the YAML `dispatch:` kernels, BackendSelect
//!   kernels for factories and ADInplaceOrView kernels that bump version counters of written
//!   arguments.
//!
//! [`OperatorEntry`]: ../../aten/dispatcher/struct.OperatorEntry.html

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use crate::yaml::{LoadError, NativeFunction};
use schema::{Argument, DefaultValue, FunctionSchema, Type};

/// One generated file: its path relative to the crate's `src/generated/` and its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// File name inside `src/generated/`.
    pub name: String,
    /// Full contents, header included.
    pub contents: String,
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if", "impl", "in",
    "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super",
    "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box",
    "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

fn is_keyword(s: &str) -> bool {
    RUST_KEYWORDS.contains(&s)
}

/// Argument name as a Rust identifier: `self` → `self_`, keywords get a trailing `_`.
pub(crate) fn arg_ident(name: &str) -> String {
    // Schema names such as `N`, `C` and `HxW` (`native_group_norm`) become lower-case Rust
    // identifiers, so the generated code passes `non_snake_case`. Names the generated bodies use
    // for their own locals (`k` is the kernel, `ks` the key set, `op` the operator entry, `a` the
    // popped arguments, `r` the result) get the same `_` suffix as keywords, so an argument such as
    // `topk`'s `k` or `linalg_diagonal`'s `A` cannot shadow them.
    let name = name.to_ascii_lowercase();
    if is_keyword(&name) || matches!(name.as_str(), "k" | "ks" | "op" | "stack" | "f" | "a" | "r") {
        format!("{name}_")
    } else {
        name
    }
}

/// Per-operator names: the handle module and the public function name.
#[derive(Debug, Clone)]
pub struct Names {
    /// The handle module (`add_tensor`).
    pub module: String,
    /// The explicit layer's function name (`add`, `add_scalar`).
    pub function: String,
}

pub(crate) fn compute_names(fns: &[NativeFunction]) -> Result<Vec<Names>, LoadError> {
    let mut out = Vec::with_capacity(fns.len());
    let mut primary_taken: HashSet<(String, bool)> = HashSet::new();
    let mut used_fn: HashMap<String, usize> = HashMap::new();
    let mut used_mod: HashMap<String, usize> = HashMap::new();
    for (i, f) in fns.iter().enumerate() {
        let s = &f.func;
        let ov = s.overload.to_lowercase();
        // Rust names are snake case: `mT`, `matrix_H` and `numpy_T` become `mt`, `matrix_h`
        // and `numpy_t` (a collision this makes is reported below).
        let name = s.name.to_lowercase();
        let inplace = name.ends_with('_') && !name.starts_with("__");
        let stem = if inplace { name.trim_end_matches('_').to_string() } else { name.clone() };
        let module = {
            let m = match (ov.is_empty(), inplace) {
                (true, _) => name.clone(),
                (false, false) => format!("{name}_{ov}"),
                (false, true) => format!("{stem}_{ov}_"),
            };
            if is_keyword(&m) {
                format!("{m}_op")
            } else {
                m
            }
        };
        let function = if s.is_out_fn() {
            if ov.is_empty() {
                format!("{stem}_out")
            } else {
                format!("{stem}_{ov}")
            }
        } else {
            let key = (stem.clone(), inplace);
            // A primary name another operator's overload already took (`scatter.reduce` is
            // `scatter_reduce`, so `scatter_reduce.two` is `scatter_reduce_two`) adds the overload.
            let taken = used_fn.contains_key(&if inplace { format!("{stem}_") } else { stem.clone() });
            let base = if !primary_taken.contains(&key) && !is_keyword(&stem) && (!taken || ov.is_empty()) {
                primary_taken.insert(key);
                stem.clone()
            } else if ov.is_empty() {
                format!("{stem}_op")
            } else {
                format!("{stem}_{ov}")
            };
            if inplace {
                format!("{base}_")
            } else {
                base
            }
        };
        for (map, name, what) in [(&mut used_fn, &function, "function"), (&mut used_mod, &module, "module")] {
            if let Some(&j) = map.get(name) {
                return Err(LoadError {
                    loc: f.loc.clone(),
                    message: format!(
                        "generated {what} name `{name}` of `{}` collides with `{}` ({})",
                        s.full_name(),
                        fns[j].func.full_name(),
                        fns[j].loc
                    ),
                });
            }
            map.insert(name.clone(), i);
        }
        out.push(Names { module, function });
    }
    Ok(out)
}

/// How one schema type is passed in Rust and moved through the boxed convention.
pub(crate) struct TyMap {
    /// The parameter type in `Sig` and the public functions.
    pub(crate) rust: String,
    /// Expression (over `a[i]`) that extracts an owned-or-borrowed binding from an IValue.
    unbox: String,
    /// How the binding is passed on: `{}` itself, `&{}` or `{}.as_deref()`.
    pass: &'static str,
}

pub(crate) fn ty_map(ty: &Type) -> Result<TyMap, String> {
    use Type as T;
    let m = |rust: &str, unbox: &str, pass: &'static str| TyMap { rust: rust.into(), unbox: unbox.into(), pass };
    let is_int = |t: &Type| matches!(t, T::Int | T::SymInt);
    Ok(match ty {
        T::Tensor => m("&Tensor", "to_tensor(N, A)?", "{}"),
        T::Int | T::SymInt => m("i64", "to_int(N, A)?", "{}"),
        T::Float => m("f64", "to_double(N, A)?", "{}"),
        T::Bool => m("bool", "to_bool(N, A)?", "{}"),
        T::Str => m("&str", "to_str(N, A)?", "{}"),
        T::Scalar => m("Scalar", "to_scalar(N, A)?", "{}"),
        T::ScalarType => m("ScalarType", "to_scalar_type(N, A)?", "{}"),
        T::MemoryFormat => m("MemoryFormat", "to_memory_format(N, A)?", "{}"),
        T::Layout => m("Layout", "to_layout(N, A)?", "{}"),
        T::Device => m("Device", "to_device(N, A)?", "{}"),
        T::Optional(inner) => match &**inner {
            T::Tensor => m("Option<&Tensor>", "to_opt_tensor(N, A)?", "{}"),
            t if is_int(t) => m("Option<i64>", "to_opt_int(N, A)?", "{}"),
            T::Float => m("Option<f64>", "to_opt_double(N, A)?", "{}"),
            T::Bool => m("Option<bool>", "to_opt_bool(N, A)?", "{}"),
            T::Str => m("Option<&str>", "to_opt_str(N, A)?", "{}"),
            T::Scalar => m("Option<Scalar>", "to_opt_scalar(N, A)?", "{}"),
            T::ScalarType => m("Option<ScalarType>", "to_opt_scalar_type(N, A)?", "{}"),
            T::Layout => m("Option<Layout>", "to_opt_layout(N, A)?", "{}"),
            T::Device => m("Option<Device>", "to_opt_device(N, A)?", "{}"),
            T::MemoryFormat => m("Option<MemoryFormat>", "to_opt_memory_format(N, A)?", "{}"),
            T::Generator => m("Option<&Generator>", "to_opt_generator(N, A)?", "{}"),
            T::List(e, n) if is_int(e) => TyMap {
                rust: "Option<&[i64]>".into(),
                unbox: format!("to_opt_int_list(N, A, {n:?})?"),
                pass: "{}.as_deref()",
            },
            T::List(e, _) if **e == T::Float => m("Option<&[f64]>", "to_opt_double_list(N, A)?", "{}.as_deref()"),
            other => return Err(format!("type `{other}?` is not supported by the Rust emitter")),
        },
        T::List(e, n) => match &**e {
            T::Tensor => m("&[Tensor]", "to_tensor_list(N, A)?", "{}"),
            T::Optional(t) if **t == T::Tensor => m("&[Option<Tensor>]", "to_opt_tensor_list(N, A)?", "&{}"),
            t if is_int(t) => TyMap { rust: "&[i64]".into(), unbox: format!("to_int_list(N, A, {n:?})?"), pass: "&{}" },
            T::Float => m("&[f64]", "to_double_list(N, A)?", "&{}"),
            T::Bool => m("&[bool]", "to_bool_list(N, A)?", "&{}"),
            other => return Err(format!("type `{other}[]` is not supported by the Rust emitter")),
        },
        other => return Err(format!("type `{other}` is not supported by the Rust emitter")),
    })
}

/// The Rust return type and the code that pops it from a boxed stack.
pub(crate) fn ret_map(s: &FunctionSchema) -> Result<(String, String), String> {
    let one = |t: &Type| -> Result<(String, &'static str), String> {
        Ok(match t {
            Type::Tensor => ("Tensor".into(), "into_tensor"),
            Type::List(e, _) if **e == Type::Tensor => ("Vec<Tensor>".into(), "into_tensor_list"),
            Type::Scalar => ("Scalar".into(), "into_scalar"),
            Type::Int | Type::SymInt => ("i64".into(), "into_int"),
            Type::Float => ("f64".into(), "into_double"),
            Type::Bool => ("bool".into(), "into_bool"),
            other => return Err(format!("return type `{other}` is not supported by the Rust emitter")),
        })
    };
    match s.returns.len() {
        0 => Ok(("()".into(), "Ok(())".into())),
        1 => {
            let (t, conv) = one(&s.returns[0].ty)?;
            Ok((t, format!("crate::ivalue::pop_return(&mut stack, NAME)?.{conv}(NAME)")))
        }
        n => {
            let mut tys = Vec::new();
            let mut code = String::new();
            for i in (0..n).rev() {
                let (t, conv) = one(&s.returns[i].ty)?;
                tys.insert(0, t);
                let _ = write!(code, "let r{i} = crate::ivalue::pop_return(&mut stack, NAME)?.{conv}(NAME)?; ");
            }
            let names: Vec<String> = (0..n).map(|i| format!("r{i}")).collect();
            let _ = write!(code, "Ok(({}))", names.join(", "));
            Ok((format!("({})", tys.join(", ")), format!("{{ {code} }}")))
        }
    }
}

/// Code that pushes the typed return `r` onto `stack`.
fn push_returns(s: &FunctionSchema) -> String {
    match s.returns.len() {
        0 => String::new(),
        1 => "stack.push(IValue::from(r));".into(),
        n => (0..n).map(|i| format!("stack.push(IValue::from(r.{i}));")).collect::<Vec<_>>().join(" "),
    }
}

/// A default value as a Rust expression of the argument's type.
pub(crate) fn default_expr(ty: &Type, d: &DefaultValue) -> Result<String, String> {
    use DefaultValue as D;
    let inner = match ty {
        Type::Optional(i) => {
            if matches!(d, D::None) {
                return Ok("None".into());
            }
            return default_expr(i, d).map(|e| format!("Some({e})"));
        }
        t => t,
    };
    let bad = || format!("default `{d}` does not fit type `{ty}`");
    Ok(match (inner, d) {
        (Type::Int | Type::SymInt, D::Int(i)) => format!("{i}"),
        (Type::Float, D::Float(x)) => float_lit(*x),
        (Type::Float, D::Int(i)) => format!("{i}.0"),
        (Type::Bool, D::Bool(b)) => format!("{b}"),
        (Type::Str, D::Str(s)) => format!("{s:?}"),
        (Type::Scalar, D::Int(i)) => format!("Scalar::Int({i})"),
        (Type::Scalar, D::Float(x)) => format!("Scalar::Float({})", float_lit(*x)),
        (Type::Scalar, D::Bool(b)) => format!("Scalar::Bool({b})"),
        (Type::List(e, n), D::Int(i)) if matches!(**e, Type::Int | Type::SymInt) => {
            let n = n.ok_or_else(bad)?;
            format!("&[{}]", vec![i.to_string(); n].join(", "))
        }
        (Type::List(e, _), D::IntList(v)) if matches!(**e, Type::Int | Type::SymInt) => {
            format!("&[{}]", v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", "))
        }
        (Type::List(e, _), D::IntList(v)) if **e == Type::Float && v.is_empty() => "&[]".into(),
        (Type::List(e, _), D::FloatList(v)) if **e == Type::Float => {
            format!("&[{}]", v.iter().map(|x| float_lit(*x)).collect::<Vec<_>>().join(", "))
        }
        (Type::List(e, _), D::BoolList(v)) if **e == Type::Bool => {
            format!("&[{}]", v.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", "))
        }
        (Type::MemoryFormat, D::Ident(i)) => match i.as_str() {
            "contiguous_format" => "MemoryFormat::Contiguous".into(),
            "preserve_format" => "MemoryFormat::Preserve".into(),
            "channels_last" => "MemoryFormat::ChannelsLast".into(),
            _ => return Err(bad()),
        },
        (Type::ScalarType, D::Ident(i)) => match i.as_str() {
            "long" => "ScalarType::I64".into(),
            "int" => "ScalarType::I32".into(),
            "float" => "ScalarType::F32".into(),
            "double" => "ScalarType::F64".into(),
            "bool" => "ScalarType::Bool".into(),
            _ => return Err(bad()),
        },
        (Type::Int, D::Ident(i)) if i == "Mean" => "1".into(),
        (Type::Int, D::Ident(i)) if i == "Sum" => "2".into(),
        (Type::Int, D::Ident(i)) if i == "None" => "0".into(),
        _ => return Err(bad()),
    })
}

fn float_lit(x: f64) -> String {
    if x.is_nan() {
        "f64::NAN".into()
    } else if x == f64::INFINITY {
        "f64::INFINITY".into()
    } else if x == f64::NEG_INFINITY {
        "f64::NEG_INFINITY".into()
    } else {
        format!("{x:?}")
    }
}

/// Everything the emitters need about one operator.
struct Op<'a> {
    f: &'a NativeFunction,
    names: Names,
    /// (ident, TyMap) per argument.
    args: Vec<(String, TyMap)>,
    ret_ty: String,
    pop_ret: String,
}

impl Op<'_> {
    fn params(&self) -> String {
        self.args.iter().map(|(n, t)| format!("{n}: {}", t.rust)).collect::<Vec<_>>().join(", ")
    }
    fn arg_names(&self) -> String {
        self.args.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>().join(", ")
    }
    fn sig(&self) -> String {
        let tys: Vec<&str> = self.args.iter().map(|(_, t)| t.rust.as_str()).collect();
        let sep = if tys.is_empty() { "" } else { ", " };
        format!("fn(DispatchKeySet{sep}{}) -> Result<{}>", tys.join(", "), self.ret_ty)
    }
    /// Expression for the union of the key sets of the tensor and device arguments.
    ///
    /// Note [Device arguments dispatch]: a `Device` argument contributes its backend's key, the
    /// way PyTorch's `BackendSelect` derives a factory's key from its `TensorOptions`: `empty(...,
    /// device=cuda)` runs the CUDA kernel, and `_to_copy(cpu_tensor, device=cuda)` too (CUDA
    /// outranks the CPU), which is the kernel that can reach both memories.
    fn key_set_expr(&self) -> String {
        let mut parts = Vec::new();
        for ((n, _), a) in self.args.iter().zip(&self.f.func.arguments) {
            match &a.ty {
                Type::Tensor => parts.push(format!("{n}.key_set()")),
                Type::Optional(i) if **i == Type::Tensor => {
                    parts.push(format!("{n}.map_or(DispatchKeySet::EMPTY, |t| t.key_set())"))
                }
                Type::List(e, _) if **e == Type::Tensor => {
                    parts.push(format!("{n}.iter().fold(DispatchKeySet::EMPTY, |s, t| s | t.key_set())"))
                }
                Type::List(e, _) if e.is_tensor_like() => {
                    parts.push(format!("{n}.iter().flatten().fold(DispatchKeySet::EMPTY, |s, t| s | t.key_set())"))
                }
                // A device argument adds its backend (Note [Device arguments dispatch]).
                Type::Device => parts.push(format!("DispatchKeySet::of_device({n})")),
                Type::Optional(i) if **i == Type::Device => {
                    parts.push(format!("{n}.map_or(DispatchKeySet::EMPTY, DispatchKeySet::of_device)"))
                }
                _ => {}
            }
        }
        if parts.is_empty() {
            "DispatchKeySet::EMPTY".into()
        } else {
            parts.join(" | ")
        }
    }
    fn has_tensor_args(&self) -> bool {
        self.f.func.arguments.iter().any(|a| a.ty.is_tensor_like())
    }
}

pub(crate) const HEADER: &str = "// @generated by cargo xtask codegen from aten/native_functions.yaml — DO NOT EDIT\n";

/// Backends whose kernels live in a crate of their own, with that crate's directory: the YAML
/// names their kernels (`CUDA: softmax_cuda`) like any other, but aten cannot see them, so
/// their registrations go to `<dir>/src/generated/registrations.rs`, compiled with the kernels
/// (PyTorch generates a `Register<Backend>.cpp` per backend for the same reason).
pub const BACKEND_CRATES: &[(&str, &str)] = &[("CUDA", "kernels-cuda")];

/// Whether kernels for the dispatch key `key` (a c10 key name) are registered by a backend
/// crate rather than by aten.
fn in_backend_crate(key: &str) -> bool {
    BACKEND_CRATES.iter().any(|(k, _)| *k == key)
}

/// Checks the YAML's operators and computes what every emitter needs of them.
fn build_ops(fns: &[NativeFunction]) -> Result<Vec<Op<'_>>, LoadError> {
    let names = compute_names(fns)?;
    let mut ops = Vec::with_capacity(fns.len());
    for (f, n) in fns.iter().zip(names) {
        let err = |message: String| LoadError { loc: f.loc.clone(), message };
        let mut args = Vec::new();
        for a in &f.func.arguments {
            let ident = if a.name == "self" { "self_".to_string() } else { arg_ident(&a.name) };
            args.push((ident, ty_map(&a.ty).map_err(err)?));
        }
        let (ret_ty, pop_ret) = ret_map(&f.func).map_err(err)?;
        for (key, _) in &f.dispatch {
            if c10_key_name(key).is_none() {
                return Err(err(format!("unknown dispatch key `{key}`")));
            }
        }
        ops.push(Op { f, names: n, args, ret_ty, pop_ret });
    }
    Ok(ops)
}

/// Generates the files of `aten/src/generated/` from the parsed YAML.
pub fn generate_aten(fns: &[NativeFunction]) -> Result<Vec<GeneratedFile>, LoadError> {
    let ops = build_ops(fns)?;
    let names: Vec<Names> = ops.iter().map(|o| o.names.clone()).collect();
    let groups = crate::frontend::front_groups(fns, &names, |i| ops[i].ret_ty.clone());
    let front = crate::front_rust::generate_front(fns, &names, &groups, |i| ops[i].ret_ty.clone())
        .map_err(|(i, message)| LoadError { loc: fns[i].loc.clone(), message })?;
    Ok([
        GeneratedFile { name: "mod.rs".into(), contents: gen_mod() },
        GeneratedFile { name: "handles.rs".into(), contents: gen_handles(&ops) },
        GeneratedFile { name: "functions.rs".into(), contents: gen_functions(&ops) },
        GeneratedFile {
            name: "methods.rs".into(),
            contents: gen_methods(&ops).map_err(|(l, m)| LoadError { loc: l, message: m })?,
        },
        GeneratedFile { name: "registrations.rs".into(), contents: gen_registrations(&ops) },
    ]
    .into_iter()
    .chain(front)
    .collect())
}

/// Generates `<dir>/src/generated/` of the backend crate that owns the `key` kernels (see
/// [`BACKEND_CRATES`]): `mod.rs` and `registrations.rs`, whose `register_<key>` registers
/// every `key:` kernel of the YAML, found in that crate's `native` module.
pub fn generate_backend(fns: &[NativeFunction], key: &str) -> Result<Vec<GeneratedFile>, LoadError> {
    let ops = build_ops(fns)?;
    let mut lines = Vec::new();
    for op in &ops {
        let m = &op.names.module;
        let names = op.arg_names();
        let closure_params = if names.is_empty() { "_ks".to_string() } else { format!("_ks, {names}") };
        for (k, kernel) in &op.f.dispatch {
            if c10_key_name(k) == Some(key) {
                lines.push(format!(
                    "    d.register_kernel(handles::{m}::NAME, DispatchKey::{key}, handles::{m}::kernel(|{closure_params}| crate::native::{kernel}({names}))).expect(\"generated registration\");"
                ));
            }
        }
    }
    let f = format!("register_{}", snake(key));
    let mut o = String::new();
    o.push_str(HEADER);
    let _ = write!(
        o,
        "//! Registers the `{key}` kernels named in `aten/native_functions.yaml` ({n} of them); the\n\
         //! kernels live in this crate's `native` module.\n\n\
         #![allow(unused_variables, unused_imports, clippy::too_many_arguments)]\n\n\
         use aten::dispatcher::Dispatcher;\nuse aten::handles;\nuse c10::DispatchKey;\n\n\
         /// Registers the `{key}` kernels.\npub fn {f}(d: &Dispatcher) {{\n",
        n = lines.len()
    );
    for l in &lines {
        o.push_str(l);
        o.push('\n');
    }
    o.push_str("}\n");
    let module = format!(
        "{HEADER}//! Code generated from `aten/native_functions.yaml` for this backend crate.\n\n\
         /// The `{key}` kernel registrations.\npub mod registrations;\n"
    );
    Ok(vec![
        GeneratedFile { name: "mod.rs".into(), contents: module },
        GeneratedFile { name: "registrations.rs".into(), contents: o },
    ])
}

/// The dispatch keys a `dispatch:` block may name (runtime backend keys and alias keys).
fn c10_key_name(key: &str) -> Option<&'static str> {
    Some(match key {
        "CPU" => "CPU",
        "CUDA" => "CUDA",
        "Meta" => "Meta",
        "PrivateUse1" => "PrivateUse1",
        "SparseCPU" => "SparseCPU",
        "SparseCUDA" => "SparseCUDA",
        "SparseMeta" => "SparseMeta",
        "SparseCsrCPU" => "SparseCsrCPU",
        "SparseCsrCUDA" => "SparseCsrCUDA",
        "CompositeImplicitAutograd" | "Math" => "CompositeImplicitAutograd",
        "CompositeExplicitAutograd" | "DefaultBackend" => "CompositeExplicitAutograd",
        "CompositeExplicitAutogradNonFunctional" => "CompositeExplicitAutogradNonFunctional",
        "Autograd" => "Autograd",
        "AutogradCPU" => "AutogradCPU",
        "BackendSelect" => "BackendSelect",
        _ => return None,
    })
}

fn gen_mod() -> String {
    format!(
        "{HEADER}//! Code generated from `aten/native_functions.yaml`: typed operator handles, free functions,\n\
         //! `Tensor` methods and the kernel registrations.\n\n\
         pub mod builders;\npub mod front;\npub mod functions;\npub mod handles;\npub mod methods;\npub mod registrations;\n"
    )
}

pub(crate) fn schema_doc(f: &NativeFunction) -> String {
    format!("`{}` ({})", f.schema_str, f.loc)
}

fn gen_handles(ops: &[Op]) -> String {
    let mut o = String::new();
    o.push_str(HEADER);
    o.push_str(
        "//! One module per operator: schema, typed signature, cached handle, `call` / `redispatch`,\n\
         //! and the adapters between the typed and the boxed calling conventions.\n\n\
         #![allow(unused_imports, clippy::too_many_arguments, clippy::type_complexity, clippy::needless_borrow, clippy::len_zero)]\n\n",
    );
    for op in ops {
        let f = op.f;
        let m = &op.names.module;
        let params = op.params();
        let names = op.arg_names();
        let comma_names = if names.is_empty() { String::new() } else { format!(", {names}") };
        let comma_params = if params.is_empty() { String::new() } else { format!(", {params}") };
        let n_args = op.args.len();
        let unbox: String = op
            .args
            .iter()
            .enumerate()
            .map(|(i, (n, t))| {
                let name = &f.func.arguments[i].name;
                let e = t.unbox.replace("N, A", &format!("NAME, {name:?}"));
                format!("        let {n} = a[{i}].{e};\n")
            })
            .collect();
        let pass: Vec<String> = op.args.iter().map(|(n, t)| t.pass.replace("{}", n)).collect();
        let pass = pass.join(", ");
        let comma_pass = if pass.is_empty() { String::new() } else { format!(", {pass}") };
        // An operator without returns (`_amp_foreach_non_finite_check_and_unscale_`) binds nothing.
        let bind = if f.func.returns.is_empty() { "" } else { "let r = " };
        let push_args: String =
            op.args.iter().map(|(n, _)| format!("IValue::from({n})")).collect::<Vec<_>>().join(", ");
        let _ = write!(
            o,
            r#"/// {doc}
pub mod {m} {{
    use c10::{{Device, DispatchKeySet, Layout, MemoryFormat, Result, Scalar, ScalarType}};
    use crate::dispatcher::{{KernelFunction, OperatorEntry}};
    use crate::ivalue::{{IValue, Stack}};
    use crate::{{Generator, Tensor}};

    /// The operator name (`name.overload`).
    pub const NAME: &str = "{full}";
    /// The schema as written in the YAML.
    pub const SCHEMA: &str = "{schema}";
    /// The typed kernel signature: the key set, then the arguments in schema order.
    pub type Sig = {sig};

    /// The operator's dispatcher entry (looked up once).
    #[inline]
    pub fn handle() -> &'static OperatorEntry {{
        static H: std::sync::OnceLock<&'static OperatorEntry> = std::sync::OnceLock::new();
        H.get_or_init(|| crate::dispatcher::dispatcher().find_or_create(NAME))
    }}

    /// Calls the operator: keys from the tensor arguments and the thread-local sets.
    #[inline]
    pub fn call({params}) -> Result<{ret}> {{
        let op = handle();
        let ks = op.compute_key_set({keys});
        if c10::record_function::is_active() {{
            // Through the boxed convention, in the operator's RecordFunction range (Note
            // [Recording through the boxed path]).
            return call_boxed_kernel(crate::dispatcher::recording_kernel(), op, ks{comma_names});
        }}
        dispatch(op, ks{comma_names})
    }}

    /// Calls the kernel for an explicit key set (what a kernel uses to continue below its key).
    #[inline]
    pub fn redispatch(ks: DispatchKeySet{comma_params}) -> Result<{ret}> {{
        let op = handle();
        let ks = ks & op.mask_for(ks);
        dispatch(op, ks{comma_names})
    }}

    #[inline]
    fn dispatch(op: &'static OperatorEntry, ks: DispatchKeySet{comma_params}) -> Result<{ret}> {{
        let k = op.lookup(ks)?;
        match k.unboxed::<Sig>() {{
            Some(f) => f(ks{comma_names}),
            None => call_boxed_kernel(&k, op, ks{comma_names}),
        }}
    }}

    /// Typed → boxed: pushes the arguments, runs a boxed kernel, pops the returns.
    #[inline(never)]
    fn call_boxed_kernel(k: &KernelFunction, op: &'static OperatorEntry, ks: DispatchKeySet{comma_params}) -> Result<{ret}> {{
        let mut stack: Stack = vec![{push_args}];
        k.call_boxed(op, ks, &mut stack)?;
        {pop_ret}
    }}

    /// Boxed → typed: a kernel record holding `f` and the adapter that pops its arguments.
    pub fn kernel(f: Sig) -> KernelFunction {{
        KernelFunction::from_unboxed(f, move |_op: &'static OperatorEntry, ks: DispatchKeySet, stack: &mut Stack| -> Result<()> {{
            if stack.len() < {n_args} {{
                return Err(c10::Error::BoxedArgument {{ op: NAME.to_string(), msg: format!("expected {n_args} arguments, got {{}}", stack.len()) }});
            }}
            let a = stack.split_off(stack.len() - {n_args});
{unbox}            {bind}f(ks{comma_pass})?;
            {push}
            Ok(())
        }})
    }}
}}

"#,
            doc = schema_doc(f),
            full = f.func.full_name(),
            schema = f.schema_str.replace('\\', "\\\\").replace('"', "\\\""),
            sig = op.sig(),
            ret = op.ret_ty,
            keys = op.key_set_expr(),
            pop_ret = op.pop_ret,
            push = push_returns(&f.func),
        );
    }
    o
}

fn gen_functions(ops: &[Op]) -> String {
    let mut o = String::new();
    o.push_str(HEADER);
    o.push_str(
        "//! Free functions for every operator, taking every argument in schema order (`ops::add(&a, &b, alpha)`).\n\n\
         #![allow(unused_imports, clippy::too_many_arguments)]\n\n\
         use c10::{Device, Layout, MemoryFormat, Result, Scalar, ScalarType};\n\
         use crate::{Generator, Tensor};\n\n",
    );
    for op in ops {
        let _ = write!(
            o,
            "/// {}\n#[inline]\npub fn {}({}) -> Result<{}> {{\n    crate::handles::{}::call({})\n}}\n\n",
            schema_doc(op.f),
            op.names.function,
            op.params(),
            op.ret_ty,
            op.names.module,
            op.arg_names()
        );
    }
    o
}

fn gen_methods(ops: &[Op]) -> Result<String, (crate::yaml::Location, String)> {
    let mut o = String::new();
    o.push_str(HEADER);
    o.push_str(
        "//! The explicit `Tensor` methods: for each operator with `variants: method` and a defaulted\n\
         //! argument, a `_with` form taking every argument (`a.add_with(&b, alpha)`). The short forms\n\
         //! with defaults (`a.add(&b)`) are the front end's, in `front.rs`.\n\n\
         #![allow(unused_imports, clippy::too_many_arguments)]\n\n\
         use c10::{Device, Layout, MemoryFormat, Result, Scalar, ScalarType};\n\
         use crate::{Generator, Tensor};\n\nimpl Tensor {\n",
    );
    for op in ops {
        if !op.f.variants_method {
            continue;
        }
        let Some(self_pos) = op.f.func.arguments.iter().position(|a| a.name == "self") else {
            return Err((op.f.loc.clone(), "variants: method needs a `self` argument".into()));
        };
        let mut full_params = Vec::new();
        let mut full_args = Vec::new();
        let mut any_default = false;
        for (i, ((n, t), a)) in op.args.iter().zip(&op.f.func.arguments).enumerate() {
            if i == self_pos {
                full_args.push("self".to_string());
                continue;
            }
            full_params.push(format!("{n}: {}", t.rust));
            full_args.push(n.clone());
            match default_of(a) {
                Some(Ok(_)) => any_default = true,
                Some(Err(m)) => return Err((op.f.loc.clone(), m)),
                None => {}
            }
        }
        let name = &op.names.function;
        let emit = |o: &mut String, name: &str, params: &[String], args: &[String]| {
            let params = if params.is_empty() { String::new() } else { format!(", {}", params.join(", ")) };
            let _ = write!(
                o,
                "    /// {}\n    #[inline]\n    pub fn {name}(&self{params}) -> Result<{}> {{\n        crate::handles::{}::call({})\n    }}\n\n",
                schema_doc(op.f),
                op.ret_ty,
                op.names.module,
                args.join(", ")
            );
        };
        // The short form (`a.add(&b)`) is the front end's (`front.rs`).
        if any_default {
            let with = match name.strip_suffix('_') {
                Some(stem) => format!("{stem}_with_"),
                None => format!("{name}_with"),
            };
            emit(&mut o, &with, &full_params, &full_args);
        }
    }
    o.push_str("}\n");
    Ok(o)
}

/// The Rust expression of an argument's default, if it has one.
fn default_of(a: &Argument) -> Option<Result<String, String>> {
    a.default.as_ref().map(|d| default_expr(&a.ty, d))
}

fn gen_registrations(ops: &[Op]) -> String {
    let mut o = String::new();
    o.push_str(HEADER);
    o.push_str(
        "//! Registers every schema and every kernel named in the YAML with the dispatcher, plus the\n\
         //! generated BackendSelect (factories) and ADInplaceOrView (version counters) kernels.\n\n\
         #![allow(unused_variables, clippy::too_many_arguments)]\n\n\
         use c10::{DispatchKey, DispatchKeySet};\n\
         use crate::dispatcher::Dispatcher;\nuse crate::handles;\n\n",
    );
    // Schemas.
    o.push_str("/// Declares every operator of the YAML.\npub fn register_schemas(d: &Dispatcher) {\n");
    for op in ops {
        let _ =
            writeln!(o, "    d.def(handles::{m}::SCHEMA).expect(\"generated schema parses\");", m = op.names.module);
    }
    o.push_str("}\n\n");

    // Kernels, grouped per key.
    let mut per_key: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for op in ops {
        let m = &op.names.module;
        let names = op.arg_names();
        let closure_params = if names.is_empty() { "_ks".to_string() } else { format!("_ks, {names}") };
        for (key, kernel) in &op.f.dispatch {
            let key = c10_key_name(key).expect("checked in build_ops");
            if in_backend_crate(key) {
                continue;
            }
            per_key.entry(key).or_default().push(format!(
                "    d.register_kernel(handles::{m}::NAME, DispatchKey::{key}, handles::{m}::kernel(|{closure_params}| crate::native::{kernel}({names}))).expect(\"generated registration\");"
            ));
        }
        // BackendSelect for factories: no tensor argument, a `Device?` argument.
        if !op.has_tensor_args() {
            if let Some(dev) = op.f.func.arguments.iter().position(|a| a.ty == Type::Optional(Box::new(Type::Device))) {
                let dev = &op.args[dev].0;
                let comma_names = if names.is_empty() { String::new() } else { format!(", {names}") };
                per_key.entry("BackendSelect").or_default().push(format!(
                    "    d.register_kernel(handles::{m}::NAME, DispatchKey::BackendSelect, handles::{m}::kernel(|{closure_params}| handles::{m}::redispatch(crate::backend_key_set({dev}){comma_names}))).expect(\"generated registration\");"
                ));
            }
        }
        // ADInplaceOrView for operators that write arguments.
        if op.f.func.is_mutable() {
            let mut bumps = String::new();
            for ((n, _), a) in op.args.iter().zip(&op.f.func.arguments) {
                if !a.is_write() {
                    continue;
                }
                match &a.ty {
                    Type::Tensor => {
                        let _ = write!(bumps, " {n}.bump_version();");
                    }
                    Type::Optional(_) => {
                        let _ = write!(bumps, " if let Some(t) = {n} {{ t.bump_version(); }}");
                    }
                    _ => {
                        let _ = write!(bumps, " for t in {n}.iter() {{ t.bump_version(); }}");
                    }
                }
            }
            let comma_names = if names.is_empty() { String::new() } else { format!(", {names}") };
            let (bind, semi, ret) = if op.f.func.returns.is_empty() { ("", ";", "()") } else { ("let r = ", "", "r") };
            per_key.entry("ADInplaceOrView").or_default().push(format!(
                "    d.register_kernel(handles::{m}::NAME, DispatchKey::ADInplaceOrView, handles::{m}::kernel(|ks, {names}| {{ {bind}{{ let _below = c10::ExcludeDispatchKeyGuard::below_ad_inplace_or_view(); handles::{m}::redispatch(ks & DispatchKeySet::after_ad_inplace_or_view_keyset(){comma_names})?{semi} }};{bumps} Ok({ret}) }})).expect(\"generated registration\");"
            ));
        }
    }
    let mut fns = Vec::new();
    for (key, lines) in &per_key {
        let f = format!("register_{}", snake(key));
        let _ = writeln!(o, "/// Registers the `{key}` kernels.\npub fn {f}(d: &Dispatcher) {{");
        for l in lines {
            o.push_str(l);
            o.push('\n');
        }
        o.push_str("}\n\n");
        fns.push(f);
    }
    o.push_str(
        "/// Runs every registration of this file.\npub fn register_all(d: &Dispatcher) {\n    register_schemas(d);\n",
    );
    for f in fns {
        let _ = writeln!(o, "    {f}(d);");
    }
    o.push_str("}\n");
    o
}

fn snake(s: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower = i > 0 && chars[i - 1].is_lowercase();
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if i > 0 && (prev_lower || (next_lower && chars[i - 1].is_uppercase())) {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_native_functions;

    const YAML: &str = "\
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
  dispatch:
    CPU: binary::add
- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
  variants: function, method
  dispatch:
    CompositeImplicitAutograd: binary::add_scalar
- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
  variants: method
  dispatch:
    CPU: binary::add_
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: binary::add_out
- func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch:
    CPU: ternary::where_self
- func: zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
  dispatch:
    CompositeExplicitAutograd: factory::zeros
";

    fn gen() -> Vec<GeneratedFile> {
        let fns = parse_native_functions("native_functions.yaml", YAML).unwrap();
        generate_aten(&fns).unwrap()
    }

    fn file<'a>(files: &'a [GeneratedFile], name: &str) -> &'a str {
        &files.iter().find(|f| f.name == name).unwrap().contents
    }

    #[test]
    fn names_follow_the_rules() {
        let fns = parse_native_functions("n.yaml", YAML).unwrap();
        let n: Vec<String> = compute_names(&fns).unwrap().into_iter().map(|n| n.function).collect();
        assert_eq!(n, vec!["add", "add_scalar", "add_", "add_out", "where_self", "zeros"]);
    }

    #[test]
    fn handles_have_typed_signatures_and_adapters() {
        let files = gen();
        let h = file(&files, "handles.rs");
        assert!(h.starts_with("// @generated"));
        assert!(h.contains("pub type Sig = fn(DispatchKeySet, &Tensor, &Tensor, Scalar) -> Result<Tensor>;"));
        assert!(h.contains("let ks = op.compute_key_set(self_.key_set() | other.key_set());"));
        assert!(h.contains("let alpha = a[2].to_scalar(NAME, \"alpha\")?;"));
        assert!(h.contains("pub type Sig = fn(DispatchKeySet, &[i64], Option<ScalarType>, Option<Layout>, Option<Device>, Option<bool>) -> Result<Tensor>;"));
    }

    #[test]
    fn methods_offer_with_forms_and_the_front_end_the_short_ones() {
        let files = gen();
        let m = file(&files, "methods.rs");
        assert!(m.contains("pub fn add_with(&self, other: &Tensor, alpha: Scalar)"));
        assert!(!m.contains("pub fn add(&self"), "the short form is the front end's");
        assert!(!m.contains("fn add_out"));
        let f = file(&files, "front.rs");
        // add.Tensor and add.Scalar share `add`: `other` is a tensor or a number, alpha an option.
        assert!(f.contains("pub fn add<'a>(&'a self, other: impl Into<TensorOrScalar<'a>>) -> builders::Add<'a> {"));
        assert!(f.contains(
            "pub fn add<'a>(self_: &'a Tensor, other: impl Into<TensorOrScalar<'a>>) -> builders::Add<'a> {"
        ));
        // No defaulted argument: the result directly.
        assert!(
            f.contains("pub fn where_self<'a>(&'a self, condition: &'a Tensor, other: &'a Tensor) -> Result<Tensor> {")
        );
        // A factory is also an associated function; `int[]` takes one integer or a list.
        assert!(f.contains("pub fn zeros<'a>(size: impl Into<IntList<'a>>) -> builders::Zeros<'a> {"));
        assert!(f.contains("    pub fn zeros<'a>(size: impl Into<IntList<'a>>) -> builders::Zeros<'a> { zeros(size) }"));
        assert!(!f.contains("fn add_out"));
        let b = file(&files, "builders.rs");
        assert!(b.contains("pub fn alpha(mut self, v: impl Into<Scalar>) -> Self {"));
        // The overload follows the argument's kind, the default fills what was not set.
        assert!(b.contains("if other.is_tensor() {  return crate::handles::add_tensor::call(self_, other.tensor(\"add\", \"other\")?, alpha.unwrap_or(Scalar::Int(1))); }"));
        assert!(b.contains("if other.is_scalar() {"));
        assert!(b.contains("Err(crate::front::no_overload("));
        assert!(b.contains("pub struct Zeros<'a> {"));
        assert!(b.contains("let size_v = size.expand(None);"));
    }

    #[test]
    fn registrations_cover_keys_backend_select_and_inplace() {
        let files = gen();
        let r = file(&files, "registrations.rs");
        assert!(r.contains("DispatchKey::CPU, handles::add_tensor::kernel(|_ks, self_, other, alpha| crate::native::binary::add(self_, other, alpha))"));
        assert!(r.contains("pub fn register_composite_implicit_autograd(d: &Dispatcher)"));
        assert!(r.contains("DispatchKey::BackendSelect, handles::zeros::kernel("));
        assert!(r.contains("crate::backend_key_set(device)"));
        assert!(r.contains("let _below = c10::ExcludeDispatchKeyGuard::below_ad_inplace_or_view(); handles::add_tensor_::redispatch(ks & DispatchKeySet::after_ad_inplace_or_view_keyset(), self_, other, alpha)? }; self_.bump_version(); Ok(r)"));
        assert!(r.contains("handles::add_out::NAME, DispatchKey::ADInplaceOrView"));
        assert!(r.contains("out.bump_version()"));
    }

    #[test]
    fn backend_crate_kernels_are_registered_by_their_crate() {
        let y = "- func: softmax.int(Tensor self, int dim) -> Tensor\n  dispatch:\n    CPU: softmax_cpu\n    CUDA: softmax::softmax_cuda\n";
        let fns = parse_native_functions("n.yaml", y).unwrap();
        let aten = file(&generate_aten(&fns).unwrap(), "registrations.rs").to_string();
        assert!(aten.contains("crate::native::softmax_cpu(self_, dim)"), "{aten}");
        assert!(!aten.contains("softmax_cuda") && !aten.contains("DispatchKey::CUDA"), "{aten}");
        let cuda = generate_backend(&fns, "CUDA").unwrap();
        let r = file(&cuda, "registrations.rs");
        assert!(r.contains("pub fn register_cuda(d: &Dispatcher)"), "{r}");
        assert!(r.contains("d.register_kernel(handles::softmax_int::NAME, DispatchKey::CUDA, handles::softmax_int::kernel(|_ks, self_, dim| crate::native::softmax::softmax_cuda(self_, dim)))"), "{r}");
        assert!(r.contains("use aten::handles;"), "{r}");
        assert!(!r.contains("softmax_cpu"), "{r}");
        assert!(file(&cuda, "mod.rs").contains("pub mod registrations;"));
        // No CUDA kernel yet: an empty registration function, still generated and compiled.
        let none =
            parse_native_functions("n.yaml", "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f\n").unwrap();
        let r = file(&generate_backend(&none, "CUDA").unwrap(), "registrations.rs").to_string();
        assert!(r.contains("(0 of them)") && r.contains("pub fn register_cuda(d: &Dispatcher) {\n}"), "{r}");
    }

    #[test]
    fn unsupported_types_point_at_the_yaml_line() {
        let y = "- func: f(Dimname d) -> Tensor\n  dispatch:\n    CPU: f\n";
        let fns = parse_native_functions("n.yaml", y).unwrap();
        let e = generate_aten(&fns).unwrap_err();
        assert_eq!(e.loc.to_string(), "n.yaml:1");
        assert!(e.message.contains("Dimname"), "{}", e.message);
    }

    #[test]
    fn bad_dispatch_key_is_reported() {
        let y = "- func: f(Tensor self) -> Tensor\n  dispatch:\n    Nope: f\n";
        let fns = parse_native_functions("n.yaml", y).unwrap();
        let e = generate_aten(&fns).unwrap_err();
        assert!(e.message.contains("unknown dispatch key `Nope`"));
    }

    #[test]
    fn snake_case_of_keys() {
        assert_eq!(snake("CompositeImplicitAutograd"), "composite_implicit_autograd");
        assert_eq!(snake("CPU"), "cpu");
        assert_eq!(snake("ADInplaceOrView"), "ad_inplace_or_view");
        assert_eq!(snake("BackendSelect"), "backend_select");
    }
}
