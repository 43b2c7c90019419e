//! `DispatchKeySet`: a `u64` of backend bits (bottom) and functionality bits (above them) with
//! PyTorch's semantics (pt:c10/core/DispatchKeySet.h): the highest functionality bit wins and is
//! combined with the highest backend bit for per-backend functionalities; removing a key clears
//! only functionality bits (Note [Removing keys from DispatchKeySet Only Affects Functionality
//! Keys]); `full_after(k)` keeps every bit below `k`'s.

use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign, Sub};

use crate::dispatch_key::{BackendComponent, DispatchKey, FUNCTIONALITY_OFFSETS, NUM_BACKENDS, NUM_FUNCTIONALITY_KEYS};

/// A set of dispatch keys. Copy, one word.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct DispatchKeySet(u64);

const BACKEND_MASK: u64 = (1 << NUM_BACKENDS) - 1;

/// For each functionality number (1-based; 0 = none), whether it is per-backend: the backend
/// index is then added to the table offset. Indexed on the hot path.
const PER_BACKEND: [bool; NUM_FUNCTIONALITY_KEYS + 1] = {
    let mut t = [false; NUM_FUNCTIONALITY_KEYS + 1];
    let mut i = 0;
    while i < NUM_FUNCTIONALITY_KEYS {
        t[i + 1] = DispatchKey::FUNCTIONALITIES[i].per_backend_block().is_some();
        i += 1;
    }
    t
};

const fn functionality_bit(k: DispatchKey) -> u64 {
    1u64 << (NUM_BACKENDS + k as usize - 1)
}

impl DispatchKeySet {
    /// The empty set.
    pub const EMPTY: DispatchKeySet = DispatchKeySet(0);

    /// The raw bits.
    #[inline]
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// A set from raw bits (for tests and table code).
    #[inline]
    pub const fn from_raw(bits: u64) -> Self {
        DispatchKeySet(bits)
    }

    /// The set containing one key. A runtime per-backend key sets its functionality bit and its
    /// backend bit; an alias key gives the empty set (use [`DispatchKeySet::runtime_set_of`]).
    #[inline]
    pub const fn from_key(k: DispatchKey) -> Self {
        if matches!(k, DispatchKey::Undefined) || k.is_alias() {
            return Self::EMPTY;
        }
        let f = k.to_functionality();
        match k.to_backend_component() {
            Some(b) => DispatchKeySet(functionality_bit(f) | Self::from_backend(b).0),
            None => DispatchKeySet(functionality_bit(f)),
        }
    }

    /// The set holding only a backend bit.
    #[inline]
    pub const fn from_backend(b: BackendComponent) -> Self {
        DispatchKeySet(1 << (b as u32))
    }

    /// The backend key of a device (its `Dense` key): what a `Device` argument contributes to the
    /// dispatch keys, as PyTorch's `BackendSelect` computes a factory's key from its options, so
    /// `zeros(..., device=cuda)` and `_to_copy(cpu_tensor, device=cuda)` reach the CUDA kernel.
    #[inline]
    pub const fn of_device(d: crate::Device) -> Self {
        DispatchKeySet::from_key(DispatchKey::to_runtime_per_backend_const(
            DispatchKey::Dense,
            crate::tensor_impl::backend_of(d.ty),
        ))
    }

    /// The union of several keys.
    pub fn from_keys(keys: &[DispatchKey]) -> Self {
        keys.iter().fold(Self::EMPTY, |s, &k| s | Self::from_key(k))
    }

    /// `DispatchKeySet(FULL)`: every backend and functionality bit.
    pub const fn full() -> Self {
        DispatchKeySet((1u64 << (NUM_BACKENDS + NUM_FUNCTIONALITY_KEYS)) - 1)
    }

    /// `DispatchKeySet(FULL_AFTER, t)`: every bit strictly below `t`'s functionality bit
    /// (all backend bits included) plus `PythonDispatcher`.
    pub fn full_after(t: DispatchKey) -> Self {
        let f = t.to_functionality();
        let below = functionality_bit(f) - 1;
        DispatchKeySet(below | functionality_bit(DispatchKey::PythonDispatcher))
    }

    /// True when no bit is set.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether the set contains a key (for runtime per-backend keys, both bits must be set).
    pub fn has(self, k: DispatchKey) -> bool {
        let s = Self::from_key(k);
        !s.is_empty() && (self.0 & s.0) == s.0
    }

    /// Whether the set has a backend bit.
    #[inline]
    pub const fn has_backend(self, b: BackendComponent) -> bool {
        self.0 & (1 << (b as u32)) != 0
    }

