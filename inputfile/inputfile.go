// Package inputfile reads the files a user hands to rmqtorture (a scenario
// file, a result.json, a history, an --accept file, a baseline, a versions
// report) so that no input can block or exhaust the process: the path must
// name a regular file (a named pipe would block the open for ever, a
// device such as /dev/zero would never end) of at most a stated size, and
// both are checked before a byte is read. It is a leaf: every package may
// import it.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Size bounds, in bytes, of what rmqtorture reads whole. The shipped
// scenarios.yaml is ~20 KB and a 5-mode result.json of 20,000 orders
// ~100 KB; decoding JSON costs ~4-5 times the file's size in memory.
const (
	// MaxScenarioBytes bounds a scenario file and an --accept file (1 MiB).
	MaxScenarioBytes = 1 << 20
	// MaxResultBytes bounds a result.json, a baseline and a versions
	// report (16 MiB).
	MaxResultBytes = 16 << 20
)

// Error is a file refused before it was read: Path as the user gave it,
// Reason what is wrong with it ("a named pipe, not a regular file",
// "20971520 bytes, more than the 16777216 (16 MiB) a result.json may have").
type Error struct {
	Path   string
	Reason string
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }

// kindOf names a file mode that is not a regular file, for a user.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// Check reports whether path names a regular file (symbolic links
// followed) of at most max bytes, as an *Error when it does not; a path
// that cannot be stat'ed returns the *fs.PathError. what names the file's
// role in the size message ("a result.json").
func Check(path, what string, max int64) (fs.FileInfo, error) {
	st, err := os.Stat(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Op = "open" // what the user tried, and what os.ReadFile says
	}
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &Error{Path: path, Reason: kindOf(st.Mode()) + ", not a regular file: rmqtorture reads only regular files"}
	}
	if max > 0 && st.Size() > max {
		return nil, &Error{Path: path, Reason: fmt.Sprintf("%d bytes, more than the %d (%s) %s may have; refusing to read it", st.Size(), max, human(max), what)}
	}
	return st, nil
}

// human writes a bound in MiB or KiB.
func human(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// Read returns the contents of the regular file at path, of at most max
// bytes; what names its role for the size message ("a scenario file").
// Errors: *Error for a path that is not a regular file or is too big,
// checked before it is opened; *fs.PathError when it cannot be stat'ed or
// read. A file that grew past max while it was read is refused too.
func Read(path, what string, max int64) ([]byte, error) {
	f, err := Open(path, what, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &Error{Path: path, Reason: fmt.Sprintf("more than the %d bytes (%s) %s may have; refusing to read it", max, human(max), what)}
	}
	return data, nil
}

// Open opens the regular file at path for reading, after Check (max 0: no
// size bound, for a file read as a stream). The file is checked again once
// open, so that a path swapped for a pipe in between is refused too (the
// open of a pipe returns at once: O_NONBLOCK on Unix).
func Open(path, what string, max int64) (*os.File, error) {
	if _, err := Check(path, what, max); err != nil {
		return nil, err
	}
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = &Error{Path: path, Reason: kindOf(st.Mode()) + ", not a regular file: rmqtorture reads only regular files"}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// IsRefused reports whether err is a file refused by Check, Read or Open
// (not merely missing or unreadable).
func IsRefused(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
