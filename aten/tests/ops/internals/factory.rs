//! Tests of `native::factory`'s internals (moved out of the crate: Note [Tests outside aten]).

// Expected values are PyTorch's float32 outputs printed as doubles (exactly the f32 values).
#![allow(clippy::excessive_precision)]

use aten::native::factory::*;
#[allow(unused_imports)]
use aten::{Generator, Tensor};
use c10::{bf16, f16};
#[allow(unused_imports)]
use c10::{Device, Element, MemoryFormat, Result, Scalar, ScalarType};
use smallvec::SmallVec;

fn err_msg<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

#[test]
fn empty_and_strides() {
    let t = empty_memory_format(&[2, 3], None, None, None, None, None).unwrap();
    assert_eq!((t.sizes(), t.strides(), t.dtype()), (&[2i64, 3][..], &[3i64, 1][..], ScalarType::F32));
    let cl = empty_memory_format(&[2, 3, 4, 5], None, None, None, None, Some(MemoryFormat::ChannelsLast)).unwrap();
    assert_eq!(cl.strides(), &[60, 1, 15, 3]);
    let cl0 = empty_memory_format(&[2, 0, 3, 3], None, None, None, None, Some(MemoryFormat::ChannelsLast)).unwrap();
    assert_eq!(cl0.strides(), &[0, 1, 0, 0]);
    assert_eq!(
        err_msg(empty_memory_format(&[2, 3], None, None, None, None, Some(MemoryFormat::ChannelsLast))),
        "empty: required rank 4 tensor to use channels_last format"
    );
    assert_eq!(
        err_msg(empty_memory_format(&[2], None, None, None, None, Some(MemoryFormat::Preserve))),
        "empty: unsupported memory format Preserve"
    );
    assert_eq!(
        err_msg(empty_memory_format(&[-1, 2], None, None, None, None, None)),
        "empty: Trying to create tensor with negative dimension -1: [-1, 2]"
    );
    let s = empty_strided(&[2, 3], &[1, 2], Some(ScalarType::F64), None, None, None).unwrap();
    assert_eq!((s.strides(), s.dtype()), (&[1i64, 2][..], ScalarType::F64));
    assert_eq!(
        err_msg(empty_strided(&[2, 3], &[1], None, None, None, None)),
        "empty_strided: dimensionality of sizes (2) must match dimensionality of strides (1)"
    );
    assert!(empty_strided(&[2, 3], &[1, -2], None, None, None, None).is_err());
    assert!(empty_memory_format(&[2], None, None, Some(Device::cuda(0)), None, None).is_err());
    assert!(zeros(&[2], None, None, None, Some(true)).is_err());
}

#[test]
fn zeros_ones_full_infer_dtypes() {
    let z = zeros(&[2, 2], None, None, None, None).unwrap();
    assert_eq!((z.dtype(), z.to_vec::<f32>().unwrap()), (ScalarType::F32, vec![0.0; 4]));
    assert_eq!(err_msg(zeros(&[-1, 2], None, None, None, None)), "zeros: Dimension size must be non-negative.");
    let o = ones(&[3], Some(ScalarType::I32), None, None, None).unwrap();
    assert_eq!(o.to_vec::<i32>().unwrap(), vec![1, 1, 1]);
    let f = full(&[2, 3], Scalar::Float(1.5), None, None, None, None).unwrap();
    assert_eq!((f.dtype(), f.to_vec::<f32>().unwrap()), (ScalarType::F32, vec![1.5; 6]));
    let fi = full(&[2], Scalar::Int(3), None, None, None, None).unwrap();
    assert_eq!((fi.dtype(), fi.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![3, 3]));
    let fb = full(&[2], Scalar::Bool(true), None, None, None, None).unwrap();
    assert_eq!((fb.dtype(), fb.to_vec::<bool>().unwrap()), (ScalarType::Bool, vec![true, true]));
    let ft = full(&[2], Scalar::Float(3.7), Some(ScalarType::I32), None, None, None).unwrap();
    assert_eq!(ft.to_vec::<i32>().unwrap(), vec![3, 3]);
    assert_eq!(
        err_msg(full(&[2], Scalar::Int(300), Some(ScalarType::U8), None, None, None)),
        "fill_: value cannot be converted to type uint8_t without overflow"
    );
    let h = Tensor::full(&[1], 2.5).dtype(ScalarType::F16).call().unwrap();
    assert_eq!(h.to_vec::<f16>().unwrap(), vec![f16::from_f32(2.5)]);
    assert_eq!(Tensor::ones(&[2]).dtype(ScalarType::Bool).call().unwrap().to_vec::<bool>().unwrap(), vec![true; 2]);
    assert_eq!(Tensor::zeros(&[0, 3]).dtype(ScalarType::F32).call().unwrap().numel(), 0);
}

