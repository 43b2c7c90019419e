//! `IValue` and `Stack`: the boxed calling convention. Arguments are pushed in schema order; a
//! boxed kernel pops them and pushes its returns. Used by fallbacks that see every operator, by
//! calls by schema name (the parity runner) and, later, by the JIT interpreter.

use c10::{Device, Error, Layout, MemoryFormat, Result, Scalar, ScalarType};

use crate::{Generator, Tensor};

/// One boxed value.
#[derive(Clone, Debug)]
pub enum IValue {
    /// `None` for any optional argument, or "no value".
    None,
    /// A tensor.
    Tensor(Tensor),
    /// A list of tensors (`Tensor[]`).
    TensorList(Vec<Tensor>),
    /// A list of optional tensors (`Tensor?[]`).
    OptionalTensorList(Vec<Option<Tensor>>),
    /// `int`, `SymInt`.
    Int(i64),
    /// `float`.
    Double(f64),
    /// `bool`.
    Bool(bool),
    /// `int[]`, `SymInt[]`.
    IntList(Vec<i64>),
    /// `float[]`.
    DoubleList(Vec<f64>),
    /// `bool[]`.
    BoolList(Vec<bool>),
    /// `str`.
    Str(String),
    /// `Scalar` (keeps its kind).
    Scalar(Scalar),
    /// `ScalarType`.
    ScalarType(ScalarType),
    /// `Layout`.
    Layout(Layout),
    /// `Device`.
    Device(Device),
    /// `MemoryFormat`.
    MemoryFormat(MemoryFormat),
    /// `Generator`.
    Generator(Generator),
    /// Several returns.
    Tuple(Vec<IValue>),
    /// A TorchScript `Dict[K, V]`: its entries in insertion order, as Python's dicts keep
    /// them (keys are strings, numbers or tensors; see `jit`'s Note [Dicts]).
    Dict(Vec<(IValue, IValue)>),
}

/// The boxed argument/return stack.
pub type Stack = Vec<IValue>;

fn mismatch(op: &str, arg: &str, want: &str, got: &IValue) -> Error {
    Error::BoxedArgument { op: op.to_string(), msg: format!("argument '{arg}': expected {want}, got {}", got.kind()) }
}

