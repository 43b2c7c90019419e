//! `ScalarType` (dtype), the element traits that map Rust types to dtypes, and PyTorch's type
//! promotion: the 13x13 `promoteTypes` table and `result_type` with its three priority classes.

use std::fmt;

use half::{bf16, f16};

use crate::{Error, Result};

/// The element type of a tensor. The discriminants are PyTorch's `ScalarType` values.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ScalarType {
    /// `torch.uint8`
    U8 = 0,
    /// `torch.int8`
    I8 = 1,
    /// `torch.int16`
    I16 = 2,
    /// `torch.int32`
    I32 = 3,
    /// `torch.int64`
    I64 = 4,
    /// `torch.float16`
    F16 = 5,
    /// `torch.float32`
    F32 = 6,
    /// `torch.float64`
    F64 = 7,
    /// `torch.complex64` (`cfloat`): two float32s, real part first.
    C64 = 9,
    /// `torch.complex128` (`cdouble`): two float64s, real part first.
    C128 = 10,
    /// `torch.bool`
    Bool = 11,
    /// `torch.bfloat16`
    BF16 = 15,
}

impl ScalarType {
    /// Every dtype, in PyTorch's enum order.
    pub const ALL: [ScalarType; 12] = [
        ScalarType::U8,
        ScalarType::I8,
        ScalarType::I16,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::F16,
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::C64,
        ScalarType::C128,
        ScalarType::Bool,
        ScalarType::BF16,
    ];