#[test]
fn fill_checks_overflow_like_c10() {
    let t = |dt| empty_memory_format(&[2], Some(dt), None, None, None, None).unwrap();
    assert_eq!(fill_scalar_(&t(ScalarType::U8), Scalar::Int(-1)).unwrap().to_vec::<u8>().unwrap(), vec![255; 2]);
    assert_eq!(fill_scalar_(&t(ScalarType::U8), Scalar::Int(-200)).unwrap().to_vec::<u8>().unwrap(), vec![56; 2]);
    assert!(fill_scalar_(&t(ScalarType::U8), Scalar::Float(-1.0)).is_err());
    assert!(fill_scalar_(&t(ScalarType::Bool), Scalar::Float(1e39)).unwrap().to_vec::<bool>().unwrap()[0]);
    assert_eq!(
        err_msg(fill_scalar_(&t(ScalarType::I32), Scalar::Float(f64::NAN))),
        "fill_: value cannot be converted to type int without overflow"
    );
    assert_eq!(
        err_msg(fill_scalar_(&t(ScalarType::F16), Scalar::Int(70000))),
        "fill_: value cannot be converted to type c10::Half without overflow"
    );
    assert!(fill_scalar_(&t(ScalarType::F16), Scalar::Float(f64::INFINITY)).is_ok());
    assert!(fill_scalar_(&t(ScalarType::F32), Scalar::Float(1e39)).is_err());
    assert!(fill_scalar_(&t(ScalarType::F64), Scalar::Float(1e39)).is_ok());
    assert_eq!(fill_scalar_(&t(ScalarType::I32), Scalar::Float(-2.7)).unwrap().to_vec::<i32>().unwrap(), vec![-2; 2]);
}

#[test]
fn fill_writes_strided_views_and_zero() {
    // A transposed (non-contiguous) view of a 2x3 buffer: fill must reach every element.
    let base = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap();
    let t = Tensor::from_storage(base.storage().clone(), &[3, 2], SmallVec::from_slice(&[1, 3]), 0, ScalarType::F32);
    fill_scalar_(&t, Scalar::Float(4.0)).unwrap();
    assert_eq!(base.to_vec::<f32>().unwrap(), vec![4.0; 6]);
    assert_eq!(t.version(), 0, "fill_ itself bumps nothing");
    // A strided view that covers every other element.
    let every_other =
        Tensor::from_storage(base.storage().clone(), &[3], SmallVec::from_slice(&[2]), 1, ScalarType::F32);
    zero_(&every_other).unwrap();
    assert_eq!(base.to_vec::<f32>().unwrap(), vec![4.0, 0.0, 4.0, 0.0, 4.0, 0.0]);
    let r = zero_(&base).unwrap();
    assert!(r.is_same(&base));
    assert_eq!(base.to_vec::<f32>().unwrap(), vec![0.0; 6]);
}

