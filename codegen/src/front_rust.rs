//! The Rust front end's emitter: from the groups of [`crate::frontend`] to
//! `aten/src/generated/builders.rs` (one builder struct per group that has options or several
//! overloads: a setter per option, `call`) and `aten/src/generated/front.rs` (the calls: free
//! functions, `Tensor` methods and, for factories, associated functions such as
//! `Tensor::zeros`). See Note [Front-end calls] in `aten/src/front.rs`.

use std::collections::HashSet;
use std::fmt::Write as _;

use schema::{Argument, Type};

use crate::frontend::{Field, FieldTy, Group};
use crate::gen::{arg_ident, default_expr, schema_doc, GeneratedFile, Names, HEADER};
use crate::yaml::NativeFunction;

/// Names of hand-written inherent items of `Tensor` (`aten/src/tensor.rs` and friends) that a
/// generated associated function must not take.
const TENSOR_RESERVED: &[&str] = &["scalar_tensor", "from_vec", "from_slice", "empty_uninit", "empty_strided_uninit"];

/// A Rust type's spelling in the builders, and how the user's value becomes it.
struct Spell {
    /// The parameter type of the call or setter.
    param: String,
    /// The stored type.
    store: String,
    /// Expression turning the parameter `{}` into the stored value.
    conv: &'static str,
}

fn is_int(t: &Type) -> bool {
    matches!(t, Type::Int | Type::SymInt)
}

/// How a value of schema type `t` (not optional) is taken and kept. `reduction` names an
/// `int reduction` argument, taken as `Reduction`.
fn value_spell(t: &Type, reduction: bool) -> Result<Spell, String> {
    let s = |param: &str, store: &str, conv: &'static str| Spell { param: param.into(), store: store.into(), conv };
    Ok(match t {
        Type::Tensor => s("&'a Tensor", "&'a Tensor", "{}"),
        Type::Int | Type::SymInt if reduction => s("Reduction", "i64", "{}.code()"),
        Type::Int | Type::SymInt => s("i64", "i64", "{}"),
        Type::Float => s("f64", "f64", "{}"),
        Type::Bool => s("bool", "bool", "{}"),
        Type::Str => s("&'a str", "&'a str", "{}"),
        Type::Scalar => s("impl Into<Scalar>", "Scalar", "{}.into()"),
        Type::ScalarType => s("ScalarType", "ScalarType", "{}"),
        Type::Layout => s("Layout", "Layout", "{}"),
        Type::Device => s("Device", "Device", "{}"),
        Type::MemoryFormat => s("MemoryFormat", "MemoryFormat", "{}"),
        Type::Generator => s("&'a Generator", "&'a Generator", "{}"),
        Type::List(e, _) if is_int(e) => s("impl Into<IntList<'a>>", "IntList<'a>", "{}.into()"),
        Type::List(e, _) if **e == Type::Float => s("&'a [f64]", "&'a [f64]", "{}"),
        Type::List(e, _) if **e == Type::Bool => s("&'a [bool]", "&'a [bool]", "{}"),
        Type::List(e, _) if **e == Type::Tensor => s("impl Into<TensorList<'a>>", "TensorList<'a>", "{}.into()"),
        Type::List(e, _) if **e == Type::Optional(Box::new(Type::Tensor)) => {
            s("&'a [Option<Tensor>]", "&'a [Option<Tensor>]", "{}")
        }
        other => return Err(format!("type `{other}` is not supported by the front-end emitter")),
    })
}

/// The spelling of a field: positional fields are taken as the call's parameters (an optional
/// positional one as the explicit layer's `Option<...>`), options are kept as `Option<value>`,
/// `None` meaning "not set".
fn field_spell(f: &Field) -> Result<Spell, String> {
    let reduction = f.name == "reduction";
    match &f.ty {
        FieldTy::TensorOrScalar => Ok(Spell {
            param: "impl Into<TensorOrScalar<'a>>".into(),
            store: "TensorOrScalar<'a>".into(),
            conv: "{}.into()",
        }),
        FieldTy::Schema(Type::Optional(inner)) if f.positional => {
            let v = match &**inner {
                Type::List(e, _) if is_int(e) => "&'a [i64]".to_string(),
                Type::List(e, _) if **e == Type::Float => "&'a [f64]".to_string(),
                t => value_spell(t, reduction)?.store,
            };
            Ok(Spell { param: format!("Option<{v}>"), store: format!("Option<{v}>"), conv: "{}" })
        }
        FieldTy::Schema(Type::Optional(inner)) => value_spell(inner, reduction),
        FieldTy::Schema(t) => value_spell(t, reduction),
    }
}

