//! The interpreter: a graph compiled once into [`Code`] (one step per node, each `aten::` node
//! bound to its operator entry and overload), then run over registers of [`IValue`]s. Operators
//! are called through the boxed dispatcher, so every operator works with no code here, and
//! autograd records every call: gradients flow through interpreted graphs.
//!
//! Note [Overload resolution]: an `aten::name` node does not name its overload (neither does
//! PyTorch's IR). The overload is the one whose schema takes exactly the node's inputs: the same
//! count, each input's IR type accepted by the argument's type (a `Tensor` for `Tensor`, an
//! `int` for `int`/`ScalarType`/`Layout`/`MemoryFormat`, any number for `Scalar`, `None` for
//! an optional, ...). Exact matches win over ones that need a conversion (`int` → `float`); among
//! equals the first overload in name order does. Traced graphs record every argument with its
//! schema type, so their nodes resolve to the overload that was traced.
//!
//! Note [Register moves]: a value's last use in the block that defines it moves it out of its
//! register instead of cloning, so a tensor is freed as soon as nothing needs it and an in-place
//! op sees a use count of one where eager code would.
//!
//! Note [Constants are compiled]: `prim::Constant` nodes are not steps. Their values go into the
//! code's constant pool, read (cloned) where they are used, and a constant argument of an
//! operator is coerced to its schema type once, when the code is built (an `int` alpha becomes
//! a `Scalar`). An argument whose IR type reaches its schema type unchanged (a tensor for
//! `Tensor`, an `int` for `int`, ...) skips `coerce` at run time. With the boxed call itself,
//! what remains per operator is moving the arguments onto the stack and the results into
//! registers (`W7.chain100_jit` in BENCHMARKS.md measures it).
//!
//! Note [Unboxed calls]: a boxed call clones its arguments onto a stack, and the kernel's boxing
//! adapter moves them off it into a new vector; on `W7.chain100_jit` (one-element tensors) that
//! was three quarters of the interpreter's time over eager code (16.0 µs against eager's 10.7;
//! 12.0 µs without it). Operators whose schema has one of a few common shapes
//! (`Convention`: a tensor, two or three tensors, a tensor and one or two Scalars, two tensors
//! and a Scalar, a tensor and an int, a tensor and an optional dtype; one tensor returned),
//! which covers most of aten, are called as the generated typed entry points call them: keys
//! from the tensor arguments, the kernel's typed function pointer from the dispatch table, the
//! arguments borrowed from the registers. A kernel without a typed form of that shape (a boxed
//! fallback, e.g. while tracing) or an argument of another type takes the boxed path.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

use aten::{dispatcher, IValue, OperatorEntry, Tensor};
use c10::{Device, DispatchKeySet, Error, Layout, MemoryFormat, Result, Scalar, ScalarType};
use schema::{FunctionSchema, Type};

use crate::fusion::FusionGroup;
use crate::ir::{Attr, BlockId, Constant, Graph, NodeId, ValueDef, ValueId};
use crate::types::{dtype_from_code, JitType};

fn run_error(msg: impl Into<String>) -> Error {
    Error::invalid("jit::interpreter", msg)
}

/// A graph compiled for execution.
pub struct Code {
    body: Plan,
    inputs: Vec<usize>,
    n_outputs: usize,
    registers: usize,
    /// The graph's constants and the constant arguments of operators, coerced to their schema
    /// types (Note [Constants are compiled]).
    constants: Vec<IValue>,
}

struct Plan {
    params: Vec<usize>,
    steps: Vec<Step>,
    returns: Vec<Arg>,
}

/// Where an input comes from.
#[derive(Clone, Copy)]
enum Arg {
    /// A register, moved out on its last use (Note [Register moves]).
    Reg { reg: usize, take: bool },
    /// An entry of the constant pool.
    Const(usize),
}

/// An operator's argument: where it comes from and whether it goes through [`coerce`] (Note
/// [Constants are compiled]).
#[derive(Clone, Copy)]
struct OpArg {
    src: Arg,
    coerce: bool,
}

enum Step {
    Op {
        op: &'static OperatorEntry,
        schema: Arc<FunctionSchema>,
        args: Vec<OpArg>,
        outs: Vec<usize>,
        unboxed: Option<Convention>,
    },
    Builtin {
        f: Builtin,
        /// The node's kind (`prim::ListConstruct`), for profiling ranges.
        kind: String,
        args: Vec<Arg>,
        outs: Vec<usize>,
        list: Option<JitType>,
    },
    If {
        cond: Arg,
        then: Plan,
        otherwise: Plan,
        outs: Vec<usize>,
    },
    Loop {
        max_trip: Arg,
        cond: Arg,
        carried: Vec<Arg>,
        body: Plan,
        outs: Vec<usize>,
    },
    Fused {
        group: Box<FusionGroup>,
        args: Vec<Arg>,
        outs: Vec<usize>,
    },
}

#[derive(Clone, Copy, Debug)]
enum Builtin {
    ListConstruct,
    ListUnpack,
    TupleConstruct,
    TupleUnpack,
    TupleIndex,
    GetItem,
    Len,
    NumToTensor,
    Int,
    Float,
    Bool,
    ScalarImplicit,
    Size,
    Dim,
    Numel,
    Arith(ArithOp),
    Not,
    Print,
    RaiseException,
    /// `prim::unchecked_cast`: the value itself, under a narrower type.
    Identity,
    /// `prim::Uninitialized`: what a branch that raised leaves in an `If`'s outputs.
    Uninitialized,
    /// `aten::__is__` / `aten::__isnot__` (`true`: `is not`).
    Is(bool),
    /// `aten::eq` / `aten::ne` of two strings or lists, by value (`true`: `!=`).
    ValueEq(bool),
    /// `aten::append`: the list with one more element (Note [Functional lists]).
    Append,
    /// `aten::format`: `"{}"` fields replaced by the arguments.
    Format,
    /// `aten::__range_length(lo, hi, step)`: how many values `range` gives.
    RangeLength,
    /// `aten::__derive_index(k, lo, step)`: the k-th value of a range.
    DeriveIndex,
    /// `prim::min` / `prim::max` of two numbers (`true`: max).
    MinMax(bool),
    /// `aten::__contains__(list, x)`: Python's `x in list`.
    Contains,
    /// `prim::dtype(t)`: the dtype's code.
    DtypeOf,
    /// `prim::device(t)`.
    DeviceOf,
    /// `aten::slice(list, start, end, step)`: Python's `list[start:end:step]`.
    ListSlice,
    /// `aten::warn(message, stacklevel)`: Python's `warnings.warn`, shown once per message.
    Warn,
    /// `aten::is_floating_point(t)` / `aten::is_complex(t)` (`true`: complex).
    DtypeIs(bool),
    /// `aten::add` of two strings.
    Concat,
    /// `aten::floor` / `aten::ceil` of a number, an int (`true`: ceil).
    Round(bool),
    /// `prim::is_nested(t)`: false, as we have no nested tensors.
    IsNested,
    /// `aten::sqrt`, `exp`, `log` of a number: a float.
    Math(fn(f64) -> f64),
    /// `prim::type(device)`: the device type's name (`"cpu"`).
    DeviceTypeName,
    /// `aten::all` / `aten::any` of a list of bools (`true`: any).
    AllAny(bool),
    /// `aten::is_grad_enabled()`.
    GradEnabled,
    /// `prim::requires_grad(t)`.
    RequiresGrad,
    /// `prim::is_cuda(t)`.
    IsCuda,
    /// `aten::is_autocast_enabled()` (CUDA's, as PyTorch's no-argument form) and
    /// `aten::is_autocast_cpu_enabled()` (`true`: the CPU's).
    AutocastEnabled(bool),
    /// `prim::DictConstruct(k1, v1, k2, v2, ...)` (Note [Dicts]).
    DictConstruct,
    /// `aten::keys` / `aten::values` / `aten::items` of a dict: a list.
    DictList(DictPart),
    /// `aten::get(d, k[, default])`: the value, else the default or `None`.
    DictGet,
    /// `aten::_set_item(d, k, v)` / `aten::_set_item(xs, i, x)`: the dict or list after it.
    SetItem,
    /// `aten::Delete(d, k)` / `aten::Delete(xs, i)`: the dict or list without the entry.
    Delete,
    /// `aten::pop(d, k[, default])`: the value and the dict without it.
    DictPop,
    /// `aten::setdefault(d, k, v)`: the value (`v` when absent) and the dict holding it.
    DictSetDefault,
    /// `aten::update(d, e)`: `d` with `e`'s entries.
    DictUpdate,
    /// `aten::clear(d)`: an empty dict.
    DictClear,
}

/// What `aten::keys`, `aten::values` and `aten::items` list.
#[derive(Clone, Copy, Debug)]
enum DictPart {
    Keys,
    Values,
    Items,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Remainder,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Neg,
    And,
    Or,
    Pow,
}

/// The typed calling conventions the interpreter calls without boxing (Note [Unboxed calls]):
/// the argument types, each returning one tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Convention {
    /// `(Tensor)`
    Tensor1,
    /// `(Tensor, Tensor)`
    Tensors2,
    /// `(Tensor, Tensor, Tensor)`
    Tensors3,
    /// `(Tensor, Scalar)`
    TensorScalar,
    /// `(Tensor, Scalar, Scalar)`
    TensorScalars2,
    /// `(Tensor, Tensor, Scalar)`
    Tensors2Scalar,
    /// `(Tensor, int)`
    TensorInt,
    /// `(Tensor, ScalarType?)`
    TensorDtype,
}

type SigTensor1 = fn(DispatchKeySet, &Tensor) -> Result<Tensor>;
type SigTensors2 = fn(DispatchKeySet, &Tensor, &Tensor) -> Result<Tensor>;
type SigTensors3 = fn(DispatchKeySet, &Tensor, &Tensor, &Tensor) -> Result<Tensor>;
type SigTensorScalar = fn(DispatchKeySet, &Tensor, Scalar) -> Result<Tensor>;
type SigTensorScalars2 = fn(DispatchKeySet, &Tensor, Scalar, Scalar) -> Result<Tensor>;
type SigTensors2Scalar = fn(DispatchKeySet, &Tensor, &Tensor, Scalar) -> Result<Tensor>;
type SigTensorInt = fn(DispatchKeySet, &Tensor, i64) -> Result<Tensor>;
type SigTensorDtype = fn(DispatchKeySet, &Tensor, Option<ScalarType>) -> Result<Tensor>;

