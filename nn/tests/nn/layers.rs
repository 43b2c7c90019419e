//! Layers against PyTorch's numbers: every `interpolate` mode (values and input gradients),
//! Embedding `max_norm` and its weight gradient (`padding_idx`, `scale_grad_by_freq`),
//! EmbeddingBag (`include_last_offset`, empty bags, `padding_idx`, the
//! three modes and their weight gradients), MaxPool indices, Bilinear, Conv3d, InstanceNorm2d,
//! PixelShuffle and the activations. The expected values are in `layers_expected.txt`, written
//! by `gen_layers.py` with PyTorch 2.15 from the same deterministic inputs (`wave`).

use aten::Tensor;
use autograd::TensorAutograd;
use c10::{Result, ScalarType};
use nn::{BagMode, Embedding, EmbeddingBag, Forward, Module, StateDict};

/// `sin(a * arange(n) + b)` in f64, reshaped: the inputs of `gen_layers.py`.
fn wave(shape: &[i64], a: f64, b: f64) -> Tensor {
    let n: i64 = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| (a * i as f64 + b).sin()).collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// The expected values and shape recorded under `name`.
fn expected(name: &str) -> (Vec<f64>, Vec<i64>) {
    let text = include_str!("layers_expected.txt");
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("// ") else { continue };
        let (label, shape) = rest.rsplit_once(" [").expect("a shape");
        if label != name {
            continue;
        }
        let shape = shape.trim_end_matches(']').split(", ").filter(|s| !s.is_empty()).map(|s| s.parse().unwrap());
        let vals = lines.next().unwrap().trim_matches(|c| c == '[' || c == ']');
        let vals = vals.split(", ").filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
        return (vals, shape.collect());
    }
    panic!("no expected values named {name:?}");
}

/// Asserts that `t` has the recorded shape and values (within `tol`, relative to 1 + |expected|).
fn check(name: &str, t: &Tensor, tol: f64) {
    let (want, shape) = expected(name);
    assert_eq!(t.sizes(), shape.as_slice(), "{name}: shape");
    let got = t.to(ScalarType::F64).call().unwrap().contiguous().call().unwrap().to_vec::<f64>().unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{name}[{i}]: got {g}, expected {w}\n{got:?}\n{want:?}");
    }
}

/// `F.interpolate` on `wave(shape)`, then the gradient of `sum(y * wave(y.shape, 0.3, 0.1))`.
fn interp(name: &str, shape: &[i64], size: Option<&[i64]>, scale: Option<&[f64]>, mode: &str, align: Option<bool>) {
    let x = wave(shape, 0.7, 0.3).requires_grad_(true).unwrap();
    let y = nn::interpolate(&x, size, scale, mode, align).unwrap();
    check(name, &y, 1e-12);
    let g = wave(y.sizes(), 0.3, 0.1);
    y.mul(&g).unwrap().sum().call().unwrap().backward().unwrap();
    check(&format!("{name} grad"), &x.grad().unwrap(), 1e-12);
}

#[test]
fn interpolate_modes_match_pytorch_values_and_gradients() {
    interp("linear size 8", &[1, 2, 5], Some(&[8]), None, "linear", None);
    interp("linear size 8 align", &[1, 2, 5], Some(&[8]), None, "linear", Some(true));
    interp("linear scale 1.7", &[1, 2, 5], None, Some(&[1.7]), "linear", None);
    interp("bicubic size (7,3)", &[1, 1, 4, 5], Some(&[7, 3]), None, "bicubic", None);
    interp("bicubic scale 2 align", &[1, 1, 3, 4], None, Some(&[2.0]), "bicubic", Some(true));
    interp("trilinear scale 1.5", &[1, 1, 3, 4, 2], None, Some(&[1.5]), "trilinear", None);
    interp("nearest-exact size (5,7)", &[1, 1, 3, 5], Some(&[5, 7]), None, "nearest-exact", None);
    interp("nearest-exact scale 2.3", &[1, 2, 3], None, Some(&[2.3]), "nearest-exact", None);
    interp("area size (2,3)", &[1, 1, 5, 4], Some(&[2, 3]), None, "area", None);
}

