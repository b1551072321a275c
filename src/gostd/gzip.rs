//! Go's `compress/gzip` writer over [`super::flate`], byte for byte.
//!
//! The header is Go's: no file name or comment unless set, the time only
//! when it is after the epoch, `XFL` 2 at level 9 and 4 at level 1, and the
//! OS byte 255 ("unknown") unless set. The trailer is the CRC-32 and the
//! size modulo 2^32. As in Go, the header is written by the first
//! [`Writer::write_chunk`] (or by [`Writer::close`] when nothing was
//! written), and each `write_chunk` is one Go `Write` call: see
//! [`super::flate`] for why the split of the input matters.
use super::flate::{self, FlateError};
use std::io::Write;

/// Go's `gzip.Header`: the optional fields of a gzip member header.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    /// The file name (Latin-1 only; empty for none).
    pub name: String,
    /// The comment (Latin-1 only; empty for none).
    pub comment: String,
    /// The extra field, written (even empty) when present.
    pub extra: Option<Vec<u8>>,
    /// The modification time in Unix seconds; written only when positive,
    /// as Go writes it only for times after the epoch.
    pub mod_time: i64,
    /// The OS byte; Go's default is 255 (unknown).
    pub os: u8,
}

impl Default for Header {
    fn default() -> Self {
        Header {
            name: String::new(),
            comment: String::new(),
            extra: None,
            mod_time: 0,
            os: 255,
        }
    }
}

/// Why a gzip stream could not be written.
#[derive(Debug, thiserror::Error)]
pub enum GzipError {
    /// The level is outside Go's range.
    #[error("gzip: invalid compression level: {0}")]
    InvalidLevel(i32),
    /// The extra field is over 65535 bytes.
    #[error("gzip.Write: Extra data is too large ({0} bytes)")]
    ExtraTooLarge(usize),
    /// The name or comment has a NUL or a character beyond Latin-1.
    #[error("gzip.Write: non-Latin-1 header string in the {field}: {value:?}")]
    NotLatin1 {
        /// `name` or `comment`.
        field: &'static str,
        /// The string.
        value: String,
    },
    /// The deflate layer failed.
    #[error(transparent)]
    Flate(#[from] FlateError),
    /// The underlying writer failed.
    #[error("gzip: {0}")]
    Io(#[from] std::io::Error),
}

/// Go's `writeString`: the string as Latin-1 bytes and a NUL.
fn latin1(field: &'static str, s: &str) -> Result<Vec<u8>, GzipError> {
    let mut out = Vec::with_capacity(s.len() + 1);
    for c in s.chars() {
        let v = u32::from(c);
        if v == 0 || v > 0xff {
            return Err(GzipError::NotLatin1 {
                field,
                value: s.to_string(),
            });
        }
        out.push(v as u8);
    }
    out.push(0);
    Ok(out)
}

enum State<W: Write> {
    Pending(W),
    Active(Box<flate::Writer<W>>),
    Poisoned,
}

/// Go's `gzip.Writer`: a gzip member whose bytes are Go's.
pub struct Writer<W: Write> {
    header: Header,
    level: i32,
    state: State<W>,
    crc: flate2::Crc,
    closed: bool,
}

impl<W: Write> std::fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("gzip::Writer")
            .field("header", &self.header)
            .field("level", &self.level)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl<W: Write> Writer<W> {
    /// Go's `gzip.NewWriterLevel(w, level)` with `header` set before the
    /// first write.
    pub fn new(inner: W, level: i32, header: Header) -> Result<Self, GzipError> {
        if !(flate::HUFFMAN_ONLY..=flate::BEST_COMPRESSION).contains(&level) {
            return Err(GzipError::InvalidLevel(level));
        }
        Ok(Writer {
            header,
            level,
            state: State::Pending(inner),
            crc: flate2::Crc::new(),
            closed: false,
        })
    }

    fn header_bytes(&self) -> Result<Vec<u8>, GzipError> {
        let h = &self.header;
        let mut b = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, h.os];
        if h.extra.is_some() {
            b[3] |= 0x04;
        }
        if !h.name.is_empty() {
            b[3] |= 0x08;
        }
        if !h.comment.is_empty() {
            b[3] |= 0x10;
        }
        if h.mod_time > 0 {
            b[4..8].copy_from_slice(&(h.mod_time as u32).to_le_bytes());
        }
        b[8] = match self.level {
            flate::BEST_COMPRESSION => 2,
            flate::BEST_SPEED => 4,
            _ => 0,
        };
        if let Some(extra) = &h.extra {
            let len =
                u16::try_from(extra.len()).map_err(|_| GzipError::ExtraTooLarge(extra.len()))?;
            b.extend_from_slice(&len.to_le_bytes());
            b.extend_from_slice(extra);
        }
        if !h.name.is_empty() {
            b.extend(latin1("name", &h.name)?);
        }
        if !h.comment.is_empty() {
            b.extend(latin1("comment", &h.comment)?);
        }
        Ok(b)
    }

    fn active(&mut self) -> Result<&mut flate::Writer<W>, GzipError> {
        if let State::Pending(_) = self.state {
            let header = self.header_bytes()?;
            let State::Pending(mut inner) = std::mem::replace(&mut self.state, State::Poisoned)
            else {
                unreachable!("checked above");
            };
            inner.write_all(&header)?;
            self.state = State::Active(Box::new(flate::Writer::new(inner, self.level)?));
        }
        match &mut self.state {
            State::Active(w) => Ok(w),
            _ => Err(GzipError::Flate(FlateError::Closed)),
        }
    }

    /// One Go `Write` call: the header first if not yet written, then
    /// `data` into the CRC, the size and the compressor.
    pub fn write_chunk(&mut self, data: &[u8]) -> Result<(), GzipError> {
        if self.closed {
            return Err(GzipError::Flate(FlateError::Closed));
        }
        self.crc.update(data);
        self.active()?.write_chunk(data)?;
        Ok(())
    }

    /// Go's `Flush`: the data so far and a sync marker.
    pub fn sync_flush(&mut self) -> Result<(), GzipError> {
        if self.closed {
            return Ok(());
        }
        self.active()?.sync_flush()?;
        Ok(())
    }

    /// Go's `Close`: the final deflate block and the CRC-32/size trailer.
    /// Closing twice does nothing more.
    pub fn close(&mut self) -> Result<(), GzipError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let crc = self.crc.sum();
        let size = self.crc.amount();
        let w = self.active()?;
        w.close()?;
        let mut trailer = [0u8; 8];
        trailer[..4].copy_from_slice(&crc.to_le_bytes());
        trailer[4..].copy_from_slice(&size.to_le_bytes());
        w.get_mut().write_all(&trailer)?;
        Ok(())
    }