    /// The real dtypes (every dtype but the complex ones), in PyTorch's enum order.
    pub const REAL: [ScalarType; 10] = [
        ScalarType::U8,
        ScalarType::I8,
        ScalarType::I16,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::F16,
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::Bool,
        ScalarType::BF16,
    ];

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            ScalarType::U8 | ScalarType::I8 | ScalarType::Bool => 1,
            ScalarType::I16 | ScalarType::F16 | ScalarType::BF16 => 2,
            ScalarType::I32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::F64 | ScalarType::C64 => 8,
            ScalarType::C128 => 16,
        }
    }

    /// True for complex64 and complex128.
    pub const fn is_complex(self) -> bool {
        matches!(self, ScalarType::C64 | ScalarType::C128)
    }

    /// `toRealValueType`: the dtype of a complex dtype's parts (complex64 -> float32); any
    /// other dtype is returned as it is.
    pub const fn to_real(self) -> ScalarType {
        match self {
            ScalarType::C64 => ScalarType::F32,
            ScalarType::C128 => ScalarType::F64,
            t => t,
        }
    }

    /// `toComplexType`: the complex dtype whose parts are this floating dtype (float32 and
    /// the half types -> complex64, float64 -> complex128). `None` for the other real dtypes.
    pub const fn to_complex(self) -> Option<ScalarType> {
        match self {
            ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 | ScalarType::C64 => Some(ScalarType::C64),
            ScalarType::F64 | ScalarType::C128 => Some(ScalarType::C128),
            _ => None,
        }
    }

    /// True for F16, BF16, F32, F64.
    pub const fn is_floating_point(self) -> bool {
        matches!(self, ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 | ScalarType::F64)
    }

    /// True for the integer types; `include_bool` decides whether Bool counts.
    pub const fn is_integral(self, include_bool: bool) -> bool {
        match self {
            ScalarType::U8 | ScalarType::I8 | ScalarType::I16 | ScalarType::I32 | ScalarType::I64 => true,
            ScalarType::Bool => include_bool,
            _ => false,
        }
    }

    /// True for the signed types (every floating and complex type and the signed integers).
    pub const fn is_signed(self) -> bool {
        !matches!(self, ScalarType::U8 | ScalarType::Bool)
    }

    /// PyTorch's Python name: `float32`, `int64`, `bool`, ...
    pub const fn name(self) -> &'static str {
        match self {
            ScalarType::U8 => "uint8",
            ScalarType::I8 => "int8",
            ScalarType::I16 => "int16",
            ScalarType::I32 => "int32",
            ScalarType::I64 => "int64",
            ScalarType::F16 => "float16",
            ScalarType::F32 => "float32",
            ScalarType::F64 => "float64",
            ScalarType::C64 => "complex64",
            ScalarType::C128 => "complex128",
            ScalarType::Bool => "bool",
            ScalarType::BF16 => "bfloat16",
        }
    }

    /// PyTorch's legacy name (`Float`, `Long`, ...), as in `torch.FloatTensor` and
    /// `CPUFloatType`.
    pub const fn legacy_name(self) -> &'static str {
        match self {
            ScalarType::F32 => "Float",
            ScalarType::F64 => "Double",
            ScalarType::F16 => "Half",
            ScalarType::BF16 => "BFloat16",
            ScalarType::I64 => "Long",
            ScalarType::I32 => "Int",
            ScalarType::I16 => "Short",
            ScalarType::I8 => "Char",
            ScalarType::U8 => "Byte",
            ScalarType::C64 => "ComplexFloat",
            ScalarType::C128 => "ComplexDouble",
            ScalarType::Bool => "Bool",
        }
    }

    /// The C++ name of the element type as `caffe2::TypeMeta` prints it (`float`, `long int`,
    /// `c10::Half`): PyTorch's bound errors and the profiler's "Input type" use it.
    pub const fn type_meta_name(self) -> &'static str {
        match self {
            ScalarType::U8 => "unsigned char",
            ScalarType::I8 => "signed char",
            ScalarType::I16 => "short int",
            ScalarType::I32 => "int",
            ScalarType::I64 => "long int",
            ScalarType::F16 => "c10::Half",
            ScalarType::BF16 => "c10::BFloat16",
            ScalarType::F32 => "float",
            ScalarType::F64 => "double",
            ScalarType::C64 => "c10::complex<float>",
            ScalarType::C128 => "c10::complex<double>",
            ScalarType::Bool => "bool",
        }
    }

    /// PyTorch's C++ name (`Float`, `Long`, ...), used in error messages.
    pub const fn cpp_name(self) -> &'static str {
        match self {
            ScalarType::U8 => "Byte",
            ScalarType::I8 => "Char",
            ScalarType::I16 => "Short",
            ScalarType::I32 => "Int",
            ScalarType::I64 => "Long",
            ScalarType::F16 => "Half",
            ScalarType::F32 => "Float",
            ScalarType::F64 => "Double",
            ScalarType::C64 => "ComplexFloat",
            ScalarType::C128 => "ComplexDouble",
            ScalarType::Bool => "Bool",
            ScalarType::BF16 => "BFloat16",
        }
    }

    /// Parses the Python names (`float32`, `float`, `int64`, `long`, `half`, ...).
    pub fn from_name(name: &str) -> Result<ScalarType> {
        let name = name.strip_prefix("torch.").unwrap_or(name);
        Ok(match name {
            "uint8" => ScalarType::U8,
            "int8" => ScalarType::I8,
            "int16" | "short" => ScalarType::I16,
            "int32" | "int" => ScalarType::I32,
            "int64" | "long" => ScalarType::I64,
            "float16" | "half" => ScalarType::F16,
            "float32" | "float" => ScalarType::F32,
            "float64" | "double" => ScalarType::F64,
            "complex64" | "cfloat" => ScalarType::C64,
            "complex128" | "cdouble" => ScalarType::C128,
            "bool" => ScalarType::Bool,
            "bfloat16" => ScalarType::BF16,
            _ => return Err(Error::invalid("dtype", format!("unknown dtype name '{name}'"))),
        })
    }

    /// The default floating dtype (`torch.get_default_dtype()`): float32.
    pub const fn default_float() -> ScalarType {
        ScalarType::F32
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.cpp_name())
    }
}

/// Index of a dtype in PyTorch's promotion table (`u1 i1 i2 i4 i8 f2 f4 f8 c2 c4 c8 b1 bf`).
/// The complex32 (`c2`) row is kept so the table is PyTorch's literally; no dtype of ours is it.
const fn promo_index(t: ScalarType) -> usize {
    match t {
        ScalarType::U8 => 0,
        ScalarType::I8 => 1,
        ScalarType::I16 => 2,
        ScalarType::I32 => 3,
        ScalarType::I64 => 4,
        ScalarType::F16 => 5,
        ScalarType::F32 => 6,
        ScalarType::F64 => 7,
        ScalarType::C64 => 9,
        ScalarType::C128 => 10,
        ScalarType::Bool => 11,
        ScalarType::BF16 => 12,
    }
}

