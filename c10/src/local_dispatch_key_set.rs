//! Thread-local included/excluded dispatch keys and the RAII guards that change them.
//!
//! Note [TLS defaults by XOR]: as in PyTorch, `included` is stored XOR the default included set
//! (BackendSelect, ADInplaceOrView) and `excluded` XOR the default excluded set (Autocast), so a
//! zero-initialised thread-local means "the defaults". Exclusion wins over inclusion. Guards
//! restore exactly the bits they changed when dropped, also while unwinding from a panic.

use std::cell::Cell;

use crate::{DispatchKey, DispatchKeySet};

thread_local! {
    static INCLUDED_XOR: Cell<u64> = const { Cell::new(0) };
    static EXCLUDED_XOR: Cell<u64> = const { Cell::new(0) };
}

// The default sets as raw bits (constants of the key list).
#[inline(always)]
const fn default_included_bits() -> u64 {
    DispatchKeySet::default_included_set().raw()
}
#[inline(always)]
const fn default_excluded_bits() -> u64 {
    DispatchKeySet::default_excluded_set().raw()
}

/// A snapshot of the thread's included and excluded sets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LocalDispatchKeySet {
    /// Keys added to every call on this thread.
    pub included: DispatchKeySet,
    /// Keys removed from every call on this thread.
    pub excluded: DispatchKeySet,
}

impl LocalDispatchKeySet {
    /// The current thread's sets.
    #[inline]
    pub fn get() -> Self {
        let inc = INCLUDED_XOR.with(|c| c.get()) ^ default_included_bits();
        let exc = EXCLUDED_XOR.with(|c| c.get()) ^ default_excluded_bits();
        LocalDispatchKeySet { included: DispatchKeySet::from_raw(inc), excluded: DispatchKeySet::from_raw(exc) }
    }

    /// `((ks | included) - excluded) & mask` (computeDispatchKeySet). The mask comes last so a
    /// key added through TLS can still fall through.
    #[inline]
    pub fn apply(ks: DispatchKeySet, mask: DispatchKeySet) -> DispatchKeySet {
        let l = Self::get();
        ((ks | l.included) - l.excluded) & mask
    }

    /// `tls_is_dispatch_key_excluded`: whether `key` is in the thread's excluded set.
    #[inline]
    pub fn is_excluded(key: DispatchKey) -> bool {
        Self::get().excluded.has(key)
    }

    /// `tls_set_dispatch_key_excluded`: adds `key` to the thread's excluded set or removes it,
    /// without a guard (autocast's enabled flag is this bit; its region guard restores it).
    pub fn set_key_excluded(key: DispatchKey, excluded: bool) {
        let cur = Self::get().excluded;
        Self::set_excluded(if excluded { cur.add(key) } else { cur.remove(key) });
    }

    fn set_included(s: DispatchKeySet) {
        INCLUDED_XOR.with(|c| c.set(s.raw() ^ default_included_bits()));
    }

    fn set_excluded(s: DispatchKeySet) {
        EXCLUDED_XOR.with(|c| c.set(s.raw() ^ default_excluded_bits()));
    }
}

/// Adds keys to the thread's included set until dropped.
#[must_use = "the keys are removed again when the guard is dropped"]
pub struct IncludeDispatchKeyGuard {
    added: DispatchKeySet,
}

impl IncludeDispatchKeyGuard {
    /// Includes `keys`; on drop, removes the ones that were not already included.
    pub fn new(keys: impl Into<DispatchKeySet>) -> Self {
        let keys = keys.into();
        let cur = LocalDispatchKeySet::get().included;
        let added = DispatchKeySet::from_raw(keys.raw() & !cur.raw());
        LocalDispatchKeySet::set_included(cur | added);
        IncludeDispatchKeyGuard { added }
    }
}

impl Drop for IncludeDispatchKeyGuard {
    fn drop(&mut self) {
        let cur = LocalDispatchKeySet::get().included;
        LocalDispatchKeySet::set_included(DispatchKeySet::from_raw(cur.raw() & !self.added.raw()));
    }
}