#[test]
fn arange_values_dtypes_and_errors() {
    let a = arange(Scalar::Int(5), None, None, None, None).unwrap();
    assert_eq!((a.dtype(), a.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![0, 1, 2, 3, 4]));
    let b = arange_start_step(Scalar::Int(0), Scalar::Int(10), Scalar::Int(3), None, None, None, None).unwrap();
    assert_eq!(b.to_vec::<i64>().unwrap(), vec![0, 3, 6, 9]);
    let c =
        arange_start_step(Scalar::Float(0.0), Scalar::Float(1.0), Scalar::Float(0.25), None, None, None, None).unwrap();
    assert_eq!((c.dtype(), c.to_vec::<f32>().unwrap()), (ScalarType::F32, vec![0.0, 0.25, 0.5, 0.75]));
    let d = arange_start_step(Scalar::Int(10), Scalar::Int(0), Scalar::Int(-3), None, None, None, None).unwrap();
    assert_eq!(d.to_vec::<i64>().unwrap(), vec![10, 7, 4, 1]);
    let e = arange_start(Scalar::Float(0.5), Scalar::Int(3), None, None, None, None).unwrap();
    assert_eq!(e.to_vec::<f32>().unwrap(), vec![0.5, 1.5, 2.5]);
    let f = arange_start(Scalar::Bool(true), Scalar::Int(3), None, None, None, None).unwrap();
    assert_eq!((f.dtype(), f.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![1, 2]));
    // -1 .. 1 step 0.3 has 7 elements computed in double.
    let g = arange_start_step(Scalar::Int(-1), Scalar::Int(1), Scalar::Float(0.3), None, None, None, None).unwrap();
    assert_eq!(g.numel(), 7);
    assert_eq!(g.to_vec::<f32>().unwrap()[6], 0.8f32);
    // PyTorch quirks for integer dtypes: the step truncates in the accumulation type while the
    // length comes from the original scalars.
    let h =
        arange_start_step(Scalar::Int(0), Scalar::Int(5), Scalar::Float(1.5), Some(ScalarType::I32), None, None, None)
            .unwrap();
    assert_eq!(h.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3]);
    let u = arange_start(Scalar::Int(-1), Scalar::Int(2), Some(ScalarType::U8), None, None, None).unwrap();
    assert_eq!(u.to_vec::<u8>().unwrap(), vec![255, 0, 1]);
    let hf =
        arange_start_step(Scalar::Int(0), Scalar::Int(1), Scalar::Float(0.1), Some(ScalarType::F16), None, None, None)
            .unwrap();
    let expect: Vec<f16> =
        [0.0, 0.1, 0.2, 0.3, 0.3999, 0.5, 0.6001, 0.7002, 0.7998, 0.8999].iter().map(|&x| f16::from_f32(x)).collect();
    assert_eq!(hf.to_vec::<f16>().unwrap(), expect);

    let st = |s, e, st| arange_start_step(s, e, st, None, None, None, None);
    assert_eq!(err_msg(st(Scalar::Int(0), Scalar::Int(10), Scalar::Int(0))), "arange: step must be nonzero");
    assert_eq!(
        err_msg(st(Scalar::Int(10), Scalar::Int(0), Scalar::Int(1))),
        "arange: upper bound and lower bound inconsistent with step sign"
    );
    assert_eq!(
        err_msg(st(Scalar::Int(0), Scalar::Float(f64::INFINITY), Scalar::Int(1))),
        "arange: unsupported range: 0 -> inf"
    );
    assert_eq!(
        err_msg(st(Scalar::Int(0), Scalar::Float(1e20), Scalar::Float(1e-30))),
        "arange: invalid size, possible overflow?"
    );
    assert_eq!(
        err_msg(arange(Scalar::Int(5), Some(ScalarType::Bool), None, None, None)),
        "arange_cpu: \"arange_cpu\" not implemented for 'Bool'"
    );
    assert_eq!(
        err_msg(arange_start_step(
            Scalar::Int(0),
            Scalar::Int(5),
            Scalar::Float(0.5),
            Some(ScalarType::I32),
            None,
            None,
            None
        )),
        "arange: step must be nonzero"
    );
    assert_eq!(Tensor::arange(3).call().unwrap().to_vec::<i64>().unwrap(), vec![0, 1, 2]);
}

