//! The Python front end's bindings (`python/src/generated/bindings.rs`): for every Python name
//! of an operator, the overloads its argument parser tries, in the order it tries them, each
//! with its `out=` variant.
//!
//! Note [Python bindings are data]: PyTorch generates a C++ function per Python name whose
//! `PythonArgParser` holds the overloads' signature strings. Ours generates only the table: the
//! schemas themselves (argument types, names, defaults, keyword-only markers) are already in
//! the dispatcher at run time, and one parser in `python/src/parser.rs` reads them there. A new
//! YAML entry gets its Python function (and method, per `variants`) with no hand-written code,
//! and the table is part of `cargo xtask codegen --check`.
//!
//! The grouping differs from the Rust front end's ([`crate::frontend`]) because Python can do
//! what Rust cannot: one name takes every overload of a base name, however the overloads'
//! arguments or returns differ (`torch.max(x)` is a tensor, `torch.max(x, 1)` a pair), and the
//! parser picks one by the arguments given. What both front ends share is the schema's
//! defaults and the naming.

use std::fmt::Write as _;

use schema::{Argument, FunctionSchema, Type};

use crate::gen::GeneratedFile;
use crate::yaml::NativeFunction;

/// Where a Python name lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespace {
    /// `torch.X` (and `Tensor.X` for methods).
    Torch,
    /// `torch.linalg.X` (YAML `linalg_X`).
    Linalg,
    /// `torch.fft.X` (YAML `fft_X`).
    Fft,
    /// `torch.special.X` (YAML `special_X`).
    Special,
}

impl Namespace {
    fn rust(self) -> &'static str {
        match self {
            Namespace::Torch => "Torch",
            Namespace::Linalg => "Linalg",
            Namespace::Fft => "Fft",
            Namespace::Special => "Special",
        }
    }
}

/// One Python name and the overloads behind it.
#[derive(Debug, Clone)]
pub struct PyBinding {
    /// The YAML base name (`add`, `add_`, `linalg_norm`).
    pub base: String,
    /// The name in its namespace (`add`, `add_`, `norm`).
    pub name: String,
    /// Its namespace.
    pub namespace: Namespace,
    /// A function of the namespace (some overload has `variants: function`).
    pub function: bool,
    /// A `Tensor` method (some overload has `variants: method`; always in `torch`).
    pub method: bool,
    /// `(overload, its out= overload)` as operator names (`add.Tensor`, `add.out`), in the
    /// order the parser tries them.
    pub overloads: Vec<(String, Option<String>)>,
}

/// The namespace and name of a YAML base name: PyTorch's `python_module: linalg` (and fft,
/// special) entries are the ones named `linalg_*`.
fn place(base: &str) -> (Namespace, String) {
    for (prefix, ns) in [("linalg_", Namespace::Linalg), ("fft_", Namespace::Fft), ("special_", Namespace::Special)] {
        if let Some(rest) = base.strip_prefix(prefix) {
            return (ns, rest.to_string());
        }
    }
    (Namespace::Torch, base.to_string())
}

/// The operator name of a schema (`add.Tensor`, `relu`).
fn op_name(f: &FunctionSchema) -> String {
    if f.overload.is_empty() {
        f.name.clone()
    } else {
        format!("{}.{}", f.name, f.overload)
    }
}

/// The arguments of an out= overload without its outputs (mutable `Tensor(a!)` keyword
/// arguments).
fn without_outputs(f: &FunctionSchema) -> Vec<&Argument> {
    f.arguments.iter().filter(|a| !(a.kwarg_only && a.alias.as_ref().is_some_and(|al| al.is_write))).collect()
}

/// Whether overload `a` must be tried before `b` (PyTorch's order for signatures that only
/// differ in types): same arguments, and where the types differ `a` has the narrower one
/// (`Tensor` before `Scalar` or `int`, `int` before `int[]`), so a 0-dim tensor reaches the
/// tensor overload and a lone integer the integer one.
fn precedes(a: &FunctionSchema, b: &FunctionSchema) -> bool {
    if a.arguments.len() != b.arguments.len() {
        return false;
    }
    let mut strict = false;
    for (x, y) in a.arguments.iter().zip(&b.arguments) {
        if x.ty == y.ty {
            continue;
        }
        let narrower = matches!(
            (&x.ty, &y.ty),
            (Type::Tensor, Type::Scalar)
                | (Type::Int | Type::SymInt, Type::List(_, _))
                | (Type::Optional(_), Type::List(_, _))
        );
        if !narrower {
            return false;
        }
        strict = true;
    }
    strict
}

