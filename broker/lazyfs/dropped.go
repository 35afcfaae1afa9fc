package lazyfs

// Dropped is what one power cut took away.
type Dropped struct {
	// Files is how many files lost data written since their last fsync.
	Files int `json:"files"`
	// Bytes is how many bytes those files had been written (or had cut off
	// by a truncate) since their last fsync, in bytes.
	Bytes int64 `json:"bytes"`
	// Entries is how many files and directories created since the last
	// fsync of anything were removed.
	Entries int `json:"entries"`
	// Synced is how many files and directories were fsynced since the mount
	// or the previous cut: a broker that fsyncs nothing makes every cut
	// look the same.
	Synced int `json:"synced"`
}
