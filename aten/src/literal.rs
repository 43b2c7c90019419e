//! Tensors from Rust values, as `torch.tensor(data)` makes them from Python values: the
//! [`tensor!`](crate::tensor!) macro for nested literals and `Tensor::from(2.0f32)` for zero-dim
//! tensors.
//!
//! ```
//! use aten::{tensor, Tensor};
//! use c10::ScalarType;
//! assert_eq!(tensor![[1, 2], [3, 4]].unwrap().sizes(), &[2, 2]);
//! let x = Tensor::from(2.5f32);
//! assert_eq!((x.dim(), x.dtype(), x.item::<f32>().unwrap()), (0, ScalarType::F32, 2.5));
//! assert_eq!(Tensor::from(7i64).dtype(), ScalarType::I64);
//! assert_eq!(Tensor::from(2.0).dtype(), ScalarType::F64);
//! ```
//!
//! Note [Literal dtypes]: `torch.tensor` gives float32 for Python floats, int64 for Python ints
//! and bool for Python bools, and promotes mixed elements (`[1, 2.5]` is float32). A Rust
//! literal has no such default of its own: an unsuffixed `1.5` is typed `f64` and `1` is typed
//! `i32` by the compiler's fallback, exactly like a variable of those types. So `tensor!` looks
//! at each element's source text: an unsuffixed numeric literal (`1.5`, `-2`, `1e-3`, `0xff`)
//! counts as a Python number (float32 / int64), while a suffixed literal (`1.5f64`, `2i32`) or
//! any other expression (a variable, a call) keeps its Rust type's dtype (`f64` is float64).
//! The elements are then promoted as `result_type` promotes tensors and Python numbers: typed
//! elements are dimensioned tensors, literals are wrapped numbers ([`c10::ResultTypeState`]).
//! `tensor![1.0f64, 2.]` is float64, `tensor![1u8, 2]` uint8, `tensor![true, 2]` int64, and
//! `tensor![]` float32 of shape `[0]`. `Tensor::from(x)` has no source text to look at and always
//! keeps the Rust type (`Tensor::from(2.0)` is float64, `Tensor::from(2.0f32)` float32).
//!
//! Rejected: typing every float element float32 and every integer int64 whatever its Rust type
//! (simple, but `tensor![x]` for an `f64` `x` would silently lose precision); and taking the
//! nested arrays themselves (`[[1., 2.], [3.]]` is a type error in Rust, and ragged input must
//! be an error value, as `torch.tensor` raises it). The macro turns each bracketed level into a
//! [`Node::List`] instead, so the shape is checked at run time.

use c10::{Element, Error, Result, ResultTypeState, Scalar, ScalarType};

use crate::Tensor;

/// A tensor from a nested list of numbers, with `torch.tensor`'s shape and dtype inference:
/// floats give float32, integers int64 and bools bool, suffixed literals and typed values keep
/// their Rust type (see Note [Literal dtypes] in `aten/src/literal.rs`). Returns
/// `Result<Tensor>`: ragged input is an error value.
///
/// ```
/// use aten::tensor;
/// use c10::ScalarType;
/// let t = tensor![[1., 2.], [3., 4.]].unwrap();
/// assert_eq!(t.sizes(), &[2, 2]);
/// assert_eq!(t.dtype(), ScalarType::F32);
/// assert_eq!(t.to_string(), "tensor([[1., 2.],\n        [3., 4.]])");
/// assert_eq!(tensor![1, -2, 3].unwrap().dtype(), ScalarType::I64);
/// assert_eq!(tensor![true, false].unwrap().dtype(), ScalarType::Bool);
/// assert_eq!(tensor![1, 2.5].unwrap().dtype(), ScalarType::F32);
/// assert_eq!(tensor![1.0f64, 2.].unwrap().dtype(), ScalarType::F64);
/// // Ragged input: "expected sequence of length 2 at dim 1 (got 1)".
/// assert!(tensor![[1., 2.], [3.]].is_err());
/// // Elements may be expressions, and rows arrays or Vecs of their own type.
/// let row = vec![0.5f32, 1.5];
/// assert_eq!(tensor![row.clone(), row].unwrap().sizes(), &[2, 2]);
/// ```
#[macro_export]
macro_rules! tensor {
    ($($items:tt)*) => {
        $crate::literal::build($crate::__tensor_node!([$($items)*]))
    };
}

/// One level of a [`tensor!`](crate::tensor!) literal. Not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __tensor_node {
    // Every item is a bracketed list: a level of nesting, checked at run time.
    ([$([$($inner:tt)*]),+ $(,)?]) => {
        $crate::literal::Node::List(::std::vec![$($crate::__tensor_node!([$($inner)*])),+])
    };
    // Otherwise the items are expressions: numbers, or arrays and Vecs of numbers.
    ([$($e:expr),* $(,)?]) => {
        $crate::literal::Node::List(::std::vec![$(
            $crate::literal::leaf($e, const { $crate::literal::is_unsuffixed_number(::std::stringify!($e)) })
        ),*])
    };
}

/// A parsed [`tensor!`](crate::tensor!) literal: a number or a list of nodes.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// One element.
    Value {
        /// The value.
        value: Scalar,
        /// The Rust type's dtype.
        dtype: ScalarType,
        /// Whether it was an unsuffixed literal, which counts as a Python number (see Note
        /// [Literal dtypes]).
        literal: bool,
    },
    /// A list of elements or of lists.
    List(Vec<Node>),
}

/// A value that can be an element (or a row, for arrays and Vecs) of a
/// [`tensor!`](crate::tensor!) literal.
pub trait TensorLiteral {
    /// The value as a literal node.
    fn into_node(self) -> Node;
}