fn camel(name: &str) -> String {
    let mut out = String::new();
    let lead = name.len() - name.trim_start_matches('_').len();
    if lead > 0 {
        out.push_str("Private");
    }
    let inplace = name.ends_with('_') && !name.ends_with("__");
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let mut c = part.chars();
        if let Some(first) = c.next() {
            out.extend(first.to_uppercase());
            out.push_str(c.as_str());
        }
    }
    if name.starts_with("__") && name.ends_with("__") {
        out.push_str("Dunder");
    } else if inplace {
        out.push_str("Inplace");
    }
    out
}

/// The field's local name in the generated code.
fn ident(f: &Field) -> String {
    if f.name == "self" {
        "self_".into()
    } else {
        arg_ident(&f.name)
    }
}

/// A default as the explicit layer's expression.
fn default_of(a: &Argument) -> Result<Option<String>, String> {
    a.default.as_ref().map(|d| default_expr(&a.ty, d)).transpose()
}

fn list_len(t: &Type) -> Option<usize> {
    match t {
        Type::Optional(i) => list_len(i),
        Type::List(_, n) => *n,
        _ => None,
    }
}

fn is_int_list(t: &Type) -> bool {
    match t {
        Type::Optional(i) => is_int_list(i),
        Type::List(e, _) => is_int(e),
        _ => false,
    }
}

/// Code of one overload's branch in `call`: its condition (empty when always applicable), the
/// statements before the call, and the call.
struct Branch {
    cond: Vec<String>,
    pre: Vec<String>,
    call: String,
}

fn branch(g: &Group, k: usize, f_: &NativeFunction, names: &Names, opname: &str) -> Result<Branch, String> {
    let mut cond = Vec::new();
    let mut pre = Vec::new();
    let mut args = Vec::new();
    for f in g.options() {
        if f.per_overload[k].is_none() {
            cond.push(format!("{}.is_none()", ident(f)));
        }
    }
    for a in &f_.func.arguments {
        let f = g.fields.iter().find(|f| f.name == a.name).ok_or("field missing")?;
        let n = ident(f);
        let q = &a.name;
        let expr = if f.ty == FieldTy::TensorOrScalar {
            let (is, get) = if a.ty == Type::Tensor { ("is_tensor", "tensor") } else { ("is_scalar", "scalar") };
            if f.positional {
                cond.push(format!("{n}.{is}()"));
                format!("{n}.{get}({opname:?}, {q:?})?")
            } else {
                match default_of(a)? {
                    None => {
                        cond.push(format!("{n}.is_some_and(|v| v.{is}())"));
                        format!("crate::front::required({n}, {opname:?}, {q:?})?.{get}({opname:?}, {q:?})?")
                    }
                    Some(d) => {
                        cond.push(format!("{n}.is_none_or(|v| v.{is}())"));
                        format!("{n}.map(|v| v.{get}({opname:?}, {q:?})).transpose()?.unwrap_or({d})")
                    }
                }
            }
        } else if f.positional {
            if is_int_list(&a.ty) && !matches!(a.ty, Type::Optional(_)) {
                pre.push(format!("let {n}_v = {n}.expand({:?});", list_len(&a.ty)));
                format!("&{n}_v")
            } else if matches!(&a.ty, Type::List(e, _) if **e == Type::Tensor) {
                format!("{n}.as_slice()")
            } else {
                n.clone()
            }
        } else {
            let optional = matches!(a.ty, Type::Optional(_));
            let d = default_of(a)?;
            if is_int_list(&a.ty) {
                let len = list_len(&a.ty);
                match (&d, optional) {
                    (None, false) => {
                        cond.push(format!("{n}.is_some()"));
                        pre.push(format!(
                            "let {n}_v = crate::front::required({n}.as_ref(), {opname:?}, {q:?})?.expand({len:?});"
                        ));
                        format!("&{n}_v")
                    }
                    _ => {
                        pre.push(format!("let {n}_v = {n}.as_ref().map(|l| l.expand({len:?}));"));
                        match (&d, optional) {
                            (Some(d), false) => format!("{n}_v.as_deref().unwrap_or({d})"),
                            (Some(d), true) if d != "None" => format!("{n}_v.as_deref().or({d})"),
                            _ => format!("{n}_v.as_deref()"),
                        }
                    }
                }
            } else {
                match (&d, optional) {
                    (None, false) => {
                        cond.push(format!("{n}.is_some()"));
                        format!("crate::front::required({n}, {opname:?}, {q:?})?")
                    }
                    (None, true) => n.clone(),
                    (Some(d), false) => format!("{n}.unwrap_or({d})"),
                    (Some(d), true) if d != "None" => format!("{n}.or({d})"),
                    (Some(_), true) => n.clone(),
                }
            }
        };
        args.push(expr);
    }
    Ok(Branch { cond, pre, call: format!("crate::handles::{}::call({})", names.module, args.join(", ")) })
}