#[test]
fn interpolate_and_upsample_report_bad_arguments() -> Result<()> {
    let x3 = wave(&[1, 1, 4], 0.7, 0.3);
    let err = |r: Result<Tensor>| r.expect_err("an error").to_string();
    let e = err(nn::interpolate(&x3, Some(&[8]), None, "bilinear", None));
    assert!(e.contains("Got 3D input, but bilinear mode needs 4D input"), "{e}");
    let e = err(nn::interpolate(&x3, Some(&[8]), None, "nearest", Some(false)));
    assert!(e.contains("align_corners option can only be set with the interpolating modes"), "{e}");
    let e = err(nn::interpolate(&x3, Some(&[8]), Some(&[2.0]), "linear", None));
    assert!(e.contains("only one of size or scale_factor should be defined"), "{e}");
    let e = err(nn::interpolate(&x3, Some(&[8, 8]), None, "linear", None));
    assert!(e.contains("Input and output must have the same number of spatial dimensions"), "{e}");
    let e = err(nn::interpolate(&x3, Some(&[8]), None, "cubic", None));
    assert!(e.contains("(got cubic)"), "{e}");
    let e = err(nn::interpolate(&Tensor::from_vec(vec![1i64, 2, 3], &[1, 1, 3])?, Some(&[5]), None, "linear", None));
    assert!(e.contains("Long") || e.contains("I64") || e.contains("i64"), "{e}");
    // Integer input is fine for the nearest modes.
    let ints =
        nn::interpolate(&Tensor::from_vec(vec![1i64, 2, 3], &[1, 1, 3])?, Some(&[5]), None, "nearest-exact", None)?;
    assert_eq!(ints.to_vec::<i64>()?, vec![1, 1, 2, 3, 3]);
    // The module runs every mode and checks its options when built.
    let up = nn::Upsample::new(None, Some(&[1.5]), "trilinear", false)?;
    check("trilinear scale 1.5", &up.call(&wave(&[1, 1, 3, 4, 2], 0.7, 0.3))?, 1e-12);
    assert!(nn::Upsample::new(Some(&[4]), None, "cubic", false).is_err());
    assert!(nn::Upsample::new(None, None, "linear", false).is_err());
    assert!(nn::Upsample::new(Some(&[4]), None, "area", true).is_err());
    Ok(())
}

#[test]
fn embedding_max_norm_renormalises_the_rows_looked_up() -> Result<()> {
    let w = wave(&[5, 3], 1.3, 0.2).mul(c10::Scalar::Float(2.0))?;
    let e = Embedding::from_pretrained(&w, false, None)?.with_max_norm(1.0, 2.0);
    let out = e.call(&Tensor::from_vec(vec![0i64, 2, 2, 3], &[2, 2])?)?;
    check("embedding max_norm out", &out, 1e-12);
    check("embedding max_norm weight", &e.weight, 1e-12);
    // The rows still train: the renormalisation records no history and the lookup does.
    assert!(e.weight.requires_grad() && out.requires_grad());
    let e1 = Embedding::from_pretrained(&w, false, None)?.with_max_norm(1.5, 1.0);
    e1.call(&Tensor::from_slice(&[1i64, 4]))?;
    check("embedding max_norm p=1 weight", &e1.weight, 1e-12);
    let bad = e1.call(&Tensor::from_slice(&[7i64])).expect_err("an out-of-range index").to_string();
    assert!(bad.contains("out of range"), "{bad}");
    Ok(())
}

/// Embedding's weight gradient against PyTorch's: rows summed per index, nothing for
/// `padding_idx`, and divided by each index's count in the batch with `scale_grad_by_freq`.
#[test]
fn embedding_weight_gradient_honours_padding_idx_and_scale_grad_by_freq() -> Result<()> {
    let ids = Tensor::from_vec(vec![1i64, 3, 3, 0, 9, 1, 3, 3], &[2, 4])?;
    let go = wave(&[2, 4, 4], 0.9, 0.1);
    for (pad, scale) in [(None, false), (Some(3), false), (Some(1), true), (None, true)] {
        let w = wave(&[10, 4], 1.1, 0.5).requires_grad_(true)?;
        let out = aten::ops::embedding(&w, &ids, pad.unwrap_or(-1), scale, false)?;
        let g = autograd::grad(&[out], &[w], &[Some(go.clone())], None, false, false)?;
        let name = format!(
            "embedding grad padding {} scale {}",
            pad.map_or("None".to_string(), |p: i64| p.to_string()),
            if scale { "True" } else { "False" }
        );
        check(&name, g[0].as_ref().expect("a gradient"), 1e-12);
    }
    Ok(())
}

fn bag(mode: BagMode) -> Result<EmbeddingBag> {
    let mut b = EmbeddingBag::with_padding_idx(10, 3, mode, Some(4))?.with_include_last_offset(true);
    b.to_dtype(ScalarType::F64)?;
    let sd: StateDict = [("weight".to_string(), wave(&[10, 3], 0.9, 0.4))].into_iter().collect();
    b.load_state_dict(&sd, true)?;
    Ok(b)
}

