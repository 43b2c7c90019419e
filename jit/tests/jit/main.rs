//! The jit tests, one binary (each test file would otherwise link its own copy of aten).
mod export;
mod fusion;
mod interpreter;
mod load;
mod modules;
mod passes;
mod script;
mod shape_prop;
mod state_dict;
mod text;
mod trace;
mod write;

use aten::Tensor;

/// A seeded xorshift64 sequence (the corruption tests' fixed pseudo-random bytes).
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// A seeded normal tensor.
pub fn randn(shape: &[i64], seed: u64) -> Tensor {
    aten::manual_seed(seed);
    aten::ops::randn(shape, None, None, None, None).unwrap()
}

/// Bitwise equality of two float tensors (shape, dtype and every element).
pub fn assert_bit_identical(a: &Tensor, b: &Tensor) {
    assert_eq!(a.sizes(), b.sizes());
    assert_eq!(a.dtype(), b.dtype());
    let (x, y) = (
        a.contiguous().call().unwrap().to_vec::<f32>().unwrap(),
        b.contiguous().call().unwrap().to_vec::<f32>().unwrap(),
    );
    assert!(x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()), "{x:?} != {y:?}");
}
