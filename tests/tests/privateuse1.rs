//! An out-of-tree backend (the `privateuse1` test crate) plugs into the dispatcher without any
//! change to aten: its tensors dispatch to its kernels; operators it lacks report it by name.

use std::sync::atomic::Ordering;

use aten::{dispatcher, Tensor};
use c10::{DispatchKey, Error};

#[test]
fn privateuse1_tensors_dispatch_to_the_backend() {
    let _ = dispatcher();
    let a = privateuse1::to_device(&Tensor::from_slice(&[1.0f32, 2.0, 3.0])).unwrap();
    let b = privateuse1::to_device(&Tensor::from_slice(&[10.0f32, 20.0, 30.0])).unwrap();
    assert!(privateuse1::ALLOCATIONS.load(Ordering::Relaxed) >= 2);
    assert!(a.key_set().has(DispatchKey::PrivateUse1));
    assert!(a.key_set().has(DispatchKey::AutogradPrivateUse1));
    let before = privateuse1::ADD_CALLS.load(Ordering::Relaxed);
    let c = (&a + &b).unwrap();
    assert_eq!(privateuse1::ADD_CALLS.load(Ordering::Relaxed), before + 1);
    assert_eq!(c.device(), privateuse1::DEVICE);
    assert_eq!(privateuse1::to_host(&c).unwrap(), vec![11.0, 22.0, 33.0]);
    // An operator without a PrivateUse1 kernel names the backend in its error.
    match a.mul(&b).unwrap_err() {
        Error::MissingKernel { op, key, available } => {
            assert_eq!(op, "aten::mul.Tensor");
            assert_eq!(key, "PrivateUse1");
            assert!(available.contains("CPU"));
        }
        other => panic!("unexpected {other}"),
    }
    // CPU tensors are unaffected.
    let x = Tensor::from_slice(&[1.0f32]);
    assert_eq!((&x + &x).unwrap().to_vec::<f32>().unwrap(), vec![2.0]);
}
