package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"github.com/rmqtorture/rmqtorture/broker/docker"
)

// Output paths are checked before a command starts anything (before Docker
// is contacted, before a scenario runs): a run of minutes must not end in
// "cannot write the report". A path that fails is bad input (exit 2) and
// the error names the flag.

// checkOutDir checks that dir (the value of flag) can be created and written:
// it creates dir and its parents, writes a probe file in it, and removes the
// probe and every folder it created again, so a run that stops before its
// report leaves nothing behind.
func checkOutDir(flag, dir string) error {
	err := func() error {
		created := missingDirs(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		f, err := os.CreateTemp(dir, ".rmqtorture-probe-*")
		if err == nil {
			err = errors.Join(f.Close(), os.Remove(f.Name()))
		}
		for _, d := range created {
			// Remove only removes an empty folder: one something else wrote
			// into meanwhile stays.
			_ = os.Remove(d)
		}
		return err
	}()
	if err != nil {
		return causeErr(CauseUnwritableOutput, fmt.Errorf("%s %s: cannot write there: %w", flag, dir, err))
	}
	return nil
}

// checkAppendFile checks that path (the value of flag) can be appended to:
// a regular or missing file is opened for appending (created if missing,
// and then removed again); a named pipe must have a reader already; any
// other existing file (/dev/stdout) is only checked for write permission. Its folder is not created: the append does not create it.
func checkAppendFile(flag, path string) error {
	err := func() error {
		fi, err := os.Stat(path)
		switch {
		case err == nil && fi.IsDir():
			return errors.New("is a directory")
		case err == nil && fi.Mode()&fs.ModeNamedPipe != 0:
			// A pipe with a reader takes the summary; one without would
			// hold the run for ever. The end opened here is held until
			// the process exits: closing it would give a reader such as
			// `cat p` its end of file, and it would be gone by the append.
			return holdPipe(path)
		case err == nil && !fi.Mode().IsRegular():
			return accessWrite(path)
		case err == nil && fi.Mode().Perm()&0o222 == 0:
			// Root may open a read-only file for writing (/proc/version
			// opens; its writes fail once the run is over).
			return fmt.Errorf("read-only file (mode %04o)", fi.Mode().Perm())
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return err
		}
		created := err != nil
		f, err := openAppend(path)
		if err != nil {
			return err
		}
		err = f.Close()
		if created {
			err = errors.Join(err, os.Remove(path))
		}
		return err
	}()
	if err != nil {
		return causeErr(CauseUnwritableOutput, fmt.Errorf("%s %s: cannot append there: %w", flag, path, err))
	}
	return nil
}

// checkPortFree checks that port is free on addr (--broker-address) by
// listening on it for a moment: a container created with a taken port
// would only fail when Docker starts it. A remote engine's address cannot
// be checked from here (docker.PortFree).
func checkPortFree(addr string, port int) error {
	if addr == "" {
		addr = docker.DefaultAddress
	}
	if err := docker.PortFree(addr, port); err != nil {
		hp := net.JoinHostPort(addr, strconv.Itoa(port))
		return causeErr(CausePortInUse, fmt.Errorf("--port %d: %s is already in use (%w); pick a free port or leave --port out", port, hp, err))
	}
	return nil
}

// missingDirs lists dir and those of its parents that do not exist yet,
// innermost first: what MkdirAll(dir) would create.
func missingDirs(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			return out
		}
		out = append(out, d)
		if filepath.Dir(d) == d {
			return out
		}
	}
}

// apiVersion is the form of a Docker Engine API version ("1.47").
var apiVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)

// checkDockerEnv checks the environment the Docker client reads before it
// is contacted: a DOCKER_API_VERSION that is no version makes every call
// fail with the engine's "page not found", which reads as a missing image.
func checkDockerEnv() error {
	if v, ok := os.LookupEnv("DOCKER_API_VERSION"); ok && v != "" && !apiVersion.MatchString(v) {
		return fmt.Errorf("DOCKER_API_VERSION=%s: not a Docker Engine API version such as 1.47; unset it and rmqtorture negotiates the version with the engine", v)
	}
	return nil
}

// heldPipes are the write ends of the named pipes checkAppendFile opened,
// by path, held open until the process exits so that the pipe's reader
// sees one stream however many summaries are appended.
var (
	heldMu    sync.Mutex
	heldPipes = map[string]*os.File{}
)

// holdPipe opens the named pipe at path for writing (openAppend: an error
// when it has no reader) and holds that end open.
func holdPipe(path string) error {
	heldMu.Lock()
	defer heldMu.Unlock()
	if _, ok := heldPipes[path]; ok {
		return nil
	}
	f, err := openNonBlocking(path)
	if err == nil {
		heldPipes[path] = f
	}
	return err
}

// openAppend opens path for appending, creating a missing file (0644); a
// named pipe checkAppendFile holds is a second descriptor of the held end
// (closing it leaves the pipe open). It opens without blocking: a named
// pipe with no reader is an error at once (ENXIO, see fifo(7)) instead of
// a wait for ever; on Linux, writes to a pipe with a reader still wait for
// room (Go's poller).
func openAppend(path string) (*os.File, error) {
	heldMu.Lock()
	held := heldPipes[path]
	heldMu.Unlock()
	if held != nil {
		// Through SyscallConn: Fd would switch the held end to blocking.
		rc, err := held.SyscallConn()
		if err != nil {
			return nil, err
		}
		fd, derr := uintptr(0), error(nil)
		if err := rc.Control(func(h uintptr) { fd, derr = dup(h) }); err != nil {
			return nil, err
		}
		if derr != nil {
			return nil, derr
		}
		return os.NewFile(fd, path), nil
	}
	return openNonBlocking(path)
}