/// The convention of an operator's schema, if it has one of them.
fn convention_of(schema: &FunctionSchema) -> Option<Convention> {
    use Convention::*;
    if schema.returns.len() != 1 || schema.returns[0].ty != Type::Tensor {
        return None;
    }
    let tys: Vec<&Type> = schema.arguments.iter().map(|a| &a.ty).collect();
    Some(match tys.as_slice() {
        [Type::Tensor] => Tensor1,
        [Type::Tensor, Type::Tensor] => Tensors2,
        [Type::Tensor, Type::Tensor, Type::Tensor] => Tensors3,
        [Type::Tensor, Type::Scalar] => TensorScalar,
        [Type::Tensor, Type::Scalar, Type::Scalar] => TensorScalars2,
        [Type::Tensor, Type::Tensor, Type::Scalar] => Tensors2Scalar,
        [Type::Tensor, Type::Int] => TensorInt,
        [Type::Tensor, Type::Optional(d)] if **d == Type::ScalarType => TensorDtype,
        _ => return None,
    })
}

/// The kernel of `op` for arguments with these keys, if it has a typed form `F`.
#[inline]
fn typed_kernel<F: std::any::Any + Copy>(
    op: &'static OperatorEntry,
    keys: DispatchKeySet,
) -> Result<Option<(F, DispatchKeySet)>> {
    let ks = op.compute_key_set(keys);
    Ok(op.lookup(ks)?.unboxed::<F>().map(|f| (f, ks)))
}

/// Calls an operator through its typed kernel with arguments borrowed from the registers
/// (Note [Unboxed calls]); `None` when the kernel has no typed form of the convention or an
/// argument is not of its type (the caller then takes the boxed path).
#[inline]
fn call_unboxed(
    c: Convention,
    op: &'static OperatorEntry,
    args: &[OpArg],
    regs: &[IValue],
    constants: &[IValue],
) -> Result<Option<Tensor>> {
    use Convention::*;
    let v = |k: usize| match args[k].src {
        Arg::Reg { reg, .. } => &regs[reg],
        Arg::Const(i) => &constants[i],
    };
    let t = |k: usize| match v(k) {
        IValue::Tensor(t) => Some(t),
        _ => None,
    };
    let s = |k: usize| match v(k) {
        IValue::Scalar(s) => Some(*s),
        IValue::Int(i) => Some(Scalar::Int(*i)),
        IValue::Double(x) => Some(Scalar::Float(*x)),
        IValue::Bool(b) => Some(Scalar::Bool(*b)),
        _ => None,
    };
    macro_rules! typed {
        ($sig:ty, [$($t:ident),*], |$f:ident, $ks:ident| $call:expr) => {{
            let keys = DispatchKeySet::EMPTY $(| $t.key_set())*;
            match typed_kernel::<$sig>(op, keys)? {
                Some(($f, $ks)) => Some($call?),
                None => None,
            }
        }};
    }
    Ok(match c {
        Tensor1 => match t(0) {
            Some(a) => typed!(SigTensor1, [a], |f, ks| f(ks, a)),
            None => None,
        },
        Tensors2 => match (t(0), t(1)) {
            (Some(a), Some(b)) => typed!(SigTensors2, [a, b], |f, ks| f(ks, a, b)),
            _ => None,
        },
        Tensors3 => match (t(0), t(1), t(2)) {
            (Some(a), Some(b), Some(d)) => typed!(SigTensors3, [a, b, d], |f, ks| f(ks, a, b, d)),
            _ => None,
        },
        TensorScalar => match (t(0), s(1)) {
            (Some(a), Some(x)) => typed!(SigTensorScalar, [a], |f, ks| f(ks, a, x)),
            _ => None,
        },
        TensorScalars2 => match (t(0), s(1), s(2)) {
            (Some(a), Some(x), Some(y)) => typed!(SigTensorScalars2, [a], |f, ks| f(ks, a, x, y)),
            _ => None,
        },
        Tensors2Scalar => match (t(0), t(1), s(2)) {
            (Some(a), Some(b), Some(x)) => typed!(SigTensors2Scalar, [a, b], |f, ks| f(ks, a, b, x)),
            _ => None,
        },
        TensorInt => match (t(0), v(1)) {
            (Some(a), IValue::Int(i)) => typed!(SigTensorInt, [a], |f, ks| f(ks, a, *i)),
            _ => None,
        },
        TensorDtype => {
            let d = match v(1) {
                IValue::None => Some(None),
                IValue::ScalarType(d) => Some(Some(*d)),
                IValue::Int(code) => dtype_from_code(*code).map(Some),
                _ => None,
            };
            match (t(0), d) {
                (Some(a), Some(d)) => typed!(SigTensorDtype, [a], |f, ks| f(ks, a, d)),
                _ => None,
            }
        }
    })
}

/// The value a constant has at run time.
pub fn constant_ivalue(g: &Graph, c: &Constant) -> Result<IValue> {
    Ok(match c {
        Constant::None => IValue::None,
        Constant::Int(i) => IValue::Int(*i),
        Constant::Float(x) => IValue::Double(*x),
        Constant::Bool(b) => IValue::Bool(*b),
        Constant::Str(s) => IValue::Str(s.clone()),
        Constant::IntList(v) => IValue::IntList(v.clone()),
        Constant::FloatList(v) => IValue::DoubleList(v.clone()),
        Constant::BoolList(v) => IValue::BoolList(v.clone()),
        Constant::Device(d) => IValue::Device(*d),
        Constant::Tensor(k) => IValue::Tensor(
            g.tensor_constants.get(*k).cloned().ok_or_else(|| run_error(format!("tensor constant {k} is missing")))?,
        ),
    })
}

fn arith(name: &str, n_inputs: usize) -> Option<ArithOp> {
    use ArithOp::*;
    Some(match (name, n_inputs) {
        ("add", 2) => Add,
        ("sub", 2) => Sub,
        ("mul", 2) => Mul,
        ("div", 2) => Div,
        ("floordiv", 2) => FloorDiv,
        ("remainder", 2) | ("__mod__", 2) => Remainder,
        ("lt", 2) => Lt,
        ("le", 2) => Le,
        ("gt", 2) => Gt,
        ("ge", 2) => Ge,
        ("eq", 2) => Eq,
        ("ne", 2) => Ne,
        ("neg", 1) => Neg,
        ("__and__", 2) => And,
        ("__or__", 2) => Or,
        ("pow", 2) => Pow,
        _ => return None,
    })
}

/// Whether `aten::<name>` of two numbers is one of the interpreter's arithmetic builtins.
pub fn is_number_op(name: &str) -> bool {
    arith(name, 2).is_some()
}

fn is_number(t: &JitType) -> bool {
    matches!(t, JitType::Int | JitType::Float | JitType::Bool | JitType::Number)
}

/// The builtin a node is, if it is one (`prim::` structure and number arithmetic).
fn builtin_of(g: &Graph, n: NodeId) -> Option<Builtin> {
    let kind = g.kind(n);
    let ins = g.inputs_of(n);
    let ty = |k: usize| g.value_type(ins[k]);
    let is_dict = |k: usize| ins.len() > k && matches!(ty(k), JitType::Dict(..));
    let is_list = |k: usize| ins.len() > k && matches!(ty(k), JitType::List(_));
    Some(match kind {
        "prim::ListConstruct" => Builtin::ListConstruct,
        "prim::ListUnpack" => Builtin::ListUnpack,
        "prim::TupleConstruct" => Builtin::TupleConstruct,
        "prim::TupleUnpack" => Builtin::TupleUnpack,
        "prim::TupleIndex" => Builtin::TupleIndex,
        "aten::__getitem__" | "prim::ListIndex" => Builtin::GetItem,
        "aten::len" => Builtin::Len,
        "prim::NumToTensor" => Builtin::NumToTensor,
        "aten::Int" => Builtin::Int,
        "aten::Float" => Builtin::Float,
        "aten::Bool" => Builtin::Bool,
        "aten::ScalarImplicit" => Builtin::ScalarImplicit,
        "aten::size" => Builtin::Size,
        "aten::dim" => Builtin::Dim,
        "aten::numel" => Builtin::Numel,
        "aten::__not__" => Builtin::Not,
        "prim::Print" => Builtin::Print,
        "prim::RaiseException" => Builtin::RaiseException,
        "prim::unchecked_cast" => Builtin::Identity,
        "prim::Uninitialized" => Builtin::Uninitialized,
        "aten::__is__" => Builtin::Is(false),
        "aten::__isnot__" => Builtin::Is(true),
        "aten::append" => Builtin::Append,
        "aten::format" => Builtin::Format,
        "aten::__range_length" => Builtin::RangeLength,
        "aten::__derive_index" => Builtin::DeriveIndex,
        "prim::min" => Builtin::MinMax(false),
        "prim::max" => Builtin::MinMax(true),
        "aten::__contains__" => Builtin::Contains,
        "prim::dtype" => Builtin::DtypeOf,
        "prim::device" => Builtin::DeviceOf,
        // Strings and lists compare by value (`aten::eq.str`, `aten::ne.int_list`).
        "aten::eq" | "aten::ne"
            if ins.len() == 2 && (0..2).all(|k| matches!(ty(k), JitType::Str | JitType::List(_))) =>
        {
            Builtin::ValueEq(kind == "aten::ne")
        }
        "aten::slice" if ins.len() == 4 && matches!(ty(0), JitType::List(_)) => Builtin::ListSlice,
        "aten::warn" => Builtin::Warn,
        "aten::list" => Builtin::Identity,
        "prim::is_nested" => Builtin::IsNested,
        "prim::type" => Builtin::DeviceTypeName,
        "aten::all" | "aten::any"
            if ins.len() == 1
                && matches!(ty(0), JitType::List(e) if matches!(**e, JitType::Bool | JitType::Int | JitType::Float | JitType::Str)) =>
        {
            Builtin::AllAny(kind == "aten::any")
        }
        "aten::is_grad_enabled" => Builtin::GradEnabled,
        "prim::requires_grad" => Builtin::RequiresGrad,
        "prim::is_cuda" => Builtin::IsCuda,
        "aten::is_autocast_enabled" => Builtin::AutocastEnabled(false),
        "prim::DictConstruct" => Builtin::DictConstruct,
        "aten::keys" if is_dict(0) => Builtin::DictList(DictPart::Keys),
        "aten::values" if is_dict(0) => Builtin::DictList(DictPart::Values),
        "aten::items" if is_dict(0) => Builtin::DictList(DictPart::Items),
        "aten::get" if is_dict(0) => Builtin::DictGet,
        "aten::copy" if is_dict(0) => Builtin::Identity,
        "aten::_set_item" if is_dict(0) || is_list(0) => Builtin::SetItem,
        "aten::Delete" if is_dict(0) || is_list(0) => Builtin::Delete,
        "aten::pop" if is_dict(0) => Builtin::DictPop,
        "aten::setdefault" if is_dict(0) => Builtin::DictSetDefault,
        "aten::update" if is_dict(0) => Builtin::DictUpdate,
        "aten::clear" if is_dict(0) => Builtin::DictClear,
        "aten::is_autocast_cpu_enabled" => Builtin::AutocastEnabled(true),
        "aten::add" if ins.len() == 2 && (0..2).all(|k| matches!(ty(k), JitType::Str | JitType::List(_))) => {
            Builtin::Concat
        }
        "aten::floor" | "aten::ceil" if ins.len() == 1 && is_number(ty(0)) => Builtin::Round(kind == "aten::ceil"),
        "aten::sqrt" if ins.len() == 1 && is_number(ty(0)) => Builtin::Math(f64::sqrt),
        "aten::exp" if ins.len() == 1 && is_number(ty(0)) => Builtin::Math(f64::exp),
        "aten::log" if ins.len() == 1 && is_number(ty(0)) => Builtin::Math(f64::ln),
        "aten::is_floating_point" => Builtin::DtypeIs(false),
        "aten::is_complex" => Builtin::DtypeIs(true),
        _ => {
            let name = kind.strip_prefix("aten::")?;
            let op = arith(name, ins.len())?;
            if !(0..ins.len()).all(|k| is_number(ty(k))) {
                return None;
            }
            Builtin::Arith(op)
        }
    })
}

