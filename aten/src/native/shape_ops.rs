//! Shape operators that rearrange elements into a new tensor: `repeat`, `tile`,
//! `repeat_interleave`, `flip`, `roll`, `rot90`, `tril`/`triu`, `diag`, `diag_embed`, `pad`
//! (constant, reflect, replicate, circular), and the view-returning `broadcast_to`, `movedim`
//! and `unflatten`. The copying kernels read through per-dimension index maps
//! (See Note [Reference data movement]).

use c10::{Error, Result, Scalar};

use crate::native::cpu::gather::{dim_map, identity_map, separable_index, take_flat};
use crate::native::join::write_out;
use crate::native::stub;
use crate::{wrap_dim, Tensor};

/// `t`'s elements read through per-dimension maps (output dim `d` has `maps[d].len()` entries),
/// with `fill` where a map has no source, on `t`'s device.
///
/// Note [Device gathers]: flip, roll, repeat, padding, rot90, diag_embed's source and
/// index_select (and so embedding) move elements through one index map per dimension. On the
/// CPU the gather runs on the host ([`take_flat`]). On another device the maps (a few integers
/// per output row or column, not per element) are copied there and the backend's gather loop
/// ([`stub::run_remap`]) moves the elements, so the result lives on the input's device and its
/// memory is never read on the host. A device without that loop fails with an error naming it.
pub(crate) fn remap(t: &Tensor, maps: &[Vec<Option<i64>>], fill: Scalar) -> Result<Tensor> {
    let sizes: Vec<i64> = maps.iter().map(|m| m.len() as i64).collect();
    if t.device().is_cpu() {
        return take_flat(t, &separable_index(t.sizes(), maps)?, &sizes, fill);
    }
    let total: usize = maps.iter().map(Vec::len).sum();
    let mut flat: Vec<i64> = c10::size::try_vec(total)?;
    let mut offsets = Vec::with_capacity(maps.len());
    for m in maps {
        offsets.push(Some(flat.len() as i64));
        flat.extend(m.iter().map(|s| s.unwrap_or(-1)));
    }
    let maps = Tensor::from_vec(flat, &[total as i64])?.to_device(t.device())?;
    gather_on_device("remap", t, &sizes, &maps, &offsets, fill)
}

/// A new contiguous tensor of `sizes` on `src`'s device gathered from `src` through `maps`, an
/// int64 tensor on that device (see [`stub::RemapLoop`]): Note [Device gathers].
pub(crate) fn gather_on_device(
    op: &str,
    src: &Tensor,
    sizes: &[i64],
    maps: &Tensor,
    map_offsets: &[Option<i64>],
    fill: Scalar,
) -> Result<Tensor> {
    let out = Tensor::empty_uninit(sizes, src.dtype(), src.device())?;
    if out.numel() > 0 {
        stub::run_remap(op, &out, src, maps, map_offsets, fill)?;
    }
    Ok(out)
}

/// A new tensor of zeros of `sizes` with `like`'s dtype, on `like`'s device.
fn zeros_on(like: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    crate::ops::zeros(sizes, Some(like.dtype()), None, Some(like.device()), None)
}

/// The identity map of every dimension of `t`. The maps are as long as the dimensions, which
/// for an empty tensor can be huge (`[2^40, 0]`): callers whose output is empty return before
/// building them.
fn identity_maps(t: &Tensor) -> Result<Vec<Vec<Option<i64>>>> {
    t.sizes().iter().map(|&n| identity_map(n)).collect()
}

/// An output size `a op b` that overflows `i64` is PyTorch's element-count overflow.
fn size_overflow(op: &str) -> Error {
    Error::invalid(op, "numel: integer multiplication overflow")
}

