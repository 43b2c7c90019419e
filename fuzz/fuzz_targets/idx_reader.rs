//! Fuzzes the IDX readers of `nn::data` (MNIST's file format, gzipped or raw) on arbitrary
//! bytes: `read_idx_bytes`, `read_idx_images_bytes` and `read_idx_labels_bytes`, and for
//! images and labels that both load, `Mnist::new` and the normalised `f32` images.
//!
//! Invariants: `Ok` or an `Err`, never a panic; a loaded tensor has as many elements as the
//! product of its sizes, the announced shape and dtype, and readable values.

#![no_main]

use std::path::Path;

use aten::Tensor;
use c10::ScalarType;
use libfuzzer_sys::fuzz_target;
use nn::data::{read_idx_bytes, read_idx_images_bytes, read_idx_labels_bytes, Mnist};

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz-idx3-ubyte");
    if let Ok(t) = read_idx_bytes(data, path) {
        check("read_idx", &t);
    }
    let images = read_idx_images_bytes(data, path);
    if let Ok(t) = &images {
        check("read_idx_images", t);
        assert_eq!((t.dim(), t.sizes()[1], t.dtype()), (4, 1, ScalarType::U8), "images {:?}", t.sizes());
    }
    let labels = read_idx_labels_bytes(data, path);
    if let Ok(t) = &labels {
        check("read_idx_labels", t);
        assert_eq!((t.dim(), t.dtype()), (1, ScalarType::I64), "labels {:?}", t.sizes());
    }
    // One input is rarely both: pair what loaded with a small partner of the same length
    // (a length above 2^16 is left alone, to keep the partner small).
    let small = |n: i64| (n <= 1 << 16).then_some(n);
    let pair = match (images, labels) {
        (Ok(images), _) => small(images.sizes()[0])
            .and_then(|n| Tensor::from_vec(vec![0i64; n as usize], &[n]).ok())
            .map(|labels| (images, labels)),
        (_, Ok(labels)) => small(labels.sizes()[0])
            .and_then(|n| Tensor::from_vec(vec![0u8; n as usize * 4], &[n, 1, 2, 2]).ok())
            .map(|images| (images, labels)),
        _ => None,
    };
    if let Some((images, labels)) = pair {
        if let Ok(m) = Mnist::new(images, labels) {
            if let Ok(x) = m.images_f32(0.5, 0.25) {
                check("images_f32", &x);
            }
        }
    }
});

/// Element count, shape and values of a loaded tensor are consistent.
fn check(what: &str, t: &Tensor) {
    // An empty shape counts 0 even when its other sizes overflow (`[2^31, 2^33, 0]`).
    let product =
        if t.sizes().contains(&0) { Some(0) } else { t.sizes().iter().try_fold(1i64, |n, &s| n.checked_mul(s)) };
    assert_eq!(product, Some(t.numel()), "{what}: numel {} for sizes {:?}", t.numel(), t.sizes());
    let values = t.to_vec::<f64>().unwrap_or_else(|e| panic!("{what}: to_vec failed: {e}"));
    assert_eq!(values.len() as i64, t.numel(), "{what}");
}
