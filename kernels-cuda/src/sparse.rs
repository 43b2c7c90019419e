//! The CUDA loop of sparse @ dense products (`kernels/sparse.cu`, Note [Row-wise sparse
//! products]).

use aten::Tensor;
use c10::{Error, Result, ScalarType};

use crate::driver::{KernelArgs, StreamId};
use crate::geometry::elementwise_launch;
use crate::loops::family;

/// `spmm_<T>(rows, n, out, dense, values, crow, col, order)` (`aten::native::stub::SpmmLoop`):
/// one thread per element of the contiguous `[rows, n]` output.
pub(crate) fn spmm(
    out: &Tensor,
    dense: &Tensor,
    values: &Tensor,
    crow: &Tensor,
    col: &Tensor,
    order: Option<&Tensor>,
) -> Result<()> {
    let op = "spmm";
    let id = family!("spmm").get(op, out.dtype())?;
    let (rows, n) = match out.sizes() {
        &[r, c] => (r, c),
        s => return Err(Error::Cuda(format!("{op}: a [rows, cols] output expected, got {s:?}"))),
    };
    let indices = [Some(crow), Some(col), order];
    let ok = [out, dense, values].iter().all(|t| t.is_contiguous() && t.dtype() == out.dtype())
        && indices.iter().flatten().all(|t| t.is_contiguous() && t.dtype() == ScalarType::I64 && t.dim() == 1)
        && dense.dim() == 2
        && dense.sizes()[1] == n
        && crow.numel() == rows + 1
        && values.dim() == 1
        && col.numel() == values.numel()
        && order.is_none_or(|o| o.numel() == values.numel());
    if !ok {
        return Err(Error::Cuda(format!(
            "{op}: the loop takes a contiguous [rows, n] output and dense operand, one value and column per \
             element and rows + 1 offsets (got out {:?}, dense {:?}, {} values, {} offsets)",
            out.sizes(),
            dense.sizes(),
            values.numel(),
            crow.numel()
        )));
    }
    let work = rows.checked_mul(n).ok_or_else(|| Error::Cuda(format!("{op}: {rows} x {n} overflows")))?;
    if work == 0 {
        return Ok(());
    }
    let device = out.device();
    let mut args = KernelArgs::new();
    args.push(rows).push(n).push(out.data_ptr() as u64).push(dense.data_ptr() as u64);
    args.push(values.data_ptr() as u64).push(crow.data_ptr() as u64).push(col.data_ptr() as u64);
    args.push(order.map_or(0u64, |o| o.data_ptr() as u64));
    let stream = StreamId(crate::runtime::current_stream(device)?.id);
    let mut params = args.params();
    // SAFETY: spmm_<T> takes (int64 rows, int64 n, T* out, const T* dense, const T* values,
    // const int64_t* crow, col, order); the tensors are live and contiguous with the sizes
    // checked above. The operator built `crow` as rows + 1 nondecreasing offsets into the
    // elements (a CSR tensor's were checked at construction), `order` (when given) as a
    // permutation of the elements, and checked every column against dense's rows, so every
    // element the kernel reads is inside its tensor and every output element is written once.
    unsafe { crate::driver::launch(device.index as usize, id, &elementwise_launch(work, stream), &mut params) }
}
