//! Complex tensors and `torch.fft` against PyTorch: every case of `complex_expected.json`
//! (written by `gen_complex.py` beside this file) is run here on the same inputs, and its output
//! (values, shape, dtype) and, for the differentiable cases, the gradients of
//! `sum(view_as_real(out) * w)` are compared with PyTorch's.

use aten::{ops, Tensor};
use autograd::TensorAutograd;
use c10::{Complex, Result, Scalar, ScalarType};
use serde_json::Value;

const EXPECTED: &str = include_str!("complex_expected.json");

fn decode(v: &Value) -> Tensor {
    let dtype = ScalarType::from_name(v["dtype"].as_str().unwrap()).unwrap();
    let shape: Vec<i64> = v["shape"].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect();
    let data: Vec<f64> = v["data"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    if dtype.is_complex() {
        let z: Vec<Complex<f64>> = data.chunks(2).map(|p| Complex::new(p[0], p[1])).collect();
        let t = Tensor::from_complex_vec(z, &shape).unwrap();
        ops::to(&t, dtype, false, false, None).unwrap()
    } else {
        let t = Tensor::from_vec(data, &shape).unwrap();
        ops::to(&t, dtype, false, false, None).unwrap()
    }
}

/// The values of `t` as f64s, complex ones as (re, im) pairs.
fn flat(t: &Tensor) -> Vec<f64> {
    let t =
        if t.dtype().is_complex() { ops::view_as_real(&t.contiguous().call().unwrap()).unwrap() } else { t.clone() };
    t.to_vec::<f64>().unwrap()
}

fn assert_close(what: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.sizes(), want.sizes(), "{what}: shape");
    let tol = if want.dtype().to_real() == ScalarType::F32 { 1e-5 } else { 1e-10 };
    let (g, w) = (flat(got), flat(want));
    let scale = w.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!((a - b).abs() <= tol * scale, "{what}: element {i}: {a} vs {b}\n got {g:?}\nwant {w:?}");
    }
}

fn run(name: &str, x: &[Tensor]) -> Result<Tensor> {
    let s = |v: &[i64]| v.to_vec();
    match name {
        "add" => ops::add(&x[0], &x[1], Scalar::Int(1)),
        "add_alpha" => ops::add(&x[0], &x[1], Scalar::Float(2.5)),
        "sub" => ops::sub(&x[0], &x[1], Scalar::Int(1)),
        "mul" | "mul_real_broadcast" | "c64_times_f64_scalar_tensor" => ops::mul(&x[0], &x[1]),
        "div" => ops::div(&x[0], &x[1]),
        "mul_scalar" => ops::mul_scalar(&x[0], Scalar::Float(2.0)),
        "neg" => ops::neg(&x[0]),
        "abs" => ops::abs(&x[0]),
        "angle" => ops::angle(&x[0]),
        "sgn" => ops::sgn(&x[0]),
        "conj" => ops::conj_physical(&x[0]),
        "real" => ops::real(&x[0])?.contiguous().call(),
        "imag" => ops::imag(&x[0])?.contiguous().call(),
        "sum_all" => ops::sum(&x[0], None),
        "sum_dim0" => ops::sum_dim_intlist(&x[0], Some(&[0]), false, None),
        "mean_dim1_keepdim" => ops::mean_dim(&x[0], Some(&[1]), true, None),
        "complex" => ops::complex(&x[0], &x[1]),
        "polar" => ops::polar(&x[0], &x[1]),
        "to_complex64" => ops::to(&x[0], ScalarType::C64, false, false, None),
        "to_float" => ops::to(&ops::real(&x[0])?, ScalarType::F32, false, false, None),
        "fft_real" | "fft_long_1000" | "fft_prime_97" | "fft_int" => ops::fft_fft(&x[0], None, -1, None),
        "fft_ortho_n10" => ops::fft_fft(&x[0], Some(10), -1, Some("ortho")),
        "ifft_forward_norm" => ops::fft_ifft(&x[0], None, -1, Some("forward")),
        "fft_dim0" => ops::fft_fft(&x[0], None, 0, None),
        "rfft_pad" => ops::fft_rfft(&x[0], Some(8), -1, None),
        "rfft_odd" => ops::fft_rfft(&x[0], None, -1, None),
        "irfft_default" => ops::fft_irfft(&x[0], None, -1, None),
        "irfft_n7" => ops::fft_irfft(&x[0], Some(7), -1, None),
        "hfft" => ops::fft_hfft(&x[0], None, -1, None),
        "ihfft" => ops::fft_ihfft(&x[0], None, -1, None),
        "fft2" => ops::fft_fft2(&x[0], None, &[-2, -1], None),
        "ifft2_s" => ops::fft_ifft2(&x[0], Some(&s(&[4, 2])), &[-2, -1], None),
        "fftn_dims" => ops::fft_fftn(&x[0], None, Some(&[0, 2]), None),
        "rfftn" => ops::fft_rfftn(&x[0], None, None, None),
        "rfft2_f32" => ops::fft_rfft2(&x[0], None, &[-2, -1], None),
        "irfftn_s" => ops::fft_irfftn(&x[0], Some(&s(&[3, 6])), None, None),
        "hfft2" => ops::fft_hfft2(&x[0], None, &[-2, -1], None),
        "ihfftn" => ops::fft_ihfftn(&x[0], None, None, None),
        other => panic!("complex_expected.json has a case this test does not know: {other}"),
    }
}

