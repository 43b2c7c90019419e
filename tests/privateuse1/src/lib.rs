//! PrivateUse1 test backend (being written).
