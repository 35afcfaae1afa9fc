package docker

import (
	"os"

	"golang.org/x/sys/windows"
)

// processExists reports whether a process has pid: on Windows, whether it
// can be opened (os.FindProcess opens a handle to it).
func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}

// lockExclusive takes the file's exclusive lock without waiting
// (LockFileEx): an error when another process holds it. Closing the file
// releases it.
func lockExclusive(fd uintptr) error {
	return windows.LockFileEx(windows.Handle(fd), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
}
