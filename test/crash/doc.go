// Package crash holds power-loss tests of the device's stores (build tag
// integration): a child process admits Governed Objects to the replay
// cache (store/replay) through the receiver checks and reports each
// committed transaction on stdout; the parent kills it with SIGKILL at a
// random point and then checks that every object the child reported is
// refused as a replay after reopening the file.
package crash