/// PyTorch's C++ spelling of a schema type in the parser's signature strings
/// (`IntArrayRef`, `int64_t`, `ScalarType?`), which PyTorch sorts its overloads by.
fn cpp_type(t: &Type) -> String {
    match t {
        Type::Tensor => "Tensor".into(),
        Type::Int => "int64_t".into(),
        Type::SymInt => "SymInt".into(),
        Type::Float => "double".into(),
        Type::Bool => "bool".into(),
        Type::Str => "c10::string_view".into(),
        Type::Scalar => "Scalar".into(),
        Type::ScalarType => "ScalarType".into(),
        Type::Layout => "Layout".into(),
        Type::Device => "Device".into(),
        Type::MemoryFormat => "MemoryFormat".into(),
        Type::Generator => "Generator".into(),
        Type::Dimname => "Dimname".into(),
        Type::Storage => "Storage".into(),
        Type::Stream => "Stream".into(),
        Type::Optional(inner) => format!("{}?", cpp_type(inner)),
        Type::List(e, n) => {
            let base = match &**e {
                Type::Int => "IntArrayRef".to_string(),
                Type::SymInt => "SymIntArrayRef".to_string(),
                Type::Float => "ArrayRef<double>".to_string(),
                Type::Bool => "std::array<bool>".to_string(),
                Type::Tensor => "TensorList".to_string(),
                Type::Optional(_) => "c10::List<::std::optional<Tensor>>".to_string(),
                Type::Dimname => "DimnameList".to_string(),
                other => format!("{}[]", cpp_type(other)),
            };
            match n {
                Some(n) => format!("{base}[{n}]"),
                None => base,
            }
        }
    }
}

/// The signature text PyTorch sorts overloads by before ordering them by type
/// (`max(Tensor input, Tensor other)` comes before `max(Tensor input, int64_t dim, ...)`).
fn signature_text(f: &FunctionSchema) -> String {
    let mut parts = Vec::new();
    let mut star = false;
    for a in &f.arguments {
        if a.kwarg_only && !star {
            parts.push("*".to_string());
            star = true;
        }
        let name = if a.name == "self" { "input" } else { a.name.as_str() };
        parts.push(format!("{} {name}", cpp_type(&a.ty)));
    }
    format!("{}({})", f.name, parts.join(", "))
}

/// Overloads PyTorch leaves out of its Python bindings: a Python number given for the `Tensor`
/// overload's `other` becomes a wrapped-number tensor, so the `Scalar` forms would only change
/// the overload lists that argument errors print.
const SKIPPED: [&str; 8] = [
    "add.Scalar",
    "add_.Scalar",
    "sub.Scalar",
    "sub_.Scalar",
    "mul.Scalar",
    "mul_.Scalar",
    "div.Scalar",
    "div_.Scalar",
];

/// The Python bindings of `fns`, one per (namespace, name).
pub fn python_bindings(fns: &[NativeFunction]) -> Vec<PyBinding> {
    let mut out: Vec<PyBinding> = Vec::new();
    let mut order: Vec<Vec<usize>> = Vec::new();
    for (i, f) in fns.iter().enumerate() {
        if f.func.is_out_fn() || SKIPPED.contains(&op_name(&f.func).as_str()) {
            continue;
        }
        let base = &f.func.name;
        let k = match out.iter().position(|b| &b.base == base) {
            Some(k) => k,
            None => {
                let (namespace, name) = place(base);
                out.push(PyBinding {
                    base: base.clone(),
                    name,
                    namespace,
                    function: false,
                    method: false,
                    overloads: Vec::new(),
                });
                order.push(Vec::new());
                out.len() - 1
            }
        };
        out[k].function |= f.variants_function;
        out[k].method |= f.variants_method;
        order[k].push(i);
    }
    // PyTorch's order: by signature text, then each overload before the first one it must
    // precede (a stable topological order over the types: `precedes`).
    for idx in &mut order {
        let mut by_text = idx.clone();
        by_text.sort_by_key(|&i| signature_text(&fns[i].func));
        idx.clear();
        for i in by_text {
            let at = idx.iter().position(|&j| precedes(&fns[i].func, &fns[j].func)).unwrap_or(idx.len());
            idx.insert(at, i);
        }
    }
    for (b, idx) in out.iter_mut().zip(order) {
        b.method &= b.namespace == Namespace::Torch;
        for i in idx {
            let f = &fns[i].func;
            // The out= overload: same base name, and the same arguments once its outputs are
            // left out.
            let out_fn = fns.iter().find(|g| {
                g.func.is_out_fn()
                    && g.func.name == f.name
                    && without_outputs(&g.func).len() == f.arguments.len()
                    && without_outputs(&g.func).iter().zip(&f.arguments).all(|(x, y)| x.name == y.name && x.ty == y.ty)
            });
            b.overloads.push((op_name(f), out_fn.map(|g| op_name(&g.func))));
        }
    }
    out
}

