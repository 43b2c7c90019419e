//! The CUDA loops of `sort` (`kernels/sort.cu`: Note [Sorting by rank] for short lines, Note
//! [Merging sorted runs] for long ones) and of the runs of a sorted vector (Note [Runs of a
//! sorted vector]).

use aten::{ops, Tensor};
use c10::{Error, Result, ScalarType};

use crate::driver::{KernelArgs, KernelId, StreamId};
use crate::geometry::elementwise_launch;
use crate::loops::{family, kernel};

/// Lines at most this long are sorted by rank (n^2 comparisons per line, one launch); longer
/// ones by ceil(log2 n) merge passes.
const RANK_SORT_MAX: i64 = 256;

/// Launches `name` over `work` threads on `device`'s current stream.
///
/// # Safety
/// `args` must be `name`'s parameters, in order, with every pointer live and every element the
/// kernel reads or writes inside its allocation.
unsafe fn launch(device: c10::Device, kernel: KernelId, work: i64, args: &mut KernelArgs) -> Result<()> {
    let stream = StreamId(crate::runtime::current_stream(device)?.id);
    let mut params = args.params();
    // SAFETY: the caller's contract.
    unsafe { crate::driver::launch(device.index as usize, kernel, &elementwise_launch(work, stream), &mut params) }
}

/// `sort_<T>(lines, n, values, indices, in, descending)` for lines of at most
/// [`RANK_SORT_MAX`], `merge_<T>(lines, n, width, values, indices, in, in_indices, descending)`
/// passes for longer ones (`aten::native::stub::SortLoop`): one thread per element of the
/// contiguous `[lines, n]` input.
pub(crate) fn sort(values: &Tensor, indices: &Tensor, input: &Tensor, descending: bool) -> Result<()> {
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
    if n <= RANK_SORT_MAX {
        let id = family!("sort").get("sort", input.dtype())?;
        let mut args = KernelArgs::new();
        args.push(numel / n).push(n).push(values.data_ptr() as u64).push(indices.data_ptr() as u64);
        args.push(input.data_ptr() as u64).push(descending);
        // SAFETY: sort_<T> takes (int64 lines, int64 n, T* values, int64_t* indices, const T*
        // in, bool); the three tensors are live, contiguous and hold lines * n elements, and
        // every rank a thread computes is below n, so every write stays inside its line.
        return unsafe { launch(device, id, numel, &mut args) };
    }
    let id = family!("merge").get("sort", input.dtype())?;
    // Pass k writes into pair (passes - 1 - k) % 2, so that the last pass writes the output.
    let passes = 64 - ((n - 1) as u64).leading_zeros();
    let scratch = (
        ops::empty_like(values, None, None, None, None, None)?,
        ops::empty_like(indices, None, None, None, None, None)?,
    );
    let pairs = [(values, indices), (&scratch.0, &scratch.1)];
    for k in 0..passes {
        let (out_v, out_i) = pairs[((passes - 1 - k) % 2) as usize];
        let (in_v, in_i) = if k == 0 {
            (input.data_ptr() as u64, 0u64)
        } else {
            let (v, i) = pairs[((passes - k) % 2) as usize];
            (v.data_ptr() as u64, i.data_ptr() as u64)
        };
        let mut args = KernelArgs::new();
        args.push(numel / n).push(n).push(1i64 << k).push(out_v.data_ptr() as u64).push(out_i.data_ptr() as u64);
        args.push(in_v).push(in_i).push(descending);
        // SAFETY: merge_<T> takes (int64 lines, int64 n, int64 width, T* values, int64_t*
        // indices, const T* in, const int64_t* in_indices, bool); the output pair and the
        // scratch pair are live, contiguous and hold lines * n elements like the input, a pass
        // never reads the pair it writes, and every place a thread computes lies inside its
        // line's merged run (Note [Merging sorted runs]).
        unsafe { launch(device, id, numel, &mut args)? };
    }
    Ok(())
}

/// `runs_count`, `runs_scan` and `runs_write` (`aten::native::stub::RunsLoop`, Note [Runs of a
/// sorted vector]): writes each run's first position into `starts` (and `n` after the last)
/// and its key into `keys`; returns the number of runs.
pub(crate) fn runs(sorted: &Tensor, starts: &Tensor, keys: &Tensor) -> Result<i64> {
    let n = sorted.numel();
    let ok = [sorted, starts, keys].iter().all(|t| t.is_contiguous() && t.dtype() == ScalarType::I64 && t.dim() == 1)
        && starts.numel() > n
        && keys.numel() >= n;
    if !ok {
        return Err(Error::Cuda(format!(
            "runs: the loop takes n sorted int64 keys, n + 1 starts and n keys (got {n}, {} and {})",
            starts.numel(),
            keys.numel()
        )));
    }
    if n == 0 {
        ops::fill_(&ops::narrow(starts, 0, 0, 1)?, c10::Scalar::Int(0))?;
        return Ok(0);
    }
    // Chunks of at least 256 positions, at most 65536 chunks for the one-thread scan.
    let chunk = 256i64.max((n + (1 << 16) - 1) >> 16);
    let chunks = (n + chunk - 1) / chunk;
    let device = sorted.device();
    let counts = ops::empty(&[chunks + 1], Some(ScalarType::I64), None, Some(device), None, None)?;
    let (s, c) = (sorted.data_ptr() as u64, counts.data_ptr() as u64);
    let mut count = KernelArgs::new();
    count.push(n).push(chunk).push(s).push(c);
    let mut scan = KernelArgs::new();
    scan.push(chunks).push(c);
    let mut write = KernelArgs::new();
    write.push(n).push(chunk).push(s).push(c).push(starts.data_ptr() as u64).push(keys.data_ptr() as u64);
    // SAFETY: runs_count takes (int64 n, int64 chunk, const int64_t* sorted, int64_t* counts),
    // runs_scan (int64 chunks, int64_t* counts), runs_write (int64 n, int64 chunk, const
    // int64_t* sorted, const int64_t* firsts, int64_t* starts, int64_t* keys). `sorted` holds n
    // keys and `counts` chunks + 1; the scan makes counts[c] the runs before chunk c, so run
    // numbers stay below the total <= n, within `keys` (n) and `starts` (n + 1).
    unsafe {
        launch(device, kernel!("runs_count")?, chunks, &mut count)?;
        launch(device, kernel!("runs_scan")?, 1, &mut scan)?;
        launch(device, kernel!("runs_write")?, chunks, &mut write)?;
    }
    ops::narrow(&counts, 0, chunks, 1)?.item::<i64>()
}
