//! `poll(2)`, the one system call of the store's server that std does not wrap: whether any
//! of many sockets can be read or written, without a thread per socket.
#![allow(unsafe_code)]

use std::os::fd::RawFd;

/// What to watch on `fd`.
pub(super) fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd { fd, events, revents: 0 }
}

/// Waits until one of `fds` is ready, at most `timeout_ms` (-1: no limit); the ready ones get
/// their `revents` set.
pub(super) fn poll(fds: &mut [libc::pollfd], timeout_ms: libc::c_int) -> std::io::Result<usize> {
    // SAFETY: `fds` is a live, exclusively borrowed slice of `pollfd`s, and its length is
    // passed with it; poll only writes their `revents` fields.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
