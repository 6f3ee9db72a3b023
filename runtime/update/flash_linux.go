package update

import "syscall"

// flash returns the free and total bytes of dir's file system
// (statfs(2)): free is what an unprivileged process may still use.
func flash(dir string) (free, total uint64, ok bool) {
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