impl IValue {
    /// A short name of the variant, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            IValue::None => "None",
            IValue::Tensor(_) => "Tensor",
            IValue::TensorList(_) => "Tensor[]",
            IValue::OptionalTensorList(_) => "Tensor?[]",
            IValue::Int(_) => "int",
            IValue::Double(_) => "float",
            IValue::Bool(_) => "bool",
            IValue::IntList(_) => "int[]",
            IValue::DoubleList(_) => "float[]",
            IValue::BoolList(_) => "bool[]",
            IValue::Str(_) => "str",
            IValue::Scalar(_) => "Scalar",
            IValue::ScalarType(_) => "ScalarType",
            IValue::Layout(_) => "Layout",
            IValue::Device(_) => "Device",
            IValue::MemoryFormat(_) => "MemoryFormat",
            IValue::Generator(_) => "Generator",
            IValue::Tuple(_) => "tuple",
            IValue::Dict(_) => "Dict",
        }
    }

    /// How the profiler records this value with `record_shapes`: a tensor's sizes and C++
    /// element type (`float`), else PyTorch's classes (`Scalar` for numbers and enums,
    /// `ScalarList`, `TensorList`, the empty string for `None`).
    pub fn input_meta(&self) -> c10::record_function::InputMeta {
        use c10::record_function::InputMeta;
        let ty = match self {
            IValue::Tensor(t) => return InputMeta::tensor(t.sizes(), t.dtype()),
            IValue::None => return InputMeta::none(),
            IValue::TensorList(_) | IValue::OptionalTensorList(_) => "TensorList",
            IValue::Int(_)
            | IValue::Double(_)
            | IValue::Bool(_)
            | IValue::Scalar(_)
            | IValue::ScalarType(_)
            | IValue::Layout(_)
            | IValue::MemoryFormat(_) => "Scalar",
            IValue::IntList(_) | IValue::DoubleList(_) | IValue::BoolList(_) => "ScalarList",
            IValue::Str(_) => "String",
            IValue::Device(_) => "Device",
            IValue::Generator(_) => "Generator",
            IValue::Tuple(_) => "Tuple",
            IValue::Dict(_) => "GenericDict",
        };
        InputMeta { dims: Vec::new(), ty: ty.into() }
    }

    /// True for `None`.
    pub fn is_none(&self) -> bool {
        matches!(self, IValue::None)
    }

    /// The union of the key sets of the tensors in this value (dispatch-key extraction).
    pub fn key_set(&self) -> c10::DispatchKeySet {
        match self {
            IValue::Tensor(t) => t.key_set(),
            IValue::TensorList(v) => v.iter().fold(c10::DispatchKeySet::EMPTY, |s, t| s | t.key_set()),
            IValue::OptionalTensorList(v) => {
                v.iter().flatten().fold(c10::DispatchKeySet::EMPTY, |s, t| s | t.key_set())
            }
            // Note [Device arguments dispatch] (codegen).
            IValue::Device(d) => c10::DispatchKeySet::of_device(*d),
            _ => c10::DispatchKeySet::EMPTY,
        }
    }

    /// `Tensor` argument.
    pub fn to_tensor(&self, op: &str, arg: &str) -> Result<&Tensor> {
        match self {
            IValue::Tensor(t) => Ok(t),
            other => Err(mismatch(op, arg, "Tensor", other)),
        }
    }
    /// `Tensor?` argument.
    pub fn to_opt_tensor(&self, op: &str, arg: &str) -> Result<Option<&Tensor>> {
        match self {
            IValue::None => Ok(None),
            IValue::Tensor(t) => Ok(Some(t)),
            other => Err(mismatch(op, arg, "Tensor?", other)),
        }
    }
    /// `Tensor[]` argument.
    pub fn to_tensor_list(&self, op: &str, arg: &str) -> Result<&[Tensor]> {
        match self {
            IValue::TensorList(v) => Ok(v),
            other => Err(mismatch(op, arg, "Tensor[]", other)),
        }
    }
    /// `Tensor?[]` argument (a plain tensor list is accepted too).
    pub fn to_opt_tensor_list(&self, op: &str, arg: &str) -> Result<Vec<Option<Tensor>>> {
        match self {
            IValue::OptionalTensorList(v) => Ok(v.clone()),
            IValue::TensorList(v) => Ok(v.iter().cloned().map(Some).collect()),
            other => Err(mismatch(op, arg, "Tensor?[]", other)),
        }
    }
    /// `int` argument.
    pub fn to_int(&self, op: &str, arg: &str) -> Result<i64> {
        match self {
            IValue::Int(i) => Ok(*i),
            IValue::Scalar(Scalar::Int(i)) => Ok(*i),
            IValue::Bool(b) => Ok(*b as i64),
            other => Err(mismatch(op, arg, "int", other)),
        }
    }
    /// `int?` argument.
    pub fn to_opt_int(&self, op: &str, arg: &str) -> Result<Option<i64>> {
        if self.is_none() {
            Ok(None)
        } else {
            self.to_int(op, arg).map(Some)
        }
    }
    /// `float` argument (ints are accepted, as in Python).
    pub fn to_double(&self, op: &str, arg: &str) -> Result<f64> {
        match self {
            IValue::Double(d) => Ok(*d),
            IValue::Int(i) => Ok(*i as f64),
            IValue::Scalar(s) => Ok(s.to_f64()),
            other => Err(mismatch(op, arg, "float", other)),
        }
    }
    /// `float?` argument.
    pub fn to_opt_double(&self, op: &str, arg: &str) -> Result<Option<f64>> {
        if self.is_none() {
            Ok(None)
        } else {
            self.to_double(op, arg).map(Some)
        }
    }
    /// `bool` argument.
    pub fn to_bool(&self, op: &str, arg: &str) -> Result<bool> {
        match self {
            IValue::Bool(b) => Ok(*b),
            other => Err(mismatch(op, arg, "bool", other)),
        }
    }
    /// `bool?` argument.
    pub fn to_opt_bool(&self, op: &str, arg: &str) -> Result<Option<bool>> {
        if self.is_none() {
            Ok(None)
        } else {
            self.to_bool(op, arg).map(Some)
        }
    }
    /// `int[]`/`int[N]` argument; a single int is repeated `n` times for `int[N]` (PyTorch's
    /// `stride=1` meaning `[1, 1]`).
    pub fn to_int_list(&self, op: &str, arg: &str, n: Option<usize>) -> Result<Vec<i64>> {
        match self {
            IValue::IntList(v) => Ok(v.clone()),
            IValue::Int(i) => Ok(vec![*i; n.unwrap_or(1)]),
            other => Err(mismatch(op, arg, "int[]", other)),
        }
    }
    /// `int[]?` argument.
    pub fn to_opt_int_list(&self, op: &str, arg: &str, n: Option<usize>) -> Result<Option<Vec<i64>>> {
        if self.is_none() {
            Ok(None)
        } else {
            self.to_int_list(op, arg, n).map(Some)
        }
    }
    /// `float[]` argument.
    pub fn to_double_list(&self, op: &str, arg: &str) -> Result<Vec<f64>> {
        match self {
            IValue::DoubleList(v) => Ok(v.clone()),
            IValue::IntList(v) => Ok(v.iter().map(|&i| i as f64).collect()),
            IValue::Double(d) => Ok(vec![*d]),
            other => Err(mismatch(op, arg, "float[]", other)),
        }
    }
    /// `float[]?` argument.
    pub fn to_opt_double_list(&self, op: &str, arg: &str) -> Result<Option<Vec<f64>>> {
        if self.is_none() {
            Ok(None)
        } else {
            self.to_double_list(op, arg).map(Some)
        }
    }
    /// `bool[]` argument.
    pub fn to_bool_list(&self, op: &str, arg: &str) -> Result<Vec<bool>> {
        match self {
            IValue::BoolList(v) => Ok(v.clone()),
            other => Err(mismatch(op, arg, "bool[]", other)),
        }
    }
    /// `str` argument.
    pub fn to_str(&self, op: &str, arg: &str) -> Result<&str> {
        match self {
            IValue::Str(s) => Ok(s),
            other => Err(mismatch(op, arg, "str", other)),
        }
    }
    /// `str?` argument.
    pub fn to_opt_str(&self, op: &str, arg: &str) -> Result<Option<&str>> {
        if self.is_none() {
            Ok(None)
        } else {
            self.to_str(op, arg).map(Some)
        }
    }
    /// `Scalar` argument (plain ints, floats and bools are accepted).
    pub fn to_scalar(&self, op: &str, arg: &str) -> Result<Scalar> {
        match self {
            IValue::Scalar(s) => Ok(*s),
            IValue::Int(i) => Ok(Scalar::Int(*i)),
            IValue::Double(d) => Ok(Scalar::Float(*d)),
            IValue::Bool(b) => Ok(Scalar::Bool(*b)),
            other => Err(mismatch(op, arg, "Scalar", other)),
        }
    }
    /// `Scalar?` argument.
    pub fn to_opt_scalar(&self, op: &str, arg: &str) -> Result<Option<Scalar>> {
        if self.is_none() {
            Ok(None)
        } else {
            self.to_scalar(op, arg).map(Some)
        }
    }
    /// `ScalarType` argument.
    pub fn to_scalar_type(&self, op: &str, arg: &str) -> Result<ScalarType> {
        match self {
            IValue::ScalarType(s) => Ok(*s),
            other => Err(mismatch(op, arg, "ScalarType", other)),
        }
    }
    /// `ScalarType?` argument.
    pub fn to_opt_scalar_type(&self, op: &str, arg: &str) -> Result<Option<ScalarType>> {
        if self.is_none() {
            Ok(None)
        } else {
            self.to_scalar_type(op, arg).map(Some)
        }
    }
    /// `MemoryFormat` argument.
    pub fn to_memory_format(&self, op: &str, arg: &str) -> Result<MemoryFormat> {
        self.to_opt_memory_format(op, arg)?.ok_or_else(|| mismatch(op, arg, "MemoryFormat", self))
    }
    /// `Layout` argument.
    pub fn to_layout(&self, op: &str, arg: &str) -> Result<Layout> {
        self.to_opt_layout(op, arg)?.ok_or_else(|| mismatch(op, arg, "Layout", self))
    }
    /// `Device` argument.
    pub fn to_device(&self, op: &str, arg: &str) -> Result<Device> {
        self.to_opt_device(op, arg)?.ok_or_else(|| mismatch(op, arg, "Device", self))
    }
    /// `Layout?` argument.
    pub fn to_opt_layout(&self, op: &str, arg: &str) -> Result<Option<Layout>> {
        match self {
            IValue::None => Ok(None),
            IValue::Layout(l) => Ok(Some(*l)),
            other => Err(mismatch(op, arg, "Layout?", other)),
        }
    }
    /// `Device?` argument.
    pub fn to_opt_device(&self, op: &str, arg: &str) -> Result<Option<Device>> {
        match self {
            IValue::None => Ok(None),
            IValue::Device(d) => Ok(Some(*d)),
            other => Err(mismatch(op, arg, "Device?", other)),
        }
    }
    /// `MemoryFormat?` argument.
    pub fn to_opt_memory_format(&self, op: &str, arg: &str) -> Result<Option<MemoryFormat>> {
        match self {
            IValue::None => Ok(None),
            IValue::MemoryFormat(m) => Ok(Some(*m)),
            other => Err(mismatch(op, arg, "MemoryFormat?", other)),
        }
    }
    /// `Generator?` argument.
    pub fn to_opt_generator(&self, op: &str, arg: &str) -> Result<Option<&Generator>> {
        match self {
            IValue::None => Ok(None),
            IValue::Generator(g) => Ok(Some(g)),
            other => Err(mismatch(op, arg, "Generator?", other)),
        }
    }

    /// A returned tensor.
    pub fn into_tensor(self, op: &str) -> Result<Tensor> {
        match self {
            IValue::Tensor(t) => Ok(t),
            other => Err(mismatch(op, "return", "Tensor", &other)),
        }
    }
    /// A returned Scalar.
    pub fn into_scalar(self, op: &str) -> Result<Scalar> {
        self.to_scalar(op, "return")
    }
    /// A returned int.
    pub fn into_int(self, op: &str) -> Result<i64> {
        self.to_int(op, "return")
    }
    /// A returned float.
    pub fn into_double(self, op: &str) -> Result<f64> {
        self.to_double(op, "return")
    }
    /// A returned bool.
    pub fn into_bool(self, op: &str) -> Result<bool> {
        self.to_bool(op, "return")
    }
    /// A returned tensor list.
    pub fn into_tensor_list(self, op: &str) -> Result<Vec<Tensor>> {
        match self {
            IValue::TensorList(t) => Ok(t),
            other => Err(mismatch(op, "return", "Tensor[]", &other)),
        }
    }
}

