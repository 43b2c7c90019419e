//! The TCPStore wire protocol, as PyTorch's c10d `TCPStore` speaks it (2.x, both server
//! backends): request codes, the framing of fields, and an incremental parser of requests for
//! the server.
//!
//! Note [TCPStore wire format]: integers are in host byte order (little-endian on every
//! machine we run on), with no message header. A request is a u8 query code and its
//! arguments; a string or byte field is a u64 length and the bytes; a count is a u64. A
//! connection starts with `VALIDATE` and the magic number (no reply), then the client's
//! `PING` of a nonce, echoed. Replies carry no status: a request the server cannot serve
//! closes the connection. See `reference/formats-and-protocols.md` §4.

/// The magic number of `VALIDATE`.
pub(super) const VALIDATION_MAGIC: u32 = 0x3C85_F7CE;

/// The query codes (PyTorch's `QueryType`; the numbering since 2.0, see Note [TCPStore wire
/// format]).
pub(super) mod query {
    pub const VALIDATE: u8 = 0;
    pub const SET: u8 = 1;
    pub const COMPARE_SET: u8 = 2;
    pub const GET: u8 = 3;
    pub const ADD: u8 = 4;
    pub const CHECK: u8 = 5;
    pub const WAIT: u8 = 6;
    pub const GETNUMKEYS: u8 = 7;
    pub const DELETE_KEY: u8 = 8;
    pub const APPEND: u8 = 9;
    pub const MULTI_GET: u8 = 10;
    pub const MULTI_SET: u8 = 11;
    pub const CANCEL_WAIT: u8 = 12;
    pub const PING: u8 = 13;
    pub const LIST_KEYS: u8 = 17;
}

/// The reply to `CHECK` (`CheckResponseType`).
pub(super) const READY: u8 = 0;
pub(super) const NOT_READY: u8 = 1;
/// The replies to `WAIT` and `CANCEL_WAIT` (`WaitResponseType`).
pub(super) const STOP_WAITING: u8 = 0;
pub(super) const WAIT_CANCELED: u8 = 1;

/// The longest key a request may carry (PyTorch's libuv server's bound).
pub(super) const MAX_KEY: u64 = 8 << 10;
/// The longest value a request may carry (the libuv server's bound).
pub(super) const MAX_VALUE: u64 = 8 << 20;
/// The most keys one request may name (the libuv server's bound).
pub(super) const MAX_KEYS: u64 = 128 << 10;
/// The longest request the server buffers: a multi_set may carry many values, each within
/// [`MAX_VALUE`], but not more than this in all.
pub(super) const MAX_REQUEST: usize = 64 << 20;

/// Appends the fields of a request or reply (the client's requests, the server's replies).
#[derive(Default)]
pub(super) struct Encoder(pub(super) Vec<u8>);

impl Encoder {
    pub(super) fn new(code: u8) -> Self {
        Encoder(vec![code])
    }
    pub(super) fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    pub(super) fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    pub(super) fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    pub(super) fn i64(&mut self, v: i64) -> &mut Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    /// A string or byte field: its u64 length, then the bytes.
    pub(super) fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u64(v.len() as u64);
        self.0.extend_from_slice(v);
        self
    }
}

