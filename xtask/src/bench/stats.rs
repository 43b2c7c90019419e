//! The timing loop and its summary statistics. `bench/pytorch_reference.py` implements the same
//! method line for line, so the two columns of the table are measured alike.
//!
//! Note [Bench timing method]
//! 1. Warm-up: call the body repeatedly for `warmup` (at least once); this also estimates the
//!    time of one call.
//! 2. Batch size `k = max(1, ceil(min_sample / estimate))`, so that one sample lasts at least
//!    ~1 ms and the clock's resolution and overhead vanish for tiny workloads.
//! 3. Samples: time `k` back-to-back calls, record `elapsed / k`; stop once there are at least
//!    `min_samples` samples and `budget` has been spent, or at `max_samples`.
//! 4. Report the median of the per-iteration times, with p10/p90 and the minimum.
//!
//! The median, not the mean: on a shared 2-vCPU VM a few samples are hit by descheduling and
//! would drag a mean upwards; the median is what a repeated run reproduces.

use std::time::{Duration, Instant};

/// How long and how often to measure.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Time spent calling the body before measuring.
    pub warmup: Duration,
    /// Time to spend measuring, once `min_samples` are taken.
    pub budget: Duration,
    /// The shortest sample; tiny workloads are batched up to it.
    pub min_sample: Duration,
    /// At least this many samples, however long they take.
    pub min_samples: usize,
    /// At most this many samples.
    pub max_samples: usize,
}

impl Config {
    /// The defaults, with `budget` seconds of measurement per workload and thread count.
    pub fn with_budget(budget_s: f64) -> Config {
        Config {
            warmup: Duration::from_millis(200),
            budget: Duration::from_secs_f64(budget_s.max(0.0)),
            min_sample: Duration::from_millis(1),
            min_samples: 5,
            max_samples: 1000,
        }
    }
}

/// Per-iteration times of one measurement, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Median per-iteration time.
    pub median_s: f64,
    /// 10th percentile.
    pub p10_s: f64,
    /// 90th percentile.
    pub p90_s: f64,
    /// Fastest sample.
    pub min_s: f64,
    /// Number of samples.
    pub samples: usize,
    /// Iterations per sample.
    pub batch: u64,
}

/// The `q`-quantile (`0 <= q <= 1`) of sorted values, interpolating linearly between the two
/// nearest ranks (numpy's default, `statistics.quantiles(method="inclusive")`). `None` if empty.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

/// Summarises per-iteration times (any order). `None` if there are none.
pub fn summarize(per_iter_s: &[f64], batch: u64) -> Option<Summary> {
    let mut v: Vec<f64> = per_iter_s.to_vec();
    v.sort_by(f64::total_cmp);
    Some(Summary {
        median_s: percentile(&v, 0.5)?,
        p10_s: percentile(&v, 0.1)?,
        p90_s: percentile(&v, 0.9)?,
        min_s: v[0],
        samples: v.len(),
        batch,
    })
}

/// Iterations per sample so that a sample lasts at least `min_sample`, given the estimated
/// time of one iteration.
pub fn batch_size(estimate: Duration, min_sample: Duration) -> u64 {
    let est = estimate.as_secs_f64();
    if min_sample.is_zero() {
        return 1;
    }
    if est <= 0.0 {
        return 1_000_000;
    }
    (min_sample.as_secs_f64() / est).ceil().clamp(1.0, 1e9) as u64
}

/// Measures `body` as described in Note [Bench timing method]. The first error the body returns
/// stops the measurement and is returned.
pub fn measure<E>(cfg: &Config, body: &mut dyn FnMut() -> Result<(), E>) -> Result<Summary, E> {
    // Warm-up (and estimate).
    let start = Instant::now();
    let mut calls: u32 = 0;
    loop {
        body()?;
        calls += 1;
        if start.elapsed() >= cfg.warmup {
            break;
        }
    }
    let batch = batch_size(start.elapsed() / calls, cfg.min_sample);

    let mut samples = Vec::with_capacity(cfg.max_samples.min(1024));
    let mut spent = Duration::ZERO;
    while samples.len() < cfg.max_samples.max(1) {
        let t0 = Instant::now();
        for _ in 0..batch {
            body()?;
        }
        let dt = t0.elapsed();
        spent += dt;
        samples.push(dt.as_secs_f64() / batch as f64);
        if samples.len() >= cfg.min_samples && spent >= cfg.budget {
            break;
        }
    }
    Ok(summarize(&samples, batch).expect("at least one sample"))
}

/// The middle one of several rounds' results, by `key` (the upper middle for an even count);
/// None for no rounds. See Note [Measurement rounds] in `bench.rs`.
pub fn median_round<T>(mut rounds: Vec<T>, key: impl Fn(&T) -> f64) -> Option<T> {
    rounds.sort_by(|x, y| key(x).total_cmp(&key(y)));
    let mid = rounds.len() / 2;
    rounds.into_iter().nth(mid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_round_is_the_middle_by_key() {
        assert_eq!(median_round(vec![3.0, 9.0, 1.0], |&x| x), Some(3.0));
        assert_eq!(median_round(vec![(2, 5.0), (1, 4.0)], |r| r.1), Some((2, 5.0)));
        assert_eq!(median_round(vec![7.5], |&x| x), Some(7.5));
        assert_eq!(median_round(Vec::<f64>::new(), |&x| x), None);
    }

    #[test]
    fn percentile_interpolates_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), Some(2.5));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 1.0), Some(4.0));
        // numpy.percentile([1, 2, 3, 4], 10) == 1.3
        assert!((percentile(&v, 0.1).unwrap() - 1.3).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 0.9), Some(7.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn summary_of_unsorted_samples() {
        let s = summarize(&[5.0, 1.0, 3.0, 2.0, 4.0], 8).unwrap();
        assert_eq!(s.median_s, 3.0);
        assert_eq!(s.min_s, 1.0);
        assert!((s.p10_s - 1.4).abs() < 1e-12);
        assert!((s.p90_s - 4.6).abs() < 1e-12);
        assert_eq!(s.samples, 5);
        assert_eq!(s.batch, 8);
        assert_eq!(summarize(&[], 1), None);
    }

    #[test]
    fn median_ignores_outliers() {
        let s = summarize(&[1.0, 1.0, 1.0, 1.0, 100.0], 1).unwrap();
        assert_eq!(s.median_s, 1.0);
    }

    #[test]
    fn batch_reaches_min_sample() {
        let ms = Duration::from_millis(1);
        assert_eq!(batch_size(Duration::from_nanos(100), ms), 10_000);
        assert_eq!(batch_size(Duration::from_nanos(300), ms), 3334);
        assert_eq!(batch_size(Duration::from_millis(5), ms), 1);
        assert_eq!(batch_size(Duration::ZERO, ms), 1_000_000);
    }

    #[test]
    fn measure_counts_and_stops() {
        let cfg = Config {
            warmup: Duration::ZERO,
            budget: Duration::ZERO,
            min_sample: Duration::ZERO,
            min_samples: 3,
            max_samples: 10,
        };
        let mut n = 0u32;
        let s = measure::<()>(&cfg, &mut || {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(s.samples, 3);
        assert_eq!(s.batch, 1);
        assert_eq!(n, 1 + 3);
    }

    #[test]
    fn measure_returns_the_first_error() {
        let cfg = Config::with_budget(0.0);
        let mut n = 0u32;
        let r = measure(&cfg, &mut || {
            n += 1;
            if n == 2 {
                Err("boom")
            } else {
                Ok(())
            }
        });
        assert_eq!(r, Err("boom"));
    }
}