/// `repeat(Tensor self, SymInt[] repeats) -> Tensor`
pub fn repeat(self_: &Tensor, repeats: &[i64]) -> Result<Tensor> {
    if repeats.len() < self_.dim() {
        return Err(Error::invalid(
            "repeat",
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
        ));
    }
    if let Some(&r) = repeats.iter().find(|&&r| r < 0) {
        return Err(Error::invalid(
            "repeat",
            format!("Trying to create tensor with negative dimension {r}: {repeats:?}"),
        ));
    }
    let lead = repeats.len() - self_.dim();
    let padded: Vec<i64> = std::iter::repeat_n(1, lead).chain(self_.sizes().iter().copied()).collect();
    let src = crate::ops::reshape(self_, &padded)?;
    let out: Vec<i64> = padded
        .iter()
        .zip(repeats)
        .map(|(&n, &r)| n.checked_mul(r).ok_or_else(|| size_overflow("repeat")))
        .collect::<Result<_>>()?;
    if c10::size::numel("repeat", &out)? == 0 {
        return zeros_on(self_, &out);
    }
    let maps: Vec<Vec<Option<i64>>> =
        padded.iter().zip(&out).map(|(&n, &o)| dim_map(o, |o| Some(o % n))).collect::<Result<_>>()?;
    remap(&src, &maps, Scalar::Int(0))
}

/// `tile(Tensor self, SymInt[] dims) -> Tensor`
pub fn tile(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let n = self_.dim();
    if dims.len() < n {
        let full: Vec<i64> = std::iter::repeat_n(1, n - dims.len()).chain(dims.iter().copied()).collect();
        return crate::ops::repeat(self_, &full);
    }
    crate::ops::repeat(self_, dims)
}

/// The checked output length of `repeat_interleave` along a dimension of size `n`.
fn interleave_len(op: &str, n: i64, repeats: &[i64]) -> Result<i64> {
    if repeats.len() != 1 && repeats.len() as i64 != n {
        return Err(Error::invalid(
            op,
            format!("repeats must have the same size as input along dim, but got repeats.size(0) = {} and input.size(0) = {n}", repeats.len()),
        ));
    }
    if repeats.iter().any(|&r| r < 0) {
        return Err(Error::invalid(op, "repeats can not be negative"));
    }
    let total = if repeats.len() == 1 {
        repeats[0].checked_mul(n)
    } else {
        repeats.iter().try_fold(0i64, |a, &r| a.checked_add(r))
    };
    total.ok_or_else(|| size_overflow(op))
}

/// Per-output-index source positions of `repeat_interleave` (`total` of them, from
/// [`interleave_len`]).
fn interleave_map(n: i64, repeats: &[i64], total: i64) -> Result<Vec<Option<i64>>> {
    let mut map = c10::size::try_vec(total as usize)?;
    for i in 0..n {
        let r = if repeats.len() == 1 { repeats[0] } else { repeats[i as usize] };
        map.extend(std::iter::repeat_n(Some(i), r as usize));
    }
    Ok(map)
}

fn repeat_interleave_impl(t: &Tensor, repeats: &[i64], dim: Option<i64>, output_size: Option<i64>) -> Result<Tensor> {
    let op = "repeat_interleave";
    let (src, d) = match dim {
        None => (crate::ops::reshape(t, &[-1])?, 0),
        Some(d) => (t.clone(), wrap_dim(op, d, t.dim())?),
    };
    let src = if src.dim() == 0 { crate::ops::reshape(&src, &[1])? } else { src };
    let total = interleave_len(op, src.sizes()[d], repeats)?;
    if let Some(os) = output_size {
        if os != total {
            return Err(Error::invalid(op, format!("allocated size does not match required size: {os} vs {total}")));
        }
    }
    if src.numel() == 0 || total == 0 {
        // No positions to map: `[0, 4]` repeated 2^40 times along dim 1 is an empty `[0, 2^42]`.
        let mut out = src.sizes().to_vec();
        out[d] = total;
        return zeros_on(&src, &out);
    }
    let mut maps = identity_maps(&src)?;
    maps[d] = interleave_map(src.sizes()[d], repeats, total)?;
    remap(&src, &maps, Scalar::Int(0))
}