    /// Closes (if not yet) and returns the underlying writer.
    pub fn finish(mut self) -> Result<W, GzipError> {
        self.close()?;
        match std::mem::replace(&mut self.state, State::Poisoned) {
            State::Active(w) => Ok(w.finish()?),
            State::Pending(w) => Ok(w),
            State::Poisoned => Err(GzipError::Flate(FlateError::Closed)),
        }
    }
}

impl<W: Write> Write for Writer<W> {
    /// One Go `Write` call with the whole buffer.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_chunk(buf).map_err(|e| match e {
            GzipError::Io(e) | GzipError::Flate(FlateError::Io(e)) => e,
            other => std::io::Error::other(other),
        })?;
        Ok(buf.len())
    }

    /// Hands finished bytes to the underlying writer (no sync marker).
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.state {
            State::Active(w) => w.flush(),
            State::Pending(w) => w.flush(),
            State::Poisoned => Ok(()),
        }
    }
}

/// `data` gzipped by Go at `level` with `header`, in one `Write` call.
pub fn compress(data: &[u8], level: i32, header: Header) -> Result<Vec<u8>, GzipError> {
    let mut w = Writer::new(Vec::new(), level, header)?;
    w.write_chunk(data)?;
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(data)
            .read_to_end(&mut out)
            .expect("valid gzip");
        out
    }

    #[test]
    fn empty_member_is_gos() {
        // Go: gzip.NewWriter(&buf).Close().
        let out = compress(b"", -1, Header::default()).unwrap();
        assert_eq!(
            out,
            [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 1, 0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        let mut w = Writer::new(Vec::new(), 9, Header::default()).unwrap();
        w.close().unwrap();
        w.close().unwrap();
        assert_eq!(w.finish().unwrap()[8], 2);
    }

    #[test]
    fn header_fields_as_go_writes_them() {
        let h = Header {
            name: "café".into(),
            comment: "Helm".into(),
            extra: Some(b"xy".to_vec()),
            mod_time: 0x0102_0304,
            os: 3,
        };
        let out = compress(b"data", 1, h).unwrap();
        assert_eq!(&out[..10], &[0x1f, 0x8b, 8, 0x1c, 4, 3, 2, 1, 4, 3]);
        assert_eq!(&out[10..14], b"\x02\x00xy");
        assert_eq!(&out[14..24], b"caf\xe9\0Helm\0");
        assert_eq!(gunzip(&out), b"data");
        let mut d = flate2::read::GzDecoder::new(out.as_slice());
        std::io::copy(&mut d, &mut std::io::sink()).unwrap();
        let gh = d.header().unwrap();
        assert_eq!(gh.comment(), Some(&b"Helm"[..]));
        assert_eq!(gh.mtime(), 0x0102_0304);
    }

    #[test]
    fn bad_headers_and_levels_are_refused() {
        assert!(matches!(
            Writer::new(Vec::new(), 10, Header::default()),
            Err(GzipError::InvalidLevel(10))
        ));
        let h = Header {
            name: "€".into(),
            ..Header::default()
        };
        assert!(matches!(
            compress(b"x", 6, h),
            Err(GzipError::NotLatin1 { field: "name", .. })
        ));
        let h = Header {
            extra: Some(vec![0; 70_000]),
            ..Header::default()
        };
        assert!(matches!(
            compress(b"x", 6, h),
            Err(GzipError::ExtraTooLarge(70_000))
        ));
    }

    #[test]
    fn chunks_round_trip_with_the_right_trailer() {
        let data: Vec<u8> = (0..200_000u32)
            .map(|i| (i % 251) as u8 ^ (i >> 9) as u8)
            .collect();
        for level in [-2, -1, 0, 1, 5, 9] {
            let mut w = Writer::new(Vec::new(), level, Header::default()).unwrap();
            for c in data.chunks(7_777) {
                w.write_chunk(c).unwrap();
            }
            let out = w.finish().unwrap();
            assert_eq!(gunzip(&out), data, "level {level}");
            let n = out.len();
            assert_eq!(&out[n - 4..], &(data.len() as u32).to_le_bytes());
        }
    }
}