#[test]
fn linspace_values_and_errors() {
    let l = linspace(Scalar::Float(0.0), Scalar::Float(1.0), 5, None, None, None, None).unwrap();
    assert_eq!((l.dtype(), l.to_vec::<f32>().unwrap()), (ScalarType::F32, vec![0.0, 0.25, 0.5, 0.75, 1.0]));
    let l7 = linspace(Scalar::Int(-2), Scalar::Int(3), 7, None, None, None, None).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(l7[0], -2.0);
    assert_eq!(l7[6], 3.0);
    assert!((l7[1] - -1.1666666).abs() < 1e-6);
    let li = linspace(Scalar::Int(0), Scalar::Int(10), 4, Some(ScalarType::I64), None, None, None).unwrap();
    assert_eq!(li.to_vec::<i64>().unwrap(), vec![0, 3, 6, 10]);
    let l8 = linspace(Scalar::Int(3), Scalar::Int(-2), 8, Some(ScalarType::I8), None, None, None).unwrap();
    assert_eq!(l8.to_vec::<i8>().unwrap(), vec![3, 2, 1, 0, 0, 0, -1, -2]);
    let one = linspace(Scalar::Int(0), Scalar::Int(1), 1, None, None, None, None).unwrap();
    assert_eq!(one.to_vec::<f32>().unwrap(), vec![0.0]);
    assert_eq!(linspace(Scalar::Int(0), Scalar::Int(1), 0, None, None, None, None).unwrap().numel(), 0);
    assert_eq!(
        err_msg(linspace(Scalar::Int(0), Scalar::Int(1), -1, None, None, None, None)),
        "linspace: number of steps must be non-negative"
    );
    assert!(linspace(Scalar::Int(0), Scalar::Int(1), 5, Some(ScalarType::Bool), None, None, None).is_err());
    assert!(linspace(Scalar::Int(0), Scalar::Int(300), 3, Some(ScalarType::U8), None, None, None).is_err());
    let b = linspace(Scalar::Int(0), Scalar::Int(1), 3, Some(ScalarType::BF16), None, None, None).unwrap();
    assert_eq!(b.to_vec::<bf16>().unwrap()[1], bf16::from_f32(0.5));
}

#[test]
fn ranges_match_pytorch_bits() {
    // Values from PyTorch 2.15 where a naive `start + i * step` differs in the last bit; see
    // Note [Kernel FMA] and Note [Vectorised fill emulation].
    let f = linspace(Scalar::Float(-3.0), Scalar::Float(7.7), 16, None, None, None, None).unwrap();
    assert_eq!(f.to_vec::<f32>().unwrap()[3], -0.860_000_07_f32);
    let b = linspace(Scalar::Float(-3.0), Scalar::Float(7.7), 5000, Some(ScalarType::BF16), None, None, None).unwrap();
    assert_eq!(b.to_vec::<f64>().unwrap()[539], -1.8515625);
    let h = linspace(Scalar::Float(-3.0), Scalar::Float(7.7), 5000, Some(ScalarType::F16), None, None, None).unwrap();
    assert_eq!(h.to_vec::<f64>().unwrap()[1398], -0.007904052734375);
    let d = arange_start_step(
        Scalar::Float(0.0),
        Scalar::Float(100.0),
        Scalar::Float(0.3),
        Some(ScalarType::F64),
        None,
        None,
        None,
    )
    .unwrap()
    .to_vec::<f64>()
    .unwrap();
    assert_eq!((d.len(), d[13], d[14], d[23]), (334, 3.8999999999999995, 4.199999999999999, 6.9));
    let a = arange_start_step(Scalar::Float(-3.0), Scalar::Float(7.7), Scalar::Float(0.013), None, None, None, None)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!((a.len(), a[11], a[13]), (824, -2.856_999_9_f32, -2.830_999_9_f32));
}