fn int_values(op: &str, t: &Tensor) -> Result<Vec<i64>> {
    if t.dtype() != c10::ScalarType::I64 && t.dtype() != c10::ScalarType::I32 {
        return Err(Error::invalid(
            op,
            format!("{op}: repeats has to be Long or Int tensor, got {}", t.dtype().cpp_name()),
        ));
    }
    if t.dim() > 1 {
        return Err(Error::invalid(op, "repeats must be 0-dim or 1-dim tensor"));
    }
    t.to_vec::<i64>()
}

/// `repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor`
pub fn repeat_interleave_self_int(
    self_: &Tensor,
    repeats: i64,
    dim: Option<i64>,
    output_size: Option<i64>,
) -> Result<Tensor> {
    repeat_interleave_impl(self_, &[repeats], dim, output_size)
}

/// `repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor`
pub fn repeat_interleave_self_tensor(
    self_: &Tensor,
    repeats: &Tensor,
    dim: Option<i64>,
    output_size: Option<i64>,
) -> Result<Tensor> {
    let r = int_values("repeat_interleave", repeats)?;
    repeat_interleave_impl(self_, &r, dim, output_size)
}

/// `repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor`:
/// `arange(len(repeats))` with element `i` repeated `repeats[i]` times.
pub fn repeat_interleave_tensor(repeats: &Tensor, output_size: Option<i64>) -> Result<Tensor> {
    let r = int_values("repeat_interleave", repeats)?;
    if repeats.dim() != 1 {
        return Err(Error::invalid("repeat_interleave", "repeat_interleave only accept 1D vector as repeat"));
    }
    let n = r.len() as i64;
    let total = interleave_len("repeat_interleave", n, &r)?;
    if let Some(os) = output_size {
        if os != total {
            return Err(Error::invalid(
                "repeat_interleave",
                format!("allocated size does not match required size: {os} vs {total}"),
            ));
        }
    }
    let v: Vec<i64> = interleave_map(n, &r, total)?.into_iter().flatten().collect();
    let n = v.len() as i64;
    let out = Tensor::from_vec(v, &[n])?;
    crate::native::copy::to_dtype(&out, repeats.dtype())
}

/// Wraps a list of dims, rejecting duplicates with PyTorch's `flip` message.
fn wrap_unique(op: &str, dims: &[i64], n: usize) -> Result<Vec<usize>> {
    let out = dims.iter().map(|&d| wrap_dim(op, d, n)).collect::<Result<Vec<usize>>>()?;
    let mut unique = out.clone();
    unique.sort_unstable();
    unique.dedup();
    if unique.len() != out.len() {
        return Err(Error::invalid(
            op,
            format!(
                "dims has duplicates, original flip dims size={}, but unique flip dims size={}",
                out.len(),
                unique.len()
            ),
        ));
    }
    Ok(out)
}

/// `flip(Tensor self, int[] dims) -> Tensor`
pub fn flip(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let flipped = wrap_unique("flip", dims, self_.dim())?;
    if self_.numel() == 0 {
        return zeros_on(self_, self_.sizes());
    }
    let mut maps = identity_maps(self_)?;
    for d in flipped {
        if d < maps.len() {
            let n = self_.sizes()[d];
            maps[d] = dim_map(n, |o| Some(n - 1 - o))?;
        }
    }
    remap(self_, &maps, Scalar::Int(0))
}

/// `roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor`
pub fn roll(self_: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if dims.is_empty() {
        if shifts.len() != 1 {
            return Err(Error::invalid(
                "roll",
                format!("shifts and dimensions must align. shifts: {}, dims:0", shifts.len()),
            ));
        }
        let flat = crate::ops::reshape(self_, &[-1])?;
        let rolled = roll(&flat, shifts, &[0])?;
        return crate::ops::view(&rolled, self_.sizes());
    }
    if shifts.len() != dims.len() {
        return Err(Error::invalid(
            "roll",
            format!("shifts and dimensions must align. shifts: {}, dims:{}", shifts.len(), dims.len()),
        ));
    }
    if self_.numel() == 0 {
        for &d in dims {
            wrap_dim("roll", d, self_.dim())?;
        }
        return zeros_on(self_, self_.sizes());
    }
    let mut maps = identity_maps(self_)?;
    for (&s, &d) in shifts.iter().zip(dims) {
        let w = wrap_dim("roll", d, self_.dim())?;
        if w >= maps.len() {
            continue;
        }
        let n = self_.sizes()[w];
        if n > 0 {
            // `s % n` first: a shift of `i64::MIN` overflowed `o - s`.
            maps[w] = maps[w].iter().map(|&o| o.map(|o| (o - s % n).rem_euclid(n))).collect();
        }
    }
    remap(self_, &maps, Scalar::Int(0))
}

