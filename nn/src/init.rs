//! `nn.init`: in-place initialisers with PyTorch's fan and gain rules. Each draws from the
//! global CPU generator in the same order as PyTorch, so a seeded model starts from PyTorch's
//! numbers. All run without recording autograd history.

use aten::{ops, Tensor};
use c10::{Error, Result, Scalar, ScalarType};

fn invalid(op: &str, msg: impl Into<String>) -> Error {
    Error::InvalidArgument { op: op.into(), msg: msg.into() }
}

/// The nonlinearities `calculate_gain` knows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Nonlinearity {
    /// `linear` and every `conv*`/`conv_transpose*` name: gain 1.
    Linear,
    /// `sigmoid`: gain 1.
    Sigmoid,
    /// `tanh`: 5/3.
    Tanh,
    /// `relu`: sqrt(2).
    Relu,
    /// `leaky_relu` with the given negative slope (PyTorch's default param is 0.01).
    LeakyRelu(f64),
    /// `selu`: 3/4.
    Selu,
}

/// `nn.init.calculate_gain`.
pub fn calculate_gain(nonlinearity: Nonlinearity) -> f64 {
    match nonlinearity {
        Nonlinearity::Linear | Nonlinearity::Sigmoid => 1.0,
        Nonlinearity::Tanh => 5.0 / 3.0,
        Nonlinearity::Relu => 2f64.sqrt(),
        Nonlinearity::LeakyRelu(a) => (2.0 / (1.0 + a * a)).sqrt(),
        Nonlinearity::Selu => 0.75,
    }
}

/// `_calculate_fan_in_and_fan_out`: `(size(1) * receptive, size(0) * receptive)`.
pub fn calculate_fan_in_and_fan_out(t: &Tensor) -> Result<(i64, i64)> {
    if t.dim() < 2 {
        return Err(invalid("init", "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"));
    }
    let receptive: i64 = t.sizes()[2..].iter().product();
    Ok((t.sizes()[1] * receptive, t.sizes()[0] * receptive))
}

/// Which fan `kaiming_*` preserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    /// `fan_in` (the default): preserves the variance of the forward pass.
    FanIn,
    /// `fan_out`: preserves the variance of the backward pass.
    FanOut,
}

fn no_grad() -> autograd::grad_mode::GradModeGuard {
    autograd::no_grad()
}

/// `uniform_(t, a, b)`.
pub fn uniform_(t: &Tensor, a: f64, b: f64) -> Result<()> {
    let _g = no_grad();
    ops::uniform_(t, a, b, None)?;
    Ok(())
}

/// `normal_(t, mean, std)`.
pub fn normal_(t: &Tensor, mean: f64, std: f64) -> Result<()> {
    let _g = no_grad();
    ops::normal_(t, mean, std, None)?;
    Ok(())
}

/// `constant_(t, val)`.
pub fn constant_(t: &Tensor, val: f64) -> Result<()> {
    let _g = no_grad();
    t.fill_(Scalar::Float(val))?;
    Ok(())
}

/// `zeros_(t)`.
pub fn zeros_(t: &Tensor) -> Result<()> {
    let _g = no_grad();
    t.zero_()?;
    Ok(())
}

/// `ones_(t)`.
pub fn ones_(t: &Tensor) -> Result<()> {
    constant_(t, 1.0)
}

/// `xavier_uniform_(t, gain)`: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).
pub fn xavier_uniform_(t: &Tensor, gain: f64) -> Result<()> {
    let (fi, fo) = calculate_fan_in_and_fan_out(t)?;
    let a = gain * (6.0 / (fi + fo) as f64).sqrt();
    uniform_(t, -a, a)
}

/// `xavier_normal_(t, gain)`: N(0, gain * sqrt(2 / (fan_in + fan_out))).
pub fn xavier_normal_(t: &Tensor, gain: f64) -> Result<()> {
    let (fi, fo) = calculate_fan_in_and_fan_out(t)?;
    normal_(t, 0.0, gain * (2.0 / (fi + fo) as f64).sqrt())
}

fn kaiming_std(t: &Tensor, mode: FanMode, nonlinearity: Nonlinearity) -> Result<f64> {
    if t.numel() == 0 {
        return Ok(0.0);
    }
    let (fi, fo) = calculate_fan_in_and_fan_out(t)?;
    let fan = if mode == FanMode::FanIn { fi } else { fo };
    Ok(calculate_gain(nonlinearity) / (fan as f64).sqrt())
}

