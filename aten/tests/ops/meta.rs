//! The meta device: tensors with shapes and dtypes but no data (Note [Meta storage]), on which
//! operators with a `Meta` kernel check their arguments and size their outputs without
//! computing (Note [Meta loops]). Expected shapes are closed forms; `cargo xtask opinfo
//! --device meta` checks every meta kernel against PyTorch's shapes and dtypes.

use aten::{ops, Tensor};
use c10::{Device, Error, ScalarType};

fn meta(sizes: &[i64]) -> Tensor {
    ops::empty(sizes, Some(ScalarType::F32), None, Some(Device::META), None, None).unwrap()
}

fn to(t: &Tensor, device: Device) -> c10::Result<Tensor> {
    ops::_to_copy(t, None, None, Some(device), None, false, None)
}

#[test]
fn meta_tensors_have_shapes_and_no_data() {
    // 2^40 floats (4 TiB) allocate nothing.
    let big = meta(&[1 << 20, 1 << 20]);
    assert_eq!(big.device(), Device::META);
    assert_eq!(big.sizes(), &[1 << 20, 1 << 20]);
    let p = ops::matmul(&big, &big).unwrap();
    assert_eq!((p.sizes(), p.dtype(), p.device()), (&[1 << 20, 1 << 20][..], ScalarType::F32, Device::META));
    assert_eq!(meta(&[2, 3]).to_string(), "tensor(..., device='meta', size=(2, 3))");
    // A CPU tensor moves to meta (keeping dtype and shape); nothing comes back.
    let cpu = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
    let m = to(&cpu, Device::META).unwrap();
    assert_eq!((m.sizes(), m.dtype()), (&[3][..], ScalarType::I64));
    let e = to(&m, Device::CPU).unwrap_err();
    assert!(e.to_string().contains("Cannot copy out of meta tensor; no data!"), "{e}");
    assert!(m.to_vec::<i64>().is_err());
    assert!(ops::item(&ops::sum(&m, None).unwrap()).is_err());
}

#[test]
fn pointwise_promotion_broadcasting_and_reductions() {
    let a = meta(&[4, 1, 3]);
    let b = to(&Tensor::from_vec(vec![1i64, 2], &[2, 1]).unwrap(), Device::META).unwrap();
    let s = ops::add(&a, &b, 1.into()).unwrap();
    assert_eq!((s.sizes(), s.dtype()), (&[4, 2, 3][..], ScalarType::F32));
    // Integer true division gives the default float dtype; comparisons give bool.
    let q = ops::div(&b, &b).unwrap();
    assert_eq!(q.dtype(), ScalarType::F32);
    assert_eq!(ops::gt(&s, &a).unwrap().dtype(), ScalarType::Bool);
    // A 0-dim CPU tensor joins meta tensors, as in PyTorch.
    let c = ops::mul(&a, &Tensor::scalar_tensor(2.0f64)).unwrap();
    assert_eq!((c.sizes(), c.device()), (&[4, 1, 3][..], Device::META));
    let m = ops::mean_dim(&s, Some(&[1][..]), true, None).unwrap();
    assert_eq!(m.sizes(), &[4, 1, 3]);
    let (v, i) = ops::max_dim(&s, -1, false).unwrap();
    assert_eq!((v.sizes(), i.dtype()), (&[4, 2][..], ScalarType::I64));
    let g = ops::gelu(&s, "tanh").unwrap();
    assert_eq!(g.sizes(), &[4, 2, 3]);
    // Shape errors are the kernels' own.
    let e = ops::add(&meta(&[2, 3]), &meta(&[4]), 1.into()).unwrap_err();
    assert!(e.to_string().contains("The size of tensor a (3) must match the size of tensor b (4)"), "{e}");
    let r = ops::randn(&[5, 2], None, None, Some(Device::META), None).unwrap();
    assert_eq!((r.sizes(), r.device()), (&[5, 2][..], Device::META));
}

