//! The batched matrix product of the CUDA device (aten's `GemmLoop`, behind `mm`, `bmm`,
//! `addmm`, `baddbmm`, `addbmm` and so `matmul` and `linear`): row-major tensors mapped onto
//! the column-major [`Gemm`] contract of cuBLAS (on the emulated device, the host GEMM with
//! the same contract).
//!
//! Note [Row-major products on a column-major GEMM]: a row-major `[rows, cols]` matrix with
//! strides `(s_r, 1)` is, read column-major with leading dimension `s_r`, its own transpose;
//! with strides `(1, s_c)` it is itself with leading dimension `s_c`. So `C = A B` (row-major)
//! is computed as `C^T = B^T A^T` (column-major): cuBLAS's A is our B, its B is our A, its
//! `m, n` are our `n, m`, and each operand is "no transpose" in the first layout and
//! "transpose" in the second. Only operands in neither layout are copied.

use aten::Tensor;
use c10::{Error, MemoryFormat, Result, Scalar, ScalarType};

use crate::driver::{Gemm, StreamId};

/// How one operand is passed: transposed or not, its leading dimension, and the tensor that
/// holds it (the operand itself, or a contiguous copy).
struct Operand {
    trans: bool,
    ld: i64,
    batch_stride: i64,
    tensor: Tensor,
}

/// The operand `t` (`[batch, rows, cols]`, row-major view) as cuBLAS sees its transpose
/// (Note [Row-major products on a column-major GEMM]). Strides of size-1 dims are free, so
/// they are normalised first.
fn operand(t: &Tensor, rows: i64, cols: i64) -> Result<Operand> {
    let (sb, sr, sc) = (t.strides()[0], t.strides()[1], t.strides()[2]);
    let (r_sr, r_sc) = (if rows == 1 { cols.max(1) } else { sr }, if cols == 1 { 1 } else { sc });
    if r_sc == 1 && r_sr >= cols.max(1) {
        return Ok(Operand { trans: false, ld: r_sr, batch_stride: sb, tensor: t.clone() });
    }
    let (c_sr, c_sc) = (if rows == 1 { 1 } else { sr }, if cols == 1 { rows.max(1) } else { sc });
    if c_sr == 1 && c_sc >= rows.max(1) {
        return Ok(Operand { trans: true, ld: c_sc, batch_stride: sb, tensor: t.clone() });
    }
    let c = aten::ops::contiguous(t, MemoryFormat::Contiguous)?;
    Ok(Operand { trans: false, ld: cols.max(1), batch_stride: rows * cols, tensor: c })
}

/// `out = alpha * a @ b + beta * out` for `[batch, m, k] @ [batch, k, n]` on a CUDA device.
pub(crate) fn gemm(out: &Tensor, a: &Tensor, b: &Tensor, alpha: f64, beta: Option<f64>) -> Result<()> {
    let dtype = out.dtype();
    if !matches!(dtype, ScalarType::F32 | ScalarType::F64 | ScalarType::F16 | ScalarType::BF16) {
        // PyTorch's CUDA products are floating only ("addmm_cuda" not implemented for 'Long').
        return Err(Error::UnsupportedDtype { op: "addmm_cuda".into(), dtype });
    }
    let (batch, m, k, n) = (a.sizes()[0], a.sizes()[1], a.sizes()[2], b.sizes()[2]);
    if batch == 0 || m == 0 || n == 0 {
        return Ok(());
    }
    let beta = beta.unwrap_or(0.0);
    if k == 0 {
        // An empty sum: `beta * out`, and `out` unread when beta is 0.
        return if beta == 0.0 {
            aten::ops::fill_(out, Scalar::Int(0)).map(|_| ())
        } else {
            aten::ops::mul_scalar_(out, Scalar::Float(beta)).map(|_| ())
        };
    }
    // C must be row-major with unit column stride (it is a fresh tensor in every caller; a
    // temporary otherwise).
    let (so_b, so_r, so_c) = (out.strides()[0], out.strides()[1], out.strides()[2]);
    let direct = (so_c == 1 || n == 1) && (so_r >= n.max(1) || m == 1);
    let target = if direct {
        out.clone()
    } else {
        let t = Tensor::empty_uninit(out.sizes(), dtype, out.device())?;
        if beta != 0.0 {
            aten::ops::copy_(&t, out, false)?;
        }
        t
    };
    let ldc = if m == 1 { n.max(1) } else { target.strides()[1] };
    let (ob, oa) = (operand(b, k, n)?, operand(a, m, k)?);
    let g = Gemm {
        dtype,
        trans_a: ob.trans,
        trans_b: oa.trans,
        m: n,
        n: m,
        k,
        alpha,
        a: (ob.tensor.data_ptr() as u64, ob.ld, ob.batch_stride),
        b: (oa.tensor.data_ptr() as u64, oa.ld, oa.batch_stride),
        beta,
        c: (target.data_ptr() as u64, ldc, if direct { so_b } else { m * n }),
        batch,
    };
    let device = out.device();
    let stream = StreamId(crate::runtime::current_stream(device)?.id);
    // SAFETY: the three tensors live on `device` for the call and hold every element the
    // sizes, leading dimensions and batch strides address (they are those of the tensors);
    // `target` is a distinct allocation from the operands.
    unsafe { crate::driver::gemm(device.index as usize, &g, stream)? };
    if !target.is_same(out) {
        aten::ops::copy_(out, &target, false)?;
    }
    Ok(())
}