/// `rot90(Tensor self, int k=1, int[] dims=[0,1]) -> Tensor`
pub fn rot90(self_: &Tensor, k: i64, dims: &[i64]) -> Result<Tensor> {
    if dims.len() != 2 {
        return Err(Error::invalid(
            "rot90",
            format!("expected total rotation dims == 2, but got dims = {}", dims.len()),
        ));
    }
    if self_.dim() < 2 {
        return Err(Error::invalid("rot90", format!("expected total dims >= 2, but got total dims = {}", self_.dim())));
    }
    let d0 = wrap_dim("rot90", dims[0], self_.dim())?;
    let d1 = wrap_dim("rot90", dims[1], self_.dim())?;
    if d0 == d1 {
        return Err(Error::invalid(
            "rot90",
            format!("expected rotation dims to be different, but got dim0 = {} and dim1 = {}", dims[0], dims[1]),
        ));
    }
    let (d0, d1) = (d0 as i64, d1 as i64);
    let r = match k.rem_euclid(4) {
        1 => crate::ops::transpose(&flip(self_, &[d1])?, d0, d1)?,
        2 => flip(self_, &[d0, d1])?,
        3 => crate::ops::transpose(&flip(self_, &[d0])?, d0, d1)?,
        _ => return crate::ops::clone(self_, Some(c10::MemoryFormat::Contiguous)),
    };
    crate::ops::contiguous(&r, c10::MemoryFormat::Contiguous)
}

fn tri(op: &'static str, t: &Tensor, diagonal: i64, lower: bool) -> Result<Tensor> {
    let n = t.dim();
    if n < 2 {
        return Err(Error::invalid(op, format!("{op}: input tensor must have at least 2 dimensions")));
    }
    let (rows, cols) = (t.sizes()[n - 2], t.sizes()[n - 1]);
    if crate::native::on_device(t) {
        // On a device: `where(j - i <= diagonal, t, 0)` (`>=` for triu) with the mask built from
        // two aranges on the device and broadcast over the batch.
        let device = Some(t.device());
        let i = crate::ops::reshape(
            &crate::ops::arange(Scalar::Int(rows), Some(c10::ScalarType::I64), None, device, None)?,
            &[rows, 1],
        )?;
        let j = crate::ops::reshape(
            &crate::ops::arange(Scalar::Int(cols), Some(c10::ScalarType::I64), None, device, None)?,
            &[1, cols],
        )?;
        let diff = crate::ops::sub(&j, &i, Scalar::Int(1))?;
        let keep = if lower {
            crate::ops::le_scalar(&diff, Scalar::Int(diagonal))?
        } else {
            crate::ops::ge_scalar(&diff, Scalar::Int(diagonal))?
        };
        let zero = crate::ops::zeros(&[], Some(t.dtype()), None, device, None)?;
        return crate::ops::where_self(&keep, t, &zero);
    }
    c10::dispatch_all_types!(t.dtype(), T => {
        let mut v = t.to_vec::<T>()?;
        if rows * cols > 0 {
            for (k, x) in v.iter_mut().enumerate() {
                let k = k as i64 % (rows * cols);
                let (i, j) = (k / cols, k % cols);
                let keep = if lower { j - i <= diagonal } else { j - i >= diagonal };
                if !keep {
                    *x = T::default();
                }
            }
        }
        Tensor::from_vec(v, t.sizes())
    })
}

