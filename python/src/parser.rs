//! The argument parser: Python's `(args, kwargs)` against the schemas of a name's overloads
//! (PyTorch's `PythonArgParser`), giving the operator to call and its boxed stack.
//!
//! Note [One parser for every operator]: the table of bindings is generated
//! (`generated/bindings.rs`, Note [Python bindings are data]); the schemas come from the
//! dispatcher the first time a name is called. For each overload in the table's order the
//! parser binds positional arguments to the schema's non-keyword-only arguments in order
//! (`self` is the tensor a method is called on, and is named `input` for functions), keywords
//! by name, fills the rest from the schema's defaults ([`IValue::from_default`], the same
//! machinery the Rust front end's builders are generated from) or `None` for optionals, and
//! converts each value by PyTorch's rules for its type. The first overload that binds wins.
//! `out=` picks the overload's out= variant. When nothing binds, the `TypeError` lists the
//! candidate signatures as PyTorch's does; with one candidate, it says what was wrong.

use std::sync::{Arc, OnceLock};

use aten::{IValue, OperatorEntry, Stack, Tensor};
use c10::{Scalar, ScalarType};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use schema::{Argument, FunctionSchema, Type};
use smallvec::SmallVec;

use crate::tensor::PyTensor;
use crate::types;

/// Where a Python name lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespace {
    /// `torch.X` (and `Tensor.X` for methods).
    Torch,
    /// `torch.linalg.X`.
    Linalg,
    /// `torch.fft.X`.
    Fft,
    /// `torch.special.X`.
    Special,
}

/// One Python name and the operators behind it (the generated table's rows).
#[derive(Debug)]
pub struct Binding {
    /// The name in its namespace.
    pub name: &'static str,
    /// Its namespace.
    pub namespace: Namespace,
    /// A function of the namespace.
    pub function: bool,
    /// A method of `Tensor`.
    pub method: bool,
    /// `(overload, out= overload)`, in the order the parser tries them.
    pub overloads: &'static [(&'static str, Option<&'static str>)],
}

/// An overload resolved against the dispatcher, with what every call of it needs computed
/// once.
struct Sig {
    op: &'static OperatorEntry,
    schema: Arc<FunctionSchema>,
    /// Per argument, its default as a value (None: required, or an optional without default).
    defaults: Vec<Option<IValue>>,
    out: Option<(&'static OperatorEntry, Arc<FunctionSchema>)>,
    /// The argument named `self`.
    self_index: Option<usize>,
    /// The positional (non-keyword-only) arguments of a function call, and of a method call
    /// (`self` excluded).
    slots_function: SmallVec<[usize; 8]>,
    slots_method: SmallVec<[usize; 8]>,
    /// The schema has TensorOptions (`dtype` and `device`): the call takes `requires_grad=`.
    factory: bool,
}

impl Sig {
    /// How many arguments a call of this overload may take, as PyTorch's parser counts them:
    /// those without a default, and all of them (`self` not counted for a method call; `out=`
    /// and a factory's `requires_grad=` counted).
    fn arg_range(&self, method: bool) -> (usize, usize) {
        let params = self.schema.arguments.iter().filter(|a| !(is_output(a) || method && a.name == "self"));
        let (mut lo, mut hi) = (0, 0);
        for a in params {
            hi += 1;
            lo += usize::from(a.default.is_none());
        }
        (lo, hi + usize::from(self.out.is_some()) + usize::from(self.factory))
    }
}

/// The resolved overloads of a binding (made on first use).
pub struct Resolved {
    sigs: Vec<Sig>,
    /// Numbers are accepted for `Tensor` arguments (PyTorch's list: the arithmetic operators).
    numbers_as_tensors: bool,
    /// PyTorch also has deprecated signatures for this name (`add(Tensor input, Number alpha,
    /// Tensor other)`): not callable here, but they change which `TypeError` a bad call gets
    /// (Note [Argument errors]).
    hidden_overloads: bool,
}

static RESOLVED: OnceLock<Vec<OnceLock<Result<Resolved, String>>>> = OnceLock::new();

/// The overloads of binding `idx`, resolved once.
pub fn resolved(idx: usize) -> PyResult<&'static Resolved> {
    let all =
        RESOLVED.get_or_init(|| (0..crate::generated::bindings::BINDINGS.len()).map(|_| OnceLock::new()).collect());
    let r = all[idx].get_or_init(|| resolve(&crate::generated::bindings::BINDINGS[idx]));
    r.as_ref().map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.clone()))
}

