//! The recurrent operators (`rnn_tanh`, `rnn_relu`, `gru`, `lstm`): a closed-form step, and
//! their errors. Their values against PyTorch are checked through `nn`'s recurrent layers
//! (`nn/tests/nn/recurrent.rs`) and PyTorch's traced GRU (`jit/tests/jit/load.rs`).

use aten::{ops, Tensor};

fn t(v: &[f64], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

#[test]
fn one_tanh_step_is_the_closed_form() {
    // h1 = tanh(w_ih x + b_ih + w_hh h0 + b_hh) with 1-element weights.
    let x = t(&[0.5], &[1, 1, 1]);
    let h0 = t(&[0.25], &[1, 1, 1]);
    let params = [t(&[2.0], &[1, 1]), t(&[-1.0], &[1, 1]), t(&[0.1], &[1]), t(&[0.2], &[1])];
    let (out, h) = ops::rnn_tanh(&x, &h0, &params, true, 1, 0.0, false, false, false).unwrap();
    let want = (2.0f64 * 0.5 + 0.1 - 0.25 + 0.2).tanh();
    assert!((out.to_vec::<f64>().unwrap()[0] - want).abs() < 1e-15);
    assert_eq!(h.to_vec::<f64>().unwrap(), out.to_vec::<f64>().unwrap());
    let (relu, _) = ops::rnn_relu(&x, &t(&[5.0], &[1, 1, 1]), &params, true, 1, 0.0, false, false, false).unwrap();
    assert_eq!(relu.to_vec::<f64>().unwrap(), vec![0.0]);
}

#[test]
fn bad_arguments_are_errors() {
    let x = t(&[0.5; 6], &[3, 1, 2]);
    let h0 = t(&[0.0; 3], &[1, 1, 3]);
    let params = [t(&[0.1; 18], &[9, 2]), t(&[0.1; 27], &[9, 3]), t(&[0.0; 9], &[9]), t(&[0.0; 9], &[9])];
    assert!(ops::gru(&x, &h0, &params, true, 1, 0.0, false, false, false).is_ok());
    let err = |r: c10::Result<(Tensor, Tensor)>| r.unwrap_err().to_string();
    assert!(err(ops::gru(&x, &h0, &params, true, 0, 0.0, false, false, false)).contains("num_layers (0)"));
    assert!(err(ops::gru(&x, &h0, &params, true, -3, 0.0, false, false, false)).contains("num_layers (-3)"));
    assert!(err(ops::gru(&x, &h0, &params[..3], true, 1, 0.0, false, false, false)).contains("got 3 parameters"));
    assert!(err(ops::gru(&x, &h0, &params, false, 1, 0.0, false, false, false)).contains("has_biases=false"));
    assert!(err(ops::gru(&t(&[0.5; 2], &[1, 2]), &h0, &params, true, 1, 0.0, false, false, false))
        .contains("Expected input to be 3D"));
    assert!(err(ops::gru(&x, &t(&[0.0; 6], &[2, 1, 3]), &params, true, 1, 0.0, false, false, false))
        .contains("Expected hx of size"));
    let empty = Tensor::from_vec(Vec::<f64>::new(), &[0, 1, 2]).unwrap();
    assert!(err(ops::gru(&empty, &h0, &params, true, 1, 0.0, false, false, false)).contains("sequence length"));
    // An LSTM takes [h0, c0].
    let lstm_params = [t(&[0.1; 24], &[12, 2]), t(&[0.1; 36], &[12, 3])];
    let r = ops::lstm(&x, std::slice::from_ref(&h0), &lstm_params, false, 1, 0.0, false, false, false);
    assert!(r.unwrap_err().to_string().contains("expected hx to be [h0, c0], got 1 tensors"));
    let (out, h, c) =
        ops::lstm(&x, &[h0.clone(), h0.clone()], &lstm_params, false, 1, 0.0, false, false, false).unwrap();
    assert_eq!((out.sizes(), h.sizes(), c.sizes()), (&[3i64, 1, 3][..], &[1i64, 1, 3][..], &[1i64, 1, 3][..]));
}

#[test]
fn the_fused_gru_step_gives_the_operators_bits() {
    // Note [Fused GRU step]: contiguous f32 projections take the one-pass loop; the same values
    // through non-contiguous views take the operators. Both must give the same bits, and the
    // closed form to f32 accuracy.
    use aten::native::rnn::{cell_step, RnnMode};
    let (n, hid) = (5i64, 37i64);
    let det =
        |k: i64, scale: f64| -> Vec<f64> { (0..k).map(|i| ((i * 7919 % 1000) as f64 / 250.0 - 2.0) * scale).collect() };
    let f32_of = |v: Vec<f64>, shape: &[i64]| t(&v, shape).to(c10::ScalarType::F32).call().unwrap();
    // [3H, N] transposed: a non-contiguous [N, 3H] view.
    let gi_t = f32_of(det(3 * hid * n, 1.5), &[3 * hid, n]).t().unwrap();
    let gh_t = f32_of(det(3 * hid * n, -1.1), &[3 * hid, n]).t().unwrap();
    let h = f32_of(det(n * hid, 0.4), &[n, hid]);
    assert!(!gi_t.is_contiguous());
    let (ops_path, _) = cell_step(RnnMode::Gru, &gi_t, &gh_t, &h, None).unwrap();
    let (gi, gh) = (gi_t.contiguous().call().unwrap(), gh_t.contiguous().call().unwrap());
    let (fused, _) = cell_step(RnnMode::Gru, &gi, &gh, &h, None).unwrap();
    let (a, b) = (ops_path.to_vec::<f32>().unwrap(), fused.to_vec::<f32>().unwrap());
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()), "{a:?}\n{b:?}");
    let (gi, gh, hv) = (gi.to_vec::<f64>().unwrap(), gh.to_vec::<f64>().unwrap(), h.to_vec::<f64>().unwrap());
    let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
    for r in 0..n as usize {
        for j in 0..hid as usize {
            let (g, k) = (|s: usize| r * 3 * hid as usize + s * hid as usize + j, r * hid as usize + j);
            let rg = sig(gi[g(0)] + gh[g(0)]);
            let z = sig(gi[g(1)] + gh[g(1)]);
            let nn = (gi[g(2)] + rg * gh[g(2)]).tanh();
            let want = (1.0 - z) * nn + z * hv[k];
            assert!((b[k] as f64 - want).abs() < 1e-5, "({r}, {j}): {} vs {want}", b[k]);
        }
    }
}
