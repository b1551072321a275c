//! Go's `compress/flate` compressor, byte for byte.
//!
//! Helm writes chart archives and release records through Go's deflate
//! encoder; other encoders (zlib, miniz) produce valid but different
//! streams. This port reproduces Go's output exactly, for every level Go
//! accepts:
//!
//! - [`HUFFMAN_ONLY`] (-2): Huffman coding of literals only;
//! - [`NO_COMPRESSION`] (0): stored blocks;
//! - [`BEST_SPEED`] (1): Go's Snappy-style matcher (`deflatefast.go`);
//! - 2 to 9: the lazy/greedy hash-chain matcher with Go's level table;
//! - [`DEFAULT_COMPRESSION`] (-1), which is level 6.
//!
//! Go's output depends on how the input is split into `Write` calls (the
//! window slides at a fill, and the timing of a slide decides which matches
//! stay in reach). [`Writer::write_chunk`] is one Go `Write` call, and so is
//! each `std::io::Write::write` (it always takes the whole buffer), so a
//! caller that writes the same chunks Go's writer was given gets Go's bytes.
//!
//! Checked against Go by `tests/go_flate.rs`, which runs Go's own
//! `compress/flate` on the same input, split the same way.
use std::io::Write;

/// Go's `flate.HuffmanOnly`.
pub const HUFFMAN_ONLY: i32 = -2;
/// Go's `flate.DefaultCompression` (level 6).
pub const DEFAULT_COMPRESSION: i32 = -1;
/// Go's `flate.NoCompression`.
pub const NO_COMPRESSION: i32 = 0;
/// Go's `flate.BestSpeed`.
pub const BEST_SPEED: i32 = 1;
/// Go's `flate.BestCompression`.
pub const BEST_COMPRESSION: i32 = 9;

/// Why a compressor could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum FlateError {
    /// The level is outside Go's range.
    #[error("flate: invalid compression level {0}: want value in range [-2, 9]")]
    InvalidLevel(i32),
    /// The writer was used after [`Writer::close`].
    #[error("flate: closed writer")]
    Closed,
    /// The underlying writer failed.
    #[error("flate: {0}")]
    Io(#[from] std::io::Error),
}

const LOG_WINDOW_SIZE: usize = 15;
const WINDOW_SIZE: usize = 1 << LOG_WINDOW_SIZE;
const WINDOW_MASK: usize = WINDOW_SIZE - 1;
const BASE_MATCH_LENGTH: usize = 3;
const MIN_MATCH_LENGTH: usize = 4;
const MAX_MATCH_LENGTH: usize = 258;
const BASE_MATCH_OFFSET: usize = 1;
const MAX_MATCH_OFFSET: usize = 1 << 15;
const MAX_FLATE_BLOCK_TOKENS: usize = 1 << 14;
const MAX_STORE_BLOCK_SIZE: usize = 65535;
const HASH_BITS: u32 = 17;
const HASH_SIZE: usize = 1 << HASH_BITS;
const HASH_MASK: u32 = (1 << HASH_BITS) - 1;
const MAX_HASH_OFFSET: i64 = 1 << 24;
const SKIP_NEVER: usize = i32::MAX as usize;
const HASH_MUL: u32 = 0x1e35_a7bd;

/// One row of Go's level table.
#[derive(Debug, Clone, Copy)]
struct LevelParams {
    good: usize,
    lazy: usize,
    nice: usize,
    chain: usize,
    fast_skip_hashing: usize,
}

const fn params(
    good: usize,
    lazy: usize,
    nice: usize,
    chain: usize,
    fast_skip_hashing: usize,
) -> LevelParams {
    LevelParams {
        good,
        lazy,
        nice,
        chain,
        fast_skip_hashing,
    }
}

/// Go's `levels[2..=9]`: levels 2 and 3 match greedily (and skip hashing
/// inside long matches), 4 to 9 lazily.
const LEVELS: [LevelParams; 8] = [
    params(4, 0, 16, 8, 5),
    params(4, 0, 32, 32, 6),
    params(4, 4, 16, 16, SKIP_NEVER),
    params(8, 16, 32, 32, SKIP_NEVER),
    params(8, 16, 128, 128, SKIP_NEVER),
    params(8, 32, 128, 256, SKIP_NEVER),
    params(32, 128, 258, 1024, SKIP_NEVER),
    params(32, 258, 258, 4096, SKIP_NEVER),
];

// ---------------------------------------------------------------------------
// Tokens (token.go)

/// A literal (`0..=256`) or a match: bit 30 set, `length - 3` in bits 22..30,
/// `offset - 1` in the low 22 bits.
type Token = u32;
const LENGTH_SHIFT: u32 = 22;
const OFFSET_MASK: u32 = (1 << LENGTH_SHIFT) - 1;
const MATCH_TYPE: u32 = 1 << 30;

fn literal_token(lit: u8) -> Token {
    Token::from(lit)
}

fn match_token(xlength: usize, xoffset: usize) -> Token {
    // xlength < 256 and xoffset < 2^15: both fit their fields.
    MATCH_TYPE + ((xlength as u32) << LENGTH_SHIFT) + xoffset as u32
}

fn token_length(t: Token) -> usize {
    ((t - MATCH_TYPE) >> LENGTH_SHIFT) as usize
}

fn token_offset(t: Token) -> usize {
    (t & OFFSET_MASK) as usize
}

/// The length code (0..=28) of `length - 3`.
fn length_code(xlength: usize) -> usize {
    const EXTRA: [u8; 29] = [
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
    ];
    if xlength == 255 {
        return 28;
    }
    // Codes 0..=27 cover LENGTH_BASE[c] .. LENGTH_BASE[c] + 2^extra.
    let mut c = 0;
    while c < 27 && LENGTH_BASE[c + 1] as usize <= xlength {
        c += 1;
    }
    debug_assert!(xlength < LENGTH_BASE[c] as usize + (1 << EXTRA[c]));
    c
}

/// The offset code (0..=29) of `offset - 1`.
fn offset_code(xoffset: usize) -> usize {
    let mut c = 0;
    while c < 29 && OFFSET_BASE[c + 1] as usize <= xoffset {
        c += 1;
    }
    c
}

/// Precomputed [`length_code`] for every `length - 3`.
struct CodeTables {
    length: [u8; 256],
    offset_low: [u8; 256],
}

static CODE_TABLES: std::sync::LazyLock<CodeTables> = std::sync::LazyLock::new(|| {
    let mut t = CodeTables {
        length: [0; 256],
        offset_low: [0; 256],
    };
    for i in 0..256 {
        t.length[i] = length_code(i) as u8;
        t.offset_low[i] = offset_code(i) as u8;
    }
    t
});

/// Go's `offsetCode`: a table for small offsets, then the same table over
/// `off >> 7` and `off >> 14`.
fn offset_code_fast(tables: &CodeTables, off: usize) -> usize {
    if off < 256 {
        tables.offset_low[off] as usize
    } else if off >> 7 < 256 {
        tables.offset_low[off >> 7] as usize + 14
    } else {
        tables.offset_low[(off >> 14) & 0xff] as usize + 28
    }
}

