//! CPU kernels and the loops they run on.

pub mod gather;
pub mod loops;
#[cfg(target_arch = "x86_64")]
#[doc(hidden)]
pub mod sgemm;
pub mod vec;

/// The widest instruction set the run-time dispatchers of eager kernels compile for (`vec.rs`'s
/// `isa_dispatch!`, the LU's `lu_isa_dispatch!`): AVX-512 with VL and DQ, else AVX2 with FMA,
/// else the x86-64 baseline (and on other architectures).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WideIsa {
    Avx512,
    Avx2,
    Baseline,
}

/// This CPU's [`WideIsa`].
#[inline]
pub(crate) fn wide_isa() -> WideIsa {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512dq")
        {
            return WideIsa::Avx512;
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return WideIsa::Avx2;
        }
    }
    WideIsa::Baseline
}

/// The size in bytes of one core's level-2 (data or unified) cache, read once from Linux's
/// `/sys/devices/system/cpu/cpu0/cache`; 1 MiB where that cannot be read (another OS, a
/// container without sysfs). Blocked loops size their working sets from it.
pub fn l2_cache_bytes() -> usize {
    static L2: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *L2.get_or_init(|| read_l2_cache_bytes().unwrap_or(1 << 20))
}

fn read_l2_cache_bytes() -> Option<usize> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let read = |f: &str| std::fs::read_to_string(entry.path().join(f)).ok().map(|s| s.trim().to_string());
        if read("level").as_deref() != Some("2") || read("type").as_deref() == Some("Instruction") {
            continue;
        }
        let size = read("size")?;
        let (digits, unit) = size.split_at(size.find(|c: char| !c.is_ascii_digit()).unwrap_or(size.len()));
        let scale = match unit {
            "" => 1,
            "K" => 1 << 10,
            "M" => 1 << 20,
            _ => return None,
        };
        return digits.parse::<usize>().ok().map(|v| v * scale).filter(|&v| v > 0);
    }
    None
}