fn resolve(b: &Binding) -> Result<Resolved, String> {
    let d = aten::dispatcher();
    let mut sigs = Vec::new();
    for (name, out) in b.overloads {
        let (op, schema) = d.find_schema(name).map_err(|e| e.to_string())?;
        let defaults = schema
            .arguments
            .iter()
            .map(|a| match &a.default {
                Some(dv) => IValue::from_default(dv, &a.ty).map(Some).map_err(|e| format!("{name}: {e}")),
                None => Ok(None),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let out = match out {
            Some(o) => Some(d.find_schema(o).map_err(|e| e.to_string())?),
            None => None,
        };
        let args = &schema.arguments;
        let self_index = args.iter().position(|a| a.name == "self");
        let slots_function = (0..args.len()).filter(|&i| !args[i].kwarg_only).collect();
        let slots_method = (0..args.len()).filter(|&i| !args[i].kwarg_only && Some(i) != self_index).collect();
        let factory = args.iter().any(|a| a.name == "dtype") && args.iter().any(|a| a.name == "device");
        sigs.push(Sig { op, schema, defaults, out, self_index, slots_function, slots_method, factory });
    }
    let base = b.name.trim_end_matches('_');
    let numbers_as_tensors = b.namespace == Namespace::Torch
        && matches!(
            base,
            "add" | "sub" | "mul" | "div" | "divide" | "multiply" | "subtract" | "true_divide" | "floor_divide"
        );
    let hidden_overloads = b.namespace == Namespace::Torch && DEPRECATED.iter().any(|d| d.name == base);
    Ok(Resolved { sigs, numbers_as_tensors, hidden_overloads })
}

// Note [Deprecated signatures]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch still accepts a few old argument orders (tools/autograd/deprecated.yaml):
// `torch.add(x, 2, y)` is `x + 2 * y`, `torch.addmm(beta, m, alpha, a, b)` puts the scalars
// first. They are tried only after every current signature failed, are left out of the
// `TypeError` lists (but counted when it is chosen, Note [Argument errors]), take positional
// arguments (and `out=` for `add`), and warn once per process, as PyTorch's `TORCH_WARN_ONCE`,
// that the overload is deprecated.

/// One deprecated signature: its parameters in their old order, named as the current
/// operator's arguments (which it calls; `alpha`/`beta` left out take their defaults).
struct Deprecated {
    name: &'static str,
    params: &'static [&'static str],
    op: &'static str,
    out: bool,
}

const DEPRECATED: [Deprecated; 15] = [
    Deprecated { name: "add", params: &["self", "alpha", "other"], op: "add.Tensor", out: true },
    Deprecated { name: "sub", params: &["self", "alpha", "other"], op: "sub.Tensor", out: false },
    Deprecated { name: "addcdiv", params: &["self", "value", "tensor1", "tensor2"], op: "addcdiv", out: false },
    Deprecated { name: "addcmul", params: &["self", "value", "tensor1", "tensor2"], op: "addcmul", out: false },
    Deprecated { name: "addbmm", params: &["beta", "self", "alpha", "batch1", "batch2"], op: "addbmm", out: false },
    Deprecated { name: "addbmm", params: &["beta", "self", "batch1", "batch2"], op: "addbmm", out: false },
    Deprecated { name: "addmm", params: &["beta", "self", "alpha", "mat1", "mat2"], op: "addmm", out: false },
    Deprecated { name: "addmm", params: &["beta", "self", "mat1", "mat2"], op: "addmm", out: false },
    Deprecated { name: "addmv", params: &["beta", "self", "alpha", "mat", "vec"], op: "addmv", out: false },
    Deprecated { name: "addmv", params: &["beta", "self", "mat", "vec"], op: "addmv", out: false },
    Deprecated { name: "addr", params: &["beta", "self", "alpha", "vec1", "vec2"], op: "addr", out: false },
    Deprecated { name: "addr", params: &["beta", "self", "vec1", "vec2"], op: "addr", out: false },
    Deprecated { name: "baddbmm", params: &["beta", "self", "alpha", "batch1", "batch2"], op: "baddbmm", out: false },
    Deprecated { name: "baddbmm", params: &["beta", "self", "batch1", "batch2"], op: "baddbmm", out: false },
    Deprecated { name: "sspaddmm", params: &["beta", "self", "alpha", "mat1", "mat2"], op: "sspaddmm", out: false },
];

/// PyTorch's warning for a deprecated signature, once per process.
fn warn_deprecated(py: Python<'_>, name: &str, d: &Deprecated, sig: &Sig, method: bool) -> PyResult<()> {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return Ok(());
    }
    let mut old: Vec<String> = d
        .params
        .iter()
        .filter(|p| !(method && **p == "self"))
        .map(|p| {
            let a = sig.schema.arguments.iter().find(|a| a.name == *p).expect("a parameter of the operator");
            format!("{} {}", type_name(&a.ty), py_name(a, method))
        })
        .collect();
    if d.out && !method {
        old.push("*, Tensor out = None".into());
    }
    let msg = format!(
        "This overload of {name} is deprecated:\n\t{name}({})\nConsider using one of the following signatures \
         instead:\n\t{name}({})",
        old.join(", "),
        signature(&sig.schema, method, sig.out.is_some())
    );
    let msg = std::ffi::CString::new(msg).expect("no NUL in a signature");
    PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyUserWarning>(), &msg, 1)
}