// ---------------------------------------------------------------------------
// Huffman codes (huffman_code.go)

const MAX_NUM_LIT: usize = 286;
const OFFSET_CODE_COUNT: usize = 30;
const END_BLOCK_MARKER: usize = 256;
const LENGTH_CODES_START: usize = 257;
const CODEGEN_CODE_COUNT: usize = 19;
const BAD_CODE: u8 = 255;
const MAX_BITS_LIMIT: usize = 16;

const LENGTH_EXTRA_BITS: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const LENGTH_BASE: [u32; 29] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128,
    160, 192, 224, 255,
];
const OFFSET_EXTRA_BITS: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
const OFFSET_BASE: [u32; 30] = [
    0x000000, 0x000001, 0x000002, 0x000003, 0x000004, 0x000006, 0x000008, 0x00000c, 0x000010,
    0x000018, 0x000020, 0x000030, 0x000040, 0x000060, 0x000080, 0x0000c0, 0x000100, 0x000180,
    0x000200, 0x000300, 0x000400, 0x000600, 0x000800, 0x000c00, 0x001000, 0x001800, 0x002000,
    0x003000, 0x004000, 0x006000,
];
const CODEGEN_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// A code: the bits (already reversed for LSB-first output) and its length.
#[derive(Debug, Clone, Copy, Default)]
struct HCode {
    code: u16,
    len: u16,
}

#[derive(Debug, Clone, Copy)]
struct LiteralNode {
    literal: u16,
    freq: i32,
}

#[derive(Debug, Clone, Copy, Default)]
struct LevelInfo {
    level: usize,
    last_freq: i32,
    next_char_freq: i32,
    next_pair_freq: i32,
    needed: i32,
}

fn reverse_bits(number: u16, bit_length: u16) -> u16 {
    ((u32::from(number) << (16 - u32::from(bit_length))) as u16).reverse_bits()
}

/// A length-limited Huffman code over an alphabet, built as Go builds it
/// (package-merge by levels, ties between equal frequencies broken by the
/// smaller symbol).
#[derive(Debug, Clone)]
struct HuffmanEncoder {
    codes: Vec<HCode>,
    list: Vec<LiteralNode>,
}

impl HuffmanEncoder {
    fn new(size: usize) -> Self {
        HuffmanEncoder {
            codes: vec![HCode::default(); size],
            list: Vec::with_capacity(MAX_NUM_LIT + 1),
        }
    }

    fn fixed_literal() -> Self {
        let mut h = HuffmanEncoder::new(MAX_NUM_LIT);
        for ch in 0..MAX_NUM_LIT as u16 {
            let (bits, size) = match ch {
                0..=143 => (ch + 48, 8),
                144..=255 => (ch + 400 - 144, 9),
                256..=279 => (ch - 256, 7),
                _ => (ch + 192 - 280, 8),
            };
            h.codes[ch as usize] = HCode {
                code: reverse_bits(bits, size),
                len: size,
            };
        }
        h
    }

    fn fixed_offset() -> Self {
        let mut h = HuffmanEncoder::new(OFFSET_CODE_COUNT);
        for (ch, c) in h.codes.iter_mut().enumerate() {
            *c = HCode {
                code: reverse_bits(ch as u16, 5),
                len: 5,
            };
        }
        h
    }

    fn bit_length(&self, freq: &[i32]) -> i64 {
        freq.iter()
            .zip(&self.codes)
            .filter(|(f, _)| **f != 0)
            .map(|(f, c)| i64::from(*f) * i64::from(c.len))
            .sum()
    }

    /// Go's `bitCounts`: how many symbols get each code length, for the
    /// symbols of `self.list` (sorted by frequency, at least three).
    fn bit_counts(&mut self, max_bits: usize) -> [i32; MAX_BITS_LIMIT + 1] {
        let list = &mut self.list;
        let n = list.len();
        list.push(LiteralNode {
            literal: u16::MAX,
            freq: i32::MAX,
        });
        let max_bits = max_bits.min(n - 1);
        let mut levels = [LevelInfo::default(); MAX_BITS_LIMIT + 1];
        let mut leaf_counts = [[0i32; MAX_BITS_LIMIT + 1]; MAX_BITS_LIMIT + 1];
        for level in 1..=max_bits {
            levels[level] = LevelInfo {
                level,
                last_freq: list[1].freq,
                next_char_freq: list[2].freq,
                next_pair_freq: list[0].freq.wrapping_add(list[1].freq),
                needed: 0,
            };
            leaf_counts[level][level] = 2;
            if level == 1 {
                levels[level].next_pair_freq = i32::MAX;
            }
        }
        levels[max_bits].needed = 2 * n as i32 - 4;
        let mut level = max_bits;
        loop {
            let l = levels[level];
            if l.next_pair_freq == i32::MAX && l.next_char_freq == i32::MAX {
                levels[level].needed = 0;
                levels[level + 1].next_pair_freq = i32::MAX;
                level += 1;
                continue;
            }
            let prev_freq = l.last_freq;
            if l.next_char_freq < l.next_pair_freq {
                let n = leaf_counts[level][level] + 1;
                levels[level].last_freq = l.next_char_freq;
                leaf_counts[level][level] = n;
                levels[level].next_char_freq = list[n as usize].freq;
            } else {
                levels[level].last_freq = l.next_pair_freq;
                let below = leaf_counts[level - 1];
                leaf_counts[level][..level].copy_from_slice(&below[..level]);
                levels[l.level - 1].needed = 2;
            }
            levels[level].needed -= 1;
            if levels[level].needed == 0 {
                if l.level == max_bits {
                    break;
                }
                levels[l.level + 1].next_pair_freq =
                    prev_freq.wrapping_add(levels[level].last_freq);
                level += 1;
            } else {
                while levels[level - 1].needed > 0 {
                    level -= 1;
                }
            }
        }
        list.pop();
        let mut bit_count = [0i32; MAX_BITS_LIMIT + 1];
        let counts = &leaf_counts[max_bits];
        for (bits, level) in (1..=max_bits).rev().enumerate() {
            bit_count[bits + 1] = counts[level] - counts[level - 1];
        }
        bit_count
    }

    /// Go's `assignEncodingAndSize`: canonical codes, shortest for the most
    /// frequent symbols, in symbol order within a length.
    fn assign_encoding_and_size(&mut self, bit_count: &[i32]) {
        let mut code: u16 = 0;
        let mut end = self.list.len();
        for (n, &bits) in bit_count.iter().enumerate() {
            code <<= 1;
            if n == 0 || bits == 0 {
                continue;
            }
            let start = end - bits as usize;
            let chunk = &mut self.list[start..end];
            chunk.sort_unstable_by_key(|node| node.literal);
            for node in chunk.iter() {
                self.codes[node.literal as usize] = HCode {
                    code: reverse_bits(code, n as u16),
                    len: n as u16,
                };
                code = code.wrapping_add(1);
            }
            end = start;
        }
    }