// Table cells. C2 is complex32, which we do not have; C4/C8 are complex64/complex128.
#[derive(Copy, Clone)]
enum P {
    U1,
    I1,
    I2,
    I4,
    I8,
    F2,
    F4,
    F8,
    C2,
    C4,
    C8,
    B1,
    BF,
}

/// PyTorch's promotion table (`c10/core/ScalarType.cpp`), rows and columns in `promo_index` order.
#[rustfmt::skip]
const PROMOTE: [[P; 13]; 13] = {
    use P::*;
    [
        /* u1 */ [U1, I2, I2, I4, I8, F2, F4, F8, C2, C4, C8, U1, BF],
        /* i1 */ [I2, I1, I2, I4, I8, F2, F4, F8, C2, C4, C8, I1, BF],
        /* i2 */ [I2, I2, I2, I4, I8, F2, F4, F8, C2, C4, C8, I2, BF],
        /* i4 */ [I4, I4, I4, I4, I8, F2, F4, F8, C2, C4, C8, I4, BF],
        /* i8 */ [I8, I8, I8, I8, I8, F2, F4, F8, C2, C4, C8, I8, BF],
        /* f2 */ [F2, F2, F2, F2, F2, F2, F4, F8, C2, C4, C8, F2, F4],
        /* f4 */ [F4, F4, F4, F4, F4, F4, F4, F8, C4, C4, C8, F4, F4],
        /* f8 */ [F8, F8, F8, F8, F8, F8, F8, F8, C8, C8, C8, F8, F8],
        /* c2 */ [C2, C2, C2, C2, C2, C2, C4, C8, C2, C4, C8, C2, C4],
        /* c4 */ [C4, C4, C4, C4, C4, C4, C4, C8, C4, C4, C8, C4, C4],
        /* c8 */ [C8, C8, C8, C8, C8, C8, C8, C8, C8, C8, C8, C8, C8],
        /* b1 */ [U1, I1, I2, I4, I8, F2, F4, F8, C2, C4, C8, B1, BF],
        /* bf */ [BF, BF, BF, BF, BF, F4, F4, F8, C4, C4, C8, BF, BF],
    ]
};

/// `promoteTypes(a, b)`: the smallest dtype both can be converted to without losing category.
pub const fn promote_types(a: ScalarType, b: ScalarType) -> ScalarType {
    if a as u8 == b as u8 {
        return a;
    }
    match PROMOTE[promo_index(a)][promo_index(b)] {
        P::U1 => ScalarType::U8,
        P::I1 => ScalarType::I8,
        P::I2 => ScalarType::I16,
        P::I4 => ScalarType::I32,
        P::I8 => ScalarType::I64,
        P::F2 => ScalarType::F16,
        P::F4 => ScalarType::F32,
        P::F8 => ScalarType::F64,
        P::B1 => ScalarType::Bool,
        P::BF => ScalarType::BF16,
        P::C4 => ScalarType::C64,
        P::C8 => ScalarType::C128,
        // complex32 is only the promotion of complex32 (a row no dtype of ours has) or of half
        // with a complex32; the nearest dtype we have keeps the category.
        P::C2 => ScalarType::C64,
    }
}

/// `canCast(from, to)`: PyTorch's same-kind rule used for in-place and `out=` outputs
/// (complex cannot go to a real dtype, floating cannot go to integral, nothing but bool can go
/// to bool).
pub const fn can_cast(from: ScalarType, to: ScalarType) -> bool {
    if from.is_complex() && !to.is_complex() {
        return false;
    }
    if from.is_floating_point() && to.is_integral(false) {
        return false;
    }
    if !matches!(from, ScalarType::Bool) && matches!(to, ScalarType::Bool) {
        return false;
    }
    true
}

