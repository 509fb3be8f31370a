//! Reading length-prefixed request frames (a 4-byte size, then that many bytes) without
//! holding memory for an idle connection: the read buffer exists only while bytes of an
//! unfinished frame are in it, and readiness is awaited with no buffer at all.

use bytes::{Buf, Bytes, BytesMut};
use tokio::net::tcp::OwnedReadHalf;

/// Bytes asked of the kernel per read when the frame in progress needs fewer: enough for
/// several small pipelined requests per system call. A larger frame gets a buffer of exactly
/// its size, so its bytes are never copied again.
const READ_AHEAD: usize = 16 * 1024;

/// The frames arriving on one connection.
pub(crate) struct FrameReader<R = OwnedReadHalf> {
    rd: R,
    buf: BytesMut,
    max_frame: usize,
}

/// What a frame reader reads from: a non-blocking socket's readiness and reads.
pub(crate) trait ReadySource {
    /// Waits until a read may make progress. Must be cancel-safe.
    fn readable(&self) -> impl std::future::Future<Output = std::io::Result<()>> + Send;
    /// Reads what is available into `buf`'s spare capacity without waiting.
    fn try_read_buf(&self, buf: &mut BytesMut) -> std::io::Result<usize>;
}

impl ReadySource for OwnedReadHalf {
    fn readable(&self) -> impl std::future::Future<Output = std::io::Result<()>> + Send {
        OwnedReadHalf::readable(self)
    }
    fn try_read_buf(&self, buf: &mut BytesMut) -> std::io::Result<usize> {
        OwnedReadHalf::try_read_buf(self, buf)
    }
}

/// Where a frame reader's bytes come from: waits for bytes and moves them into `buf`,
/// reserving `want` first (only once bytes are there, for a readiness source).
pub(crate) trait Source: Send {
    /// Must be cancel-safe: cancelled, it has moved no bytes.
    fn fill<'a>(&'a mut self, buf: &'a mut BytesMut, want: usize) -> impl std::future::Future<Output = std::io::Result<usize>> + Send + 'a;
}

impl<T: ReadySource + Send + Sync> Source for T {
    async fn fill<'a>(&'a mut self, buf: &'a mut BytesMut, want: usize) -> std::io::Result<usize> {
        loop {
            self.readable().await?;
            buf.reserve(want);
            match self.try_read_buf(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    // Readiness was stale: wait again without the room just reserved, or an
                    // idle connection would keep it (5-6 KiB each on average, measured).
                    if buf.is_empty() {
                        *buf = BytesMut::new();
                    }
                }
                r => return r,
            }
        }
    }
}

/// A stream that has no readiness to wait on (TLS: plaintext may already sit decrypted in
/// the session). Between frames it reads only a length prefix's worth, so an idle
/// connection still holds next to no buffer of its own.
pub(crate) struct Streamed<R>(pub R);

impl<R: tokio::io::AsyncRead + Unpin + Send> Source for Streamed<R> {
    async fn fill<'a>(&'a mut self, buf: &'a mut BytesMut, want: usize) -> std::io::Result<usize> {
        use tokio::io::AsyncReadExt;
        buf.reserve(if buf.is_empty() { 4 } else { want });
        // `read_buf` is cancel-safe: cancelled, it has read nothing.
        self.0.read_buf(buf).await
    }
}

impl<R: Source> FrameReader<R> {
    /// Changes the largest frame taken from now on (smaller before SASL authentication).
    pub(crate) fn set_max_frame(&mut self, max_frame: usize) {
        self.max_frame = max_frame;
    }

    /// Frames of at most `max_frame` bytes (`socket.request.max.bytes`) from `rd`.
    pub(crate) fn new(rd: R, max_frame: usize) -> Self {
        FrameReader { rd, buf: BytesMut::new(), max_frame }
    }