#[test]
fn complex_ops_and_fft_match_pytorch() {
    let all: Value = serde_json::from_str(EXPECTED).unwrap();
    let cases = all["cases"].as_object().unwrap();
    assert!(cases.len() >= 40, "the expected file has {} cases", cases.len());
    let mut grads_checked = 0;
    for (name, case) in cases {
        let inputs: Vec<Tensor> = case["inputs"].as_array().unwrap().iter().map(decode).collect();
        let out = run(name, &inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_close(name, &out, &decode(&case["output"]));
        let Some(grads) = case.get("grads") else { continue };
        let leaves: Vec<Tensor> = inputs.iter().map(|x| x.clone().requires_grad_(true).unwrap()).collect();
        let out = run(name, &leaves).unwrap_or_else(|e| panic!("{name} with grad: {e}"));
        let outr = if out.dtype().is_complex() { ops::view_as_real(&out).unwrap() } else { out };
        let n = outr.numel();
        let w = ops::reshape(
            &ops::linspace(Scalar::Float(-1.0), Scalar::Float(2.0), n, Some(outr.dtype()), None, None, None).unwrap(),
            outr.sizes(),
        )
        .unwrap();
        ops::sum(&ops::mul(&outr, &w).unwrap(), None)
            .unwrap()
            .backward()
            .unwrap_or_else(|e| panic!("{name} backward: {e}"));
        for (i, (leaf, want)) in leaves.iter().zip(grads.as_array().unwrap()).enumerate() {
            let g = leaf.grad().unwrap_or_else(|| panic!("{name}: input {i} got no gradient"));
            assert_close(&format!("{name} grad {i}"), &g, &decode(want));
            grads_checked += 1;
        }
    }
    assert!(grads_checked >= 17, "{grads_checked} gradients checked");
}

#[test]
fn complex_printing_matches_pytorch() {
    let z = Tensor::from_complex_vec(vec![Complex::new(1.0f32, 2.0), Complex::new(-3.5, -0.25)], &[2]).unwrap();
    assert_eq!(z.to_string(), "tensor([ 1.0000+2.0000j, -3.5000-0.2500j])");
    let z = Tensor::from_complex_vec(
        vec![Complex::new(1.0f64, 2.0), Complex::new(3.0, -4.0), Complex::new(0.0, 0.0), Complex::new(0.0, 1e-5)],
        &[2, 2],
    )
    .unwrap();
    assert_eq!(
        z.to_string(),
        "tensor([[1.+2.0000e+00j, 3.-4.0000e+00j],\n        [0.+0.0000e+00j, 0.+1.0000e-05j]], dtype=torch.complex128)"
    );
    let e = ops::zeros(&[0], Some(ScalarType::C64), None, None, None).unwrap();
    assert_eq!(e.to_string(), "tensor([], dtype=torch.complex64)");
}

#[test]
fn complex_promotion_views_and_errors() {
    let z = Tensor::from_complex_vec(vec![Complex::new(1.0f32, 2.0); 6], &[2, 3]).unwrap();
    // Promotion: float64 tensor with complex64 -> complex128; int with complex64 -> complex64.
    let d = Tensor::from_vec(vec![1.0f64; 3], &[3]).unwrap();
    assert_eq!(ops::add(&z, &d, Scalar::Int(1)).unwrap().dtype(), ScalarType::C128);
    let i = Tensor::from_vec(vec![2i64; 3], &[3]).unwrap();
    assert_eq!(ops::mul(&z, &i).unwrap().dtype(), ScalarType::C64);
    // view_as_real shares storage: writing the real view changes the complex tensor.
    let r = ops::view_as_real(&z).unwrap();
    assert_eq!((r.sizes(), r.strides(), r.dtype()), (&[2i64, 3, 2][..], &[6i64, 2, 1][..], ScalarType::F32));
    ops::fill_(&ops::select(&r, -1, 1).unwrap(), Scalar::Float(-7.0)).unwrap();
    assert_eq!(z.to_complex_vec::<f32>().unwrap()[4], Complex::new(1.0, -7.0));
    let back = ops::view_as_complex(&r).unwrap();
    assert_eq!((back.sizes(), back.dtype()), (&[2i64, 3][..], ScalarType::C64));
    // view_as_complex's conditions, PyTorch's messages.
    let bad = Tensor::from_vec(vec![0.0f32; 6], &[2, 3]).unwrap();
    let e = ops::view_as_complex(&bad).unwrap_err().to_string();
    assert!(e.contains("Tensor must have a last dimension of size 2"), "{e}");
    let e = ops::view_as_complex(
        &ops::transpose(&r, 0, 1).unwrap().contiguous().call().unwrap().transpose(-1, -2).unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("last dimension"), "{e}");
    // Kernels without complex arithmetic refuse complex tensors with PyTorch's error.
    let e = ops::exp(&z).unwrap_err();
    assert!(matches!(e, c10::Error::UnsupportedDtype { dtype: ScalarType::C64, .. }), "{e}");
    assert!(e.to_string().contains("not implemented for 'ComplexFloat'"), "{e}");
    let e = ops::lt(&z, &z).unwrap_err().to_string();
    assert!(e.contains("not implemented for 'ComplexFloat'"), "{e}");
    let e = ops::max(&z).unwrap_err().to_string();
    assert!(e.contains("ComplexFloat"), "{e}");
    assert!(ops::imag(&d)
        .unwrap_err()
        .to_string()
        .contains("imag is not implemented for tensors with non-complex dtypes"));
    assert!(ops::fft_rfft(&z, None, -1, None).unwrap_err().to_string().contains("expects a real input tensor"));
    let e = ops::fft_fft(&z, Some(0), -1, None).unwrap_err().to_string();
    assert!(e.contains("Invalid number of data points (0) specified"), "{e}");
    let e = ops::fft_fft(&z, None, -1, Some("bad")).unwrap_err().to_string();
    assert!(e.contains("Invalid normalization mode: \"bad\""), "{e}");
    // A complex tensor casts to real only explicitly: in-place real results refuse it.
    let f = Tensor::from_vec(vec![0.0f32; 3], &[3]).unwrap();
    assert!(ops::add_(&f, &ops::select(&z, 0, 0).unwrap(), Scalar::Int(1)).is_err());
}

#[test]
fn stft_and_istft_round_trip_and_refuse_bad_arguments() {
    let x = Tensor::from_vec((0..64).map(|i| ((i * 7) % 13) as f64 - 6.0).collect::<Vec<f64>>(), &[64]).unwrap();
    // A Hann window with hop n_fft / 4 satisfies NOLA: istft(stft(x)) is x (closed form).
    let n = 16i64;
    let hann: Vec<f64> = (0..n).map(|k| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * k as f64 / n as f64).cos()).collect();
    let w = Tensor::from_vec(hann, &[n]).unwrap();
    let spec = ops::stft_center(&x, n, None, None, Some(&w), true, "reflect", false, None, Some(true), None).unwrap();
    assert_eq!((spec.sizes(), spec.dtype()), (&[9i64, 17][..], ScalarType::C128));
    let back = ops::istft(&spec, n, None, None, Some(&w), true, false, None, Some(64), false).unwrap();
    assert_close("istft(stft(x))", &back, &x);
    // Errors, PyTorch's messages.
    let e = ops::stft(&x, n, None, None, None, false, None, None, None).unwrap_err().to_string();
    assert!(e.contains("stft requires the return_complex parameter be given for real inputs"), "{e}");
    let e = ops::stft(&x, 100, None, None, None, false, None, Some(true), None).unwrap_err().to_string();
    assert!(e.contains("stft: expected 0 < n_fft < 64, but got n_fft=100"), "{e}");
    // A window of zeros violates NOLA.
    let zeros = ops::zeros(&[n], Some(ScalarType::F64), None, None, None).unwrap();
    let e = ops::istft(&spec, n, None, None, Some(&zeros), true, false, None, None, false).unwrap_err().to_string();
    assert!(e.contains("window overlap add min"), "{e}");
    assert!(ops::istft(&x, n, None, None, None, true, false, None, None, false)
        .unwrap_err()
        .to_string()
        .contains("complex-valued input"));
}