#[test]
fn embedding_bag_modes_match_pytorch_with_offsets_and_padding() -> Result<()> {
    let idx = Tensor::from_slice(&[1i64, 2, 4, 5, 4, 3, 2, 9]);
    // include_last_offset: five offsets are four bags, the second one empty.
    let offs = Tensor::from_slice(&[0i64, 2, 2, 5, 8]);
    for (mode, name) in [(BagMode::Sum, "sum"), (BagMode::Mean, "mean"), (BagMode::Max, "max")] {
        let b = bag(mode)?;
        let o = b.forward_bags(&idx, Some(&offs), None)?;
        check(&format!("bag {name}"), &o, 1e-12);
        o.mul(&wave(o.sizes(), 0.3, 0.1))?.sum().call()?.backward()?;
        check(&format!("bag {name} grad"), &b.weight.grad().unwrap(), 1e-12);
    }
    assert_eq!(BagMode::default(), BagMode::Mean);
    let mut plain = EmbeddingBag::new(10, 3, BagMode::Sum)?;
    plain.to_dtype(ScalarType::F64)?;
    let sd: StateDict = [("weight".to_string(), wave(&[10, 3], 0.9, 0.4))].into_iter().collect();
    plain.load_state_dict(&sd, true)?;
    let psw = wave(&[8], 0.5, 0.2);
    check("bag sum psw", &plain.forward_bags(&idx, Some(&Tensor::from_slice(&[0i64, 3])), Some(&psw))?, 1e-12);
    let e = plain.forward_bags(&idx, Some(&Tensor::from_slice(&[1i64, 3])), None).err().unwrap().to_string();
    assert!(e.contains("offsets[0] has to be 0"), "{e}");
    let e = plain.forward_bags(&idx, Some(&Tensor::from_slice(&[0i64, 5, 3])), None).err().unwrap().to_string();
    assert!(e.contains("non-decreasing"), "{e}");
    let e = bag(BagMode::Mean)?.forward_bags(&idx, Some(&offs), Some(&psw)).err().unwrap().to_string();
    assert!(e.contains("per_sample_weights is only supported for mode='sum'"), "{e}");
    // F.embedding_bag is the layer's computation; a weight that is not a table is refused.
    let b = bag(BagMode::Max)?;
    let f = nn::functional::embedding_bag(&idx, &b.weight)
        .offsets(&offs)
        .mode(BagMode::Max)
        .include_last_offset(true)
        .padding_idx(-6)
        .call()?;
    let layer = b.forward_bags(&idx, Some(&offs), None)?;
    assert_eq!(f.to_vec::<f64>()?, layer.to_vec::<f64>()?);
    let e = nn::functional::embedding_bag(&idx, &Tensor::from_slice(&[1.0f64, 2.0])).call().err().unwrap().to_string();
    assert!(e.contains("weight has to be a 2D Tensor, but got Tensor of dimension 1"), "{e}");
    Ok(())
}

#[test]
fn max_pool_returns_indices() -> Result<()> {
    let mp = nn::MaxPool2d::with_options(&[2], Some(&[1]), &[0], &[1], false)?;
    let (o, i) = mp.forward_with_indices(&wave(&[1, 1, 3, 4], 2.1, 0.0))?;
    check("maxpool out", &o, 1e-12);
    assert_eq!(i.dtype(), ScalarType::I64);
    check("maxpool idx", &i, 0.0);
    Ok(())
}

fn load(m: &mut dyn Module, entries: Vec<(&str, Tensor)>) -> Result<()> {
    m.to_dtype(ScalarType::F64)?;
    let sd: StateDict = entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    m.load_state_dict(&sd, true)?;
    Ok(())
}

