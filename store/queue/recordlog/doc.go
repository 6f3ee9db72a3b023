// Package recordlog is the mechanics of the relay's record log
// (store/queue's Log): frames with a length and a CRC in segment files,
// appends with zeros written ahead, fdatasync, the directory's lock, the
// reading of a segment at open (where its frames end, what a torn tail
// is), the choice of the segments to compact or delete, and the
// import of another store into a new log directory. It knows nothing of
// queues: a frame's payload is a type byte and fields that its user
// (store/queue) defines.
//
// # Frames
//
//	length  uint32 LE: the bytes after the CRC (type and fields)
//	crc     uint32 LE: CRC-32C (Castagnoli) of the length and the bytes after the CRC
//	type    1 byte, defined by the user
//	fields  the user's; strings and byte strings as uvarint length + bytes
//
// # Segments
//
// A segment file is named by its id (16 hex digits and ".log", so names
// sort as ids do) and starts with Magic. Frames follow; they end at the
// first zero length (the zeros written ahead, Segment.Append) or at the
// end of the file.
package recordlog
