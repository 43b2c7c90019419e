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
