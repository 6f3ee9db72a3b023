package jsstore

// SetRemoved sets u's seam called by RemoveBlob once the blob left the
// head, before its parts are purged.
func SetRemoved(u *Updates, f func(sha string)) { u.removed = f }