/// Base name → overload names, from the dispatcher (Note [Overload resolution]), with the
/// number of operators it was built from: rebuilt only when operators were defined since, so a
/// name that is not an operator (a builtin, an unknown name) costs a lookup, not a rebuild.
static OVERLOADS: LazyLock<RwLock<OverloadTable>> = LazyLock::new(|| RwLock::new((0, HashMap::new())));

/// The operator count a table was built from, and base name → overload names.
type OverloadTable = (usize, HashMap<String, Vec<String>>);

/// The overload names (`add.Tensor`, `add.Scalar`, ...) of an operator base name.
pub fn overloads_of(base: &str) -> Vec<String> {
    let count = dispatcher().operator_count();
    {
        let table = OVERLOADS.read().unwrap_or_else(|e| e.into_inner());
        if table.0 == count {
            return table.1.get(base).cloned().unwrap_or_default();
        }
    }
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for name in dispatcher().operator_names() {
        let b = name.split_once('.').map_or(name.as_str(), |(b, _)| b).to_string();
        map.entry(b).or_default().push(name);
    }
    for v in map.values_mut() {
        v.sort();
    }
    let out = map.get(base).cloned().unwrap_or_default();
    *OVERLOADS.write().unwrap_or_else(|e| e.into_inner()) = (count, map);
    out
}

/// How well a value of IR type `v` fits an argument of schema type `a`: 2 exactly, 1 with a
/// conversion, 0 not at all.
pub fn fit(v: &JitType, a: &Type) -> u8 {
    match (a, v) {
        (Type::Optional(_), JitType::None) => 2,
        (Type::Optional(inner), JitType::Optional(vi)) => fit(vi, inner),
        (Type::Optional(inner), v) => fit(v, inner),
        (Type::Tensor, JitType::Tensor(_)) => 2,
        (Type::Int | Type::SymInt, JitType::Int) => 2,
        (Type::Float, JitType::Float) => 2,
        (Type::Float, JitType::Int) => 1,
        (Type::Bool, JitType::Bool) => 2,
        (Type::Str | Type::Dimname, JitType::Str) => 2,
        (Type::Scalar, JitType::Number) => 2,
        (Type::Scalar, JitType::Int | JitType::Float | JitType::Bool) => 2,
        (Type::ScalarType | Type::Layout | Type::MemoryFormat, JitType::Int) => 2,
        (Type::Device, JitType::Device) => 2,
        (Type::Device, JitType::Str) => 1,
        (Type::Generator, JitType::Generator) => 2,
        (Type::List(e, _), JitType::List(ve)) => fit(ve, e),
        (Type::List(e, _), JitType::Tuple(ts)) => u8::from(ts.iter().all(|t| fit(t, e) > 0)),
        // `int[2] stride=1`: one int for every element.
        (Type::List(e, Some(_)), v) if matches!(**e, Type::Int | Type::SymInt) && *v == JitType::Int => 1,
        _ => 0,
    }
}

/// The operator an `aten::` node calls (Note [Overload resolution]).
pub fn resolve(g: &Graph, n: NodeId) -> Result<(&'static OperatorEntry, Arc<FunctionSchema>)> {
    let kind = g.kind(n);
    let Some(base) = kind.strip_prefix("aten::") else {
        return Err(run_error(format!("no interpreter support for {kind}")));
    };
    let ins = g.inputs_of(n);
    let nout = g.outputs_of(n).len();
    let mut best: Option<(u32, &'static OperatorEntry, Arc<FunctionSchema>)> = None;
    let names = overloads_of(base);
    for name in &names {
        let Ok((op, schema)) = dispatcher().find_schema(name) else { continue };
        if schema.arguments.len() != ins.len() || schema.returns.len() != nout {
            continue;
        }
        let mut score = 0u32;
        let mut ok = true;
        for (a, &v) in schema.arguments.iter().zip(ins) {
            match fit(g.value_type(v), &a.ty) {
                0 => {
                    ok = false;
                    break;
                }
                s => score += s as u32,
            }
        }
        if ok && best.as_ref().is_none_or(|(b, ..)| score > *b) {
            best = Some((score, op, schema));
        }
    }
    match best {
        Some((_, op, schema)) => Ok((op, schema)),
        None if names.is_empty() => Err(Error::UnknownOperator(kind.to_string())),
        None => {
            let types: Vec<String> = ins.iter().map(|&v| g.value_type(v).to_string()).collect();
            Err(run_error(format!(
                "no overload of {kind} takes ({}) with {nout} output(s); overloads: {}",
                types.join(", "),
                names.join(", ")
            )))
        }
    }
}

/// The value a schema argument of type `ty` expects, from what the graph holds (dtypes,
/// layouts and memory formats are ints in the IR; numbers are Scalars where one goes).
pub fn coerce(v: IValue, ty: &Type) -> Result<IValue> {
    Ok(match (ty, v) {
        (Type::Optional(_), IValue::None) => IValue::None,
        (Type::Optional(inner), v) => coerce(v, inner)?,
        (Type::Scalar, IValue::Int(i)) => IValue::Scalar(Scalar::Int(i)),
        (Type::Scalar, IValue::Double(x)) => IValue::Scalar(Scalar::Float(x)),
        (Type::Scalar, IValue::Bool(b)) => IValue::Scalar(Scalar::Bool(b)),
        (Type::Scalar, IValue::Tensor(t)) => IValue::Scalar(t.item_scalar()?),
        (Type::Float, IValue::Int(i)) => IValue::Double(i as f64),
        (Type::ScalarType, IValue::Int(i)) => {
            IValue::ScalarType(dtype_from_code(i).ok_or_else(|| run_error(format!("{i} is not a dtype code")))?)
        }
        (Type::Layout, IValue::Int(0)) => IValue::Layout(Layout::Strided),
        (Type::Layout, IValue::Int(i)) => return Err(run_error(format!("layout {i} is not supported"))),
        (Type::MemoryFormat, IValue::Int(i)) => IValue::MemoryFormat(memory_format_from_code(i)?),
        (Type::Device, IValue::Str(s)) => IValue::Device(s.parse::<Device>()?),
        (Type::List(e, _), IValue::Tuple(vs)) => {
            list_of(vs.into_iter().map(|v| coerce(v, e)).collect::<Result<_>>()?, e)?
        }
        (Type::List(e, Some(n)), IValue::Int(i)) if matches!(**e, Type::Int | Type::SymInt) => {
            IValue::IntList(vec![i; *n])
        }
        (_, v) => v,
    })
}

/// Runs one node on the given input values (constant folding): a builtin, or its operator.
pub fn run_node(g: &Graph, n: NodeId, inputs: Vec<IValue>) -> Result<Vec<IValue>> {
    let nout = g.outputs_of(n).len();
    if let Some(f) = builtin_of(g, n) {
        let list = match g.outputs_of(n).first().map(|&v| g.value_type(v)) {
            Some(JitType::List(e)) => Some((**e).clone()),
            _ => None,
        };
        return builtin(f, inputs, nout, list.as_ref());
    }
    let (op, schema) = resolve(g, n)?;
    let mut stack = Vec::with_capacity(inputs.len());
    for (v, arg) in inputs.into_iter().zip(&schema.arguments) {
        stack.push(coerce(v, &arg.ty)?);
    }
    op.call_boxed(&mut stack)?;
    if stack.len() != nout {
        return Err(run_error(format!("aten::{} returned {} values, not {nout}", op.name(), stack.len())));
    }
    Ok(stack)
}

/// PyTorch's memory-format codes.
pub fn memory_format_from_code(i: i64) -> Result<MemoryFormat> {
    Ok(match i {
        0 => MemoryFormat::Contiguous,
        1 => MemoryFormat::Preserve,
        2 => MemoryFormat::ChannelsLast,
        3 => MemoryFormat::ChannelsLast3d,
        _ => return Err(run_error(format!("{i} is not a memory-format code"))),
    })
}

/// The code PyTorch gives a memory format.
pub fn memory_format_code(m: MemoryFormat) -> i64 {
    match m {
        MemoryFormat::Contiguous => 0,
        MemoryFormat::Preserve => 1,
        MemoryFormat::ChannelsLast => 2,
        MemoryFormat::ChannelsLast3d => 3,
    }
}

/// A list value of schema element type `elem`.
pub fn list_of(values: Vec<IValue>, elem: &Type) -> Result<IValue> {
    let bad = |v: &IValue| run_error(format!("a {} in a list of {elem}", v.kind()));
    Ok(match elem {
        Type::Int | Type::SymInt => IValue::IntList(
            values.iter().map(|v| if let IValue::Int(i) = v { Ok(*i) } else { Err(bad(v)) }).collect::<Result<_>>()?,
        ),
        Type::Float => IValue::DoubleList(
            values
                .iter()
                .map(|v| match v {
                    IValue::Double(x) => Ok(*x),
                    IValue::Int(i) => Ok(*i as f64),
                    _ => Err(bad(v)),
                })
                .collect::<Result<_>>()?,
        ),
        Type::Bool => IValue::BoolList(
            values.iter().map(|v| if let IValue::Bool(b) = v { Ok(*b) } else { Err(bad(v)) }).collect::<Result<_>>()?,
        ),
        Type::Tensor => IValue::TensorList(
            values
                .iter()
                .map(|v| if let IValue::Tensor(t) = v { Ok(t.clone()) } else { Err(bad(v)) })
                .collect::<Result<_>>()?,
        ),
        Type::Optional(inner) if **inner == Type::Tensor => IValue::OptionalTensorList(
            values
                .iter()
                .map(|v| match v {
                    IValue::Tensor(t) => Ok(Some(t.clone())),
                    IValue::None => Ok(None),
                    _ => Err(bad(v)),
                })
                .collect::<Result<_>>()?,
        ),
        // Numbers whose type the graph does not narrow (`number`, a join of int and float):
        // floats if any is one, ints otherwise.
        Type::Scalar if values.iter().all(|v| matches!(v, IValue::Int(_) | IValue::Double(_))) => {
            if values.iter().any(|v| matches!(v, IValue::Double(_))) {
                list_of(values, &Type::Float)?
            } else {
                list_of(values, &Type::Int)?
            }
        }
        // Any other element type (`str`, `Optional[float]`): a generic list, held as a tuple's
        // values (what `list_elements` reads back).
        _ => IValue::Tuple(values),
    })
}

/// The schema element type of an IR list type (for `prim::ListConstruct`).
fn schema_elem(t: &JitType) -> Type {
    match t {
        JitType::Tensor(_) => Type::Tensor,
        JitType::Int => Type::Int,
        JitType::Float => Type::Float,
        JitType::Bool => Type::Bool,
        JitType::Optional(inner) if inner.is_tensor() => Type::Optional(Box::new(Type::Tensor)),
        _ => Type::Scalar,
    }
}

/// The elements of a list or tuple value.
pub fn list_elements(v: IValue) -> Result<Vec<IValue>> {
    Ok(match v {
        IValue::TensorList(v) => v.into_iter().map(IValue::Tensor).collect(),
        IValue::OptionalTensorList(v) => v.into_iter().map(|t| t.map_or(IValue::None, IValue::Tensor)).collect(),
        IValue::IntList(v) => v.into_iter().map(IValue::Int).collect(),
        IValue::DoubleList(v) => v.into_iter().map(IValue::Double).collect(),
        IValue::BoolList(v) => v.into_iter().map(IValue::Bool).collect(),
        IValue::Tuple(v) => v,
        other => return Err(run_error(format!("expected a list or tuple, got {}", other.kind()))),
    })
}

struct Compiler<'g> {
    g: &'g Graph,
    regs: HashMap<ValueId, usize>,
    /// Values of `prim::Constant` nodes: their index in `pool`.
    consts: HashMap<ValueId, usize>,
    pool: Vec<IValue>,
}