/// Generates `builders.rs` and `front.rs` of `aten/src/generated/`.
pub fn generate_front(
    fns: &[NativeFunction],
    names: &[Names],
    groups: &[Group],
    ret_ty: impl Fn(usize) -> String,
) -> Result<Vec<GeneratedFile>, (usize, String)> {
    let mut b = String::new();
    let mut fr = String::new();
    b.push_str(HEADER);
    b.push_str(
        "//! One builder per front-end call that has options or several overloads (Note [Front-end calls]\n\
         //! in `aten/src/front.rs`): a setter per option, then `call()`.\n\n\
         #![allow(unused_imports, clippy::needless_lifetimes, clippy::too_many_arguments)]\n\n\
         use c10::{Device, Layout, MemoryFormat, Result, Scalar, ScalarType};\n\
         use crate::front::{IntList, Reduction, TensorList, TensorOrScalar};\n\
         use crate::{Generator, Tensor};\n\n",
    );
    fr.push_str(HEADER);
    fr.push_str(
        "//! The front-end calls (Note [Front-end calls] in `aten/src/front.rs`): a free function per\n\
         //! operator name (`front::sum(&x)`), `Tensor` methods (`x.sum()`) and, for factories, associated\n\
         //! functions (`Tensor::zeros(&[2, 2])`). Each takes the arguments without defaults and returns a\n\
         //! builder for the rest, or the result when there is nothing to choose.\n\n\
         #![allow(unused_imports, clippy::needless_lifetimes, clippy::too_many_arguments)]\n\n\
         use c10::{Device, Layout, MemoryFormat, Result, Scalar, ScalarType};\n\
         use crate::builders;\n\
         use crate::front::{IntList, Reduction, TensorList, TensorOrScalar};\n\
         use crate::{Generator, Tensor};\n\n",
    );
    let mut methods = String::new();
    let mut factories = String::new();
    let mut method_names: HashSet<String> = HashSet::new();
    for g in groups {
        if g.method && g.positional().any(|f| f.name == "self") {
            method_names.insert(g.name.clone());
        }
    }
    for g in groups {
        let first = g.overloads[0];
        let err = |m: String| (first, m);
        let ret = ret_ty(first);
        let opname = fns[first].func.name.clone();
        let docs: Vec<String> = g.overloads.iter().map(|&i| format!("/// - {}", schema_doc(&fns[i]))).collect();
        let docs = docs.join("\n");
        let spells: Vec<Spell> = g.fields.iter().map(field_spell).collect::<Result<_, _>>().map_err(err)?;
        let has_options = g.options().next().is_some();
        let needs_struct = has_options || g.overloads.len() > 1;
        let sname = camel(&g.name);

        // The body of `call` over the fields as locals.
        let mut body = String::new();
        let mut always = false;
        for (k, &i) in g.overloads.iter().enumerate() {
            let br = branch(g, k, &fns[i], &names[i], &opname).map_err(err)?;
            let pre = br.pre.join(" ");
            if br.cond.is_empty() {
                let _ = write!(body, "{pre} {}", br.call);
                always = true;
                break;
            }
            let _ = writeln!(body, "if {} {{ {pre} return {}; }}", br.cond.join(" && "), br.call);
        }
        if !always {
            let sigs: Vec<String> = g.overloads.iter().map(|&i| format!("{:?}", fns[i].schema_str)).collect();
            let _ = write!(body, "Err(crate::front::no_overload({opname:?}, &[{}]))", sigs.join(", "));
        }

        let lifetime_used = spells.iter().any(|s| s.store.contains("'a"));
        let pos: Vec<(&Field, &Spell)> = g.fields.iter().zip(&spells).filter(|(f, _)| f.positional).collect();
        let returns =
            if needs_struct && has_options { format!("builders::{sname}<'a>") } else { format!("Result<{ret}>") };
        // Builds the entry's body from the positional parameters.
        let entry_body = |self_expr: Option<&str>| -> String {
            let mut inits = Vec::new();
            for (f, s) in &pos {
                let n = ident(f);
                let v = match (f.name.as_str(), self_expr) {
                    ("self", Some(e)) => e.to_string(),
                    _ => s.conv.replace("{}", &n),
                };
                inits.push(if v == n { n.clone() } else { format!("{n}: {v}") });
            }
            if needs_struct {
                for f in g.options() {
                    inits.push(format!("{}: None", ident(f)));
                }
                if !lifetime_used {
                    inits.push("_lt: std::marker::PhantomData".into());
                }
                let lit = format!("builders::{sname} {{ {} }}", inits.join(", "));
                if has_options {
                    lit
                } else {
                    format!("{lit}.call()")
                }
            } else {
                let lets: Vec<String> = pos
                    .iter()
                    .zip(&inits)
                    .filter(|((f, _), init)| **init != ident(f))
                    .map(|((f, s), init)| {
                        let n = ident(f);
                        let v = init.split_once(": ").map_or(init.as_str(), |(_, v)| v);
                        format!("let {n}: {} = {v};", s.store)
                    })
                    .collect();
                format!("{} {body}", lets.join(" "))
            }
        };

        if needs_struct {
            let fields: Vec<String> = g
                .fields
                .iter()
                .zip(&spells)
                .map(|(f, s)| {
                    if f.positional {
                        format!("{}: {}", ident(f), s.store)
                    } else {
                        format!("{}: Option<{}>", ident(f), s.store)
                    }
                })
                .collect();
            let mut fields = fields;
            if !fields.iter().any(|f| f.contains("'a")) {
                fields.push("_lt: std::marker::PhantomData<&'a ()>".into());
            }
            let _ = write!(
                b,
                "/// The builder of [`{name}`](crate::front::{name}); overloads:\n{docs}\n\
                 #[must_use = \"a builder does nothing until `.call()`\"]\n\
                 pub struct {sname}<'a> {{ {} }}\n\nimpl<'a> {sname}<'a> {{\n",
                fields.iter().map(|f| format!("pub(crate) {f}")).collect::<Vec<_>>().join(", "),
                name = g.name
            );
            for (f, s) in g.fields.iter().zip(&spells) {
                if f.positional {
                    continue;
                }
                let n = ident(f);
                let dflt: Vec<String> = f
                    .per_overload
                    .iter()
                    .flatten()
                    .filter_map(|a| a.default.as_ref().map(ToString::to_string))
                    .collect::<HashSet<_>>()
                    .into_iter()
                    .collect();
                let dflt = match dflt.as_slice() {
                    [] => String::new(),
                    [d] => format!(" (default `{d}`)"),
                    _ => " (the default depends on the overload)".into(),
                };
                let method = if n == "call" { "call_".to_string() } else { n.clone() };
                let _ = write!(
                    b,
                    "    /// Sets `{}`{dflt}.\n    #[inline]\n    pub fn {method}(mut self, v: {}) -> Self {{ self.{n} = Some({}); self }}\n\n",
                    f.name,
                    s.param,
                    s.conv.replace("{}", "v")
                );
            }
            let locals: Vec<String> = g.fields.iter().map(ident).collect();
            let _ = write!(
                b,
                "    /// Runs the operator.\n    #[inline]\n    pub fn call(self) -> Result<{ret}> {{\n        let {sname} {{ {}, .. }} = self;\n        {body}\n    }}\n}}\n\n",
                locals.join(", ")
            );
        }

        // Free function.
        let params: Vec<String> = pos.iter().map(|(f, s)| format!("{}: {}", ident(f), s.param)).collect();
        if g.function {
            let _ = write!(
                fr,
                "/// `{opname}`; overloads:\n{docs}\n#[inline]\npub fn {}<'a>({}) -> {returns} {{ {} }}\n\n",
                g.name,
                params.join(", "),
                entry_body(None)
            );
        }
        // Method.
        if method_names.contains(&g.name) {
            let self_field = pos.iter().find(|(f, _)| f.name == "self").map(|(f, _)| *f);
            let self_expr = match self_field.map(|f| &f.ty) {
                Some(FieldTy::TensorOrScalar) => "TensorOrScalar::Tensor(self)",
                _ => "self",
            };
            let mparams: Vec<String> = pos
                .iter()
                .filter(|(f, _)| f.name != "self")
                .map(|(f, s)| format!("{}: {}", ident(f), s.param))
                .collect();
            let sep = if mparams.is_empty() { "" } else { ", " };
            let _ = write!(
                methods,
                "    /// `{opname}`; overloads:\n{}\n    #[inline]\n    pub fn {}<'a>(&'a self{sep}{}) -> {returns} {{ {} }}\n\n",
                docs.replace("/// ", "    /// "),
                g.name,
                mparams.join(", "),
                entry_body(Some(self_expr))
            );
        }
        // Associated factory function.
        if g.function
            && g.is_factory()
            && !method_names.contains(&g.name)
            && !TENSOR_RESERVED.contains(&g.name.as_str())
        {
            let args: Vec<String> = pos.iter().map(|(f, _)| ident(f)).collect();
            let _ = write!(
                factories,
                "    /// `torch.{opname}` as `Tensor::{}`; see [`crate::front::{}`].\n    #[inline]\n    pub fn {}<'a>({}) -> {returns} {{ {}({}) }}\n\n",
                g.name,
                g.name,
                g.name,
                params.join(", "),
                g.name,
                args.join(", ")
            );
        }
    }
    let _ = write!(fr, "impl Tensor {{\n{methods}{factories}}}\n");
    Ok(vec![
        GeneratedFile { name: "builders.rs".into(), contents: b },
        GeneratedFile { name: "front.rs".into(), contents: fr },
    ])
}