/// `kaiming_uniform_(t, a, mode, nonlinearity)`: U(-b, b) with b = gain * sqrt(3 / fan). With
/// `Nonlinearity::LeakyRelu(a)` this is what Linear and Conv use (`a = sqrt(5)`).
pub fn kaiming_uniform_(t: &Tensor, mode: FanMode, nonlinearity: Nonlinearity) -> Result<()> {
    if t.numel() == 0 {
        return Ok(());
    }
    let bound = 3f64.sqrt() * kaiming_std(t, mode, nonlinearity)?;
    uniform_(t, -bound, bound)
}

/// `kaiming_normal_(t, a, mode, nonlinearity)`: N(0, gain / sqrt(fan)).
pub fn kaiming_normal_(t: &Tensor, mode: FanMode, nonlinearity: Nonlinearity) -> Result<()> {
    if t.numel() == 0 {
        return Ok(());
    }
    let std = kaiming_std(t, mode, nonlinearity)?;
    normal_(t, 0.0, std)
}

/// `trunc_normal_(t, mean, std, a, b)`: N(mean, std) restricted to `[a, b]`, drawn like
/// PyTorch: when the interval holds more than 30% of the mass, out-of-range values are redrawn
/// from the normal until none is left; otherwise candidates are drawn uniformly on `[a, b]`
/// and accepted with probability pdf(x) / pdf(mode).
pub fn trunc_normal_(t: &Tensor, mean: f64, std: f64, a: f64, b: f64) -> Result<()> {
    let _g = no_grad();
    let cdf = |x: f64| (1.0 + erf(x / 2f64.sqrt())) / 2.0;
    let p = cdf((b - mean) / std) - cdf((a - mean) / std);
    let any = |m: &Tensor| -> Result<bool> { ops::any(m)?.item::<bool>() };
    let fresh = |like: &Tensor| -> Result<Tensor> { ops::empty_like(like, None, None, None, None, None) };
    if p > 0.3 {
        // The bounds as the tensor's dtype represents them, so the mask agrees with the values.
        let lo = Tensor::from_slice(&[a]).to(t.dtype()).call()?.to(ScalarType::F64).call()?.item::<f64>()?;
        let hi = Tensor::from_slice(&[b]).to(t.dtype()).call()?.to(ScalarType::F64).call()?.item::<f64>()?;
        ops::normal_(t, mean, std, None)?;
        let mut result = t.clone();
        loop {
            let mask = ops::logical_or(
                &ops::lt_scalar(&result, Scalar::Float(lo))?,
                &ops::gt_scalar(&result, Scalar::Float(hi))?,
            )?;
            if !any(&mask)? {
                break;
            }
            let redraw = fresh(&result)?;
            ops::normal_(&redraw, mean, std, None)?;
            result = ops::where_self(&mask, &redraw, &result)?;
        }
        if !result.is_same(t) {
            t.copy_(&result).call()?;
        }
        return Ok(());
    }
    let mode = a.max(mean.min(b));
    let log_peak = -0.5 * ((mode - mean) / std).powi(2);
    // log pdf(x) - log pdf(mode), in place on `c`.
    let log_ratio = |c: &Tensor| -> Result<()> {
        c.sub_(Scalar::Float(mean)).call()?;
        c.div_(Scalar::Float(std)).call()?;
        c.mul_(&c.clone())?;
        c.mul_(Scalar::Float(-0.5))?;
        c.sub_(Scalar::Float(log_peak)).call()?;
        Ok(())
    };
    let candidates = fresh(t)?;
    let accept = fresh(t)?;
    ops::uniform_(t, a, b, None)?;
    candidates.copy_(t).call()?;
    log_ratio(&candidates)?;
    ops::uniform_(&accept, 0.0, 1.0, None)?;
    let mut pending = ops::gt(&ops::log(&accept)?, &candidates)?;
    if !any(&pending)? {
        return Ok(());
    }
    let mut result = t.clone();
    loop {
        ops::uniform_(&candidates, a, b, None)?;
        result = ops::where_self(&pending, &candidates, &result)?;
        log_ratio(&candidates)?;
        ops::uniform_(&accept, 0.0, 1.0, None)?;
        pending = ops::where_self(&pending, &ops::gt(&ops::log(&accept)?, &candidates)?, &pending)?;
        if !any(&pending)? {
            break;
        }
    }
    t.copy_(&result).call()?;
    Ok(())
}