#[test]
fn bilinear_conv3d_instance_norm_and_pixel_shuffle_match_pytorch() -> Result<()> {
    let mut bl = nn::Bilinear::new(2, 3, 2, true)?;
    load(&mut bl, vec![("weight", wave(&[2, 2, 3], 0.4, 0.1)), ("bias", Tensor::from_slice(&[0.1f64, -0.2]))])?;
    check("bilinear", &bl.forward(&wave(&[4, 2], 0.8, 0.5), &wave(&[4, 3], 0.6, 0.9))?, 1e-12);

    let opts = nn::ConvOptions::default().stride([1, 2, 1]).padding([1, 0, 0]);
    let mut c3 = nn::Conv3d::with_options(2, 2, &[2, 2, 1], opts)?;
    load(
        &mut c3,
        vec![("weight", wave(&[2, 2, 2, 2, 1], 0.45, 0.2)), ("bias", Tensor::from_slice(&[0.05f64, -0.05]))],
    )?;
    check("conv3d", &c3.call(&wave(&[1, 2, 2, 4, 2], 0.35, 0.0))?, 1e-12);

    let mut inn = nn::InstanceNorm2d::with_options(2, 1e-5, 0.1, true, true)?;
    load(
        &mut inn,
        vec![
            ("weight", Tensor::from_slice(&[1.5f64, 0.5])),
            ("bias", Tensor::from_slice(&[0.1f64, -0.1])),
            ("running_mean", Tensor::from_slice(&[0.0f64, 0.0])),
            ("running_var", Tensor::from_slice(&[1.0f64, 1.0])),
            ("num_batches_tracked", Tensor::from_slice(&[0i64]).reshape(&[])?),
        ],
    )?;
    let xi = wave(&[2, 2, 3, 3], 0.9, 0.1);
    check("instancenorm train", &inn.call(&xi)?, 1e-10);
    check("instancenorm running_mean", inn.running_mean.as_deref().unwrap(), 1e-12);
    check("instancenorm running_var", inn.running_var.as_deref().unwrap(), 1e-12);
    inn.eval();
    check("instancenorm eval", &inn.call(&xi)?, 1e-10);

    check("pixel_shuffle", &nn::PixelShuffle::new(2).call(&wave(&[1, 8, 2, 3], 0.3, 0.0))?, 0.0);
    Ok(())
}

#[test]
fn activation_modules_match_pytorch() -> Result<()> {
    let x = wave(&[7], 1.7, 0.2).mul(c10::Scalar::Float(3.0))?;
    let mut prelu = nn::PReLU::with(1, 0.3)?;
    prelu.to_dtype(ScalarType::F64)?;
    let acts: Vec<(&str, Box<dyn Forward>)> = vec![
        ("ReLU6", Box::new(nn::ReLU6::new())),
        ("Hardsigmoid", Box::new(nn::Hardsigmoid::new())),
        ("Hardswish", Box::new(nn::Hardswish::new())),
        ("SELU", Box::new(nn::SELU::new())),
        ("LogSigmoid", Box::new(nn::LogSigmoid::new())),
        ("Softsign", Box::new(nn::Softsign::new())),
        ("Tanhshrink", Box::new(nn::Tanhshrink::new())),
        ("Mish", Box::new(nn::Mish::new())),
        ("SiLU", Box::new(nn::SiLU::new())),
        ("LeakyReLU", Box::new(nn::LeakyReLU::with(0.2))),
        ("ELU", Box::new(nn::ELU::with(0.7))),
        ("CELU", Box::new(nn::CELU::with(1.3))),
        ("Softplus", Box::new(nn::Softplus::with(2.0, 3.0))),
        ("Hardtanh", Box::new(nn::Hardtanh::with(-0.5, 1.5))),
        ("Threshold", Box::new(nn::Threshold::with(0.3, -1.0))),
        ("Softmin", Box::new(nn::Softmin::with(0))),
        ("Hardshrink", Box::new(nn::Hardshrink::with(0.7))),
        ("Softshrink", Box::new(nn::Softshrink::with(0.7))),
        ("GELU tanh", Box::new(nn::GELU::with_approximate("tanh")?)),
        ("PReLU", Box::new(prelu)),
    ];
    for (name, m) in acts {
        check(&format!("act {name}"), &m.call(&x)?, 1e-12);
    }
    check("act GLU", &nn::GLU::with(0).call(&wave(&[6], 1.7, 0.2))?, 1e-12);
    Ok(())
}

#[test]
fn layers_too_big_to_exist_are_errors() {
    // 2^62 f32 weights are 2^64 bytes: the byte count used to wrap to 0 and the
    // initialisation wrote into a 0-byte buffer.
    let e = nn::Linear::new(1 << 31, 1 << 31).err().expect("an error").to_string();
    assert!(e.contains("Storage size calculation overflowed with sizes=[2147483648, 2147483648]"), "{e}");
    let e = nn::Conv2d::new(1 << 31, 1 << 31, 3).err().expect("an error").to_string();
    assert!(e.contains("Storage size calculation overflowed"), "{e}");
    let e = nn::Linear::new(-1, 2).err().expect("an error").to_string();
    assert!(e.contains("must be non-negative"), "{e}");
}