/// Why one overload did not bind.
enum Miss {
    TooMany { max: usize, given: usize },
    Missing(Vec<String>),
    UnexpectedKw(String),
    Twice(String),
    Type { name: String, pos: Option<usize>, want: String, got: String },
    NoOut,
}

/// A parsed call: the operator and its stack; `out` holds what a call with `out=` returns.
pub struct Call {
    /// The operator to run.
    pub op: &'static OperatorEntry,
    /// Its arguments.
    pub stack: Stack,
    /// For `out=` calls, the output argument as given (returned as the call's result).
    pub out: Option<Py<PyAny>>,
    /// `requires_grad=True` given to a factory (PyTorch's TensorOptions keyword): set on the
    /// result.
    pub requires_grad: bool,
}

/// The Python name of a schema argument (`self` is `input` for functions).
fn py_name(a: &Argument, method: bool) -> &str {
    if a.name == "self" && !method {
        "input"
    } else {
        &a.name
    }
}

/// Is this an output argument of an out= schema?
fn is_output(a: &Argument) -> bool {
    a.kwarg_only && a.alias.as_ref().is_some_and(|al| al.is_write)
}

impl Resolved {
    /// Parses a call of binding `name`. `self_` is the tensor a method was called on.
    pub fn parse(
        &self,
        name: &str,
        self_: Option<&Bound<'_, PyAny>>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Call> {
        let mut misses = Vec::new(); // allocated only when an overload does not bind
        for sig in &self.sigs {
            match self.bind(sig, self_, args, kwargs)? {
                Ok(call) => return Ok(call),
                Err(m) => misses.push(m),
            }
        }
        if self.hidden_overloads {
            for d in DEPRECATED.iter().filter(|d| d.name == name.trim_end_matches('_')) {
                if let Some(call) = self.bind_deprecated(d, name, self_, args, kwargs)? {
                    return Ok(call);
                }
            }
        }
        Err(self.type_error(name, self_.is_some(), args, kwargs, misses))
    }

