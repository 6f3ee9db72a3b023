// Command hello is a harmless guest program: it does some atomic and
// floating-point work and prints "RESULT {"hello":...}". The qemu-user
// test runs it built for the wrong GOARM to show that QEMU_CPU=arm1176
// catches a binary a Pi Zero could not run. With -hold it then waits until
// its standard input ends, so that the footprint test can read the
// resident memory of a minimal Go program under QEMU from /proc.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

func main() {
	hold := flag.Bool("hold", false, "After printing, wait until standard input ends.")
	flag.Parse()
	var n atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Add(int64(math.Sqrt(float64(i * i))))
		}()
	}
	wg.Wait()
	fmt.Printf("RESULT {\"hello\":%d,\"goarch\":%q}\n", n.Load(), runtime.GOARCH)
	if *hold {
		io.Copy(io.Discard, os.Stdin)
	}
}
