//! The safetensors seed corpus of the `safetensors_load` fuzz target (fuzz/seeds/), written by
//! our own save functions and checked to load, and regression tests for inputs the fuzz targets
//! of nn's readers found.
//!
//! Regenerate the seeds with
//! `cargo test -p nn --test nn fuzz_regressions::write_safetensors_fuzz_seeds -- --ignored`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use aten::Tensor;
use c10::{bf16, f16, Result};
use nn::optim::{Adam, AdamOptions, Optimizer, SGDOptions, SGD};
use nn::serialize::{load_bytes, save_file, save_state_dict, Checkpoint};
use nn::{BatchNorm1d, Forward, Linear, Module, StateDict};

fn seed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/safetensors_load")
}

/// A `Linear(2, 3)` with known weights `[[0, 1], [2, 3], [4, 5]] / 2` and bias `[-1, 0, 1]`.
fn known_linear() -> Result<Linear> {
    let mut l = Linear::new(2, 3)?;
    let mut state = StateDict::new();
    state.insert("weight", Tensor::from_vec((0..6).map(|i| i as f32 / 2.0).collect(), &[3, 2])?);
    state.insert("bias", Tensor::from_vec(vec![-1.0f32, 0.0, 1.0], &[3])?);
    l.load_state_dict(&state, true)?;
    Ok(l)
}

/// Sets every parameter's gradient to ones and takes one optimizer step, so it has state.
fn one_step(m: &Linear, opt: &mut dyn Optimizer) -> Result<()> {
    use autograd::TensorAutograd;
    let x = Tensor::from_vec(vec![1.0f32, -2.0], &[1, 2])?;
    opt.zero_grad(true)?;
    aten::ops::sum(&m.call(&x)?, None)?.backward()?;
    opt.step()
}

#[test]
#[ignore = "writes the fuzz seed corpus; run by hand when the format changes"]
fn write_safetensors_fuzz_seeds() -> Result<()> {
    let dir = seed_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let linear = known_linear()?;
    save_state_dict(&linear.state_dict(), dir.join("linear.safetensors"))?;
    save_state_dict(&BatchNorm1d::new(3)?.state_dict(), dir.join("batchnorm1d.safetensors"))?;

    // Every dtype, a zero-dim tensor and a zero-sized one, with metadata.
    let tensors: Vec<(&str, Tensor)> = vec![
        ("f32", Tensor::from_vec(vec![1.5f32, f32::NAN, f32::INFINITY, -0.0], &[2, 2])?),
        ("f64", Tensor::from_vec(vec![-2.25f64], &[])?),
        ("f16", Tensor::from_vec(vec![f16::from_f32(0.5), f16::MAX], &[2])?),
        ("bf16", Tensor::from_vec(vec![bf16::from_f32(-3.0)], &[1, 1])?),
        ("i64", Tensor::from_vec(vec![i64::MIN, 0, i64::MAX], &[3])?),
        ("i32", Tensor::from_vec(vec![-7i32, 7], &[2, 1])?),
        ("i16", Tensor::from_vec(vec![i16::MIN], &[1])?),
        ("i8", Tensor::from_vec(vec![-1i8, 1], &[2])?),
        ("u8", Tensor::from_vec(vec![255u8, 0, 9], &[3])?),
        ("bool", Tensor::from_vec(vec![true, false], &[2])?),
        ("empty", Tensor::from_vec(Vec::<f32>::new(), &[0, 3])?),
    ];
    let meta = HashMap::from([("format".to_string(), "pt".to_string())]);
    save_file(tensors.iter().map(|(k, t)| (*k, t)), Some(meta), dir.join("dtypes.safetensors"))?;

    let mut sgd = SGD::new(linear.parameters(), SGDOptions::default().momentum(0.9))?;
    one_step(&linear, &mut sgd)?;
    Checkpoint { model: linear.state_dict(), optimizer: sgd.state_dict()?, epoch: 3 }
        .save(dir.join("checkpoint_sgd.safetensors"))?;
    let linear = known_linear()?;
    let mut adam = Adam::new(linear.parameters(), AdamOptions::default())?;
    one_step(&linear, &mut adam)?;
    Checkpoint { model: linear.state_dict(), optimizer: adam.state_dict()?, epoch: 1 }
        .save(dir.join("checkpoint_adam.safetensors"))?;
    Ok(())
}