    /// A call of one of PyTorch's deprecated signatures (Note [Deprecated signatures]), or
    /// None when it does not bind.
    fn bind_deprecated(
        &self,
        d: &Deprecated,
        name: &str,
        self_: Option<&Bound<'_, PyAny>>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Option<Call>> {
        let mut out = None;
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                if k.extract::<String>()? != "out" || !d.out {
                    return Ok(None);
                }
                out = (!v.is_none()).then_some(v);
            }
        }
        // The given values in the deprecated order, a method's `self` at its place there
        // (`x.addmm(beta, a, b)` is `addmm(beta, x, a, b)`).
        let mut given: Vec<Bound<'_, PyAny>> = args.iter().collect();
        if let Some(s) = self_ {
            let at = d.params.iter().position(|p| *p == "self").unwrap_or(0).min(given.len());
            given.insert(at, s.clone());
        }
        if given.len() != d.params.len() {
            return Ok(None);
        }
        // The in-place method (`x.add_(2, y)`) calls the in-place operator.
        let target = match (name.ends_with('_'), d.op.split_once('.')) {
            (false, _) => d.op.to_string(),
            (true, Some((base, overload))) => format!("{base}_.{overload}"),
            (true, None) => format!("{}_", d.op),
        };
        let Some(sig) = self.sigs.iter().find(|s| s.op.name() == target) else {
            return Ok(None);
        };
        let mut stack: Stack = Vec::with_capacity(sig.schema.arguments.len() + 1);
        for (i, a) in sig.schema.arguments.iter().enumerate() {
            let value = match d.params.iter().position(|p| *p == a.name) {
                Some(k) => {
                    let v = &given[k];
                    let is_tensor = v.is_instance_of::<PyTensor>();
                    // The deprecated form's scalars are Python numbers and its tensors tensors.
                    if is_tensor != matches!(a.ty, Type::Tensor) {
                        return Ok(None);
                    }
                    match convert(v, &a.ty, false)? {
                        Some(iv) => iv,
                        None => return Ok(None),
                    }
                }
                None => match &sig.defaults[i] {
                    Some(dv) => dv.clone(),
                    None => return Ok(None),
                },
            };
            stack.push(value);
        }
        let (op, out) = match (out, &sig.out) {
            (None, _) => (sig.op, None),
            (Some(o), Some((op, _))) => match o.cast::<PyTensor>() {
                Ok(t) => {
                    stack.push(IValue::Tensor(t.get().tensor.clone()));
                    (*op, Some(o.unbind()))
                }
                Err(_) => return Ok(None),
            },
            (Some(_), None) => return Ok(None),
        };
        warn_deprecated(self_.map(|s| s.py()).unwrap_or_else(|| args.py()), name, d, sig, self_.is_some())?;
        Ok(Some(Call { op, stack, out, requires_grad: false }))
    }

    fn bind(
        &self,
        sig: &Sig,
        self_: Option<&Bound<'_, PyAny>>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Result<Call, Miss>> {
        let method = self_.is_some();
        let params = &sig.schema.arguments;
        let n = params.len();
        let mut given: SmallVec<[Option<Bound<'_, PyAny>>; 8]> = smallvec::smallvec![None; n];
        // Positional slots: non-keyword-only arguments, `self` excluded for methods.
        let slots: &[usize] = if method { &sig.slots_method } else { &sig.slots_function };
        if method {
            match sig.self_index {
                Some(i) => given[i] = self_.cloned(),
                None => return Ok(Err(Miss::Missing(vec!["self".into()]))),
            }
        }
        let nargs = args.len();
        // `view(2, 3)`: a sole positional int list takes the positional integers as varargs.
        // Only when the list is the one positional argument (`view`, `permute`, `zeros`, `expand`):
        // `x.roll(1, 1)` is two lists of one.
        let varargs = slots.len() == 1
            && matches!(&params[slots[0]].ty, Type::List(e, _) if matches!(**e, Type::Int | Type::SymInt))
            && nargs > 1
            && args.iter().all(|a| a.is_instance_of::<PyInt>() && !a.is_instance_of::<PyBool>());
        if varargs {
            given[slots[0]] = Some(args.as_any().clone());
        } else {
            if nargs > slots.len() {
                return Ok(Err(Miss::TooMany { max: slots.len(), given: nargs }));
            }
            for (k, a) in args.iter().enumerate() {
                given[slots[k]] = Some(a);
            }
        }
        let mut out_arg: Option<Bound<'_, PyAny>> = None;
        let mut requires_grad = false;
        // Factories (the schema has TensorOptions: dtype and device) take `requires_grad=`.
        let factory = sig.factory;
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                let key: String = k.extract()?;
                if key == "requires_grad" && factory {
                    if !v.is_instance_of::<PyBool>() {
                        return Ok(Err(Miss::Type {
                            name: key,
                            pos: None,
                            want: "bool".into(),
                            got: py_type_name(&v),
                        }));
                    }
                    requires_grad = v.extract()?;
                    continue;
                }
                if key == "out" {
                    if sig.out.is_none() {
                        return Ok(Err(Miss::NoOut));
                    }
                    if !v.is_none() {
                        out_arg = Some(v);
                    }
                    continue;
                }
                let Some(i) = params.iter().position(|a| py_name(a, method) == key && !(method && a.name == "self"))
                else {
                    return Ok(Err(Miss::UnexpectedKw(key)));
                };
                if given[i].is_some() {
                    return Ok(Err(Miss::Twice(key)));
                }
                given[i] = Some(v);
            }
        }
        let mut stack: Stack = Vec::with_capacity(n + 2);
        let mut missing = Vec::new();
        for (i, a) in params.iter().enumerate() {
            match &given[i] {
                Some(v) => match convert(v, &a.ty, self.numbers_as_tensors && i > 0)? {
                    Some(iv) => stack.push(iv),
                    None => {
                        let pos = slots.iter().position(|&s| s == i).filter(|&p| p < nargs).map(|p| p + 1);
                        return Ok(Err(Miss::Type {
                            name: py_name(a, method).to_string(),
                            pos,
                            want: type_name(&a.ty),
                            got: py_type_name(v),
                        }));
                    }
                },
                None => match &sig.defaults[i] {
                    Some(d) => stack.push(d.clone()),
                    None if matches!(a.ty, Type::Optional(_)) => stack.push(IValue::None),
                    None => missing.push(py_name(a, method).to_string()),
                },
            }
        }
        if !missing.is_empty() {
            return Ok(Err(Miss::Missing(missing)));
        }
        let Some(out) = out_arg else {
            return Ok(Ok(Call { op: sig.op, stack, out: None, requires_grad }));
        };
        let (op, schema) = sig.out.as_ref().expect("checked above");
        let outs: Vec<&Argument> = schema.arguments.iter().filter(|a| is_output(a)).collect();
        let tensors: Vec<Tensor> = if outs.len() == 1 {
            match out.cast::<PyTensor>() {
                Ok(t) => vec![t.get().tensor.clone()],
                Err(_) => {
                    return Ok(Err(Miss::Type {
                        name: "out".into(),
                        pos: None,
                        want: "Tensor".into(),
                        got: py_type_name(&out),
                    }))
                }
            }
        } else {
            let items: Vec<Bound<'_, PyAny>> = match out.cast::<PyTuple>() {
                Ok(t) => t.iter().collect(),
                Err(_) => match out.cast::<PyList>() {
                    Ok(l) => l.iter().collect(),
                    Err(_) => Vec::new(),
                },
            };
            let ts: Vec<Tensor> =
                items.iter().filter_map(|o| o.cast::<PyTensor>().ok().map(|t| t.get().tensor.clone())).collect();
            if ts.len() != outs.len() || items.len() != outs.len() {
                return Ok(Err(Miss::Type {
                    name: "out".into(),
                    pos: None,
                    want: format!("tuple of {} Tensors", outs.len()),
                    got: py_type_name(&out),
                }));
            }
            ts
        };
        // The out= schema's arguments are the functional ones, then the outputs.
        stack.extend(tensors.into_iter().map(IValue::Tensor));
        Ok(Ok(Call { op, stack, out: Some(out.unbind()), requires_grad }))
    }

    /// PyTorch's `TypeError` when no overload binds (Note [Argument errors]).
    fn type_error(
        &self,
        name: &str,
        method: bool,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
        misses: Vec<Miss>,
    ) -> PyErr {
        let kw: Vec<(String, Bound<'_, PyAny>)> = kwargs
            .map(|k| k.iter().map(|(k, v)| (k.str().map(|s| s.to_string()).unwrap_or_default(), v)).collect())
            .unwrap_or_default();
        let num_args = args.len() + kw.len();
        let plausible: Vec<usize> = (0..self.sigs.len())
            .filter(|&i| {
                let (lo, hi) = self.sigs[i].arg_range(method);
                (lo..=hi).contains(&num_args)
            })
            .collect();
        // PyTorch's deprecated signatures are hidden from the lists but still count here.
        let only = match (self.sigs.len(), plausible.as_slice()) {
            (1, _) if !self.hidden_overloads => Some(0),
            (_, [i]) => Some(*i),
            _ => None,
        };
        if let Some(i) = only {
            let m = misses.into_iter().nth(i).expect("one miss per overload");
            return PyTypeError::new_err(single_error(name, &m));
        }
        let args: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let mut msg = format!("{name}() received an invalid combination of arguments - ");
        // PyTorch's own trailing ", " after keywords when no positional argument was given.
        let mut desc: String = args.iter().map(|a| format!("{}, ", py_type_name(a))).collect();
        desc.extend(kw.iter().map(|(k, v)| format!("{k}={}, ", py_type_name(v))));
        if !args.is_empty() {
            desc.truncate(desc.len() - 2);
        }
        let options: Vec<String> =
            self.sigs.iter().map(|s| format!("({})", signature(&s.schema, method, s.out.is_some()))).collect();
        if let [text] = options.as_slice() {
            let option = parse_option(text);
            let unmatched = unmatched_keywords(&option, &kw);
            if !unmatched.is_empty() {
                msg.push_str(&format!("got unrecognized keyword arguments: {}", unmatched.join(", ")));
            } else if option.len() == num_args {
                msg.push_str(&format!("got {}, but expected {text}", marked_types(&option, &args, &kw)));
            } else {
                msg.push_str(&format!("got ({desc}), but expected {text}"));
            }
            return PyTypeError::new_err(msg);
        }
        msg.push_str(&format!("got ({desc}), but expected one of:\n"));
        for text in &options {
            let option = parse_option(text);
            msg.push_str(&format!(" * {text}\n"));
            if option.len() != num_args {
                continue;
            }
            let unmatched = unmatched_keywords(&option, &kw);
            if unmatched.is_empty() {
                msg.push_str(&format!(
                    "      didn't match because some of the arguments have invalid types: {}\n",
                    marked_types(&option, &args, &kw)
                ));
            } else {
                msg.push_str(&format!(
                    "      didn't match because some of the keywords were incorrect: {}\n",
                    unmatched.join(", ")
                ));
            }
        }
        PyTypeError::new_err(msg)
    }
}