/// Whether [`coerce`] leaves a value of IR type `v` unchanged for an argument of type `a`.
fn reaches_unchanged(v: &JitType, a: &Type) -> bool {
    match (a, v) {
        (Type::Tensor, JitType::Tensor(_)) | (Type::Optional(_), JitType::None) => true,
        (Type::Optional(inner), JitType::Tensor(_)) => **inner == Type::Tensor,
        (Type::Int | Type::SymInt, JitType::Int)
        | (Type::Float, JitType::Float)
        | (Type::Bool, JitType::Bool)
        | (Type::Str, JitType::Str) => true,
        (Type::List(e, _), JitType::List(ve)) => matches!(
            (&**e, &**ve),
            (Type::Int | Type::SymInt, JitType::Int)
                | (Type::Float, JitType::Float)
                | (Type::Bool, JitType::Bool)
                | (Type::Tensor, JitType::Tensor(_))
        ),
        _ => false,
    }
}

impl Compiler<'_> {
    fn reg(&mut self, v: ValueId) -> usize {
        let n = self.regs.len();
        *self.regs.entry(v).or_insert(n)
    }

    /// Where `v` is read from: the constant pool, or its register (moved out when `take`).
    fn arg(&mut self, v: ValueId, take: bool) -> Arg {
        match self.consts.get(&v) {
            Some(&k) => Arg::Const(k),
            None => Arg::Reg { reg: self.reg(v), take },
        }
    }

    /// An operator's arguments (Note [Constants are compiled]).
    fn op_args(&mut self, args: &[Arg], ins: &[ValueId], schema: &FunctionSchema) -> Vec<OpArg> {
        let g = self.g;
        args.iter()
            .zip(ins)
            .zip(&schema.arguments)
            .map(|((&src, &v), a)| match src {
                Arg::Const(k) => match coerce(self.pool[k].clone(), &a.ty) {
                    Ok(c) => {
                        self.pool.push(c);
                        OpArg { src: Arg::Const(self.pool.len() - 1), coerce: false }
                    }
                    // The error belongs to the run.
                    Err(_) => OpArg { src, coerce: true },
                },
                Arg::Reg { .. } => OpArg { src, coerce: !reaches_unchanged(g.value_type(v), &a.ty) },
            })
            .collect()
    }

    /// The position in `b` of the last use of each value defined in `b` (Note [Register moves]).
    fn last_uses(&self, b: BlockId) -> HashMap<ValueId, usize> {
        let g = self.g;
        let mut last = HashMap::new();
        let defined_here = |v: ValueId| match g.def(v) {
            ValueDef::Param(pb, _) => pb == b,
            ValueDef::Node(n, _) => g.node_block(n) == b,
        };
        fn used_in(g: &Graph, n: NodeId, out: &mut Vec<ValueId>) {
            out.extend_from_slice(g.inputs_of(n));
            for &c in g.blocks_of(n) {
                for &m in g.block_nodes(c) {
                    used_in(g, m, out);
                }
                out.extend_from_slice(g.block_returns(c));
            }
        }
        for (i, &n) in g.block_nodes(b).iter().enumerate() {
            let mut vs = Vec::new();
            used_in(g, n, &mut vs);
            for v in vs {
                if defined_here(v) {
                    last.insert(v, i);
                }
            }
        }
        let end = g.block_nodes(b).len();
        for &v in g.block_returns(b) {
            if defined_here(v) {
                last.insert(v, end);
            }
        }
        last
    }

    fn plan(&mut self, b: BlockId) -> Result<Plan> {
        let g = self.g;
        let last = self.last_uses(b);
        let params = g.block_params(b).iter().map(|&v| self.reg(v)).collect();
        let mut steps = Vec::new();
        for (i, &n) in g.block_nodes(b).iter().enumerate() {
            if g.kind(n) == "prim::Constant" {
                let c = g.constant_of(n).ok_or_else(|| run_error("a prim::Constant without a value"))?;
                self.pool.push(constant_ivalue(g, &c)?);
                for &v in g.outputs_of(n) {
                    self.consts.insert(v, self.pool.len() - 1);
                }
                continue;
            }
            let simple = g.blocks_of(n).is_empty();
            let ins = g.inputs_of(n).to_vec();
            let args: Vec<Arg> = ins
                .iter()
                .enumerate()
                // Moved on its last use, and only at the last position it has in this node.
                .map(|(k, &v)| self.arg(v, simple && last.get(&v) == Some(&i) && !ins[k + 1..].contains(&v)))
                .collect();
            let outs: Vec<usize> = g.outputs_of(n).iter().map(|&v| self.reg(v)).collect();
            let step = match g.kind(n) {
                "prim::If" => {
                    let [then, otherwise] = g.blocks_of(n) else {
                        return Err(run_error("prim::If needs two blocks"));
                    };
                    Step::If { cond: args[0], then: self.plan(*then)?, otherwise: self.plan(*otherwise)?, outs }
                }
                "prim::FusionGroup" => {
                    let Some(Attr::Graph(sub)) = g.attr(n, "Subgraph") else {
                        return Err(run_error("a prim::FusionGroup without its Subgraph"));
                    };
                    Step::Fused { group: Box::new(FusionGroup::new(sub)?), args, outs }
                }
                "prim::Loop" => {
                    let [body] = g.blocks_of(n) else { return Err(run_error("prim::Loop needs one block")) };
                    if args.len() < 2 {
                        return Err(run_error("prim::Loop needs a trip count and a condition"));
                    }
                    Step::Loop {
                        max_trip: args[0],
                        cond: args[1],
                        carried: args[2..].to_vec(),
                        body: self.plan(*body)?,
                        outs,
                    }
                }
                _ => match builtin_of(g, n) {
                    Some(f) => {
                        // The element type of a list the builtin makes (Note [Dicts]).
                        let list = match (f, g.outputs_of(n).first().map(|&o| g.value_type(o))) {
                            (_, Some(JitType::List(e))) => Some((**e).clone()),
                            (Builtin::ListConstruct, other) => {
                                return Err(run_error(format!(
                                    "prim::ListConstruct of type {}",
                                    other.map_or("nothing".to_string(), |t| t.to_string())
                                )))
                            }
                            _ => None,
                        };
                        Step::Builtin { f, kind: g.kind(n).to_string(), args, outs, list }
                    }
                    None => {
                        if !g.blocks_of(n).is_empty() || g.kind(n).starts_with("prim::") {
                            return Err(run_error(format!("no interpreter support for {}", g.kind(n))));
                        }
                        let (op, schema) = resolve(g, n)?;
                        let args = self.op_args(&args, &ins, &schema);
                        let unboxed = convention_of(&schema);
                        Step::Op { op, schema, args, outs, unboxed }
                    }
                },
            };
            steps.push(step);
        }
        let end = g.block_nodes(b).len();
        // A value returned more than once (`-> (%x, %x)`) moves out at its last place only.
        let rets = g.block_returns(b);
        let returns = rets
            .iter()
            .enumerate()
            .map(|(k, &v)| self.arg(v, last.get(&v) == Some(&end) && !rets[k + 1..].contains(&v)))
            .collect();
        Ok(Plan { params, steps, returns })
    }
}

