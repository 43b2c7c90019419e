//! `Generator`: a seeded random-number engine per device (PyTorch's `CPUGeneratorImpl`), shared
//! by handle, with `manual_seed` and a process-wide default generator per device.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use c10::{Device, DeviceType, Error, Result};

/// PyTorch's default seed for the CPU generator.
pub const DEFAULT_SEED: u64 = 67280421310721;

const MT_N: usize = 624;
const MT_M: usize = 397;

/// The mt19937 engine (the engine of PyTorch's CPU generator).
#[derive(Clone, Debug)]
pub struct Mt19937 {
    state: Box<[u32; MT_N]>,
    index: usize,
}

impl Mt19937 {
    /// An engine seeded like `std::mt19937(seed)` (PyTorch seeds with the low 32 bits).
    pub fn new(seed: u64) -> Self {
        let mut state = Box::new([0u32; MT_N]);
        state[0] = (seed & 0xffff_ffff) as u32;
        for i in 1..MT_N {
            let prev = state[i - 1];
            state[i] = 1812433253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        Mt19937 { state, index: MT_N }
    }

    fn twist(&mut self) {
        for i in 0..MT_N {
            let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % MT_N] & 0x7fff_ffff);
            let mut v = self.state[(i + MT_M) % MT_N] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            self.state[i] = v;
        }
        self.index = 0;
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= MT_N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }
}

/// The state behind a generator handle.
#[derive(Debug)]
pub struct GeneratorState {
    /// The seed last set.
    pub seed: u64,
    /// The engine.
    pub engine: Mt19937,
    /// Box-Muller keeps its second sample for the next call (as PyTorch's generator does).
    pub next_normal: Option<f64>,
}

impl GeneratorState {
    /// The next 32 random bits.
    pub fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }
    /// The next 64 random bits (two 32-bit draws, high word first... as PyTorch's `random64`).
    pub fn random64(&mut self) -> u64 {
        let hi = self.engine.next_u32() as u64;
        let lo = self.engine.next_u32() as u64;
        (hi << 32) | lo
    }
}

/// A random-number generator handle. Clones share the state (like PyTorch's `Generator`).
#[derive(Clone, Debug)]
pub struct Generator {
    device: Device,
    state: Arc<Mutex<GeneratorState>>,
}

impl Generator {
    /// A new CPU generator with PyTorch's default seed.
    pub fn new(device: Device) -> Self {
        Generator {
            device,
            state: Arc::new(Mutex::new(GeneratorState {
                seed: DEFAULT_SEED,
                engine: Mt19937::new(DEFAULT_SEED),
                next_normal: None,
            })),
        }
    }

    /// The device the generator serves.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Re-seeds the generator (`Generator.manual_seed`).
    pub fn manual_seed(&self, seed: u64) {
        let mut s = self.lock();
        s.seed = seed;
        s.engine = Mt19937::new(seed);
        s.next_normal = None;
    }

    /// The seed last set (`initial_seed`).
    pub fn initial_seed(&self) -> u64 {
        self.lock().seed
    }

    /// Exclusive access to the state for a kernel that draws numbers.
    pub fn lock(&self) -> MutexGuard<'_, GeneratorState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The default generator of a device (one per device type and index).
pub fn default_generator(device: Device) -> Result<Generator> {
    static CPU: OnceLock<Generator> = OnceLock::new();
    match device.ty {
        DeviceType::Cpu => Ok(CPU.get_or_init(|| Generator::new(Device::CPU)).clone()),
        other => {
            Err(Error::NotImplemented { op: "default_generator".into(), msg: format!("no generator for {other}") })
        }
    }
}

/// Seeds the default CPU generator (`torch.manual_seed`).
pub fn manual_seed(seed: u64) {
    default_generator(Device::CPU).expect("the CPU always has a generator").manual_seed(seed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_matches_the_reference_sequence() {
        // std::mt19937 with the standard default seed 5489: the 10000th output is 4123659995.
        let mut e = Mt19937::new(5489);
        let mut v = 0;
        for _ in 0..10000 {
            v = e.next_u32();
        }
        assert_eq!(v, 4123659995);
    }
}
