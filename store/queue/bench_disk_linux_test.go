package queue

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/benchcpu"
)

// BenchmarkDiskCommit measures what a commit's write pattern costs the
// disk: n 4 KiB pages written scattered (as bbolt's copy-on-write
// allocates them from its freelist) or as one sequential write, then
// fdatasync, then one page (the meta page) and a second fdatasync, as
// bbolt commits; "log" is an append-only log's commit: one sequential
// write at the end of the file and one fdatasync. Each iteration also times a
// one-page commit right after the pattern, so both see the same load;
// page-commits is how many one-page commits the pattern costs, the figure
// docs/performance.md reasons with (enqueues per commit ÷ page-commits
// bounds x-fsync).
func BenchmarkDiskCommit(b *testing.B) {
	patterns := []struct {
		name      string
		pages     int
		scattered bool
		log       bool
	}{{"pages=16/scattered", 16, true, false}, {"pages=100/scattered", 100, true, false}, {"pages=18/sequential", 18, false, false},
		{"pages=18/log", 18, false, true}}
	for _, p := range patterns {
		b.Run(p.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(benchDir(b), "disk"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(64 << 20); err != nil {
				b.Fatal(err)
			}
			var pattern, one time.Duration
			meter := benchcpu.Start(b)
			for i := 0; b.Loop(); i++ {
				t := time.Now()
				commit := diskCommit
				if p.log {
					commit = logCommit
				}
				if err := commit(f, p.pages, p.scattered, i); err != nil {
					b.Fatal(err)
				}
				u := time.Now()
				if err := diskCommit(f, 1, false, i); err != nil {
					b.Fatal(err)
				}
				pattern, one = pattern+u.Sub(t), one+time.Since(u)
			}
			meter.Stop()
			b.ReportMetric(float64(b.N)/pattern.Seconds(), "commits/s")
			b.ReportMetric(float64(b.N)/one.Seconds(), "one-page-commits/s")
			b.ReportMetric(float64(pattern)/float64(one), "page-commits")
		})
	}
}

// diskCommit writes pages 4 KiB pages, spread over the 64 MiB file by a
// fixed stride when scattered, then syncs, writes page 0 and syncs again.
func diskCommit(f *os.File, pages int, scattered bool, i int) error {
	const page = 4096
	buf := bytes.Repeat([]byte{byte(i)}, page*pages)
	if scattered {
		for j := range pages {
			off := int64((i*pages+j)*7919%16000+1) * page
			if _, err := f.WriteAt(buf[:page], off); err != nil {
				return err
			}
		}
	} else if _, err := f.WriteAt(buf, page*int64(1+i%1000)); err != nil {
		return err
	}
	if err := syscall.Fdatasync(int(f.Fd())); err != nil {
		return err
	}
	if _, err := f.WriteAt(buf[:page], 0); err != nil {
		return err
	}
	return syscall.Fdatasync(int(f.Fd()))
}

// logCommit appends pages 4 KiB pages after the file's first 64 MiB (the
// log grows) in one write and syncs once.
func logCommit(f *os.File, pages int, _ bool, i int) error {
	const page = 4096
	buf := bytes.Repeat([]byte{byte(i)}, page*pages)
	if _, err := f.WriteAt(buf, 64<<20+int64(i)*int64(len(buf))); err != nil {
		return err
	}
	return syscall.Fdatasync(int(f.Fd()))
}