/// Long transforms (a power of two, and 3 * 5 * 2^14, which rustfft splits in mixed radices):
/// a sum of tones has a closed-form spectrum, `X[k] = n * a_f` at each tone's bin `f` and 0
/// elsewhere.
#[test]
fn long_transforms_give_the_closed_form_spectrum_of_tones() {
    for n in [1usize << 16, 3 * 5 * (1 << 14)] {
        let tones =
            [(3usize, Complex::new(1.0f64, 0.0)), (1000, Complex::new(0.5, -2.0)), (n - 7, Complex::new(-1.5, 0.25))];
        let x: Vec<Complex<f64>> = (0..n)
            .map(|j| {
                tones.iter().fold(Complex::new(0.0, 0.0), |acc, &(f, a)| {
                    let t = 2.0 * std::f64::consts::PI * ((f * j) % n) as f64 / n as f64;
                    acc + a * Complex::new(t.cos(), t.sin())
                })
            })
            .collect();
        let xt = Tensor::from_complex_vec(x.clone(), &[n as i64]).unwrap();
        let spec = ops::fft_fft(&xt, None, -1, None).unwrap().to_complex_vec::<f64>().unwrap();
        for (k, z) in spec.iter().enumerate() {
            let want = tones.iter().find(|t| t.0 == k).map_or(Complex::new(0.0, 0.0), |t| t.1 * n as f64);
            assert!((z - want).norm() < 1e-7 * n as f64, "n = {n}, bin {k}: {z} vs {want}");
        }
        // The inverse gives the signal back; complex64 agrees within float32 accuracy.
        let back = ops::fft_ifft(&ops::fft_fft(&xt, None, -1, None).unwrap(), None, -1, None).unwrap();
        for (a, b) in back.to_complex_vec::<f64>().unwrap().iter().zip(&x) {
            assert!((a - b).norm() < 1e-12, "n = {n}: {a} vs {b}");
        }
        let x32 = ops::to(&xt, ScalarType::C64, false, false, None).unwrap();
        let spec32 = ops::fft_fft(&x32, None, -1, None).unwrap().to_complex_vec::<f64>().unwrap();
        let err = spec32.iter().zip(&spec).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max);
        assert!(err < 2e-6 * n as f64, "n = {n}: complex64 error {err}");
    }
}