macro_rules! element_literal {
    ($($t:ty),*) => {$(
        impl TensorLiteral for $t {
            #[inline]
            fn into_node(self) -> Node {
                Node::Value { value: Scalar::from(self), dtype: <$t as Element>::DTYPE, literal: false }
            }
        }
    )*};
}
element_literal!(f64, f32, c10::f16, c10::bf16, i64, i32, i16, i8, u8, bool);

impl<T: TensorLiteral, const N: usize> TensorLiteral for [T; N] {
    fn into_node(self) -> Node {
        Node::List(self.into_iter().map(TensorLiteral::into_node).collect())
    }
}

impl<T: TensorLiteral> TensorLiteral for Vec<T> {
    fn into_node(self) -> Node {
        Node::List(self.into_iter().map(TensorLiteral::into_node).collect())
    }
}

impl<T: TensorLiteral + Clone> TensorLiteral for &[T] {
    fn into_node(self) -> Node {
        Node::List(self.iter().cloned().map(TensorLiteral::into_node).collect())
    }
}

/// An element of a [`tensor!`](crate::tensor!) literal; `literal` says whether its source text
/// was an unsuffixed number. Called by the macro.
#[doc(hidden)]
#[inline]
pub fn leaf<T: TensorLiteral>(v: T, literal: bool) -> Node {
    match v.into_node() {
        Node::Value { value, dtype, .. } => Node::Value { value, dtype, literal },
        list => list,
    }
}

/// Whether `text` is a numeric literal without a type suffix, optionally negated: `1`, `-2.5`,
/// `1e-3`, `1_000`, `0xff` (but not `1f32`, `2i64`, `x` or `1.0 + 2.0`). Evaluated at compile
/// time by [`tensor!`](crate::tensor!).
#[doc(hidden)]
pub const fn is_unsuffixed_number(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    if i < b.len() && b[i] == b'-' {
        i += 1;
    }
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    // 0x.., 0o.., 0b..: integer digits only (a suffix has a letter that is no hex digit, or
    // is written after `_`, which Rust accepts there too: `0xff_u8`; `0x1f32` has no suffix).
    if b[i] == b'0' && i + 1 < b.len() && matches!(b[i + 1], b'x' | b'o' | b'b') {
        i += 2;
        let start = i;
        while i < b.len() && (b[i].is_ascii_hexdigit() || b[i] == b'_') {
            i += 1;
        }
        return i == b.len() && i > start;
    }
    // Decimal: digits, an optional fraction, an optional exponent.
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// The tensor of a [`tensor!`](crate::tensor!) literal: the shape is read down the first
/// elements and every list is checked against it (`torch.tensor`'s `compute_sizes`), the dtype
/// is promoted over the elements (Note [Literal dtypes]).
pub fn build(root: Node) -> Result<Tensor> {
    let mut shape = Vec::new();
    let mut node = &root;
    while let Node::List(items) = node {
        shape.push(items.len() as i64);
        match items.first() {
            Some(first) => node = first,
            None => break,
        }
    }
    let mut values = Vec::new();
    let mut dtypes = ResultTypeState::default();
    collect(&root, 0, &shape, &mut values, &mut dtypes)?;
    let dtype = dtypes.result().unwrap_or(ScalarType::default_float());
    c10::dispatch_all_types!(dtype, T => {
        let data: Vec<T> = values
            .iter()
            .map(|v| match *v {
                Scalar::Bool(b) => T::from_bool(b),
                Scalar::Int(i) => T::from_i64(i),
                Scalar::Float(f) => T::from_f64(f),
            })
            .collect();
        Tensor::from_vec(data, &shape)
    })
}

fn collect(node: &Node, dim: usize, shape: &[i64], out: &mut Vec<Scalar>, dtypes: &mut ResultTypeState) -> Result<()> {
    match node {
        Node::List(items) => {
            let Some(&want) = shape.get(dim) else {
                return Err(Error::shape(
                    "tensor",
                    format!("expected a number at dim {dim} (got a sequence of length {})", items.len()),
                ));
            };
            if items.len() as i64 != want {
                return Err(Error::shape(
                    "tensor",
                    format!("expected sequence of length {want} at dim {dim} (got {})", items.len()),
                ));
            }
            items.iter().try_for_each(|item| collect(item, dim + 1, shape, out, dtypes))
        }
        Node::Value { value, dtype, literal } => {
            if let Some(want) = shape.get(dim) {
                return Err(Error::shape(
                    "tensor",
                    format!("expected sequence of length {want} at dim {dim} (got a number)"),
                ));
            }
            // An unsuffixed literal is a Python number: a wrapped number of int64 or float
            // (which ResultTypeState takes as the default dtype); a typed value is a tensor.
            let as_python = if dtype.is_floating_point() { ScalarType::F64 } else { ScalarType::I64 };
            if *literal {
                dtypes.update(as_python, 0, true);
            } else {
                dtypes.update(*dtype, 1, false);
            }
            out.push(*value);
            Ok(())
        }
    }
}

// Note [Literal dtypes]: a zero-dim tensor from a Rust number keeps the number's type.
macro_rules! tensor_from_number {
    ($($t:ty),*) => {$(
        impl From<$t> for Tensor {
            /// A zero-dim tensor holding the value, of the Rust type's dtype (`torch.tensor(v)`
            /// with an explicit dtype); see Note [Literal dtypes].
            #[inline]
            fn from(v: $t) -> Tensor {
                Tensor::scalar_tensor(v)
            }
        }
    )*};
}
tensor_from_number!(f64, f32, c10::f16, c10::bf16, i64, i32, i16, i8, u8, bool);
