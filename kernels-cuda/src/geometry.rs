//! Building the kernels' launch geometry ([`KcGeometry`]) from a shape and the strides of every
//! operand, and choosing a launch configuration.

use c10::{Error, Result};

use crate::args::{KcGeometry, KC_MAX_DIMS, KC_MAX_OPERANDS};
use crate::driver::{LaunchConfig, StreamId};

/// Threads per block of the elementwise kernels.
pub const ELEMENTWISE_THREADS: u32 = 256;
/// At most this many blocks; larger inputs are covered by the kernels' grid-stride loops.
const MAX_BLOCKS: u64 = 65_535;

/// The geometry of `sizes` (outermost first, as a tensor's sizes) for operands with the given
/// strides (in elements, outermost first; operand 0 is the output). Size-1 dims are dropped and
/// adjacent dims that every operand walks contiguously are merged (like TensorIterator's
/// coalescing), so a contiguous tensor becomes one dim.
pub fn elementwise(sizes: &[i64], strides: &[&[i64]]) -> Result<KcGeometry> {
    if strides.is_empty() || strides.len() > KC_MAX_OPERANDS as usize {
        return Err(Error::Cuda(format!(
            "an elementwise launch takes 1 to {KC_MAX_OPERANDS} operands, got {}",
            strides.len()
        )));
    }
    if let Some(s) = strides.iter().find(|s| s.len() != sizes.len()) {
        return Err(Error::Cuda(format!("strides {s:?} do not match sizes {sizes:?}")));
    }
    let numel = c10::size::numel("cuda elementwise", sizes)?;
    // Innermost first, without size-1 dims.
    let mut dims: Vec<(i64, Vec<i64>)> = (0..sizes.len())
        .rev()
        .filter(|&d| sizes[d] != 1)
        .map(|d| (sizes[d], strides.iter().map(|s| s[d]).collect()))
        .collect();
    let mut merged: Vec<(i64, Vec<i64>)> = Vec::with_capacity(dims.len());
    for (size, st) in dims.drain(..) {
        if let Some((psize, pst)) = merged.last_mut() {
            // Dim d+1 continues dim d for an operand when its stride is size(d) * stride(d).
            if pst.iter().zip(&st).all(|(&inner, &outer)| inner.checked_mul(*psize) == Some(outer)) {
                *psize *= size;
                continue;
            }
        }
        merged.push((size, st));
    }
    if merged.len() > KC_MAX_DIMS as usize {
        return Err(Error::Cuda(format!(
            "the CUDA kernels take at most {KC_MAX_DIMS} dims after coalescing, got {} (sizes {sizes:?})",
            merged.len()
        )));
    }
    let mut g = KcGeometry { ndim: merged.len() as i32, noperands: strides.len() as i32, numel, ..Default::default() };
    for (d, (size, st)) in merged.iter().enumerate() {
        g.sizes[d] = *size;
        for (k, s) in st.iter().enumerate() {
            g.strides[k][d] = *s;
        }
    }
    Ok(g)
}

/// A 1-D launch covering `numel` elements with [`ELEMENTWISE_THREADS`] per block.
pub fn elementwise_launch(numel: i64, stream: StreamId) -> LaunchConfig {
    let blocks = (numel.max(1) as u64).div_ceil(ELEMENTWISE_THREADS as u64).min(MAX_BLOCKS);
    LaunchConfig::linear(blocks as u32, ELEMENTWISE_THREADS, stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_operands_coalesce_to_one_dim() {
        let g = elementwise(&[2, 3, 4], &[&[12, 4, 1], &[12, 4, 1]]).unwrap();
        assert_eq!((g.ndim, g.numel, g.sizes[0], g.strides[0][0], g.strides[1][0]), (1, 24, 24, 1, 1));
    }

    #[test]
    fn broadcast_and_transposed_operands_keep_their_dims() {
        // out [2, 3] contiguous; a transposed; b broadcast along dim 0.
        let g = elementwise(&[2, 3], &[&[3, 1], &[1, 2], &[0, 1]]).unwrap();
        assert_eq!(g.ndim, 2);
        assert_eq!(&g.sizes[..2], &[3, 2]);
        assert_eq!(&g.strides[0][..2], &[1, 3]);
        assert_eq!(&g.strides[1][..2], &[2, 1]);
        assert_eq!(&g.strides[2][..2], &[1, 0]);
        // Size-1 dims vanish; an empty tensor keeps numel 0.
        let g = elementwise(&[1, 0, 1], &[&[0, 1, 1]]).unwrap();
        assert_eq!((g.ndim, g.numel), (1, 0));
    }

    #[test]
    fn too_many_operands_or_dims_are_errors() {
        assert!(elementwise(&[2], &[&[1], &[1], &[1], &[1], &[1]]).is_err());
        // 13 dims that cannot merge (every other stride skips).
        let sizes = vec![2i64; 13];
        let strides: Vec<i64> = (0..13).rev().map(|d| 1i64 << (2 * d)).collect();
        let e = elementwise(&sizes, &[&strides]).unwrap_err().to_string();
        assert!(e.contains("at most 12 dims"), "{e}");
    }
}
