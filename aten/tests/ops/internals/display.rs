//! Tests of `display`'s internals (moved out of the crate: Note [Tests outside aten]).

// Expected values are PyTorch's float32 outputs printed as doubles (exactly the f32 values).
#![allow(clippy::excessive_precision)]

use aten::display::*;
#[allow(unused_imports)]
use aten::{Generator, Tensor};
use c10::{bf16, f16};
#[allow(unused_imports)]
use c10::{Device, Element, MemoryFormat, Result, Scalar, ScalarType};
use smallvec::SmallVec;

fn t<T: Element>(v: Vec<T>, shape: &[i64]) -> Tensor {
    Tensor::from_vec(v, shape).unwrap()
}

fn s(t: &Tensor) -> String {
    t.to_string()
}

// Every expected string below is PyTorch 2.15's `str()` of the same tensor.

#[test]
fn basic_dtypes() {
    assert_eq!(s(&t(vec![1f32, 2., 3., 4.], &[2, 2])), "tensor([[1., 2.],\n        [3., 4.]])");
    assert_eq!(s(&t(vec![1i64, 2, 3], &[3])), "tensor([1, 2, 3])");
    assert_eq!(s(&t(vec![true, false], &[2])), "tensor([ True, False])");
    assert_eq!(s(&t(vec![1f64, 2.], &[2])), "tensor([1., 2.], dtype=torch.float64)");
    assert_eq!(s(&t(vec![1i32, 2], &[2])), "tensor([1, 2], dtype=torch.int32)");
    assert_eq!(s(&t(vec![1u8, 200], &[2])), "tensor([  1, 200], dtype=torch.uint8)");
    assert_eq!(s(&t(vec![-10i64, 5, 300], &[3])), "tensor([-10,   5, 300])");
    let h = t(vec![f16::from_f32(0.1), f16::from_f32(1.5)], &[2]);
    assert_eq!(s(&h), "tensor([0.1000, 1.5000], dtype=torch.float16)");
    let b = t(vec![bf16::from_f32(1.0), bf16::from_f32(2.5)], &[2]);
    assert_eq!(s(&b), "tensor([1.0000, 2.5000], dtype=torch.bfloat16)");
}

#[test]
fn zero_dim_and_empty() {
    assert_eq!(s(&Tensor::scalar_tensor(3.0f32)), "tensor(3.)");
    assert_eq!(s(&Tensor::scalar_tensor(2.5f32)), "tensor(2.5000)");
    assert_eq!(s(&Tensor::scalar_tensor(true)), "tensor(True)");
    assert_eq!(s(&Tensor::scalar_tensor(7i32)), "tensor(7, dtype=torch.int32)");
    assert_eq!(s(&t(Vec::<f32>::new(), &[0])), "tensor([])");
    assert_eq!(s(&t(Vec::<f32>::new(), &[0, 3])), "tensor([], size=(0, 3))");
    // Empty tensors name every dtype but float32, int64 included.
    assert_eq!(s(&t(Vec::<i64>::new(), &[0])), "tensor([], dtype=torch.int64)");
    assert_eq!(s(&t(Vec::<f64>::new(), &[2, 0])), "tensor([], size=(2, 0), dtype=torch.float64)");
}

#[test]
fn fixed_and_scientific_modes() {
    assert_eq!(s(&t(vec![-1.5f32, 0.25, 100.125], &[3])), "tensor([ -1.5000,   0.2500, 100.1250])");
    assert_eq!(s(&t(vec![1e-5f32, 1.0, 3.0], &[3])), "tensor([1.0000e-05, 1.0000e+00, 3.0000e+00])");
    assert_eq!(s(&t(vec![1e9f32, 2e9], &[2])), "tensor([1.0000e+09, 2.0000e+09])");
    assert_eq!(s(&t(vec![1f32, 10000.], &[2])), "tensor([1.0000e+00, 1.0000e+04])");
    assert_eq!(s(&t(vec![-1e-5f32, 12345.678], &[2])), "tensor([-1.0000e-05,  1.2346e+04])");
    assert_eq!(s(&t(vec![123456789f32], &[1])), "tensor([1.2346e+08])");
    assert_eq!(s(&t(vec![0.4963f32, 0.7682, 0.0885], &[3])), "tensor([0.4963, 0.7682, 0.0885])");
    assert_eq!(s(&t(vec![-0.0f32, 1.0], &[2])), "tensor([-0., 1.])");
}