/// The three priority classes of `result_type` (`ResultTypeState` in PyTorch): dimensioned
/// tensors, zero-dim tensors and wrapped numbers (Rust scalars). `None` is PyTorch's Undefined.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ResultTypeState {
    /// Promotion of every tensor with `dim() > 0`.
    pub dim_result: Option<ScalarType>,
    /// Promotion of every zero-dim tensor that is not a wrapped number.
    pub zero_result: Option<ScalarType>,
    /// Promotion of every wrapped number (a floating one counts as the default dtype).
    pub wrapped_result: Option<ScalarType>,
}

fn promote_skip_undefined(a: Option<ScalarType>, b: ScalarType) -> Option<ScalarType> {
    Some(match a {
        None => b,
        Some(a) => promote_types(a, b),
    })
}

impl ResultTypeState {
    /// Adds one tensor operand, described by its dtype, rank and wrapped-number flag.
    pub fn update(&mut self, dtype: ScalarType, dim: usize, wrapped_number: bool) {
        if wrapped_number {
            // A Python float becomes the default dtype, not float64.
            // A Python complex becomes the default complex dtype (complex64).
            let t = if dtype.is_floating_point() {
                ScalarType::default_float()
            } else if dtype.is_complex() {
                ScalarType::C64
            } else {
                dtype
            };
            self.wrapped_result = promote_skip_undefined(self.wrapped_result, t);
        } else if dim > 0 {
            self.dim_result = promote_skip_undefined(self.dim_result, dtype);
        } else {
            self.zero_result = promote_skip_undefined(self.zero_result, dtype);
        }
    }

    /// Adds a scalar argument (a wrapped number).
    pub fn update_scalar(&mut self, s: &crate::Scalar) {
        self.update(s.dtype(), 0, true);
    }

    /// The result dtype: `combine(dim, combine(zero, wrapped))`. `None` when nothing was added.
    pub fn result(&self) -> Option<ScalarType> {
        combine(self.dim_result, combine(self.zero_result, self.wrapped_result))
    }
}

/// A lower-priority class wins only when it is of a higher category (bool < int < float <
/// complex).
fn combine(hi: Option<ScalarType>, lo: Option<ScalarType>) -> Option<ScalarType> {
    let Some(h) = hi else { return lo };
    let Some(l) = lo else { return hi };
    if h.is_complex() {
        return hi;
    }
    if l.is_complex() {
        // A floating higher class keeps its precision: float64[3] * complex64 zero-dim is
        // complex128; an integral one takes the complex dtype as it is.
        return if h.is_floating_point() { h.to_complex() } else { lo };
    }
    if h.is_floating_point() {
        return hi;
    }
    if h == ScalarType::Bool || l.is_floating_point() {
        return Some(promote_types(h, l));
    }
    hi
}

/// Rust element types that a tensor can hold. The conversions follow C++ `static_cast`
/// semantics as PyTorch's CPU kernels do: float to integer truncates toward zero, integer
/// narrowing wraps, anything non-zero is `true`.
pub trait Element: Copy + Send + Sync + 'static + Default + PartialEq + PartialOrd + fmt::Debug {
    /// The dtype of this element type.
    const DTYPE: ScalarType;
    /// Value as f64 (exact for every type but i64 beyond 2^53).
    fn to_f64(self) -> f64;
    /// Value as i64 (floats truncate toward zero).
    fn to_i64(self) -> i64;
    /// Value as bool (non-zero is true; NaN is true).
    fn to_bool(self) -> bool;
    /// From f64 with this type's conversion rule.
    fn from_f64(v: f64) -> Self;
    /// From i64 with this type's conversion rule (wrapping for narrower integers).
    fn from_i64(v: i64) -> Self;
    /// From bool (0 or 1).
    fn from_bool(v: bool) -> Self;

    /// Converts between element types with PyTorch's rules.
    #[inline(always)]
    fn cast<T: Element>(self) -> T {
        if T::DTYPE == ScalarType::Bool {
            T::from_bool(self.to_bool())
        } else if T::DTYPE.is_floating_point() || Self::DTYPE.is_floating_point() {
            T::from_f64(self.to_f64())
        } else {
            T::from_i64(self.to_i64())
        }
    }
}

