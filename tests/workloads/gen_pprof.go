// gen_pprof writes profiles from Go's own runtime/pprof, with known hot
// functions, so the stowaway CLI can be checked against an independent
// producer and against `go tool pprof`.
//
// Usage: gen_pprof OUTDIR
// Writes OUTDIR/cpu.pb.gz (hotA burns about three times the CPU of hotB,
// both called from work) and OUTDIR/heap.pb.gz (allocBig allocates about
// four times the bytes of allocSmall).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"
)

var sink uint64

//go:noinline
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := sink
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

//go:noinline
func hotA() { spin(600 * time.Millisecond) }

//go:noinline
func hotB() { spin(200 * time.Millisecond) }

//go:noinline
func work() {
	hotA()
	hotB()
}

var keep [][]byte

//go:noinline
func allocBig() {
	for i := 0; i < 400; i++ {
		keep = append(keep, make([]byte, 64<<10))
	}
}

//go:noinline
func allocSmall() {
	for i := 0; i < 100; i++ {
		keep = append(keep, make([]byte, 64<<10))
	}
}

func write(path string, fn func(*os.File) error) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := fn(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen_pprof OUTDIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	runtime.MemProfileRate = 4096
	cpu, err := os.Create(filepath.Join(dir, "cpu.pb.gz"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	work()
	pprof.StopCPUProfile()
	if err := cpu.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	allocBig()
	allocSmall()
	runtime.GC()
	write(filepath.Join(dir, "heap.pb.gz"), func(f *os.File) error { return pprof.WriteHeapProfile(f) })
	runtime.KeepAlive(keep)
}
