//! The nn tests, one binary (each test file would otherwise link its own copy of aten).
mod amp;
mod data;
mod fuzz_regressions;
mod layers;
mod modules;
mod optim;
mod pt;
mod recurrent;
mod sparse;