#[test]
fn nan_and_inf() {
    let v = vec![1.5f32, f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
    assert_eq!(s(&t(v, &[4])), "tensor([1.5000,    nan,    inf,   -inf])");
    assert_eq!(s(&t(vec![0f32, f32::NAN, 2.], &[3])), "tensor([0., nan, 2.])");
    assert_eq!(s(&t(vec![0f32, f32::NAN], &[2])), "tensor([0., nan])");
}

#[test]
fn line_wrapping() {
    let v: Vec<f32> = (0..30).map(|i| i as f32 / 7.0).collect();
    assert_eq!(s(&t(v, &[30])), "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n        3.8571, 4.0000, 4.1429])");
    assert_eq!(s(&t((0..40i64).collect(), &[40])), "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n        36, 37, 38, 39])");
    let v: Vec<f32> = (0..60).map(|i| i as f32 / 7.0).collect();
    assert_eq!(s(&t(v, &[2, 30])), "tensor([[0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n         1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n         2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n         3.8571, 4.0000, 4.1429],\n        [4.2857, 4.4286, 4.5714, 4.7143, 4.8571, 5.0000, 5.1429, 5.2857, 5.4286,\n         5.5714, 5.7143, 5.8571, 6.0000, 6.1429, 6.2857, 6.4286, 6.5714, 6.7143,\n         6.8571, 7.0000, 7.1429, 7.2857, 7.4286, 7.5714, 7.7143, 7.8571, 8.0000,\n         8.1429, 8.2857, 8.4286]])");
    // The dtype suffix goes on the last line when it fits.
    let v: Vec<i16> = (0..25).map(|i| i * 1000).collect();
    assert_eq!(s(&t(v, &[25])), "tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,\n        10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000,\n        20000, 21000, 22000, 23000, 24000], dtype=torch.int16)");
}

#[test]
fn multi_dim_and_strided() {
    let v: Vec<f32> = (0..24).map(|i| i as f32).collect();
    assert_eq!(s(&t(v, &[2, 3, 4])), "tensor([[[ 0.,  1.,  2.,  3.],\n         [ 4.,  5.,  6.,  7.],\n         [ 8.,  9., 10., 11.]],\n\n        [[12., 13., 14., 15.],\n         [16., 17., 18., 19.],\n         [20., 21., 22., 23.]]])");
    // torch.arange(6).reshape(2, 3).t(): logical values, not memory order.
    let base = t((0..6i64).collect(), &[2, 3]);
    let tt = Tensor::from_storage(base.storage().clone(), &[3, 2], SmallVec::from_slice(&[1, 3]), 0, ScalarType::I64);
    assert_eq!(s(&tt), "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])");
}

#[test]
fn summarised() {
    let v: Vec<f32> = (0..2000).map(|i| i as f32).collect();
    assert_eq!(
        s(&t(v, &[2000])),
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"
    );
    assert_eq!(s(&t((0..10000i64).collect(), &[100, 100])), "tensor([[   0,    1,    2,  ...,   97,   98,   99],\n        [ 100,  101,  102,  ...,  197,  198,  199],\n        [ 200,  201,  202,  ...,  297,  298,  299],\n        ...,\n        [9700, 9701, 9702,  ..., 9797, 9798, 9799],\n        [9800, 9801, 9802,  ..., 9897, 9898, 9899],\n        [9900, 9901, 9902,  ..., 9997, 9998, 9999]])");
    assert_eq!(s(&t(vec![0f32; 1331], &[11, 11, 11])), "tensor([[[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]],\n\n        [[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]],\n\n        [[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]],\n\n        ...,\n\n        [[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]],\n\n        [[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]],\n\n        [[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]]])");
}

#[test]
fn helpers() {
    assert_eq!(py_tuple(&[5]), "(5,)");
    assert_eq!(py_tuple(&[]), "()");
    assert_eq!(py_tuple(&[2, 0]), "(2, 0)");
    assert_eq!(sci(-1.5e-300), "-1.5000e-300");
    assert_eq!(
        add_suffixes("tensor([1.]".into(), &["x".repeat(70)], 7),
        format!("tensor([1.],\n       {})", "x".repeat(70))
    );
}