/// A parsed request (the server's view); its keys and values are slices of the buffer parsed.
#[derive(Debug, PartialEq)]
pub(super) enum Request<'a> {
    Validate(u32),
    Set(&'a [u8], &'a [u8]),
    CompareSet { key: &'a [u8], expected: &'a [u8], desired: &'a [u8] },
    Get(&'a [u8]),
    Add(&'a [u8], i64),
    Check(Vec<&'a [u8]>),
    Wait(Vec<&'a [u8]>),
    NumKeys,
    DeleteKey(&'a [u8]),
    Append(&'a [u8], &'a [u8]),
    MultiGet(Vec<&'a [u8]>),
    MultiSet(Vec<(&'a [u8], &'a [u8])>),
    CancelWait,
    Ping(u32),
    ListKeys,
}

/// What [`parse_request`] makes of the start of a buffer.
#[derive(Debug, PartialEq)]
pub(super) enum Parsed<'a> {
    /// A whole request, and the number of bytes it took.
    Request(Request<'a>, usize),
    /// The request is cut short: nothing can be decided before the buffer holds `need` bytes.
    Incomplete { need: usize },
    /// Not a request (an unknown code, a field past its bound): the connection is closed.
    Malformed(String),
}

/// Why a field could not be read.
enum Stop {
    Incomplete(usize),
    Malformed(String),
}

/// Reads fields from the front of a buffer.
struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Stop> {
        let end = self.at.checked_add(n).filter(|&e| e <= MAX_REQUEST).ok_or_else(too_long)?;
        let bytes = self.buf.get(self.at..end).ok_or(Stop::Incomplete(end))?;
        self.at = end;
        Ok(bytes)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], Stop> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u32(&mut self) -> Result<u32, Stop> {
        self.array().map(u32::from_ne_bytes)
    }
    fn u64(&mut self) -> Result<u64, Stop> {
        self.array().map(u64::from_ne_bytes)
    }
    fn i64(&mut self) -> Result<i64, Stop> {
        self.array().map(i64::from_ne_bytes)
    }
    /// A length-prefixed field of at most `max` bytes.
    fn field(&mut self, max: u64, what: &str) -> Result<&'a [u8], Stop> {
        let len = self.u64()?;
        if len > max {
            return Err(Stop::Malformed(format!("a {what} of {len} bytes (at most {max})")));
        }
        self.take(len as usize)
    }
    fn key(&mut self) -> Result<&'a [u8], Stop> {
        self.field(MAX_KEY, "key")
    }
    fn value(&mut self) -> Result<&'a [u8], Stop> {
        self.field(MAX_VALUE, "value")
    }
    fn count(&mut self) -> Result<usize, Stop> {
        let n = self.u64()?;
        if n > MAX_KEYS {
            return Err(Stop::Malformed(format!("{n} keys in one request (at most {MAX_KEYS})")));
        }
        Ok(n as usize)
    }
    fn keys(&mut self) -> Result<Vec<&'a [u8]>, Stop> {
        let n = self.count()?;
        (0..n).map(|_| self.key()).collect()
    }
}

fn too_long() -> Stop {
    Stop::Malformed(format!("a request of more than {MAX_REQUEST} bytes"))
}

/// Parses the request at the front of `buf` (see Note [TCPStore wire format]). Copies no
/// bytes: a request cut short is parsed again, from the start, when more has arrived.
pub(super) fn parse_request(buf: &[u8]) -> Parsed<'_> {
    let mut c = Cursor { buf, at: 0 };
    match parse_with(&mut c) {
        Ok(r) => Parsed::Request(r, c.at),
        Err(Stop::Incomplete(need)) => Parsed::Incomplete { need },
        Err(Stop::Malformed(why)) => Parsed::Malformed(why),
    }
}

fn parse_with<'a>(c: &mut Cursor<'a>) -> Result<Request<'a>, Stop> {
    let [code] = c.array()?;
    Ok(match code {
        query::VALIDATE => Request::Validate(c.u32()?),
        query::SET => Request::Set(c.key()?, c.value()?),
        query::COMPARE_SET => Request::CompareSet { key: c.key()?, expected: c.value()?, desired: c.value()? },
        query::GET => Request::Get(c.key()?),
        query::ADD => Request::Add(c.key()?, c.i64()?),
        query::CHECK => Request::Check(c.keys()?),
        query::WAIT => Request::Wait(c.keys()?),
        query::GETNUMKEYS => Request::NumKeys,
        query::DELETE_KEY => Request::DeleteKey(c.key()?),
        query::APPEND => Request::Append(c.key()?, c.value()?),
        query::MULTI_GET => Request::MultiGet(c.keys()?),
        query::MULTI_SET => {
            let n = c.count()?;
            Request::MultiSet((0..n).map(|_| Ok((c.key()?, c.value()?))).collect::<Result<_, Stop>>()?)
        }
        query::CANCEL_WAIT => Request::CancelWait,
        query::PING => Request::Ping(c.u32()?),
        query::LIST_KEYS => Request::ListKeys,
        other => return Err(Stop::Malformed(format!("an unknown or unsupported query code {other}"))),
    })
}