    /// Go's `generate`: the code for `freq`, no code longer than `max_bits`.
    fn generate(&mut self, freq: &[i32], max_bits: usize) {
        self.list.clear();
        for (i, &f) in freq.iter().enumerate() {
            if f != 0 {
                self.list.push(LiteralNode {
                    literal: i as u16,
                    freq: f,
                });
            } else {
                self.codes[i].len = 0;
            }
        }
        if self.list.len() <= 2 {
            for (i, node) in self.list.iter().enumerate() {
                self.codes[node.literal as usize] = HCode {
                    code: i as u16,
                    len: 1,
                };
            }
            return;
        }
        self.list
            .sort_unstable_by(|a, b| a.freq.cmp(&b.freq).then(a.literal.cmp(&b.literal)));
        let counts = self.bit_counts(max_bits);
        let used = max_bits.min(self.list.len() - 1) + 1;
        self.assign_encoding_and_size(&counts[..used]);
    }
}

struct FixedCodes {
    literal: HuffmanEncoder,
    offset: HuffmanEncoder,
    huff_offset: HuffmanEncoder,
}

static FIXED: std::sync::LazyLock<FixedCodes> = std::sync::LazyLock::new(|| {
    let mut huff_offset = HuffmanEncoder::new(OFFSET_CODE_COUNT);
    let mut freq = [0i32; OFFSET_CODE_COUNT];
    freq[0] = 1;
    huff_offset.generate(&freq, 15);
    FixedCodes {
        literal: HuffmanEncoder::fixed_literal(),
        offset: HuffmanEncoder::fixed_offset(),
        huff_offset,
    }
});

// ---------------------------------------------------------------------------
// The bit writer (huffman_bit_writer.go)

/// Which literal/offset codes a block is written with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Codes {
    Fixed,
    Dynamic,
}

struct HuffmanBitWriter {
    out: Vec<u8>,
    bits: u64,
    nbits: u32,
    literal_freq: Vec<i32>,
    offset_freq: Vec<i32>,
    codegen: Vec<u8>,
    codegen_freq: [i32; CODEGEN_CODE_COUNT],
    literal_encoding: HuffmanEncoder,
    offset_encoding: HuffmanEncoder,
    codegen_encoding: HuffmanEncoder,
}

impl HuffmanBitWriter {
    fn new() -> Self {
        HuffmanBitWriter {
            out: Vec::new(),
            bits: 0,
            nbits: 0,
            literal_freq: vec![0; MAX_NUM_LIT],
            offset_freq: vec![0; OFFSET_CODE_COUNT],
            codegen: vec![0; MAX_NUM_LIT + OFFSET_CODE_COUNT + 1],
            codegen_freq: [0; CODEGEN_CODE_COUNT],
            literal_encoding: HuffmanEncoder::new(MAX_NUM_LIT),
            offset_encoding: HuffmanEncoder::new(OFFSET_CODE_COUNT),
            codegen_encoding: HuffmanEncoder::new(CODEGEN_CODE_COUNT),
        }
    }

    /// Pads the pending bits to a byte boundary and emits them.
    fn flush(&mut self) {
        while self.nbits > 0 {
            self.out.push(self.bits as u8);
            self.bits >>= 8;
            self.nbits = self.nbits.saturating_sub(8);
        }
        self.bits = 0;
    }

    #[inline]
    fn write_bits(&mut self, b: u32, nb: u32) {
        self.bits |= u64::from(b) << self.nbits;
        self.nbits += nb;
        if self.nbits >= 48 {
            let bits = self.bits;
            self.bits >>= 48;
            self.nbits -= 48;
            self.out.extend_from_slice(&bits.to_le_bytes()[..6]);
        }
    }

    #[inline]
    fn write_code(&mut self, c: HCode) {
        self.write_bits(u32::from(c.code), u32::from(c.len));
    }

    fn write_bytes(&mut self, bytes: &[u8]) {
        // Only called right after a stored header: the bits are byte-aligned.
        while self.nbits >= 8 {
            self.out.push(self.bits as u8);
            self.bits >>= 8;
            self.nbits -= 8;
        }
        self.out.extend_from_slice(bytes);
    }

    /// Go's `generateCodegen`: the run-length coded code lengths of both
    /// alphabets (the offsets from [`FIXED`]'s Huffman-only code when
    /// `huff_only`), and the frequencies of the codegen symbols.
    fn generate_codegen(&mut self, num_literals: usize, num_offsets: usize, huff_only: bool) {
        let HuffmanBitWriter {
            codegen,
            codegen_freq: freq,
            literal_encoding,
            offset_encoding,
            ..
        } = self;
        let offsets = if huff_only {
            &FIXED.huff_offset
        } else {
            &*offset_encoding
        };
        *freq = [0; CODEGEN_CODE_COUNT];
        let lengths = literal_encoding.codes[..num_literals]
            .iter()
            .chain(&offsets.codes[..num_offsets]);
        for (slot, code) in codegen.iter_mut().zip(lengths) {
            *slot = code.len as u8;
        }
        codegen[num_literals + num_offsets] = BAD_CODE;
        let mut size = codegen[0];
        let mut count: i32 = 1;
        let mut out_index = 0;
        let mut in_index = 1;
        while size != BAD_CODE {
            let next_size = codegen[in_index];
            in_index += 1;
            if next_size == size {
                count += 1;
                continue;
            }
            if size != 0 {
                codegen[out_index] = size;
                out_index += 1;
                freq[size as usize] += 1;
                count -= 1;
                while count >= 3 {
                    let n = count.min(6);
                    codegen[out_index] = 16;
                    codegen[out_index + 1] = (n - 3) as u8;
                    out_index += 2;
                    freq[16] += 1;
                    count -= n;
                }
            } else {
                while count >= 11 {
                    let n = count.min(138);
                    codegen[out_index] = 18;
                    codegen[out_index + 1] = (n - 11) as u8;
                    out_index += 2;
                    freq[18] += 1;
                    count -= n;
                }
                if count >= 3 {
                    codegen[out_index] = 17;
                    codegen[out_index + 1] = (count - 3) as u8;
                    out_index += 2;
                    freq[17] += 1;
                    count = 0;
                }
            }
            count -= 1;
            while count >= 0 {
                codegen[out_index] = size;
                out_index += 1;
                freq[size as usize] += 1;
                count -= 1;
            }
            size = next_size;
            count = 1;
        }
        codegen[out_index] = BAD_CODE;
    }

    /// Go's `dynamicSize`: the bits of a dynamic block, and how many codegen
    /// lengths its header carries.
    fn dynamic_size(&self, huff_only: bool, extra_bits: i64) -> (i64, usize) {
        let offsets = if huff_only {
            &FIXED.huff_offset
        } else {
            &self.offset_encoding
        };
        let mut num_codegens = CODEGEN_CODE_COUNT;
        while num_codegens > 4 && self.codegen_freq[CODEGEN_ORDER[num_codegens - 1]] == 0 {
            num_codegens -= 1;
        }
        let header = 3
            + 5
            + 5
            + 4
            + 3 * num_codegens as i64
            + self.codegen_encoding.bit_length(&self.codegen_freq)
            + i64::from(self.codegen_freq[16]) * 2
            + i64::from(self.codegen_freq[17]) * 3
            + i64::from(self.codegen_freq[18]) * 7;
        let size = header
            + self.literal_encoding.bit_length(&self.literal_freq)
            + offsets.bit_length(&self.offset_freq)
            + extra_bits;
        (size, num_codegens)
    }