/// `tril(Tensor self, int diagonal=0) -> Tensor`
pub fn tril(self_: &Tensor, diagonal: i64) -> Result<Tensor> {
    tri("tril", self_, diagonal, true)
}
/// `tril_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)`
pub fn tril_(self_: &Tensor, diagonal: i64) -> Result<Tensor> {
    let r = tri("tril", self_, diagonal, true)?;
    crate::native::copy::copy_into(self_, &r)?;
    Ok(self_.clone())
}
/// `tril.out(Tensor self, int diagonal=0, *, Tensor(a!) out) -> Tensor(a!)`
pub fn tril_out(self_: &Tensor, diagonal: i64, out: &Tensor) -> Result<Tensor> {
    write_out("tril", out, &tri("tril", self_, diagonal, true)?)
}
/// `triu(Tensor self, int diagonal=0) -> Tensor`
pub fn triu(self_: &Tensor, diagonal: i64) -> Result<Tensor> {
    tri("triu", self_, diagonal, false)
}
/// `triu_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)`
pub fn triu_(self_: &Tensor, diagonal: i64) -> Result<Tensor> {
    let r = tri("triu", self_, diagonal, false)?;
    crate::native::copy::copy_into(self_, &r)?;
    Ok(self_.clone())
}
/// `triu.out(Tensor self, int diagonal=0, *, Tensor(a!) out) -> Tensor(a!)`
pub fn triu_out(self_: &Tensor, diagonal: i64, out: &Tensor) -> Result<Tensor> {
    write_out("triu", out, &tri("triu", self_, diagonal, false)?)
}

/// `diag(Tensor self, int diagonal=0) -> Tensor`: the diagonal of a matrix, or the matrix with a
/// vector on its diagonal.
pub fn diag(self_: &Tensor, diagonal: i64) -> Result<Tensor> {
    match self_.dim() {
        1 => {
            // Checked: |i64::MIN| and the sum overflow.
            let n = diagonal
                .checked_abs()
                .and_then(|a| self_.sizes()[0].checked_add(a))
                .ok_or_else(|| size_overflow("diag"))?;
            let out = zeros_on(self_, &[n, n])?;
            let d = crate::native::shape::diagonal(&out, diagonal, 0, 1)?;
            crate::native::copy::copy_into(&d, self_)?;
            Ok(out)
        }
        2 => {
            let d = crate::native::shape::diagonal(self_, diagonal, 0, 1)?;
            crate::ops::clone(&d, Some(c10::MemoryFormat::Contiguous))
        }
        n => Err(Error::invalid("diag", format!("diag(): Supports 1D or 2D tensors. Got {n}D"))),
    }
}

/// `diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor`
pub fn diag_embed(self_: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let n = self_.dim() + 1;
    let d1 = wrap_dim("diag_embed", dim1, n)?;
    let d2 = wrap_dim("diag_embed", dim2, n)?;
    if d1 == d2 {
        return Err(Error::invalid("diag_embed", format!("diagonal dimensions cannot be identical {dim1}, {dim2}")));
    }
    let last = if self_.dim() == 0 { 1 } else { self_.sizes()[self_.dim() - 1] };
    let m = offset.checked_abs().and_then(|a| last.checked_add(a)).ok_or_else(|| size_overflow("diag_embed"))?;
    let mut rest: Vec<i64> = if self_.dim() == 0 { vec![] } else { self_.sizes()[..self_.dim() - 1].to_vec() };
    let mut shape = Vec::with_capacity(n);
    for i in 0..n {
        shape.push(if i == d1 || i == d2 { m } else { rest.remove(0) });
    }
    let out = zeros_on(self_, &shape)?;
    let d = crate::native::shape::diagonal(&out, offset, d1 as i64, d2 as i64)?;
    crate::native::copy::copy_into(&d, self_)?;
    Ok(out)
}

/// `broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)`
pub fn broadcast_to(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    crate::ops::expand(self_, size, false)
}

