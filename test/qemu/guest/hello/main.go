// Command hello is a harmless guest program: it does some atomic and
// floating-point work and prints "RESULT {"hello":...}". The qemu-user
// test runs it built for the wrong GOARM to show that QEMU_CPU=arm1176
// catches a binary a Pi Zero could not run.
package main

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

func main() {
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
}