fn erf(x: f64) -> f64 {
    Tensor::from_slice(&[x]).erf().and_then(|e| e.item::<f64>()).unwrap_or(f64::NAN)
}

/// `orthogonal_(t, gain)`: a (semi-)orthogonal matrix from the QR decomposition of a normal
/// sample, signs fixed by R's diagonal, as PyTorch does.
pub fn orthogonal_(t: &Tensor, gain: f64) -> Result<()> {
    if t.dim() < 2 {
        return Err(invalid("orthogonal_", "Only tensors with 2 or more dimensions are supported"));
    }
    if t.numel() == 0 {
        return Ok(());
    }
    let rows = t.sizes()[0];
    let cols = t.numel() / rows;
    let _g = no_grad();
    let flat = ops::zeros(&[rows, cols], Some(t.dtype()), None, None, None)?;
    ops::normal_(&flat, 0.0, 1.0, None)?;
    let flat = flat.to(ScalarType::F64).call()?;
    let transposed = rows < cols;
    let (m, n) = if transposed { (cols, rows) } else { (rows, cols) };
    let src = if transposed { flat.t()?.contiguous().call()? } else { flat };
    let a = src.to_vec::<f64>()?;
    let q = householder_q(&a, m as usize, n as usize);
    let q = Tensor::from_vec(q, &[m, n])?;
    let q = if transposed { q.t()?.contiguous().call()? } else { q };
    let q = q.mul(Scalar::Float(gain))?.view(t.sizes())?;
    t.copy_(&q).call()?;
    Ok(())
}

/// Q (m x n, m >= n) of the thin QR decomposition of the row-major `a`, each column multiplied
/// by the sign of R's diagonal (so the result is unique, as `torch.linalg.qr` + sign fix).
fn householder_q(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut r = a.to_vec();
    let mut vs: Vec<Vec<f64>> = Vec::with_capacity(n);
    for k in 0..n {
        let norm: f64 = (k..m).map(|i| r[i * n + k] * r[i * n + k]).sum::<f64>().sqrt();
        let mut v: Vec<f64> = (k..m).map(|i| r[i * n + k]).collect();
        let alpha = if v[0] > 0.0 { -norm } else { norm };
        v[0] -= alpha;
        let vn: f64 = v.iter().map(|x| x * x).sum::<f64>();
        if vn > 0.0 {
            for j in k..n {
                let dot: f64 = (k..m).map(|i| v[i - k] * r[i * n + j]).sum();
                let f = 2.0 * dot / vn;
                for i in k..m {
                    r[i * n + j] -= f * v[i - k];
                }
            }
        }
        vs.push(v);
    }
    // Q = H_0 H_1 ... H_{n-1} applied to the first n columns of the identity.
    let mut q = vec![0.0; m * n];
    for j in 0..n {
        q[j * n + j] = 1.0;
    }
    for k in (0..n).rev() {
        let v = &vs[k];
        let vn: f64 = v.iter().map(|x| x * x).sum::<f64>();
        if vn == 0.0 {
            continue;
        }
        for j in 0..n {
            let dot: f64 = (k..m).map(|i| v[i - k] * q[i * n + j]).sum();
            let f = 2.0 * dot / vn;
            for i in k..m {
                q[i * n + j] -= f * v[i - k];
            }
        }
    }
    for j in 0..n {
        if r[j * n + j] < 0.0 {
            for i in 0..m {
                q[i * n + j] = -q[i * n + j];
            }
        }
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn householder_q_is_orthonormal_with_positive_r_diagonal() {
        let a = [2.0, -1.0, 0.5, 1.0, 3.0, -2.0, 0.0, 1.0, 4.0, 1.0, 1.0, 1.0];
        let (m, n) = (4, 3);
        let q = householder_q(&a, m, n);
        for c1 in 0..n {
            for c2 in 0..n {
                let dot: f64 = (0..m).map(|i| q[i * n + c1] * q[i * n + c2]).sum();
                assert!((dot - if c1 == c2 { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
        // R = Q^T A has a positive diagonal and is upper triangular.
        for i in 0..n {
            for j in 0..n {
                let rij: f64 = (0..m).map(|k| q[k * n + i] * a[k * n + j]).sum();
                if i == j {
                    assert!(rij > 0.0);
                } else if i > j {
                    assert!(rij.abs() < 1e-12);
                }
            }
        }
    }
}