    /// Whether any key of `other` is in the set.
    #[inline]
    pub const fn has_any(self, other: DispatchKeySet) -> bool {
        self.0 & other.0 != 0
    }

    /// The set plus a key.
    #[inline]
    #[allow(clippy::should_implement_trait)] // PyTorch's name; `|` is the operator form
    pub fn add(self, k: DispatchKey) -> Self {
        self | Self::from_key(k)
    }

    /// The set without a key's *functionality* bit; backend bits always survive.
    #[inline]
    pub fn remove(self, k: DispatchKey) -> Self {
        self - Self::from_key(k)
    }

    /// The set without a backend bit (the explicit form of removing a backend).
    #[inline]
    pub const fn remove_backend(self, b: BackendComponent) -> Self {
        DispatchKeySet(self.0 & !(1 << (b as u32)))
    }

    /// The highest-priority backend in the set.
    #[inline]
    pub fn highest_backend(self) -> Option<BackendComponent> {
        let b = self.0 & BACKEND_MASK;
        if b == 0 {
            None
        } else {
            Some(BackendComponent::ALL[63 - b.leading_zeros() as usize])
        }
    }

    /// The functionality number (1-based) of the highest functionality bit, 0 if none.
    #[inline]
    fn highest_functionality_number(self) -> usize {
        let f = self.0 >> NUM_BACKENDS;
        if f == 0 {
            0
        } else {
            64 - f.leading_zeros() as usize
        }
    }

    /// `highestPriorityTypeId()`: the highest functionality key, combined with the highest
    /// backend for per-backend functionalities.
    pub fn highest_priority_type_id(self) -> DispatchKey {
        let n = self.highest_functionality_number();
        if n == 0 {
            return DispatchKey::Undefined;
        }
        let f = DispatchKey::FUNCTIONALITIES[n - 1];
        match (f.per_backend_block(), self.highest_backend()) {
            (Some(_), Some(b)) => DispatchKey::to_runtime_per_backend(f, b),
            _ => f,
        }
    }

    /// The dispatch-table slot this set selects (the hot path of every call): the offset of the
    /// highest functionality plus, for per-backend ones, the highest backend's index.
    #[inline]
    pub fn dispatch_table_index(self) -> usize {
        let n = self.highest_functionality_number();
        if n == 0 {
            return 0;
        }
        let off = FUNCTIONALITY_OFFSETS[n] as usize;
        if PER_BACKEND[n] {
            let b = self.0 & BACKEND_MASK;
            if b == 0 {
                // A per-backend functionality without any backend: PyTorch reports an invalid
                // index; slot 0 (Undefined) gives the same "no kernel" error.
                return 0;
            }
            off + (63 - b.leading_zeros() as usize)
        } else {
            off
        }
    }

    /// The runtime keys in the set, highest priority first.
    pub fn iter_runtime_keys(self) -> impl Iterator<Item = DispatchKey> {
        let mut out = Vec::new();
        for (i, &f) in DispatchKey::FUNCTIONALITIES.iter().enumerate().rev() {
            if self.0 & functionality_bit(f) == 0 {
                continue;
            }
            match f.per_backend_block() {
                Some(block) => {
                    for (bi, &k) in block.iter().enumerate().rev() {
                        if self.0 & (1 << bi) != 0 {
                            out.push(k);
                        }
                    }
                }
                None => out.push(f),
            }
            let _ = i;
        }
        out.into_iter()
    }

    /// The runtime keys an alias key stands for (`getRuntimeDispatchKeySet`); a runtime key
    /// stands for itself.
    pub fn runtime_set_of(k: DispatchKey) -> Self {
        let all_backends = DispatchKeySet(BACKEND_MASK);
        match k {
            DispatchKey::Autograd => {
                DispatchKeySet::from_keys(&[DispatchKey::AutogradFunctionality, DispatchKey::AutogradOther])
                    | all_backends
            }
            DispatchKey::CompositeImplicitAutograd => {
                Self::runtime_set_of(DispatchKey::Autograd) | Self::backend_dispatch_keyset()
            }
            // Note [Explicit composites stop at the dense keys]: PyTorch lets these fill the
            // sparse keys too, where most of their kernels then fail deep inside (they read
            // strides). Ours read memory directly, so a sparse tensor gets the dispatcher's
            // missing-kernel error naming `SparseCPU` instead; an operator that works on sparse
            // tensors registers its sparse kernel explicitly.
            DispatchKey::CompositeExplicitAutograd | DispatchKey::CompositeExplicitAutogradNonFunctional => {
                DispatchKeySet(functionality_bit(DispatchKey::Dense) | BACKEND_MASK)
            }
            _ => Self::from_key(k),
        }
    }

