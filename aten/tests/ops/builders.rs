//! The generated front end (Note [Front-end calls] in aten/src/front.rs): each call picks the
//! overload PyTorch's argument parser picks, fills in the schema's defaults, and reports a
//! combination no overload takes as an error value. Expected values are closed forms.

use aten::front::{self, Reduction};
use aten::{Generator, Tensor};
use c10::{Device, Error, ScalarType};

fn m22() -> Tensor {
    Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[test]
fn sum_chooses_its_overload_from_the_options_set() {
    let x = m22();
    // `sum(Tensor self, *, ScalarType? dtype)`.
    let all = x.sum().call().unwrap();
    assert_eq!((all.sizes(), f32s(&all)), (&[][..], vec![10.0]));
    // `sum.dim_IntList`: one integer is the list [1].
    let rows = x.sum().dim(1).call().unwrap();
    assert_eq!((rows.sizes(), f32s(&rows)), (&[2][..], vec![3.0, 7.0]));
    let kept = x.sum().dim(&[0]).keepdim(true).call().unwrap();
    assert_eq!((kept.sizes(), f32s(&kept)), (&[1, 2][..], vec![4.0, 6.0]));
    // keepdim alone is `sum.dim_IntList` with dim=None: every dimension, kept (PyTorch's
    // `x.sum(dim=None, keepdim=True)` has shape [1, 1]).
    let k = x.sum().keepdim(true).call().unwrap();
    assert_eq!((k.sizes(), f32s(&k)), (&[1, 1][..], vec![10.0]));
    assert_eq!(x.sum().dtype(ScalarType::F64).call().unwrap().dtype(), ScalarType::F64);
    // The free function is the same call.
    assert_eq!(f32s(&front::sum(&x).dim(0).call().unwrap()), vec![4.0, 6.0]);
}

#[test]
fn tensor_or_number_arguments_pick_the_overload() {
    let x = m22();
    let y = Tensor::from_vec(vec![10.0f32, 20.0, 30.0, 40.0], &[2, 2]).unwrap();
    assert_eq!(f32s(&x.add(&y).call().unwrap()), vec![11.0, 22.0, 33.0, 44.0]);
    assert_eq!(f32s(&x.add(&y).alpha(2).call().unwrap()), vec![21.0, 42.0, 63.0, 84.0]);
    assert_eq!(f32s(&x.add(0.5).call().unwrap()), vec![1.5, 2.5, 3.5, 4.5]);
    assert_eq!(f32s(&x.add(1).alpha(3).call().unwrap()), vec![4.0, 5.0, 6.0, 7.0]);
    // No defaulted argument: the result directly.
    assert_eq!(f32s(&x.mul(2.0).unwrap()), vec![2.0, 4.0, 6.0, 8.0]);
    assert_eq!(f32s(&x.pow(2).unwrap()), vec![1.0, 4.0, 9.0, 16.0]);
    assert_eq!(f32s(&x.pow(&x).unwrap()), vec![1.0, 4.0, 27.0, 256.0]);
    assert_eq!(f32s(&front::pow(2.0, &x).unwrap()), vec![2.0, 4.0, 8.0, 16.0]);
    // Two numbers: no overload of pow takes them.
    match front::pow(2.0, 3.0) {
        Err(Error::InvalidArgument { op, msg }) => {
            assert_eq!(op, "pow");
            assert!(msg.contains("invalid combination of arguments") && msg.contains("pow.Scalar("), "{msg}");
        }
        other => panic!("expected an invalid-argument error, got {other:?}"),
    }
}

#[test]
fn fixed_length_int_lists_take_one_integer() {
    // 4x4 ramp: 2x2 max pooling with the default stride (= kernel_size) takes each block's max.
    let x = Tensor::from_vec((0..16).map(|v| v as f32).collect(), &[1, 1, 4, 4]).unwrap();
    let p = front::max_pool2d(&x, 2).call().unwrap();
    assert_eq!((p.sizes(), f32s(&p)), (&[1, 1, 2, 2][..], vec![5.0, 7.0, 13.0, 15.0]));
    let p = front::max_pool2d(&x, &[2, 2]).stride(1).call().unwrap();
    assert_eq!(p.sizes(), &[1, 1, 3, 3]);
    assert_eq!(f32s(&p)[..3], [5.0, 6.0, 7.0]);
    let p = front::max_pool2d(&x, 3).padding(1).call().unwrap();
    assert_eq!((p.sizes(), f32s(&p)), (&[1, 1, 2, 2][..], vec![5.0, 7.0, 13.0, 15.0]));
}

#[test]
fn factories_take_their_size_and_options() {
    let z = Tensor::zeros(&[2, 3]).call().unwrap();
    assert_eq!((z.sizes(), z.dtype(), z.device()), (&[2, 3][..], ScalarType::F32, Device::CPU));
    assert_eq!(Tensor::zeros(3).call().unwrap().sizes(), &[3]);
    let o = front::ones(vec![2]).dtype(ScalarType::I64).call().unwrap();
    assert_eq!(o.to_vec::<i64>().unwrap(), vec![1, 1]);
    let f = Tensor::full(&[2], 7).dtype(ScalarType::I32).call().unwrap();
    assert_eq!(f.to_vec::<i32>().unwrap(), vec![7, 7]);
    // arange with an integer end is int64, as in PyTorch; start and step select arange.start_step.
    let a = Tensor::arange(4).call().unwrap();
    assert_eq!((a.dtype(), a.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![0, 1, 2, 3]));
    let a = front::arange_start(1, 10).step(4).call().unwrap();
    assert_eq!(a.to_vec::<i64>().unwrap(), vec![1, 5, 9]);
    // A generator is an option: the same seed gives the same permutation of 0..8.
    let perm = |seed| {
        let g = Generator::new(Device::CPU);
        g.manual_seed(seed);
        front::randperm(8).generator(&g).call().unwrap().to_vec::<i64>().unwrap()
    };
    let (p, q) = (perm(3), perm(3));
    assert_eq!(p, q);
    let mut sorted = p.clone();
    sorted.sort();
    assert_eq!(sorted, (0..8).collect::<Vec<i64>>());
}

#[test]
fn losses_take_a_typed_reduction() {
    // Uniform logits over 4 classes: every sample's loss is ln 4.
    let logits = Tensor::zeros(&[2, 4]).call().unwrap();
    let y = Tensor::from_slice(&[1i64, 3]);
    let ln4 = 4f32.ln();
    let mean = front::cross_entropy_loss(&logits, &y).call().unwrap();
    assert!((mean.item::<f32>().unwrap() - ln4).abs() < 1e-6);
    let sum = front::cross_entropy_loss(&logits, &y).reduction(Reduction::Sum).call().unwrap();
    assert!((sum.item::<f32>().unwrap() - 2.0 * ln4).abs() < 1e-6);
    let none = front::cross_entropy_loss(&logits, &y).reduction(Reduction::None).call().unwrap();
    assert_eq!(none.sizes(), &[2]);
    // ignore_index drops the second sample from the mean.
    let ignored = front::cross_entropy_loss(&logits, &y).ignore_index(3).call().unwrap();
    assert!((ignored.item::<f32>().unwrap() - ln4).abs() < 1e-6);
    // Label smoothing toward the uniform target does not change a uniform prediction's loss.
    let smooth = front::cross_entropy_loss(&logits, &y).label_smoothing(0.1).call().unwrap();
    assert!((smooth.item::<f32>().unwrap() - ln4).abs() < 1e-6);
}

#[test]
fn options_of_other_overloads_and_errors() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[1, 3]).unwrap();
    assert_eq!(x.squeeze().unwrap().sizes(), &[3]);
    assert_eq!(x.squeeze_dim(0).unwrap().sizes(), &[3]);
    assert_eq!(x.squeeze_dim(1).unwrap().sizes(), &[1, 3]);
    // argmax with and without dim.
    assert_eq!(x.argmax().call().unwrap().item::<i64>().unwrap(), 2);
    assert_eq!(x.argmax().dim(1).keepdim(true).call().unwrap().sizes(), &[1, 1]);
    // A kernel's own error comes back through the builder unchanged.
    assert!(matches!(x.sum().dim(5).call(), Err(Error::DimOutOfRange { .. })));
}

