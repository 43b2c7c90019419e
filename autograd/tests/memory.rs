//! Saved tensors are freed after a backward pass without `retain_graph` (checked through the
//! caching allocator's statistics; alone in its test binary so no other test allocates
//! meanwhile).

use aten::Tensor;
use autograd::TensorAutograd;

#[test]
fn saved_tensors_are_freed_after_backward() {
    let x = Tensor::from_vec(vec![1.0f64; 4096], &[4096]).unwrap().requires_grad_(true).unwrap();
    let stats_before = c10::caching_allocator::memory_stats();
    let y = x.exp().unwrap().exp().unwrap().sum().call().unwrap();
    let during = c10::caching_allocator::memory_stats();
    assert!(during.allocated_bytes >= stats_before.allocated_bytes + 2 * 4096 * 8, "{during:?} vs {stats_before:?}");
    y.backward().unwrap();
    drop(x.grad());
    let after = c10::caching_allocator::memory_stats();
    // The two exp results (saved by their nodes) are gone; x.grad (one buffer) remains.
    assert!(after.allocated_bytes <= stats_before.allocated_bytes + 4096 * 8 + 64, "{after:?} vs {stats_before:?}");
    let _ = y;
}