impl Code {
    /// Compiles a graph: resolves every operator, so an unknown one is an error here.
    pub fn new(g: &Graph) -> Result<Code> {
        let mut c = Compiler { g, regs: HashMap::new(), consts: HashMap::new(), pool: Vec::new() };
        let body = c.plan(g.root())?;
        let inputs = body.params.clone();
        let n_outputs = body.returns.len();
        Ok(Code { body, inputs, n_outputs, registers: c.regs.len(), constants: c.pool })
    }

    /// Runs the graph on its inputs and returns its outputs.
    pub fn run(&self, inputs: Vec<IValue>) -> Result<Vec<IValue>> {
        if inputs.len() != self.inputs.len() {
            return Err(run_error(format!("the graph takes {} inputs, got {}", self.inputs.len(), inputs.len())));
        }
        let mut regs: Vec<IValue> = std::iter::repeat_with(|| IValue::None).take(self.registers).collect();
        for (r, v) in self.inputs.iter().zip(inputs) {
            regs[*r] = v;
        }
        let mut fr = Frame { regs: &mut regs, constants: &self.constants, stack: Vec::new() };
        run_plan(&self.body, &mut fr)
    }

    /// How many outputs the graph has.
    pub fn num_outputs(&self) -> usize {
        self.n_outputs
    }
}

/// The state of one run: registers, the constant pool, the operator stack.
struct Frame<'a> {
    regs: &'a mut [IValue],
    constants: &'a [IValue],
    stack: Vec<IValue>,
}

#[inline]
fn get(regs: &mut [IValue], constants: &[IValue], a: Arg) -> IValue {
    match a {
        Arg::Reg { reg, take: true } => std::mem::replace(&mut regs[reg], IValue::None),
        Arg::Reg { reg, take: false } => regs[reg].clone(),
        Arg::Const(k) => constants[k].clone(),
    }
}

/// The profiling range of a node that is not an operator call (operators are recorded by the
/// dispatcher): one per executed node, named by its kind; a fusion group by whether it ran
/// fused.
fn step_range(step: &Step) -> Option<c10::record_function::RecordFunction> {
    use c10::record_function::{RecordFunction, RecordScope};
    let name = match step {
        Step::Op { .. } => return None,
        Step::Builtin { kind, .. } => kind.clone(),
        Step::If { .. } => "prim::If".to_string(),
        Step::Loop { .. } => "prim::Loop".to_string(),
        Step::Fused { group, .. } => {
            if group.is_fused() { "prim::FusionGroup (fused)" } else { "prim::FusionGroup" }.to_string()
        }
    };
    Some(RecordFunction::start(RecordScope::TorchscriptFunction, name, -1, Vec::new))
}

fn run_plan(p: &Plan, fr: &mut Frame<'_>) -> Result<Vec<IValue>> {
    for step in &p.steps {
        let recording = c10::record_function::is_active();
        let _range = if recording { step_range(step) } else { None };
        match step {
            Step::Op { op, schema, args, outs, unboxed } => {
                // While ranges are recorded, operators take the boxed call, which records them
                // as the dispatcher records every call (the typed path goes to the kernel).
                if let (Some(c), false) = (unboxed, recording) {
                    if let Some(r) = call_unboxed(*c, op, args, fr.regs, fr.constants)? {
                        // What a boxed call would have moved out of its register goes now.
                        for a in args {
                            if let Arg::Reg { reg, take: true } = a.src {
                                fr.regs[reg] = IValue::None;
                            }
                        }
                        fr.regs[outs[0]] = IValue::Tensor(r);
                        continue;
                    }
                }
                fr.stack.clear();
                for (a, arg) in args.iter().zip(&schema.arguments) {
                    let v = get(fr.regs, fr.constants, a.src);
                    fr.stack.push(if a.coerce { coerce(v, &arg.ty)? } else { v });
                }
                op.call_boxed(&mut fr.stack)?;
                if fr.stack.len() != outs.len() {
                    return Err(run_error(format!(
                        "aten::{} returned {} values where the graph expects {}",
                        op.name(),
                        fr.stack.len(),
                        outs.len()
                    )));
                }
                for (r, v) in outs.iter().zip(fr.stack.drain(..)) {
                    fr.regs[*r] = v;
                }
            }
            Step::Builtin { f, args, outs, list, .. } => {
                let vals: Vec<IValue> = args.iter().map(|a| get(fr.regs, fr.constants, *a)).collect();
                let res = builtin(*f, vals, outs.len(), list.as_ref())?;
                for (r, v) in outs.iter().zip(res) {
                    fr.regs[*r] = v;
                }
            }
            Step::Fused { group, args, outs } => {
                let res = group.run(args.iter().map(|a| get(fr.regs, fr.constants, *a)).collect())?;
                if res.len() != outs.len() {
                    return Err(run_error(format!("a fusion group returned {} values, not {}", res.len(), outs.len())));
                }
                for (r, v) in outs.iter().zip(res) {
                    fr.regs[*r] = v;
                }
            }
            Step::If { cond, then, otherwise, outs } => {
                let c = truth(&get(fr.regs, fr.constants, *cond))?;
                let res = run_block(if c { then } else { otherwise }, Vec::new(), fr)?;
                for (r, v) in outs.iter().zip(res) {
                    fr.regs[*r] = v;
                }
            }
            Step::Loop { max_trip, cond, carried, body, outs } => {
                let n = match get(fr.regs, fr.constants, *max_trip) {
                    IValue::Int(n) => n,
                    other => return Err(run_error(format!("prim::Loop's trip count is a {}", other.kind()))),
                };
                let mut go = truth(&get(fr.regs, fr.constants, *cond))?;
                let mut state: Vec<IValue> = carried.iter().map(|a| get(fr.regs, fr.constants, *a)).collect();
                let mut i = 0;
                while go && i < n {
                    let mut params = Vec::with_capacity(state.len() + 1);
                    params.push(IValue::Int(i));
                    params.append(&mut state);
                    let mut res = run_block(body, params, fr)?.into_iter();
                    go = truth(&res.next().ok_or_else(|| run_error("a loop body returns its condition first"))?)?;
                    state = res.collect();
                    i += 1;
                }
                for (r, v) in outs.iter().zip(state) {
                    fr.regs[*r] = v;
                }
            }
        }
    }
    Ok(p.returns.iter().map(|a| get(fr.regs, fr.constants, *a)).collect())
}

fn run_block(p: &Plan, params: Vec<IValue>, fr: &mut Frame<'_>) -> Result<Vec<IValue>> {
    if params.len() != p.params.len() {
        return Err(run_error(format!("a block takes {} values, got {}", p.params.len(), params.len())));
    }
    for (r, v) in p.params.iter().zip(params) {
        fr.regs[*r] = v;
    }
    run_plan(p, fr)
}

/// The indices Python's `seq[start:end:step]` takes from a sequence of `len` elements (`step`
/// not zero).
fn python_slice(len: i64, start: Option<i64>, end: Option<i64>, step: i64) -> impl Iterator<Item = usize> {
    let clamp = |i: i64, lo: i64, hi: i64| {
        let i = if i < 0 { i + len } else { i };
        i.clamp(lo, hi)
    };
    let (first, stop) = if step > 0 {
        (start.map_or(0, |s| clamp(s, 0, len)), end.map_or(len, |e| clamp(e, 0, len)))
    } else {
        (start.map_or(len - 1, |s| clamp(s, -1, len - 1)), end.map_or(-1, |e| clamp(e, -1, len - 1)))
    };
    let mut i = first;
    std::iter::from_fn(move || {
        let more = if step > 0 { i < stop } else { i > stop };
        more.then(|| {
            let k = i as usize;
            i += step;
            k
        })
    })
}

fn truth(v: &IValue) -> Result<bool> {
    match v {
        IValue::Bool(b) => Ok(*b),
        IValue::Int(i) => Ok(*i != 0),
        IValue::Double(x) => Ok(*x != 0.0),
        IValue::Tensor(t) if t.numel() == 1 => Ok(t.item_scalar()?.to_f64() != 0.0),
        other => Err(run_error(format!("a condition must be a bool, got {}", other.kind()))),
    }
}

fn as_f64(v: &IValue) -> Result<f64> {
    match v {
        IValue::Int(i) => Ok(*i as f64),
        IValue::Double(x) => Ok(*x),
        IValue::Bool(b) => Ok(*b as i64 as f64),
        IValue::Scalar(s) => Ok(s.to_f64()),
        other => Err(run_error(format!("expected a number, got {}", other.kind()))),
    }
}

fn tensor(v: IValue, what: &str) -> Result<Tensor> {
    match v {
        IValue::Tensor(t) => Ok(t),
        other => Err(run_error(format!("{what}: expected a tensor, got {}", other.kind()))),
    }
}