// Note [Argument errors]
// ~~~~~~~~~~~~~~~~~~~~~~
// When no overload binds, PyTorch's parser (`PythonArgParser::print_error`) counts the
// overloads whose argument count fits the call (between their required and total arguments).
// With one overload in all, or one that fits, the error is that overload's own ("argument
// 'other' (position 2) must be Tensor, not str"). Otherwise it lists every signature
// (`format_invalid_args`), and under each one whose printed parameters number exactly the given
// arguments it says why it did not match: the keywords it does not take, or the arguments with
// the wrong type between `!`s. That check reads the printed signature as PyTorch's does,
// splitting at ", " and taking the text before a parameter's last space as its type, so `*`
// counts as a parameter and a defaulted one (`Number alpha = 1`) never matches a value; the
// messages below reproduce that, quirks included, because users and tests match on them.

/// A printed signature's parameters as PyTorch's error formatter reads them: (type, name).
fn parse_option(text: &str) -> Vec<(String, String)> {
    let inner = &text[1..text.len() - 1];
    if inner.is_empty() {
        return Vec::new();
    }
    inner
        .split(", ")
        .map(|p| match p.rfind(' ') {
            Some(k) => (p[..k].to_string(), p[k + 1..].to_string()),
            None => (p.to_string(), p.to_string()),
        })
        .collect()
}

