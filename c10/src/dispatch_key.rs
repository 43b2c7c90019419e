//! `DispatchKey` and `BackendComponent`, generated from one list by `define_dispatch_keys!`.
//!
//! Note [Dispatch key classification]: as in PyTorch there are three kinds of keys.
//! *Backend components* (CPU, CUDA, PrivateUse1, Meta) are bits of their own. *Functionality
//! keys* each get one bit; a higher position in the list means higher priority. Some
//! functionalities are *per-backend* (Dense, AutogradFunctionality): they have one bit but one
//! runtime key per backend (`CPU`, `AutogradCPU`, ...) that combines the functionality bit with a
//! backend bit. *Alias keys* (CompositeImplicitAutograd, ...) are only used at registration.
//! The enum, the names, the per-backend blocks and the dispatch-table offsets all come from the
//! single invocation below; a test checks that every per-backend block uses the backend order.

macro_rules! define_dispatch_keys {
    (
        backends: [$($b:ident),* $(,)?],
        functionality: [$($f:ident $( { $($rk:ident),* } )?),* $(,)?],
        alias: [$($a:ident),* $(,)?] $(,)?
    ) => {
        /// A backend component: which device family a per-backend key is for. Order is priority
        /// (the highest backend bit in a set wins); Meta is last so a Meta key in TLS wins.
        #[allow(clippy::upper_case_acronyms)]
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum BackendComponent { $(#[doc = concat!("Backend `", stringify!($b), "`.")] $b),* }

        impl BackendComponent {
            /// Every backend, in bit order.
            pub const ALL: &'static [BackendComponent] = &[$(BackendComponent::$b),*];
            /// The name used in PyTorch (`CPU`, `CUDA`, ...).
            pub const fn name(self) -> &'static str {
                match self { $(BackendComponent::$b => stringify!($b)),* }
            }
        }

        /// A dispatch key: `Undefined`, a functionality key, a runtime per-backend key or an
        /// alias key. See Note [Dispatch key classification].
        #[allow(clippy::upper_case_acronyms)]
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum DispatchKey {
            /// No key: the empty set.
            Undefined,
            $(
                #[doc = concat!("Functionality key `", stringify!($f), "`.")]
                $f,
            )*
            $($($(
                #[doc = concat!("Runtime per-backend key `", stringify!($rk), "`.")]
                $rk,
            )*)?)*
            $(
                #[doc = concat!("Alias key `", stringify!($a), "` (registration only).")]
                $a,
            )*
        }

        impl DispatchKey {
            /// Every key in enum order.
            pub const ALL: &'static [DispatchKey] = &[
                DispatchKey::Undefined,
                $(DispatchKey::$f,)*
                $($($(DispatchKey::$rk,)*)?)*
                $(DispatchKey::$a,)*
            ];
            /// Functionality keys in priority order, lowest first (excluding Undefined).
            pub const FUNCTIONALITIES: &'static [DispatchKey] = &[$(DispatchKey::$f),*];
            /// Alias keys.
            pub const ALIASES: &'static [DispatchKey] = &[$(DispatchKey::$a),*];

            /// PyTorch's name of the key.
            pub const fn name(self) -> &'static str {
                match self {
                    DispatchKey::Undefined => "Undefined",
                    $(DispatchKey::$f => stringify!($f),)*
                    $($($(DispatchKey::$rk => stringify!($rk),)*)?)*
                    $(DispatchKey::$a => stringify!($a),)*
                }
            }

            /// For a per-backend functionality, its runtime keys in backend order.
            pub const fn per_backend_block(self) -> Option<&'static [DispatchKey]> {
                match self {
                    $($(DispatchKey::$f => Some(&[$(DispatchKey::$rk),*]),)?)*
                    _ => None,
                }
            }
        }
    };
}

define_dispatch_keys! {
    backends: [CPU, CUDA, PrivateUse1, Meta],
    functionality: [
        Dense { CPU, CUDA, PrivateUse1, Meta },
        Sparse { SparseCPU, SparseCUDA, SparsePrivateUse1, SparseMeta },
        SparseCsr { SparseCsrCPU, SparseCsrCUDA, SparseCsrPrivateUse1, SparseCsrMeta },
        BackendSelect,
        Python,
        Functionalize,
        ADInplaceOrView,
        AutogradOther,
        AutogradFunctionality { AutogradCPU, AutogradCUDA, AutogradPrivateUse1, AutogradMeta },
        Tracer,
        AutocastCPU,
        AutocastCUDA,
        TestingOnlyGenericWrapper,
        TestingOnlyGenericMode,
        PythonDispatcher,
    ],
    alias: [
        Autograd,
        CompositeImplicitAutograd,
        CompositeExplicitAutograd,
        CompositeExplicitAutogradNonFunctional,
    ],
}

