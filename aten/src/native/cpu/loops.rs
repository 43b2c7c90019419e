//! Strided iteration helpers shared by the CPU kernels: visiting every element offset of a
//! strided tensor in row-major logical order without allocating per element.

/// Calls `f(offset)` for every element of a tensor with these sizes and strides (both in
/// elements), in row-major logical order. Offsets are relative to element 0.
pub fn for_each_offset(sizes: &[i64], strides: &[i64], mut f: impl FnMut(isize)) {
    if sizes.contains(&0) {
        return;
    }
    let nd = sizes.len();
    if nd == 0 {
        f(0);
        return;
    }
    let inner = sizes[nd - 1];
    let inner_stride = strides[nd - 1] as isize;
    let mut idx = smallvec::SmallVec::<[i64; 6]>::from_elem(0, nd);
    let mut base: isize = 0;
    loop {
        let mut off = base;
        for _ in 0..inner {
            f(off);
            off += inner_stride;
        }
        // Advance the outer index (dims 0..nd-1) like an odometer.
        let mut d = nd - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            base += strides[d] as isize;
            if idx[d] < sizes[d] {
                break;
            }
            base -= strides[d] as isize * sizes[d] as isize;
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_transposed_in_logical_order() {
        let mut v = Vec::new();
        for_each_offset(&[2, 3], &[1, 2], |o| v.push(o));
        assert_eq!(v, vec![0, 2, 4, 1, 3, 5]);
        let mut n = 0;
        for_each_offset(&[], &[], |_| n += 1);
        assert_eq!(n, 1);
        for_each_offset(&[3, 0], &[1, 1], |_| n += 1);
        assert_eq!(n, 1);
    }
}