    /// Every backend kernel key (`backend_dispatch_keyset`): Dense, Sparse and SparseCsr with
    /// all backends.
    pub fn backend_dispatch_keyset() -> Self {
        DispatchKeySet(
            functionality_bit(DispatchKey::Dense)
                | functionality_bit(DispatchKey::Sparse)
                | functionality_bit(DispatchKey::SparseCsr)
                | BACKEND_MASK,
        )
    }

    /// `autograd_dispatch_keyset`: the autograd functionalities, without backend bits (it is
    /// used for removal).
    pub fn autograd_dispatch_keyset() -> Self {
        DispatchKeySet::from_keys(&[DispatchKey::AutogradFunctionality, DispatchKey::AutogradOther])
    }

    /// `autograd_dispatch_keyset_with_ADInplaceOrView`.
    pub fn autograd_dispatch_keyset_with_ad_inplace_or_view() -> Self {
        Self::autograd_dispatch_keyset().add(DispatchKey::ADInplaceOrView)
    }

    /// Keys every call sees through TLS by default: BackendSelect and ADInplaceOrView.
    pub const fn default_included_set() -> Self {
        DispatchKeySet(Self::from_key(DispatchKey::BackendSelect).0 | Self::from_key(DispatchKey::ADInplaceOrView).0)
    }

    /// Keys excluded through TLS by default: the autocast keys.
    pub const fn default_excluded_set() -> Self {
        DispatchKeySet(Self::from_key(DispatchKey::AutocastCPU).0 | Self::from_key(DispatchKey::AutocastCUDA).0)
    }

    /// `after_autograd_keyset = FULL_AFTER(AutogradOther)`: what an autograd kernel redispatches to.
    pub fn after_autograd_keyset() -> Self {
        Self::full_after(DispatchKey::AutogradOther)
    }

    /// `after_ADInplaceOrView_keyset = FULL_AFTER(ADInplaceOrView)`.
    pub fn after_ad_inplace_or_view_keyset() -> Self {
        Self::full_after(DispatchKey::ADInplaceOrView)
    }

    /// `getAutocastRelatedKeySetFromBackend`: the autocast key a tensor of backend `b` carries
    /// (`AutocastCPU` for the CPU, `AutocastCUDA` for CUDA, none for the others). The keys are
    /// excluded through TLS until an autocast region turns one on, and every operator without
    /// an autocast kernel falls through them, so carrying them costs a call nothing.
    pub const fn autocast_related_keyset_from_backend(b: BackendComponent) -> Self {
        match b {
            BackendComponent::CPU => Self::from_key(DispatchKey::AutocastCPU),
            BackendComponent::CUDA => Self::from_key(DispatchKey::AutocastCUDA),
            _ => Self::EMPTY,
        }
    }

    /// `getAutogradRelatedKeySetFromBackend`: ADInplaceOrView plus the backend's autograd key.
    pub fn autograd_related_keyset_from_backend(b: BackendComponent) -> Self {
        Self::from_key(DispatchKey::ADInplaceOrView)
            | Self::from_key(DispatchKey::to_runtime_per_backend(DispatchKey::AutogradFunctionality, b))
    }
}

impl BitOr for DispatchKeySet {
    type Output = Self;
    #[inline]
    fn bitor(self, o: Self) -> Self {
        DispatchKeySet(self.0 | o.0)
    }
}
impl BitOrAssign for DispatchKeySet {
    #[inline]
    fn bitor_assign(&mut self, o: Self) {
        self.0 |= o.0
    }
}
impl BitAnd for DispatchKeySet {
    type Output = Self;
    #[inline]
    fn bitand(self, o: Self) -> Self {
        DispatchKeySet(self.0 & o.0)
    }
}
/// Set difference that, like PyTorch's `operator-`, removes only functionality bits.
impl Sub for DispatchKeySet {
    type Output = Self;
    #[inline]
    fn sub(self, o: Self) -> Self {
        DispatchKeySet(self.0 & !(o.0 & !BACKEND_MASK))
    }
}

impl From<DispatchKey> for DispatchKeySet {
    fn from(k: DispatchKey) -> Self {
        Self::from_key(k)
    }
}