/// `movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)`
pub fn movedim(self_: &Tensor, source: &[i64], destination: &[i64]) -> Result<Tensor> {
    let n = self_.dim();
    if source.len() != destination.len() {
        return Err(Error::invalid(
            "movedim",
            format!("movedim: Invalid source or destination dims: source ({source:?} dims) should contain the same number of dims as destination ({destination:?} dims)"),
        ));
    }
    let mut src = Vec::with_capacity(source.len());
    let mut dst = Vec::with_capacity(source.len());
    for (&s, &d) in source.iter().zip(destination) {
        src.push(wrap_dim("movedim", s, n)?);
        dst.push(wrap_dim("movedim", d, n)?);
    }
    let dup = |v: &[usize]| v.iter().enumerate().any(|(i, a)| v[..i].contains(a));
    if dup(&src) {
        return Err(Error::invalid("movedim", format!("movedim: repeated dim in `source` ({source:?})")));
    }
    if dup(&dst) {
        return Err(Error::invalid("movedim", format!("movedim: repeated dim in `destination` ({destination:?})")));
    }
    if n == 0 {
        return crate::native::shape::alias(self_);
    }
    let mut perm: Vec<Option<usize>> = vec![None; n];
    for (&s, &d) in src.iter().zip(&dst) {
        perm[d] = Some(s);
    }
    let mut rest = (0..n).filter(|i| !src.contains(i));
    let perm: Vec<i64> = perm.into_iter().map(|p| p.or_else(|| rest.next()).unwrap_or(0) as i64).collect();
    crate::ops::permute(self_, &perm)
}

/// `movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)`
pub fn movedim_int(self_: &Tensor, source: i64, destination: i64) -> Result<Tensor> {
    crate::ops::movedim(self_, &[source], &[destination])
}

/// `unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)`
pub fn unflatten(self_: &Tensor, dim: i64, sizes: &[i64]) -> Result<Tensor> {
    if self_.dim() == 0 {
        return Err(Error::invalid("unflatten", "unflatten: Dimension specified as 0 but tensor has no dimensions"));
    }
    let d = wrap_dim("unflatten", dim, self_.dim())?;
    if sizes.is_empty() {
        return Err(Error::invalid("unflatten", "unflatten: sizes must be non-empty"));
    }
    let size = self_.sizes()[d];
    let inferred = crate::native::shape::infer_size("unflatten", sizes, size).map_err(|_| {
        Error::invalid(
            "unflatten",
            format!("unflatten: Provided sizes {sizes:?} don't multiply up to the size of dim {dim} ({size}) in the input tensor"),
        )
    })?;
    let mut shape: Vec<i64> = self_.sizes()[..d].to_vec();
    shape.extend_from_slice(&inferred);
    shape.extend_from_slice(&self_.sizes()[d + 1..]);
    crate::ops::view(self_, &shape)
}

/// Source coordinate of output coordinate `o` for a non-constant pad of a dimension of size `n`
/// with `left` elements of padding.
fn pad_source(mode: &str, o: i64, left: i64, n: i64) -> i64 {
    let i = o - left;
    match mode {
        "reflect" => {
            let period = 2 * (n - 1);
            if period == 0 {
                return 0;
            }
            let m = i.rem_euclid(period);
            if m < n {
                m
            } else {
                period - m
            }
        }
        "replicate" => i.clamp(0, n - 1),
        _ => i.rem_euclid(n),
    }
}