/// Whether a value's Python type is the one a printed parameter names (`float` also takes
/// `int`).
fn option_type_matches(ty: &str, v: &Bound<'_, PyAny>) -> bool {
    let got = py_type_name(v);
    match ty {
        "float" => got == "float" || got == "int",
        _ => got == ty,
    }
}

/// The keywords a printed signature's last parameters do not name (PyTorch looks for them
/// among as many trailing parameters as there are keywords).
fn unmatched_keywords<'a>(option: &[(String, String)], kw: &'a [(String, Bound<'_, PyAny>)]) -> Vec<&'a str> {
    let start = option.len().saturating_sub(kw.len());
    kw.iter().filter(|(k, _)| !option[start..].iter().any(|(_, n)| n == k)).map(|(k, _)| k.as_str()).collect()
}

/// The given arguments' types against a printed signature's, the wrong ones between `!`s:
/// `(Tensor, !str!)`.
fn marked_types(option: &[(String, String)], args: &[Bound<'_, PyAny>], kw: &[(String, Bound<'_, PyAny>)]) -> String {
    let mut parts = Vec::with_capacity(option.len());
    for (i, (ty, pname)) in option.iter().enumerate() {
        let (label, v) = if i < args.len() {
            (String::new(), Some(&args[i]))
        } else {
            (format!("{pname}="), kw.iter().find(|(k, _)| k == pname).map(|(_, v)| v))
        };
        let Some(v) = v else {
            parts.push(format!("!{label}?!"));
            continue;
        };
        let shown = format!("{label}{}", described(v));
        parts.push(if option_type_matches(ty, v) { shown } else { format!("!{shown}!") });
    }
    format!("({})", parts.join(", "))
}

/// A value as the error formatter shows it: its type, or a list's or tuple's element types.
fn described(v: &Bound<'_, PyAny>) -> String {
    if let Ok(t) = v.cast::<PyTuple>() {
        let items: Vec<String> = t.iter().map(|e| py_type_name(&e)).collect();
        let comma = if items.len() == 1 { "," } else { "" };
        return format!("tuple of ({}{comma})", items.join(", "));
    }
    if let Ok(l) = v.cast::<PyList>() {
        let items: Vec<String> = l.iter().map(|e| py_type_name(&e)).collect();
        return format!("list of [{}]", items.join(", "));
    }
    py_type_name(v)
}

fn single_error(name: &str, m: &Miss) -> String {
    match m {
        Miss::TooMany { max, given } => format!(
            "{name}() takes {max} positional argument{} but {given} {} given",
            if *max == 1 { "" } else { "s" },
            if *given == 1 { "was" } else { "were" }
        ),
        Miss::Missing(names) => format!(
            "{name}() missing {} required positional argument{}: {}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
        ),
        Miss::UnexpectedKw(k) => format!("{name}() got an unexpected keyword argument '{k}'"),
        Miss::Twice(k) => format!("{name}() got multiple values for argument '{k}'"),
        Miss::Type { name: arg, pos, want, got } => match pos {
            Some(p) => format!("{name}(): argument '{arg}' (position {p}) must be {want}, not {got}"),
            None => format!("{name}(): argument '{arg}' must be {want}, not {got}"),
        },
        Miss::NoOut => format!("{name}() got an unexpected keyword argument 'out'"),
    }
}

/// A schema as PyTorch prints a Python signature: `Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None`.
fn signature(s: &FunctionSchema, method: bool, has_out: bool) -> String {
    let mut parts = Vec::new();
    let mut star = false;
    for a in &s.arguments {
        if method && a.name == "self" {
            continue;
        }
        if a.kwarg_only && !star {
            parts.push("*".to_string());
            star = true;
        }
        let mut p = format!("{} {}", type_name(&a.ty), py_name(a, method));
        if let Some(d) = &a.default {
            p.push_str(&format!(" = {}", default_text(d)));
        }
        parts.push(p);
    }
    if has_out {
        if !star {
            parts.push("*".to_string());
        }
        parts.push("Tensor out = None".to_string());
    }
    parts.join(", ")
}

fn default_text(d: &schema::DefaultValue) -> String {
    use schema::DefaultValue as D;
    match d {
        D::None => "None".into(),
        D::Bool(b) => if *b { "True" } else { "False" }.into(),
        D::Int(i) => i.to_string(),
        D::Float(x) => format!("{x}"),
        D::Str(s) => format!("'{s}'"),
        D::IntList(v) => format!("{v:?}"),
        D::FloatList(v) => format!("{v:?}"),
        D::BoolList(v) => format!("{v:?}"),
        D::Ident(i) => i.clone(),
    }
}

/// PyTorch's names of schema types in signatures and errors.
pub fn type_name(t: &Type) -> String {
    match t {
        Type::Tensor => "Tensor".into(),
        Type::Int | Type::SymInt => "int".into(),
        Type::Float => "float".into(),
        Type::Bool => "bool".into(),
        Type::Str => "str".into(),
        Type::Scalar => "Number".into(),
        Type::ScalarType => "torch.dtype".into(),
        Type::Layout => "torch.layout".into(),
        Type::Device => "torch.device".into(),
        Type::MemoryFormat => "torch.memory_format".into(),
        Type::Generator => "torch.Generator".into(),
        Type::Dimname => "name".into(),
        Type::Storage => "Storage".into(),
        Type::Stream => "Stream".into(),
        Type::Optional(inner) => type_name(inner),
        Type::List(e, _) => match &**e {
            Type::Int | Type::SymInt => "tuple of ints".into(),
            Type::Float => "tuple of floats".into(),
            Type::Bool => "tuple of bools".into(),
            Type::Tensor | Type::Optional(_) => "tuple of Tensors".into(),
            other => format!("tuple of {}", type_name(other)),
        },
    }
}

/// The Python type name of a value, as PyTorch's errors print it.
pub fn py_type_name(v: &Bound<'_, PyAny>) -> String {
    if v.is_instance_of::<PyTensor>() {
        return "Tensor".into();
    }
    v.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".into())
}

fn as_int(v: &Bound<'_, PyAny>) -> Option<i64> {
    if v.is_instance_of::<PyBool>() {
        return None;
    }
    if v.is_instance_of::<PyInt>() {
        return v.extract::<i64>().ok();
    }
    // A 0-dim integral tensor that does not require grad, as PyTorch accepts.
    let t = v.cast::<PyTensor>().ok()?;
    let t = &t.get().tensor;
    if t.dim() == 0 && !t.dtype().is_floating_point() && !t.dtype().is_complex() && t.dtype() != ScalarType::Bool {
        return t.item::<i64>().ok();
    }
    // numpy integers and other objects with __index__.
    if v.hasattr("__index__").unwrap_or(false) && !v.is_instance_of::<PyFloat>() {
        return v.call_method0("__index__").ok()?.extract::<i64>().ok();
    }
    None
}

fn as_float(v: &Bound<'_, PyAny>) -> Option<f64> {
    if v.is_instance_of::<PyFloat>() || v.is_instance_of::<PyInt>() {
        return v.extract::<f64>().ok();
    }
    let t = v.cast::<PyTensor>().ok()?;
    let t = &t.get().tensor;
    (t.dim() == 0 && !t.dtype().is_complex()).then(|| t.item::<f64>().ok()).flatten()
}

fn as_scalar(v: &Bound<'_, PyAny>) -> Option<Scalar> {
    if v.is_instance_of::<PyBool>() {
        return v.extract::<bool>().ok().map(Scalar::Bool);
    }
    if v.is_instance_of::<PyInt>() {
        return v.extract::<i64>().ok().map(Scalar::Int);
    }
    if v.is_instance_of::<PyFloat>() {
        return v.extract::<f64>().ok().map(Scalar::Float);
    }
    if let Ok(t) = v.cast::<PyTensor>() {
        let t = &t.get().tensor;
        // "must be Number, not Tensor" for tensors that require grad or have elements.
        if t.dim() != 0 || autograd::meta::requires_grad(t) {
            return None;
        }
        return t.item_scalar().ok();
    }
    // numpy scalars.
    if v.hasattr("item").unwrap_or(false) && v.hasattr("dtype").unwrap_or(false) {
        let item = v.call_method0("item").ok()?;
        if !item.is(v) {
            return as_scalar(&item);
        }
    }
    None
}

fn seq_items<'py>(v: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(t) = v.cast::<PyTuple>() {
        return Some(t.iter().collect());
    }
    if let Ok(l) = v.cast::<PyList>() {
        return Some(l.iter().collect());
    }
    None
}

