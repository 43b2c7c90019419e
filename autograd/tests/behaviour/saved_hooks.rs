//! `saved_tensors_hooks` (Note [Saved tensor hooks]): what is packed, when unpack runs, the
//! version check, nesting, and gradients equal to those computed without hooks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aten::Tensor;
use autograd::saved::{saved_tensors_hooks, Packed};
use autograd::TensorAutograd;

fn leaf(v: &[f64]) -> Tensor {
    Tensor::from_slice(v).requires_grad_(true).unwrap()
}

/// Hooks that keep saved tensors as `Vec<f64>` plus sizes, counting packs and unpacks.
fn counting_hooks(packs: Arc<AtomicUsize>, unpacks: Arc<AtomicUsize>) -> autograd::saved::SavedTensorsHooksGuard {
    saved_tensors_hooks(
        Arc::new(move |t: &Tensor| {
            packs.fetch_add(1, Ordering::SeqCst);
            assert!(!autograd::is_grad_enabled(), "pack runs with grad mode off");
            Ok(Box::new((t.to_vec::<f64>()?, t.sizes().to_vec())) as Packed)
        }),
        Arc::new(move |p: &Packed| {
            unpacks.fetch_add(1, Ordering::SeqCst);
            let (v, sizes) = p.downcast_ref::<(Vec<f64>, Vec<i64>)>().expect("our packing");
            Tensor::from_slice(v).reshape(sizes)
        }),
    )
}

#[test]
fn packed_tensors_give_the_same_gradients() {
    let (packs, unpacks) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let a = leaf(&[0.5, -1.0, 2.0, 3.0]);
    let b = leaf(&[1.5, 2.0, -0.25, 1.0]);
    let y = {
        let _h = counting_hooks(packs.clone(), unpacks.clone());
        // mul saves both inputs; exp saves its output; sin saves its input.
        a.mul(&b).unwrap().exp().unwrap().add(&b.sin().unwrap()).call().unwrap()
    };
    let saved = packs.load(Ordering::SeqCst);
    assert_eq!(saved, 4, "mul's two inputs, exp's output, sin's input");
    assert_eq!(unpacks.load(Ordering::SeqCst), 0, "nothing is unpacked before backward");
    y.sum().call().unwrap().backward().unwrap();
    assert_eq!(unpacks.load(Ordering::SeqCst), saved);
    // Closed forms: d/da = b e^{ab}, d/db = a e^{ab} + cos b.
    let (av, bv) = ([0.5, -1.0, 2.0, 3.0f64], [1.5, 2.0, -0.25, 1.0f64]);
    let ga = a.grad().unwrap().to_vec::<f64>().unwrap();
    let gb = b.grad().unwrap().to_vec::<f64>().unwrap();
    for i in 0..4 {
        let e = (av[i] * bv[i]).exp();
        assert!((ga[i] - bv[i] * e).abs() < 1e-12, "{ga:?}");
        assert!((gb[i] - (av[i] * e + bv[i].cos())).abs() < 1e-12, "{gb:?}");
    }
}

#[test]
fn hooks_apply_only_inside_their_scope_and_nest() {
    let (outer_p, outer_u) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (inner_p, inner_u) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let x = leaf(&[1.0, 2.0]);
    let y = {
        let _outer = counting_hooks(outer_p.clone(), outer_u.clone());
        let s = x.sin().unwrap(); // outer
        let c = {
            let _inner = counting_hooks(inner_p.clone(), inner_u.clone());
            s.cos().unwrap() // inner only
        };
        c.tanh().unwrap() // outer again (saves its output)
    };
    let z = y.exp().unwrap(); // no hooks
    assert_eq!((outer_p.load(Ordering::SeqCst), inner_p.load(Ordering::SeqCst)), (2, 1));
    z.sum().call().unwrap().backward().unwrap();
    assert_eq!((outer_u.load(Ordering::SeqCst), inner_u.load(Ordering::SeqCst)), (2, 1));
    let want: Vec<f64> = [1.0f64, 2.0]
        .iter()
        .map(|&v| {
            let t = v.sin().cos().tanh();
            t.exp() * (1.0 - t * t) * -v.sin().sin() * v.cos()
        })
        .collect();
    let got = x.grad().unwrap().to_vec::<f64>().unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
    }
}

#[test]
fn an_in_place_change_after_packing_is_still_caught() {
    let (packs, unpacks) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let x = leaf(&[1.0, 2.0]);
    let h = x.mul(c10::Scalar::Float(1.0)).unwrap();
    let y = {
        let _h = counting_hooks(packs, unpacks.clone());
        h.sin().unwrap()
    };
    h.add_(c10::Scalar::Float(1.0)).call().unwrap();
    let err = y.sum().call().unwrap().backward().unwrap_err().to_string();
    assert!(err.contains("modified by an inplace operation"), "{err}");
    assert!(err.contains("torch.DoubleTensor [2]"), "{err}");
    assert_eq!(unpacks.load(Ordering::SeqCst), 0, "the version check comes before unpack");
}

#[test]
fn an_unpack_error_reaches_backward() {
    let x = leaf(&[1.0, 2.0]);
    let y = {
        let _h = saved_tensors_hooks(
            Arc::new(|_: &Tensor| Ok(Box::new(()) as Packed)),
            Arc::new(|_: &Packed| Err(c10::Error::invalid("unpack", "the offloaded copy is gone"))),
        );
        x.exp().unwrap()
    };
    let err = y.sum().call().unwrap().backward().unwrap_err().to_string();
    assert!(err.contains("the offloaded copy is gone"), "{err}");
}