    fn fixed_size(&self, extra_bits: i64) -> i64 {
        3 + FIXED.literal.bit_length(&self.literal_freq)
            + FIXED.offset.bit_length(&self.offset_freq)
            + extra_bits
    }

    /// Go's `storedSize`: bits of a stored block of `input`, if one fits.
    fn stored_size(input: Option<&[u8]>) -> Option<i64> {
        match input {
            Some(b) if b.len() <= MAX_STORE_BLOCK_SIZE => Some((b.len() as i64 + 5) * 8),
            _ => None,
        }
    }

    fn write_dynamic_header(
        &mut self,
        num_literals: usize,
        num_offsets: usize,
        num_codegens: usize,
        eof: bool,
    ) {
        self.write_bits(if eof { 5 } else { 4 }, 3);
        self.write_bits((num_literals - 257) as u32, 5);
        self.write_bits((num_offsets - 1) as u32, 5);
        self.write_bits((num_codegens - 4) as u32, 4);
        for &sym in &CODEGEN_ORDER[..num_codegens] {
            let len = self.codegen_encoding.codes[sym].len;
            self.write_bits(u32::from(len), 3);
        }
        let mut i = 0;
        loop {
            let word = self.codegen[i];
            i += 1;
            if word == BAD_CODE {
                break;
            }
            let code = self.codegen_encoding.codes[word as usize];
            self.write_code(code);
            let extra = match word {
                16 => 2,
                17 => 3,
                18 => 7,
                _ => continue,
            };
            let v = self.codegen[i];
            self.write_bits(u32::from(v), extra);
            i += 1;
        }
    }

    fn write_stored_header(&mut self, length: usize, eof: bool) {
        self.write_bits(u32::from(eof), 3);
        self.flush();
        self.write_bits(length as u32, 16);
        self.write_bits(u32::from(!(length as u16)), 16);
    }

    fn write_fixed_header(&mut self, eof: bool) {
        self.write_bits(if eof { 3 } else { 2 }, 3);
    }

    /// Go's `indexTokens`: symbol frequencies (the end-of-block marker
    /// included) and the dynamic codes for them.
    fn index_tokens(&mut self, tokens: &[Token]) -> (usize, usize) {
        self.literal_freq.iter_mut().for_each(|f| *f = 0);
        self.offset_freq.iter_mut().for_each(|f| *f = 0);
        let tables = &*CODE_TABLES;
        for &t in tokens {
            if t < MATCH_TYPE {
                self.literal_freq[t as usize] += 1;
                continue;
            }
            let lc = tables.length[token_length(t)] as usize;
            self.literal_freq[LENGTH_CODES_START + lc] += 1;
            self.offset_freq[offset_code_fast(tables, token_offset(t))] += 1;
        }
        self.literal_freq[END_BLOCK_MARKER] += 1;
        let mut num_literals = MAX_NUM_LIT;
        while self.literal_freq[num_literals - 1] == 0 {
            num_literals -= 1;
        }
        let mut num_offsets = OFFSET_CODE_COUNT;
        while num_offsets > 0 && self.offset_freq[num_offsets - 1] == 0 {
            num_offsets -= 1;
        }
        if num_offsets == 0 {
            self.offset_freq[0] = 1;
            num_offsets = 1;
        }
        self.literal_encoding.generate(&self.literal_freq, 15);
        self.offset_encoding.generate(&self.offset_freq, 15);
        (num_literals, num_offsets)
    }

    /// Go's `writeBlock`: the tokens as the smallest of a fixed, a dynamic
    /// and (when `input` is given) a stored block.
    fn write_block(&mut self, tokens: &[Token], eof: bool, input: Option<&[u8]>) {
        let (num_literals, num_offsets) = self.index_tokens(tokens);
        let stored = Self::stored_size(input);
        let mut extra_bits: i64 = 0;
        if stored.is_some() {
            for lc in LENGTH_CODES_START + 8..num_literals {
                extra_bits += i64::from(self.literal_freq[lc])
                    * i64::from(LENGTH_EXTRA_BITS[lc - LENGTH_CODES_START]);
            }
            for (f, extra) in self
                .offset_freq
                .iter()
                .zip(&OFFSET_EXTRA_BITS)
                .take(num_offsets)
                .skip(4)
            {
                extra_bits += i64::from(*f) * i64::from(*extra);
            }
        }
        let mut codes = Codes::Fixed;
        let mut size = self.fixed_size(extra_bits);
        self.generate_codegen(num_literals, num_offsets, false);
        self.codegen_encoding.generate(&self.codegen_freq, 7);
        let (dynamic_size, num_codegens) = self.dynamic_size(false, extra_bits);
        if dynamic_size < size {
            size = dynamic_size;
            codes = Codes::Dynamic;
        }
        if let (Some(ss), Some(inp)) = (stored, input) {
            if ss < size {
                self.write_stored_header(inp.len(), eof);
                self.write_bytes(inp);
                return;
            }
        }
        match codes {
            Codes::Fixed => {
                self.write_fixed_header(eof);
                self.write_tokens(tokens, Codes::Fixed);
            }
            Codes::Dynamic => {
                self.write_dynamic_header(num_literals, num_offsets, num_codegens, eof);
                self.write_tokens(tokens, Codes::Dynamic);
            }
        }
    }

    /// Go's `writeBlockDynamic`: a dynamic block, or a stored one when the
    /// coding saves less than a sixteenth.
    fn write_block_dynamic(&mut self, tokens: &[Token], eof: bool, input: Option<&[u8]>) {
        let (num_literals, num_offsets) = self.index_tokens(tokens);
        self.generate_codegen(num_literals, num_offsets, false);
        self.codegen_encoding.generate(&self.codegen_freq, 7);
        let (size, num_codegens) = self.dynamic_size(false, 0);
        if let (Some(ss), Some(inp)) = (Self::stored_size(input), input) {
            if ss < size + (size >> 4) {
                self.write_stored_header(inp.len(), eof);
                self.write_bytes(inp);
                return;
            }
        }
        self.write_dynamic_header(num_literals, num_offsets, num_codegens, eof);
        self.write_tokens(tokens, Codes::Dynamic);
    }

    /// The tokens, then the end-of-block marker.
    fn write_tokens(&mut self, tokens: &[Token], codes: Codes) {
        let fixed = &*FIXED;
        let tables = &*CODE_TABLES;
        let (lit, off) = match codes {
            Codes::Fixed => (&fixed.literal.codes, &fixed.offset.codes),
            Codes::Dynamic => (&self.literal_encoding.codes, &self.offset_encoding.codes),
        };
        // The code tables are borrowed from self; copy them out once.
        let lit: Vec<HCode> = lit.clone();
        let off: Vec<HCode> = off.clone();
        for &t in tokens {
            if t < MATCH_TYPE {
                self.write_code(lit[t as usize]);
                continue;
            }
            let length = token_length(t);
            let lc = tables.length[length] as usize;
            self.write_code(lit[lc + LENGTH_CODES_START]);
            let extra = u32::from(LENGTH_EXTRA_BITS[lc]);
            if extra > 0 {
                self.write_bits(length as u32 - LENGTH_BASE[lc], extra);
            }
            let offset = token_offset(t);
            let oc = offset_code_fast(tables, offset);
            self.write_code(off[oc]);
            let extra = u32::from(OFFSET_EXTRA_BITS[oc]);
            if extra > 0 {
                self.write_bits(offset as u32 - OFFSET_BASE[oc], extra);
            }
        }
        self.write_code(lit[END_BLOCK_MARKER]);
    }

