//! Outputs determined only up to the sign of each vector: eigenvectors (`linalg_eigh`) and
//! singular vectors (`_linalg_svd`, `svd`). PyTorch's signs are LAPACK's, an implementation
//! choice, so a case names such outputs in `"gauge"`, and each of our vectors is flipped to
//! point the way PyTorch's does before the comparison (the sign of their dot product). Vectors
//! past `count` (the arbitrary completion of a full `U` or `Vh`) are not compared. An output
//! with `follow` takes the flips of another (a singular vector pair flips together).
//!
//! For gradients, the upstream gradient of such an output is the stored tensor times the output
//! itself (`"gauge_outputs"` in the grad block): the vector-Jacobian product is then invariant
//! under the flips, so PyTorch's value is the expected one whatever signs either side produced.

use aten::{ops, Tensor};
use serde::Deserialize;

/// One entry of a case's `gauge` list.
#[derive(Debug, Clone, Deserialize)]
pub struct GaugeSpec {
    /// Index of the returned tensor.
    pub output: usize,
    /// The dimension that indexes the vectors: -1 for columns, -2 for rows.
    pub axis: i64,
    /// How many leading vectors are compared.
    pub count: i64,
    /// Use the flips computed for this (earlier) output instead of computing them.
    #[serde(default)]
    pub follow: Option<usize>,
}

fn err(e: c10::Error) -> String {
    e.to_string()
}

/// The leading `count` vectors along `axis` (-1: columns, -2: rows).
fn leading(t: &Tensor, axis: i64, count: i64) -> Result<Tensor, String> {
    ops::narrow(t, axis, 0, count).map_err(err)
}

/// Aligns `ours` to `expected` per `spec`: returns both cut to the compared vectors, ours
/// flipped, and the flips (±1, one per vector, batch-shaped) for outputs that follow this one.
pub fn align(
    ours: &Tensor,
    expected: &Tensor,
    spec: &GaugeSpec,
    followed: Option<&Tensor>,
) -> Result<(Tensor, Tensor, Tensor), String> {
    if ours.dim() < 2 || ours.sizes() != expected.sizes() {
        return Err(format!("shape {:?}, expected {:?}", ours.sizes(), expected.sizes()));
    }
    if !matches!(spec.axis, -1 | -2) {
        return Err(format!("gauge axis {} (expected -1 or -2)", spec.axis));
    }
    let o = leading(&ops::to(ours, c10::ScalarType::F64, false, false, None).map_err(err)?, spec.axis, spec.count)?;
    let e = leading(&ops::to(expected, c10::ScalarType::F64, false, false, None).map_err(err)?, spec.axis, spec.count)?;
    // The vector index is `axis`; the entries of a vector run along the other matrix dimension.
    let along = if spec.axis == -1 { -2 } else { -1 };
    let flips = match followed {
        Some(f) => f.clone(),
        None => {
            let dot =
                ops::sum_dim_intlist(&ops::mul(&o, &e).map_err(err)?, Some(&[along]), false, None).map_err(err)?;
            // sign(dot), with 0 counted as +1.
            let neg = ops::lt_scalar(&dot, c10::Scalar::Int(0)).map_err(err)?;
            let ones = ops::ones_like(&dot, None, None, None, None, None).map_err(err)?;
            ops::masked_fill(&ones, &neg, c10::Scalar::Int(-1)).map_err(err)?
        }
    };
    let flipped = ops::mul(&o, &ops::unsqueeze(&flips, along).map_err(err)?).map_err(err)?;
    let flipped = ops::to(&flipped, ours.dtype(), false, false, None).map_err(err)?;
    let e = ops::to(&e, expected.dtype(), false, false, None).map_err(err)?;
    Ok((flipped, e, flips))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[f64], shape: &[i64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), shape).unwrap()
    }

    #[test]
    fn vectors_align_by_sign_and_partners_follow() {
        // Columns of U: ours has the second one flipped; the third column is not compared.
        let expected_u = t(&[0.6, 0.8, 9.0, 0.8, -0.6, 9.0], &[2, 3]);
        let ours_u = t(&[0.6, -0.8, -1.0, 0.8, 0.6, 2.0], &[2, 3]);
        let spec = GaugeSpec { output: 0, axis: -1, count: 2, follow: None };
        let (o, e, flips) = align(&ours_u, &expected_u, &spec, None).unwrap();
        assert_eq!(o.to_vec::<f64>().unwrap(), e.to_vec::<f64>().unwrap());
        assert_eq!(flips.to_vec::<f64>().unwrap(), vec![1.0, -1.0]);
        // Rows of Vh follow U's flips: a row flipped the other way does not align.
        let expected_vh = t(&[1.0, 0.0, 0.0, 1.0], &[2, 2]);
        let follow = GaugeSpec { output: 2, axis: -2, count: 2, follow: Some(0) };
        let (o, e, _) = align(&t(&[1.0, 0.0, 0.0, -1.0], &[2, 2]), &expected_vh, &follow, Some(&flips)).unwrap();
        assert_eq!(o.to_vec::<f64>().unwrap(), e.to_vec::<f64>().unwrap());
        let (o, e, _) = align(&t(&[1.0, 0.0, 0.0, 1.0], &[2, 2]), &expected_vh, &follow, Some(&flips)).unwrap();
        assert_ne!(o.to_vec::<f64>().unwrap(), e.to_vec::<f64>().unwrap());
        // A different vector is still a mismatch after alignment.
        let (o, e, _) = align(&t(&[0.8, 0.6, 0.0, 0.6, -0.8, 0.0], &[2, 3]), &expected_u, &spec, None).unwrap();
        assert_ne!(o.to_vec::<f64>().unwrap(), e.to_vec::<f64>().unwrap());
        assert!(align(&t(&[1.0], &[1, 1]), &expected_u, &spec, None).is_err());
    }
}