fn builtin(f: Builtin, mut vals: Vec<IValue>, nout: usize, list: Option<&JitType>) -> Result<Vec<IValue>> {
    let one = |v: IValue| Ok(vec![v]);
    match f {
        Builtin::ListConstruct => {
            let elem = schema_elem(list.unwrap_or(&JitType::tensor()));
            one(list_of(vals, &elem)?)
        }
        Builtin::ListUnpack | Builtin::TupleUnpack => {
            let items = list_elements(vals.pop().ok_or_else(|| run_error("unpack of nothing"))?)?;
            if items.len() != nout {
                return Err(run_error(format!("cannot unpack {} values into {nout}", items.len())));
            }
            Ok(items)
        }
        Builtin::TupleConstruct => one(IValue::Tuple(vals)),
        Builtin::GetItem if matches!(vals.first(), Some(IValue::Dict(_))) => {
            let [IValue::Dict(entries), key] =
                <[IValue; 2]>::try_from(vals).map_err(|_| run_error("d[k] takes two values"))?
            else {
                unreachable!("a dict")
            };
            match entries.into_iter().find(|(k, _)| same_key(k, &key)) {
                Some((_, v)) => one(v),
                None => Err(key_error(&key)),
            }
        }
        Builtin::TupleIndex | Builtin::GetItem => {
            let [seq, idx] = <[IValue; 2]>::try_from(vals).map_err(|_| run_error("indexing takes two values"))?;
            let i = idx.to_int("__getitem__", "idx")?;
            let items = list_elements(seq)?;
            let n = items.len() as i64;
            let k = if i < 0 { i + n } else { i };
            if k < 0 || k >= n {
                return Err(run_error(format!("list index {i} out of range for {n} elements")));
            }
            one(items.into_iter().nth(k as usize).expect("in range"))
        }
        Builtin::Len => match vals.pop().unwrap_or(IValue::None) {
            // A string's length in characters, as Python counts them.
            IValue::Str(s) => one(IValue::Int(s.chars().count() as i64)),
            IValue::Dict(entries) => one(IValue::Int(entries.len() as i64)),
            v => one(IValue::Int(list_elements(v)?.len() as i64)),
        },
        Builtin::NumToTensor => {
            let t = match vals.first() {
                Some(IValue::Int(i)) => Tensor::scalar_tensor(*i),
                Some(IValue::Double(x)) => Tensor::scalar_tensor(*x),
                Some(IValue::Bool(b)) => Tensor::scalar_tensor(*b),
                Some(IValue::Scalar(s)) => Tensor::wrapped_scalar(*s),
                _ => return Err(run_error("prim::NumToTensor needs a number")),
            };
            one(IValue::Tensor(t))
        }
        Builtin::Int | Builtin::Float | Builtin::Bool | Builtin::ScalarImplicit => {
            let v = vals.pop().ok_or_else(|| run_error("conversion of nothing"))?;
            let s = match v {
                IValue::Tensor(t) => t.item_scalar()?,
                IValue::Int(i) => Scalar::Int(i),
                IValue::Double(x) => Scalar::Float(x),
                IValue::Bool(b) => Scalar::Bool(b),
                IValue::Scalar(s) => s,
                other => return Err(run_error(format!("cannot convert a {} to a number", other.kind()))),
            };
            one(match f {
                Builtin::Int => IValue::Int(match s {
                    Scalar::Int(i) => i,
                    other => other.to_f64() as i64,
                }),
                Builtin::Float => IValue::Double(s.to_f64()),
                Builtin::Bool => IValue::Bool(s.to_f64() != 0.0),
                _ => match s {
                    Scalar::Int(i) => IValue::Int(i),
                    Scalar::Bool(b) => IValue::Bool(b),
                    other => IValue::Double(other.to_f64()),
                },
            })
        }
        Builtin::Size => {
            let mut it = vals.into_iter();
            let t = tensor(it.next().unwrap_or(IValue::None), "aten::size")?;
            match it.next() {
                None => one(IValue::IntList(t.sizes().to_vec())),
                Some(d) => one(IValue::Int(t.size(d.to_int("size", "dim")?)?)),
            }
        }
        Builtin::Dim => one(IValue::Int(tensor(vals.pop().unwrap_or(IValue::None), "aten::dim")?.dim() as i64)),
        Builtin::Concat => match <[IValue; 2]>::try_from(vals) {
            Ok([IValue::Str(a), IValue::Str(b)]) => one(IValue::Str(a + &b)),
            Ok([IValue::IntList(mut a), IValue::IntList(b)]) => {
                a.extend(b);
                one(IValue::IntList(a))
            }
            Ok([IValue::DoubleList(mut a), IValue::DoubleList(b)]) => {
                a.extend(b);
                one(IValue::DoubleList(a))
            }
            Ok([IValue::BoolList(mut a), IValue::BoolList(b)]) => {
                a.extend(b);
                one(IValue::BoolList(a))
            }
            Ok([IValue::TensorList(mut a), IValue::TensorList(b)]) => {
                a.extend(b);
                one(IValue::TensorList(a))
            }
            Ok([IValue::Tuple(mut a), IValue::Tuple(b)]) => {
                a.extend(b);
                one(IValue::Tuple(a))
            }
            Ok([a, b]) => Err(run_error(format!("cannot add a {} and a {}", a.kind(), b.kind()))),
            Err(_) => Err(run_error("+ takes two values")),
        },
        Builtin::Math(f) => one(IValue::Double(f(as_f64(&vals.pop().unwrap_or(IValue::None))?))),
        Builtin::Round(ceil) => {
            let x = as_f64(&vals.pop().unwrap_or(IValue::None))?;
            let r = if ceil { x.ceil() } else { x.floor() };
            if !r.is_finite() || r < i64::MIN as f64 || r >= i64::MAX as f64 {
                return Err(run_error(format!("cannot convert {x} to an int")));
            }
            one(IValue::Int(r as i64))
        }
        Builtin::AllAny(any) => {
            // Python's truth of each element: nonzero numbers, nonempty strings.
            let items = list_elements(vals.pop().ok_or_else(|| run_error("all/any of nothing"))?)?;
            let truths = items
                .iter()
                .map(|v| match v {
                    IValue::Str(s) => Ok(!s.is_empty()),
                    v => truth(v),
                })
                .collect::<Result<Vec<bool>>>()?;
            one(IValue::Bool(if any { truths.iter().any(|&b| b) } else { truths.iter().all(|&b| b) }))
        }
        Builtin::GradEnabled => one(IValue::Bool(autograd::is_grad_enabled())),
        Builtin::RequiresGrad => {
            use autograd::TensorAutograd;
            one(IValue::Bool(tensor(vals.pop().unwrap_or(IValue::None), "prim::requires_grad")?.requires_grad()))
        }
        Builtin::IsCuda => {
            let t = tensor(vals.pop().unwrap_or(IValue::None), "prim::is_cuda")?;
            one(IValue::Bool(t.device().ty == c10::DeviceType::Cuda))
        }
        Builtin::DeviceTypeName => match vals.pop() {
            Some(IValue::Device(d)) => one(IValue::Str(d.ty.name().to_string())),
            other => Err(run_error(format!("prim::type of a {}", other.map_or("nothing", |v| v.kind())))),
        },
        Builtin::AutocastEnabled(cpu) => {
            let device = if cpu { c10::DeviceType::Cpu } else { c10::DeviceType::Cuda };
            one(IValue::Bool(aten::autocast::is_enabled(device)))
        }
        Builtin::IsNested => {
            tensor(vals.pop().unwrap_or(IValue::None), "prim::is_nested")?;
            one(IValue::Bool(false))
        }
        Builtin::DtypeIs(complex) => {
            let t = tensor(vals.pop().unwrap_or(IValue::None), "aten::is_floating_point")?;
            one(IValue::Bool(if complex { t.dtype().is_complex() } else { t.dtype().is_floating_point() }))
        }
        Builtin::Warn => {
            static SHOWN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
            let message = match vals.first() {
                Some(IValue::Str(s)) => s.clone(),
                other => format!("{other:?}"),
            };
            let mut shown = SHOWN.lock().unwrap_or_else(|e| e.into_inner());
            if !shown.contains(&message) {
                eprintln!("UserWarning: {message}");
                shown.push(message);
            }
            Ok(Vec::new())
        }
        Builtin::ListSlice => {
            let [list, start, end, step] =
                <[IValue; 4]>::try_from(vals).map_err(|_| run_error("slice takes a list, start, end and step"))?;
            let opt = |v: &IValue| match v {
                IValue::None => Ok(None),
                IValue::Int(i) => Ok(Some(*i)),
                other => Err(run_error(format!("a slice bound is an int or None, got {}", other.kind()))),
            };
            let (start, end) = (opt(&start)?, opt(&end)?);
            let step = match step {
                IValue::Int(0) => return Err(run_error("slice step cannot be zero")),
                IValue::Int(s) => s,
                other => return Err(run_error(format!("a slice step is an int, got {}", other.kind()))),
            };
            let picks = |len: usize| python_slice(len as i64, start, end, step);
            one(match list {
                IValue::IntList(v) => IValue::IntList(picks(v.len()).map(|i| v[i]).collect()),
                IValue::DoubleList(v) => IValue::DoubleList(picks(v.len()).map(|i| v[i]).collect()),
                IValue::BoolList(v) => IValue::BoolList(picks(v.len()).map(|i| v[i]).collect()),
                IValue::TensorList(v) => IValue::TensorList(picks(v.len()).map(|i| v[i].clone()).collect()),
                IValue::OptionalTensorList(v) => {
                    IValue::OptionalTensorList(picks(v.len()).map(|i| v[i].clone()).collect())
                }
                IValue::Tuple(v) => IValue::Tuple(picks(v.len()).map(|i| v[i].clone()).collect()),
                other => return Err(run_error(format!("slicing a {}", other.kind()))),
            })
        }
        Builtin::Numel => one(IValue::Int(tensor(vals.pop().unwrap_or(IValue::None), "aten::numel")?.numel())),
        Builtin::Not => one(IValue::Bool(!truth(&vals.pop().unwrap_or(IValue::None))?)),
        Builtin::Print => {
            let parts: Vec<String> = vals
                .iter()
                .map(|v| match v {
                    IValue::Tensor(t) => t.to_string(),
                    IValue::Str(s) => s.clone(),
                    other => format!("{other:?}"),
                })
                .collect();
            println!("{}", parts.join(" "));
            Ok(Vec::new())
        }
        Builtin::RaiseException => {
            let msg = match vals.first() {
                Some(IValue::Str(s)) => s.clone(),
                _ => "Exception".into(),
            };
            // `builtins.ValueError` → `ValueError: msg`, as Python prints an exception.
            match vals.get(1) {
                Some(IValue::Str(class)) => {
                    let class = class.rsplit('.').next().unwrap_or(class);
                    Err(run_error(format!("the graph raised {class}: {msg}")))
                }
                _ => Err(run_error(format!("the graph raised: {msg}"))),
            }
        }
        Builtin::Identity => one(vals.pop().unwrap_or(IValue::None)),
        Builtin::Uninitialized => one(IValue::None),
        Builtin::Is(negate) => {
            let [a, b] = <[IValue; 2]>::try_from(vals).map_err(|_| run_error("`is` takes two values"))?;
            one(IValue::Bool(same_object(&a, &b)? != negate))
        }
        Builtin::ValueEq(negate) => {
            let [a, b] = <[IValue; 2]>::try_from(vals).map_err(|_| run_error("`==` takes two values"))?;
            one(IValue::Bool(values_equal(&a, &b)? != negate))
        }
        Builtin::Append => {
            let [list, x] = <[IValue; 2]>::try_from(vals).map_err(|_| run_error("append takes a list and a value"))?;
            one(match (list, x) {
                (IValue::TensorList(mut v), IValue::Tensor(t)) => {
                    v.push(t);
                    IValue::TensorList(v)
                }
                (IValue::OptionalTensorList(mut v), x) => {
                    v.push(match x {
                        IValue::Tensor(t) => Some(t),
                        _ => None,
                    });
                    IValue::OptionalTensorList(v)
                }
                (IValue::IntList(mut v), x) => {
                    v.push(x.to_int("append", "el")?);
                    IValue::IntList(v)
                }
                (IValue::DoubleList(mut v), x) => {
                    v.push(as_f64(&x)?);
                    IValue::DoubleList(v)
                }
                (IValue::BoolList(mut v), x) => {
                    v.push(truth(&x)?);
                    IValue::BoolList(v)
                }
                // A generic list (`list_of`).
                (IValue::Tuple(mut v), x) => {
                    v.push(x);
                    IValue::Tuple(v)
                }
                (l, x) => return Err(run_error(format!("cannot append a {} to a {}", x.kind(), l.kind()))),
            })
        }
        Builtin::Format => {
            let mut it = vals.into_iter();
            let fmt = match it.next() {
                Some(IValue::Str(s)) => s,
                _ => return Err(run_error("format needs a format string")),
            };
            one(IValue::Str(format_fields(&fmt, it.collect())?))
        }
        Builtin::RangeLength => {
            let [lo, hi, step] = ints3(&vals, "__range_length")?;
            if step == 0 {
                return Err(run_error("range() arg 3 must not be zero"));
            }
            // In i128: `hi - lo` of two i64s may not fit an i64.
            let (lo, hi, step) = (lo as i128, hi as i128, step as i128);
            let n =
                if step > 0 { (hi - lo + step - 1).div_euclid(step) } else { (lo - hi - step - 1).div_euclid(-step) };
            one(IValue::Int(n.clamp(0, i64::MAX as i128) as i64))
        }
        Builtin::DeriveIndex => {
            let [k, lo, step] = ints3(&vals, "__derive_index")?;
            // Inside the range, so it fits; wrapping keeps a crafted graph from overflowing.
            one(IValue::Int(lo.wrapping_add(k.wrapping_mul(step))))
        }
        Builtin::Contains if matches!(vals.first(), Some(IValue::Dict(_))) => {
            let [IValue::Dict(entries), key] =
                <[IValue; 2]>::try_from(vals).map_err(|_| run_error("`in` takes two values"))?
            else {
                unreachable!("a dict")
            };
            one(IValue::Bool(entries.iter().any(|(k, _)| same_key(k, &key))))
        }
        Builtin::DictConstruct => {
            if !vals.len().is_multiple_of(2) {
                return Err(run_error("prim::DictConstruct takes keys and values in pairs"));
            }
            let mut entries: Vec<(IValue, IValue)> = Vec::with_capacity(vals.len() / 2);
            let mut it = vals.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                dict_set(&mut entries, k, v);
            }
            one(IValue::Dict(entries))
        }
        Builtin::DictList(part) => {
            let entries = dict_arg(vals.into_iter().next(), "aten::keys")?;
            let items: Vec<IValue> = match part {
                DictPart::Keys => entries.into_iter().map(|(k, _)| k).collect(),
                DictPart::Values => entries.into_iter().map(|(_, v)| v).collect(),
                DictPart::Items => entries.into_iter().map(|(k, v)| IValue::Tuple(vec![k, v])).collect(),
            };
            one(list_of(items, &schema_elem(list.unwrap_or(&JitType::tensor())))?)
        }
        Builtin::DictGet => {
            let mut it = vals.into_iter();
            let entries = dict_arg(it.next(), "aten::get")?;
            let key = it.next().ok_or_else(|| run_error("get() needs a key"))?;
            let default = it.next().unwrap_or(IValue::None);
            one(entries.into_iter().find(|(k, _)| same_key(k, &key)).map_or(default, |(_, v)| v))
        }
        Builtin::SetItem => {
            let [c, key, x] = <[IValue; 3]>::try_from(vals).map_err(|_| run_error("_set_item takes three values"))?;
            match c {
                IValue::Dict(mut entries) => {
                    dict_set(&mut entries, key, x);
                    one(IValue::Dict(entries))
                }
                l => {
                    let mut items = list_elements(l)?;
                    let k = list_index(&key, items.len())?;
                    items[k] = x;
                    one(list_of(items, &schema_elem(list.unwrap_or(&JitType::tensor())))?)
                }
            }
        }
        Builtin::Delete => {
            let [c, key] = <[IValue; 2]>::try_from(vals).map_err(|_| run_error("Delete takes two values"))?;
            match c {
                IValue::Dict(mut entries) => {
                    let at = entries.iter().position(|(k, _)| same_key(k, &key)).ok_or_else(|| key_error(&key))?;
                    entries.remove(at);
                    one(IValue::Dict(entries))
                }
                l => {
                    let mut items = list_elements(l)?;
                    let k = list_index(&key, items.len())?;
                    items.remove(k);
                    one(list_of(items, &schema_elem(list.unwrap_or(&JitType::tensor())))?)
                }
            }
        }
        Builtin::DictPop => {
            let mut it = vals.into_iter();
            let mut entries = dict_arg(it.next(), "aten::pop")?;
            let key = it.next().ok_or_else(|| run_error("pop() needs a key"))?;
            let v = match entries.iter().position(|(k, _)| same_key(k, &key)) {
                Some(at) => entries.remove(at).1,
                None => it.next().ok_or_else(|| key_error(&key))?,
            };
            Ok(vec![v, IValue::Dict(entries)])
        }
        Builtin::DictSetDefault => {
            let [d, key, x] = <[IValue; 3]>::try_from(vals).map_err(|_| run_error("setdefault takes three values"))?;
            let mut entries = dict_arg(Some(d), "aten::setdefault")?;
            let v = match entries.iter().find(|(k, _)| same_key(k, &key)) {
                Some((_, v)) => v.clone(),
                None => {
                    entries.push((key, x.clone()));
                    x
                }
            };
            Ok(vec![v, IValue::Dict(entries)])
        }
        Builtin::DictUpdate => {
            let mut it = vals.into_iter();
            let mut entries = dict_arg(it.next(), "aten::update")?;
            for (k, v) in dict_arg(it.next(), "aten::update")? {
                dict_set(&mut entries, k, v);
            }
            one(IValue::Dict(entries))
        }
        Builtin::DictClear => {
            dict_arg(vals.into_iter().next(), "aten::clear")?;
            one(IValue::Dict(Vec::new()))
        }
        Builtin::Contains => {
            let [list, x] = <[IValue; 2]>::try_from(vals).map_err(|_| run_error("`in` takes a list and a value"))?;
            let key = display(&x);
            let found = list_elements(list)?.iter().any(|item| match (item, &x) {
                (IValue::Tensor(a), IValue::Tensor(b)) => a.is_same(b),
                (a, b) if is_num(a) && is_num(b) => as_f64(a).ok() == as_f64(b).ok(),
                (a, _) => display(a) == key,
            });
            one(IValue::Bool(found))
        }
        Builtin::DtypeOf => one(IValue::Int(tensor(vals.pop().unwrap_or(IValue::None), "prim::dtype")?.dtype() as i64)),
        Builtin::DeviceOf => one(IValue::Device(tensor(vals.pop().unwrap_or(IValue::None), "prim::device")?.device())),
        Builtin::MinMax(max) => {
            let [a, b] = <[IValue; 2]>::try_from(vals).map_err(|_| run_error("min/max take two numbers"))?;
            let ints = matches!((&a, &b), (IValue::Int(_) | IValue::Bool(_), IValue::Int(_) | IValue::Bool(_)));
            let (x, y) = (as_f64(&a)?, as_f64(&b)?);
            let first = if max { x >= y } else { x <= y };
            let pick = if first { a } else { b };
            one(if ints { pick } else { IValue::Double(as_f64(&pick)?) })
        }
        Builtin::Arith(op) => one(arith_eval(op, &vals)?),
    }
}