    /// Go's `writeBlockHuff`: the bytes as Huffman-coded literals, or stored
    /// when that saves less than a sixteenth.
    fn write_block_huff(&mut self, eof: bool, input: &[u8]) {
        self.literal_freq.iter_mut().for_each(|f| *f = 0);
        for &b in input {
            self.literal_freq[b as usize] += 1;
        }
        self.literal_freq[END_BLOCK_MARKER] = 1;
        // Go sets only the first offset frequency here; the others keep
        // what the previous block left (the Huffman-only offset code gives
        // them no bits, so they do not count).
        self.offset_freq[0] = 1;
        let num_literals = END_BLOCK_MARKER + 1;
        let num_offsets = 1;
        self.literal_encoding.generate(&self.literal_freq, 15);
        self.generate_codegen(num_literals, num_offsets, true);
        self.codegen_encoding.generate(&self.codegen_freq, 7);
        let (size, num_codegens) = self.dynamic_size(true, 0);
        if let Some(ss) = Self::stored_size(Some(input)) {
            if ss < size + (size >> 4) {
                self.write_stored_header(input.len(), eof);
                self.write_bytes(input);
                return;
            }
        }
        self.write_dynamic_header(num_literals, num_offsets, num_codegens, eof);
        let mut codes = [HCode::default(); 257];
        codes.copy_from_slice(&self.literal_encoding.codes[..257]);
        for &b in input {
            self.write_code(codes[b as usize]);
        }
        self.write_code(codes[END_BLOCK_MARKER]);
    }
}

// ---------------------------------------------------------------------------
// BestSpeed (deflatefast.go)

const TABLE_BITS: u32 = 14;
const TABLE_SIZE: usize = 1 << TABLE_BITS;
const TABLE_MASK: u32 = (TABLE_SIZE as u32) - 1;
const TABLE_SHIFT: u32 = 32 - TABLE_BITS;
const BUFFER_RESET: i32 = i32::MAX - (MAX_STORE_BLOCK_SIZE as i32) * 2;
const INPUT_MARGIN: usize = 16 - 1;
const MIN_NON_LITERAL_BLOCK_SIZE: usize = 1 + 1 + INPUT_MARGIN;

#[derive(Debug, Clone, Copy, Default)]
struct TableEntry {
    val: u32,
    offset: i32,
}

fn load32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn load64(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(a)
}

fn fast_hash(u: u32) -> u32 {
    u.wrapping_mul(HASH_MUL) >> TABLE_SHIFT
}

/// Go's `deflateFast`: a Snappy-style single-probe matcher over blocks of
/// up to 64 KiB, matching into the previous block too.
struct DeflateFast {
    table: Vec<TableEntry>,
    prev: Vec<u8>,
    cur: i32,
}

impl DeflateFast {
    fn new() -> Self {
        DeflateFast {
            table: vec![TableEntry::default(); TABLE_SIZE],
            prev: Vec::with_capacity(MAX_STORE_BLOCK_SIZE),
            cur: MAX_STORE_BLOCK_SIZE as i32,
        }
    }

