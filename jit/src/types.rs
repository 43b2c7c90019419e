//! The types of graph values: tensors with what is known of their dtype, sizes, strides,
//! device and `requires_grad`, numbers, strings, lists, tuples and optionals. Printed and parsed
//! as PyTorch prints them (`Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)`, `int[]`,
//! `(Tensor, int)`, `Tensor?`).

use std::fmt;

use aten::Tensor;
use c10::{Device, ScalarType};

/// What is known of a tensor value. `None` fields are unknown; a tensor with nothing known
/// prints as `Tensor`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// The element type.
    pub dtype: Option<ScalarType>,
    /// The sizes (rank and extent of every dimension).
    pub sizes: Option<Vec<i64>>,
    /// The strides.
    pub strides: Option<Vec<i64>>,
    /// Whether the value requires grad.
    pub requires_grad: Option<bool>,
    /// The device.
    pub device: Option<Device>,
}

impl TensorType {
    /// Everything about `t` (what the tracer records for a value it sees).
    pub fn of(t: &Tensor) -> TensorType {
        TensorType {
            dtype: Some(t.dtype()),
            sizes: Some(t.sizes().to_vec()),
            strides: Some(t.strides().to_vec()),
            requires_grad: Some(autograd_requires_grad(t)),
            device: Some(t.device()),
        }
    }

    /// Whether nothing is known.
    pub fn is_unknown(&self) -> bool {
        *self == TensorType::default()
    }
}

fn autograd_requires_grad(t: &Tensor) -> bool {
    use autograd::TensorAutograd;
    t.requires_grad()
}

/// The type of a graph value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum JitType {
    /// A tensor.
    Tensor(TensorType),
    /// `int` (also dtypes, layouts and memory formats, as in PyTorch's IR).
    Int,
    /// `float`.
    Float,
    /// `bool`.
    Bool,
    /// `str`.
    Str,
    /// `NoneType`.
    None,
    /// `Device`.
    Device,
    /// `Scalar` (a number of any kind).
    Number,
    /// `Generator`.
    Generator,
    /// `T[]`.
    List(Box<JitType>),
    /// `(T1, T2, ...)`.
    Tuple(Vec<JitType>),
    /// `T?`.
    Optional(Box<JitType>),
    /// `Dict(K, V)` (Note [Dicts]).
    Dict(Box<JitType>, Box<JitType>),
}

impl JitType {
    /// A tensor of which nothing is known.
    pub fn tensor() -> JitType {
        JitType::Tensor(TensorType::default())
    }

    /// Whether this is a tensor type.
    pub fn is_tensor(&self) -> bool {
        matches!(self, JitType::Tensor(_))
    }

    /// The type without tensor details (`Float(2, 3)` → `Tensor`), recursively: what decides
    /// operator overloads and common subexpressions.
    pub fn erased(&self) -> JitType {
        match self {
            JitType::Tensor(_) => JitType::tensor(),
            JitType::List(t) => JitType::List(Box::new(t.erased())),
            JitType::Tuple(ts) => JitType::Tuple(ts.iter().map(JitType::erased).collect()),
            JitType::Optional(t) => JitType::Optional(Box::new(t.erased())),
            JitType::Dict(k, v) => JitType::Dict(Box::new(k.erased()), Box::new(v.erased())),
            other => other.clone(),
        }
    }
}

/// PyTorch's IR name of a dtype (`Float`, `Long`, ...).
pub fn dtype_ir_name(d: ScalarType) -> &'static str {
    d.cpp_name()
}

/// The dtype of an IR name.
pub fn dtype_from_ir_name(s: &str) -> Option<ScalarType> {
    ScalarType::ALL.iter().copied().find(|d| d.cpp_name() == s)
}

/// The dtype of PyTorch's integer code (`6` is `torch.float32`).
pub fn dtype_from_code(code: i64) -> Option<ScalarType> {
    ScalarType::ALL.iter().copied().find(|d| *d as i64 == code)
}

fn list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{x}")?;
    }
    Ok(())
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.dtype.map_or("Tensor", dtype_ir_name))?;
        if self.sizes.is_none() && self.strides.is_none() && self.requires_grad.is_none() && self.device.is_none() {
            return if self.dtype.is_some() { f.write_str("()") } else { Ok(()) };
        }
        f.write_str("(")?;
        let mut parts: Vec<String> = Vec::new();
        if let Some(s) = &self.sizes {
            parts.extend(s.iter().map(i64::to_string));
        }
        let complete = self.dtype.is_some() && self.requires_grad.is_some() && self.device.is_some();
        let zero_dim =
            self.sizes.as_ref().is_some_and(Vec::is_empty) && self.strides.as_ref().is_some_and(Vec::is_empty);
        if let Some(s) = self.strides.as_ref().filter(|_| !(complete && zero_dim)) {
            parts.push(format!("strides=[{}]", s.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")));
        }
        if let Some(r) = self.requires_grad {
            parts.push(format!("requires_grad={}", r as u8));
        }
        if let Some(d) = self.device {
            parts.push(format!("device={d}"));
        }
        list(f, &parts)?;
        f.write_str(")")
    }
}

impl fmt::Display for JitType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JitType::Tensor(t) => write!(f, "{t}"),
            JitType::Int => f.write_str("int"),
            JitType::Float => f.write_str("float"),
            JitType::Bool => f.write_str("bool"),
            JitType::Str => f.write_str("str"),
            JitType::None => f.write_str("NoneType"),
            JitType::Device => f.write_str("Device"),
            JitType::Number => f.write_str("Scalar"),
            JitType::Generator => f.write_str("Generator"),
            JitType::List(t) => write!(f, "{t}[]"),
            JitType::Tuple(ts) => {
                f.write_str("(")?;
                list(f, ts)?;
                f.write_str(")")
            }
            JitType::Optional(t) => write!(f, "{t}?"),
            JitType::Dict(k, v) => write!(f, "Dict({k}, {v})"),
        }
    }
}