/// A comparison or logical operator on two numbers of one kind (`zero` is that kind's 0).
fn compare<T: PartialOrd>(op: ArithOp, x: T, y: T, zero: T) -> bool {
    match op {
        ArithOp::Lt => x < y,
        ArithOp::Le => x <= y,
        ArithOp::Gt => x > y,
        ArithOp::Ge => x >= y,
        ArithOp::Eq => x == y,
        ArithOp::Ne => x != y,
        ArithOp::And => x != zero && y != zero,
        ArithOp::Or => x != zero || y != zero,
        other => unreachable!("{other:?} is arithmetic, not a comparison"),
    }
}

fn is_num(v: &IValue) -> bool {
    matches!(v, IValue::Int(_) | IValue::Double(_) | IValue::Bool(_))
}

/// Whether two dict keys are one (Python's `==` of strings and numbers, identity of tensors).
fn same_key(a: &IValue, b: &IValue) -> bool {
    match (a, b) {
        (IValue::Str(x), IValue::Str(y)) => x == y,
        (IValue::Tensor(x), IValue::Tensor(y)) => x.is_same(y),
        (IValue::Int(x), IValue::Int(y)) => x == y,
        (x, y) if is_num(x) && is_num(y) => as_f64(x).ok() == as_f64(y).ok(),
        _ => false,
    }
}