/// `pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor`
pub fn pad(self_: &Tensor, pad: &[i64], mode: &str, value: Option<f64>) -> Result<Tensor> {
    if !pad.len().is_multiple_of(2) {
        return Err(Error::invalid("pad", "Padding length must be divisible by 2"));
    }
    let pdims = pad.len() / 2;
    let n = self_.dim();
    if pdims > n {
        return Err(Error::invalid(
            "pad",
            "Padding length should be less than or equal to two times the input dimension",
        ));
    }
    if !matches!(mode, "constant" | "reflect" | "replicate" | "circular") {
        return Err(Error::invalid(
            "pad",
            format!("Unrecognised padding mode {mode}; expected one of constant, reflect, replicate, circular"),
        ));
    }
    if mode != "constant" {
        if value.is_some_and(|v| v != 0.0) {
            return Err(Error::invalid("pad", format!("Padding mode \"{mode}\" doesn't take in value argument")));
        }
        if !(1..=3).contains(&pdims) || !(n == pdims + 1 || n == pdims + 2) {
            return Err(Error::NotImplemented {
                op: "pad".into(),
                msg: format!("Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now (got a {n}D input and {} pad values)", pad.len()),
            });
        }
    }
    // The source index of every output position along each padded dimension (non-constant
    // modes; constant padding is `constant_pad_nd`'s).
    let mut sources: Vec<Vec<i64>> = Vec::with_capacity(pdims);
    for k in 0..pdims {
        let d = n - 1 - k;
        let (l, r) = (pad[2 * k], pad[2 * k + 1]);
        let size = self_.sizes()[d];
        let out = size.checked_add(l).and_then(|v| v.checked_add(r)).ok_or_else(|| size_overflow("pad"))?;
        if mode == "constant" {
            if out < 0 {
                return Err(Error::invalid(
                    "pad",
                    format!("The input size {size}, plus negative padding {l} and {r} resulted in a negative output size, which is invalid. Check dimension {d} of your input."),
                ));
            }
            continue;
        }
        let bad = match mode {
            "reflect" => l >= size || r >= size,
            "circular" => l > size || r > size,
            _ => size == 0,
        };
        // Negative padding crops: allowed for circular and replicate (whose source index is
        // clamped into the input), not for reflect.
        let negative = (l < 0 || r < 0) && mode == "reflect";
        if bad || out <= 0 || negative {
            return Err(Error::invalid(
                "pad",
                format!("Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({l}, {r}) at dimension {d} of input {:?}", self_.sizes()),
            ));
        }
        sources.push(c10::size::try_collect(out as usize, (0..out).map(|o| pad_source(mode, o, l, size)))?);
    }
    // Built from operators (this is a composite): autograd records their nodes.
    if mode == "constant" {
        return crate::ops::constant_pad_nd(self_, pad, Scalar::Float(value.unwrap_or(0.0)));
    }
    let mut out = self_.clone();
    for (k, idx) in sources.into_iter().enumerate() {
        let d = n - 1 - k;
        let len = idx.len() as i64;
        out = crate::ops::index_select(&out, d as i64, &Tensor::from_vec(idx, &[len])?.to_device(self_.device())?)?;
    }
    Ok(out)
}

/// `constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor`
pub fn constant_pad_nd(self_: &Tensor, pad: &[i64], value: Scalar) -> Result<Tensor> {
    if !pad.len().is_multiple_of(2) || pad.len() / 2 > self_.dim() {
        return Err(Error::invalid(
            "constant_pad_nd",
            format!("Length of pad must be even but instead it equals {}", pad.len()),
        ));
    }
    let n = self_.dim();
    let mut out_sizes = self_.sizes().to_vec();
    for k in 0..pad.len() / 2 {
        let d = n - 1 - k;
        let (l, r) = (pad[2 * k], pad[2 * k + 1]);
        let size = self_.sizes()[d];
        let out = size.checked_add(l).and_then(|v| v.checked_add(r)).ok_or_else(|| size_overflow("constant_pad_nd"))?;
        if out < 0 {
            return Err(Error::invalid(
                "constant_pad_nd",
                format!("The input size {size}, plus negative padding {l} and {r} resulted in a negative output size, which is invalid. Check dimension {d} of your input."),
            ));
        }
        out_sizes[d] = out;
    }
    if c10::size::numel("constant_pad_nd", &out_sizes)? == 0 {
        return zeros_on(self_, &out_sizes);
    }
    let mut maps = identity_maps(self_)?;
    for k in 0..pad.len() / 2 {
        let d = n - 1 - k;
        let (l, size) = (pad[2 * k], self_.sizes()[d]);
        maps[d] = dim_map(out_sizes[d], |o| Some(o - l).filter(|&i| i >= 0 && i < size))?;
    }
    remap(self_, &maps, value)
}
