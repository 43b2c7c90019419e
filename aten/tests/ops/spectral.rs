//! Long complex transforms split over threads (Note [Four-step FFT] in `native/spectral.rs`):
//! closed forms, and the same values as the single-thread transform.

use aten::{ops, Tensor};
use c10::ScalarType;

/// `[re, im]` pairs of `n` complex values as a complex tensor of `dtype` (C64 or C128).
fn complex(parts: Vec<f64>, dtype: ScalarType) -> Tensor {
    let n = (parts.len() / 2) as i64;
    let t = Tensor::from_vec(parts, &[n, 2]).unwrap();
    let real = if dtype == ScalarType::C64 { ScalarType::F32 } else { ScalarType::F64 };
    ops::view_as_complex(&ops::_to_copy(&t, Some(real), None, None, None, false, None).unwrap()).unwrap()
}

fn parts(t: &Tensor) -> Vec<f64> {
    ops::view_as_real(t).unwrap().to_vec::<f64>().unwrap()
}

fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

/// 2^17 points (split 256 x 512) and 3 * 2^16 (384 x 512): a pure tone transforms to `n` at
/// its frequency and zero elsewhere, forward and back; a pseudo-random signal gives the
/// single-thread transform's values on two and three threads.
#[test]
fn long_transforms_on_several_threads_match_closed_forms_and_one_thread() {
    for (dtype, tol) in [(ScalarType::C64, 2e-6), (ScalarType::C128, 1e-13)] {
        for n in [1usize << 17, 3 << 16] {
            let f = 12_345usize;
            let tone: Vec<f64> = (0..n)
                .flat_map(|j| {
                    let a = 2.0 * std::f64::consts::PI * ((f * j) % n) as f64 / n as f64;
                    [a.cos(), a.sin()]
                })
                .collect();
            let x = complex(tone, dtype);
            let spectrum = on_threads(2, || ops::fft_fft(&x, None, -1, None)).unwrap();
            assert_eq!((spectrum.dtype(), spectrum.sizes()), (dtype, &[n as i64][..]));
            let got = parts(&spectrum);
            for k in 0..n {
                let want = if k == f { n as f64 } else { 0.0 };
                let err = (got[2 * k] - want).abs().max(got[2 * k + 1].abs());
                assert!(err <= tol * n as f64, "{dtype:?} n={n}: X[{k}] = ({}, {})", got[2 * k], got[2 * k + 1]);
            }
            // The inverse (normalised by 1/n) gives the tone back.
            let back = parts(&on_threads(2, || ops::fft_ifft(&spectrum, None, -1, None)).unwrap());
            for j in (0..n).step_by(97) {
                let a = 2.0 * std::f64::consts::PI * ((f * j) % n) as f64 / n as f64;
                assert!(
                    (back[2 * j] - a.cos()).abs() <= 100.0 * tol && (back[2 * j + 1] - a.sin()).abs() <= 100.0 * tol
                );
            }
            let mut s = 7u64;
            let noise: Vec<f64> = (0..2 * n)
                .map(|_| {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
                })
                .collect();
            let x = complex(noise, dtype);
            let one = parts(&on_threads(1, || ops::fft_fft(&x, None, -1, None)).unwrap());
            let scale = one.iter().fold(0f64, |m, v| m.max(v.abs()));
            for threads in [2, 3] {
                let got = parts(&on_threads(threads, || ops::fft_fft(&x, None, -1, None)).unwrap());
                let err = got.iter().zip(&one).fold(0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(err <= 4.0 * tol * scale, "{dtype:?} n={n}, {threads} threads: {err} against {scale}");
            }
        }
    }
}
