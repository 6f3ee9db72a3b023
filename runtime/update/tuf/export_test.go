package tuf

// ExactNames is exactNames, for the differential fuzz target to tell this
// package's deliberate refusals from a difference.
var ExactNames = exactNames
