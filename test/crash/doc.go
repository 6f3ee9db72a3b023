// Package crash holds crash tests of stores (build tag integration). A
// child process writes and reports on stdout each write once it
// returned; the parent kills it with SIGKILL at a random point, opens the
// store again and checks everything the child reported.
//
// TestReplayCrash: the child admits Governed Objects to the device's
// replay cache (store/replay) through the receiver checks; every object it
// reported must be refused as a replay after reopening the file.
//
// TestQueueLogCrash: eight senders enqueue into the relay's record log
// (queue.Log, small segments so that it rotates, copies records forward
// and deletes segments) while a drainer acknowledges; every record
// reported queued must be there with its body unless its acknowledgement
// had started, none whose acknowledgement returned may be, and no seq is
// given twice. SIGKILL loses no written page, so these tests check the
// order of writes and what a write that was cut off between two system
// calls leaves; torn pages (power loss) are TestLogTornTail's part in
// store/queue.
package crash
