//! Kafka's `socket.send.buffer.bytes` and `socket.receive.buffer.bytes` on accepted
//! connections.
//!
//! Kafka sizes both buffers of every client connection to 100 KiB by default. Left to the
//! kernel's autotuning, a send buffer grows to megabytes, and one Fetch response of many
//! MiB is queued at once: the client then takes it in large bursts, with more page faults
//! in its receive buffers and more softirq work in its own context (issue 26).

use std::os::fd::AsRawFd;

use tokio::net::TcpStream;

/// Sets SO_SNDBUF and SO_RCVBUF of `stream` to `send` and `receive` bytes; -1 (or any
/// value below 1) leaves that one to the OS, as in Kafka.
pub fn size_buffers(stream: &TcpStream, send: i32, receive: i32) {
    for (opt, bytes) in [(libc::SO_SNDBUF, send), (libc::SO_RCVBUF, receive)] {
        if bytes < 1 {
            continue;
        }
        // SAFETY: the fd is open for as long as `stream` is borrowed, and `bytes` outlives
        // the call; a failure only leaves the kernel's default, as Kafka's does.
        let rc = unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&bytes as *const i32).cast(),
                std::mem::size_of::<i32>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            tracing::debug!(opt, bytes, error = %std::io::Error::last_os_error(), "could not size a socket buffer");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sockopt(stream: &TcpStream, opt: i32) -> i32 {
        let mut v: i32 = 0;
        let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
        let rc = unsafe { libc::getsockopt(stream.as_raw_fd(), libc::SOL_SOCKET, opt, (&mut v as *mut i32).cast(), &mut len) };
        assert_eq!(rc, 0);
        v
    }

    #[tokio::test]
    async fn buffers_take_the_configured_sizes_and_minus_one_leaves_the_default() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = TcpStream::connect(addr).await.unwrap();
        let (a, _) = listener.accept().await.unwrap();
        let default_send = sockopt(&a, libc::SO_SNDBUF);
        size_buffers(&a, -1, 65536);
        assert_eq!(sockopt(&a, libc::SO_SNDBUF), default_send);
        // Linux doubles what is set, for its own bookkeeping.
        assert_eq!(sockopt(&a, libc::SO_RCVBUF), 2 * 65536);
        size_buffers(&a, 102400, -1);
        assert_eq!(sockopt(&a, libc::SO_SNDBUF), 2 * 102400);
    }
}
