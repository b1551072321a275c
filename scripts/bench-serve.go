// bench-serve: the chart repository of scripts/bench-sources. It serves the
// files of one directory with Go's net/http file server on a free loopback
// port, which it prints on its first line, and delays every answer by the
// milliseconds of its second argument (a remote repository's latency).
//
//	go build -o bench-serve scripts/bench-serve.go && ./bench-serve DIR MS
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: bench-serve DIR LATENCY_MS")
		os.Exit(2)
	}
	root := os.Args[1]
	lat, err := strconv.ParseFloat(os.Args[2], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-serve: latency:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	fs := http.FileServer(http.Dir(root))
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lat > 0 {
			time.Sleep(time.Duration(lat * float64(time.Millisecond)))
		}
		fs.ServeHTTP(w, r)
	}))
}
