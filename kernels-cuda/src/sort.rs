//! The CUDA loop of `sort` (`kernels/sort.cu`, Note [Sorting by rank]).

use aten::Tensor;
use c10::{Error, Result, ScalarType};

use crate::driver::{KernelArgs, StreamId};
use crate::geometry::elementwise_launch;
use crate::loops::kernel_for;

/// `sort_<T>(lines, n, values, indices, in, descending)` (`aten::native::stub::SortLoop`): one
/// thread per element of the contiguous `[lines, n]` input.
pub(crate) fn sort(values: &Tensor, indices: &Tensor, input: &Tensor, descending: bool) -> Result<()> {
    let name = kernel_for("sort", "sort", input.dtype())?;
    let n = input.sizes().last().copied().unwrap_or(1);
    let numel = input.numel();
    let ok = [values, indices, input].iter().all(|t| t.is_contiguous() && t.sizes() == input.sizes())
        && values.dtype() == input.dtype()
        && indices.dtype() == ScalarType::I64;
    if !ok {
        return Err(Error::Cuda("sort: the loop takes contiguous values, int64 indices and input of one shape".into()));
    }
    if numel == 0 {
        return Ok(());
    }
    let device = input.device();
    let mut args = KernelArgs::new();
    args.push(numel / n).push(n).push(values.data_ptr() as u64).push(indices.data_ptr() as u64);
    args.push(input.data_ptr() as u64).push(descending);
    let stream = StreamId(crate::runtime::current_stream(device)?.id);
    let mut params = args.params();
    // SAFETY: sort_<T> takes (int64 lines, int64 n, T* values, int64_t* indices, const T* in,
    // bool); the three tensors are live, contiguous and hold lines * n elements, and every rank
    // a thread computes is below n, so every write stays inside its line.
    unsafe { crate::driver::launch(device.index as usize, &name, &elementwise_launch(numel, stream), &mut params) }
}
