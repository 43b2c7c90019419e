//! `OpMath`: the type an element is computed in (PyTorch's `opmath_type`): f16 and bf16 compute
//! in f32 and round once when stored; every other type computes in itself.

use c10::{bf16, f16, Element};

/// Conversion between a storage type and its computation type.
pub trait OpMath: Element {
    /// The computation type.
    type Acc: Copy + Send + Sync;
    /// Widens to the computation type.
    fn to_acc(self) -> Self::Acc;
    /// Rounds back to the storage type.
    fn from_acc(a: Self::Acc) -> Self;
}

macro_rules! identity_opmath {
    ($($t:ty),*) => {$(
        impl OpMath for $t {
            type Acc = $t;
            #[inline(always)]
            fn to_acc(self) -> $t { self }
            #[inline(always)]
            fn from_acc(a: $t) -> $t { a }
        }
    )*};
}
identity_opmath!(f32, f64, u8, i8, i16, i32, i64, bool);

impl OpMath for f16 {
    type Acc = f32;
    #[inline(always)]
    fn to_acc(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn from_acc(a: f32) -> f16 {
        f16::from_f32(a)
    }
}

impl OpMath for bf16 {
    type Acc = f32;
    #[inline(always)]
    fn to_acc(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn from_acc(a: f32) -> bf16 {
        bf16::from_f32(a)
    }
}
