// go-flate runs Go's own compress/flate and compress/gzip writers for
// rudder's byte-exactness tests (tests/go_flate.rs).
//
// It reads requests from stdin until EOF and answers each on stdout with a
// little-endian uint32 length and the compressed bytes. A request is:
//
//	mode   byte  'f' (raw deflate) or 'g' (gzip)
//	level  int8
//	for 'g' only, the header:
//	  mtime   int64 (Unix seconds; 0 leaves it unset)
//	  extra   int32 length (-1: nil), then the bytes
//	  name    uint32 length, then the bytes
//	  comment uint32 length, then the bytes
//	  os      byte
//	then operations, each one Go call on the writer:
//	  'w' uint32 length, bytes: Write
//	  's': Flush
//	  'c': Close, which ends the request
package main

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

type writer interface {
	io.Writer
	Flush() error
	Close() error
}

func readN(r io.Reader, n int) []byte {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		fail(err)
	}
	return b
}

func u32(r io.Reader) uint32 { return binary.LittleEndian.Uint32(readN(r, 4)) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "go-flate:", err)
	os.Exit(1)
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for {
		mode, err := in.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			fail(err)
		}
		level := int(int8(readN(in, 1)[0]))
		var buf writerBuf
		var w writer
		switch mode {
		case 'f':
			fw, err := flate.NewWriter(&buf, level)
			if err != nil {
				fail(err)
			}
			w = fw
		case 'g':
			gw, err := gzip.NewWriterLevel(&buf, level)
			if err != nil {
				fail(err)
			}
			if mtime := int64(binary.LittleEndian.Uint64(readN(in, 8))); mtime != 0 {
				gw.ModTime = time.Unix(mtime, 0)
			}
			if n := int32(u32(in)); n >= 0 {
				gw.Extra = readN(in, int(n))
			}
			gw.Name = string(readN(in, int(u32(in))))
			gw.Comment = string(readN(in, int(u32(in))))
			gw.OS = readN(in, 1)[0]
			w = gw
		default:
			fail(fmt.Errorf("unknown mode %q", mode))
		}
	ops:
		for {
			op, err := in.ReadByte()
			if err != nil {
				fail(err)
			}
			switch op {
			case 'w':
				if _, err := w.Write(readN(in, int(u32(in)))); err != nil {
					fail(err)
				}
			case 's':
				if err := w.Flush(); err != nil {
					fail(err)
				}
			case 'c':
				if err := w.Close(); err != nil {
					fail(err)
				}
				break ops
			default:
				fail(fmt.Errorf("unknown operation %q", op))
			}
		}
		var n [4]byte
		binary.LittleEndian.PutUint32(n[:], uint32(len(buf.b)))
		out.Write(n[:])
		out.Write(buf.b)
		if err := out.Flush(); err != nil {
			fail(err)
		}
	}
}

// writerBuf collects the output; a plain byte slice keeps every Write call
// of the compressor as it is.
type writerBuf struct{ b []byte }

func (w *writerBuf) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
