// Package session holds the power-loss tests of the agent's MLS sessions
// (build tag integration): a child process processes Commits and
// application messages into its bbolt file and reports each committed
// transaction on stdout; the parent kills it with SIGKILL, either inside
// the transaction that received a Commit or at a random point, then
// reopens the file and checks that the state is the one before or after
// the interrupted transaction, never in between, and that the rest of the
// conversation still decrypts (or the session was cleanly dropped).
package session