impl fmt::Debug for DispatchKeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = Vec::new();
        for &k in DispatchKey::FUNCTIONALITIES.iter().rev() {
            if self.0 & functionality_bit(k) != 0 {
                names.push(k.name());
            }
        }
        let backends: Vec<&str> =
            BackendComponent::ALL.iter().filter(|b| self.has_backend(**b)).map(|b| b.name()).collect();
        write!(f, "DispatchKeySet(functionality: [{}], backends: [{}])", names.join(", "), backends.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DispatchKey as K;

    #[test]
    fn runtime_key_sets_both_bits() {
        let s = DispatchKeySet::from_key(K::CPU);
        assert!(s.has(K::CPU));
        assert!(s.has(K::Dense));
        assert!(s.has_backend(BackendComponent::CPU));
        assert!(!s.has(K::CUDA));
        assert_eq!(s.highest_priority_type_id(), K::CPU);
    }

    #[test]
    fn highest_functionality_wins_with_highest_backend() {
        let s = DispatchKeySet::from_keys(&[K::CPU, K::CUDA, K::AutogradCPU, K::ADInplaceOrView]);
        // Autograd beats ADInplaceOrView beats Dense; CUDA beats CPU among backends.
        assert_eq!(s.highest_priority_type_id(), K::AutogradCUDA);
        let s2 = s.remove(K::AutogradFunctionality);
        assert_eq!(s2.highest_priority_type_id(), K::ADInplaceOrView);
        let s3 = s2.remove(K::ADInplaceOrView);
        assert_eq!(s3.highest_priority_type_id(), K::CUDA);
        assert_eq!(DispatchKeySet::from_keys(&[K::Tracer, K::AutogradCPU]).highest_priority_type_id(), K::Tracer);
        assert_eq!(DispatchKeySet::EMPTY.highest_priority_type_id(), K::Undefined);
    }

    #[test]
    fn removal_keeps_backend_bits() {
        let s = DispatchKeySet::from_keys(&[K::CPU, K::AutogradCPU]);
        let r = s.remove(K::CPU);
        assert!(r.has_backend(BackendComponent::CPU));
        assert!(!r.has(K::Dense));
        assert!(r.has(K::AutogradCPU));
        let r2 = s - DispatchKeySet::autograd_dispatch_keyset();
        assert!(r2.has(K::CPU));
        assert!(!r2.has(K::AutogradCPU));
        assert!(!s.remove_backend(BackendComponent::CPU).has_backend(BackendComponent::CPU));
    }

    #[test]
    fn full_after_keeps_lower_bits_and_backends() {
        let after = DispatchKeySet::after_autograd_keyset();
        assert!(after.has(K::ADInplaceOrView));
        assert!(after.has(K::CPU));
        assert!(after.has(K::CUDA));
        assert!(!after.has(K::AutogradCPU));
        assert!(!after.has(K::AutogradOther));
        assert!(!after.has(K::Tracer));
        assert!(after.has(K::PythonDispatcher));
        let s = DispatchKeySet::from_keys(&[K::CPU, K::AutogradCPU, K::ADInplaceOrView]);
        assert_eq!((s & after).highest_priority_type_id(), K::ADInplaceOrView);
        let s2 = s & DispatchKeySet::after_ad_inplace_or_view_keyset();
        assert_eq!(s2.highest_priority_type_id(), K::CPU);
    }

    #[test]
    fn table_index_matches_key_index() {
        for &k in DispatchKey::ALL {
            if k.is_alias() || k.is_per_backend_functionality() || k == K::Undefined {
                continue;
            }
            let s = DispatchKeySet::from_key(k);
            assert_eq!(Some(s.dispatch_table_index()), k.runtime_index(), "{k}");
        }
        let s = DispatchKeySet::from_keys(&[K::CPU, K::CUDA]);
        assert_eq!(s.dispatch_table_index(), K::CUDA.runtime_index().unwrap());
    }

    #[test]
    fn alias_runtime_sets() {
        let cia = DispatchKeySet::runtime_set_of(K::CompositeImplicitAutograd);
        assert!(cia.has(K::CPU) && cia.has(K::AutogradCUDA) && cia.has(K::AutogradOther));
        assert!(!cia.has(K::Tracer));
        let cea = DispatchKeySet::runtime_set_of(K::CompositeExplicitAutograd);
        assert!(cea.has(K::PrivateUse1) && !cea.has(K::AutogradCPU));
        // Note [Explicit composites stop at the dense keys].
        assert!(cia.has(K::SparseCPU) && cia.has(K::SparseCsrCUDA));
        assert!(!cea.has(K::SparseCPU) && !cea.has(K::SparseCsrCPU));
        let keys: Vec<_> = DispatchKeySet::from_keys(&[K::CPU, K::AutogradCPU]).iter_runtime_keys().collect();
        assert_eq!(keys, vec![K::AutogradCPU, K::CPU]);
    }
}
