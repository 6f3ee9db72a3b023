// Package diskspace reads how much room a file system has: the flash a
// device's stores and downloads live on. It is a leaf, so that the
// agent's health reading (runtime/health) and its update client
// (runtime/update), which sit on different sides of the board support,
// read it alike.
package diskspace
