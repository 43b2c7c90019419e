//! Fuzzes the MNIST CSV reader of `nn::data` (`parse_mnist_csv`: one image per line, 784
//! pixels then the label; gzipped or raw) on arbitrary bytes.
//!
//! Invariants: `Ok` or an `Err`, never a panic; a loaded dataset has `N` images `[N, 1, 28, 28]`
//! of `u8` and `N` `int64` labels in `0..=9`.

#![no_main]

use std::path::Path;

use c10::ScalarType;
use libfuzzer_sys::fuzz_target;
use nn::data::parse_mnist_csv;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = parse_mnist_csv(data, Path::new("fuzz.csv")) else { return };
    let n = m.len() as i64;
    assert!(n > 0, "an empty dataset loaded");
    assert_eq!(m.images().sizes(), &[n, 1, 28, 28]);
    assert_eq!(m.images().dtype(), ScalarType::U8);
    assert_eq!((m.labels().sizes(), m.labels().dtype()), (&[n][..], ScalarType::I64));
    let labels = m.labels().to_vec::<i64>().expect("labels are readable");
    assert!(labels.iter().all(|l| (0..=9).contains(l)), "labels {labels:?}");
    let pixels = m.images().to_vec::<u8>().expect("pixels are readable");
    assert_eq!(pixels.len() as i64, n * 28 * 28);
});
