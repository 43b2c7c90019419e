//! Hostile but ordinary inputs: every call here used to crash the process, corrupt memory or
//! return a silently wrong result. Each must now return an `Err` with PyTorch's message (See
//! Note [Checked sizes] and Note [Memory overlap checks]).

use aten::{ops, Tensor};
use autograd::TensorAutograd;
use c10::{Error, Scalar, ScalarType};

fn err<T: std::fmt::Debug>(r: c10::Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

const STORAGE_OVERFLOW: &str = "Storage size calculation overflowed with sizes=";

#[test]
fn factories_with_byte_counts_past_i64_are_errors() {
    // 2^62 f32 elements: the count fits in i64, the byte count wrapped to 0 before.
    let e = err(ops::zeros(&[1 << 60, 4], Some(ScalarType::F32), None, None, None));
    assert!(e.contains(&format!("{STORAGE_OVERFLOW}[1152921504606846976, 4]")), "{e}");
    let e = err(ops::zeros(&[1 << 40, 1 << 22], Some(ScalarType::I64), None, None, None));
    assert!(e.contains(&format!("{STORAGE_OVERFLOW}[1099511627776, 4194304]")), "{e}");
    let e = err(ops::randn(&[1 << 62], None, None, None, None));
    assert!(e.contains(&format!("{STORAGE_OVERFLOW}[4611686018427387904]")), "{e}");
    // `empty` returned Ok with a 0-byte storage, and the first write crashed.
    let e = err(ops::empty(&[1 << 61, 2], Some(ScalarType::F64), None, None, None, None));
    assert!(e.contains(STORAGE_OVERFLOW), "{e}");
    let e = err(ops::full(&[1 << 32, 1 << 32], Scalar::Float(1.0), None, None, None, None));
    assert!(e.contains(STORAGE_OVERFLOW), "{e}");
    let e = err(ops::empty_strided(&[3, 3], &[1 << 62, 1], None, None, None, None));
    assert!(
        e.contains("Storage size calculation overflowed with sizes=[3, 3] and strides=[4611686018427387904, 1]"),
        "{e}"
    );
    let e = err(ops::empty_strided(&[2, 2], &[-1, 1], None, None, None, None));
    assert!(e.contains(STORAGE_OVERFLOW), "{e}");
    // Negative sizes keep PyTorch's message.
    let e = err(ops::empty(&[2, -1], None, None, None, None, None));
    assert!(e.contains("Trying to create tensor with negative dimension -1: [2, -1]"), "{e}");
}

#[test]
fn allocation_failure_is_an_error_value() {
    // 2^43 bytes (8 TiB) fits the arithmetic but not the machine: the allocator's failure is
    // PyTorch's error, not `handle_alloc_error`.
    match ops::empty(&[1 << 41], Some(ScalarType::F32), None, None, None, None) {
        Err(Error::OutOfMemory { nbytes, .. }) => assert_eq!(nbytes, 1 << 43),
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    let e = err(ops::empty(&[1 << 41], Some(ScalarType::F32), None, None, None, None));
    assert!(
        e.starts_with("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8796093022208 bytes"),
        "{e}"
    );
}

#[test]
fn element_counts_past_i64_are_errors() {
    let one = Tensor::from_vec(vec![1.0f32], &[1, 1]).unwrap();
    // numel used to wrap to 0, and `sum()` then aborted the process in an allocation.
    let e = err(one.expand(&[1 << 32, 1 << 32]).call());
    assert!(e.contains("numel: integer multiplication overflow"), "{e}");
    let e = err(one.broadcast_to(&[1 << 40, 1 << 40]));
    assert!(e.contains("numel: integer multiplication overflow"), "{e}");
    // A big expand whose count fits is fine (nothing is allocated), and its element count is right.
    let big = one.expand(&[1 << 31, 1 << 31]).call().unwrap();
    assert_eq!(big.numel(), 1 << 62);
    // Copying it out would need 2^64 bytes: an error, not an abort.
    let e = err(big.to_vec::<f32>());
    assert!(e.contains("can't allocate memory"), "{e}");
    let e = err(big.contiguous().call());
    assert!(e.contains(STORAGE_OVERFLOW), "{e}");
    // Overlapping windows can multiply the count.
    let row = Tensor::from_vec(vec![1.0f32], &[1]).unwrap().expand(&[1 << 40]).call().unwrap();
    let e = err(row.unfold(0, 1 << 39, 1));
    assert!(e.contains("numel: integer multiplication overflow"), "{e}");
}

#[test]
fn as_strided_spans_are_checked_without_wrapping() {
    let t = Tensor::from_vec((0..12).map(|x| x as f32).collect(), &[12]).unwrap();
    // (size - 1) * stride wraps i64: it used to pass the bounds check.
    let e = err(ops::as_strided(&t, &[3, 3], &[1 << 62, 1], None));
    assert!(
        e.contains("Storage size calculation overflowed with sizes=[3, 3] and strides=[4611686018427387904, 1]"),
        "{e}"
    );
    let e = err(ops::as_strided(&t, &[2], &[-1], None));
    assert!(e.contains("as_strided: Negative strides are not supported at the moment, got strides: [-1]"), "{e}");
    let e = err(ops::as_strided(&t, &[4], &[4], None));
    assert!(e.contains("setStorage: sizes [4], strides [4], storage offset 0, and itemsize 4 requiring a storage size of 52 are out of bounds for storage of size 48"), "{e}");
    // In bounds: a view of the right elements.
    let v = ops::as_strided(&t, &[3], &[4], Some(1)).unwrap();
    assert_eq!(v.to_vec::<f32>().unwrap(), vec![1.0, 5.0, 9.0]);
}

#[test]
fn in_place_writes_into_overlapping_memory_are_refused() {
    const INTERNAL: &str = "unsupported operation: more than one element of the written-to tensor refers to a single \
                            memory location. Please clone() the tensor before performing the operation.";
    const PARTIAL: &str =
        "unsupported operation: some elements of the input tensor and the written-to tensor refer to \
                           a single memory location. Please clone() the tensor before performing the operation.";
    let base = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let expanded = base.expand(&[3]).call().unwrap();
    let ones = Tensor::from_vec(vec![1.0f32; 3], &[3]).unwrap();
    // This used to add three times into the one element.
    let e = err(expanded.add_(&ones).call());
    assert!(e.contains(INTERNAL), "{e}");
    assert_eq!(base.to_vec::<f32>().unwrap(), vec![1.0], "a refused write changes nothing");
    let e = err(ops::mul_out(&ones, &ones, &expanded));
    assert!(e.contains(INTERNAL), "{e}");
    let e = err(expanded.fill_(Scalar::Float(2.0)));
    assert!(e.contains(INTERNAL), "{e}");
    let e = err(expanded.copy_(&ones).call());
    assert!(e.contains(INTERNAL), "{e}");

    // An output that partly overlaps an input.
    let t = Tensor::from_vec((0..8).map(|x| x as f32).collect(), &[8]).unwrap();
    let (head, mid) = (t.narrow(0, 0, 4).unwrap(), t.narrow(0, 2, 4).unwrap());
    let e = err(ops::add_out(&mid, &mid, Scalar::Int(1), &head));
    assert!(e.contains(PARTIAL), "{e}");
    let e = err(head.copy_(&mid).call());
    assert!(e.contains(PARTIAL), "{e}");
    assert_eq!(t.to_vec::<f32>().unwrap(), (0..8).map(|x| x as f32).collect::<Vec<_>>());

    // In place on the same memory through another handle is fine (full overlap).
    let same = t.narrow(0, 0, 4).unwrap();
    ops::add_out(&head, &head, Scalar::Int(1), &same).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0, 2.0, 4.0, 6.0, 4.0, 5.0, 6.0, 7.0]);
}