macro_rules! int_element {
    ($t:ty, $dt:ident) => {
        impl Element for $t {
            const DTYPE: ScalarType = ScalarType::$dt;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self != 0
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                // C++ casts through the integer: truncate, then wrap to the width.
                (v as i64) as $t
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                v as $t
            }
        }
    };
}
int_element!(u8, U8);
int_element!(i8, I8);
int_element!(i16, I16);
int_element!(i32, I32);
int_element!(i64, I64);

macro_rules! float_element {
    ($t:ty, $dt:ident) => {
        impl Element for $t {
            const DTYPE: ScalarType = ScalarType::$dt;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self != 0.0
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                v as u8 as $t
            }
        }
    };
}
float_element!(f32, F32);
float_element!(f64, F64);

macro_rules! half_element {
    ($t:ty, $dt:ident) => {
        impl Element for $t {
            const DTYPE: ScalarType = ScalarType::$dt;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self.to_f64()
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self.to_f32() as i64
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self.to_f32() != 0.0
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                // PyTorch converts through float; rounding f64->f32->half can differ from a
                // direct rounding only in double-rounding corner cases, and matches PyTorch.
                <$t>::from_f32(v as f32)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                <$t>::from_f32(v as f32)
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                <$t>::from_f32(v as u8 as f32)
            }
        }
    };
}
half_element!(f16, F16);
half_element!(bf16, BF16);

impl Element for bool {
    const DTYPE: ScalarType = ScalarType::Bool;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        v
    }
}

/// Calls `$body` with `$T` bound to the Rust element type of a runtime real dtype. The one place
/// that turns a `ScalarType` into a type; use it instead of hand-written per-dtype matches.
/// A complex dtype has no [`Element`] type (complex numbers are not ordered): for one, the macro
/// returns `Err(Error::not_implemented_in(..))` from the enclosing function, PyTorch's
/// `"..." not implemented for 'ComplexFloat'` (see [`dispatch_complex_types`]).
///
/// ```
/// use c10::{dispatch_all_types, Error, Result, ScalarType};
/// fn element_size(dtype: ScalarType) -> Result<usize> {
///     Ok(dispatch_all_types!(dtype, T => std::mem::size_of::<T>()))
/// }
/// assert_eq!(element_size(ScalarType::F16).unwrap(), 2);
/// let e = element_size(ScalarType::C64).unwrap_err();
/// assert!(matches!(e, Error::UnsupportedDtype { ref op, dtype: ScalarType::C64 } if op == "element_size"));
/// ```
#[macro_export]
macro_rules! dispatch_all_types {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::ScalarType::U8 => {
                type $T = u8;
                $body
            }
            $crate::ScalarType::I8 => {
                type $T = i8;
                $body
            }
            $crate::ScalarType::I16 => {
                type $T = i16;
                $body
            }
            $crate::ScalarType::I32 => {
                type $T = i32;
                $body
            }
            $crate::ScalarType::I64 => {
                type $T = i64;
                $body
            }
            $crate::ScalarType::F16 => {
                type $T = $crate::f16;
                $body
            }
            $crate::ScalarType::BF16 => {
                type $T = $crate::bf16;
                $body
            }
            $crate::ScalarType::F32 => {
                type $T = f32;
                $body
            }
            $crate::ScalarType::F64 => {
                type $T = f64;
                $body
            }
            $crate::ScalarType::Bool => {
                type $T = bool;
                $body
            }
            $crate::ScalarType::C64 | $crate::ScalarType::C128 => {
                fn here() {}
                return Err($crate::Error::not_implemented_in(::std::any::type_name_of_val(&here), $dtype).into());
            }
        }
    };
}