    /// The next frame's body, or `None` once the client closed between frames.
    ///
    /// Cancel-safe: the only wait is for readiness, and bytes are moved into the buffer
    /// synchronously, so a caller racing this against other work in `select!` loses nothing.
    pub(crate) async fn next(&mut self) -> anyhow::Result<Option<Bytes>> {
        loop {
            if let Some(frame) = self.split_frame()? {
                return Ok(Some(frame));
            }
            if self.buf.is_empty() {
                // Frames handed out may share this allocation; letting go of it here means an
                // idle connection holds no buffer, and the memory goes once they are handled.
                self.buf = BytesMut::new();
            }
            let want = self.missing().max(READ_AHEAD.min(self.max_frame + 4));
            match self.rd.fill(&mut self.buf, want).await {
                Ok(0) if self.buf.is_empty() => return Ok(None),
                Ok(0) => anyhow::bail!("the client closed the connection in the middle of a frame"),
                Ok(_) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Bytes still to come before the frame in progress is complete.
    fn missing(&self) -> usize {
        match self.frame_len() {
            Some(len) => (4 + len).saturating_sub(self.buf.len()),
            None => 4 - self.buf.len().min(4),
        }
    }

    fn frame_len(&self) -> Option<usize> {
        let head: [u8; 4] = self.buf.get(..4)?.try_into().ok()?;
        // Checked in split_frame before any caller relies on it.
        Some(i32::from_be_bytes(head).max(0) as usize)
    }

    /// Takes a complete frame off the front of the buffer, if there is one.
    fn split_frame(&mut self) -> anyhow::Result<Option<Bytes>> {
        let Some(head) = self.buf.get(..4) else { return Ok(None) };
        let len = i32::from_be_bytes(head.try_into().expect("four bytes"));
        if len < 0 || len as usize > self.max_frame {
            anyhow::bail!("frame of {len} bytes is outside 0..={} (socket.request.max.bytes); closing", self.max_frame);
        }
        let len = len as usize;
        if self.buf.len() < 4 + len {
            return Ok(None);
        }
        let mut frame = self.buf.split_to(4 + len);
        frame.advance(4);
        Ok(Some(frame.freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::Mutex;

    /// A socket stand-in that delivers the given reads one by one; an empty read is the
    /// client's close, and with nothing left to deliver it never becomes readable again.
    struct Script(Mutex<VecDeque<Vec<u8>>>);

    impl ReadySource for Script {
        async fn readable(&self) -> std::io::Result<()> {
            if self.0.lock().unwrap().is_empty() {
                std::future::pending::<()>().await;
            }
            Ok(())
        }
        fn try_read_buf(&self, buf: &mut BytesMut) -> std::io::Result<usize> {
            let mut q = self.0.lock().unwrap();
            let Some(mut chunk) = q.pop_front() else { return Err(std::io::ErrorKind::WouldBlock.into()) };
            let room = buf.capacity() - buf.len();
            if chunk.len() > room {
                q.push_front(chunk.split_off(room));
            }
            buf.extend_from_slice(&chunk);
            Ok(chunk.len())
        }
    }

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut f = (body.len() as i32).to_be_bytes().to_vec();
        f.extend_from_slice(body);
        f
    }

    fn reader(reads: Vec<Vec<u8>>, max_frame: usize) -> FrameReader<Script> {
        FrameReader::new(Script(Mutex::new(reads.into())), max_frame)
    }

    #[tokio::test]
    async fn frames_split_anywhere_and_pipelined_come_out_whole_and_in_order() {
        let big = vec![7u8; 100_000];
        let mut wire = [frame(b"one"), frame(b""), frame(&big), frame(b"four")].concat();
        // Cut the stream at awkward places: inside a length prefix, inside bodies.
        let tail = wire.split_off(2);
        let mut reads = vec![wire];
        let mut rest = tail;
        while !rest.is_empty() {
            let n = rest.len().min(5000);
            let more = rest.split_off(n);
            reads.push(rest);
            rest = more;
        }
        reads.push(vec![]);
        let mut r = reader(reads, 1 << 20);
        assert_eq!(r.next().await.unwrap().unwrap(), &b"one"[..]);
        assert_eq!(r.next().await.unwrap().unwrap(), &b""[..]);
        assert_eq!(r.next().await.unwrap().unwrap(), &big[..]);
        assert_eq!(r.next().await.unwrap().unwrap(), &b"four"[..]);
        assert!(r.next().await.unwrap().is_none(), "end of stream between frames is a clean close");
    }

    #[tokio::test]
    async fn between_frames_the_reader_holds_no_buffer() {
        let mut r = reader(vec![frame(b"hello")], 1 << 20);
        let f = r.next().await.unwrap().unwrap();
        assert_eq!(f, &b"hello"[..]);
        // No more bytes come: the reader waits for the socket, and must do so empty-handed.
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(20), r.next()).await;
        assert!(waiting.is_err(), "a frame out of nothing");
        assert_eq!(r.buf.capacity(), 0, "an idle connection kept its read buffer");
    }

    #[tokio::test]
    async fn a_large_frame_gets_a_buffer_of_its_size() {
        let body = vec![1u8; 3 * READ_AHEAD];
        let mut r = reader(vec![frame(&body)], 1 << 20);
        let f = r.next().await.unwrap().unwrap();
        assert_eq!(f.len(), body.len());
        assert!(r.buf.capacity() < READ_AHEAD, "the frame's buffer was over-allocated: {} left", r.buf.capacity());
    }

    #[tokio::test]
    async fn out_of_bounds_lengths_and_torn_frames_are_errors() {
        let err = reader(vec![frame(&[0; 11])], 10).next().await.unwrap_err();
        assert!(err.to_string().contains("socket.request.max.bytes"), "{err}");
        assert!(reader(vec![(-1i32).to_be_bytes().to_vec()], 10).next().await.is_err());
        assert!(reader(vec![frame(b"abcdef")[..7].to_vec(), vec![]], 10).next().await.is_err(), "a frame cut short by the close");
        assert!(reader(vec![vec![0, 0], vec![]], 10).next().await.is_err(), "a length prefix cut short by the close");
        assert!(reader(vec![frame(b"ok"), vec![]], 10).next().await.unwrap().is_some(), "control: a whole frame is fine");
    }
}