#[test]
fn empty_tensor_lists_get_pytorchs_messages() {
    let e = err(ops::cat(&[], 0));
    assert!(e.contains("torch.cat(): expected a non-empty list of Tensors"), "{e}");
    let e = err(ops::stack(&[], 0));
    assert!(e.contains("stack expects a non-empty TensorList"), "{e}");
    assert!(!e.contains("Undefined"), "{e}");
}

#[test]
fn tensor_hooks_may_not_change_a_gradients_shape_or_dtype() {
    let w = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2]).unwrap().requires_grad_(true).unwrap();
    w.register_hook(|g| Ok(Some(g.sum().call()?.reshape(&[1])?))).unwrap();
    let e = err(w.mul(Scalar::Float(3.0)).unwrap().sum().call().unwrap().backward());
    assert!(e.contains("hook 'tensor hook 0' has changed the size of value (was [1, 2] got [1])"), "{e}");
    assert!(w.grad().is_none(), "the refused gradient must not reach .grad");

    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap().requires_grad_(true).unwrap();
    let y = x.mul(Scalar::Float(2.0)).unwrap();
    y.register_hook(|g| Ok(Some(g.to(ScalarType::F64).call()?))).unwrap();
    let e = err(y.sum().call().unwrap().backward());
    assert!(
        e.contains("hook 'tensor hook 0' has changed the type of value (was CPUFloatType got CPUDoubleType)"),
        "{e}"
    );

    // A hook that keeps shape and dtype may still replace the values.
    let z = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap().requires_grad_(true).unwrap();
    z.register_hook(|g| Ok(Some(g.mul(Scalar::Float(10.0))?))).unwrap();
    z.sum().call().unwrap().backward().unwrap();
    assert_eq!(z.grad().unwrap().to_vec::<f32>().unwrap(), vec![10.0, 10.0]);
}

