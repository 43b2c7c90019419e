//! Device-generic streams, events and guards: PyTorch's `c10::Stream`, `c10::Event`,
//! `DeviceGuard`, `StreamGuard` and `DeviceGuardImplInterface`.
//!
//! A backend (the CUDA one in `kernels-cuda`) registers a [`DeviceGuardImpl`] for its device type;
//! code above (aten, nn, users) switches devices and streams through the guards without naming
//! the backend. The current device and the current stream of each device are per thread, as in
//! PyTorch: a guard changes them for its scope and restores them when dropped.

use std::sync::atomic::{AtomicPtr, Ordering};

use crate::{Device, DeviceType, Error, Result};

/// A stream of one device: work on a stream runs in issue order; streams of a device may run
/// concurrently. Id 0 is the device's default stream.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stream {
    /// The device (with an explicit index).
    pub device: Device,
    /// The backend's stream handle.
    pub id: u64,
}

impl Stream {
    /// The default stream of `device`.
    pub const fn default_for(device: Device) -> Stream {
        Stream { device, id: 0 }
    }
}

/// What device-generic code needs from a backend about devices, streams and events (PyTorch's
/// `DeviceGuardImplInterface`). Devices passed in have an explicit index.
pub trait DeviceGuardImpl: Send + Sync {
    /// The device type this implements.
    fn device_type(&self) -> DeviceType;
    /// Number of devices.
    fn device_count(&self) -> Result<usize>;
    /// The calling thread's current device.
    fn current_device(&self) -> Result<Device>;
    /// Makes `device` the calling thread's current device.
    fn set_device(&self, device: Device) -> Result<()>;
    /// The calling thread's current stream on `device`.
    fn current_stream(&self, device: Device) -> Result<Stream>;
    /// Makes `stream` current on its device for the calling thread; returns the previous one.
    fn exchange_stream(&self, stream: Stream) -> Result<Stream>;
    /// A new stream on `device` (PyTorch takes one from a pool).
    fn new_stream(&self, device: Device) -> Result<Stream>;
    /// Blocks until all work on `stream` finished.
    fn synchronize_stream(&self, stream: Stream) -> Result<()>;
    /// Blocks until all work on `device` finished.
    fn synchronize_device(&self, device: Device) -> Result<()>;
    /// Creates an event on `device`; `timing` enables [`DeviceGuardImpl::elapsed_ms`].
    fn create_event(&self, device: Device, timing: bool) -> Result<u64>;
    /// Destroys an event.
    fn destroy_event(&self, event: u64);
    /// Records `event` at the current end of `stream`.
    fn record_event(&self, event: u64, stream: Stream) -> Result<()>;
    /// Makes later work on `stream` wait until `event` completed.
    fn block(&self, event: u64, stream: Stream) -> Result<()>;
    /// Whether the work before the event's last record finished.
    fn query_event(&self, event: u64) -> Result<bool>;
    /// Blocks until the event completed.
    fn synchronize_event(&self, event: u64) -> Result<()>;
    /// Milliseconds between two recorded events.
    fn elapsed_ms(&self, start: u64, end: u64) -> Result<f64>;
}

static IMPLS: [AtomicPtr<&'static dyn DeviceGuardImpl>; DeviceType::COUNT] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; DeviceType::COUNT];

/// Registers the implementation for its device type (backends do this when they initialise).
pub fn set_device_guard_impl(i: &'static dyn DeviceGuardImpl) {
    let slot = Box::into_raw(Box::new(i));
    IMPLS[i.device_type() as usize].store(slot, Ordering::Release);
}

/// The implementation for `ty`, or PyTorch's error for a backend that is not there.
pub fn device_guard_impl(ty: DeviceType) -> Result<&'static dyn DeviceGuardImpl> {
    let p = IMPLS[ty as usize].load(Ordering::Acquire);
    if p.is_null() {
        return Err(Error::invalid("device guard", format!("PyTorch is not linked with support for {ty} devices")));
    }
    // SAFETY: non-null slots hold pointers from `Box::into_raw` in `set_device_guard_impl`,
    // never freed.
    Ok(unsafe { *p })
}

