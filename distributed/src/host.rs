//! What the backends that move host buffers (MPI, Gloo) share: the description of a collective
//! that the ranks compare before running it (Note [Agreeing on a collective]), `AVG` as a
//! division afterwards, and completing a [`Work`].
//!
//! Note [Agreeing on a collective]: before a collective, the ranks all-gather a small
//! description of it (which collective, dtype, element count, root, reduction); all-to-all
//! also all-gathers every rank's send and receive counts. When the descriptions differ, every
//! rank returns the same error naming each rank's call, and nothing is transferred: ranks that
//! disagree get an error, never a hang, a crash or garbage.
use std::panic::{catch_unwind, AssertUnwindSafe};

use aten::Tensor;
use c10::{bf16, f16, Error, Result, ScalarType};

use crate::process_group::{Collective, Finish, ReduceOp};
use crate::work::Work;

pub(crate) fn dist_error(op: &str, msg: impl Into<String>) -> Error {
    Error::Distributed { op: op.into(), msg: msg.into() }
}

/// Description layout: collective, dtype, element count, root, reduction.
pub(crate) const DESC: usize = 5;

/// The description of `c` that every rank compares (Note [Agreeing on a collective]); `None`
/// for point-to-point operations.
pub(crate) fn describe_collective(c: &Collective) -> Option<[i64; DESC]> {
    let desc = |kind: i64, t: Option<&Tensor>, n: i64, root: Option<usize>, op: Option<ReduceOp>| {
        Some([
            kind,
            t.map_or(-1, |t| t.dtype() as i64),
            n,
            root.map_or(-1, |r| r as i64),
            op.map_or(-1, ReduceOp::code),
        ])
    };
    match c {
        Collective::AllReduce { buf, op } => desc(0, Some(buf), buf.numel(), None, Some(*op)),
        Collective::Broadcast { buf, root } => desc(1, Some(buf), buf.numel(), Some(*root), None),
        Collective::Reduce { buf, root, op } => desc(2, Some(buf), buf.numel(), Some(*root), Some(*op)),
        Collective::AllGather { input, .. } => desc(3, Some(input), input.numel(), None, None),
        Collective::Gather { input, root, .. } => desc(4, Some(input), input.numel(), Some(*root), None),
        Collective::Scatter { output, root, .. } => desc(5, Some(output), output.numel(), Some(*root), None),
        Collective::ReduceScatter { output, op, .. } => desc(6, Some(output), output.numel(), None, Some(*op)),
        Collective::AllToAll { input, .. } => desc(7, Some(input), 0, None, None),
        Collective::Barrier => desc(8, None, 0, None, None),
        Collective::Send { .. } | Collective::Recv { .. } => None,
    }
}

/// Checks the all-gathered descriptions `all` (`DESC` per rank) against this rank's `desc`.
pub(crate) fn check_agreement(name: &str, all: &[i64], desc: &[i64; DESC]) -> Result<()> {
    if all.chunks(DESC).all(|d| d == desc) {
        return Ok(());
    }
    let calls: Vec<String> =
        all.chunks(DESC).enumerate().map(|(r, d)| format!("rank {r} called {}", describe(d))).collect();
    Err(dist_error(name, format!("the ranks called different collectives or sizes: {}", calls.join("; "))))
}

/// This rank's send counts then receive counts, for [`check_counts`].
pub(crate) fn counts_row(send: &[usize], recv: &[usize]) -> Vec<i64> {
    send.iter().chain(recv).map(|&n| n as i64).collect()
}

/// Checks every pair of an all-to-all from every rank's [`counts_row`] (`all`, `2 size` per
/// rank): what `i` sends to `j` is what `j` expects from `i`.
pub(crate) fn check_counts(name: &str, size: usize, all: &[i64]) -> Result<()> {
    for i in 0..size {
        for j in 0..size {
            let sends = all[i * 2 * size + j];
            let expects = all[j * 2 * size + size + i];
            if sends != expects {
                return Err(dist_error(
                    name,
                    format!("rank {i} sends {sends} elements to rank {j}, which expects {expects} from it"),
                ));
            }
        }
    }
    Ok(())
}

fn describe(d: &[i64]) -> String {
    const KINDS: [&str; 9] = [
        "all_reduce",
        "broadcast",
        "reduce",
        "all_gather",
        "gather",
        "scatter",
        "reduce_scatter",
        "all_to_all",
        "barrier",
    ];
    let kind = KINDS.get(d[0] as usize).copied().unwrap_or("?");
    let mut s = kind.to_string();
    if let Some(t) = ScalarType::ALL.iter().find(|t| **t as i64 == d[1]) {
        s += &format!(" of {} {} elements", d[2], t.name());
    }
    if d[3] >= 0 {
        s += &format!(" with root {}", d[3]);
    }
    const OPS: [&str; 8] = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"];
    if let Some(op) = usize::try_from(d[4]).ok().and_then(|i| OPS.get(i)) {
        s += &format!(" with ReduceOp.{op}");
    }
    s
}

/// Runs `finish` after a success, then completes the work. A panic in `finish` becomes an error.
pub(crate) fn finish_work(work: &Work, outcome: Result<Option<usize>>, finish: Option<Finish>) {
    let outcome = match (outcome, finish) {
        (Ok(v), Some(f)) => match catch_unwind(AssertUnwindSafe(f)) {
            Ok(r) => r.map(|_| v),
            Err(_) => Err(dist_error(work.op(), "copying the result out panicked")),
        },
        (outcome, _) => outcome,
    };
    work.complete(outcome);
}

/// Divides the host tensor `buf` by `size` in place (`AVG`; integers truncate).
#[allow(unsafe_code)]
pub(crate) fn divide(buf: &Tensor, size: usize) {
    let n = buf.numel() as usize;
    let ptr = buf.data_ptr();
    macro_rules! each {
        ($t:ty, |$v:ident| $e:expr) => {{
            // SAFETY: buf is a contiguous host tensor of n elements of this type, which only the
            // backend's thread touches while its operation runs.
            let s = unsafe { std::slice::from_raw_parts_mut(ptr as *mut $t, n) };
            for x in s {
                let $v = *x;
                *x = $e;
            }
        }};
    }
    let d = size as f64;
    match buf.dtype() {
        ScalarType::F32 => each!(f32, |v| (v as f64 / d) as f32),
        ScalarType::F64 => each!(f64, |v| v / d),
        ScalarType::C64 => each!(c10::Complex<f32>, |v| v / d as f32),
        ScalarType::C128 => each!(c10::Complex<f64>, |v| v / d),
        ScalarType::F16 => each!(f16, |v| f16::from_f64(v.to_f64() / d)),
        ScalarType::BF16 => each!(bf16, |v| bf16::from_f64(v.to_f64() / d)),
        ScalarType::U8 => each!(u8, |v| (v as i64 / size as i64) as u8),
        ScalarType::I8 => each!(i8, |v| (v as i64 / size as i64) as i8),
        ScalarType::I16 => each!(i16, |v| (v as i64 / size as i64) as i16),
        ScalarType::I32 => each!(i32, |v| (v as i64 / size as i64) as i32),
        ScalarType::I64 => each!(i64, |v| v / size as i64),
        // AVG is rejected for bool before it gets here.
        ScalarType::Bool => {}
    }
}
