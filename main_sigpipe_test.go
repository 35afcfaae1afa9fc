//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestMain lets a test run this binary as rmqtorture itself: with
// RMQT_AS_MAIN set, the test binary is main with the arguments in
// RMQT_AS_MAIN (space-separated).
func TestMain(m *testing.M) {
	if args := os.Getenv("RMQT_AS_MAIN"); args != "" {
		os.Args = append([]string{"rmqtorture"}, strings.Fields(args)...)
		main()
		return
	}
	os.Exit(m.Run())
}

// TestClosedStdoutIsAWriteError: a reader that went away before the output
// (`rmqtorture … | head`) makes the write fail with EPIPE, which the
// command handles as a failed write (and a run then still removes its
// container); the process is not killed by SIGPIPE halfway.
func TestClosedStdoutIsAWriteError(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before anything is written
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), "RMQT_AS_MAIN=report baselines/ci/baseline-500.result.json -o wide")
	c.Stdout = w
	err = c.Run()
	w.Close()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("rmqtorture report into a closed pipe: %v, want a non-zero exit", err)
	}
	if ws := exit.Sys().(syscall.WaitStatus); ws.Signaled() || ws.ExitStatus() != 4 {
		t.Fatalf("rmqtorture report into a closed pipe ended with %v, want exit 4 (a failed write)", ws)
	}
}