/// Number of backend components (backend bits at the bottom of a key set).
pub const NUM_BACKENDS: usize = BackendComponent::ALL.len();
/// Number of functionality keys (one bit each above the backend bits).
pub const NUM_FUNCTIONALITY_KEYS: usize = DispatchKey::FUNCTIONALITIES.len();

const _: () = assert!(NUM_BACKENDS <= 16, "Note [No More Than 16 Backends]");
const _: () = assert!(NUM_BACKENDS + NUM_FUNCTIONALITY_KEYS <= 63);

/// Table offset of each functionality (index 0 = Undefined), and the table size: one slot per
/// plain functionality, `NUM_BACKENDS` slots per per-backend functionality.
const fn compute_offsets() -> ([u16; NUM_FUNCTIONALITY_KEYS + 1], usize) {
    let mut offs = [0u16; NUM_FUNCTIONALITY_KEYS + 1];
    let mut next = 1usize; // slot 0 is Undefined
    let mut i = 0;
    while i < NUM_FUNCTIONALITY_KEYS {
        offs[i + 1] = next as u16;
        next += if DispatchKey::FUNCTIONALITIES[i].per_backend_block().is_some() { NUM_BACKENDS } else { 1 };
        i += 1;
    }
    (offs, next)
}
const OFFSETS_AND_SIZE: ([u16; NUM_FUNCTIONALITY_KEYS + 1], usize) = compute_offsets();

/// First dispatch-table slot of each functionality, indexed by functionality number (1-based).
pub const FUNCTIONALITY_OFFSETS: [u16; NUM_FUNCTIONALITY_KEYS + 1] = OFFSETS_AND_SIZE.0;
/// Number of runtime dispatch-table entries (PyTorch's `num_runtime_entries`).
pub const NUM_RUNTIME_ENTRIES: usize = OFFSETS_AND_SIZE.1;

impl DispatchKey {
    /// True for functionality keys (including per-backend functionalities like `Dense`).
    pub const fn is_functionality(self) -> bool {
        let v = self as usize;
        v >= 1 && v <= NUM_FUNCTIONALITY_KEYS
    }

    /// True for alias keys, which are never dispatched to at run time.
    pub const fn is_alias(self) -> bool {
        (self as usize) >= DispatchKey::Autograd as usize
    }

    /// True for `Dense`, `AutogradFunctionality`, ... (one bit, one runtime key per backend).
    pub const fn is_per_backend_functionality(self) -> bool {
        self.per_backend_block().is_some()
    }

    /// True for runtime per-backend keys such as `CPU` or `AutogradCUDA`.
    pub const fn is_runtime_per_backend(self) -> bool {
        !self.is_functionality() && !self.is_alias() && !matches!(self, DispatchKey::Undefined)
    }

    /// The functionality of a key: `CPU -> Dense`, `AutogradCPU -> AutogradFunctionality`;
    /// functionality keys map to themselves; `Undefined` and aliases to `Undefined`.
    #[inline]
    pub const fn to_functionality(self) -> DispatchKey {
        KEY_INFO[self as usize].0
    }

    /// The backend of a runtime per-backend key (`AutogradCUDA -> CUDA`).
    #[inline]
    pub const fn to_backend_component(self) -> Option<BackendComponent> {
        KEY_INFO[self as usize].1
    }

    /// `to_runtime_per_backend` usable in constant expressions.
    pub const fn to_runtime_per_backend_const(functionality: DispatchKey, b: BackendComponent) -> DispatchKey {
        match functionality.per_backend_block() {
            Some(block) => block[b as usize],
            None => functionality,
        }
    }

    /// The runtime key of a per-backend functionality for a backend (`(Dense, CUDA) -> CUDA`).
    pub fn to_runtime_per_backend(functionality: DispatchKey, b: BackendComponent) -> DispatchKey {
        match functionality.per_backend_block() {
            Some(block) => block[b as usize],
            None => functionality,
        }
    }