/// `bindings.rs` for the `python` crate.
pub fn generate_python(fns: &[NativeFunction]) -> Vec<GeneratedFile> {
    let bindings = python_bindings(fns);
    let mut o = String::new();
    o.push_str(
        "// @generated by codegen from aten/native_functions.yaml (codegen/src/front_python.rs). Do not edit.\n\n\
         //! Every Python name of an operator and the overloads behind it, in the order the parser\n\
         //! tries them (Note [Python bindings are data] in codegen/src/front_python.rs).\n\n\
         use crate::parser::{Binding, Namespace};\n\n",
    );
    let _ = writeln!(o, "/// The bindings, in YAML order of their first overload.");
    let _ = writeln!(o, "pub static BINDINGS: &[Binding] = &[");
    for b in &bindings {
        let ovs: Vec<String> = b
            .overloads
            .iter()
            .map(|(op, out)| match out {
                Some(out) => format!("(\"{op}\", Some(\"{out}\"))"),
                None => format!("(\"{op}\", None)"),
            })
            .collect();
        let _ = writeln!(
            o,
            "    Binding {{ name: \"{}\", namespace: Namespace::{}, function: {}, method: {}, overloads: &[{}] }},",
            b.name,
            b.namespace.rust(),
            b.function,
            b.method,
            ovs.join(", ")
        );
    }
    o.push_str("];\n");
    vec![GeneratedFile { name: "bindings.rs".into(), contents: o }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_native_functions;

    #[test]
    fn one_python_name_per_base_name_with_out_variants_and_tensor_first() {
        let fns = parse_native_functions(
            "n.yaml",
            "\
- func: rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
  variants: function, method
- func: rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
- func: rsub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
- func: rsub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
  variants: method
- func: mul.Scalar(Tensor self, Scalar other) -> Tensor
  variants: function, method
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
- func: max(Tensor self) -> Tensor
  variants: function, method
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  variants: function, method
- func: max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)
- func: linalg_norm(Tensor self, Scalar? ord=None) -> Tensor
",
        )
        .unwrap();
        let b = python_bindings(&fns);
        let names: Vec<(&str, Namespace, bool, bool)> =
            b.iter().map(|b| (b.name.as_str(), b.namespace, b.function, b.method)).collect();
        assert_eq!(
            names,
            [
                ("rsub", Namespace::Torch, true, true),
                ("rsub_", Namespace::Torch, false, true),
                ("mul", Namespace::Torch, true, true),
                ("max", Namespace::Torch, true, true),
                ("norm", Namespace::Linalg, true, false)
            ]
        );
        // rsub.Tensor is tried first although the YAML lists rsub.Scalar first; only it has an
        // out= variant with its arguments.
        assert_eq!(
            b[0].overloads,
            [("rsub.Tensor".to_string(), Some("rsub.out".to_string())), ("rsub.Scalar".into(), None)]
        );
        // mul.Scalar is one of the overloads PyTorch does not bind.
        assert_eq!(b[2].overloads, [("mul.Tensor".to_string(), None)]);
        assert_eq!(b[3].overloads[1], ("max.dim".to_string(), Some("max.dim_max".to_string())));
        let text = &generate_python(&fns)[0].contents;
        assert!(text.contains(
            "Binding { name: \"rsub\", namespace: Namespace::Torch, function: true, method: true, overloads: &[(\"rsub.Tensor\", Some(\"rsub.out\")), (\"rsub.Scalar\", None)] },"
        ));
    }
}
