//! Tests of `native::cpu::sgemm`'s internals (moved out of the crate: Note [Tests outside aten]).

use aten::native::cpu::sgemm::*;
#[allow(unused_imports)]
use aten::{Generator, Tensor};
#[allow(unused_imports)]
use c10::{Device, Element, MemoryFormat, Result, Scalar, ScalarType};

#[allow(clippy::too_many_arguments)]
fn reference(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    ars: usize,
    acs: usize,
    b: &[f32],
    brs: usize,
    bcs: usize,
) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| a[i * ars + p * acs] as f64 * b[p * brs + j * bcs] as f64).sum();
        }
    }
    c
}

#[test]
fn products_of_every_layout_and_edge_match_a_reference() {
    // Every kernel this CPU runs, not only the best one.
    let isas: Vec<Isa> = ISAS.into_iter().filter(|&i| runs(i)).collect();
    // Three threads: column tasks that do not divide evenly among them.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().expect("a 3-thread pool");
    // Sizes cover partial tiles (rows not a multiple of 12 or 6, columns not of 32 or 16),
    // several k blocks (k > 384) and several column blocks (n > 480), and more rows than
    // DIRECT_B_MAX_ROWS (packed `b`).
    for &(m, n, k) in &[
        (1, 1, 1),
        (12, 32, 8),
        (6, 16, 5),
        (13, 33, 9),
        (25, 70, 400),
        (40, 500, 800),
        (7, 3, 1000),
        (200, 70, 20),
        (203, 35, 270),
        // Last tiles of 4, 5 and 9 rows: the 4-, 8- and 12-row kernel instances at their
        // edges (Note [Short row tiles]).
        (64, 40, 30),
        (5, 17, 9),
        (9, 31, 3),
        // Two blocks of shared rows on the parallel path (m * k > SHARED_A_MAX), evened out
        // to 360 + 340 (Note [Even blocks]).
        (700, 20, 6100),
        // Depth blocks evened out (3 x 336 deep, the last 328), 32 panels of `b` in six column
        // tasks of 5 or 6 panels on three threads.
        (30, 1000, 1000),
    ] {
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.125).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) * 0.25).collect();
        for (a_rm, b_rm) in [(true, true), (false, true), (true, false), (false, false)] {
            let (ars, acs) = if a_rm { (k, 1) } else { (1, m) };
            let (brs, bcs) = if b_rm { (n, 1) } else { (1, k) };
            let want = reference(m, n, k, &a, ars, acs, &b, brs, bcs);
            let ldc = n + 3;
            let runs = isas.iter().flat_map(|&i| [(i, None), (i, Some(0.5f32)), (i, Some(1.0))]);
            for ((isa, beta), parallel) in runs.flat_map(|r| [(r, false), (r, true)]) {
                let mut c = vec![2f32; m * ldc];
                let (ap, bp) = (
                    Strided { ptr: a.as_ptr(), rs: ars as isize, cs: acs as isize },
                    Strided { ptr: b.as_ptr(), rs: brs as isize, cs: bcs as isize },
                );
                let cp = c.as_mut_ptr();
                if parallel {
                    // The output pointer crosses into the pool as an address: only the product
                    // called inside `install` writes through it.
                    let cp = cp as usize;
                    // SAFETY: the ISA is checked; the strides address the vectors above.
                    pool.install(|| unsafe {
                        sgemm(isa, true, m, n, k, 1.5, ap, bp, beta, cp as *mut f32, ldc as isize)
                    });
                } else {
                    // SAFETY: as above.
                    unsafe { sgemm(isa, false, m, n, k, 1.5, ap, bp, beta, cp, ldc as isize) };
                }
                for i in 0..m {
                    for j in 0..ldc {
                        let got = c[i * ldc + j] as f64;
                        if j >= n {
                            assert_eq!(got, 2.0, "{isa:?}: padding column written at ({i}, {j})");
                            continue;
                        }
                        let w = 1.5 * want[i * n + j] + beta.map_or(0.0, |bt| bt as f64 * 2.0);
                        assert!(
                            (got - w).abs() <= 1e-4 * (1.0 + w.abs()),
                            "{isa:?} parallel={parallel} {m}x{n}x{k} a_rm={a_rm} b_rm={b_rm} beta={beta:?} ({i}, \
                             {j}): {got} vs {w}"
                        );
                    }
                }
            }
        }
    }
}
