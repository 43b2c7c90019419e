//! Fuzzes safetensors loading on arbitrary bytes: `nn::serialize::load_bytes`, then loading
//! what parses into small modules (`Linear`, `BatchNorm1d`) with `load_state_dict`, strict and
//! not; and `Checkpoint::from_bytes`, then loading its model and optimizer state into a
//! `Linear` and its `SGD` / `Adam` optimizers.
//!
//! Invariants: every input gives `Ok` or an `Err`, never a panic; every loaded tensor is
//! consistent (its element count is the product of its sizes and its values can be read); a
//! strict load that succeeds leaves the module with the loaded values.

#![no_main]

use std::path::Path;

use aten::Tensor;
use libfuzzer_sys::fuzz_target;
use nn::module::Module;
use nn::optim::{Adam, AdamOptions, Optimizer, SGDOptions, SGD};
use nn::serialize::{load_bytes, Checkpoint};

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.safetensors");
    if let Ok(loaded) = load_bytes(data, path) {
        for (name, t) in loaded.tensors.iter() {
            check_tensor(name, t);
        }
        let mut linear = nn::Linear::new(2, 3).expect("Linear(2, 3)");
        let mut norm = nn::BatchNorm1d::new(3).expect("BatchNorm1d(3)");
        for strict in [false, true] {
            let linear_ok = linear.load_state_dict(&loaded.tensors, strict).is_ok();
            if strict && linear_ok {
                assert_loaded(&linear, &loaded.tensors);
            }
            let norm_ok = norm.load_state_dict(&loaded.tensors, strict).is_ok();
            if strict && norm_ok {
                assert_loaded(&norm, &loaded.tensors);
            }
        }
    }
    if let Ok(ck) = Checkpoint::from_bytes(data, path) {
        let mut linear = nn::Linear::new(2, 3).expect("Linear(2, 3)");
        let _ = linear.load_state_dict(&ck.model, false);
        let mut sgd = SGD::new(linear.parameters(), SGDOptions::default().momentum(0.9)).expect("SGD");
        let _ = sgd.load_state_dict(&ck.optimizer);
        let mut adam = Adam::new(linear.parameters(), AdamOptions::default()).expect("Adam");
        let _ = adam.load_state_dict(&ck.optimizer);
    }
});

/// A loaded tensor is contiguous, its element count is the product of its sizes and it can be
/// read back.
fn check_tensor(name: &str, t: &Tensor) {
    let product = t.sizes().iter().try_fold(1i64, |n, &s| n.checked_mul(s));
    assert_eq!(product, Some(t.numel()), "'{name}': numel {} for sizes {:?}", t.numel(), t.sizes());
    assert!(t.is_contiguous(), "'{name}' is not contiguous");
    let len = if t.dtype().is_complex() {
        t.to_complex_vec::<f64>().unwrap_or_else(|e| panic!("'{name}': to_complex_vec failed: {e}")).len()
    } else {
        t.to_vec::<f64>().unwrap_or_else(|e| panic!("'{name}': to_vec failed: {e}")).len()
    };
    assert_eq!(len as i64, t.numel());
}

/// After a successful strict load, the module's state equals the loaded tensors (values are
/// compared when the dtypes agree; a load across dtypes converts, complex to real keeping the
/// real part, as `copy_` does in PyTorch).
fn assert_loaded(module: &dyn Module, state: &nn::module::StateDict) {
    for (name, ours) in module.state_dict().iter() {
        let theirs = state.get(name).expect("a strict load found every key");
        assert_eq!(ours.sizes(), theirs.sizes(), "'{name}': shape after a strict load");
        if ours.dtype() != theirs.dtype() {
            continue;
        }
        let (a, b) = if ours.dtype().is_complex() {
            let flat = |t: &Tensor| -> Vec<f64> {
                t.to_complex_vec::<f64>().unwrap().into_iter().flat_map(|z| [z.re, z.im]).collect()
            };
            (flat(ours), flat(theirs))
        } else {
            (ours.to_vec::<f64>().unwrap(), theirs.to_vec::<f64>().unwrap())
        };
        let same = a.iter().zip(&b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()));
        assert!(same, "'{name}': values differ after a strict load");
    }
}