/// A Python value as the boxed value of a schema type, or `None` when it is not one.
/// `numbers_as_tensors`: a Python number is a `Tensor` (the arithmetic operators).
pub fn convert(v: &Bound<'_, PyAny>, ty: &Type, numbers_as_tensors: bool) -> PyResult<Option<IValue>> {
    Ok(match ty {
        Type::Optional(inner) => {
            if v.is_none() {
                Some(IValue::None)
            } else {
                convert(v, inner, numbers_as_tensors)?
            }
        }
        Type::Tensor => match v.cast::<PyTensor>() {
            Ok(t) => Some(IValue::Tensor(t.get().tensor.clone())),
            Err(_) if numbers_as_tensors => as_scalar(v).map(|s| IValue::Tensor(Tensor::wrapped_scalar(s))),
            Err(_) => None,
        },
        Type::Scalar => as_scalar(v).map(IValue::Scalar),
        Type::Int | Type::SymInt => as_int(v).map(IValue::Int),
        Type::Float => {
            if v.is_instance_of::<PyBool>() {
                v.extract::<bool>().ok().map(|b| IValue::Double(b as i64 as f64))
            } else {
                as_float(v).map(IValue::Double)
            }
        }
        Type::Bool => {
            if v.is_instance_of::<PyBool>() {
                Some(IValue::Bool(v.extract::<bool>()?))
            } else {
                None
            }
        }
        Type::Str => v.cast::<PyString>().ok().map(|s| IValue::Str(s.to_string())),
        Type::ScalarType => types::dtype_of(v).map(IValue::ScalarType),
        Type::Device => types::device_of(v).map(IValue::Device),
        Type::Layout => types::layout_of(v).map(IValue::Layout),
        Type::MemoryFormat => types::memory_format_of(v).map(IValue::MemoryFormat),
        Type::Generator => types::generator_of(v).map(IValue::Generator),
        Type::List(e, n) => match &**e {
            Type::Int | Type::SymInt => {
                if let Some(i) = as_int(v) {
                    // `int[2] kernel_size=2` and `x.sum(1)` (`int[1] dim`): one integer for
                    // the whole list, repeated; `zeros(3)`: a size of one.
                    Some(IValue::IntList(vec![i; n.unwrap_or(1)]))
                } else {
                    let items = seq_items(v);
                    match items {
                        Some(items) => {
                            let vals: Option<Vec<i64>> = items.iter().map(as_int).collect();
                            vals.map(IValue::IntList)
                        }
                        None => None,
                    }
                }
            }
            Type::Float => match as_float(v) {
                Some(x) if !v.is_instance_of::<PyTensor>() => Some(IValue::DoubleList(vec![x; n.unwrap_or(1)])),
                _ => seq_items(v)
                    .and_then(|items| items.iter().map(as_float).collect::<Option<Vec<f64>>>())
                    .map(IValue::DoubleList),
            },
            Type::Bool => seq_items(v)
                .and_then(|items| {
                    items
                        .iter()
                        .map(|i| if i.is_instance_of::<PyBool>() { i.extract::<bool>().ok() } else { None })
                        .collect::<Option<Vec<bool>>>()
                })
                .map(IValue::BoolList),
            Type::Tensor => seq_items(v)
                .and_then(|items| {
                    items
                        .iter()
                        .map(|i| i.cast::<PyTensor>().ok().map(|t| t.get().tensor.clone()))
                        .collect::<Option<Vec<Tensor>>>()
                })
                .map(IValue::TensorList),
            Type::Optional(inner) if **inner == Type::Tensor => seq_items(v)
                .and_then(|items| {
                    items
                        .iter()
                        .map(|i| {
                            if i.is_none() {
                                Some(None)
                            } else {
                                i.cast::<PyTensor>().ok().map(|t| Some(t.get().tensor.clone()))
                            }
                        })
                        .collect::<Option<Vec<Option<Tensor>>>>()
                })
                .map(IValue::OptionalTensorList),
            _ => None,
        },
        Type::Dimname | Type::Storage | Type::Stream => None,
    })
}

