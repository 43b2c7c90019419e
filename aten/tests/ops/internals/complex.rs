//! Tests of `native::complex`'s internals (moved out of the crate: Note [Tests outside aten]).

use aten::native::complex::kernels::div;
use c10::Complex;

#[test]
fn smith_division_matches_the_closed_form_and_survives_large_parts() {
    let q = div(Complex::new(1.0f64, 2.0), Complex::new(3.0, -4.0));
    // (1 + 2i)(3 + 4i) / 25 = (-5 + 10i) / 25
    assert!((q.re + 0.2).abs() < 1e-15 && (q.im - 0.4).abs() < 1e-15);
    // c^2 + d^2 overflows f64 here; the scaled form does not.
    let q = div(Complex::new(1e300f64, 1e300), Complex::new(1e300, 1e300));
    assert_eq!((q.re, q.im), (1.0, 0.0));
    let q = div(Complex::new(1.0f32, 1.0), Complex::new(0.0, 0.0));
    assert!(q.re.is_infinite() && q.im.is_infinite());
}
