//! `Storage`: a reference-counted block of device memory that tensors (and their views) share.

use std::sync::Arc;

use crate::allocator::{get_allocator, DataPtr};
use crate::{Device, Result};

/// The shared bytes behind one or more tensors.
#[derive(Debug)]
pub struct StorageImpl {
    data: DataPtr,
    nbytes: usize,
}

/// A cheap handle to shared memory. Clones share the same bytes; the memory is released (its
/// deleter runs once) when the last handle goes.
#[derive(Clone, Debug)]
pub struct Storage(Arc<StorageImpl>);

impl Storage {
    /// Allocates `nbytes` uninitialised bytes on `device` through the registered allocator.
    pub fn new(nbytes: usize, device: Device) -> Result<Storage> {
        let data = get_allocator(device.ty)?.allocate_on(device, nbytes)?;
        Ok(Storage::from_data_ptr(data, nbytes))
    }

    /// Wraps memory that already exists (zero-copy); `nbytes` is the usable size.
    pub fn from_data_ptr(data: DataPtr, nbytes: usize) -> Storage {
        Storage(Arc::new(StorageImpl { data, nbytes }))
    }

    /// Address of the first byte. Reading or writing through it is the caller's business: the
    /// storage is shared between views, exactly as in PyTorch.
    #[inline]
    pub fn data_ptr(&self) -> *mut u8 {
        self.0.data.as_ptr()
    }

    /// Usable size in bytes.
    #[inline]
    pub fn nbytes(&self) -> usize {
        self.0.nbytes
    }

    /// The device of the memory.
    #[inline]
    pub fn device(&self) -> Device {
        self.0.data.device()
    }

    /// True when both handles share the same memory block.
    pub fn is_same(&self, other: &Storage) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Number of handles (tensors and views) holding this storage.
    pub fn use_count(&self) -> usize {
        Arc::strong_count(&self.0)
    }
}
