//go:build !linux

package health

// Flash reports nothing off Linux, where the agent does not run.
func Flash(dir string) (free, total uint64, ok bool) { return 0, 0, false }