/// The committed seeds stay loadable, small, and hold what the writer put in them.
#[test]
fn safetensors_fuzz_seeds_load() -> Result<()> {
    let read = |name: &str| {
        let bytes = std::fs::read(seed_dir().join(name)).unwrap();
        assert!(bytes.len() < 4096, "{name} is {} bytes", bytes.len());
        bytes
    };
    let path = Path::new("seed.safetensors");
    let linear = load_bytes(&read("linear.safetensors"), path)?;
    let mut l = Linear::new(2, 3)?;
    l.load_state_dict(&linear.tensors, true)?;
    assert_eq!(l.weight.tensor().to_vec::<f32>()?, vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);

    let dtypes = load_bytes(&read("dtypes.safetensors"), path)?;
    assert_eq!(dtypes.tensors.len(), 11);
    assert_eq!(dtypes.tensors.get("i64").unwrap().to_vec::<i64>()?, vec![i64::MIN, 0, i64::MAX]);
    assert_eq!(dtypes.tensors.get("empty").unwrap().sizes(), &[0, 3]);
    assert_eq!(dtypes.metadata.get("format").map(String::as_str), Some("pt"));

    let mut bn = BatchNorm1d::new(3)?;
    bn.load_state_dict(&load_bytes(&read("batchnorm1d.safetensors"), path)?.tensors, true)?;

    for (name, epoch) in [("checkpoint_sgd.safetensors", 3), ("checkpoint_adam.safetensors", 1)] {
        let ck = Checkpoint::from_bytes(&read(name), path)?;
        assert_eq!(ck.epoch, epoch, "{name}");
        assert_eq!(ck.optimizer.param_groups[0].params, vec![0, 1], "{name}");
        assert_eq!(ck.optimizer.state.len(), 2, "{name}");
    }
    Ok(())
}

/// Found by `safetensors_load`: a checkpoint may hold complex64 tensors. Loading them into a
/// real module converts as PyTorch's `copy_` does (it warns "Casting complex values to real
/// discards the imaginary part"): every state entry keeps the real part, an integer buffer the
/// real part truncated. Expected values from PyTorch 2.15 (`BatchNorm1d(3)` loaded with
/// `state + (1.7 + 3j)`).
#[test]
fn complex_state_dict_loads_into_a_real_module_keeping_the_real_part() -> Result<()> {
    let mut bn = BatchNorm1d::new(3)?;
    let mut state = StateDict::new();
    for (name, t) in bn.state_dict().iter() {
        let shifted: Vec<c10::Complex<f32>> =
            t.to_vec::<f64>()?.into_iter().map(|v| c10::Complex::new(v as f32 + 1.7, 3.0)).collect();
        state.insert(name, Tensor::from_complex_vec(shifted, t.sizes())?);
    }
    // Round trip through safetensors, as the fuzz target does.
    let dir = std::env::temp_dir().join(format!("complex_state_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bn.safetensors");
    save_state_dict(&state, &file)?;
    let loaded = load_bytes(&std::fs::read(&file).unwrap(), &file)?;
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(loaded.tensors.get("weight").unwrap().dtype(), c10::ScalarType::C64);
    bn.load_state_dict(&loaded.tensors, true)?;
    let after = bn.state_dict();
    assert_eq!(after.get("weight").unwrap().to_vec::<f32>()?, vec![2.7f32; 3]);
    assert_eq!(after.get("bias").unwrap().to_vec::<f32>()?, vec![1.7f32; 3]);
    assert_eq!(after.get("running_mean").unwrap().to_vec::<f32>()?, vec![1.7f32; 3]);
    assert_eq!(after.get("running_var").unwrap().to_vec::<f32>()?, vec![2.7f32; 3]);
    let tracked = after.get("num_batches_tracked").unwrap();
    assert_eq!((tracked.dtype(), tracked.to_vec::<i64>()?), (c10::ScalarType::I64, vec![1]));
    Ok(())
}