    fn encode(&mut self, dst: &mut Vec<Token>, src: &[u8]) {
        if self.cur >= BUFFER_RESET {
            self.shift_offsets();
        }
        if src.len() < MIN_NON_LITERAL_BLOCK_SIZE {
            self.cur += MAX_STORE_BLOCK_SIZE as i32;
            self.prev.clear();
            dst.extend(src.iter().map(|&b| literal_token(b)));
            return;
        }
        // Positions are below 64 KiB and `cur` below BUFFER_RESET: all of the
        // arithmetic below stays inside i32, as in Go.
        let s_limit = (src.len() - INPUT_MARGIN) as i32;
        let mut next_emit: i32 = 0;
        let mut s: i32 = 0;
        let mut cv = load32(src, 0);
        let mut next_hash = fast_hash(cv);
        'outer: loop {
            let mut skip: i32 = 32;
            let mut next_s = s;
            let mut candidate;
            loop {
                s = next_s;
                let between = skip >> 5;
                next_s = s + between;
                skip += between;
                if next_s > s_limit {
                    break 'outer;
                }
                let slot = (next_hash & TABLE_MASK) as usize;
                candidate = self.table[slot];
                let now = load32(src, next_s as usize);
                self.table[slot] = TableEntry {
                    offset: s + self.cur,
                    val: cv,
                };
                next_hash = fast_hash(now);
                let offset = s - (candidate.offset - self.cur);
                if offset > MAX_MATCH_OFFSET as i32 || cv != candidate.val {
                    cv = now;
                    continue;
                }
                break;
            }
            dst.extend(
                src[next_emit as usize..s as usize]
                    .iter()
                    .map(|&b| literal_token(b)),
            );
            loop {
                s += 4;
                let t = candidate.offset - self.cur + 4;
                let l = self.match_len(s, t, src);
                dst.push(match_token(
                    (l + 4) as usize - BASE_MATCH_LENGTH,
                    (s - t) as usize - BASE_MATCH_OFFSET,
                ));
                s += l;
                next_emit = s;
                if s >= s_limit {
                    break 'outer;
                }
                let mut x = load64(src, (s - 1) as usize);
                let prev_hash = fast_hash(x as u32);
                self.table[(prev_hash & TABLE_MASK) as usize] = TableEntry {
                    offset: self.cur + s - 1,
                    val: x as u32,
                };
                x >>= 8;
                let curr_hash = fast_hash(x as u32);
                let slot = (curr_hash & TABLE_MASK) as usize;
                candidate = self.table[slot];
                self.table[slot] = TableEntry {
                    offset: self.cur + s,
                    val: x as u32,
                };
                let offset = s - (candidate.offset - self.cur);
                if offset > MAX_MATCH_OFFSET as i32 || x as u32 != candidate.val {
                    cv = (x >> 8) as u32;
                    next_hash = fast_hash(cv);
                    s += 1;
                    break;
                }
            }
        }
        if (next_emit as usize) < src.len() {
            dst.extend(src[next_emit as usize..].iter().map(|&b| literal_token(b)));
        }
        self.cur += src.len() as i32;
        self.prev.clear();
        self.prev.extend_from_slice(src);
    }

    /// Go's `deflateFast.matchLen`: how far `src[s..]` matches from `t`,
    /// where a negative `t` starts in the previous block.
    fn match_len(&self, s: i32, t: i32, src: &[u8]) -> i32 {
        let s = s as usize;
        let s1 = (s + MAX_MATCH_LENGTH - 4).min(src.len());
        let a = &src[s..s1];
        if t >= 0 {
            let b = &src[t as usize..t as usize + a.len()];
            return common_prefix(a, b) as i32;
        }
        let tp = self.prev.len() as i32 + t;
        if tp < 0 {
            return 0;
        }
        let b = &self.prev[tp as usize..];
        let b = &b[..b.len().min(a.len())];
        let a = &a[..b.len()];
        let n = common_prefix(a, b);
        if n < b.len() {
            return n as i32;
        }
        if s + n == s1 {
            return n as i32;
        }
        let a = &src[s + n..s1];
        let b = &src[..a.len()];
        (common_prefix(a, b) + n) as i32
    }

    fn reset(&mut self) {
        self.prev.clear();
        self.cur += MAX_MATCH_OFFSET as i32;
        if self.cur >= BUFFER_RESET {
            self.shift_offsets();
        }
    }

    fn shift_offsets(&mut self) {
        if self.prev.is_empty() {
            self.table
                .iter_mut()
                .for_each(|e| *e = TableEntry::default());
            self.cur = MAX_MATCH_OFFSET as i32 + 1;
            return;
        }
        for e in self.table.iter_mut() {
            let v = e.offset - self.cur + MAX_MATCH_OFFSET as i32 + 1;
            e.offset = v.max(0);
        }
        self.cur = MAX_MATCH_OFFSET as i32 + 1;
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = load64(a, i) ^ load64(b, i);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

// ---------------------------------------------------------------------------
// The compressor (deflate.go)

/// What a level does with its window (Go's `fill`/`step` pair).
enum Mode {
    /// Level 0: stored blocks of up to 65535 bytes.
    Store,
    /// Level -2: Huffman-coded literals per 65535 bytes.
    Huffman,
    /// Level 1.
    Fast(Box<DeflateFast>),
    /// Levels 2 to 9.
    Deflate(Box<Chains>),
}

/// The hash chains of the levels 2 to 9.
struct Chains {
    /// Fixed-size, so that indexing with a mask needs no bounds check.
    head: Box<[u32; HASH_SIZE]>,
    prev: Box<[u32; WINDOW_SIZE]>,
}

/// The compressor state of a Go `flate.Writer`, writing into a byte buffer.
struct Compressor {
    p: LevelParams,
    w: HuffmanBitWriter,
    mode: Mode,
    window: Vec<u8>,
    window_end: usize,
    index: usize,
    block_start: i64,
    byte_available: bool,
    sync: bool,
    tokens: Vec<Token>,
    length: usize,
    offset: usize,
    max_insert_index: i64,
    chain_head: i64,
    hash_offset: i64,
}

/// A zeroed array on the heap (without building it on the stack first).
fn zeroed<const N: usize>() -> Box<[u32; N]> {
    let v = vec![0u32; N].into_boxed_slice();
    match v.try_into() {
        Ok(a) => a,
        Err(_) => unreachable!("the vector has N elements"),
    }
}

fn hash4(b: &[u8]) -> u32 {
    let v = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    v.wrapping_mul(HASH_MUL) >> (32 - HASH_BITS)
}

impl Compressor {
    fn new(level: i32) -> Result<Self, FlateError> {
        let none = params(0, 0, 0, 0, 0);
        let (p, mode, window) = match level {
            NO_COMPRESSION => (none, Mode::Store, MAX_STORE_BLOCK_SIZE),
            HUFFMAN_ONLY => (none, Mode::Huffman, MAX_STORE_BLOCK_SIZE),
            BEST_SPEED => (
                none,
                Mode::Fast(Box::new(DeflateFast::new())),
                MAX_STORE_BLOCK_SIZE,
            ),
            DEFAULT_COMPRESSION | 2..=9 => {
                let l = if level == DEFAULT_COMPRESSION {
                    6
                } else {
                    level
                };
                (
                    LEVELS[(l - 2) as usize],
                    Mode::Deflate(Box::new(Chains {
                        head: zeroed(),
                        prev: zeroed(),
                    })),
                    2 * WINDOW_SIZE,
                )
            }
            _ => return Err(FlateError::InvalidLevel(level)),
        };
        let tokens = match mode {
            Mode::Deflate(_) => Vec::with_capacity(MAX_FLATE_BLOCK_TOKENS + 1),
            Mode::Fast(_) => Vec::with_capacity(MAX_STORE_BLOCK_SIZE),
            _ => Vec::new(),
        };
        Ok(Compressor {
            p,
            w: HuffmanBitWriter::new(),
            mode,
            window: vec![0; window],
            window_end: 0,
            index: 0,
            block_start: 0,
            byte_available: false,
            sync: false,
            tokens,
            length: MIN_MATCH_LENGTH - 1,
            offset: 0,
            max_insert_index: 0,
            chain_head: -1,
            hash_offset: 1,
        })
    }

    /// Go's `fill`: copies what fits into the window, sliding it first for
    /// the levels 2 to 9.
    fn fill(&mut self, b: &[u8]) -> usize {
        if let Mode::Deflate(ch) = &mut self.mode {
            if self.index >= 2 * WINDOW_SIZE - (MIN_MATCH_LENGTH + MAX_MATCH_LENGTH) {
                self.window.copy_within(WINDOW_SIZE..2 * WINDOW_SIZE, 0);
                self.index -= WINDOW_SIZE;
                self.window_end -= WINDOW_SIZE;
                if self.block_start >= WINDOW_SIZE as i64 {
                    self.block_start -= WINDOW_SIZE as i64;
                } else {
                    self.block_start = i64::from(i32::MAX);
                }
                self.hash_offset += WINDOW_SIZE as i64;
                if self.hash_offset > MAX_HASH_OFFSET {
                    let delta = self.hash_offset - 1;
                    self.hash_offset -= delta;
                    self.chain_head -= delta;
                    let shift = |v: &mut u32| {
                        *v = if i64::from(*v) > delta {
                            (i64::from(*v) - delta) as u32
                        } else {
                            0
                        };
                    };
                    ch.prev.iter_mut().for_each(shift);
                    ch.head.iter_mut().for_each(shift);
                }
            }
        }
        let n = b.len().min(self.window.len() - self.window_end);
        self.window[self.window_end..self.window_end + n].copy_from_slice(&b[..n]);
        self.window_end += n;
        n
    }

    fn step(&mut self) {
        match self.mode {
            Mode::Store => self.store(),
            Mode::Huffman => self.store_huff(),
            Mode::Fast(_) => self.enc_speed(),
            Mode::Deflate(_) => self.deflate(),
        }
    }

    fn write_stored_block(&mut self, len: usize) {
        self.w.write_stored_header(len, false);
        self.w.write_bytes(&self.window[..len]);
    }

    fn store(&mut self) {
        if self.window_end > 0 && (self.window_end == MAX_STORE_BLOCK_SIZE || self.sync) {
            self.write_stored_block(self.window_end);
            self.window_end = 0;
        }
    }

    fn store_huff(&mut self) {
        if self.window_end < self.window.len() && !self.sync || self.window_end == 0 {
            return;
        }
        self.w
            .write_block_huff(false, &self.window[..self.window_end]);
        self.window_end = 0;
    }

    fn enc_speed(&mut self) {
        let Mode::Fast(fast) = &mut self.mode else {
            return;
        };
        if self.window_end < MAX_STORE_BLOCK_SIZE {
            if !self.sync {
                return;
            }
            if self.window_end < 128 {
                match self.window_end {
                    0 => return,
                    1..=16 => {
                        self.w.write_stored_header(self.window_end, false);
                        self.w.write_bytes(&self.window[..self.window_end]);
                    }
                    _ => self
                        .w
                        .write_block_huff(false, &self.window[..self.window_end]),
                }
                self.window_end = 0;
                fast.reset();
                return;
            }
        }
        self.tokens.clear();
        fast.encode(&mut self.tokens, &self.window[..self.window_end]);
        let input = &self.window[..self.window_end];
        if self.tokens.len() > self.window_end - (self.window_end >> 4) {
            self.w.write_block_huff(false, input);
        } else {
            self.w.write_block_dynamic(&self.tokens, false, Some(input));
        }
        self.window_end = 0;
    }

    /// Go's `writeBlock` of the compressor: the tokens up to `index`, with
    /// the window bytes since the block start when they are still there.
    fn flush_tokens(&mut self, index: usize) {
        if index > 0 {
            let input = if self.block_start <= index as i64 {
                Some(&self.window[self.block_start as usize..index])
            } else {
                None
            };
            self.block_start = index as i64;
            self.w.write_block(&self.tokens, false, input);
        }
        self.tokens.clear();
    }

    /// Go's `findMatch`: the longest match at `pos` along the hash chain
    /// from `prev_head`, longer than `prev_length`.
    fn find_match(
        &self,
        chains: &Chains,
        pos: usize,
        prev_head: i64,
        prev_length: usize,
        lookahead: usize,
    ) -> Option<(usize, usize)> {
        let min_match_look = MAX_MATCH_LENGTH.min(lookahead);
        let win = &self.window[..pos + min_match_look];
        let nice = self.p.nice.min(win.len() - pos);
        let mut tries = self.p.chain;
        let mut length = prev_length;
        if length >= self.p.good {
            tries >>= 2;
        }
        // Go compares the byte at `length` before measuring a candidate;
        // the two bytes ending there are compared here instead. A
        // candidate this skips matches fewer than `length + 1` bytes, which
        // Go measures and then drops: the result is the same.
        let tail = |at: usize| u16::from_le_bytes([win[at - 1], win[at]]);
        let mut w_end = tail(pos + length);
        let w_pos = &win[pos..pos + min_match_look];
        let min_index = pos as i64 - WINDOW_SIZE as i64;
        let mut found = None;
        let mut i = prev_head;
        while tries > 0 {
            let iu = i as usize;
            if w_end == tail(iu + length) {
                let n = common_prefix(&win[iu..iu + min_match_look], w_pos);
                if n > length && (n > MIN_MATCH_LENGTH || pos - iu <= 4096) {
                    length = n;
                    found = Some((n, pos - iu));
                    if n >= nice {
                        break;
                    }
                    w_end = tail(pos + n);
                }
            }
            if i == min_index {
                break;
            }
            i = i64::from(chains.prev[iu & WINDOW_MASK]) - self.hash_offset;
            if i < min_index || i < 0 {
                break;
            }
            tries -= 1;
        }
        found
    }

    fn insert_hash(&mut self, index: usize) -> Option<u32> {
        let Mode::Deflate(ch) = &mut self.mode else {
            return None;
        };
        let h = (hash4(&self.window[index..index + MIN_MATCH_LENGTH]) & HASH_MASK) as usize;
        let old = ch.head[h];
        ch.prev[index & WINDOW_MASK] = old;
        ch.head[h] = (index as i64 + self.hash_offset) as u32;
        Some(old)
    }

    fn deflate(&mut self) {
        if self.window_end - self.index < MIN_MATCH_LENGTH + MAX_MATCH_LENGTH && !self.sync {
            return;
        }
        self.max_insert_index = self.window_end as i64 - (MIN_MATCH_LENGTH as i64 - 1);
        let fast = self.p.fast_skip_hashing != SKIP_NEVER;
        loop {
            let lookahead = self.window_end - self.index;
            if lookahead < MIN_MATCH_LENGTH + MAX_MATCH_LENGTH {
                if !self.sync {
                    break;
                }
                if lookahead == 0 {
                    if self.byte_available {
                        self.tokens.push(literal_token(self.window[self.index - 1]));
                        self.byte_available = false;
                    }
                    if !self.tokens.is_empty() {
                        self.flush_tokens(self.index);
                    }
                    break;
                }
            }
            if (self.index as i64) < self.max_insert_index {
                if let Some(old) = self.insert_hash(self.index) {
                    self.chain_head = i64::from(old);
                }
            }
            let prev_length = self.length;
            let prev_offset = self.offset;
            self.length = MIN_MATCH_LENGTH - 1;
            self.offset = 0;
            let min_index = (self.index as i64 - WINDOW_SIZE as i64).max(0);
            let head = self.chain_head - self.hash_offset;
            if head >= min_index
                && (fast && lookahead > MIN_MATCH_LENGTH - 1
                    || !fast && lookahead > prev_length && prev_length < self.p.lazy)
            {
                let found = match &self.mode {
                    Mode::Deflate(ch) => {
                        self.find_match(ch, self.index, head, MIN_MATCH_LENGTH - 1, lookahead)
                    }
                    _ => None,
                };
                if let Some((l, o)) = found {
                    self.length = l;
                    self.offset = o;
                }
            }
            if fast && self.length >= MIN_MATCH_LENGTH
                || !fast && prev_length >= MIN_MATCH_LENGTH && self.length <= prev_length
            {
                if fast {
                    self.tokens.push(match_token(
                        self.length - BASE_MATCH_LENGTH,
                        self.offset - BASE_MATCH_OFFSET,
                    ));
                } else {
                    self.tokens.push(match_token(
                        prev_length - BASE_MATCH_LENGTH,
                        prev_offset - BASE_MATCH_OFFSET,
                    ));
                }
                if self.length <= self.p.fast_skip_hashing {
                    let new_index = if fast {
                        self.index + self.length
                    } else {
                        self.index + prev_length - 1
                    };
                    let mut index = self.index + 1;
                    while index < new_index {
                        if (index as i64) < self.max_insert_index {
                            self.insert_hash(index);
                        }
                        index += 1;
                    }
                    self.index = index;
                    if !fast {
                        self.byte_available = false;
                        self.length = MIN_MATCH_LENGTH - 1;
                    }
                } else {
                    self.index += self.length;
                }
                if self.tokens.len() == MAX_FLATE_BLOCK_TOKENS {
                    self.flush_tokens(self.index);
                }
            } else {
                if fast || self.byte_available {
                    let i = if fast { self.index } else { self.index - 1 };
                    self.tokens.push(literal_token(self.window[i]));
                    if self.tokens.len() == MAX_FLATE_BLOCK_TOKENS {
                        self.flush_tokens(i + 1);
                    }
                }
                self.index += 1;
                if !fast {
                    self.byte_available = true;
                }
            }
        }
    }

    fn write(&mut self, mut b: &[u8]) {
        while !b.is_empty() {
            self.step();
            let n = self.fill(b);
            b = &b[n..];
        }
    }

    fn sync_flush(&mut self) {
        self.sync = true;
        self.step();
        self.w.write_stored_header(0, false);
        self.w.flush();
        self.sync = false;
    }

    fn close(&mut self) {
        self.sync = true;
        self.step();
        self.w.write_stored_header(0, true);
        self.w.flush();
    }
}

/// Go's `flate.Writer`: raw deflate into `W`, byte-identical to Go's.
///
/// Each [`Writer::write_chunk`] (and each `std::io::Write::write`, which
/// always consumes the whole buffer) is one Go `Write` call; `io::Write`'s
/// `flush` only hands finished bytes to `W` (Go's `Flush`, which emits a
/// sync marker, is [`Writer::sync_flush`]). [`Writer::close`] finishes the
/// stream as Go's `Close` does.
pub struct Writer<W: Write> {
    inner: W,
    c: Compressor,
    closed: bool,
}

impl<W: Write> std::fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("flate::Writer")
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl<W: Write> Writer<W> {
    /// Go's `flate.NewWriter(w, level)`: `level` from -2 to 9.
    pub fn new(inner: W, level: i32) -> Result<Self, FlateError> {
        Ok(Writer {
            inner,
            c: Compressor::new(level)?,
            closed: false,
        })
    }

    fn drain(&mut self) -> Result<(), FlateError> {
        if !self.c.w.out.is_empty() {
            self.inner.write_all(&self.c.w.out)?;
            self.c.w.out.clear();
        }
        Ok(())
    }

    /// One Go `Write` call with `data`.
    pub fn write_chunk(&mut self, data: &[u8]) -> Result<(), FlateError> {
        if self.closed {
            return Err(FlateError::Closed);
        }
        self.c.write(data);
        // Hand over output in large pieces only: the bytes are the same.
        if self.c.w.out.len() >= 1 << 16 {
            self.drain()?;
        }
        Ok(())
    }

    /// Go's `Flush`: everything written so far, then an empty stored block
    /// (a sync marker), all handed to `W`.
    pub fn sync_flush(&mut self) -> Result<(), FlateError> {
        if self.closed {
            return Err(FlateError::Closed);
        }
        self.c.sync_flush();
        self.drain()?;
        self.inner.flush()?;
        Ok(())
    }

    /// Go's `Close`: the rest of the input and a final empty stored block.
    /// Closing twice does nothing more, as in Go.
    pub fn close(&mut self) -> Result<(), FlateError> {
        if !self.closed {
            self.c.close();
            self.closed = true;
        }
        self.drain()
    }

    /// Closes the stream (if not yet) and returns the underlying writer.
    pub fn finish(mut self) -> Result<W, FlateError> {
        self.close()?;
        Ok(self.inner)
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The underlying writer, to append after a closed stream (the gzip
    /// trailer). Bytes written to it before [`Writer::close`] would land
    /// in the middle of the stream.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }
}

impl<W: Write> Write for Writer<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_chunk(buf).map_err(|e| match e {
            FlateError::Io(e) => e,
            other => std::io::Error::other(other),
        })?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.drain().map_err(|e| match e {
            FlateError::Io(e) => e,
            other => std::io::Error::other(other),
        })?;
        self.inner.flush()
    }
}

/// `data` deflated by Go at `level`, written in one `Write` call and closed.
pub fn compress(data: &[u8], level: i32) -> Result<Vec<u8>, FlateError> {
    let mut w = Writer::new(Vec::new(), level)?;
    w.write_chunk(data)?;
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Read;

    const ALL_LEVELS: [i32; 12] = [-2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

    fn inflate(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::DeflateDecoder::new(data)
            .read_to_end(&mut out)
            .expect("valid deflate");
        out
    }

    #[test]
    fn code_tables_are_gos() {
        // Spot values of Go's lengthCodes and offsetCodes tables.
        assert_eq!(length_code(0), 0);
        assert_eq!(length_code(8), 8);
        assert_eq!(length_code(9), 8);
        assert_eq!(length_code(254), 27);
        assert_eq!(length_code(255), 28);
        assert_eq!(offset_code(4), 4);
        assert_eq!(offset_code(5), 4);
        assert_eq!(offset_code(255), 15);
        let t = &*CODE_TABLES;
        for off in 0..MAX_MATCH_OFFSET {
            assert_eq!(offset_code_fast(t, off), offset_code(off), "offset {off}");
        }
    }

    #[test]
    fn empty_input_is_one_final_stored_block() {
        // Go: flate.NewWriter + Close writes 01 00 00 ff ff at every level
        // but the ones whose final block carries no data either.
        for level in ALL_LEVELS {
            let out = compress(b"", level).unwrap();
            assert_eq!(out, [1, 0, 0, 0xff, 0xff], "level {level}");
        }
    }

    #[test]
    fn invalid_levels_are_refused() {
        for level in [-3, 10, 100] {
            assert!(matches!(
                Writer::new(Vec::new(), level),
                Err(FlateError::InvalidLevel(l)) if l == level
            ));
        }
    }

    #[test]
    fn writing_after_close_fails() {
        let mut w = Writer::new(Vec::new(), 6).unwrap();
        w.close().unwrap();
        w.close().unwrap();
        assert!(matches!(w.write_chunk(b"x"), Err(FlateError::Closed)));
    }

    #[test]
    fn large_inputs_round_trip_at_every_level() {
        // Several window slides, the BestSpeed offset reset and every block
        // kind: text, repeats and noise.
        let mut data = Vec::new();
        let mut x: u64 = 7;
        for i in 0..600_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match (i / 50_000) % 3 {
                0 => data.extend_from_slice(format!("line {} of {}\n", i % 97, x % 13).as_bytes()),
                1 => data.push(b'a' + (i % 3) as u8),
                _ => data.push(x as u8),
            }
        }
        for level in ALL_LEVELS {
            let out = compress(&data, level).unwrap();
            assert_eq!(inflate(&out), data, "level {level}");
        }
    }

    #[test]
    fn sync_flush_emits_a_marker_and_keeps_going() {
        for level in ALL_LEVELS {
            let mut w = Writer::new(Vec::new(), level).unwrap();
            w.write_chunk(b"hello hello hello").unwrap();
            w.sync_flush().unwrap();
            assert!(w.get_ref().ends_with(&[0, 0, 0xff, 0xff]), "level {level}");
            w.write_chunk(b" world").unwrap();
            let out = w.finish().unwrap();
            assert_eq!(inflate(&out), b"hello hello hello world", "level {level}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn round_trips_through_flate2(
            data in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..5000),
            level in prop::sample::select(ALL_LEVELS.to_vec()),
            cut in 0usize..5000,
        ) {
            let cut = cut.min(data.len());
            let mut w = Writer::new(Vec::new(), level).unwrap();
            w.write_chunk(&data[..cut]).unwrap();
            w.write_chunk(&data[cut..]).unwrap();
            let out = w.finish().unwrap();
            prop_assert_eq!(inflate(&out), data);
        }
    }
}