/// Python's `KeyError` for a missing key.
fn key_error(key: &IValue) -> Error {
    match key {
        IValue::Str(s) => run_error(format!("KeyError: '{s}'")),
        other => run_error(format!("KeyError: {}", display(other))),
    }
}

/// `d[k] = v` on the entries: replaced in place, or added at the end.
fn dict_set(entries: &mut Vec<(IValue, IValue)>, k: IValue, v: IValue) {
    match entries.iter_mut().find(|(e, _)| same_key(e, &k)) {
        Some(entry) => entry.1 = v,
        None => entries.push((k, v)),
    }
}

fn dict_arg(v: Option<IValue>, what: &str) -> Result<Vec<(IValue, IValue)>> {
    match v {
        Some(IValue::Dict(entries)) => Ok(entries),
        other => Err(run_error(format!("{what} of a {}", other.map_or("nothing", |v| v.kind())))),
    }
}

/// Python's index `i` into a list of `n` (negative from the end).
fn list_index(i: &IValue, n: usize) -> Result<usize> {
    let i = i.to_int("list index", "idx")?;
    let k = if i < 0 { i + n as i64 } else { i };
    if k < 0 || k >= n as i64 {
        return Err(run_error(format!("list index {i} out of range for {n} elements")));
    }
    Ok(k as usize)
}

fn ints3(vals: &[IValue], what: &str) -> Result<[i64; 3]> {
    let [a, b, c] = vals else { return Err(run_error(format!("{what} takes three ints"))) };
    Ok([a.to_int(what, "a")?, b.to_int(what, "b")?, c.to_int(what, "c")?])
}

/// How `format` and `print` show a value (Python's `str`).
fn display(v: &IValue) -> String {
    match v {
        IValue::None => "None".into(),
        IValue::Int(i) => i.to_string(),
        IValue::Double(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 => format!("{x:.1}"),
        IValue::Double(x) => x.to_string(),
        IValue::Bool(b) => if *b { "True" } else { "False" }.into(),
        IValue::Str(s) => s.clone(),
        IValue::Tensor(t) => t.to_string(),
        IValue::Tuple(items) => {
            let parts: Vec<String> = items.iter().map(display).collect();
            format!("({}{})", parts.join(", "), if parts.len() == 1 { "," } else { "" })
        }
        IValue::Dict(entries) => {
            let key = |k: &IValue| match k {
                IValue::Str(s) => format!("{s:?}"),
                other => display(other),
            };
            let parts: Vec<String> = entries.iter().map(|(k, v)| format!("{}: {}", key(k), display(v))).collect();
            format!("{{{}}}", parts.join(", "))
        }
        other => match list_elements(other.clone()) {
            Ok(items) => format!("[{}]", items.iter().map(display).collect::<Vec<_>>().join(", ")),
            Err(_) => format!("{other:?}"),
        },
    }
}

/// `"{}"` fields of `fmt` replaced by `args` in order (`{{`/`}}` are braces).
fn format_fields(fmt: &str, args: Vec<IValue>) -> Result<String> {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                for f in chars.by_ref() {
                    if f == '}' {
                        break;
                    }
                }
                let a = args
                    .next()
                    .ok_or_else(|| run_error(format!("format string {fmt:?} has more fields than arguments")))?;
                out.push_str(&display(a));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

fn arith_eval(op: ArithOp, vals: &[IValue]) -> Result<IValue> {
    use ArithOp::*;
    let ints = vals.iter().all(|v| matches!(v, IValue::Int(_) | IValue::Bool(_)));
    let iv = |v: &IValue| match v {
        IValue::Int(i) => *i,
        IValue::Bool(b) => *b as i64,
        _ => 0,
    };
    if op == Neg {
        let v = vals.first().ok_or_else(|| run_error("neg of nothing"))?;
        return Ok(if ints { IValue::Int(iv(v).wrapping_neg()) } else { IValue::Double(-as_f64(v)?) });
    }
    let [a, b] = vals else { return Err(run_error("arithmetic takes two numbers")) };
    if ints {
        let (x, y) = (iv(a), iv(b));
        let zero = || run_error("integer division or modulo by zero");
        return Ok(match op {
            Add => IValue::Int(x.wrapping_add(y)),
            Sub => IValue::Int(x.wrapping_sub(y)),
            Mul => IValue::Int(x.wrapping_mul(y)),
            Div => IValue::Double(x as f64 / y as f64),
            // Python's floor division and modulo: rounded toward negative infinity.
            FloorDiv | Remainder if y == 0 => return Err(zero()),
            FloorDiv => {
                let q = x.wrapping_div(y);
                IValue::Int(if x.wrapping_rem(y) != 0 && ((x < 0) != (y < 0)) { q - 1 } else { q })
            }
            Remainder => {
                let r = x.wrapping_rem(y);
                IValue::Int(if r != 0 && ((r < 0) != (y < 0)) { r + y } else { r })
            }
            // Python: a negative integer exponent gives a float.
            Pow if y < 0 => IValue::Double((x as f64).powf(y as f64)),
            Pow => IValue::Int(x.wrapping_pow(y.min(u32::MAX as i64) as u32)),
            cmp => IValue::Bool(compare(cmp, x, y, 0)),
        });
    }
    let (x, y) = (as_f64(a)?, as_f64(b)?);
    Ok(match op {
        Add => IValue::Double(x + y),
        Sub => IValue::Double(x - y),
        Mul => IValue::Double(x * y),
        Div => IValue::Double(x / y),
        FloorDiv => IValue::Double((x / y).floor()),
        Remainder => IValue::Double(x - (x / y).floor() * y),
        Pow => IValue::Double(x.powf(y)),
        cmp => IValue::Bool(compare(cmp, x, y, 0.0)),
    })
}

/// Python's `a is b` as far as values carry an identity: `None` is itself; two tensors are the
/// same object when they share their implementation, and a tensor is never a value of another
/// kind; lists and tuples of tensors are taken as the same when their elements are, one by
/// one (a graph does not keep the identity of the containers themselves); strings and numbers
/// compare by value (`x is "a"` is rare, and what Python gives there depends on interning).
fn same_object(a: &IValue, b: &IValue) -> Result<bool> {
    Ok(match (a, b) {
        (IValue::None, IValue::None) => true,
        (IValue::None, _) | (_, IValue::None) => false,
        (IValue::Tensor(x), IValue::Tensor(y)) => x.is_same(y),
        (IValue::Tensor(_), _) | (_, IValue::Tensor(_)) => false,
        (IValue::TensorList(x), IValue::TensorList(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(u, v)| u.is_same(v))
        }
        (IValue::OptionalTensorList(x), IValue::OptionalTensorList(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|(u, v)| match (u, v) {
                    (Some(u), Some(v)) => u.is_same(v),
                    (u, v) => u.is_none() && v.is_none(),
                })
        }
        (IValue::Tuple(x), IValue::Tuple(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for (u, v) in x.iter().zip(y) {
                if !same_object(u, v)? {
                    return Ok(false);
                }
            }
            true
        }
        (IValue::TensorList(_) | IValue::OptionalTensorList(_) | IValue::Tuple(_), _)
        | (_, IValue::TensorList(_) | IValue::OptionalTensorList(_) | IValue::Tuple(_)) => false,
        (x, y) => values_equal(x, y)?,
    })
}

/// Python's `==` of two non-tensor values, as TorchScript's `aten::eq.int_list`, `eq.str`, ...
/// give it: numbers by value whatever their kind (`1 == 1.0`, `True == 1`; `nan != nan`,
/// `0.0 == -0.0`), strings by value, lists and tuples element by element. A tensor inside has
/// no `==` that gives one bool: an error, as `bool()` of its elementwise result would be.
fn values_equal(a: &IValue, b: &IValue) -> Result<bool> {
    let number = |v: &IValue| match v {
        IValue::Int(i) => Some(*i as f64),
        IValue::Double(d) => Some(*d),
        IValue::Bool(x) => Some(f64::from(u8::from(*x))),
        _ => None,
    };
    // The elements of any list or tuple, as values.
    let items = |v: &IValue| -> Option<Vec<IValue>> {
        Some(match v {
            IValue::IntList(l) => l.iter().map(|&i| IValue::Int(i)).collect(),
            IValue::DoubleList(l) => l.iter().map(|&d| IValue::Double(d)).collect(),
            IValue::BoolList(l) => l.iter().map(|&x| IValue::Bool(x)).collect(),
            IValue::TensorList(l) => l.iter().cloned().map(IValue::Tensor).collect(),
            IValue::Tuple(l) => l.clone(),
            _ => return None,
        })
    };
    Ok(match (a, b) {
        (IValue::None, IValue::None) => true,
        (IValue::Str(x), IValue::Str(y)) => x == y,
        (IValue::Tensor(_), _) | (_, IValue::Tensor(_)) => {
            return Err(run_error("`==` of values holding tensors: compare the tensors with torch.equal"))
        }
        _ => {
            if let (Some(x), Some(y)) = (number(a), number(b)) {
                // Integers beyond 2^53 compare exactly.
                return Ok(match (a, b) {
                    (IValue::Int(i), IValue::Int(j)) => i == j,
                    _ => x == y,
                });
            }
            match (items(a), items(b)) {
                (Some(x), Some(y)) => {
                    if x.len() != y.len() {
                        return Ok(false);
                    }
                    for (u, v) in x.iter().zip(&y) {
                        if !values_equal(u, v)? {
                            return Ok(false);
                        }
                    }
                    true
                }
                _ => match (a, b) {
                    (IValue::ScalarType(x), IValue::ScalarType(y)) => x == y,
                    (IValue::Device(x), IValue::Device(y)) => x == y,
                    (IValue::Layout(x), IValue::Layout(y)) => x == y,
                    (IValue::MemoryFormat(x), IValue::MemoryFormat(y)) => x == y,
                    // Values of different kinds (`None == 1`, `"a" == [1]`) are unequal.
                    _ => false,
                },
            }
        }
    })
}