#[test]
fn view_shapes_whose_product_wraps_match_no_tensor() {
    let empty = Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap();
    // 2^32 * 2^32 wraps to 0, which used to "match" the empty tensor's count.
    let e = err(empty.view(&[1 << 32, 1 << 32]));
    assert!(e.contains("shape '[4294967296, 4294967296]' is invalid for input of size 0"), "{e}");
    let e = err(empty.reshape(&[1 << 32, 1 << 32, -1]));
    assert!(e.contains("is invalid for input of size 0"), "{e}");
    assert_eq!(empty.view(&[0, 1 << 40]).unwrap().sizes(), &[0, 1 << 40]);
}

/// `cat(out=)`, `scatter_add_` and `index_put_` read every input before writing, so an aliased
/// input did not give a wrong result here, but PyTorch refuses them: the same calls must fail
/// with its message (and write nothing).
#[test]
fn cat_scatter_and_index_put_refuse_aliased_inputs() {
    const PARTIAL: &str =
        "unsupported operation: some elements of the input tensor and the written-to tensor refer to \
                           a single memory location. Please clone() the tensor before performing the operation.";
    let t = Tensor::from_vec((0..6).map(|x| x as f32).collect(), &[6]).unwrap();
    let before = t.to_vec::<f32>().unwrap();
    let (head, tail) = (t.narrow(0, 0, 3).unwrap(), t.narrow(0, 3, 3).unwrap());
    let other = Tensor::from_vec(vec![9.0f32; 3], &[3]).unwrap();
    let e = err(ops::cat_out(&[head.clone(), other.clone()], 0, &t));
    assert!(e.contains(PARTIAL), "{e}");
    let idx = Tensor::from_vec(vec![0i64, 1, 2], &[3]).unwrap();
    let e = err(ops::scatter_add_(&head, 0, &idx, &head));
    assert!(e.contains(PARTIAL), "{e}");
    let e = err(ops::index_put_(&tail, &[Some(idx.clone())], &tail, false));
    assert!(e.contains(PARTIAL), "{e}");
    assert_eq!(t.to_vec::<f32>().unwrap(), before, "a refused write changes nothing");
    // Without aliasing the same calls work.
    let out = Tensor::from_vec(vec![0.0f32; 6], &[6]).unwrap();
    ops::cat_out(&[head.clone(), other.clone()], 0, &out).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 9.0, 9.0, 9.0]);
    ops::scatter_add_(&head, 0, &idx, &other).unwrap();
    assert_eq!(head.to_vec::<f32>().unwrap(), vec![9.0, 10.0, 11.0]);
}