#[test]
fn tensor_lists_take_references_or_tensors() {
    let a = Tensor::from_slice(&[1.0f32, 2.0]);
    let b = Tensor::from_slice(&[3.0f32]);
    // torch.cat([a, b]) without clones; a slice or a vector of tensors works too.
    assert_eq!(f32s(&front::cat(&[&a, &b]).call().unwrap()), vec![1.0, 2.0, 3.0]);
    let owned = vec![b.clone(), a.clone()];
    assert_eq!(f32s(&front::cat(&owned).call().unwrap()), vec![3.0, 1.0, 2.0]);
    assert_eq!(f32s(&front::cat(owned.as_slice()).dim(0).call().unwrap()), vec![3.0, 1.0, 2.0]);
    let s = front::stack(&[&a, &a]).dim(1).call().unwrap();
    assert_eq!((s.sizes(), f32s(&s)), (&[2, 2][..], vec![1.0, 1.0, 2.0, 2.0]));
    // The kernel's error about mismatched shapes comes back as a value.
    assert!(front::stack(&[&a, &b]).call().is_err());
}

#[test]
fn one_integer_fills_any_length() {
    let l = front::IntList::from(3);
    assert_eq!(&*l.expand(Some(2)), &[3, 3]);
    assert_eq!(&*l.expand(None), &[3]);
    // Longer than the inline buffer: still every element, never truncated.
    assert_eq!(&*l.expand(Some(12)), &[3; 12]);
}
