//! Tests of `native::special`'s internals (moved out of the crate: Note [Tests outside aten]).

use aten::native::special::*;
#[allow(unused_imports)]
use aten::{Generator, Tensor};
#[allow(unused_imports)]
use c10::{Device, Element, MemoryFormat, Result, Scalar, ScalarType};
use std::f64::consts::PI;

fn close(a: f64, b: f64, rtol: f64) -> bool {
    (a - b).abs() <= rtol * b.abs().max(1e-300)
}

/// Closed forms and tabulated values (Abramowitz & Stegun; DLMF).
#[test]
fn values_at_known_points() {
    let euler = 0.577_215_664_901_532_9;
    assert!(close(digamma(1.0), -euler, 1e-15));
    assert!(close(digamma(0.5), -euler - 2.0 * 2f64.ln(), 1e-15));
    assert!(close(digamma(-0.5), 0.036_489_973_978_576_52, 1e-13));
    assert!(digamma(-2.0).is_nan());
    assert!(close(zeta(2.0, 1.0), PI * PI / 6.0, 1e-15));
    assert!(close(zeta(4.0, 1.0), PI.powi(4) / 90.0, 1e-15));
    assert!(close(zeta(3.0, 0.5), 7.0 * 1.202_056_903_159_594_2, 1e-14));
    assert!(close(polygamma(1, 1.0), PI * PI / 6.0, 1e-15));
    assert!(close(polygamma(2, 1.0), -2.0 * 1.202_056_903_159_594_2, 1e-14));
    assert!(close(i0(1.0), 1.266_065_877_752_008_4, 1e-15));
    assert!(close(i1(1.0), 0.565_159_103_992_485, 1e-15));
    assert!(close(i0e(50.0), i0_series(50.0) * (-50f64).exp(), 1e-13));
    assert!(close(i1e(-40.0), -i1_series(40.0) * (-40f64).exp(), 1e-13));
    assert!(close(k0(1.0), 0.421_024_438_240_708_3, 1e-14));
    assert!(close(k1(1.0), 0.601_907_230_197_234_6, 1e-14));
    assert!(close(k0(0.01), 4.721_244_730_161_094, 1e-14));
    assert!(close(k0e(100.0), k0(100.0) * 100f64.exp(), 1e-13));
    assert!(close(erfcx(1.0), 1f64.exp() * libm::erfc(1.0), 1e-15));
    assert!(close(erfcx(3.0), 9f64.exp() * libm::erfc(3.0), 1e-14));
    assert!(close(erfcx(30.0), 0.018_795_888_861_416_75, 1e-14));
    assert!(close(ndtri(0.975), 1.959_963_984_540_054, 1e-14));
    assert!(close(ndtri(1e-20), -9.262_340_089_798_408, 1e-13));
    assert!(close(ndtri(0.3), -0.524_400_512_708_040_9, 1e-14));
    assert!(close(ndtri(1e-300), -37.047_096_299_361_2, 1e-13));
    assert!(close(ndtri(0.999_999), 4.753_424_308_817_087, 1e-10));
    assert!(ndtri(0.5).abs() < 1e-15);
    assert!(close(log_ndtr(-20.0), -203.917_155_371_097_5, 1e-14));
    assert!(close(chebyshev_t(0.3, 9.0), (9.0 * 0.3f64.acos()).cos(), 1e-13));
    assert!(close(chebyshev_t(0.3, 3.0), 4.0 * 0.027 - 3.0 * 0.3, 1e-14));
    assert!(close(hermite_h(0.5, 3.0), 8.0 * 0.125 - 12.0 * 0.5, 1e-15));
    assert!(close(legendre_p(0.5, 2.0), 0.5 * (3.0 * 0.25 - 1.0), 1e-15));
    assert!(close(laguerre_l(2.0, 2.0), 0.5 * (4.0 - 8.0 + 2.0), 1e-15));
}
