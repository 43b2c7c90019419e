//! `Scalar`: a number passed to an operator that is not a tensor (`alpha=2`, `x * 3.5`).
//! It keeps its kind (bool, integer, floating) because the kind takes part in type promotion.

use std::fmt;

use crate::{Element, ScalarType};

/// A bool, integer or floating number argument.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// An integer (kept as i64, like Python's int).
    Int(i64),
    /// A floating value (kept as f64, like Python's float).
    Float(f64),
}

impl Scalar {
    /// The dtype this scalar has as a wrapped number: Bool, Int64 or Float64. (Promotion maps a
    /// wrapped Float64 to the default dtype.)
    pub const fn dtype(&self) -> ScalarType {
        match self {
            Scalar::Bool(_) => ScalarType::Bool,
            Scalar::Int(_) => ScalarType::I64,
            Scalar::Float(_) => ScalarType::F64,
        }
    }

    /// The value as f64.
    pub fn to_f64(&self) -> f64 {
        match *self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// The value as i64 (floats truncate toward zero).
    pub fn to_i64(&self) -> i64 {
        match *self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }

    /// The value as bool (non-zero is true).
    pub fn to_bool(&self) -> bool {
        match *self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }

    /// The value converted to an element type with that type's conversion rules.
    #[inline]
    pub fn to<T: Element>(&self) -> T {
        match *self {
            Scalar::Bool(b) => T::from_bool(b),
            Scalar::Int(i) => T::from_i64(i),
            Scalar::Float(f) => T::from_f64(f),
        }
    }

    /// True for a floating scalar.
    pub const fn is_floating_point(&self) -> bool {
        matches!(self, Scalar::Float(_))
    }

    /// True for an integer scalar (not bool).
    pub const fn is_integral(&self) -> bool {
        matches!(self, Scalar::Int(_))
    }

    /// True for a bool scalar.
    pub const fn is_bool(&self) -> bool {
        matches!(self, Scalar::Bool(_))
    }

    /// Builds a scalar of a tensor dtype's kind from an element.
    pub fn from_element<T: Element>(v: T) -> Scalar {
        if T::DTYPE == ScalarType::Bool {
            Scalar::Bool(v.to_bool())
        } else if T::DTYPE.is_floating_point() {
            Scalar::Float(v.to_f64())
        } else {
            Scalar::Int(v.to_i64())
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x:?}"),
        }
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Scalar {
            fn from(v: $t) -> Self { Scalar::Int(v as i64) }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32, isize, usize);

impl From<f32> for Scalar {
    fn from(v: f32) -> Self {
        Scalar::Float(v as f64)
    }
}
impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}
impl From<half::f16> for Scalar {
    fn from(v: half::f16) -> Self {
        Scalar::Float(v.to_f64())
    }
}
impl From<half::bf16> for Scalar {
    fn from(v: half::bf16) -> Self {
        Scalar::Float(v.to_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_conversions() {
        assert_eq!(Scalar::from(3).dtype(), ScalarType::I64);
        assert_eq!(Scalar::from(2.5f32).dtype(), ScalarType::F64);
        assert_eq!(Scalar::from(true).dtype(), ScalarType::Bool);
        assert_eq!(Scalar::Float(-2.7).to::<i32>(), -2);
        assert_eq!(Scalar::Int(3).to::<f32>(), 3.0);
        assert_eq!(Scalar::from_element(1.5f32), Scalar::Float(1.5));
        assert_eq!(Scalar::from_element(7u8), Scalar::Int(7));
        assert_eq!(Scalar::Float(1.0).to_string(), "1.0");
    }
}
