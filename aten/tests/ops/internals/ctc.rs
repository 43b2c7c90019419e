//! The tensor-operation CTC kernels (what CUDA runs, Note [CTC loss on devices]) against the
//! CPU kernel's loops, run here on the CPU: the same losses, log-alphas and gradients.

use aten::native::loss::{ctc_loss_backward, ctc_loss_backward_tensors, ctc_loss_forward, ctc_loss_forward_tensors};
use aten::{ops, Tensor};
use c10::ScalarType;

/// Log-softmax of seeded pseudo-random logits, `(T, B, C)`.
fn log_probs(t: usize, b: usize, c: usize, dtype: ScalarType) -> Tensor {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let v: Vec<f64> = (0..t * b * c)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 6.0 - 3.0
        })
        .collect();
    let x = Tensor::from_vec(v, &[t as i64, b as i64, c as i64]).unwrap();
    ops::to(&ops::log_softmax(&x, 2, None).unwrap(), dtype, false, false, None).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    ops::to(t, ScalarType::F64, false, false, None).unwrap().contiguous().call().unwrap().to_vec::<f64>().unwrap()
}

fn assert_close(ours: &Tensor, cpu: &Tensor, what: &str) {
    assert_eq!(ours.sizes(), cpu.sizes(), "{what}: sizes");
    assert_eq!(ours.dtype(), cpu.dtype(), "{what}: dtype");
    for (i, (a, b)) in values(ours).iter().zip(values(cpu)).enumerate() {
        let same =
            (a.is_infinite() && a == &b) || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-9 * (1.0 + b.abs());
        assert!(same, "{what}[{i}]: {a} vs the CPU kernel's {b}");
    }
}

#[test]
fn tensor_kernels_match_the_cpu_loops() {
    // Repeated labels (the skip rule), an empty target, an input too short for its target (an
    // impossible alignment, infinite loss), no steps at all, and padded and concatenated
    // targets.
    let (t, c) = (6usize, 4usize);
    let input_lengths = [6i64, 4, 2, 0, 5];
    let target_lengths = [3i64, 0, 3, 0, 2];
    let rows: [[i64; 3]; 5] = [[1, 1, 2], [0, 0, 0], [3, 3, 3], [0, 0, 0], [2, 3, 0]];
    let padded = Tensor::from_vec(rows.concat(), &[5, 3]).unwrap();
    let concatenated = Tensor::from_vec(vec![1i64, 1, 2, 3, 3, 3, 2, 3], &[8]).unwrap();
    for dtype in [ScalarType::F32, ScalarType::F64] {
        let lp = log_probs(t, 5, c, dtype);
        for targets in [&padded, &concatenated] {
            let (nll, alpha) = ctc_loss_forward(&lp, targets, &input_lengths, &target_lengths, 0, false).unwrap();
            let (nll2, alpha2) =
                ctc_loss_forward_tensors(&lp, targets, &input_lengths, &target_lengths, 0, false).unwrap();
            assert_close(&nll2, &nll, "nll");
            assert_close(&alpha2, &alpha, "log_alpha");
            let v = values(&nll);
            assert!(v[2].is_infinite() && v[3] == 0.0 && v[1].is_finite(), "{v:?}");
            let grad = Tensor::from_vec(vec![1.0f64, 0.5, 2.0, 1.0, -1.0], &[5]).unwrap();
            let grad = ops::to(&grad, dtype, false, false, None).unwrap();
            for zero_infinity in [false, true] {
                let g = ctc_loss_backward(
                    &grad,
                    &lp,
                    targets,
                    &input_lengths,
                    &target_lengths,
                    &nll,
                    &alpha,
                    0,
                    zero_infinity,
                )
                .unwrap();
                let g2 = ctc_loss_backward_tensors(
                    &grad,
                    &lp,
                    targets,
                    &input_lengths,
                    &target_lengths,
                    &nll,
                    &alpha,
                    0,
                    zero_infinity,
                )
                .unwrap();
                assert_close(&g2, &g, &format!("grad (zero_infinity={zero_infinity})"));
            }
        }
    }
    // A blank other than 0, and the errors of the shared checks.
    let lp = log_probs(3, 1, 3, ScalarType::F32);
    let tg = Tensor::from_vec(vec![0i64, 1], &[1, 2]).unwrap();
    let (a, _) = ctc_loss_forward(&lp, &tg, &[3], &[2], 2, false).unwrap();
    let (b, _) = ctc_loss_forward_tensors(&lp, &tg, &[3], &[2], 2, false).unwrap();
    assert_close(&b, &a, "blank 2");
    let err = ctc_loss_forward_tensors(&lp, &tg, &[4], &[2], 2, false).unwrap_err().to_string();
    assert!(err.contains("input_lengths to have value at most 3"), "{err}");
}
