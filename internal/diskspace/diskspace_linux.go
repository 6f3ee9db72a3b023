package diskspace

import "syscall"

// Of returns the free and total bytes of the file system dir is on
// (statfs(2)): free is what an unprivileged process may still use
// (f_bavail), in fragments of f_frsize (f_bsize on kernels that leave it
// zero). ok is false when dir is empty or cannot be read, or the figures
// make no sense.
func Of(dir string) (free, total uint64, ok bool) {
	if dir == "" {
		return 0, 0, false
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	bs := uint64(st.Frsize)
	if bs == 0 {
		bs = uint64(st.Bsize)
	}
	free, total = uint64(st.Bavail)*bs, uint64(st.Blocks)*bs
	return free, total, total > 0 && free <= total
}