/// Adds keys to the thread's excluded set until dropped.
#[must_use = "the keys are un-excluded again when the guard is dropped"]
pub struct ExcludeDispatchKeyGuard {
    added: DispatchKeySet,
}

impl ExcludeDispatchKeyGuard {
    /// Excludes `keys`; on drop, un-excludes the ones that were not already excluded.
    pub fn new(keys: impl Into<DispatchKeySet>) -> Self {
        let keys = keys.into();
        let cur = LocalDispatchKeySet::get().excluded;
        let added = DispatchKeySet::from_raw(keys.raw() & !cur.raw());
        LocalDispatchKeySet::set_excluded(cur | added);
        ExcludeDispatchKeyGuard { added }
    }

    /// `AutoDispatchBelowAutograd`: excludes the autograd keys.
    pub fn below_autograd() -> Self {
        Self::new(DispatchKeySet::autograd_dispatch_keyset())
    }

    /// `AutoDispatchBelowADInplaceOrView`: excludes the autograd keys and ADInplaceOrView.
    pub fn below_ad_inplace_or_view() -> Self {
        Self::new(DispatchKeySet::autograd_dispatch_keyset_with_ad_inplace_or_view())
    }
}

impl Drop for ExcludeDispatchKeyGuard {
    fn drop(&mut self) {
        let cur = LocalDispatchKeySet::get().excluded;
        LocalDispatchKeySet::set_excluded(DispatchKeySet::from_raw(cur.raw() & !self.added.raw()));
    }
}

impl From<&[DispatchKey]> for DispatchKeySet {
    fn from(keys: &[DispatchKey]) -> Self {
        DispatchKeySet::from_keys(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DispatchKey as K;

    #[test]
    fn defaults_from_zero_state() {
        std::thread::spawn(|| {
            let l = LocalDispatchKeySet::get();
            assert!(l.included.has(K::BackendSelect));
            assert!(l.included.has(K::ADInplaceOrView));
            assert!(l.excluded.has(K::AutocastCPU));
            assert!(!l.excluded.has(K::AutogradFunctionality));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn guards_nest_and_restore() {
        let before = LocalDispatchKeySet::get();
        {
            let _g = IncludeDispatchKeyGuard::new(K::Tracer);
            assert!(LocalDispatchKeySet::get().included.has(K::Tracer));
            {
                // Already included: the inner guard must not remove it on drop.
                let _g2 = IncludeDispatchKeyGuard::new(K::Tracer);
            }
            assert!(LocalDispatchKeySet::get().included.has(K::Tracer));
            let _e = ExcludeDispatchKeyGuard::below_autograd();
            let cpu = DispatchKeySet::from_keys(&[K::CPU, K::AutogradCPU]);
            let ks = LocalDispatchKeySet::apply(cpu, DispatchKeySet::full());
            assert!(!ks.has(K::AutogradCPU));
            assert!(ks.has(K::Tracer));
        }
        assert_eq!(LocalDispatchKeySet::get(), before);
    }

    #[test]
    fn guards_restore_during_unwinding() {
        let before = LocalDispatchKeySet::get();
        let r = std::panic::catch_unwind(|| {
            let _g = IncludeDispatchKeyGuard::new(K::TestingOnlyGenericMode);
            let _e = ExcludeDispatchKeyGuard::new(K::ADInplaceOrView);
            panic!("boom");
        });
        assert!(r.is_err());
        assert_eq!(LocalDispatchKeySet::get(), before);
    }

    #[test]
    fn exclusion_wins() {
        let _g = IncludeDispatchKeyGuard::new(K::Tracer);
        let _e = ExcludeDispatchKeyGuard::new(K::Tracer);
        let ks = LocalDispatchKeySet::apply(DispatchKeySet::from_key(K::CPU), DispatchKeySet::full());
        assert!(!ks.has(K::Tracer));
    }
}