/// Pops one return value of `op` from a boxed stack (an error if the kernel pushed too few).
pub fn pop_return(stack: &mut Stack, op: &str) -> Result<IValue> {
    stack.pop().ok_or_else(|| Error::BoxedArgument {
        op: op.to_string(),
        msg: "the kernel returned fewer values than the schema declares".into(),
    })
}

impl From<Tensor> for IValue {
    fn from(t: Tensor) -> Self {
        IValue::Tensor(t)
    }
}
impl From<&Tensor> for IValue {
    fn from(t: &Tensor) -> Self {
        IValue::Tensor(t.clone())
    }
}
impl From<&[Tensor]> for IValue {
    fn from(v: &[Tensor]) -> Self {
        IValue::TensorList(v.to_vec())
    }
}
impl From<Vec<Tensor>> for IValue {
    fn from(v: Vec<Tensor>) -> Self {
        IValue::TensorList(v)
    }
}
impl From<&[Option<Tensor>]> for IValue {
    fn from(v: &[Option<Tensor>]) -> Self {
        IValue::OptionalTensorList(v.to_vec())
    }
}
impl From<i64> for IValue {
    fn from(v: i64) -> Self {
        IValue::Int(v)
    }
}
impl From<f64> for IValue {
    fn from(v: f64) -> Self {
        IValue::Double(v)
    }
}
impl From<bool> for IValue {
    fn from(v: bool) -> Self {
        IValue::Bool(v)
    }
}
impl From<&[i64]> for IValue {
    fn from(v: &[i64]) -> Self {
        IValue::IntList(v.to_vec())
    }
}
impl From<&[f64]> for IValue {
    fn from(v: &[f64]) -> Self {
        IValue::DoubleList(v.to_vec())
    }
}
impl From<&[bool]> for IValue {
    fn from(v: &[bool]) -> Self {
        IValue::BoolList(v.to_vec())
    }
}
impl From<&str> for IValue {
    fn from(v: &str) -> Self {
        IValue::Str(v.to_string())
    }
}
impl From<Scalar> for IValue {
    fn from(v: Scalar) -> Self {
        IValue::Scalar(v)
    }
}
impl From<ScalarType> for IValue {
    fn from(v: ScalarType) -> Self {
        IValue::ScalarType(v)
    }
}
impl From<Layout> for IValue {
    fn from(v: Layout) -> Self {
        IValue::Layout(v)
    }
}
impl From<Device> for IValue {
    fn from(v: Device) -> Self {
        IValue::Device(v)
    }
}
impl From<MemoryFormat> for IValue {
    fn from(v: MemoryFormat) -> Self {
        IValue::MemoryFormat(v)
    }
}
impl From<&Generator> for IValue {
    fn from(v: &Generator) -> Self {
        IValue::Generator(v.clone())
    }
}
impl<T: Into<IValue>> From<Option<T>> for IValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(IValue::None, Into::into)
    }
}