    /// The dispatch-table slot of a runtime key; `None` for alias keys and for a bare
    /// per-backend functionality (which needs a backend to name a slot).
    pub fn runtime_index(self) -> Option<usize> {
        if self.is_alias() {
            return None;
        }
        if matches!(self, DispatchKey::Undefined) {
            return Some(0);
        }
        if self.is_functionality() {
            if self.is_per_backend_functionality() {
                return None;
            }
            return Some(FUNCTIONALITY_OFFSETS[self as usize] as usize);
        }
        let f = self.to_functionality();
        let b = self.to_backend_component()? as usize;
        Some(FUNCTIONALITY_OFFSETS[f as usize] as usize + b)
    }

    /// The runtime key stored at a dispatch-table slot (inverse of `runtime_index`).
    pub fn from_runtime_index(idx: usize) -> DispatchKey {
        DispatchKey::ALL.iter().copied().find(|k| k.runtime_index() == Some(idx)).unwrap_or(DispatchKey::Undefined)
    }

    /// Looks a key up by its PyTorch name (as used in `native_functions.yaml` dispatch blocks).
    pub fn from_name(name: &str) -> Option<DispatchKey> {
        match name {
            // Backwards-compatible aliases (pt:c10/core/DispatchKey.h).
            "DefaultBackend" => return Some(DispatchKey::CompositeExplicitAutograd),
            "Math" => return Some(DispatchKey::CompositeImplicitAutograd),
            _ => {}
        }
        DispatchKey::ALL.iter().copied().find(|k| k.name() == name)
    }
}

/// Per key (indexed by discriminant): its functionality and, for runtime per-backend keys, its
/// backend. Computed at compile time from the key list, so the lookups on the hot path (tensor
/// construction, key-set building) are a table load.
const KEY_INFO: [(DispatchKey, Option<BackendComponent>); DispatchKey::ALL.len()] = {
    let mut t = [(DispatchKey::Undefined, None); DispatchKey::ALL.len()];
    let mut i = 0;
    while i < DispatchKey::ALL.len() {
        let k = DispatchKey::ALL[i];
        assert!(k as usize == i, "DispatchKey::ALL is in discriminant order");
        if k.is_functionality() {
            t[i] = (k, None);
        }
        i += 1;
    }
    let mut f = 0;
    while f < DispatchKey::FUNCTIONALITIES.len() {
        let func = DispatchKey::FUNCTIONALITIES[f];
        if let Some(block) = func.per_backend_block() {
            let mut b = 0;
            while b < block.len() {
                t[block[b] as usize] = (func, Some(BackendComponent::ALL[b]));
                b += 1;
            }
        }
        f += 1;
    }
    t
};

impl std::fmt::Display for DispatchKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_backend_blocks_share_backend_order() {
        for &f in DispatchKey::FUNCTIONALITIES {
            if let Some(block) = f.per_backend_block() {
                assert_eq!(block.len(), NUM_BACKENDS);
                for (k, b) in block.iter().zip(BackendComponent::ALL) {
                    assert!(k.name().ends_with(b.name()), "{k} is not for {}", b.name());
                    assert_eq!(k.to_backend_component(), Some(*b));
                    assert_eq!(k.to_functionality(), f);
                    assert_eq!(DispatchKey::to_runtime_per_backend(f, *b), *k);
                }
            }
        }
    }

    #[test]
    fn runtime_indices_are_a_bijection() {
        let mut seen = [false; NUM_RUNTIME_ENTRIES];
        for &k in DispatchKey::ALL {
            if let Some(i) = k.runtime_index() {
                assert!(!seen[i], "slot {i} used twice");
                seen[i] = true;
                assert_eq!(DispatchKey::from_runtime_index(i), k);
            }
        }
        assert!(seen.iter().all(|&s| s));
        // Four per-backend functionalities: Dense, Sparse, SparseCsr, AutogradFunctionality.
        assert_eq!(NUM_RUNTIME_ENTRIES, 1 + NUM_FUNCTIONALITY_KEYS + 4 * (NUM_BACKENDS - 1));
    }

    #[test]
    fn classification_and_names() {
        assert!(DispatchKey::Dense.is_per_backend_functionality());
        assert!(DispatchKey::CPU.is_runtime_per_backend());
        assert!(DispatchKey::CompositeImplicitAutograd.is_alias());
        assert!(DispatchKey::Tracer.is_functionality());
        assert_eq!(DispatchKey::from_name("AutogradCPU"), Some(DispatchKey::AutogradCPU));
        assert_eq!(DispatchKey::from_name("Math"), Some(DispatchKey::CompositeImplicitAutograd));
        assert_eq!(DispatchKey::from_name("Nope"), None);
        assert_eq!(DispatchKey::AutogradCUDA.to_string(), "AutogradCUDA");
    }
}