/// `device` with its index filled in from the thread's current device when it is -1.
pub fn resolve(device: Device) -> Result<Device> {
    if device.index >= 0 || device.ty == DeviceType::Cpu {
        return Ok(device);
    }
    device_guard_impl(device.ty)?.current_device()
}

/// Makes a device current for a scope (PyTorch's `DeviceGuard`); the previous one is restored on
/// drop. A CPU device changes nothing.
pub struct DeviceGuard {
    restore: Option<(&'static dyn DeviceGuardImpl, Device)>,
}

impl DeviceGuard {
    /// Switches to `device` (an index of -1 keeps the current one).
    pub fn new(device: Device) -> Result<DeviceGuard> {
        if device.ty == DeviceType::Cpu {
            return Ok(DeviceGuard { restore: None });
        }
        let i = device_guard_impl(device.ty)?;
        let original = i.current_device()?;
        if device.index >= 0 && device != original {
            i.set_device(device)?;
        }
        Ok(DeviceGuard { restore: Some((i, original)) })
    }
}

impl Drop for DeviceGuard {
    fn drop(&mut self) {
        if let Some((i, d)) = self.restore {
            // The original device was valid when the guard was made; restoring it cannot fail
            // in a way the scope could handle.
            let _ = i.set_device(d);
        }
    }
}

/// Makes a stream (and its device) current for a scope (PyTorch's `StreamGuard`); the previous
/// device and that device's previous stream are restored on drop.
pub struct StreamGuard {
    imp: &'static dyn DeviceGuardImpl,
    original_device: Device,
    original_stream: Stream,
}

impl StreamGuard {
    /// Switches to `stream` and its device.
    pub fn new(stream: Stream) -> Result<StreamGuard> {
        let imp = device_guard_impl(stream.device.ty)?;
        let original_device = imp.current_device()?;
        imp.set_device(stream.device)?;
        let original_stream = imp.exchange_stream(stream)?;
        Ok(StreamGuard { imp, original_device, original_stream })
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let _ = self.imp.exchange_stream(self.original_stream);
        let _ = self.imp.set_device(self.original_device);
    }
}

/// An event of a device (PyTorch's `c10::Event` / `torch.cuda.Event`): recorded on a stream, it
/// completes when the work issued before it finished. Destroyed on drop.
pub struct Event {
    imp: &'static dyn DeviceGuardImpl,
    device: Device,
    id: u64,
}

impl Event {
    /// A new event on `device`; `enable_timing` as PyTorch's argument.
    pub fn new(device: Device, enable_timing: bool) -> Result<Event> {
        let imp = device_guard_impl(device.ty)?;
        let device = resolve(device)?;
        let id = imp.create_event(device, enable_timing)?;
        Ok(Event { imp, device, id })
    }

    /// The device the event belongs to.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Records the event on `stream`, which must be on the event's device.
    pub fn record(&self, stream: Stream) -> Result<()> {
        if stream.device != self.device {
            return Err(Error::invalid(
                "Event.record",
                format!("Event device {} does not match recording stream's device {}.", self.device, stream.device),
            ));
        }
        self.imp.record_event(self.id, stream)
    }

    /// Makes later work on `stream` wait for this event.
    pub fn wait(&self, stream: Stream) -> Result<()> {
        self.imp.block(self.id, stream)
    }

    /// Whether the recorded work finished.
    pub fn query(&self) -> Result<bool> {
        self.imp.query_event(self.id)
    }

    /// Blocks until the recorded work finished.
    pub fn synchronize(&self) -> Result<()> {
        self.imp.synchronize_event(self.id)
    }

    /// Milliseconds from this event to `end` (both recorded, with timing enabled).
    pub fn elapsed_time(&self, end: &Event) -> Result<f64> {
        self.imp.elapsed_ms(self.id, end.id)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        self.imp.destroy_event(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_without_an_implementation_is_an_error() {
        let e = device_guard_impl(DeviceType::Meta).err().unwrap().to_string();
        assert!(e.contains("not linked with support for meta devices"), "{e}");
        assert!(DeviceGuard::new(Device::CPU).is_ok());
        assert_eq!(resolve(Device::CPU).unwrap(), Device::CPU);
    }
}