/// A boxed result as a Python value.
pub fn to_python(py: Python<'_>, v: IValue) -> PyResult<Py<PyAny>> {
    Ok(match v {
        IValue::None => py.None(),
        IValue::Tensor(t) => crate::tensor::wrap(py, t)?,
        // PyTorch returns a `Tensor[]` result as a tuple (`torch.split`, `torch.chunk`).
        IValue::TensorList(ts) => {
            let items = ts.into_iter().map(|t| crate::tensor::wrap(py, t)).collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any().unbind()
        }
        IValue::OptionalTensorList(ts) => {
            let items = ts
                .into_iter()
                .map(|t| match t {
                    Some(t) => crate::tensor::wrap(py, t),
                    None => Ok(py.None()),
                })
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        IValue::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        IValue::Double(x) => x.into_pyobject(py)?.into_any().unbind(),
        IValue::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        IValue::IntList(v) => PyList::new(py, v)?.into_any().unbind(),
        IValue::DoubleList(v) => PyList::new(py, v)?.into_any().unbind(),
        IValue::BoolList(v) => PyList::new(py, v)?.into_any().unbind(),
        IValue::Str(s) => PyString::new(py, &s).into_any().unbind(),
        IValue::Scalar(s) => match s {
            Scalar::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
            Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
            Scalar::Float(x) => x.into_pyobject(py)?.into_any().unbind(),
        },
        IValue::ScalarType(st) => types::dtype_object(py, st),
        IValue::Layout(l) => types::layout_object(py, l),
        IValue::Device(d) => types::device_object(py, d)?,
        IValue::MemoryFormat(m) => types::memory_format_object(py, m),
        IValue::Generator(g) => types::generator_object(py, g)?,
        IValue::Tuple(items) => {
            let items = items.into_iter().map(|i| to_python(py, i)).collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any().unbind()
        }
        IValue::Dict(entries) => {
            let d = PyDict::new(py);
            for (k, v) in entries {
                d.set_item(to_python(py, k)?, to_python(py, v)?)?;
            }
            d.into_any().unbind()
        }
    })
}
