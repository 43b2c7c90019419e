//! The CUDA loop of pooling (`kernels/pool.cu`, Note [Pooling windows] in aten's
//! `native::pool`): max pooling with indices and average pooling over the host's window table.

use aten::native::stub::{PoolGeometry, PoolMode};
use aten::Tensor;
use c10::{Error, Result, ScalarType};

use crate::args::KcPool;
use crate::driver::{KernelArgs, StreamId};
use crate::geometry::elementwise_launch;
use crate::loops::family;

/// `pool_max_<T>(KcPool, out, indices, input, windows)` or `pool_avg_<T>(KcPool, out, input,
/// windows)` (`aten::native::stub::PoolLoop`): one thread per output element.
pub(crate) fn pool(
    input: &Tensor,
    out: &Tensor,
    indices: Option<&Tensor>,
    windows: &[[i64; 4]],
    g: &PoolGeometry,
) -> Result<()> {
    let (op, id) = match g.mode {
        PoolMode::Max => ("max_pool", family!("pool_max").get("max_pool", input.dtype())?),
        PoolMode::Avg { .. } => ("avg_pool", family!("pool_avg").get("avg_pool", input.dtype())?),
    };
    let rows = g.out.iter().sum::<i64>();
    let numel = |sp: &[i64; 3]| [g.planes, sp[0], sp[1], sp[2]].iter().try_fold(1i64, |acc, &v| acc.checked_mul(v));
    let device = input.device();
    let index_ok = match (g.mode, indices) {
        (PoolMode::Max, Some(ix)) => {
            ix.is_contiguous() && ix.dtype() == ScalarType::I64 && ix.sizes() == out.sizes() && ix.device() == device
        }
        (PoolMode::Avg { .. }, None) => true,
        _ => false,
    };
    let fits = g.planes >= 0
        && g.input.iter().chain(&g.out).all(|&v| v >= 0)
        && input.is_contiguous()
        && out.is_contiguous()
        && input.dtype() == out.dtype()
        && out.device() == device
        && Some(input.numel()) == numel(&g.input)
        && Some(out.numel()) == numel(&g.out)
        && windows.len() as i64 == rows
        && index_ok;
    if !fits {
        return Err(Error::Cuda(format!(
            "{op}: the loop takes contiguous [{}, {:?}] input and [{}, {:?}] output of one dtype, int64 indices of \
             the output's shape for max pooling only, and a [{rows}, 4] int64 window table, all on one device \
             (got {:?}, {:?} and {} windows)",
            g.planes,
            g.input,
            g.planes,
            g.out,
            input.sizes(),
            out.sizes(),
            windows.len()
        )));
    }
    // Every window non-empty and inside its dim: the kernel reads without bounds checks.
    let mut row = 0;
    for d in 0..3 {
        for _ in 0..g.out[d] {
            let [first, step, count, _] = windows[row];
            let last = (count - 1).checked_mul(step).and_then(|v| v.checked_add(first));
            if first < 0 || step < 1 || count < 1 || last.is_none_or(|l| l >= g.input[d]) {
                return Err(Error::Cuda(format!(
                    "{op}: window {row} {:?} is empty or outside the input's dim {d} of size {}",
                    windows[row], g.input[d]
                )));
            }
            row += 1;
        }
    }
    if out.numel() == 0 {
        return Ok(());
    }
    let (divisor, include_pad) = match g.mode {
        PoolMode::Max => (0, 0),
        PoolMode::Avg { include_pad, divisor } => (divisor.unwrap_or(0), include_pad as i32),
    };
    if divisor == 0 && matches!(g.mode, PoolMode::Avg { divisor: Some(_), .. }) {
        return Err(Error::invalid(op, "divisor must be not zero"));
    }
    let kc = KcPool { planes: g.planes, input: g.input, out: g.out, divisor, include_pad, unused: 0 };
    let table: Vec<i64> = windows.iter().flatten().copied().collect();
    let table = Tensor::from_vec(table, &[rows, 4])?.to_device(device)?;
    let mut args = KernelArgs::new();
    args.push(kc).push(out.data_ptr() as u64);
    if let Some(ix) = indices {
        args.push(ix.data_ptr() as u64);
    }
    args.push(input.data_ptr() as u64).push(table.data_ptr() as u64);
    let stream = StreamId(crate::runtime::current_stream(device)?.id);
    let mut params = args.params();
    // SAFETY: pool_max_<T> takes (KcPool, T* out, int64_t* indices, const T* input, const
    // int64_t* windows) and pool_avg_<T> the same without the indices; every tensor is live,
    // contiguous, on the launch's device and of the checked dtype and element count. Every
    // window of the table was checked above to be non-empty with all its positions inside its
    // dim, so every read is inside its plane; the kernel writes output element i (and index i)
    // for i < planes * out's numel only. The table is dropped after the launch is queued: the
    // caching allocator hands its block out again only on this stream, so any later use of that
    // memory is ordered after the kernel (PyTorch's stream-ordered caching).
    unsafe { crate::driver::launch(device.index as usize, id, &elementwise_launch(out.numel(), stream), &mut params) }
}