/// Calls `$body` with `$R` bound to the real type of a complex dtype's parts (`f32` for
/// complex64, `f64` for complex128); the element type is `num_complex::Complex<$R>`. Any other
/// dtype returns the `not implemented for` error from the enclosing function.
#[macro_export]
macro_rules! dispatch_complex_types {
    ($dtype:expr, $R:ident => $body:expr) => {
        match $dtype {
            $crate::ScalarType::C64 => {
                type $R = f32;
                $body
            }
            $crate::ScalarType::C128 => {
                type $R = f64;
                $body
            }
            other => {
                fn here() {}
                return Err($crate::Error::not_implemented_in(::std::any::type_name_of_val(&here), other).into());
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScalarType::*;

    #[test]
    fn table_notable_entries() {
        assert_eq!(promote_types(U8, I8), I16);
        assert_eq!(promote_types(U8, I64), I64);
        assert_eq!(promote_types(Bool, F16), F16);
        assert_eq!(promote_types(Bool, I32), I32);
        assert_eq!(promote_types(F16, BF16), F32);
        assert_eq!(promote_types(BF16, I64), BF16);
        assert_eq!(promote_types(I32, F16), F16);
        assert_eq!(promote_types(F32, F64), F64);
        assert_eq!(promote_types(F64, C64), C128);
        assert_eq!(promote_types(I64, C64), C64);
        assert_eq!(promote_types(BF16, C128), C128);
        for a in ScalarType::ALL {
            assert_eq!(promote_types(a, a), a);
            for b in ScalarType::ALL {
                assert_eq!(promote_types(a, b), promote_types(b, a), "{a} {b}");
            }
        }
    }

    fn rt(ops: &[(ScalarType, usize, bool)]) -> ScalarType {
        let mut s = ResultTypeState::default();
        for &(t, d, w) in ops {
            s.update(t, d, w);
        }
        s.result().unwrap()
    }

    #[test]
    fn result_type_worked_cases() {
        // int32[3] + 2.5 -> float32
        assert_eq!(rt(&[(I32, 1, false), (F64, 0, true)]), F32);
        // int32[3] + int64 zero-dim -> int32
        assert_eq!(rt(&[(I32, 1, false), (I64, 0, false)]), I32);
        // int32[3] + float64 zero-dim -> float64
        assert_eq!(rt(&[(I32, 1, false), (F64, 0, false)]), F64);
        // float32[3] + float64 zero-dim -> float32
        assert_eq!(rt(&[(F32, 1, false), (F64, 0, false)]), F32);
        // bool[3] + 5 -> int64
        assert_eq!(rt(&[(Bool, 1, false), (I64, 0, true)]), I64);
        // float16[3] + 2.5 stays float16
        assert_eq!(rt(&[(F16, 1, false), (F64, 0, true)]), F16);
        // zero-dim only: promoted among themselves, above wrapped ints
        assert_eq!(rt(&[(I16, 0, false), (I64, 0, true)]), I16);
        // a wrapped float with only zero-dim ints -> default dtype
        assert_eq!(rt(&[(I64, 0, false), (F64, 0, true)]), F32);
        // uint8[3] + int8 zero-dim stays uint8 (same category)
        assert_eq!(rt(&[(U8, 1, false), (I8, 0, false)]), U8);
    }

    #[test]
    fn casts_follow_cpp() {
        assert_eq!((-1.7f32).cast::<i32>(), -1);
        assert_eq!(2.9f64.cast::<u8>(), 2);
        assert_eq!(300i64.cast::<u8>(), 44);
        assert!(0.1f32.cast::<bool>());
        assert_eq!(true.cast::<f32>(), 1.0);
        assert_eq!(1.5f32.cast::<f16>(), f16::from_f32(1.5));
        assert_eq!(i64::MAX.cast::<i64>(), i64::MAX);
        assert_eq!(bf16::from_f32(3.0).cast::<i64>(), 3);
        assert!(!can_cast(F32, I64));
        assert!(can_cast(I64, F32));
        assert!(!can_cast(I64, Bool));
        assert!(can_cast(Bool, U8));
    }

    #[test]
    fn names_round_trip() {
        for t in ScalarType::ALL {
            assert_eq!(ScalarType::from_name(t.name()).unwrap(), t);
        }
        assert_eq!(ScalarType::from_name("cfloat").unwrap(), C64);
        assert!(ScalarType::from_name("complex32").is_err());
    }
}