#[test]
fn eye_variants() {
    let e = eye(3, None, None, None, None).unwrap();
    assert_eq!(e.to_vec::<f32>().unwrap(), vec![1., 0., 0., 0., 1., 0., 0., 0., 1.]);
    let r = eye_m(2, 3, Some(ScalarType::I32), None, None, None).unwrap();
    assert_eq!((r.sizes(), r.to_vec::<i32>().unwrap()), (&[2i64, 3][..], vec![1, 0, 0, 0, 1, 0]));
    let b = eye_m(3, 2, Some(ScalarType::Bool), None, None, None).unwrap();
    assert_eq!(b.to_vec::<bool>().unwrap(), vec![true, false, false, true, false, false]);
    assert_eq!(err_msg(eye(-1, None, None, None, None)), "eye: n must be greater or equal to 0, got -1");
    assert_eq!(err_msg(eye_m(2, -1, None, None, None, None)), "eye: m must be greater or equal to 0, got -1");
    assert_eq!(eye(0, None, None, None, None).unwrap().sizes(), &[0, 0]);
}

#[test]
fn like_ops_preserve_layout() {
    let base = Tensor::from_vec((0..24).map(|x| x as f32).collect(), &[4, 6]).unwrap();
    // Transposed: dense, so strides are kept.
    let t = Tensor::from_storage(base.storage().clone(), &[6, 4], SmallVec::from_slice(&[1, 6]), 0, ScalarType::F32);
    let z = zeros_like(&t, None, None, None, None, None).unwrap();
    assert_eq!((z.sizes(), z.strides()), (&[6i64, 4][..], &[1i64, 6][..]));
    assert_eq!(z.to_vec::<f32>().unwrap(), vec![0.0; 24]);
    // Every other column: not dense, gets dense strides in the same order.
    let s = Tensor::from_storage(base.storage().clone(), &[4, 3], SmallVec::from_slice(&[6, 2]), 0, ScalarType::F32);
    assert_eq!(empty_like(&s, None, None, None, None, None).unwrap().strides(), &[3, 1]);
    // Transposed and strided: keeps the transposed order.
    let ts = Tensor::from_storage(base.storage().clone(), &[3, 4], SmallVec::from_slice(&[2, 6]), 0, ScalarType::F32);
    assert_eq!(empty_like(&ts, None, None, None, None, None).unwrap().strides(), &[1, 3]);
    // Expanded (stride 0): ambiguous order, row-major result.
    let ex = Tensor::from_storage(base.storage().clone(), &[4, 3], SmallVec::from_slice(&[0, 1]), 0, ScalarType::F32);
    assert_eq!(empty_like(&ex, None, None, None, None, None).unwrap().strides(), &[3, 1]);
    // An explicit format wins.
    let c = empty_like(&t, None, None, None, None, Some(MemoryFormat::Contiguous)).unwrap();
    assert_eq!(c.strides(), &[4, 1]);
    let o = ones_like(&t, Some(ScalarType::I64), None, None, None, None).unwrap();
    assert_eq!((o.dtype(), o.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![1; 24]));
    let f = full_like(&base, Scalar::Int(7), None, None, None, None, None).unwrap();
    assert_eq!((f.dtype(), f.to_vec::<f32>().unwrap()), (ScalarType::F32, vec![7.0; 24]));
}

#[test]
fn helpers_match_pytorch() {
    assert_eq!(fmt_g(1e308), "1e+308");
    assert_eq!(fmt_g(-1.0), "-1");
    assert_eq!(fmt_g(0.5), "0.5");
    assert_eq!(fmt_g(123456789.0), "1.23457e+08");
    assert_eq!(fmt_g(0.0001), "0.0001");
    assert_eq!(fmt_g(1.0 / 3.0), "0.333333");
    assert_eq!(infer_dense_strides(&[6, 5, 4, 3, 2], &[6, 0, 120, 0, 1]).as_slice(), &[6, 36, 180, 2, 1]);
}