impl IValue {
    /// A schema default (`Scalar alpha=1`, `int[2] stride=1`, `ScalarType? dtype=long`,
    /// `int reduction=Mean`) as the value a boxed call passes for the argument, for callers that
    /// fill in what the user left out (the Python front end's argument parser).
    pub fn from_default(d: &schema::DefaultValue, ty: &schema::Type) -> Result<IValue> {
        use schema::{DefaultValue as D, Type as T};
        let inner = match ty {
            T::Optional(inner) if *d != D::None => inner.as_ref(),
            t => t,
        };
        let bad = || Error::invalid("schema default", format!("default {d:?} for an argument of type {ty}"));
        Ok(match (d, inner) {
            (D::None, _) => IValue::None,
            (D::Bool(b), T::Scalar) => IValue::Scalar(Scalar::Bool(*b)),
            (D::Bool(b), _) => IValue::Bool(*b),
            (D::Int(i), T::Scalar) => IValue::Scalar(Scalar::Int(*i)),
            (D::Float(x), T::Scalar) => IValue::Scalar(Scalar::Float(*x)),
            (D::Int(i), T::Float) => IValue::Double(*i as f64),
            (D::Int(i), T::Int | T::SymInt) => IValue::Int(*i),
            (D::Float(x), T::Float) => IValue::Double(*x),
            (D::Int(i), T::List(e, Some(n))) if matches!(**e, T::Int | T::SymInt) => IValue::IntList(vec![*i; *n]),
            (D::Str(s), T::Str) => IValue::Str(s.clone()),
            (D::IntList(v), T::List(e, _)) if **e == T::Float => {
                IValue::DoubleList(v.iter().map(|&i| i as f64).collect())
            }
            (D::IntList(v), T::List(..)) => IValue::IntList(v.clone()),
            (D::FloatList(v), T::List(..)) => IValue::DoubleList(v.clone()),
            (D::BoolList(v), T::List(..)) => IValue::BoolList(v.clone()),
            (D::Ident(name), T::ScalarType) => IValue::ScalarType(ScalarType::from_name(name)?),
            (D::Ident(name), T::MemoryFormat) => IValue::MemoryFormat(match name.as_str() {
                "contiguous_format" => MemoryFormat::Contiguous,
                "preserve_format" => MemoryFormat::Preserve,
                "channels_last" => MemoryFormat::ChannelsLast,
                "channels_last_3d" => MemoryFormat::ChannelsLast3d,
                _ => return Err(bad()),
            }),
            (D::Ident(name), T::Layout) if name == "strided" => IValue::Layout(Layout::Strided),
            // `int reduction=Mean`: at::Reduction's values.
            (D::Ident(name), T::Int) => IValue::Int(match name.as_str() {
                "None" => 0,
                "Mean" => 1,
                "Sum" => 2,
                _ => return Err(bad()),
            }),
            _ => return Err(bad()),
        })
    }
}