#[test]
fn convolution_pooling_and_normalization() {
    // out = floor((in + 2p - d(k - 1) - 1) / s) + 1 per spatial dim (ceil with ceil_mode, unless
    // the last window would start in the padding); PyTorch gives the same shapes.
    let x = meta(&[8, 3, 32, 30]);
    let w = meta(&[16, 3, 5, 3]);
    let y = ops::conv2d(&x, &w, Some(&meta(&[16])), &[2, 1], &[1, 0], &[1, 2], 1).unwrap();
    assert_eq!(y.sizes(), &[8, 16, 15, 26]);
    let (p, idx) = ops::max_pool2d_with_indices(&y, &[3, 3], &[2, 2], &[1, 1], &[1, 1], true).unwrap();
    assert_eq!((p.sizes(), idx.dtype()), (&[8, 16, 8, 14][..], ScalarType::I64));
    let a = ops::adaptive_avg_pool2d(&p, &[4, 1]).unwrap();
    assert_eq!(a.sizes(), &[8, 16, 4, 1]);
    let (o, mean, invstd) = ops::native_batch_norm(&y, None, None, None, None, true, 0.1, 1e-5).unwrap();
    assert_eq!((o.sizes(), mean.sizes(), invstd.sizes()), (y.sizes(), &[16][..], &[16][..]));
    let (o, mean, rstd) = ops::native_layer_norm(&y, &[15, 26], None, None, 1e-5).unwrap();
    assert_eq!((o.sizes(), mean.sizes(), rstd.sizes()), (y.sizes(), &[8, 16, 1, 1][..], &[8, 16, 1, 1][..]));
    let c = ops::cat(&[meta(&[2, 3]), meta(&[2, 5])], 1).unwrap();
    assert_eq!(c.sizes(), &[2, 8]);
    // Wrong channels: the convolution's own message.
    let e = ops::conv2d(&x, &meta(&[16, 4, 5, 3]), None, &[1, 1], &[0, 0], &[1, 1], 1).unwrap_err();
    assert!(e.to_string().contains("expected input[8, 3, 32, 30] to have 4 channels"), "{e}");
    // A CPU weight with a meta input is a device mismatch, never a silent CPU computation.
    let cpu_w = ops::ones(&[3], Some(ScalarType::F32), None, None, None).unwrap();
    let e = ops::native_batch_norm(&meta(&[2, 3]), Some(&cpu_w), None, None, None, true, 0.1, 1e-5).unwrap_err();
    assert!(matches!(e, Error::DeviceMismatch { .. }), "{e}");
    // Group norm: the output and the [N, group] statistics; a CPU weight is a mismatch too.
    let (o, mean, rstd) = ops::native_group_norm(&y, None, None, 8, 16, 15 * 26, 4, 1e-5).unwrap();
    assert_eq!((o.sizes(), mean.sizes(), rstd.sizes()), (y.sizes(), &[8, 4][..], &[8, 4][..]));
    assert!(o.device().is_meta() && mean.device().is_meta());
    let cpu_w = ops::ones(&[16], Some(ScalarType::F32), None, None, None).unwrap();
    let e = ops::native_group_norm(&y, Some(&cpu_w), None, 8, 16, 15 * 26, 4, 1e-5).unwrap_err();
    assert!(matches!(e, Error::DeviceMismatch { .. }), "{e}");
}

#[test]
fn operators_without_a_meta_kernel_say_so() {
    // `nonzero`'s shape depends on the values.
    let e = ops::nonzero(&meta(&[3])).unwrap_err();
    assert!(e.to_string().contains("'Meta' backend"), "{e}");
}

#[test]
fn cpu_and_meta_tensors_do_not_mix() {
    // A meta argument sends the call to the meta kernel; there a CPU tensor beside it is a
    // device mismatch, never a CPU computation that reads the meta tensor's missing data.
    let cpu = |s: &[i64]| ops::ones(s, Some(ScalarType::F32), None, None, None).unwrap();
    let e = ops::scaled_dot_product_attention(
        &cpu(&[2, 4, 8]),
        &cpu(&[2, 4, 8]),
        &cpu(&[2, 4, 8]),
        Some(&meta(&[4, 4])),
        0.0,
        false,
        None,
        false,
    )
    .unwrap_err();
    assert!(matches!(e, Error::DeviceMismatch { .. }), "{e}");
    let e = ops::mm_out(&cpu(&[2, 3]), &cpu(&[3, 4]), &meta(&[2, 4])).unwrap_err();
    assert!(matches!(e, Error::DeviceMismatch { .. }), "{e}");
    let e = ops::cat_out(&[cpu(&[2]), cpu(&[3])], 0, &meta(&[5])).unwrap_err();
    assert!(matches!(e, Error::DeviceMismatch { .. }), "{e}");
    // Value checks have no values to check on meta: the shapes and dtypes still come out.
    let (m, e) = ops::frexp(&meta(&[3, 2])).unwrap();
    assert_eq!(
        (m.sizes(), m.dtype(), e.dtype(), e.device()),
        (&[3, 2][..], ScalarType::F32, ScalarType::I32, Device::META)
    );
    let i = ops::empty(&[4], Some(ScalarType::I64), None, Some(Device::META), None, None).unwrap();
    let r = ops::remainder(&i, &i).unwrap();
    assert_eq!((r.dtype(), r.device()), (ScalarType::I64, Device::META));
}
